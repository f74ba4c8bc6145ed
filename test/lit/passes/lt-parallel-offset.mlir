// The dependence test (analysis/dependence.py, shift_of) takes an index
// that is a loop's dim plus an offset fixed in the loop even when that
// offset is computed next to the access, from constants and the dims of
// outer loops: the linalg importer's reshaped outputs, B[0*6 + i, m*8 + n]
// (attention's heads put back side by side).  Distinct iterations of i, or
// of n, write distinct elements, so lt-parallel and lt-vectorize take those
// loops; an offset that moves with a loop inside (B[i + k], k looped inside
// i) still refuses.
// RUN: sed -n '/^func.func @heads(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-parallel{loop=0}, lt-vectorize{loop=2 width=4})' --emit=loop-tree 2>/dev/null | filecheck %s --check-prefix=NORMAL --match-full-lines --strict-whitespace
// RUN: sed -n '/^func.func @heads(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-split{loop=0 factor=4}, lt-parallel{loop=0}, lt-split{loop=3 factor=3}, lt-vectorize{loop=4 width=2})' --emit=loop-tree 2>/dev/null | filecheck %s --check-prefix=TAIL --match-full-lines --strict-whitespace
// RUN: sed -n '/^func.func @overlap(/,/^}/p' %s | not lt-opt - -p 'builtin.module(lt-parallel{loop=0})' 2>&1 | filecheck %s --check-prefix=ERR
//
// The same checksum before and after (the parallel loop on one thread here: too little work).
// RUN: sed -n '/^func.func @heads(/,/^}/p' %s | lt-opt - --run --repeat 1 2>/dev/null | filecheck %s --check-prefix=SUM
// RUN: sed -n '/^func.func @heads(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-parallel{loop=0}, lt-vectorize{loop=2 width=4})' 2>/dev/null | filecheck %s --check-prefix=SUM
// RUN: sed -n '/^func.func @heads(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-split{loop=0 factor=4}, lt-parallel{loop=0}, lt-split{loop=3 factor=3}, lt-vectorize{loop=4 width=2})' 2>/dev/null | filecheck %s --check-prefix=SUM
// SUM: arg1 f32[6, 32] checksum 2.41083

//      NORMAL:for i in 6 : L0 [parallel]
// NORMAL-NEXT: for m in 4 : L1
// NORMAL-NEXT:  for n in 8 : L2 [vectorize 4]
// NORMAL-NEXT:   %0 <- read A[m, i, n]
// NORMAL-NEXT:   B[0*6 + i, m*8 + n] <- %0

// The tail case: i = 1 x 4 r 2 (the outer level parallel), n = 2 x 3 r 2.
//      TAIL:for i in 1 r 2 : L0 [parallel]
// TAIL-NEXT: for i' in 4 : L1
// TAIL-NEXT:  for m in 4 : L2
// TAIL-NEXT:   for n in 2 r 2 : L3
// TAIL-NEXT:    for n' in 3 : L4 [vectorize 2]
func.func @heads(%A: memref<4x6x8xf32> {lt.name = "A"}, %B: memref<6x32xf32> {lt.name = "B"}) {
  "lt.loop"() ({
  ^bb0(%i2: index):
    "lt.loop"() ({
    ^bb0(%i1: index):
      "lt.loop"() ({
      ^bb0(%i0: index):
        %i = "lt.dim"() {dim = "i"} : () -> index
        %m = "lt.dim"() {dim = "m"} : () -> index
        %n = "lt.dim"() {dim = "n"} : () -> index
        %c0 = arith.constant 0 : index
        %c6 = arith.constant 6 : index
        %c8 = arith.constant 8 : index
        %a = memref.load %A[%m, %i, %n] : memref<4x6x8xf32>
        %b0 = arith.muli %c0, %c6 : index
        %row = arith.addi %b0, %i : index
        %mb = arith.muli %m, %c8 : index
        %col = arith.addi %mb, %n : index
        memref.store %a, %B[%row, %col] : memref<6x32xf32>
      }) {dim = "n", size = 8 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "m", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 6 : i64, tail = 0 : i64} : () -> ()
  return
}

// The refused case: rows i + k overlap between iterations of i.
// ERR: error: lt-parallel: cannot run L0 "for i in 6" in parallel: argument 1 is written and accessed at elements that other iterations of dim 'i' also access
func.func @overlap(%A: memref<6x8xf32> {lt.name = "A"}, %B: memref<9x8xf32> {lt.name = "B"}) {
  "lt.loop"() ({
  ^bb0(%i1: index):
    "lt.loop"() ({
    ^bb0(%i0: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %k = "lt.dim"() {dim = "k"} : () -> index
      %c0 = arith.constant 0 : index
      %a = memref.load %A[%i, %c0] : memref<6x8xf32>
      %row = arith.addi %i, %k : index
      memref.store %a, %B[%row, %c0] : memref<9x8xf32>
    }) {dim = "k", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 6 : i64, tail = 0 : i64} : () -> ()
  return
}
