// RUN: lt-opt %s --emit=asm --mcpu=znver2 | filecheck %s --check-prefixes=CHECK,YMM
// RUN: lt-opt %s --emit=asm --mcpu=znver4 | filecheck %s --check-prefixes=CHECK,ZMM
// RUN: lt-opt %s --emit=asm --mcpu=x86-64 | filecheck %s --check-prefixes=SSE
// RUN: lt-opt %s --emit=asm | filecheck %s --check-prefix=HOST
// RUN: not lt-opt %s --emit=asm --mcpu=znver9 2>&1 | filecheck %s --check-prefix=BADCPU
// RUN: not lt-opt %s --emit=asm --mattr=avx2 2>&1 | filecheck %s --check-prefix=BADSYNTAX
// RUN: not lt-opt %s --emit=asm --mcpu=znver2 --mattr=+avx9 2>&1 | filecheck %s --check-prefix=BADFEATURE
// RUN: lt-opt --mcpu=help | filecheck %s --check-prefix=HELP

// Native assembly for a pinned CPU: vector adds on ymm (AVX2, znver2) or
// zmm (AVX-512, znver4) registers, SSE's xmm for baseline x86-64, and a
// scalar add for the tail element.  The host's own (last RUN) has a retq.
// CHECK-LABEL: add:
// YMM: vaddps {{.*}}%ymm
// ZMM: vaddps {{.*}}%zmm
// CHECK: vaddss
// CHECK: retq
// SSE-LABEL: add:
// SSE-NOT: {{[yz]}}mm
// SSE: addps {{.*}}%xmm
// SSE: retq
// HOST-LABEL: add:
// HOST: retq
// BADCPU: error: unknown CPU 'znver9' (lt-opt --mcpu=help lists them)
// BADSYNTAX: error: bad CPU feature 'avx2': write +name to enable a feature, -name to disable it
// BADFEATURE: error: unknown CPU feature 'avx9' (lt-opt --mcpu=help lists them)
// HELP: CPUs of x86_64
// HELP: znver4
// HELP: Features (--mattr=+name,-name):
// HELP: avx512f
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
