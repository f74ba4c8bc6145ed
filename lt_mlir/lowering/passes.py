"""Registry entries for the lowering steps (the code lives beside them)."""

from ..passes.registry import register
from .llvm import lower_to_llvm_dialect
from .lt_to_scf import lower_lt_to_scf


@register("lower-lt-to-scf")
def lower_lt_to_scf_pass(module_op) -> None:
    """Lower lt.loop/dim/reduce/alloc to scf, arith and memref (tails become clipped copies)."""
    lower_lt_to_scf(module_op)


@register("lower-lt-to-llvm")
def lower_lt_to_llvm_pass(module_op) -> None:
    """lower-lt-to-scf, then the upstream CPU pipeline down to the llvm dialect."""
    lower_to_llvm_dialect(module_op)
