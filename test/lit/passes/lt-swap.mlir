// lt-swap{loop=L}: interchange L with the only loop inside it, distributing
// the statements beside that loop into loops of their own first.
//
// Every chunk below goes through the same pipeline, lt-swap{loop=1}: the
// chunks that swap print their loop tree (TREE) and IR (IR), the others
// refuse with a located one-line error (ERR).
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-swap{loop=1})' --emit=loop-tree -o %t.tree 2>&1 | filecheck %s --check-prefix=ERR
// RUN: filecheck %s --input-file=%t.tree --check-prefix=TREE --match-full-lines --strict-whitespace
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-swap{loop=1})' 2>/dev/null | filecheck %s --check-prefix=IR
//
// Interchanging never changes the result (each C element still sums over k
// in the same order): the same checksums before and after, and after
// swapping @tail's pair back (its outer loop, `for k in 3 r 2`, has the tail).
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=SUM
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-swap{loop=1})' | filecheck %s --check-prefix=SUM
// SUM: arg2 f32[32, 48] checksum 53.3373
// RUN: sed -n '/^func.func @tail(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=TAILSUM
// RUN: sed -n '/^func.func @tail(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-swap{loop=1})' | filecheck %s --check-prefix=TAILSUM
// RUN: sed -n '/^func.func @tail(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-swap{loop=1}, lt-swap{loop=2})' | filecheck %s --check-prefix=TAILSUM
// TAILSUM: arg2 f32[8, 40] checksum 37.7026
// RUN: sed -n '/^func.func @tail(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-swap{loop=1}, lt-swap{loop=2})' --emit=loop-tree | filecheck %s --check-prefix=BACK --match-full-lines --strict-whitespace
//      BACK:for m in 8 : L0
// BACK-NEXT: for n in 40 : L1
// BACK-NEXT:  C[m, n] <- 0.0
// BACK-NEXT: for n in 40 : L2
// BACK-NEXT:  for k in 3 r 2 : L3
// BACK-NEXT:   for k' in 16 : L4
// BACK-NEXT:    %0 <- read A[m, k]
// BACK-NEXT:    %1 <- read B[k, n]
// BACK-NEXT:    %2 <- mul(%0, %1)
// BACK-NEXT:    C[m, n] += %2
//  BACK-NOT:{{.}}

