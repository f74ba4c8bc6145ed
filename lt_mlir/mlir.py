"""The one place that imports the MLIR Python bindings.

The complete upstream bindings ship in the ``torch-mlir`` wheel under the
package name ``torch_mlir`` (see shared/STACK.md).  Everything else in lt_mlir
says ``from lt_mlir.mlir import ir, passmanager, ...``.
"""

from torch_mlir import ir, passmanager  # noqa: F401
from torch_mlir.dialects import arith, ext, func, math, memref, scf  # noqa: F401

__all__ = ["ir", "passmanager", "arith", "ext", "func", "math", "memref", "scf"]
