"""What a compiled entry point takes, in a form that needs no MLIR: the CPU
kernel wrapper, the AOT header and the CUDA runtime (which must run on
machines without torch-mlir) all describe arguments with ``ArgSpec``."""

from __future__ import annotations

import numpy as np

from ..dtypes import ArgSpec  # noqa: F401  (re-exported: the runtime describes arguments with it)
from ..errors import ArgumentError


class EntryPoint:
    """What the CPU ``Kernel`` and the ``CudaKernel`` share: the arguments,
    split into inputs and outputs (the written arguments after the last
    read-only one, which a call with only the inputs allocates)."""

    specs: list

    def _set_specs(self, specs: list) -> None:
        self.specs = specs
        k = len(specs)
        while k > 0 and specs[k - 1].written:
            k -= 1
        self._n_inputs = k

    @property
    def inputs(self) -> list:
        return self.specs[: self._n_inputs]

    def bind_inputs(self, *inputs, zero_outputs: bool = True):
        """A call on ``inputs`` (the read-only arguments) that returns fresh
        outputs each time it runs; ``zero_outputs=False``: uninitialised,
        for a kernel that writes every output element before reading it.
        Here an ordinary call each time; the CPU ``Kernel`` checks the
        inputs once instead."""
        new = np.zeros if zero_outputs else np.empty

        def run():
            out = [new(s.shape, s.dtype) for s in self.outputs]
            self(*inputs, *out)
            return out[0] if len(out) == 1 else tuple(out)

        return run

    @property
    def outputs(self) -> list:
        return self.specs[self._n_inputs :]

    def _signature_text(self) -> str:
        return ", ".join(f"{'out ' if s.written else ''}{s.element}{list(s.shape)}" for s in self.specs)


def check_host_arrays(name: str, specs: list[ArgSpec], arrays) -> None:
    """The CPU Kernel's checks: dtype, shape, C-contiguity, writable outputs,
    no written argument overlapping another."""
    for spec, a in zip(specs, arrays):
        where = f"@{name} argument {spec.index}"
        if a.dtype != spec.dtype:
            raise ArgumentError(f"{where}: expected dtype {spec.dtype}, got {a.dtype}")
        if a.shape != spec.shape:
            raise ArgumentError(f"{where}: expected shape {spec.shape}, got {a.shape}")
        if not a.flags.c_contiguous:
            raise ArgumentError(f"{where}: the array must be C-contiguous (use numpy.ascontiguousarray)")
        if spec.written and not a.flags.writeable:
            raise ArgumentError(f"{where}: the kernel writes this argument but the array is read-only")
        if spec.monotone and a.size > 1:
            flat = a.reshape(-1)
            down = np.flatnonzero(flat[1:] < flat[:-1])
            if down.size:
                k = int(down[0])
                raise ArgumentError(f"{where}: marked lt.monotone, but its values decrease at element {k + 1} "
                                    f"({flat[k]} then {flat[k + 1]})")
    for spec, a in zip(specs, arrays):
        if not spec.written:
            continue
        for other, b in zip(specs, arrays):
            if other.index != spec.index and np.shares_memory(a, b):
                raise ArgumentError(
                    f"@{name} arguments {spec.index} and {other.index} overlap; the kernel writes one of them"
                )


def random_inputs(specs, seed: int = 0) -> list:
    """Seeded inputs for the read-only arguments among ``specs``, in order:
    standard normal floats, integers in [-100, 100), sorted for an argument
    marked ``lt.monotone`` (what ``lt-opt --run``, ``lt-ui``, the profile,
    the search and the environment run on)."""
    rng = np.random.default_rng(seed)
    out = []
    for spec in specs:
        if spec.written:
            continue
        if spec.dtype.kind == "f":
            out.append(rng.standard_normal(spec.shape).astype(spec.dtype))
        else:
            values = rng.integers(-100, 100, spec.shape)
            if spec.monotone:
                values = np.sort(values, axis=None).reshape(spec.shape)
            out.append(values.astype(spec.dtype))
    return out
