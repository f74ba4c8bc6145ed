"""Guard-paged NumPy arrays: make out-of-bounds accesses by native code crash.

A compiled kernel gets bare pointers.  If its loops run one element too far
(a wrong tail, an off-by-one in a split), an ordinary NumPy buffer usually
hides the bug: the neighbouring bytes belong to the allocator, reading them
returns garbage that may never show in a result, and writing them corrupts
the heap somewhere far from the cause.  ``guarded_array`` instead places the
data flush against a page that is mapped ``PROT_NONE``, so the very first
byte read or written past the edge faults and the process dies with
``SIGSEGV`` at the offending instruction.

    >>> from lt_mlir.testing import guarded_array
    >>> a = guarded_array((7,), "float32", fill=1.0)            # guard after a[6]
    >>> b = guarded_array((7,), "float32", fill=1.0, side="start")  # guard before b[0]

One side at a time can be flush (the data is rarely a whole number of
pages), so run a kernel once with ``side="end"`` and once with
``side="start"`` to catch overruns and underruns.  Either way the mapping has
an inaccessible page at both ends, so a far overrun on the loose side still
faults once it leaves the mapping's data pages.

Because a guard hit kills the interpreter, tests run guarded executions in a
child process and check its exit status (a negative return code is the
signal number).

Linux/POSIX only: the memory comes from ``mmap`` and is protected with
``mprotect`` from libc via ctypes.  Each array owns its mapping through its
``base`` object, which unmaps it once the last view of it is gone.
"""

from __future__ import annotations

import ctypes
import mmap as _mmap
import os
from dataclasses import dataclass

import numpy as np

__all__ = [
    "CHILD_TIMEOUT",
    "ChildRun",
    "PAGE_SIZE",
    "GuardedBuffer",
    "communicate",
    "finish_job",
    "guarded_array",
    "guarded_copy",
    "start_child",
    "start_job",
]

PAGE_SIZE = _mmap.PAGESIZE

_PROT_NONE = getattr(_mmap, "PROT_NONE", 0)
_PROT_READ = _mmap.PROT_READ
_PROT_WRITE = _mmap.PROT_WRITE
_MAP_PRIVATE = _mmap.MAP_PRIVATE
_MAP_ANONYMOUS = getattr(_mmap, "MAP_ANONYMOUS", getattr(_mmap, "MAP_ANON", 0x20))
_MAP_FAILED = ctypes.c_void_p(-1).value

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.mprotect.restype = ctypes.c_int
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_libc.munmap.restype = ctypes.c_int
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]


def _os_error(call: str) -> OSError:
    err = ctypes.get_errno()
    return OSError(err, f"{call} failed: {os.strerror(err)}")


