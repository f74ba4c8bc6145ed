// RUN: lt-opt %s --emit=loop-tree | filecheck %s --match-full-lines --strict-whitespace

// The blog's clipped matmul with m split by 8 (4 r 1) and n by 32 (1 r 16):
// loops numbered in pre-order, inner levels primed, accesses in dim terms.
//      CHECK:for m in 4 r 1 : L0
// CHECK-NEXT: for m' in 8 : L1
// CHECK-NEXT:  for n in 1 r 16 : L2
// CHECK-NEXT:   for n' in 32 : L3
// CHECK-NEXT:    C[m, n] <- 0.0
// CHECK-NEXT:    for k in 64 : L4
// CHECK-NEXT:     %0 <- read A[m, k]
// CHECK-NEXT:     %1 <- read B[k, n]
// CHECK-NEXT:     %2 <- mul(%0, %1)
// CHECK-NEXT:     %3 <- max(%2, 0.0)
// CHECK-NEXT:     C[m, n] += %3
//  CHECK-NOT:{{.}}
func.func @clipped_matmul(%A: memref<33x64xf32> {lt.name = "A"}, %B: memref<64x48xf32> {lt.name = "B"}, %C: memref<33x48xf32> {lt.name = "C"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i4: index):
    "lt.loop"() ({
    ^bb0(%i3: index):
      %m = "lt.dim"() {dim = "m"} : () -> index
      "lt.loop"() ({
      ^bb0(%i2: index):
        "lt.loop"() ({
        ^bb0(%i1: index):
          %n = "lt.dim"() {dim = "n"} : () -> index
          memref.store %zero, %C[%m, %n] : memref<33x48xf32>
          "lt.loop"() ({
          ^bb0(%i0: index):
            %k = "lt.dim"() {dim = "k"} : () -> index
            %a = memref.load %A[%m, %k] : memref<33x64xf32>
            %b = memref.load %B[%k, %n] : memref<64x48xf32>
            %p = arith.mulf %a, %b : f32
            %q = arith.maximumf %p, %zero : f32
            "lt.reduce"(%q, %C, %m, %n) {kind = "add"} : (f32, memref<33x48xf32>, index, index) -> ()
          }) {dim = "k", size = 64 : i64, tail = 0 : i64} : () -> ()
        }) {dim = "n", size = 32 : i64, tail = 0 : i64} : () -> ()
      }) {dim = "n", size = 1 : i64, tail = 16 : i64} : () -> ()
    }) {dim = "m", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 4 : i64, tail = 1 : i64} : () -> ()
  return
}
