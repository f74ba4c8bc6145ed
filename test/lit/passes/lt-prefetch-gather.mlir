// lt-prefetch on an lt loop whose body reads a row through an index it
// loads at the loop's dim (SDDMM's row of C for each stored position:
// X[clamp(col[p]), j]): at the start of each iteration, the row D positions
// ahead, col[min(max(p + D, 0), 5)] through the body's own cast and clamps.
//
// Normal case: the gathered row of 3 doubles (one line); col itself, a 1-D
// array walked an element an iteration, is a stream left to the hardware.
// RUN: lt-opt %s -p 'builtin.module(lt-prefetch{loop=0 distance=2})' --emit=loop-tree 2>&1 | filecheck %s --check-prefix=TREE
// RUN: lt-opt %s -p 'builtin.module(lt-prefetch{loop=0 distance=2}, lower-lt-to-scf, canonicalize)' 2>/dev/null | filecheck %s --check-prefix=IR
// TREE: remark: lt-prefetch: L0 "for p in 6" prefetches X (24 bytes a row, gathered) 2 iterations ahead
// TREE: for p in 6 : L0 [prefetch 2]
//      IR: scf.for %[[P:.*]] = %c0 to %c6 step %c1 {
// IR-NEXT:   %[[A:.*]] = arith.addi %[[P]], %c2 : index
// IR-NEXT:   %[[A0:.*]] = arith.maxsi %[[A]], %c0 : index
// IR-NEXT:   %[[A5:.*]] = arith.minsi %[[A0]], %c5 : index
// IR-NEXT:   %[[K:.*]] = memref.load %arg0[%[[A5]]] : memref<6xi64>
// IR-NEXT:   %[[KI:.*]] = arith.index_cast %[[K]] : i64 to index
// IR-NEXT:   %[[K0:.*]] = arith.maxsi %[[KI]], %c0 : index
// IR-NEXT:   %[[K3:.*]] = arith.minsi %[[K0]], %c3 : index
// IR-NEXT:   memref.prefetch %arg1[%[[K3]], %c0], read, locality<2>, data : memref<4x3xf64>
//
// Tail case: p split 6 = 1 r 2 over 4, the inner level prefetching (in the
// tail iteration too), and distances past the last position: the sums are
// the loop's without prefetches.
// RUN: lt-opt %s --run --repeat 1 | filecheck %s --check-prefix=SUM
// RUN: lt-opt %s --run --repeat 1 -p 'builtin.module(lt-prefetch{loop=0 distance=2})' | filecheck %s --check-prefix=SUM
// RUN: lt-opt %s --run --repeat 1 -p 'builtin.module(lt-split{loop=0 factor=4}, lt-prefetch{loop=1 distance=3})' | filecheck %s --check-prefix=SUM
// RUN: lt-opt %s --run --repeat 1 -p 'builtin.module(lt-prefetch{loop=0 distance=1000})' | filecheck %s --check-prefix=SUM
// SUM: arg2 f64[6] checksum -9.63436
//
// Refused, located: an index array marked lt.repeats is no gather (a run of
// positions reads one row), and col is 1-D: nothing to prefetch.
// RUN: sed 's|{lt.name = "col"}|{lt.name = "col", lt.repeats}|' %s | not lt-opt - -p 'builtin.module(lt-prefetch{loop=0 distance=2})' 2>&1 | filecheck %s --check-prefix=REPEATS
// REPEATS: <stdin>:{{[0-9]+}}:{{[0-9]+}}: error: lt-prefetch: no read in L0 "for p in 6" reads a row of at most 1 KB along dim 'p' or through an index loaded there, with the axes before it fixed in the loop
func.func @sampled(%col: memref<6xi64> {lt.name = "col"}, %X: memref<4x3xf64> {lt.name = "X"}, %out: memref<6xf64> {lt.name = "out"}) {
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %zero = arith.constant 0.0 : f64
  "lt.loop"() ({
  ^bb0(%p0: index):
    %p = "lt.dim"() {dim = "p"} : () -> index
    %k64 = memref.load %col[%p] : memref<6xi64>
    %k = arith.index_cast %k64 : i64 to index
    %kc = arith.maxsi %k, %c0 : index
    %kk = arith.minsi %kc, %c3 : index
    memref.store %zero, %out[%p] : memref<6xf64>
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %x = memref.load %X[%kk, %j] : memref<4x3xf64>
      "lt.reduce"(%x, %out, %p) {kind = "add"} : (f64, memref<6xf64>, index) -> ()
    }) {dim = "j", size = 3 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "p", size = 6 : i64, tail = 0 : i64} : () -> ()
  return
}
