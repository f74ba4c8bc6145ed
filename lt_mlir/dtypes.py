"""The element types a compiled entry point can take (MLIR spelling), with
their NumPy and C types.  Needs neither MLIR nor LLVM: the CUDA runtime
reads it on machines that have only the driver."""

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
