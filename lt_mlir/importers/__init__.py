"""lt_mlir.importers: PyTorch, ONNX and linalg models into ``lt`` loop nests.

``linalg.py`` turns a linalg-on-tensors module into an lt module (one nest
per op); ``model.py`` is ``Model`` (the callable, its schedule and
``optimize()``); ``frontdoors.py`` has ``from_torch``, ``from_onnx`` and
``from_linalg``.
"""

from .frontdoors import from_linalg, from_onnx, from_torch
from .linalg import Argument, Imported, ImportError, import_linalg
from .model import Model

__all__ = ["Argument", "ImportError", "Imported", "Model", "from_linalg", "from_onnx", "from_torch", "import_linalg"]
