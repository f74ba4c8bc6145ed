// lt-fuse{loop=L} into a vectorized loop: a computation that holds a loop
// (here a row sum) fused into the reads of its result would put that loop
// inside the reader's loop, which a vectorized loop (lt.vectorize on an
// lt.loop, or on an scf.for: lt-vectorize-data) cannot hold -- it must stay
// innermost.  Refused, located at the read (found by the fuzzer: a CSR row
// maximum fused, recompute=true, into a row's vectorized loop of positions).
// Without the annotation the same fusion is taken (recompute=true: the sum
// recomputed for each j), with the same checksums; lt-fuse.mlir has the
// tail cases.
// RUN: sed -n '/^func.func @plain(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-fuse{loop=0 recompute=true})' --emit=loop-tree | filecheck %s --check-prefix=TREE --match-full-lines --strict-whitespace
// RUN: sed -n '/^func.func @plain(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=SUM
// RUN: sed -n '/^func.func @plain(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-fuse{loop=0 recompute=true})' | filecheck %s --check-prefix=SUM
// RUN: not lt-opt %s -p 'builtin.module(lt-fuse{loop=4 recompute=true})' 2>&1 | filecheck %s --check-prefix=ERR
// (L4: the producer in @vectorized; @plain holds L0..L3)
// SUM: arg1 f32[4, 8] checksum 34.0437
//      TREE:for i in 4 : L0
// TREE-NEXT: for j in 8 : L1
// TREE-NEXT:  %0 <- read A[i, j]
// TREE-NEXT:  %1 <- alloc f32[] (1 elements)
// TREE-NEXT:  %1[] <- 0.0
// TREE-NEXT:  for k in 8 : L2
// TREE-NEXT:   %2 <- read A[i, k]
// TREE-NEXT:   %1[] += %2
// TREE-NEXT:  %3 <- read %1[]
// TREE-NEXT:  %4 <- sub(%0, %3)
// TREE-NEXT:  out[i, j] <- %4
//  TREE-NOT:{{.}}
func.func @plain(%A: memref<4x8xf32> {lt.name = "A"}, %out: memref<4x8xf32> {lt.name = "out"}) {
  %zero = arith.constant 0.0 : f32
  %S = "lt.alloc"() {dims = ["i"]} : () -> memref<4xf32>
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    memref.store %zero, %S[%i] : memref<4xf32>
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      %a = memref.load %A[%i, %k] : memref<4x8xf32>
      "lt.reduce"(%a, %S, %i) {kind = "add"} : (f32, memref<4xf32>, index) -> ()
    }) {dim = "k", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i1: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %a = memref.load %A[%i, %j] : memref<4x8xf32>
      %s = memref.load %S[%i] : memref<4xf32>
      %d = arith.subf %a, %s : f32
      memref.store %d, %out[%i, %j] : memref<4x8xf32>
    }) {dim = "j", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// ERR: lt-fuse-vectorized.mlir:[[# @LINE + 22]]:12: error: lt-fuse: the read of %0 sits in "for j in 8" marked to vectorize, and the computation holds a loop: a vectorized loop must stay innermost
func.func @vectorized(%A: memref<4x8xf32> {lt.name = "A"}, %out: memref<4x8xf32> {lt.name = "out"}) {
  %zero = arith.constant 0.0 : f32
  %S = "lt.alloc"() {dims = ["i"]} : () -> memref<4xf32>
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    memref.store %zero, %S[%i] : memref<4xf32>
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      %a = memref.load %A[%i, %k] : memref<4x8xf32>
      "lt.reduce"(%a, %S, %i) {kind = "add"} : (f32, memref<4xf32>, index) -> ()
    }) {dim = "k", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i1: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %a = memref.load %A[%i, %j] : memref<4x8xf32>
      %s = memref.load %S[%i] : memref<4xf32>
      %d = arith.subf %a, %s : f32
      memref.store %d, %out[%i, %j] : memref<4x8xf32>
    }) {dim = "j", size = 8 : i64, tail = 0 : i64, lt.vectorize = 8 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}
