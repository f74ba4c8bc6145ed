// A scratch buffer too large for the stack is a malloc call after lowering;
// it is a fresh allocation too, so its accesses get an alias scope of their
// own, distinct from every argument's (else, inside an OpenMP-outlined
// parallel region, LLVM must assume a store to it changes the input and
// keeps accumulators in memory).
// RUN: lt-opt %s --pass-pipeline='builtin.module(lower-lt-to-llvm)' | filecheck %s
//
// CHECK-LABEL: llvm.func @scratch(
// CHECK:       %[[BIG:.*]] = llvm.call @malloc(
// CHECK:       llvm.store %{{.*}}, %{{.*}} {alias_scopes = [#[[SBIG:alias_scope[0-9]*]]], noalias_scopes = [{{.*}}]}
// CHECK:       llvm.load %{{.*}} {alias_scopes = [#[[SBIG]]], noalias_scopes = [{{.*}}]}
// CHECK:       llvm.store %{{.*}}, %{{.*}} {alias_scopes = [#[[SOUT:alias_scope[0-9]*]]], noalias_scopes = [{{.*}}#[[SBIG]]{{.*}}]}
// CHECK:       llvm.call @free(%[[BIG]])
func.func @scratch(%A: memref<512x512xf32> {lt.name = "A"}, %B: memref<512x512xf32> {lt.name = "B"}) {
  %two = arith.constant 2.0 : f32
  %t = "lt.alloc"() {dims = ["i", "j"]} : () -> memref<512x512xf32>
  "lt.loop"() ({
  ^bb0(%i1: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%j1: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %a = memref.load %A[%i, %j] : memref<512x512xf32>
      %d = arith.mulf %a, %two : f32
      memref.store %d, %t[%i, %j] : memref<512x512xf32>
    }) {dim = "j", size = 512 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 512 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i1: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%j1: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %v = memref.load %t[%i, %j] : memref<512x512xf32>
      memref.store %v, %B[%i, %j] : memref<512x512xf32>
    }) {dim = "j", size = 512 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 512 : i64, tail = 0 : i64} : () -> ()
  return
}
