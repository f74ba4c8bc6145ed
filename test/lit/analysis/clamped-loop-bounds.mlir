// An scf.for whose bounds are data (CSR's row pointers) ranges over its
// bounds' ranges: clamped once a row into [0, 6] (max(s, 0), min(e, 6)),
// its variable indexes val and col directly, proven in bounds without a
// clamp an element (lt_mlir.appy writes CSR SpMV this way).  The gather
// x[col[j]] still needs its own clamp.
//
// Normal case: runs, on the CPU, in parallel and through the GPU lowering
// emulated (the random row pointers taken mod 7, so rows have entries).
// RUN: lt-opt %s --run --repeat 1 | filecheck %s --check-prefix=SUM
// RUN: env LT_PARALLEL_MIN_WORK=0 lt-opt %s --run --repeat 1 -p 'builtin.module(lt-parallel{loop=0 schedule=guided})' | filecheck %s --check-prefix=SUM
// RUN: lt-opt %s --run --repeat 1 --target=cuda-emulated -p 'builtin.module(lt-gpu-map{loop=0 to=block})' | filecheck %s --check-prefix=SUM
// Tail case: the row loop split with a tail (4 = 3 + 1).
// RUN: lt-opt %s --run --repeat 1 -p 'builtin.module(lt-split{loop=0 factor=3})' | filecheck %s --check-prefix=SUM
// SUM: arg4 f64[4] checksum -0.229341
//
// Refused: an upper bound clamped one past val's end, and one not clamped.
// RUN: sed 's/%e6 = arith.minsi %e, %c6/%e6 = arith.minsi %e, %c7/' %s | not lt-opt - --run 2>&1 | filecheck %s --check-prefix=PAST
// PAST: <stdin>:{{[0-9]+}}:12: error: 'memref.load' index 0 ranges over [0, 6] but the memref has 6 elements on that axis
// RUN: sed 's/to %e6 step/to %e step/' %s | not lt-opt - --run 2>&1 | filecheck %s --check-prefix=OPEN
// OPEN: <stdin>:{{[0-9]+}}:12: error: 'memref.load' index 0 has a range that cannot be derived
func.func @spmv(%ptr: memref<5xi64> {lt.name = "ptr"}, %col: memref<6xi64> {lt.name = "col"}, %val: memref<6xf64> {lt.name = "val"}, %x: memref<4xf64> {lt.name = "x"}, %y: memref<4xf64> {lt.name = "y"}) {
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
    %acc = scf.for %j = %s0 to %e6 step %c1 iter_args(%a = %zero) -> (f64) {
      %v = memref.load %val[%j] : memref<6xf64>
      %k64 = memref.load %col[%j] : memref<6xi64>
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
