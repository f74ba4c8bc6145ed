"""Errors of the Python frontend (all are ``lt_mlir.LtError``s)."""

from __future__ import annotations

from ..errors import LtError


class FrontendError(LtError, ValueError):
    """A frontend program that cannot be built or run: wrong arguments,
    unknown dims, a tensor without data, an incompatible schedule."""


class SizeError(FrontendError):
    """Contradictory sizes, or a size that nothing determines."""
