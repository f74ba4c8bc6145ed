// RUN: lt-opt %s --emit=loop-tree | filecheck %s --match-full-lines --strict-whitespace

// Annotations, scratch buffers, reduce kinds, window arithmetic, unnamed
// arguments, and several functions (each under its name).
//      CHECK:@window:
// CHECK-NEXT:%0 <- alloc f32[x] (7 elements)
// CHECK-NEXT:for x in 3 r 1 : L0 [parallel]
// CHECK-NEXT: for x' in 2 : L1 [unroll 2]
// CHECK-NEXT:  %0[x] <- -inf
// CHECK-NEXT:  for k in 3 : L2 [vectorize 4]
// CHECK-NEXT:   %1 <- read arg0[x + k]
// CHECK-NEXT:   %0[x] max= %1
// CHECK-NEXT:for x in 7 : L3
// CHECK-NEXT: %2 <- read %0[x]
// CHECK-NEXT: arg1[x*2] <- %2
// CHECK-NEXT:@second:
// CHECK-NEXT:for i in 4 : L4 [gpu block]
// CHECK-NEXT: %0 <- read arg0[i]
// CHECK-NEXT: %1 <- exp(%0)
// CHECK-NEXT: arg0[i] <- %1
func.func @window(%X: memref<9xf32>, %Y: memref<14xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %two = arith.constant 2 : index
  %t = "lt.alloc"() {dims = ["x"]} : () -> memref<7xf32>
  "lt.loop"() ({
  ^bb0(%i0: index):
    "lt.loop"() ({
    ^bb0(%i1: index):
      %x = "lt.dim"() {dim = "x"} : () -> index
      memref.store %ninf, %t[%x] : memref<7xf32>
      "lt.loop"() ({
      ^bb0(%k0: index):
        %k = "lt.dim"() {dim = "k"} : () -> index
        %xk = arith.addi %x, %k : index
        %v = memref.load %X[%xk] : memref<9xf32>
        "lt.reduce"(%v, %t, %x) {kind = "max"} : (f32, memref<7xf32>, index) -> ()
      }) {dim = "k", size = 3 : i64, tail = 0 : i64, lt.vectorize = 4} : () -> ()
    }) {dim = "x", size = 2 : i64, tail = 0 : i64, lt.unroll = 2} : () -> ()
  }) {dim = "x", size = 3 : i64, tail = 1 : i64, lt.parallel} : () -> ()
  "lt.loop"() ({
  ^bb0(%j0: index):
    %x = "lt.dim"() {dim = "x"} : () -> index
    %v = memref.load %t[%x] : memref<7xf32>
    %x2 = arith.muli %x, %two : index
    memref.store %v, %Y[%x2] : memref<14xf32>
  }) {dim = "x", size = 7 : i64, tail = 0 : i64} : () -> ()
  return
}
func.func @second(%A: memref<4xf32>) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %a = memref.load %A[%i] : memref<4xf32>
    %e = math.exp %a : f32
    memref.store %e, %A[%i] : memref<4xf32>
  }) {dim = "i", size = 4 : i64, tail = 0 : i64, lt.gpu = "block"} : () -> ()
  return
}

// Comparisons show their predicate.
// RUN: sed -n '/^func.func @guarded(/,/^}/p' %s | lt-opt - --emit=loop-tree | filecheck %s --check-prefix=CMP
// CMP: %1 <- cmpi slt(i, 3)
// CMP: %2 <- cmpf olt(%0, 0.0)
func.func @guarded(%A: memref<4xf32>) {
  %c3 = arith.constant 3 : index
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %a = memref.load %A[%i] : memref<4xf32>
    %p = arith.cmpi slt, %i, %c3 : index
    %q = arith.cmpf olt, %a, %zero : f32
    %r = arith.andi %p, %q : i1
    %s = arith.select %r, %zero, %a : f32
    memref.store %s, %A[%i] : memref<4xf32>
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}
