"""CSR arguments: accepted forms, checked once a call, and results."""

from __future__ import annotations

import numpy as np

from .errors import KernelError


def as_csr(v, dtype: np.dtype, where: str) -> tuple:
    """(indptr, indices, data, shape) of a CSR argument, checked: a
    ``scipy.sparse`` CSR matrix or array, or ``(data, indices, indptr,
    shape)``.  ``indptr`` must run from 0 to nnz without decreasing, every
    column index be in range and each row's indices strictly increase
    (sorted, no duplicates): what the kernels assume to run rows in
    parallel and to read each stored position once."""
    fmt = getattr(v, "format", None)
    canonical = False
    if fmt is not None:
        if fmt != "csr":
            raise KernelError(f"error: {where}: expected a CSR matrix, got scipy.sparse format '{fmt}' (convert with .tocsr())")
        data, indices, indptr, shape = v.data, v.indices, v.indptr, v.shape
    elif isinstance(v, tuple) and len(v) == 4:
        data, indices, indptr, shape = v
    else:
        raise KernelError(f"error: {where}: expected a CSR matrix (scipy.sparse csr_array/csr_matrix or (data, indices, indptr, shape)), got {type(v).__name__}")
    data, indices, indptr = (np.asarray(a) for a in (data, indices, indptr))
    if data.dtype != dtype:
        raise KernelError(f"error: {where}: expected CSR values of {dtype}, got {data.dtype}")
    if len(shape) != 2 or min(shape) < 1:
        raise KernelError(f"error: {where}: a CSR matrix needs a 2-D shape of at least one row and column, got {tuple(shape)}")
    rows, cols = (int(s) for s in shape)
    for name, a in (("indptr", indptr), ("indices", indices)):
        if a.ndim != 1 or a.dtype not in (np.int32, np.int64):
            raise KernelError(f"error: {where}: {name} must be a 1-D array of int32 or int64, got {a.dtype} with {a.ndim} dimension(s)")
    if data.ndim != 1 or data.shape != indices.shape:
        raise KernelError(f"error: {where}: data and indices must be 1-D of one length, got {data.shape} and {indices.shape}")
    if indptr.shape[0] != rows + 1:
        raise KernelError(f"error: {where}: indptr has {indptr.shape[0]} entries; a matrix of {rows} rows needs {rows + 1}")
    nnz = data.shape[0]
    if indptr[0] != 0 or indptr[-1] != nnz:
        raise KernelError(f"error: {where}: indptr must start at 0 and end at nnz={nnz}, got {int(indptr[0])} .. {int(indptr[-1])}")
    steps = np.diff(indptr)
    if (steps < 0).any():
        row = int(np.argmax(steps < 0))
        raise KernelError(f"error: {where}: indptr decreases at row {row} ({int(indptr[row])} then {int(indptr[row + 1])})")
    if fmt is not None:
        # SciPy's own check (C++, one pass; cached on the matrix until SciPy
        # changes it): each row's indices sorted, no duplicates
        canonical = bool(v.has_canonical_format)
    if nnz:
        unsigned = indices.view(np.uint32 if indices.dtype == np.int32 else np.uint64)
        if unsigned.max() >= cols:  # one pass: a negative index is a huge unsigned one
            bad = int(np.argmax((indices < 0) | (indices >= cols)))
            raise KernelError(f"error: {where}: column index {int(indices[bad])} at position {bad} is outside 0..{cols - 1}")
    if nnz and not canonical:
        rising = np.diff(indices) > 0
        row_starts = np.zeros(nnz, bool)
        row_starts[indptr[1:-1][indptr[1:-1] < nnz]] = True
        bad = ~rising & ~row_starts[1:]
        if bad.any():
            p = int(np.argmax(bad)) + 1
            row = int(np.searchsorted(indptr, p, side="right") - 1)
            raise KernelError(
                f"error: {where}: row {row}'s column indices are not strictly increasing at position {p} "
                f"({int(indices[p - 1])} then {int(indices[p])}): sort them and sum duplicates (A.sum_duplicates())"
            )
    data = np.ascontiguousarray(data)
    indptr = np.ascontiguousarray(indptr)
    indices = np.ascontiguousarray(indices)
    if indptr.dtype != indices.dtype:
        indptr, indices = indptr.astype(np.int64), indices.astype(np.int64)
    return indptr, indices, data, (rows, cols)


class RowMemo:
    """The row of each stored position (COO's row array) of the last CSR
    matrix one argument of a kernel was given, kept between calls: a call
    with the same ``indptr`` (compared element by element, O(rows)) reuses
    it instead of spreading the rows over the positions again (O(nnz); at
    167K stored values, 0.1 ms of a 1 ms sparse softmax call)."""

    def __init__(self):
        self._last = None  # (indptr's bytes, dtype, rows): replaced whole, never mutated
        self._template = None  # (indptr, indices, shape, a csr_array over them): see ``result``

    def rows(self, indptr: np.ndarray, n_rows: int, dtype) -> np.ndarray:
        key, dtype = indptr.tobytes(), np.dtype(dtype)
        last = self._last
        if last is not None and last[1] == dtype and last[0] == key:
            return last[2]
        rows = np.repeat(np.arange(n_rows, dtype=dtype), np.diff(indptr))
        rows.flags.writeable = False
        self._last = (key, dtype, rows)
        return rows

    def result(self, indptr: np.ndarray, indices: np.ndarray, shape: tuple, data: np.ndarray):
        """``to_scipy``'s ``csr_array`` for a structure made of these very
        arrays: copied from a template over them kept since the first call
        with them, ``data`` put in.  SciPy's constructor from a CSR array
        skips what it does for ``(data, indices, indptr)`` (a scan of the
        indices for their dtype, the format's check): 15 against 46 us at
        167K stored values.  A template is kept only where SciPy took the
        arrays themselves (no index dtype converted), so the results share
        them as the constructor's would, whatever the caller writes into
        them between calls (each call checks them: ``as_csr``)."""
        import scipy.sparse

        t = self._template
        if t is not None and t[0] is indptr and t[1] is indices and t[2] == shape:
            out = scipy.sparse.csr_array(t[3])
            out.data = data
            return out
        out = scipy.sparse.csr_array((data, indices, indptr), shape=shape)
        if _same_memory(out.indices, indices) and _same_memory(out.indptr, indptr):
            # (its values a zero-strided view: it holds no call's output alive)
            values = np.broadcast_to(np.zeros((), data.dtype), data.shape)
            self._template = (indptr, indices, tuple(shape), scipy.sparse.csr_array((values, indices, indptr), shape=shape))
        return out


def _same_memory(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.__array_interface__["data"][0] == b.__array_interface__["data"][0]


def to_scipy(structure, data: np.ndarray):
    """A ``scipy.sparse.csr_array`` of ``data`` at ``structure``'s positions
    (through the argument's ``RowMemo``, where it has one)."""
    memo = getattr(structure, "_memo", None)
    if memo is not None:
        return memo.result(structure.indptr, structure.indices, tuple(structure.shape), data)
    import scipy.sparse

    return scipy.sparse.csr_array((data, structure.indices, structure.indptr), shape=structure.shape)
