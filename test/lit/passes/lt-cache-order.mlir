// lt-cache{loop=L operand=i order=P}: the local buffer's axes in the order
// P (digits: a permutation of the tile's axes), here 10: the tile of A that
// L0 reads, rows i' x columns j, copied transposed (columns first), which a
// loop over j' inside a loop over i' would then read contiguously (the
// scores of FlashAttention read K's tile as K^T).  The copy nest keeps the
// source's order (contiguous reads, strided writes).  The tail case: L0 is
// "1 r 2" over 4, so its tail iteration copies 2 rows.  lt-uncache takes the
// transposed cache out again.  A digit string that is no permutation of the
// tile's axes is refused.
// RUN: lt-opt %s -p 'builtin.module(lt-cache{loop=0 operand=0 order=10})' --emit=loop-tree 2>/dev/null | filecheck %s --check-prefix=TREE --match-full-lines --strict-whitespace
// RUN: lt-opt %s -p 'builtin.module(lt-cache{loop=0 operand=0 order=10}, lt-uncache{loop=0})' --emit=loop-tree 2>/dev/null | filecheck %s --check-prefix=BACK --match-full-lines --strict-whitespace
// RUN: not lt-opt %s -p 'builtin.module(lt-cache{loop=0 operand=0 order=12})' 2>&1 | filecheck %s --check-prefix=ERR
// RUN: not lt-opt %s -p 'builtin.module(lt-cache{loop=0 operand=0 order=1})' 2>&1 | filecheck %s --check-prefix=ERR1
// Same checksums with the transposed copy (the tail iteration included).
// RUN: lt-opt %s --run --repeat 1 | filecheck %s --check-prefix=SUM
// RUN: lt-opt %s --run --repeat 1 -p 'builtin.module(lt-cache{loop=0 operand=0 order=10})' | filecheck %s --check-prefix=SUM
// SUM: arg1 f32[6, 5] checksum -7.28919
//      TREE:for i in 1 r 2 : L0
// TREE-NEXT: %0 <- alloc f32[j, i] (20 elements)
// TREE-NEXT: for i' in 4 : L1
// TREE-NEXT:  for j in 5 : L2
// TREE-NEXT:   %1 <- read A[i, j]
// TREE-NEXT:   %0[j, i - i] <- %1
// TREE-NEXT: for i' in 4 : L3
// TREE-NEXT:  for j in 5 : L4
// TREE-NEXT:   %2 <- read %0[j, i - i]
// TREE-NEXT:   %3 <- mul(%2, 2.0)
// TREE-NEXT:   C[i, j] <- %3
//      BACK:for i in 1 r 2 : L0
// BACK-NEXT: for i' in 4 : L1
// BACK-NEXT:  for j in 5 : L2
// BACK-NEXT:   %0 <- read A[i, j]
// BACK-NEXT:   %1 <- mul(%0, 2.0)
// BACK-NEXT:   C[i, j] <- %1
// ERR: lt-cache-order.mlir:[[# @LINE + 4]]:3: error: lt-cache: order '12' is not a permutation of the tile's 2 axes (digits 0..1, e.g. 10 for a transposed 2-D tile)
// ERR1: error: lt-cache: order '1' is not a permutation of the tile's 2 axes
func.func @t(%A: memref<6x5xf32> {lt.name = "A"}, %C: memref<6x5xf32> {lt.name = "C"}) {
  %two = arith.constant 2.0 : f32
  "lt.loop"() ({
  ^bb0(%i0: index):
    "lt.loop"() ({
    ^bb0(%i1: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      "lt.loop"() ({
      ^bb0(%j0: index):
        %j = "lt.dim"() {dim = "j"} : () -> index
        %a = memref.load %A[%i, %j] : memref<6x5xf32>
        %b = arith.mulf %a, %two : f32
        memref.store %b, %C[%i, %j] : memref<6x5xf32>
      }) {dim = "j", size = 5 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 1 : i64, tail = 2 : i64} : () -> ()
  return
}
