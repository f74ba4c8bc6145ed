// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lower-lt-to-scf)' 2>&1 | filecheck %s
// RUN: lt-opt %s --split-input-file -p 'builtin.module(lower-lt-to-scf{check-bounds=0})' | filecheck %s --check-prefix=UNCHECKED

// lower-lt-to-scf first proves every access in bounds by interval
// arithmetic over the static loop sizes, and refuses the program otherwise.
// With check-bounds=0 it lowers anyway (for testing guard pages).
// UNCHECKED-COUNT-3: scf.for

// A window that reads one element past the end: i + k reaches 8 + 2 = 10.
// CHECK: bounds.mlir:[[# @LINE + 9]]:12: error: 'memref.load' index 0 ranges over [0, 10] but the memref has 10 elements on that axis
func.func @window_too_wide(%X: memref<10xf32>, %Y: memref<9xf32>) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      %ik = arith.addi %i, %k : index
      %x = memref.load %X[%ik] : memref<10xf32>
      "lt.reduce"(%x, %Y, %i) {kind = "add"} : (f32, memref<9xf32>, index) -> ()
    }) {dim = "k", size = 3 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 9 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// A loop's iteration number includes the tail iteration: 4 r 1 runs %i0 = 0..4.
// CHECK: bounds.mlir:[[# @LINE + 8]]:5: error: 'memref.store' index 0 ranges over [0, 4] but the memref has 4 elements on that axis
func.func @tail_iteration(%A: memref<33xf32>, %B: memref<4xf32>) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i0: index):
    "lt.loop"() ({
    ^bb0(%i1: index):
    }) {dim = "m", size = 8 : i64, tail = 0 : i64} : () -> ()
    memref.store %zero, %B[%i0] : memref<4xf32>
  }) {dim = "m", size = 4 : i64, tail = 1 : i64} : () -> ()
  return
}

// -----

// A strided view: 2 * i + 1 reaches 15 for i < 8.
// CHECK: bounds.mlir:[[# @LINE + 11]]:5: error: 'lt.reduce' index 1 ranges over [1, 15] but the memref has 15 elements on that axis
func.func @strided(%A: memref<8xf32>, %S: memref<2x15xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %a = memref.load %A[%i] : memref<8xf32>
    %j = arith.muli %i, %c2 : index
    %j1 = arith.addi %j, %c1 : index
    "lt.reduce"(%a, %S, %c0, %j1) {kind = "add"} : (f32, memref<2x15xf32>, index, index) -> ()
  }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
  return
}
