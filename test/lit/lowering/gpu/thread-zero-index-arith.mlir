// Statements beside a thread loop run on thread 0 under an scf.if; index
// arithmetic between them (here `i + 1`, computed after the first load)
// moves before the scf.if with them, so the guarded loads still see it.
// The lowering used to leave it behind ("operand #1 does not dominate this
// use"); the fuzzer found it on lt_mlir.kernel's CSR programs.
// RUN: lt-opt %s -p 'builtin.module(lt-gpu-map{loop=0 to=block}, lt-gpu-map{loop=1 to=thread})' --emit=ptx | filecheck %s --check-prefix=PTX
// PTX: .visible .entry
// PTX: bar.sync
// The same numbers on the CPU and through the GPU lowering, emulated:
// RUN: lt-opt %s --run --repeat 1 | filecheck %s --check-prefix=SUM
// RUN: lt-opt %s --run --repeat 1 --target=cuda-emulated -p 'builtin.module(lt-gpu-map{loop=0 to=block}, lt-gpu-map{loop=1 to=thread})' | filecheck %s --check-prefix=SUM
// SUM: arg1 f32[4] checksum -4.86339
// SUM-NEXT: arg2 f32[4] checksum -0.946864
func.func @rows(%A: memref<5x8xf32> {lt.name = "A"}, %S: memref<4xf32> {lt.name = "S"}, %T: memref<4xf32> {lt.name = "T"}) {
  "lt.loop"() ({
  ^bb0(%a: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %zero = arith.constant 0.0 : f32
    memref.store %zero, %S[%i] : memref<4xf32>
    %c1 = arith.constant 1 : index
    %n = arith.addi %i, %c1 : index
    %v = memref.load %A[%n, %c1] : memref<5x8xf32>
    memref.store %v, %T[%i] : memref<4xf32>
    "lt.loop"() ({
    ^bb0(%b: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      %x = memref.load %A[%i, %k] : memref<5x8xf32>
      "lt.reduce"(%x, %S, %i) {kind = "add"} : (f32, memref<4xf32>, index) -> ()
    }) {dim = "k", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}
