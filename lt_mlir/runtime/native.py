"""Native code in this process: an MCJIT engine over a module optimised by
``lowering/machine.py``, and the OpenMP runtime its parallel loops call."""

from __future__ import annotations

import functools
import os

import llvmlite.binding as llvm

from ..errors import CompileError
from ..lowering.machine import CpuTarget, jit_target_machine, libmvec


@functools.cache
def load_openmp() -> None:
    """Make ``__kmpc_*`` resolvable for JIT'd parallel loops: libiomp5 from
    the intel-openmp wheel (GCC's libgomp lacks that API)."""
    import glob
    import sys

    candidates = [
        path
        for prefix in dict.fromkeys([sys.prefix, sys.base_prefix])
        for path in glob.glob(os.path.join(prefix, "lib", "libiomp5.so"))
    ]
    if not candidates:
        raise CompileError("error: parallel loops need libiomp5.so (pip install intel-openmp)")
    llvm.load_library_permanently(candidates[0])


class JitModule:
    """Owns an MCJIT engine; function addresses stay valid while it lives.
    ``target``: the CPU the module was optimised for (default: this host)."""

    def __init__(self, mod, openmp: bool = False, target: CpuTarget | None = None):
        if openmp:
            load_openmp()
        self.engine = llvm.create_mcjit_compiler(mod, jit_target_machine(target))
        self.engine.finalize_object()
        self.engine.run_static_constructors()
        self.module = mod

    @classmethod
    def from_object(cls, data: bytes, openmp: bool = False, target: CpuTarget | None = None) -> JitModule:
        """An engine over an object file made by ``machine.emit_jit_object``
        (no optimisation or code generation: a few milliseconds).  Its
        OpenMP and libmvec references resolve as in the process that made it."""
        if openmp:
            load_openmp()
        libmvec()  # vector math calls, if the object has any
        tm = jit_target_machine(target)
        empty = llvm.parse_assembly("")
        empty.triple = tm.triple
        self = cls.__new__(cls)
        self.engine = llvm.create_mcjit_compiler(empty, tm)
        self._object = llvm.ObjectFileRef.from_data(data)
        self.engine.add_object_file(self._object)
        self.engine.finalize_object()
        self.engine.run_static_constructors()
        self.module = empty
        return self

    def address(self, name: str) -> int:
        addr = self.engine.get_function_address(name)
        if not addr:
            raise CompileError(f"error: no function @{name} in the compiled module")
        return addr
