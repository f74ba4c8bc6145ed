// RUN: lt-opt %s --run --repeat 3 | filecheck %s
// RUN: lt-opt %s --run --repeat 3 --pass-pipeline='builtin.module(canonicalize)' | filecheck %s

// --run compiles the entry, runs it on seeded random inputs and reports the
// median time and a checksum of each output.  B = A + A, so the checksum is
// twice the sum of A's 33 samples: with seed 0, NumPy gives
// 2 * default_rng(0).standard_normal(33).astype(float32).sum() = -10.0452.
// CHECK: @double: {{[0-9.]+}} ms (median of 3 runs after warm-up)
// CHECK-NEXT: arg1 f32[33] checksum -10.0452
func.func @double(%A: memref<33xf32>, %B: memref<33xf32>) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    "lt.loop"() ({
    ^bb0(%i1: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %a = memref.load %A[%i] : memref<33xf32>
      %b = arith.addf %a, %a : f32
      memref.store %b, %B[%i] : memref<33xf32>
    }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 1 : i64} : () -> ()
  return
}
