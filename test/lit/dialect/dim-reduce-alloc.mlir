// RUN: lt-opt %s | filecheck %s
// RUN: lt-opt %s | lt-opt | filecheck %s

// lt.dim names an enclosing loop's dim; lt.reduce is an ordinary op (not a
// terminator: a store follows it in the same body); lt.alloc declares
// scratch memory over named dims.

// CHECK-LABEL: func.func @row_max
// CHECK:   %[[T:.*]] = "lt.alloc"() {dims = ["m"]} : () -> memref<7xf32>
// CHECK:   %[[M:.*]] = "lt.dim"() {dim = "m"} : () -> index
// CHECK:   memref.store %{{.*}}, %[[T]][%[[M]]] : memref<7xf32>
// CHECK:   "lt.reduce"(%{{.*}}, %[[T]], %[[M]]) {kind = "max"} : (f32, memref<7xf32>, index) -> ()
// CHECK:   memref.store %{{.*}}, %{{.*}}[%[[M]]] : memref<7xf32>
func.func @row_max(%A: memref<7x5xf32>, %S: memref<7xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %t = "lt.alloc"() {dims = ["m"]} : () -> memref<7xf32>
  "lt.loop"() ({
  ^bb0(%i: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    memref.store %ninf, %t[%m] : memref<7xf32>
    "lt.loop"() ({
    ^bb0(%j: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %a = memref.load %A[%m, %n] : memref<7x5xf32>
      "lt.reduce"(%a, %t, %m) {kind = "max"} : (f32, memref<7xf32>, index) -> ()
    }) {dim = "n", size = 5 : i64, tail = 0 : i64} : () -> ()
    %r = memref.load %t[%m] : memref<7xf32>
    memref.store %r, %S[%m] : memref<7xf32>
  }) {dim = "m", size = 7 : i64, tail = 0 : i64} : () -> ()
  return
}
