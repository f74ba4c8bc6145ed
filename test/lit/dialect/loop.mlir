// RUN: lt-opt %s | filecheck %s
// RUN: lt-opt %s | lt-opt | filecheck %s

// lt.loop round-trips: dim, size, tail, annotations, an index block
// argument, no terminator, imperfect nesting (a store beside an inner loop).

// CHECK-LABEL: func.func @tiled
// CHECK:       "lt.loop"() ({
// CHECK-NEXT:  ^bb0(%[[I:.*]]: index):
// CHECK:         "lt.loop"() ({
// CHECK-NEXT:    ^bb0(%{{.*}}: index):
// CHECK:           memref.store
// CHECK:         }) {dim = "m", lt.unroll = 2 : i64, size = 8 : i64, tail = 0 : i64} : () -> ()
// CHECK-NEXT:    memref.store
// CHECK-NEXT:  }) {dim = "m", lt.parallel, size = 4 : i64, tail = 1 : i64} : () -> ()
func.func @tiled(%A: memref<33xf32>, %B: memref<5xf32>) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i: index):
    "lt.loop"() ({
    ^bb0(%j: index):
      %m = "lt.dim"() {dim = "m"} : () -> index
      memref.store %zero, %A[%m] : memref<33xf32>
    }) {dim = "m", size = 8 : i64, tail = 0 : i64, lt.unroll = 2} : () -> ()
    memref.store %zero, %B[%i] : memref<5xf32>
  }) {dim = "m", size = 4 : i64, tail = 1 : i64, lt.parallel} : () -> ()
  return
}

// CHECK-LABEL: func.func @gpu_and_vector
// CHECK: lt.vectorize = 8
// CHECK: lt.gpu = "block"
func.func @gpu_and_vector(%A: memref<64xf32>) {
  %one = arith.constant 1.0 : f32
  "lt.loop"() ({
  ^bb0(%i: index):
    "lt.loop"() ({
    ^bb0(%j: index):
      %m = "lt.dim"() {dim = "m"} : () -> index
      memref.store %one, %A[%m] : memref<64xf32>
    }) {dim = "m", size = 8 : i64, tail = 0 : i64, lt.vectorize = 8} : () -> ()
  }) {dim = "m", size = 8 : i64, tail = 0 : i64, lt.gpu = "block"} : () -> ()
  return
}
