// RUN: lt-opt %s --emit=asm | filecheck %s
// REQUIRES: avx2

// Native assembly for this CPU: vector adds on ymm/zmm registers, and a
// scalar add for the tail element.
// CHECK-LABEL: add:
// CHECK: vaddps {{.*}}%{{[yz]}}mm
// CHECK: vaddss
// CHECK: retq
func.func @add(%A: memref<33xf32> {lt.name = "A"}, %B: memref<33xf32> {lt.name = "B"}, %C: memref<33xf32> {lt.name = "C"}) {
  "lt.loop"() ({
  ^bb0(%i1: index):
    "lt.loop"() ({
    ^bb0(%i0: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %a = memref.load %A[%i] : memref<33xf32>
      %b = memref.load %B[%i] : memref<33xf32>
      %c = arith.addf %a, %b : f32
      memref.store %c, %C[%i] : memref<33xf32>
    }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 1 : i64} : () -> ()
  return
}
