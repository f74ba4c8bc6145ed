"""Registry entries for the lowering steps (the code lives beside them).
Importing this module registers them; the compiler does."""

from ..passes.registry import Option, register
from .gpu.lt_to_gpu import lower_lt_to_gpu
from .gpu.nvptx import lower_kernels_to_nvvm, outline
from .llvm import lower_to_llvm_dialect
from .lt_to_scf import lower_lt_to_scf

_CHECK_BOUNDS = Option("check-bounds", bool, True, "prove every access in bounds first")


@register("lower-lt-to-scf", _CHECK_BOUNDS)
def lower_lt_to_scf_pass(module_op, check_bounds: bool = True) -> None:
    """Lower lt.loop/dim/reduce/alloc to scf, arith and memref (tails become clipped copies)."""
    lower_lt_to_scf(module_op, check_bounds)


@register("lower-lt-to-llvm", _CHECK_BOUNDS)
def lower_lt_to_llvm_pass(module_op, check_bounds: bool = True) -> None:
    """lower-lt-to-scf, then the upstream CPU pipeline down to the llvm dialect."""
    lower_to_llvm_dialect(module_op, check_bounds)


@register("lower-lt-to-gpu", _CHECK_BOUNDS, Option("emulate", bool, False, "blocks and threads as sequential CPU loops"))
def lower_lt_to_gpu_pass(module_op, check_bounds: bool = True, emulate: bool = False) -> None:
    """Lower lt to gpu.launch ops: a kernel per mapped loop nest, predicated tails, atomic shared reductions."""
    lower_lt_to_gpu(module_op, check_bounds, emulate)


@register("lower-lt-to-nvvm", _CHECK_BOUNDS)
def lower_lt_to_nvvm_pass(module_op, check_bounds: bool = True) -> None:
    """lower-lt-to-gpu, kernel outlining, then the kernels to the llvm/nvvm dialects."""
    lower_lt_to_gpu(module_op, check_bounds)
    outline(module_op)
    lower_kernels_to_nvvm(module_op)
