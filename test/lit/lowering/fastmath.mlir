// RUN: lt-opt %s --emit=llvm --mcpu=znver2 | filecheck %s --check-prefix=DEFAULT
// RUN: lt-opt %s --emit=llvm --mcpu=znver2 --fastmath=strict | filecheck %s --check-prefix=STRICT
// RUN: lt-opt %s --emit=llvm --mcpu=znver2 --fastmath=nnan,nsz | filecheck %s --check-prefix=NNAN
// RUN: lt-opt %s --emit=asm --mcpu=znver2 | filecheck %s --check-prefix=ASM
// RUN: lt-opt %s --fastmath=fast | filecheck %s --check-prefix=ATTR
// RUN: not lt-opt %s --fastmath=nnan,quick 2>&1 | filecheck %s --check-prefix=BAD

// Floating-point modes.  default: a multiply-add may fuse (contract), and
// max/min keep NumPy's NaN propagation with the sign of an equal zero left
// open (nsz) — so max(x, 0.0) is one vmaxps (a constant is never NaN: only
// x's NaN needs passing on, and vmaxps returns its second operand when
// either is NaN), and max(x, y) is vmaxps plus one NaN fix-up (cmpunord,
// blendv).  strict: no flags (IEEE maximum orders -0 below +0).
// DEFAULT: fmul contract <8 x float>
// DEFAULT: call nsz <8 x float> @llvm.maximum.v8f32
// STRICT-NOT: contract
// STRICT-NOT: nsz
// STRICT: call <8 x float> @llvm.maximum.v8f32
// NNAN: call nnan nsz <8 x float> @llvm.maximum.v8f32
// ASM-LABEL: clip:
// ASM-COUNT-4: vmaxps
// ASM-NOT: vblendvps
// ASM: retq
// ASM-LABEL: pairwise:
// ASM: vmaxps
// ASM: vcmpunordps
// ASM: vblendvps
// ATTR: func.func @clip{{.*}} attributes {lt.fastmath = "fast"}
// BAD: error: unknown fastmath mode 'nnan,quick' (one of default, strict, fast, or a comma list of reassoc, nnan, ninf, nsz, arcp, contract, afn)
func.func @clip(%A: memref<32xf32> {lt.name = "A"}, %B: memref<32xf32> {lt.name = "B"}, %C: memref<32xf32> {lt.name = "C"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %a = memref.load %A[%i] : memref<32xf32>
    %b = memref.load %B[%i] : memref<32xf32>
    %p = arith.mulf %a, %b : f32
    %q = arith.maximumf %p, %zero : f32
    memref.store %q, %C[%i] : memref<32xf32>
  }) {dim = "i", size = 32 : i64, tail = 0 : i64} : () -> ()
  return
}
func.func @pairwise(%A: memref<32xf32> {lt.name = "A"}, %B: memref<32xf32> {lt.name = "B"}, %C: memref<32xf32> {lt.name = "C"}) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %a = memref.load %A[%i] : memref<32xf32>
    %b = memref.load %B[%i] : memref<32xf32>
    %q = arith.maximumf %a, %b : f32
    memref.store %q, %C[%i] : memref<32xf32>
  }) {dim = "i", size = 32 : i64, tail = 0 : i64} : () -> ()
  return
}
