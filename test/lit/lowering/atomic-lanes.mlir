// A parallel loop whose iterations update shared elements at an index from
// the data (no private tile can hold them), its inner loop vectorized along
// the other index: each lane of the vector reduction is one scalar atomic
// lt.reduce (lowering/vectorize.py, _atomic_lanes), lowered like any
// atomic reduction.  Those lane reductions used to be left in the IR
// (never lowered: "builtin.unrealized_conversion_cast has no lowering"),
// which the dense @ CSR product of the kernel frontend met.
//
// Normal case (8 lanes), tail case (6 lanes of 4: one masked group) and
// the loop serial: the same checksum.
// RUN: lt-opt %s --run --repeat 1 --seed 3 | filecheck %s --check-prefix=SUM
// RUN: env LT_PARALLEL_MIN_WORK=0 lt-opt %s --run --repeat 1 --seed 3 -p 'builtin.module(lt-parallel{loop=0}, lt-vectorize{loop=1 width=8})' | filecheck %s --check-prefix=SUM
// RUN: env LT_PARALLEL_MIN_WORK=0 lt-opt %s --run --repeat 1 --seed 3 -p 'builtin.module(lt-parallel{loop=0}, lt-split{loop=1 factor=6}, lt-vectorize{loop=2 width=4})' | filecheck %s --check-prefix=SUM
// SUM: arg2 f64[3, 8] checksum 1.13222
//
// Each lane an atomic read-modify-write.
// RUN: env LT_PARALLEL_MIN_WORK=0 lt-opt %s -p 'builtin.module(lt-parallel{loop=0}, lt-vectorize{loop=1 width=8})' --emit=llvm | filecheck %s --check-prefix=LLVM
// LLVM: atomicrmw fadd
// LLVM-NOT: lt.reduce
//
// Refused: lt-vectorize of the outer loop (not innermost).
// RUN: not lt-opt %s -p 'builtin.module(lt-vectorize{loop=0 width=4})' 2>&1 | filecheck %s --check-prefix=ERR
// ERR: error: lt-vectorize: {{.*}}innermost
func.func @f(%m: memref<4x8xf64> {lt.name = "m"}, %idx: memref<4xi64> {lt.name = "idx"}, %t: memref<3x8xf64> {lt.name = "t"}) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  "lt.loop"() ({
  ^bb0(%k0: index):
    %k = "lt.dim"() {dim = "k"} : () -> index
    %c64 = memref.load %idx[%k] : memref<4xi64>
    %cc = arith.index_cast %c64 : i64 to index
    %cl = arith.maxsi %cc, %c0 : index
    %c = arith.minsi %cl, %c2 : index
    "lt.loop"() ({
    ^bb0(%i0: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %x = memref.load %m[%k, %i] : memref<4x8xf64>
      "lt.reduce"(%x, %t, %c, %i) {kind = "add"} : (f64, memref<3x8xf64>, index, index) -> ()
    }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "k", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}
