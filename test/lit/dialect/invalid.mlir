// RUN: not lt-opt %s --split-input-file 2>&1 | filecheck %s

// Every rejected input names its file, line and column.

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'lt.loop' size must be positive, got -2
func.func @negative_size(%A: memref<8xf32>) {
  "lt.loop"() ({
  ^bb0(%i: index):
  }) {dim = "m", size = -2 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'lt.loop' size must be positive, got 0
func.func @zero_size(%A: memref<8xf32>) {
  "lt.loop"() ({
  ^bb0(%i: index):
  }) {dim = "m", size = 0 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'lt.loop' tail must not be negative, got -1
func.func @negative_tail(%A: memref<8xf32>) {
  "lt.loop"() ({
  ^bb0(%i: index):
  }) {dim = "m", size = 2 : i64, tail = -1 : i64} : () -> ()
  return
}

// -----

// The innermost level of a dim has no tail (its inner extent is 1).
// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'lt.loop' tail 1 must be smaller than the inner extent 1 of dim 'm'
func.func @innermost_tail(%A: memref<8xf32>) {
  "lt.loop"() ({
  ^bb0(%i: index):
  }) {dim = "m", size = 8 : i64, tail = 1 : i64} : () -> ()
  return
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'lt.loop' tail 8 must be smaller than the inner extent 8 of dim 'm'
func.func @tail_not_smaller(%A: memref<40xf32>) {
  "lt.loop"() ({
  ^bb0(%i: index):
    "lt.loop"() ({
    ^bb0(%j: index):
    }) {dim = "m", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 4 : i64, tail = 8 : i64} : () -> ()
  return
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'lt.loop' inner levels over dim 'm' cover different extents [4, 8]
func.func @inconsistent_inner(%A: memref<32xf32>) {
  "lt.loop"() ({
  ^bb0(%i: index):
    "lt.loop"() ({
    ^bb0(%j: index):
    }) {dim = "m", size = 8 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%j: index):
    }) {dim = "m", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'lt.loop' op attribute "size" is expected but not provided
func.func @missing_size(%A: memref<8xf32>) {
  "lt.loop"() ({
  ^bb0(%i: index):
  }) {dim = "m", tail = 0 : i64} : () -> ()
  return
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'lt.loop' body must have exactly one 'index' block argument
func.func @no_block_argument(%A: memref<8xf32>) {
  "lt.loop"() ({
  ^bb0:
  }) {dim = "m", size = 8 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'lt.loop' unknown annotation 'lt.fast' (known: lt.parallel, lt.schedule, lt.unroll, lt.vectorize, lt.prefetch, lt.double_buffer, lt.min_blocks, lt.gpu)
func.func @unknown_annotation(%A: memref<8xf32>) {
  "lt.loop"() ({
  ^bb0(%i: index):
  }) {dim = "m", size = 8 : i64, tail = 0 : i64, lt.fast} : () -> ()
  return
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'lt.loop' annotation 'lt.gpu' must be one of 'block', 'thread'
func.func @bad_gpu_mapping(%A: memref<8xf32>) {
  "lt.loop"() ({
  ^bb0(%i: index):
  }) {dim = "m", size = 8 : i64, tail = 0 : i64, lt.gpu = "warp"} : () -> ()
  return
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'lt.loop' annotation 'lt.schedule' must be one of 'dynamic', 'guided'
func.func @bad_schedule(%A: memref<8xf32>) {
  "lt.loop"() ({
  ^bb0(%i: index):
  }) {dim = "m", size = 8 : i64, tail = 0 : i64, lt.parallel, lt.schedule = "auto"} : () -> ()
  return
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: 'lt.loop' annotation 'lt.schedule' needs 'lt.parallel'
func.func @schedule_without_parallel(%A: memref<8xf32>) {
  "lt.loop"() ({
  ^bb0(%i: index):
  }) {dim = "m", size = 8 : i64, tail = 0 : i64, lt.schedule = "guided"} : () -> ()
  return
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 4]]:10: error: 'lt.dim' unknown dim 'q': no enclosing lt.loop iterates it
func.func @unknown_dim(%A: memref<8xf32>) {
  "lt.loop"() ({
  ^bb0(%i: index):
    %q = "lt.dim"() {dim = "q"} : () -> index
  }) {dim = "m", size = 8 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:8: error: 'lt.alloc' has 1 dims but its memref has rank 2
func.func @alloc_rank(%A: memref<8xf32>) {
  %t = "lt.alloc"() {dims = ["m"]} : () -> memref<8x4xf32>
  return
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:8: error: 'lt.alloc' dims must be distinct, got ['m', 'm']
func.func @alloc_duplicate_dims(%A: memref<8xf32>) {
  %t = "lt.alloc"() {dims = ["m", "m"]} : () -> memref<8x4xf32>
  return
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 6]]:5: error: 'lt.reduce' unknown kind 'avg' (expected one of add, mul, max, min)
func.func @unknown_reduce_kind(%A: memref<8xf32>, %S: memref<1xf32>) {
  "lt.loop"() ({
  ^bb0(%i: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    %a = memref.load %A[%m] : memref<8xf32>
    "lt.reduce"(%a, %S, %i) {kind = "avg"} : (f32, memref<1xf32>, index) -> ()
  }) {dim = "m", size = 8 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 6]]:5: error: 'lt.reduce' value type f32 does not match the accumulator's element type f64
func.func @reduce_type_mismatch(%A: memref<8xf32>, %S: memref<1xf64>) {
  "lt.loop"() ({
  ^bb0(%i: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    %a = memref.load %A[%m] : memref<8xf32>
    "lt.reduce"(%a, %S, %i) {kind = "add"} : (f32, memref<1xf64>, index) -> ()
  }) {dim = "m", size = 8 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 6]]:5: error: 'lt.reduce' needs 1 indices for memref<1xf32>, got 0
func.func @reduce_missing_index(%A: memref<8xf32>, %S: memref<1xf32>) {
  "lt.loop"() ({
  ^bb0(%i: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    %a = memref.load %A[%m] : memref<8xf32>
    "lt.reduce"(%a, %S) {kind = "add"} : (f32, memref<1xf32>) -> ()
  }) {dim = "m", size = 8 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: unknown op 'lt.lop' (the lt dialect has alloc, dim, loop, reduce)
func.func @unknown_op(%A: memref<8xf32>) {
  "lt.lop"() : () -> ()
  return
}

// -----

// A misspelt loop is reported where it is written, not at the lt.dim inside
// it that no longer has a loop around it.
// CHECK: invalid.mlir:[[# @LINE + 2]]:3: error: unknown op 'lt.lop' (the lt dialect has alloc, dim, loop, reduce)
func.func @misspelt_loop(%A: memref<8xf32>) {
  "lt.lop"() ({
  ^bb0(%i: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    %a = memref.load %A[%m] : memref<8xf32>
  }) {dim = "m", size = 8 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// The custom form is located too.
// CHECK: invalid.mlir:[[# @LINE + 2]]:8: error: unknown op 'lt.dimm'
func.func @custom_form() {
  %d = lt.dimm {dim = "i"} : index
  return
}

// -----

// Malformed IR.
// CHECK: invalid.mlir:[[# @LINE + 3]]:9: error: expected
func.func @malformed(%A: memref<8xf32>) {
  "lt.loop"() ({
  return
}
