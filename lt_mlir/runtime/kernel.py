"""A compiled entry point callable with NumPy arrays.

The entry function takes one bare pointer per memref argument.  The wrapper
checks every array against the memref type (shape, dtype, C-contiguity,
writability of outputs, no overlap with an output) and raises
``ArgumentError`` instead of letting native code read the wrong memory.
"""

from __future__ import annotations

import ctypes
import sys
import threading

import numpy as np

from ..errors import ArgumentError
from .specs import ArgSpec, EntryPoint, check_host_arrays

# outputs this large come from mmap (fresh pages) unless an earlier call's array is reused (bind_inputs)
REUSE_BYTES = 1 << 18


def _address(a: np.ndarray, address=ctypes.addressof, char=ctypes.c_char) -> int:
    """A C-contiguous array's address: through the buffer protocol where the
    array is writable and not empty (a third of ``ndarray.ctypes``'s time),
    else ``ndarray.ctypes``."""
    try:
        return address(char.from_buffer(a))
    except (TypeError, ValueError):
        return a.ctypes.data


class Kernel(EntryPoint):
    """A native entry point.  ``kernel(*inputs)`` allocates and returns the
    outputs (written arguments that come after every read-only one);
    ``kernel(*all_arguments)`` writes into the arrays given."""

    def __init__(self, name: str, specs: list[ArgSpec], address: int, owner, llvm_ir: str = ""):
        self.name = name
        self._owner = owner  # keeps the JIT engine (and the code) alive
        self.llvm_ir = llvm_ir
        self._fn = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * len(specs)))(address)
        self._set_specs(specs)

    def __call__(self, *arrays):
        n = len(arrays)
        if n == len(self.specs):
            out = None
        elif n == self._n_inputs:
            self._check(arrays, self.specs[:n])  # the inputs first: a wrong shape is not an allocation
            out = [np.zeros(s.shape, s.dtype) for s in self.outputs]
            arrays = tuple(arrays) + tuple(out)
        else:
            raise ArgumentError(
                f"@{self.name} takes {len(self.specs)} arrays ({self._n_inputs} inputs"
                f" + {len(self.specs) - self._n_inputs} outputs); got {n}"
            )
        self._fn(*self._addresses(arrays))
        if out is None:
            return None
        return out[0] if len(out) == 1 else tuple(out)

    def call_unchecked(self, *arrays) -> None:
        """Run on ``arrays`` (all of the arguments, C-contiguous, of the
        specs' shapes and dtypes) without checking them: for a caller that
        made them to match (the kernel frontend, whose cache key holds every
        argument's shape and dtype; its first call is a checked one)."""
        self._fn(*[_address(a) for a in arrays])

    def bind(self, *arrays):
        """A call of this kernel on ``arrays`` (all of its arguments),
        checked now: the returned function runs it again without the checks
        or the pointer lookups, for a caller that knows the arrays are the
        same (a loop calling it many times).  It holds the arrays alive."""
        if len(arrays) != len(self.specs):
            raise ArgumentError(f"@{self.name} takes {len(self.specs)} arrays; got {len(arrays)}")
        self._check(arrays)
        fn, pointers = self._fn, [a.ctypes.data for a in arrays]

        def run(arrays=arrays, kernel=self) -> None:  # holds the kernel (its JIT code) alive too
            fn(*pointers)

        return run

    def bind_inputs(self, *inputs, zero_outputs: bool = True):
        """A call of this kernel on ``inputs`` (the read-only arguments,
        checked now) that returns fresh outputs each time it runs: for a
        caller that runs the same inputs again and again (the frontend's
        ``numpy()``), without the checks and pointer lookups of a call.  It
        holds the inputs alive.  ``zero_outputs=False`` leaves the outputs
        uninitialised, for a kernel that writes every output element before
        reading it (what the frontend emits); such an output of at least
        ``REUSE_BYTES`` is written into the array of an earlier call that
        nothing holds any more, if there is one: a large fresh array is
        fresh pages from the OS, each faulted in by the kernel's first
        write (on a 2-core VM, 16 MB of them cost a 3 ms softmax 18-28 ms)."""
        if len(inputs) != self._n_inputs:
            raise ArgumentError(f"@{self.name} takes {self._n_inputs} inputs; got {len(inputs)}")
        self._check(inputs, self.specs[: self._n_inputs])
        fn, pointers = self._fn, [a.ctypes.data for a in inputs]
        new = np.zeros if zero_outputs else np.empty
        shapes = [(s.shape, s.dtype) for s in self.outputs]

        if not zero_outputs and len(shapes) == 1 and np.prod(shapes[0][0]) * np.dtype(shapes[0][1]).itemsize >= REUSE_BYTES:
            (shape, dtype), = shapes
            # the outputs of the last calls, each with the arguments of a call that
            # writes it (its address taken once); one nothing else holds any more is
            # written again
            pool: list = []
            lock = threading.Lock()  # two threads' runs never take the same array

            def run(inputs=inputs, kernel=self, refcount=sys.getrefcount):
                with lock:
                    for out, arguments in pool:
                        if refcount(out) == 3:  # the pool's entry, this loop's name and the argument's: the caller dropped it
                            break
                    else:
                        out = new(shape, dtype)
                        arguments = (*pointers, ctypes.addressof(ctypes.c_char.from_buffer(out)))
                        pool.append((out, arguments))
                        if len(pool) > 2:
                            del pool[0]
                fn(*arguments)
                return out
        elif len(shapes) == 1 and int(np.prod(shapes[0][0])) > 0:
            (shape, dtype), = shapes

            def run(inputs=inputs, kernel=self, char=ctypes.c_char, address=ctypes.addressof):  # holds the kernel alive too
                out = new(shape, dtype)
                fn(*pointers, address(char.from_buffer(out)))
                return out
        elif all(int(np.prod(shape)) > 0 for shape, _ in shapes):
            def run(inputs=inputs, kernel=self, char=ctypes.c_char, address=ctypes.addressof):  # holds the kernel alive too
                out = [new(shape, dtype) for shape, dtype in shapes]
                # a fresh array's address through the buffer protocol: a third of __array_interface__'s time
                fn(*pointers, *[address(char.from_buffer(a)) for a in out])
                return out[0] if len(out) == 1 else tuple(out)
        else:  # an empty output has no byte to take the address of
            def run(inputs=inputs, kernel=self):
                out = [new(shape, dtype) for shape, dtype in shapes]
                fn(*pointers, *[a.__array_interface__["data"][0] for a in out])
                return out[0] if len(out) == 1 else tuple(out)

        return run

    def _addresses(self, arrays) -> list:
        """The arrays' addresses, checked as ``_check`` checks them: a quick
        pass for arrays that pass (a call's own cost: a third of ``_check``
        and ``ndarray.ctypes``), ``_check`` itself, with its messages, for
        any that does not (and for subclasses of ndarray and ``lt.monotone``
        arguments).  Two C-contiguous arrays share memory exactly where
        their byte ranges meet, which is what the overlap check asks."""
        out, spans = [], []
        for (dtype, shape, written, monotone), a in zip(self._quick, arrays):
            if (type(a) is not np.ndarray or monotone or a.dtype != dtype or a.shape != shape or not a.flags.c_contiguous
                    or (written and not a.flags.writeable)):
                self._check(arrays)
                return [_address(a) for a in arrays]
            p = _address(a)
            out.append(p)
            spans.append((p, p + a.nbytes, written))
        for i, (lo, hi, written) in enumerate(spans):
            if written and lo < hi and any(j != i and lo2 < hi2 and lo < hi2 and lo2 < hi for j, (lo2, hi2, _) in enumerate(spans)):
                self._check(arrays)  # names the two arguments
        return out

    def _set_specs(self, specs: list) -> None:
        super()._set_specs(specs)
        self._quick = [(s.dtype, tuple(s.shape), s.written, s.monotone) for s in specs]

    def _check(self, arrays, specs=None) -> None:
        specs = self.specs if specs is None else specs
        for spec, a in zip(specs, arrays):
            if not isinstance(a, np.ndarray):
                raise ArgumentError(f"@{self.name} argument {spec.index}: expected a numpy.ndarray, got {type(a).__name__}")
        check_host_arrays(self.name, specs, arrays)

    def __repr__(self) -> str:
        return f"<lt_mlir.Kernel @{self.name}({self._signature_text()})>"
