// Indices computed from data (a gather x[col[j]], the variable of an
// scf.for whose bounds are loaded: CSR SpMV as lt_mlir.appy writes it) have
// no range the bounds check can derive: such an index must be clamped into
// its memref (arith.maxsi/minsi with constants), which the check then
// proves in bounds.  The scf.for is not an lt loop (no L-number): no lt
// pass reorders or maps it; the loop tree prints it with its bounds.
//
// Normal case: clamped, runs, on the CPU and through the GPU lowering emulated.
// RUN: lt-opt %s --emit=loop-tree | filecheck %s --check-prefix=TREE --match-full-lines --strict-whitespace
// RUN: lt-opt %s --run --repeat 1 | filecheck %s --check-prefix=SUM
// RUN: lt-opt %s --run --repeat 1 -p 'builtin.module(lt-parallel{loop=0})' | filecheck %s --check-prefix=SUM
// RUN: lt-opt %s --run --repeat 1 --target=cuda-emulated -p 'builtin.module(lt-gpu-map{loop=0 to=block})' | filecheck %s --check-prefix=SUM
// Tail case: the row loop split with a tail (4 = 3 + 1); the scf.for rides along.
// RUN: lt-opt %s --run --repeat 1 -p 'builtin.module(lt-split{loop=0 factor=3})' | filecheck %s --check-prefix=SUM
// Unsigned clamp: one arith.minui with a constant (a negative index is a huge
// unsigned one, which it makes the bound) proves the gather in bounds too
// (lt_mlir.kernel's clamp of a stored position's column).  --run's random
// col values leave [0, 3]: a negative one becomes 3 here, 0 with maxsi/minsi,
// hence another checksum.
// RUN: sed 's/%kk = arith.minsi %kc, %c3 : index/%kk = arith.minui %k, %c3 : index/' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=USUM
// USUM: arg4 f64[4] checksum -7.63901
// RUN: sed 's/%kk = arith.minsi %kc, %c3 : index/%kk = arith.minui %k, %c3 : index/' %s | lt-opt - --emit=loop-tree | filecheck %s --check-prefix=UNSIGNED
// UNSIGNED: %6 <- read x[minui(index_cast(%5), 3)]
// SUM: arg4 f64[4] checksum -24.2547
//
// Refused: the same gather without its clamp, and vectorizing the row loop.
// RUN: sed 's/%xv = memref.load %x\[%kk\]/%xv = memref.load %x[%k]/' %s | not lt-opt - --run 2>&1 | filecheck %s --check-prefix=ERR
// ERR: <stdin>:{{[0-9]+}}:13: error: 'memref.load' index 0 has a range that cannot be derived (a value loaded from memory?): clamp it into [0, 3] (arith.maxsi, arith.minsi, or arith.minui) so that the access stays in the memref
// RUN: not lt-opt %s -p 'builtin.module(lt-vectorize{loop=0 width=4})' 2>&1 | filecheck %s --check-prefix=VEC
// VEC: error: lt-vectorize: cannot vectorize L0 "for i in 4": 'scf.for' with regions cannot be vectorized
//
//      TREE:for i in 4 : L0
// TREE-NEXT: %0 <- read ptr[i]
// TREE-NEXT: %1 <- read ptr[i + 1]
// TREE-NEXT: %3 <- for v2 in index_cast(%0) .. index_cast(%1) (bounds known at run time)
// TREE-NEXT:  %4 <- read val[minsi(maxsi(v2, 0), 5)]
// TREE-NEXT:  %5 <- read col[minsi(maxsi(v2, 0), 5)]
// TREE-NEXT:  %6 <- read x[minsi(maxsi(index_cast(%5), 0), 3)]
func.func @spmv(%ptr: memref<5xi64> {lt.name = "ptr"}, %col: memref<6xi64> {lt.name = "col"}, %val: memref<6xf64> {lt.name = "val"}, %x: memref<4xf64> {lt.name = "x"}, %y: memref<4xf64> {lt.name = "y"}) {
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %zero = arith.constant 0.0 : f64
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %i1 = arith.addi %i, %c1 : index
    %s64 = memref.load %ptr[%i] : memref<5xi64>
    %e64 = memref.load %ptr[%i1] : memref<5xi64>
    %s = arith.index_cast %s64 : i64 to index
    %e = arith.index_cast %e64 : i64 to index
    %acc = scf.for %j = %s to %e step %c1 iter_args(%a = %zero) -> (f64) {
      %jc = arith.maxsi %j, %c0 : index
      %jj = arith.minsi %jc, %c5 : index
      %v = memref.load %val[%jj] : memref<6xf64>
      %k64 = memref.load %col[%jj] : memref<6xi64>
      %k = arith.index_cast %k64 : i64 to index
      %kc = arith.maxsi %k, %c0 : index
      %kk = arith.minsi %kc, %c3 : index
      %xv = memref.load %x[%kk] : memref<4xf64>
      %p = arith.mulf %v, %xv : f64
      %n = arith.addf %a, %p : f64
      scf.yield %n : f64
    }
    memref.store %acc, %y[%i] : memref<4xf64>
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}
