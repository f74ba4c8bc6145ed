"""LLVM IR -> native code for the host CPU with llvmlite (O3, all host
features), as a JIT'd function or an object file."""

from __future__ import annotations

import functools
import os

import llvmlite.binding as llvm

from ..errors import CompileError


@functools.cache
def _init() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.initialize_native_asmparser()


def host_target_machine(opt: int = 3):
    """A fresh TargetMachine for this CPU.  MCJIT takes ownership of the one
    it is given, so every engine needs its own (shared/STACK.md)."""
    _init()
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(
        cpu=llvm.get_host_cpu_name(),
        features=llvm.get_host_cpu_features().flatten(),
        opt=opt,
        reloc="pic",
        codemodel="default",
    )


def parse_ir(llvm_ir: str):
    """Parse and verify LLVM IR text into an llvmlite module."""
    _init()
    try:
        mod = llvm.parse_assembly(llvm_ir)
        mod.verify()
    except RuntimeError as e:
        raise CompileError(f"error: invalid LLVM IR: {' '.join(str(e).split())}") from None
    return mod


def run_o3(mod, tm, opt: int = 3):
    """Retarget ``mod`` to ``tm`` and run the new pass manager's O``opt``."""
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    pto = llvm.create_pipeline_tuning_options(speed_level=opt)
    pto.loop_vectorization = opt >= 2
    pto.slp_vectorization = opt >= 2
    pto.loop_unrolling = opt >= 2
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(mod, pb)
    return mod


def optimize(llvm_ir: str, opt: int = 3):
    """Parse and optimise LLVM IR text for this CPU; returns the llvmlite module."""
    return run_o3(parse_ir(llvm_ir), host_target_machine(opt), opt)


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
    """Owns an MCJIT engine; function addresses stay valid while it lives."""

    def __init__(self, mod, openmp: bool = False):
        if openmp:
            load_openmp()
        self.engine = llvm.create_mcjit_compiler(mod, host_target_machine())
        self.engine.finalize_object()
        self.engine.run_static_constructors()
        self.module = mod

    def address(self, name: str) -> int:
        addr = self.engine.get_function_address(name)
        if not addr:
            raise CompileError(f"error: no function @{name} in the compiled module")
        return addr


def emit_assembly(mod) -> str:
    return host_target_machine().emit_assembly(mod)


def emit_object(mod) -> bytes:
    return host_target_machine().emit_object(mod)
