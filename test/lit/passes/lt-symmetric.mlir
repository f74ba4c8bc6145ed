// lt-symmetric{loop=L}: a nest whose output C[r, c] is symmetric (the value
// written is the same function of (r, c) as of (c, r): syrk's A^T A,
// covariance) computes only the blocks of L that reach the diagonal
// (c0 + Bc > r0, under an scf.if in L's body), and a new nest after the
// outermost loop around L copies C[c, r] into C[r, c] below the diagonal.
//
// Every chunk goes through lt-symmetric{loop=4} (L4 is the j loop of the
// product for the syrk chunks): the chunks that apply print their loop tree
// (TREE), the others refuse with a located one-line error (ERR).
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-symmetric{loop=4})' --emit=loop-tree -o %t.tree 2>&1 | filecheck %s --check-prefix=ERR
// RUN: filecheck %s --input-file=%t.tree --check-prefix=TREE --match-full-lines --strict-whitespace
// The tail case: j split 1 r 2 over 4 first; a block is 4 columns of j (the
// tail iteration's 2 are covered by the same test: it computes more, never less).
// RUN: sed -n '/^func.func @syrk(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-split{loop=4 factor=4}, lt-symmetric{loop=4})' --emit=loop-tree | filecheck %s --check-prefix=TAIL --match-full-lines --strict-whitespace
// L3 is the i loop: no loop around it iterates j, so every block reaches the diagonal.
// RUN: sed -n '/^func.func @syrk(/,/^}/p' %s | not lt-opt - -p 'builtin.module(lt-symmetric{loop=3})' 2>&1 | filecheck %s --check-prefix=NOTILE
// NOTILE: <stdin>:15:5: error: lt-symmetric: no loop around L3 "for i in 6" iterates 'j': every block reaches the diagonal, nothing to skip (take a tile loop inside the other dim's tile loop)
//
// Same checksums without the pass, with it, and with the tail (bit-identical:
// each element is the same sum of the same products, a * b == b * a).
// RUN: sed -n '/^func.func @syrk(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=SUM
// RUN: sed -n '/^func.func @syrk(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-symmetric{loop=4})' | filecheck %s --check-prefix=SUM
// RUN: sed -n '/^func.func @syrk(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-split{loop=4 factor=4}, lt-symmetric{loop=4})' | filecheck %s --check-prefix=SUM
// SUM: arg1 f32[6, 6] checksum 35.857{{[0-9]}}

// syrk: B = A^T A.  The product's j loop (L4) runs only from the diagonal
// on (j + 1 > i), and L5/L6 mirror the upper triangle into the lower one.
//      TREE:for i in 6 : L0
// TREE-NEXT: for j in 6 : L1
// TREE-NEXT:  B[i, j] <- 0.0
// TREE-NEXT:for k in 5 : L2
// TREE-NEXT: for i in 6 : L3
// TREE-NEXT:  for j in 6 : L4
// TREE-NEXT:   %0 <- cmpi sgt(j + 1, i)
// TREE-NEXT:   if(%0)
// TREE-NEXT:    %1 <- read A[k, i]
// TREE-NEXT:    %2 <- read A[k, j]
// TREE-NEXT:    %3 <- mul(%1, %2)
// TREE-NEXT:    B[i, j] += %3
// TREE-NEXT:    yield()
// TREE-NEXT:for i in 6 : L5
// TREE-NEXT: for j in 6 : L6
// TREE-NEXT:  %4 <- cmpi slt(j, i)
// TREE-NEXT:  if(%4)
// TREE-NEXT:   %5 <- read B[j, i]
// TREE-NEXT:   B[i, j] <- %5
// TREE-NEXT:   yield()

