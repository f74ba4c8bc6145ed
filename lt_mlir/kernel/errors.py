"""The kernel frontend's error and the user's location it names."""

from __future__ import annotations

import os
import sys

from ..errors import LtError

_HERE = os.path.dirname(os.path.abspath(__file__))
_NUMPY = os.path.dirname(os.path.abspath(__import__("numpy").__file__))


class KernelError(LtError):
    """A kernel the frontend cannot take: an unsupported construct, shapes
    that do not agree, a malformed CSR argument.  The message starts with
    the file and line of the user's code."""


def where() -> str:
    """``file:line`` of the innermost frame outside lt_mlir.kernel and NumPy
    (the user's statement being traced)."""
    f = sys._getframe(1)
    while f is not None:
        name = f.f_code.co_filename
        inside = _INSIDE.get(name)
        if inside is None:
            path = os.path.abspath(name)
            inside = _INSIDE[name] = path.startswith(_HERE) or path.startswith(_NUMPY)
        if not inside:
            return f"{name}:{f.f_lineno}"
        f = f.f_back
    return "<kernel>"


_INSIDE: dict = {}  # file name -> whether it is lt_mlir.kernel's or NumPy's
