// RUN: lt-opt %s --pass-pipeline='builtin.module(lower-lt-to-llvm)' | filecheck %s

// The CPU pipeline ends in the llvm dialect: bare pointers (one per memref,
// marked noalias), no lt/scf/memref ops left, the tail at offset 32 kept
// (the inner level is unrolled by 2, so the split keeps its two levels).
// CHECK-LABEL: llvm.func @add(%arg0: !llvm.ptr {llvm.noalias, lt.name = "A"}, %arg1: !llvm.ptr {llvm.noalias, lt.name = "B"}, %arg2: !llvm.ptr {llvm.noalias, lt.name = "C"})
// CHECK-NOT:   lt.loop
// CHECK-NOT:   scf.
// CHECK-NOT:   memref.
// Each access is tagged with its argument's alias scope and the others'
// (survives OpenMP outlining, where the noalias parameters are gone).
// CHECK:       llvm.load %{{.*}} {alias_scopes = [#[[SA:alias_scope[0-9]*]]], noalias_scopes = [#{{.*}}, #{{.*}}]}
// CHECK:       llvm.fadd %{{.*}} {fastmathFlags = #llvm.fastmath<contract>}
// CHECK:       llvm.store %{{.*}} {alias_scopes = [#[[SC:alias_scope[0-9]*]]], noalias_scopes = [#{{.*}}, #{{.*}}]}
// CHECK:       llvm.getelementptr inbounds|nuw %arg0[32]
// CHECK:       llvm.fadd
// CHECK:       llvm.return
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
    }) {dim = "i", size = 8 : i64, tail = 0 : i64, lt.unroll = 2 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 1 : i64} : () -> ()
  return
}
