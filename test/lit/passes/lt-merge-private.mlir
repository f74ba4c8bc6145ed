// lt-merge{loop=L} with a buffer allocated in the body of L: each
// iteration of L has its own (README, "The dialect"), and so does each
// iteration of the merged loop, so the buffer does not tie iterations
// together (a layer norm's per-row accumulators, as torch-mlir emits them:
// one row loop a statistic, each allocating its scalar).  A buffer
// allocated outside both loops and shared by their iterations still
// refuses the merge.
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-merge{loop=2})' --emit=loop-tree -o %t.tree 2>&1 | filecheck %s --check-prefix=ERR
// RUN: filecheck %s --input-file=%t.tree --check-prefix=TREE --match-full-lines --strict-whitespace
//
// The merged loop computes what the two did: same checksums.
// RUN: sed -n '/^func.func @row_mean(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=SUM
// RUN: sed -n '/^func.func @row_mean(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-merge{loop=2})' | filecheck %s --check-prefix=SUM
// SUM:      arg1 f32[6, 8] checksum 6.66617
// SUM-NEXT: arg2 f32[6] checksum 6.66617
// RUN: sed -n '/^func.func @row_mean_tail(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=TSUM
// RUN: sed -n '/^func.func @row_mean_tail(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-merge{loop=2})' | filecheck %s --check-prefix=TSUM
// TSUM:      arg1 f32[7] checksum 1.86887
// TSUM-NEXT: arg2 f32[7] checksum 3.73775

// The normal case: B = 2 A, then each row's sum of B through a scalar
// allocated in the second row loop.
//      TREE:%0 <- alloc f32[] (1 elements)
// TREE-NEXT:for r in 6 : L0
// TREE-NEXT: for c in 8 : L1
// TREE-NEXT:  %1 <- read A[r, c]
// TREE-NEXT:  %2 <- mul(%1, 2.0)
// TREE-NEXT:  B[r, c] <- %2
// TREE-NEXT: %3 <- alloc f32[] (1 elements)
// TREE-NEXT: %3[] <- 0.0
// TREE-NEXT: for c in 8 : L2
// TREE-NEXT:  %4 <- read B[r, c]
// TREE-NEXT:  %3[] += %4
// TREE-NEXT: %5 <- read %3[]
// TREE-NEXT: S[r] <- %5
func.func @row_mean(%A: memref<6x8xf32> {lt.name = "A"}, %B: memref<6x8xf32> {lt.name = "B"}, %S: memref<6xf32> {lt.name = "S"}) {
  %two = arith.constant 2.0 : f32
  %zero = arith.constant 0.0 : f32
  %unused = "lt.alloc"() {dims = []} : () -> memref<f32>
  "lt.loop"() ({
  ^bb0(%i1: index):
    %r = "lt.dim"() {dim = "r"} : () -> index
    "lt.loop"() ({
    ^bb0(%i0: index):
      %c = "lt.dim"() {dim = "c"} : () -> index
      %a = memref.load %A[%r, %c] : memref<6x8xf32>
      %b = arith.mulf %a, %two : f32
      memref.store %b, %B[%r, %c] : memref<6x8xf32>
    }) {dim = "c", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 6 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i1: index):
    %r = "lt.dim"() {dim = "r"} : () -> index
    %acc = "lt.alloc"() {dims = []} : () -> memref<f32>
    memref.store %zero, %acc[] : memref<f32>
    "lt.loop"() ({
    ^bb0(%i0: index):
      %c = "lt.dim"() {dim = "c"} : () -> index
      %b = memref.load %B[%r, %c] : memref<6x8xf32>
      "lt.reduce"(%b, %acc) {kind = "add"} : (f32, memref<f32>) -> ()
    }) {dim = "c", size = 8 : i64, tail = 0 : i64} : () -> ()
    %s = memref.load %acc[] : memref<f32>
    memref.store %s, %S[%r] : memref<6xf32>
  }) {dim = "r", size = 6 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// The tail case: both row loops run 7 rows as 3 blocks of 2 and a tail of 1.
//      TREE:// -----
// TREE-NEXT:for r in 3 r 1 : L0
// TREE-NEXT: for r' in 2 : L1
// TREE-NEXT:  %0 <- read A[r]
// TREE-NEXT:  B[r] <- %0
// TREE-NEXT: for r' in 2 : L2
// TREE-NEXT:  %1 <- alloc f32[] (1 elements)
// TREE-NEXT:  %2 <- read B[r]
// TREE-NEXT:  %1[] <- %2
// TREE-NEXT:  %3 <- read %1[]
// TREE-NEXT:  %4 <- add(%3, %3)
// TREE-NEXT:  C[r] <- %4
func.func @row_mean_tail(%A: memref<7xf32> {lt.name = "A"}, %B: memref<7xf32> {lt.name = "B"}, %C: memref<7xf32> {lt.name = "C"}) {
  "lt.loop"() ({
  ^bb0(%i1: index):
    "lt.loop"() ({
    ^bb0(%i0: index):
      %r = "lt.dim"() {dim = "r"} : () -> index
      %a = memref.load %A[%r] : memref<7xf32>
      memref.store %a, %B[%r] : memref<7xf32>
    }) {dim = "r", size = 2 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 3 : i64, tail = 1 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i1: index):
    "lt.loop"() ({
    ^bb0(%i0: index):
      %r = "lt.dim"() {dim = "r"} : () -> index
      %t = "lt.alloc"() {dims = []} : () -> memref<f32>
      %b = memref.load %B[%r] : memref<7xf32>
      memref.store %b, %t[] : memref<f32>
      %u = memref.load %t[] : memref<f32>
      %d = arith.addf %u, %u : f32
      memref.store %d, %C[%r] : memref<7xf32>
    }) {dim = "r", size = 2 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 3 : i64, tail = 1 : i64} : () -> ()
  return
}

// -----

// Refused: the scalar is allocated outside both loops, so every row of the
// second loop overwrites the one the first loop's rows read.
// ERR: lt-merge-private.mlir:[[# @LINE + 13]]:3: error: lt-merge: cannot fuse: a scratch buffer is written and accessed at elements that other iterations of dim 'r' also access
func.func @shared_scalar(%A: memref<6xf32> {lt.name = "A"}, %S: memref<6x2xf32> {lt.name = "S"}) {
  %t = "lt.alloc"() {dims = []} : () -> memref<f32>
  "lt.loop"() ({
  ^bb0(%i1: index):
    %r = "lt.dim"() {dim = "r"} : () -> index
    "lt.loop"() ({
    ^bb0(%i0: index):
      %c = "lt.dim"() {dim = "c"} : () -> index
      %u = memref.load %t[] : memref<f32>
      memref.store %u, %S[%r, %c] : memref<6x2xf32>
    }) {dim = "c", size = 2 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 6 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i0: index):
    %r = "lt.dim"() {dim = "r"} : () -> index
    %a = memref.load %A[%r] : memref<6xf32>
    memref.store %a, %t[] : memref<f32>
  }) {dim = "r", size = 6 : i64, tail = 0 : i64} : () -> ()
  return
}
