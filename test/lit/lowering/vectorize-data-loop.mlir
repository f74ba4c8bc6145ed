// An scf.for whose bounds are data (a CSR row), marked lt.vectorize = 4 (as
// lt_mlir.appy marks a `#pragma simd` loop over range(indptr[i], indptr[i+1])):
// lower-lt-to-scf runs its whole groups of 4 from its lower bound unmasked,
// then the rest (a row's last, partial group: the tail case, rows of 0 to 6
// entries here, never a multiple of 4 throughout) as the scalar loop.
// val[j] and col[j] are vector loads, x[col[j]] a vector.gather by the
// clamped index vector; the row sum accumulates in one vector across the
// groups, is reduced once after them, and the rest adds to it; the check's
// flag (a max of one value) runs once a group where any lane's check holds.
// The sums are the scalar loop's.
// RUN: lt-opt %s -p 'builtin.module(lower-lt-to-scf, canonicalize)' | filecheck %s --check-prefix=LOWER
// RUN: lt-opt %s --emit=loop-tree | filecheck %s --check-prefix=TREE --match-full-lines
// RUN: lt-opt %s --run --repeat 1 | filecheck %s --check-prefix=SUM
// RUN: sed 's/ {lt.vectorize = 4 : i64}//' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=SUM
// RUN: env LT_PARALLEL_MIN_WORK=0 lt-opt %s --run --repeat 1 -p 'builtin.module(lt-parallel{loop=0 schedule=guided})' | filecheck %s --check-prefix=SUM
// SUM: arg4 i64[1] checksum 1
// SUM-NEXT: arg5 f64[4] checksum -0.229341
//
// Refused, located: a loop that carries a value, and a scatter (a store
// through an index from the data).
// RUN: sed "s|^//CARRY||" %s | not lt-opt - --run 2>&1 | filecheck %s --check-prefix=CARRY
// CARRY: <stdin>:{{[0-9]+}}:{{[0-9]+}}: error: lower-lt-to-scf: cannot vectorize: a loop that carries values cannot be vectorized
// RUN: sed 's/"lt.reduce"([%]p, [%]y, [%]i) {kind = "add"} : (f64, memref<4xf64>, index) -> ()/memref.store %%p, %%y[%%kk] : memref<4xf64>/' %s | not lt-opt - --run 2>&1 | filecheck %s --check-prefix=SCATTER
// SCATTER: <stdin>:{{[0-9]+}}:{{[0-9]+}}: error: lower-lt-to-scf: cannot vectorize: a store is not contiguous in the vectorized loop's variable
//
// TREE: for i in 4 : L0
// TREE: {{.*}}for v{{[0-9]+}} in maxsi({{.*}}, 0) .. minsi({{.*}}, 6) (bounds known at run time) [vectorize 4]
//
// LOWER-LABEL: func.func @spmv
// LOWER:         %[[N:.*]] = arith.subi %[[HI:.*]], %[[LO:.*]] : index
// LOWER-NEXT:    %[[N0:.*]] = arith.maxsi %[[N]], %c0 : index
// LOWER-NEXT:    %[[G4:.*]] = arith.divui %[[N0]], %c4 : index
// LOWER-NEXT:    %[[W:.*]] = arith.muli %[[G4]], %c4 : index
// LOWER-NEXT:    %[[SPLIT:.*]] = arith.addi %[[LO]], %[[W]] : index
// LOWER:         scf.for %[[G:.*]] = %[[LO]] to %[[SPLIT]] step %c4 {
// LOWER-NOT:       vector.maskedload
// LOWER:           vector.load %{{.*}}[%[[G]]] : memref<6xf64>, vector<4xf64>
// LOWER:           vector.gather %{{.*}}[%{{.*}}] [%{{.*}}], %{{.*}}, %{{.*}} : memref<4xf64>, vector<4xindex>, vector<4xi1>, vector<4xf64> into vector<4xf64>
// LOWER:           arith.addf %{{.*}} : vector<4xf64>
// LOWER:         vector.reduction <add>
// LOWER:         scf.for %[[R:.*]] = %[[SPLIT]] to %[[HI]] step %c1 {
// LOWER:           memref.load %{{.*}}[%[[R]]] : memref<6xf64>
// LOWER:           arith.addf %{{.*}} : f64
func.func @spmv(%ptr: memref<5xi64> {lt.name = "ptr"}, %col: memref<6xi64> {lt.name = "col"}, %val: memref<6xf64> {lt.name = "val"}, %x: memref<4xf64> {lt.name = "x"}, %flag: memref<1xi64> {lt.name = "flag"}, %y: memref<4xf64> {lt.name = "y"}) {
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %c6 = arith.constant 6 : index
  %c7 = arith.constant 7 : index
  %bad = arith.constant 1 : i64
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
    memref.store %zero, %y[%i] : memref<4xf64>
    scf.for %j = %s0 to %e6 step %c1 {
      %v = memref.load %val[%j] : memref<6xf64>
      %k64 = memref.load %col[%j] : memref<6xi64>
      %k = arith.index_cast %k64 : i64 to index
      %kc = arith.maxsi %k, %c0 : index
      %kk = arith.minsi %kc, %c3 : index
      %off = arith.cmpi ne, %kk, %k : index
      scf.if %off {
        "lt.reduce"(%bad, %flag, %c0) {kind = "max"} : (i64, memref<1xi64>, index) -> ()
      }
      %xv = memref.load %x[%kk] : memref<4xf64>
      %p = arith.mulf %v, %xv : f64
      "lt.reduce"(%p, %y, %i) {kind = "add"} : (f64, memref<4xf64>, index) -> ()
    } {lt.vectorize = 4 : i64}
    %sum = memref.load %y[%i] : memref<4xf64>
    memref.store %sum, %y[%i] : memref<4xf64>
//CARRY    %unused = scf.for %q = %s0 to %e6 step %c1 iter_args(%a = %zero) -> (f64) {
//CARRY      %n = arith.addf %a, %zero : f64
//CARRY      scf.yield %n : f64
//CARRY    } {lt.vectorize = 4 : i64}
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}
