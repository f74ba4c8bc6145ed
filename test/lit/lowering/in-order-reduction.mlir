// RUN: lt-opt %s --split-input-file --pass-pipeline='builtin.module(lower-lt-to-scf)' | filecheck %s
// RUN: lt-opt %s --split-input-file --pass-pipeline='builtin.module(lower-lt-to-scf)' --fastmath=reassoc,contract | filecheck %s --check-prefix=REASSOC
// RUN: sed -n '/^func.func @dot(/,/^}/p' %s | lt-opt - --emit=asm --mcpu=znver3 | filecheck %s --check-prefix=ASM

// An in-order reduction (default float semantics: no reassociation) whose
// innermost loop runs along the reduction is one chain through the
// accumulator.  The add that carries it gets no `contract`, so the multiply
// stays off the chain (an FMA there is 4 cycles a step against 3 for an
// add on Zen 3, 2 on Golden Cove); the multiply keeps its flags.  With
// `reassoc` LLVM may split the chain, and contraction stays.
// CHECK-LABEL: func.func @dot
// CHECK:       scf.for
// CHECK:         %[[P:.*]] = arith.mulf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK-NEXT:    %[[OLD:.*]] = memref.load
// CHECK-NEXT:    arith.addf %[[OLD]], %[[P]] : f32
// REASSOC-LABEL: func.func @dot
// REASSOC:       arith.addf %{{.*}}, %{{.*}} fastmath<reassoc,contract> : f32
// ASM-LABEL: dot:
// ASM-NOT:   vfmadd
// ASM:       vmulss
// ASM-NOT:   vfmadd
// ASM:       vaddss
// ASM-NOT:   vfmadd
// ASM:       retq
func.func @dot(%A: memref<4x64xf32> {lt.name = "A"}, %B: memref<4x64xf32> {lt.name = "B"}, %S: memref<4xf32> {lt.name = "S"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%r0: index):
    %r = "lt.dim"() {dim = "r"} : () -> index
    memref.store %zero, %S[%r] : memref<4xf32>
    "lt.loop"() ({
    ^bb0(%c0: index):
      %c = "lt.dim"() {dim = "c"} : () -> index
      %a = memref.load %A[%r, %c] : memref<4x64xf32>
      %b = memref.load %B[%r, %c] : memref<4x64xf32>
      %p = arith.mulf %a, %b : f32
      "lt.reduce"(%p, %S, %r) {kind = "add"} : (f32, memref<4xf32>, index) -> ()
    }) {dim = "c", size = 64 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Accumulators the innermost loop walks (C[m, n] under n, k outside): a
// chain per element, as many as n has, side by side; the FMAs stay.
// CHECK-LABEL: func.func @parallel_accumulators
// CHECK:       arith.addf %{{.*}}, %{{.*}} fastmath<contract> : f32
func.func @parallel_accumulators(%A: memref<4x4xf32> {lt.name = "A"}, %B: memref<4x8xf32> {lt.name = "B"}, %C: memref<4x8xf32> {lt.name = "C"}) {
  "lt.loop"() ({
  ^bb0(%m0: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      "lt.loop"() ({
      ^bb0(%n0: index):
        %n = "lt.dim"() {dim = "n"} : () -> index
        %a = memref.load %A[%m, %k] : memref<4x4xf32>
        %b = memref.load %B[%k, %n] : memref<4x8xf32>
        %p = arith.mulf %a, %b : f32
        "lt.reduce"(%p, %C, %m, %n) {kind = "add"} : (f32, memref<4x8xf32>, index, index) -> ()
      }) {dim = "n", size = 8 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "k", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}