// The matmul's n and k: the initialisation of C stays before the reduction,
// distributed into its own `for n`, and the reduction loop nest is swapped.
//      TREE:for m in 32 : L0
// TREE-NEXT: for n in 48 : L1
// TREE-NEXT:  C[m, n] <- 0.0
// TREE-NEXT: for k in 64 : L2
// TREE-NEXT:  for n in 48 : L3
// TREE-NEXT:   %0 <- read A[m, k]
// TREE-NEXT:   %1 <- read B[k, n]
// TREE-NEXT:   %2 <- mul(%0, %1)
// TREE-NEXT:   C[m, n] += %2
// TREE-NEXT:// -----
// IR-LABEL: func.func @matmul
// IR:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// IR-NEXT:    "lt.loop"() ({
// IR-NEXT:    ^bb0(%{{.*}}: index):
// IR-NEXT:      %[[M:.*]] = "lt.dim"() {dim = "m"} : () -> index
// IR-NEXT:      "lt.loop"() ({
// IR-NEXT:      ^bb0(%{{.*}}: index):
// IR-NEXT:        %[[N:.*]] = "lt.dim"() {dim = "n"} : () -> index
// IR-NEXT:        memref.store %[[ZERO]], %[[C:.*]][%[[M]], %[[N]]] : memref<32x48xf32>
// IR-NEXT:      }) {dim = "n", size = 48 : i64, tail = 0 : i64} : () -> ()
// IR-NEXT:      "lt.loop"() ({
// IR-NEXT:      ^bb0(%{{.*}}: index):
// IR-NEXT:        "lt.loop"() ({
// IR-NEXT:        ^bb0(%{{.*}}: index):
// IR-DAG:           %[[N2:.*]] = "lt.dim"() {dim = "n"} : () -> index
// IR-DAG:           %[[K:.*]] = "lt.dim"() {dim = "k"} : () -> index
// IR:               %[[A:.*]] = memref.load %{{.*}}[%[[M]], %[[K]]] : memref<32x64xf32>
// IR-NEXT:          %[[B:.*]] = memref.load %{{.*}}[%[[K]], %[[N2]]] : memref<64x48xf32>
// IR-NEXT:          %[[P:.*]] = arith.mulf %[[A]], %[[B]] : f32
// IR-NEXT:          "lt.reduce"(%[[P]], %[[C]], %[[M]], %[[N2]]) {kind = "add"}
// IR-NEXT:        }) {dim = "n", size = 48 : i64, tail = 0 : i64} : () -> ()
// IR-NEXT:      }) {dim = "k", size = 64 : i64, tail = 0 : i64} : () -> ()
// IR-NEXT:    }) {dim = "m", size = 32 : i64, tail = 0 : i64} : () -> ()
func.func @matmul(%A: memref<32x64xf32> {lt.name = "A"}, %B: memref<64x48xf32> {lt.name = "B"}, %C: memref<32x48xf32> {lt.name = "C"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i2: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    "lt.loop"() ({
    ^bb0(%i1: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      memref.store %zero, %C[%m, %n] : memref<32x48xf32>
      "lt.loop"() ({
      ^bb0(%i0: index):
        %k = "lt.dim"() {dim = "k"} : () -> index
        %a = memref.load %A[%m, %k] : memref<32x64xf32>
        %b = memref.load %B[%k, %n] : memref<64x48xf32>
        %p = arith.mulf %a, %b : f32
        "lt.reduce"(%p, %C, %m, %n) {kind = "add"} : (f32, memref<32x48xf32>, index, index) -> ()
      }) {dim = "k", size = 64 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "n", size = 48 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 32 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// The tail case: k (50) split by 16 is `3 r 2` over `16`.  The level travels
// with its tail; its inner level k' ends up under n and is still clipped to 2
// in the tail iteration.
// TREE-NEXT:for m in 8 : L0
// TREE-NEXT: for n in 40 : L1
// TREE-NEXT:  C[m, n] <- 0.0
// TREE-NEXT: for k in 3 r 2 : L2
// TREE-NEXT:  for n in 40 : L3
// TREE-NEXT:   for k' in 16 : L4
// TREE-NEXT:    %0 <- read A[m, k]
// TREE-NEXT:    %1 <- read B[k, n]
// TREE-NEXT:    %2 <- mul(%0, %1)
// TREE-NEXT:    C[m, n] += %2
//  TREE-NOT:{{.}}
func.func @tail(%A: memref<8x50xf32> {lt.name = "A"}, %B: memref<50x40xf32> {lt.name = "B"}, %C: memref<8x40xf32> {lt.name = "C"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i3: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    "lt.loop"() ({
    ^bb0(%i2: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      memref.store %zero, %C[%m, %n] : memref<8x40xf32>
      "lt.loop"() ({
      ^bb0(%i1: index):
        "lt.loop"() ({
        ^bb0(%i0: index):
          %k = "lt.dim"() {dim = "k"} : () -> index
          %a = memref.load %A[%m, %k] : memref<8x50xf32>
          %b = memref.load %B[%k, %n] : memref<50x40xf32>
          %p = arith.mulf %a, %b : f32
          "lt.reduce"(%p, %C, %m, %n) {kind = "add"} : (f32, memref<8x40xf32>, index, index) -> ()
        }) {dim = "k", size = 16 : i64, tail = 0 : i64} : () -> ()
      }) {dim = "k", size = 3 : i64, tail = 2 : i64} : () -> ()
    }) {dim = "n", size = 40 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 8 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: L1 has no inner loop.
// ERR: lt-swap.mlir:[[# @LINE + 4]]:5: error: lt-swap: L1 "for j in 8" has no inner loop to swap with
func.func @flat(%A: memref<4x8xf32>, %B: memref<4x8xf32>) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    "lt.loop"() ({
    ^bb0(%j0: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %j = "lt.dim"() {dim = "j"} : () -> index
      %a = memref.load %A[%i, %j] : memref<4x8xf32>
      memref.store %a, %B[%i, %j] : memref<4x8xf32>
    }) {dim = "j", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: L1 holds two loops.
// ERR-NEXT: lt-swap.mlir:[[# @LINE + 6]]:5: error: lt-swap: L1 "for j in 8" has 2 inner loops; distribute it first (lt-distribute)
func.func @two(%A: memref<4x16xf32>, %S: memref<4x8xf32>, %P: memref<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  "lt.loop"() ({
  ^bb0(%i0: index):
    "lt.loop"() ({
    ^bb0(%j0: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %j = "lt.dim"() {dim = "j"} : () -> index
      memref.store %zero, %S[%i, %j] : memref<4x8xf32>
      memref.store %one, %P[%i, %j] : memref<4x8xf32>
      "lt.loop"() ({
      ^bb0(%k0: index):
        %k = "lt.dim"() {dim = "k"} : () -> index
        %a = memref.load %A[%i, %k] : memref<4x16xf32>
        "lt.reduce"(%a, %S, %i, %j) {kind = "add"} : (f32, memref<4x8xf32>, index, index) -> ()
      }) {dim = "k", size = 16 : i64, tail = 0 : i64} : () -> ()
      "lt.loop"() ({
      ^bb0(%k0: index):
        %k = "lt.dim"() {dim = "k"} : () -> index
        %a = memref.load %A[%i, %k] : memref<4x16xf32>
        "lt.reduce"(%a, %P, %i, %j) {kind = "mul"} : (f32, memref<4x8xf32>, index, index) -> ()
      }) {dim = "k", size = 16 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "j", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: L1 and its inner loop are two levels of one dim.
// ERR-NEXT: lt-swap.mlir:[[# @LINE + 4]]:5: error: lt-swap: L1 and its inner loop both iterate dim 'i'
func.func @same(%A: memref<2x32xf32>, %B: memref<2x32xf32>) {
  "lt.loop"() ({
  ^bb0(%r0: index):
    "lt.loop"() ({
    ^bb0(%i0: index):
      %r = "lt.dim"() {dim = "r"} : () -> index
      "lt.loop"() ({
      ^bb0(%i1: index):
        %i = "lt.dim"() {dim = "i"} : () -> index
        %a = memref.load %A[%r, %i] : memref<2x32xf32>
        memref.store %a, %B[%r, %i] : memref<2x32xf32>
      }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: `lt.dim k` beside the inner `for k'` is the offset of the outer
// level of k only; inside `for k'` it would include k' too.
// ERR-NEXT: lt-swap.mlir:[[# @LINE + 6]]:12: error: lt-swap: an index computed outside "for k' in 8" reads its dim 'k'
func.func @reads_dim(%A: memref<16x4xf32>, %B: memref<16x4xf32>) {
  "lt.loop"() ({
  ^bb0(%k0: index):
    "lt.loop"() ({
    ^bb0(%n0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      %n = "lt.dim"() {dim = "n"} : () -> index
      "lt.loop"() ({
      ^bb0(%k1: index):
        %a = memref.load %A[%k, %n] : memref<16x4xf32>
        memref.store %a, %B[%k, %n] : memref<16x4xf32>
      }) {dim = "k", size = 8 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "n", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "k", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: Horner's rule per row r over all of A[i, j] (i outer, j inner):
// S[r] is read and written by every iteration of both i and j, so the
// interchange would reverse dependences.  Located at the first access.
// ERR-NEXT: lt-swap.mlir:[[# @LINE + 11]]:14: error: lt-swap: interchanging "for i in 4" and "for j in 8" would reorder dependent accesses to a buffer written in the nest
func.func @horner(%A: memref<2x4x8xf32>, %S: memref<2xf32>) {
  "lt.loop"() ({
  ^bb0(%r0: index):
    %r = "lt.dim"() {dim = "r"} : () -> index
    "lt.loop"() ({
    ^bb0(%i0: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      "lt.loop"() ({
      ^bb0(%j0: index):
        %j = "lt.dim"() {dim = "j"} : () -> index
        %s = memref.load %S[%r] : memref<2xf32>
        %a = memref.load %A[%r, %i, %j] : memref<2x4x8xf32>
        %t = arith.mulf %s, %a : f32
        %u = arith.addf %t, %a : f32
        memref.store %u, %S[%r] : memref<2xf32>
      }) {dim = "j", size = 8 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused (distribution): the value loaded beside the inner loop is used in it.
// ERR-NEXT: lt-swap.mlir:[[# @LINE + 13]]:14: error: lt-swap: a value computed in one part of the body is used in another; cannot distribute "for i in 4"
func.func @flow(%A: memref<4x8xf32>, %X: memref<2x4xf32>, %B: memref<2x4x8xf32>) {
  "lt.loop"() ({
  ^bb0(%r0: index):
    %r = "lt.dim"() {dim = "r"} : () -> index
    "lt.loop"() ({
    ^bb0(%i0: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %x = memref.load %X[%r, %i] : memref<2x4xf32>
      "lt.loop"() ({
      ^bb0(%j0: index):
        %j = "lt.dim"() {dim = "j"} : () -> index
        %a = memref.load %A[%i, %j] : memref<4x8xf32>
        %t = arith.mulf %x, %a : f32
        memref.store %t, %B[%r, %i, %j] : memref<2x4x8xf32>
      }) {dim = "j", size = 8 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused (distribution): every iteration of i stores to T[r] and the inner
// loop reads it back; distributing would leave only the last store.
// ERR-NEXT: lt-swap.mlir:[[# @LINE + 5]]:5: error: lt-swap: cannot distribute "for i in 4": argument 1 is written and accessed at elements that other iterations of dim 'i' also access
func.func @shared(%A: memref<2x4xf32>, %T: memref<2xf32>, %B: memref<2x4x8xf32>) {
  "lt.loop"() ({
  ^bb0(%r0: index):
    %r = "lt.dim"() {dim = "r"} : () -> index
    "lt.loop"() ({
    ^bb0(%i0: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %a = memref.load %A[%r, %i] : memref<2x4xf32>
      memref.store %a, %T[%r] : memref<2xf32>
      "lt.loop"() ({
      ^bb0(%j0: index):
        %j = "lt.dim"() {dim = "j"} : () -> index
        %t = memref.load %T[%r] : memref<2xf32>
        memref.store %t, %B[%r, %i, %j] : memref<2x4x8xf32>
      }) {dim = "j", size = 8 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: there is no loop L1.
// ERR-NEXT: error: lt-swap: no loop L1 (the loop tree has L0)
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
