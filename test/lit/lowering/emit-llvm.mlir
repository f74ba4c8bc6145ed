// RUN: lt-opt %s --emit=llvm --mcpu=znver2 | filecheck %s --check-prefixes=CHECK,AVX2
// RUN: lt-opt %s --emit=llvm --mcpu=znver4 | filecheck %s --check-prefixes=CHECK,AVX512
// RUN: lt-opt %s --emit=llvm --mcpu=znver4 --mattr=-avx512f | filecheck %s --check-prefixes=CHECK,AVX2
// RUN: lt-opt %s --emit=llvm | filecheck %s --check-prefix=CHECK

// LLVM IR after llvmlite's O3, for a CPU pinned so the widths do not depend
// on the host: the 33-element add is four 8-wide vector adds (with AVX2,
// i.e. znver2, or znver4 without AVX-512) or two 16-wide ones (AVX-512,
// znver4), plus one scalar tail element, with noalias pointers, each access
// in its argument's alias scope, and FMA contraction allowed.  For the host (last
// RUN), whatever it is, only what holds on every x86-64 CPU is checked.
// CHECK: define void @add(ptr noalias {{.*}}%0, ptr noalias {{.*}}%1, ptr noalias {{.*}}%2)
// AVX2: load <8 x float>, ptr %0, align 4, !alias.scope ![[A:[0-9]+]], !noalias
// AVX2: fadd contract <8 x float>
// AVX512: load <16 x float>, ptr %0, align 4, !alias.scope ![[A:[0-9]+]], !noalias
// AVX512: fadd contract <16 x float>
// CHECK: fadd contract float
// CHECK: ret void
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