class GuardedBuffer:
    """An anonymous mapping ``[guard page][data pages][guard page]``.

    Exposes ``__array_interface__`` for the ``nbytes`` bytes that sit flush
    against one of the guard pages, so ``np.asarray`` makes an array whose
    ``base`` is this object: the mapping lives exactly as long as some array
    uses it and is unmapped when the buffer is collected.
    """

    def __init__(self, shape: tuple, dtype: np.dtype, side: str = "end"):
        if side not in ("end", "start"):
            raise ValueError(f"side must be 'end' or 'start', got {side!r}")
        self.shape = tuple(int(s) for s in shape)
        if any(s < 0 for s in self.shape):
            raise ValueError(f"negative dimension in shape {self.shape}")
        self.dtype = np.dtype(dtype)
        self.side = side
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        # At least one data page, so even an empty array has a valid address.
        self._data_pages = max(1, -(-self.nbytes // PAGE_SIZE))
        self._length = (self._data_pages + 2) * PAGE_SIZE
        self._base = None
        # Map everything inaccessible first, then open up the data pages: no
        # moment where a guard page is readable.
        addr = _libc.mmap(None, self._length, _PROT_NONE, _MAP_PRIVATE | _MAP_ANONYMOUS, -1, 0)
        if addr is None or addr == _MAP_FAILED:
            raise _os_error("mmap")
        self._base = addr
        self.data_start = addr + PAGE_SIZE  # first byte of the first data page
        self.data_end = self.data_start + self._data_pages * PAGE_SIZE  # first byte of the end guard
        self.protect(writable=True)
        if side == "end":
            # Flush against the trailing guard.  nbytes is a multiple of the
            # itemsize and data_end is page aligned, so the start stays aligned
            # to the element size (what native loads assume).
            self.address = self.data_end - self.nbytes
        else:
            self.address = self.data_start

    def protect(self, writable: bool) -> None:
        """Make the data pages read/write, or read-only (writes then fault too)."""
        prot = _PROT_READ | (_PROT_WRITE if writable else 0)
        if _libc.mprotect(self.data_start, self._data_pages * PAGE_SIZE, prot) != 0:
            raise _os_error("mprotect")

    @property
    def __array_interface__(self) -> dict:
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "descr": self.dtype.descr,
            "data": (self.address, False),
            "strides": None,
            "version": 3,
        }

    def __del__(self):
        base, self._base = getattr(self, "_base", None), None
        if base is not None and _libc is not None:
            _libc.munmap(base, self._length)

    def __repr__(self) -> str:
        return (
            f"<GuardedBuffer {self.nbytes} bytes at {self.address:#x}, guard at the {self.side}, "
            f"mapping {self._base:#x}+{self._length}>"
        )


def guarded_array(shape, dtype, fill=None, side: str = "end", *, readonly: bool = False) -> np.ndarray:
    """A C-contiguous array of ``shape``/``dtype`` whose data touches a guard page.

    ``side="end"``: the byte right after the last element is inaccessible
    (catches overruns).  ``side="start"``: the byte right before the first
    element is (catches underruns).  Either way the mapping is fenced by a
    ``PROT_NONE`` page on both sides.

    ``fill``: ``None`` leaves the fresh mapping's zeros; a scalar or anything
    broadcastable to ``shape`` is copied in (use NaN for outputs to notice
    elements a kernel forgot to write).  ``readonly=True`` then drops write
    permission on the pages, so a kernel that writes an input faults, and
    marks the array non-writeable.

    The returned array's ``base`` is the :class:`GuardedBuffer` owning the
    mapping; it stays mapped as long as the array or any view of it lives.
    """
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    buf = GuardedBuffer(tuple(shape), np.dtype(dtype), side)
    arr = np.asarray(buf)
    assert arr.base is buf and arr.flags.c_contiguous, "NumPy did not wrap the guarded buffer"
    if fill is not None:
        arr[...] = fill
    if readonly:
        buf.protect(writable=False)
        arr.flags.writeable = False
    return arr


def guarded_copy(array, side: str = "end", *, readonly: bool = False) -> np.ndarray:
    """A guard-paged, C-contiguous copy of ``array`` (same shape and dtype)."""
    src = np.asarray(array)
    return guarded_array(src.shape, src.dtype, fill=src, side=side, readonly=readonly)


# ------------------------------------------------------------ child processes
#
# Tests run guarded kernels in a child process (``python -m lt_mlir.testing
# job.json``), so a guard hit names its kernel instead of killing pytest.

CHILD_TIMEOUT = 180  # seconds a child may take


def _repo() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def start_child(*argv: str):
    """A Python child (this interpreter, faulthandler on) running ``argv``
    (``-c source ...`` or ``-m module ...``) with lt_mlir importable."""
    import subprocess
    import sys

    env = dict(os.environ)
    env["PYTHONPATH"] = _repo() + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return subprocess.Popen(
        [sys.executable, "-X", "faulthandler", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=_repo(),
    )


def communicate(proc, timeout: float = CHILD_TIMEOUT) -> tuple[str, str]:
    """(stdout, stderr) of a child, killed after ``timeout`` seconds."""
    import subprocess

    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.communicate()


@dataclass
class ChildRun:
    """How a ``run_job`` child ended, and the outputs it saved."""

    returncode: int
    stdout: str
    stderr: str
    outputs: dict

    def describe(self) -> str:
        import signal

        runs = [ln.split(" ", 3) for ln in self.stdout.splitlines() if ln.startswith("RUN ")]
        last = f"{runs[-1][3]} with the guard at the {runs[-1][2]}" if runs else "(none)"
        how = f"signal {signal.Signals(-self.returncode).name}" if self.returncode < 0 else "status"
        return (
            f"child exited with {self.returncode} ({how}); "
            f"last kernel started: {last}\nstderr tail:\n{self.stderr[-3000:]}"
        )


def start_job(job: dict, path: str):
    """Write ``job`` (see ``run_job``) to ``path`` and start its child."""
    import json

    with open(path, "w") as fh:
        json.dump(job, fh)
    return start_child("-m", "lt_mlir.testing", path)


def finish_job(proc, job: dict) -> ChildRun:
    """Wait for a ``start_job`` child; its outputs if it succeeded."""
    out, err = communicate(proc)
    outputs = {}
    if proc.returncode == 0 and os.path.exists(job["outputs"]):
        with np.load(job["outputs"]) as z:
            outputs = {k: z[k] for k in z.files}
    return ChildRun(proc.returncode, out, err, outputs)


def run_job(job_path: str) -> None:
    """Compile and run a batch of kernels on guard-paged arrays (the child
    side of the guarded tests: ``python -m lt_mlir.testing job.json``).

    The job names an ``.npz`` of inputs, an ``.npz`` to write, and cases
    ``{"key", "text", "inputs": [names], "id": label}`` (and optionally
    ``"target"``, e.g. ``cuda-emulated``, and ``CompileOptions`` fields such
    as ``"cpu"``/``"features"``, as for ``lt_mlir.compile``).  Every case runs with
    the guard after and before its arrays (inputs read-only, outputs filled
    with NaN or the integer maximum), and ``RUN key side label`` is printed
    (flushed) before each call, so a crash names its kernel.  Output ``j`` is
    saved as ``{key}_{side}_{j}``."""
    import json
    import resource

    import lt_mlir
    from lt_mlir.targets import CompileOptions

    compile_keys = {"target", *CompileOptions.fields()}  # what a case may give lt_mlir.compile
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    with open(job_path) as fh:
        job = json.load(fh)
    inputs = np.load(job["inputs"])
    results = {}
    for case in job["cases"]:
        # the target (default: lt_mlir.compile's) and the CompileOptions fields the case names
        kernel = lt_mlir.compile(case["text"], **{k: v for k, v in case.items() if k in compile_keys and v is not None})
        xs = [inputs[name] for name in case["inputs"]]
        for side in ("end", "start"):
            args = [guarded_copy(x, side=side, readonly=True) for x in xs]
            outs = []
            for spec in kernel.outputs:
                fill = np.nan if spec.dtype.kind == "f" else np.iinfo(spec.dtype).max
                outs.append(guarded_array(spec.shape, spec.dtype, fill=fill, side=side))
            print("RUN", case["key"], side, case.get("id", case["key"]), flush=True)
            kernel(*args, *outs)
            for j, o in enumerate(outs):
                results[f"{case['key']}_{side}_{j}"] = np.array(o)
            print("OK", case["key"], side, flush=True)
    np.savez(job["outputs"], **results)
    print("ALL DONE", len(job["cases"]), flush=True)