//      TAIL:for k in 5 : L2
// TAIL-NEXT: for i in 6 : L3
// TAIL-NEXT:  for j in 1 r 2 : L4
// TAIL-NEXT:   %0 <- cmpi sgt(j + 4, i)
// TAIL-NEXT:   if(%0)
// TAIL-NEXT:    for j' in 4 : L5
//      TAIL:for i in 6 : L6
// TAIL-NEXT: for j in 6 : L7
func.func @syrk(%a0: memref<5x6xf32> {lt.name = "A"}, %a1: memref<6x6xf32> {lt.name = "B"}) {
  %cst10 = arith.constant 0x00000000 : f32
  "lt.loop"() ({
  ^bb0(%i11: index):
    %d12 = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%i13: index):
      %d14 = "lt.dim"() {dim = "j"} : () -> index
      memref.store %cst10, %a1[%d12, %d14] : memref<6x6xf32>
    }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 6 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i1: index):
    %d2 = "lt.dim"() {dim = "k"} : () -> index
    "lt.loop"() ({
    ^bb0(%i3: index):
      %d4 = "lt.dim"() {dim = "i"} : () -> index
      "lt.loop"() ({
      ^bb0(%i5: index):
        %d6 = "lt.dim"() {dim = "j"} : () -> index
        %v7 = memref.load %a0[%d2, %d4] : memref<5x6xf32>
        %v8 = memref.load %a0[%d2, %d6] : memref<5x6xf32>
        %v9 = arith.mulf %v7, %v8 : f32
        "lt.reduce"(%v9, %a1, %d4, %d6) {kind = "add"} : (f32, memref<6x6xf32>, index, index) -> ()
      }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "i", size = 6 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "k", size = 5 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----
// A matmul, A^T C: the two factors are different matrices.
// ERR: lt-symmetric.mlir:[[# @LINE + 23]]:15: error: lt-symmetric: the value written into the matrix is not symmetric in 'i' and 'j': swapping the two dims gives another expression
func.func @matmul(%a0: memref<5x6xf32>, %c0: memref<5x6xf32>, %a1: memref<6x6xf32>) {
  %cst10 = arith.constant 0x00000000 : f32
  "lt.loop"() ({
  ^bb0(%i11: index):
    %d12 = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%i13: index):
      %d14 = "lt.dim"() {dim = "j"} : () -> index
      memref.store %cst10, %a1[%d12, %d14] : memref<6x6xf32>
    }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 6 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i1: index):
    %d2 = "lt.dim"() {dim = "k"} : () -> index
    "lt.loop"() ({
    ^bb0(%i3: index):
      %d4 = "lt.dim"() {dim = "i"} : () -> index
      "lt.loop"() ({
      ^bb0(%i5: index):
        %d6 = "lt.dim"() {dim = "j"} : () -> index
        %v7 = memref.load %a0[%d2, %d4] : memref<5x6xf32>
        %v8 = memref.load %c0[%d2, %d6] : memref<5x6xf32>
        %v9 = arith.mulf %v7, %v8 : f32
        "lt.reduce"(%v9, %a1, %d4, %d6) {kind = "add"} : (f32, memref<6x6xf32>, index, index) -> ()
      }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "i", size = 6 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "k", size = 5 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----
// A^T A over a 6 x 4 output (j over the first 4 columns): not square.
// ERR: lt-symmetric.mlir:[[# @LINE + 24]]:9: error: lt-symmetric: L4 "for j in 4" writes a 6 x 4 matrix: only a square one can be symmetric
func.func @rect(%a0: memref<5x6xf32>, %a1: memref<6x4xf32>) {
  %cst10 = arith.constant 0x00000000 : f32
  "lt.loop"() ({
  ^bb0(%i11: index):
    %d12 = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%i13: index):
      %d14 = "lt.dim"() {dim = "j"} : () -> index
      memref.store %cst10, %a1[%d12, %d14] : memref<6x4xf32>
    }) {dim = "j", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 6 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i1: index):
    %d2 = "lt.dim"() {dim = "k"} : () -> index
    "lt.loop"() ({
    ^bb0(%i3: index):
      %d4 = "lt.dim"() {dim = "i"} : () -> index
      "lt.loop"() ({
      ^bb0(%i5: index):
        %d6 = "lt.dim"() {dim = "j"} : () -> index
        %v7 = memref.load %a0[%d2, %d4] : memref<5x6xf32>
        %v8 = memref.load %a0[%d2, %d6] : memref<5x6xf32>
        %v9 = arith.mulf %v7, %v8 : f32
        "lt.reduce"(%v9, %a1, %d4, %d6) {kind = "add"} : (f32, memref<6x4xf32>, index, index) -> ()
      }) {dim = "j", size = 4 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "i", size = 6 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "k", size = 5 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----
// loop_tool's matmul order (k innermost): L4 is the loop over k.
// ERR: lt-symmetric.mlir:[[# @LINE + 18]]:7: error: lt-symmetric: L4 "for k in 5" iterates dim 'k', not one of the matrix's dims 'i', 'j'
func.func @kinner(%a0: memref<5x6xf32>, %a1: memref<6x6xf32>) {
  %cst10 = arith.constant 0x00000000 : f32
  "lt.loop"() ({
  ^bb0(%i11: index):
    %d12 = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%i13: index):
      %d14 = "lt.dim"() {dim = "j"} : () -> index
      memref.store %cst10, %a1[%d12, %d14] : memref<6x6xf32>
    }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 6 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i1: index):
    %d4 = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%i3: index):
      %d6 = "lt.dim"() {dim = "j"} : () -> index
      "lt.loop"() ({
      ^bb0(%i5: index):
        %d2 = "lt.dim"() {dim = "k"} : () -> index
        %v7 = memref.load %a0[%d2, %d4] : memref<5x6xf32>
        %v8 = memref.load %a0[%d2, %d6] : memref<5x6xf32>
        %v9 = arith.mulf %v7, %v8 : f32
        "lt.reduce"(%v9, %a1, %d4, %d6) {kind = "add"} : (f32, memref<6x6xf32>, index, index) -> ()
      }) {dim = "k", size = 5 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 6 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----
// The nest reads B after L4 (each row scaled in place once its sums are
// done): those reads would see the lower triangle before the mirror.
// ERR: lt-symmetric.mlir:[[# @LINE + 31]]:14: error: lt-symmetric: the matrix is read in the nest outside L4 "for j in 6": it would see the lower triangle before the mirror fills it
func.func @scaled(%a0: memref<5x6xf32>, %a1: memref<6x6xf32>) {
  %cst10 = arith.constant 0x00000000 : f32
  %half = arith.constant 0.5 : f32
  "lt.loop"() ({
  ^bb0(%i11: index):
    %d12 = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%i13: index):
      %d14 = "lt.dim"() {dim = "j"} : () -> index
      memref.store %cst10, %a1[%d12, %d14] : memref<6x6xf32>
    }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 6 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i3: index):
    %d4 = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%i1: index):
      %d2 = "lt.dim"() {dim = "k"} : () -> index
      "lt.loop"() ({
      ^bb0(%i5: index):
        %d6 = "lt.dim"() {dim = "j"} : () -> index
        %v7 = memref.load %a0[%d2, %d4] : memref<5x6xf32>
        %v8 = memref.load %a0[%d2, %d6] : memref<5x6xf32>
        %v9 = arith.mulf %v7, %v8 : f32
        "lt.reduce"(%v9, %a1, %d4, %d6) {kind = "add"} : (f32, memref<6x6xf32>, index, index) -> ()
      }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "k", size = 5 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%i7: index):
      %d8 = "lt.dim"() {dim = "j"} : () -> index
      %v10 = memref.load %a1[%d4, %d8] : memref<6x6xf32>
      %v11 = arith.mulf %v10, %half : f32
      memref.store %v11, %a1[%d4, %d8] : memref<6x6xf32>
    }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 6 : i64, tail = 0 : i64} : () -> ()
  return
}
