"""The one place that imports the MLIR Python bindings.

The complete upstream bindings ship in the ``torch-mlir`` wheel under the
package name ``torch_mlir`` (see shared/STACK.md).  Everything else in lt_mlir
says ``from lt_mlir.mlir import ir, passmanager, ...``.
"""

import os
import sys
import types

import torch_mlir
from torch_mlir import ir, passmanager
from torch_mlir.dialects import arith, ext, func, gpu, math, memref, nvgpu, scf, vector
from torch_mlir.dialects._arith_enum_gen import AtomicRMWKind, CmpFPredicate, CmpIPredicate

# The bindings' shared libraries; the MLIR C API library that translates to
# LLVM IR (lowering/llvm.py) is among them.
MLIR_LIBS = os.path.join(os.path.dirname(ir.__file__), "_mlir_libs")



def register_dialect_module(namespace: str, module: types.ModuleType) -> None:
    """Make ``module`` the bindings' Python module of dialect ``namespace``.
    For every op they wrap (each op a walk or a block's operation list
    yields) the bindings import ``<package>.dialects.<namespace>`` to find
    its class, and a failed import is not remembered: for a dialect defined
    in Python (``lt``) that was an import attempt per op, most of the time
    spent listing a loop nest's ops."""
    sys.modules.setdefault(f"{torch_mlir.__name__}.dialects.{namespace}", module)


def torch_importers():
    """torch-mlir's FX importer: ``(torch_mlir.fx, torch_mlir.extras.fx_importer,
    the torch dialect module)``.  Imported when asked for: it needs torch."""
    from torch_mlir import fx
    from torch_mlir.dialects import torch as torch_dialect
    from torch_mlir.extras import fx_importer

    return fx, fx_importer, torch_dialect


def onnx_importers():
    """torch-mlir's ONNX importer: ``(torch_mlir.extras.onnx_importer, the
    torch dialect module)``.  Imported when asked for: it needs ``onnx``."""
    from torch_mlir.dialects import torch as torch_dialect
    from torch_mlir.extras import onnx_importer

    return onnx_importer, torch_dialect


__all__ = [
    "ir", "passmanager", "arith", "ext", "func", "gpu", "math", "memref", "nvgpu", "scf", "vector",
    "AtomicRMWKind", "CmpFPredicate", "CmpIPredicate", "MLIR_LIBS", "register_dialect_module",
    "onnx_importers", "torch_importers",
]
