// lt-merge{loop=L}: fuse L into the preceding sibling loop over the same dim
// (same size, tail and inner extent), or, without one, into its parent level
// of the same dim when the parent holds nothing else and L has no tail.
//
// Every chunk below goes through the same pipeline, lt-merge{loop=2}: the
// chunks that merge print their loop tree (TREE) and IR (IR), the others
// refuse with a located one-line error (ERR).
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-merge{loop=2})' --emit=loop-tree -o %t.tree 2>&1 | filecheck %s --check-prefix=ERR
// RUN: filecheck %s --input-file=%t.tree --check-prefix=TREE --match-full-lines --strict-whitespace
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-merge{loop=2})' 2>/dev/null | filecheck %s --check-prefix=IR
//
// Merging never changes the result: same checksums before and after.
// RUN: sed -n '/^func.func @scale_shift(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=SUM
// RUN: sed -n '/^func.func @scale_shift(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-merge{loop=2})' | filecheck %s --check-prefix=SUM
// SUM:      arg1 f32[4, 8] checksum -9.72678
// SUM-NEXT: arg2 f32[4, 8] checksum 22.2732
// RUN: sed -n '/^func.func @parent_tail(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=COPYSUM
// RUN: sed -n '/^func.func @parent_tail(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-merge{loop=2})' | filecheck %s --check-prefix=COPYSUM
// COPYSUM: arg1 f32[2, 35] checksum 5.67905
// RUN: sed -n '/^func.func @siblings_tail(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=ROWSUM
// RUN: sed -n '/^func.func @siblings_tail(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-merge{loop=2}, lt-merge{loop=2})' | filecheck %s --check-prefix=ROWSUM
// ROWSUM: arg1 f32[33] checksum -9.73764
//
// Merging @siblings_tail twice fuses the outer levels, then the two inner
// `for m' in 8` (the row sum as it was before lt-distribute).
// RUN: sed -n '/^func.func @siblings_tail(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-merge{loop=2}, lt-merge{loop=2})' --emit=loop-tree | filecheck %s --check-prefix=TWICE --match-full-lines --strict-whitespace
//      TWICE:for m in 4 r 1 : L0
// TWICE-NEXT: for m' in 8 : L1
// TWICE-NEXT:  S[m] <- 0.0
// TWICE-NEXT:  for n in 16 : L2
// TWICE-NEXT:   %0 <- read A[m, n]
// TWICE-NEXT:   S[m] += %0
//  TWICE-NOT:{{.}}

