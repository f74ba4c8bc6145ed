"""The element types a compiled entry point can take (MLIR spelling), with
their NumPy and C types, and ``ArgSpec``, one argument of an entry point.
Needs neither MLIR nor LLVM: the CUDA runtime reads it on machines that
have only the driver, and ``dialect/entry.py`` makes ``ArgSpec``s from IR."""

from dataclasses import dataclass
from functools import cached_property

import numpy as np

NUMPY = {
    "f16": np.float16,
    "f32": np.float32,
    "f64": np.float64,
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
}
C_TYPES = {
    "f16": "_Float16",
    "f32": "float",
    "f64": "double",
    "i8": "int8_t",
    "i16": "int16_t",
    "i32": "int32_t",
    "i64": "int64_t",
}
ELEMENT_TYPES = tuple(NUMPY)


@dataclass(frozen=True)
class ArgSpec:
    """One memref argument of an entry function."""

    index: int
    shape: tuple
    element: str  # MLIR spelling: f32, i64, ...
    written: bool
    monotone: bool = False  # marked lt.monotone: the caller promises values that never decrease (a CSR's indptr)

    @cached_property
    def dtype(self) -> np.dtype:
        return np.dtype(NUMPY[self.element])

    @property
    def c_type(self) -> str:
        return C_TYPES[self.element]

    @cached_property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def to_json(self) -> dict:
        d = {"index": self.index, "shape": list(self.shape), "element": self.element, "written": self.written}
        if self.monotone:
            d["monotone"] = True
        return d

    @classmethod
    def from_json(cls, d: dict) -> "ArgSpec":
        element = d["element"]
        if element not in NUMPY:
            raise ValueError(f"unsupported element type {element!r}")
        return cls(int(d["index"]), tuple(int(x) for x in d["shape"]), element, bool(d["written"]), bool(d.get("monotone", False)))
