// lt-prefetch-data{loop=K distance=D}: annotate the K-th loop of bounds known
// at run time `lt.prefetch = D`; the CPU lowering then asks the cache, at the
// start of each iteration, for each cache line of the rows the body reads
// through an index it loads at the loop's variable (an SpMM's row of X for a
// stored value), D positions ahead: col[min(max(q + D, 0), 5)] through the
// body's own cast and clamps (`memref.prefetch`, a hint that never changes a
// result).
//
// Normal case: X[clamp(col[q]), j], a row of 3 doubles (one line).
// RUN: lt-opt %s -p 'builtin.module(lt-prefetch-data{loop=0 distance=2})' --emit=loop-tree 2>&1 | filecheck %s --check-prefix=TREE
// RUN: lt-opt %s -p 'builtin.module(lt-prefetch-data{loop=0 distance=2}, lower-lt-to-scf, canonicalize)' 2>/dev/null | filecheck %s --check-prefix=IR
//      TREE: remark: lt-prefetch-data: loop 0 of bounds known at run time prefetches a row of 24 bytes 2 iterations ahead
//      TREE: for v{{[0-9]+}} in maxsi({{.*}}, 0) .. minsi({{.*}}, 6) (bounds known at run time) [prefetch 2]
//      IR: scf.for %[[Q:.*]] = %{{[0-9]+}} to %{{[0-9]+}} step %c1 {
// IR-NEXT:   %[[A:.*]] = arith.addi %[[Q]], %c2 : index
// IR-NEXT:   %[[A0:.*]] = arith.maxsi %[[A]], %c0 : index
// IR-NEXT:   %[[A5:.*]] = arith.minsi %[[A0]], %c5 : index
// IR-NEXT:   %[[K:.*]] = memref.load %arg1[%[[A5]]] : memref<6xi64>
// IR-NEXT:   %[[KI:.*]] = arith.index_cast %[[K]] : i64 to index
// IR-NEXT:   %[[K0:.*]] = arith.maxsi %[[KI]], %c0 : index
// IR-NEXT:   %[[K3:.*]] = arith.minsi %[[K0]], %c3 : index
// IR-NEXT:   memref.prefetch %arg3[%[[K3]], %c0], read, locality<2>, data : memref<4x3xf64>
//
// Tail case: rows of 0 to 6 stored entries; the last positions of a row
// prefetch the next row's first rows of X, the matrix's last ones clamp to
// col[5]; distances past every row (7) too: the products are the loop's
// without prefetches.
// RUN: lt-opt %s --run --repeat 1 | filecheck %s --check-prefix=SUM
// RUN: lt-opt %s --run --repeat 1 -p 'builtin.module(lt-prefetch-data{loop=0 distance=2})' | filecheck %s --check-prefix=SUM
// RUN: lt-opt %s --run --repeat 1 -p 'builtin.module(lt-prefetch-data{loop=0 distance=7})' | filecheck %s --check-prefix=SUM
// RUN: env LT_PARALLEL_MIN_WORK=0 lt-opt %s --run --repeat 1 -p 'builtin.module(lt-prefetch-data{loop=0 distance=1}, lt-parallel{loop=0 schedule=guided})' | filecheck %s --check-prefix=SUM
// SUM: arg4 f64[4, 3] checksum -1.68108
//
// Refused, located: no such loop, a distance below 1, a vectorized loop, a
// loop that gathers no row (its reads are at the loop's variable itself).
// RUN: not lt-opt %s -p 'builtin.module(lt-prefetch-data{loop=1 distance=2})' 2>&1 | filecheck %s --check-prefix=NOLOOP
// NOLOOP: error: lt-prefetch-data: no loop 1 of bounds known at run time (the module has 0..0)
// RUN: not lt-opt %s -p 'builtin.module(lt-prefetch-data{loop=0 distance=0})' 2>&1 | filecheck %s --check-prefix=DIST
// DIST: {{.*}}.mlir:{{[0-9]+}}:{{[0-9]+}}: error: lt-prefetch-data: distance must be at least 1, got 0
// RUN: sed 's|^//VEC||' %s | not lt-opt - -p 'builtin.module(lt-prefetch-data{loop=0 distance=2})' 2>&1 | filecheck %s --check-prefix=VEC
// VEC: <stdin>:{{[0-9]+}}:{{[0-9]+}}: error: lt-prefetch-data: loop 0 of bounds known at run time is vectorized: prefetches are for a scalar loop
// RUN: sed 's|%X\[%kk, %jj\]|%X[%c0, %jj]|' %s | not lt-opt - -p 'builtin.module(lt-prefetch-data{loop=0 distance=2})' 2>&1 | filecheck %s --check-prefix=NOROW
// NOROW: <stdin>:{{[0-9]+}}:{{[0-9]+}}: error: lt-prefetch-data: no read in loop 0 of bounds known at run time reads a row of at most 1 KB through an index loaded at the loop's variable
func.func @spmm(%ptr: memref<5xi64> {lt.name = "ptr"}, %col: memref<6xi64> {lt.name = "col"}, %val: memref<6xf64> {lt.name = "val"}, %X: memref<4x3xf64> {lt.name = "X"}, %Y: memref<4x3xf64> {lt.name = "Y"}) {
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %c6 = arith.constant 6 : index
  %c7 = arith.constant 7 : index
  %zero = arith.constant 0.0 : f64
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %i1 = arith.addi %i, %c1 : index
    %s64 = memref.load %ptr[%i] : memref<5xi64>
    %e64 = memref.load %ptr[%i1] : memref<5xi64>
    %sr = arith.index_cast %s64 : i64 to index
    %er = arith.index_cast %e64 : i64 to index
    %s = arith.remsi %sr, %c7 : index
    %e = arith.remsi %er, %c7 : index
    %s0 = arith.maxsi %s, %c0 : index
    %e6 = arith.minsi %e, %c6 : index
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      memref.store %zero, %Y[%i, %j] : memref<4x3xf64>
    }) {dim = "j", size = 3 : i64, tail = 0 : i64} : () -> ()
    scf.for %q = %s0 to %e6 step %c1 {
      %v = memref.load %val[%q] : memref<6xf64>
      %k64 = memref.load %col[%q] : memref<6xi64>
      %k = arith.index_cast %k64 : i64 to index
      %kc = arith.maxsi %k, %c0 : index
      %kk = arith.minsi %kc, %c3 : index
      "lt.loop"() ({
      ^bb0(%j1: index):
        %jj = "lt.dim"() {dim = "j"} : () -> index
        %xv = memref.load %X[%kk, %jj] : memref<4x3xf64>
        %p = arith.mulf %v, %xv : f64
        "lt.reduce"(%p, %Y, %i, %jj) {kind = "add"} : (f64, memref<4x3xf64>, index, index) -> ()
      }) {dim = "j", size = 3 : i64, tail = 0 : i64} : () -> ()
//VEC    } {lt.vectorize = 4 : i64}
//VEC    scf.for %q2 = %s0 to %e6 step %c1 {
    }
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}