// Two sibling loops over c fuse: B is written and read at B[r, c] only, so
// each iteration of the fused loop still reads what the same c wrote.
//      TREE:for r in 4 : L0
// TREE-NEXT: for c in 8 : L1
// TREE-NEXT:  %0 <- read A[r, c]
// TREE-NEXT:  %1 <- mul(%0, 2.0)
// TREE-NEXT:  B[r, c] <- %1
// TREE-NEXT:  %2 <- read B[r, c]
// TREE-NEXT:  %3 <- add(%2, 1.0)
// TREE-NEXT:  C[r, c] <- %3
// TREE-NEXT:// -----
// IR-LABEL: func.func @scale_shift
// IR:           %[[R:.*]] = "lt.dim"() {dim = "r"} : () -> index
// IR-NEXT:      "lt.loop"() ({
// IR-NEXT:      ^bb0(%{{.*}}: index):
// IR-NEXT:        %[[C1:.*]] = "lt.dim"() {dim = "c"} : () -> index
// IR:             memref.store %{{.*}}, %[[B:.*]][%[[R]], %[[C1]]] : memref<4x8xf32>
// IR-NEXT:        %[[C2:.*]] = "lt.dim"() {dim = "c"} : () -> index
// IR-NEXT:        %{{.*}} = memref.load %[[B]][%[[R]], %[[C2]]] : memref<4x8xf32>
// IR-NEXT:        %[[V:.*]] = arith.addf
// IR-NEXT:        memref.store %[[V]], %{{.*}}[%[[R]], %[[C2]]] : memref<4x8xf32>
// IR-NEXT:      }) {dim = "c", size = 8 : i64, tail = 0 : i64} : () -> ()
// IR-NEXT:    }) {dim = "r", size = 4 : i64, tail = 0 : i64} : () -> ()
func.func @scale_shift(%A: memref<4x8xf32> {lt.name = "A"}, %B: memref<4x8xf32> {lt.name = "B"}, %C: memref<4x8xf32> {lt.name = "C"}) {
  %two = arith.constant 2.0 : f32
  %one = arith.constant 1.0 : f32
  "lt.loop"() ({
  ^bb0(%r0: index):
    %r = "lt.dim"() {dim = "r"} : () -> index
    "lt.loop"() ({
    ^bb0(%c0: index):
      %c = "lt.dim"() {dim = "c"} : () -> index
      %a = memref.load %A[%r, %c] : memref<4x8xf32>
      %b = arith.mulf %a, %two : f32
      memref.store %b, %B[%r, %c] : memref<4x8xf32>
    }) {dim = "c", size = 8 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%c1: index):
      %c = "lt.dim"() {dim = "c"} : () -> index
      %b = memref.load %B[%r, %c] : memref<4x8xf32>
      %d = arith.addf %b, %one : f32
      memref.store %d, %C[%r, %c] : memref<4x8xf32>
    }) {dim = "c", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Into the parent level: `for m in 4` over `for m' in 8` is `for m in 32`.
// TREE-NEXT:for r in 2 : L0
// TREE-NEXT: for m in 32 : L1
// TREE-NEXT:  %0 <- read A[r, m]
// TREE-NEXT:  B[r, m] <- %0
// TREE-NEXT:// -----
func.func @parent(%A: memref<2x32xf32> {lt.name = "A"}, %B: memref<2x32xf32> {lt.name = "B"}) {
  "lt.loop"() ({
  ^bb0(%r0: index):
    %r = "lt.dim"() {dim = "r"} : () -> index
    "lt.loop"() ({
    ^bb0(%m1: index):
      "lt.loop"() ({
      ^bb0(%m0: index):
        %m = "lt.dim"() {dim = "m"} : () -> index
        %a = memref.load %A[%r, %m] : memref<2x32xf32>
        memref.store %a, %B[%r, %m] : memref<2x32xf32>
      }) {dim = "m", size = 8 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "m", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// The parent's tail is kept: `4 r 3` over `8` is `35`.
// TREE-NEXT:for r in 2 : L0
// TREE-NEXT: for m in 35 : L1
// TREE-NEXT:  %0 <- read A[r, m]
// TREE-NEXT:  B[r, m] <- %0
// TREE-NEXT:// -----
func.func @parent_tail(%A: memref<2x35xf32> {lt.name = "A"}, %B: memref<2x35xf32> {lt.name = "B"}) {
  "lt.loop"() ({
  ^bb0(%r0: index):
    %r = "lt.dim"() {dim = "r"} : () -> index
    "lt.loop"() ({
    ^bb0(%m1: index):
      "lt.loop"() ({
      ^bb0(%m0: index):
        %m = "lt.dim"() {dim = "m"} : () -> index
        %a = memref.load %A[%r, %m] : memref<2x35xf32>
        memref.store %a, %B[%r, %m] : memref<2x35xf32>
      }) {dim = "m", size = 8 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "m", size = 4 : i64, tail = 3 : i64} : () -> ()
  }) {dim = "r", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Siblings with a tail fuse when they cover m alike (`4 r 1` over `8`):
// the initialisation and the reduction share the outer level again.
// TREE-NEXT:for m in 4 r 1 : L0
// TREE-NEXT: for m' in 8 : L1
// TREE-NEXT:  S[m] <- 0.0
// TREE-NEXT: for m' in 8 : L2
// TREE-NEXT:  for n in 16 : L3
// TREE-NEXT:   %0 <- read A[m, n]
// TREE-NEXT:   S[m] += %0
//  TREE-NOT:{{.}}
func.func @siblings_tail(%A: memref<33x16xf32> {lt.name = "A"}, %S: memref<33xf32> {lt.name = "S"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i2: index):
    "lt.loop"() ({
    ^bb0(%i1: index):
      %m = "lt.dim"() {dim = "m"} : () -> index
      memref.store %zero, %S[%m] : memref<33xf32>
    }) {dim = "m", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 4 : i64, tail = 1 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i2: index):
    "lt.loop"() ({
    ^bb0(%i1: index):
      %m = "lt.dim"() {dim = "m"} : () -> index
      "lt.loop"() ({
      ^bb0(%i0: index):
        %n = "lt.dim"() {dim = "n"} : () -> index
        %a = memref.load %A[%m, %n] : memref<33x16xf32>
        "lt.reduce"(%a, %S, %m) {kind = "add"} : (f32, memref<33xf32>, index) -> ()
      }) {dim = "n", size = 16 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "m", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 4 : i64, tail = 1 : i64} : () -> ()
  return
}

// -----

// Refused: the k loop follows a statement, not a loop, and its parent
// iterates n.
// ERR: lt-merge.mlir:[[# @LINE + 10]]:7: error: lt-merge: L2 "for k in 16" has no preceding sibling loop or parent level over dim 'k' to merge with
func.func @matmul(%A: memref<4x16xf32>, %B: memref<16x8xf32>, %C: memref<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i2: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    "lt.loop"() ({
    ^bb0(%i1: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      memref.store %zero, %C[%m, %n] : memref<4x8xf32>
      "lt.loop"() ({
      ^bb0(%i0: index):
        %k = "lt.dim"() {dim = "k"} : () -> index
        %a = memref.load %A[%m, %k] : memref<4x16xf32>
        %b = memref.load %B[%k, %n] : memref<16x8xf32>
        %p = arith.mulf %a, %b : f32
        "lt.reduce"(%p, %C, %m, %n) {kind = "add"} : (f32, memref<4x8xf32>, index, index) -> ()
      }) {dim = "k", size = 16 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "n", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: the siblings cover c differently (8 and 6 elements).
// ERR-NEXT: lt-merge.mlir:[[# @LINE + 11]]:5: error: lt-merge: "for c in 6" and the loop before it, "for c in 8", cover dim 'c' differently
func.func @shapes(%A: memref<4x8xf32>, %B: memref<4x8xf32>, %C: memref<4x8xf32>) {
  "lt.loop"() ({
  ^bb0(%r0: index):
    %r = "lt.dim"() {dim = "r"} : () -> index
    "lt.loop"() ({
    ^bb0(%c0: index):
      %c = "lt.dim"() {dim = "c"} : () -> index
      %a = memref.load %A[%r, %c] : memref<4x8xf32>
      memref.store %a, %B[%r, %c] : memref<4x8xf32>
    }) {dim = "c", size = 8 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%c1: index):
      %c = "lt.dim"() {dim = "c"} : () -> index
      %a = memref.load %A[%r, %c] : memref<4x8xf32>
      memref.store %a, %C[%r, %c] : memref<4x8xf32>
    }) {dim = "c", size = 6 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: the siblings carry different annotations.
// ERR-NEXT: lt-merge.mlir:[[# @LINE + 11]]:5: error: lt-merge: the two loops carry different annotations
func.func @sibling_notes(%A: memref<4x8xf32>, %B: memref<4x8xf32>, %C: memref<4x8xf32>) {
  "lt.loop"() ({
  ^bb0(%r0: index):
    %r = "lt.dim"() {dim = "r"} : () -> index
    "lt.loop"() ({
    ^bb0(%c0: index):
      %c = "lt.dim"() {dim = "c"} : () -> index
      %a = memref.load %A[%r, %c] : memref<4x8xf32>
      memref.store %a, %B[%r, %c] : memref<4x8xf32>
    }) {dim = "c", size = 8 : i64, tail = 0 : i64, lt.unroll = 2} : () -> ()
    "lt.loop"() ({
    ^bb0(%c1: index):
      %c = "lt.dim"() {dim = "c"} : () -> index
      %a = memref.load %A[%r, %c] : memref<4x8xf32>
      memref.store %a, %C[%r, %c] : memref<4x8xf32>
    }) {dim = "c", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: the parent and the child carry different annotations.
// ERR-NEXT: lt-merge.mlir:[[# @LINE + 7]]:7: error: lt-merge: the two loops carry different annotations
func.func @parent_notes(%A: memref<2x32xf32>, %B: memref<2x32xf32>) {
  "lt.loop"() ({
  ^bb0(%r0: index):
    %r = "lt.dim"() {dim = "r"} : () -> index
    "lt.loop"() ({
    ^bb0(%m1: index):
      "lt.loop"() ({
      ^bb0(%m0: index):
        %m = "lt.dim"() {dim = "m"} : () -> index
        %a = memref.load %A[%r, %m] : memref<2x32xf32>
        memref.store %a, %B[%r, %m] : memref<2x32xf32>
      }) {dim = "m", size = 8 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "m", size = 4 : i64, tail = 0 : i64, lt.parallel} : () -> ()
  }) {dim = "r", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: the second loop reads B[r, c + 1], which the first loop writes in
// the next iteration of c; fused, it would read it before the write.
// ERR-NEXT: lt-merge.mlir:[[# @LINE + 12]]:5: error: lt-merge: cannot fuse: argument 1 is written and accessed at elements that other iterations of dim 'c' also access
func.func @shifted(%A: memref<4x9xf32>, %B: memref<4x9xf32>, %C: memref<4x8xf32>) {
  %one = arith.constant 1 : index
  "lt.loop"() ({
  ^bb0(%r0: index):
    %r = "lt.dim"() {dim = "r"} : () -> index
    "lt.loop"() ({
    ^bb0(%c0: index):
      %c = "lt.dim"() {dim = "c"} : () -> index
      %a = memref.load %A[%r, %c] : memref<4x9xf32>
      memref.store %a, %B[%r, %c] : memref<4x9xf32>
    }) {dim = "c", size = 9 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%c1: index):
      %c = "lt.dim"() {dim = "c"} : () -> index
      %c_next = arith.addi %c, %one : index
      %b = memref.load %B[%r, %c_next] : memref<4x9xf32>
      memref.store %b, %C[%r, %c] : memref<4x8xf32>
    }) {dim = "c", size = 9 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: the parent level holds a statement besides the child.
// ERR-NEXT: lt-merge.mlir:[[# @LINE + 10]]:7: error: lt-merge: "for m in 4" holds statements besides "for m' in 8"
func.func @busy_parent(%A: memref<2x32xf32>, %B: memref<2x32xf32>, %F: memref<2x32xf32>) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%r0: index):
    %r = "lt.dim"() {dim = "r"} : () -> index
    "lt.loop"() ({
    ^bb0(%m1: index):
      %first = "lt.dim"() {dim = "m"} : () -> index
      memref.store %zero, %F[%r, %first] : memref<2x32xf32>
      "lt.loop"() ({
      ^bb0(%m0: index):
        %m = "lt.dim"() {dim = "m"} : () -> index
        %a = memref.load %A[%r, %m] : memref<2x32xf32>
        memref.store %a, %B[%r, %m] : memref<2x32xf32>
      }) {dim = "m", size = 8 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "m", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: the child `2 r 1` over `4` has a tail; the merged level's
// iterations would not all cover the same elements.
// ERR-NEXT: lt-merge.mlir:[[# @LINE + 7]]:7: error: lt-merge: "for m' in 2 r 1" has a tail; its parent's chunks would not be uniform
func.func @child_tail(%A: memref<2x27xf32>, %B: memref<2x27xf32>) {
  "lt.loop"() ({
  ^bb0(%r0: index):
    %r = "lt.dim"() {dim = "r"} : () -> index
    "lt.loop"() ({
    ^bb0(%m2: index):
      "lt.loop"() ({
      ^bb0(%m1: index):
        "lt.loop"() ({
        ^bb0(%m0: index):
          %m = "lt.dim"() {dim = "m"} : () -> index
          %a = memref.load %A[%r, %m] : memref<2x27xf32>
          memref.store %a, %B[%r, %m] : memref<2x27xf32>
        }) {dim = "m", size = 4 : i64, tail = 0 : i64} : () -> ()
      }) {dim = "m", size = 2 : i64, tail = 1 : i64} : () -> ()
    }) {dim = "m", size = 3 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: the parent's iteration number is used (as a block index).
// ERR-NEXT: lt-merge.mlir:[[# @LINE + 5]]:5: error: lt-merge: the iteration number of "for m in 4" is used
func.func @numbered(%A: memref<2x32xf32>, %B: memref<2x32xf32>, %N: memref<2x4xf32>) {
  "lt.loop"() ({
  ^bb0(%r0: index):
    %r = "lt.dim"() {dim = "r"} : () -> index
    "lt.loop"() ({
    ^bb0(%m1: index):
      "lt.loop"() ({
      ^bb0(%m0: index):
        %m = "lt.dim"() {dim = "m"} : () -> index
        %a = memref.load %A[%r, %m] : memref<2x32xf32>
        memref.store %a, %B[%r, %m] : memref<2x32xf32>
        memref.store %a, %N[%r, %m1] : memref<2x4xf32>
      }) {dim = "m", size = 8 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "m", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: there is no loop L2.
// ERR-NEXT: error: lt-merge: no loop L2 (the loop tree has L0)
// ERR-NOT: error
func.func @one_loop(%A: memref<4xf32>, %B: memref<4xf32>) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %a = memref.load %A[%i] : memref<4xf32>
    memref.store %a, %B[%i] : memref<4xf32>
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}
