// lt-distribute{loop=L}: one loop per part of L's body (each inner loop is a
// part, consecutive other statements form one), same dim, sizes and
// annotations; index computations are recomputed in every part.
//
// Every chunk below goes through the same pipeline, lt-distribute{loop=0}:
// the chunks that distribute print their loop tree (TREE) and IR (IR), the
// others refuse with a located one-line error (ERR).
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-distribute{loop=0})' --emit=loop-tree -o %t.tree 2>&1 | filecheck %s --check-prefix=ERR
// RUN: filecheck %s --input-file=%t.tree --check-prefix=TREE --match-full-lines --strict-whitespace
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-distribute{loop=0})' 2>/dev/null | filecheck %s --check-prefix=IR
//
// Distributing never changes the result: same checksums before and after.
// RUN: sed -n '/^func.func @row_mean(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=SUM
// RUN: sed -n '/^func.func @row_mean(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-distribute{loop=0})' | filecheck %s --check-prefix=SUM
// SUM:      arg1 f32[32] checksum -12.2897
// SUM-NEXT: arg2 f32[32] checksum -0.768104
// RUN: sed -n '/^func.func @row_sum(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=TAILSUM
// RUN: sed -n '/^func.func @tail(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=TAILSUM
// RUN: sed -n '/^func.func @tail(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-distribute{loop=0})' | filecheck %s --check-prefix=TAILSUM
// RUN: sed -n '/^func.func @row_sum(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-distribute{loop=1}, lt-distribute{loop=0})' | filecheck %s --check-prefix=TAILSUM
// TAILSUM: arg1 f32[33] checksum -9.73764
//
// @row_sum's L0 holds only L1, but L1 has two parts; distributing L1 then
// L0 gives @tail's result.
// RUN: sed -n '/^func.func @row_sum(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-distribute{loop=1}, lt-distribute{loop=0})' --emit=loop-tree | filecheck %s --check-prefix=TWICE --match-full-lines --strict-whitespace
//      TWICE:for m in 4 r 1 : L0
// TWICE-NEXT: for m' in 8 : L1
// TWICE-NEXT:  S[m] <- 0.0
// TWICE-NEXT:for m in 4 r 1 : L2
// TWICE-NEXT: for m' in 8 : L3
// TWICE-NEXT:  for n in 16 : L4
// TWICE-NEXT:   %0 <- read A[m, n]
// TWICE-NEXT:   S[m] += %0
//  TWICE-NOT:{{.}}

// Three parts: the initialisation, the reduction loop, the statements after.
//      TREE:for m in 32 : L0
// TREE-NEXT: S[m] <- 0.0
// TREE-NEXT:for m in 32 : L1
// TREE-NEXT: for n in 16 : L2
// TREE-NEXT:  %0 <- read A[m, n]
// TREE-NEXT:  S[m] += %0
// TREE-NEXT:for m in 32 : L3
// TREE-NEXT: %1 <- read S[m]
// TREE-NEXT: %2 <- mul(%1, 0.0625)
// TREE-NEXT: M[m] <- %2
// TREE-NEXT:// -----
// IR-LABEL: func.func @row_mean
// IR:         "lt.loop"() ({
// IR-NEXT:    ^bb0(%{{.*}}: index):
// IR-NEXT:      %[[M0:.*]] = "lt.dim"() {dim = "m"} : () -> index
// IR-NEXT:      memref.store %{{.*}}, %[[S:.*]][%[[M0]]] : memref<32xf32>
// IR-NEXT:    }) {dim = "m", size = 32 : i64, tail = 0 : i64} : () -> ()
// IR-NEXT:    "lt.loop"() ({
// IR-NEXT:    ^bb0(%{{.*}}: index):
// IR-NEXT:      %[[M1:.*]] = "lt.dim"() {dim = "m"} : () -> index
// IR-NEXT:      "lt.loop"() ({
// IR:             "lt.reduce"(%{{.*}}, %[[S]], %[[M1]]) {kind = "add"}
// IR-NEXT:      }) {dim = "n", size = 16 : i64, tail = 0 : i64} : () -> ()
// IR-NEXT:    }) {dim = "m", size = 32 : i64, tail = 0 : i64} : () -> ()
// IR-NEXT:    "lt.loop"() ({
// IR-NEXT:    ^bb0(%{{.*}}: index):
// IR-NEXT:      %[[M2:.*]] = "lt.dim"() {dim = "m"} : () -> index
// IR-NEXT:      %{{.*}} = memref.load %[[S]][%[[M2]]] : memref<32xf32>
// IR:         }) {dim = "m", size = 32 : i64, tail = 0 : i64} : () -> ()
// IR-NEXT:    return
func.func @row_mean(%A: memref<32x16xf32> {lt.name = "A"}, %S: memref<32xf32> {lt.name = "S"}, %M: memref<32xf32> {lt.name = "M"}) {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 0.0625 : f32
  "lt.loop"() ({
  ^bb0(%i1: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    memref.store %zero, %S[%m] : memref<32xf32>
    "lt.loop"() ({
    ^bb0(%i0: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %a = memref.load %A[%m, %n] : memref<32x16xf32>
      "lt.reduce"(%a, %S, %m) {kind = "add"} : (f32, memref<32xf32>, index) -> ()
    }) {dim = "n", size = 16 : i64, tail = 0 : i64} : () -> ()
    %s = memref.load %S[%m] : memref<32xf32>
    %mean = arith.mulf %s, %scale : f32
    memref.store %mean, %M[%m] : memref<32xf32>
  }) {dim = "m", size = 32 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// The tail case: both copies of `for m in 4 r 1` keep the size, the tail
// and the annotation.
// TREE-NEXT:for m in 4 r 1 : L0 [unroll 2]
// TREE-NEXT: for m' in 8 : L1
// TREE-NEXT:  S[m] <- 0.0
// TREE-NEXT:for m in 4 r 1 : L2 [unroll 2]
// TREE-NEXT: for m' in 8 : L3
// TREE-NEXT:  for n in 16 : L4
// TREE-NEXT:   %0 <- read A[m, n]
// TREE-NEXT:   S[m] += %0
// TREE-NEXT:// -----
func.func @tail(%A: memref<33x16xf32> {lt.name = "A"}, %S: memref<33xf32> {lt.name = "S"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i2: index):
    "lt.loop"() ({
    ^bb0(%i1: index):
      %m = "lt.dim"() {dim = "m"} : () -> index
      memref.store %zero, %S[%m] : memref<33xf32>
    }) {dim = "m", size = 8 : i64, tail = 0 : i64} : () -> ()
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
  }) {dim = "m", size = 4 : i64, tail = 1 : i64, lt.unroll = 2} : () -> ()
  return
}

// -----

// A buffer that only reductions of one kind touch does not constrain: the
// sum of A and of B into S[0] may run as two loops (rounding aside).
// TREE-NEXT:for i in 8 : L0
// TREE-NEXT: %0 <- read A[i]
// TREE-NEXT: S[0] += %0
// TREE-NEXT:for i in 8 : L1
// TREE-NEXT: for j in 4 : L2
// TREE-NEXT:  %1 <- read B[i, j]
// TREE-NEXT:  S[0] += %1
//  TREE-NOT:{{.}}
func.func @reduces(%A: memref<8xf32> {lt.name = "A"}, %B: memref<8x4xf32> {lt.name = "B"}, %S: memref<1xf32> {lt.name = "S"}) {
  %c0 = arith.constant 0 : index
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %a = memref.load %A[%i] : memref<8xf32>
    "lt.reduce"(%a, %S, %c0) {kind = "add"} : (f32, memref<1xf32>, index) -> ()
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %b = memref.load %B[%i, %j] : memref<8x4xf32>
      "lt.reduce"(%b, %S, %c0) {kind = "add"} : (f32, memref<1xf32>, index) -> ()
    }) {dim = "j", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: L0 holds a single part (only L1).
// ERR: lt-distribute.mlir:[[# @LINE + 3]]:3: error: lt-distribute: L0 "for m in 4 r 1" has only one part; nothing to distribute
func.func @row_sum(%A: memref<33x16xf32> {lt.name = "A"}, %S: memref<33xf32> {lt.name = "S"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i2: index):
    "lt.loop"() ({
    ^bb0(%i1: index):
      %m = "lt.dim"() {dim = "m"} : () -> index
      memref.store %zero, %S[%m] : memref<33xf32>
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

// Refused: the value loaded in the first part is used in the second.
// ERR-NEXT: lt-distribute.mlir:[[# @LINE + 10]]:12: error: lt-distribute: a value computed in one part of the body is used in another; cannot distribute "for i in 4"
func.func @flow(%A: memref<4x8xf32>, %X: memref<4xf32>, %B: memref<4x8xf32>) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %x = memref.load %X[%i] : memref<4xf32>
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %a = memref.load %A[%i, %j] : memref<4x8xf32>
      %t = arith.mulf %x, %a : f32
      memref.store %t, %B[%i, %j] : memref<4x8xf32>
    }) {dim = "j", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: every iteration of i stores to T[0] and its inner loop reads it
// back; distributed, the inner loops would all read the last store.
// ERR-NEXT: lt-distribute.mlir:[[# @LINE + 3]]:3: error: lt-distribute: cannot distribute "for i in 4": argument 1 is written and accessed at elements that other iterations of dim 'i' also access
func.func @shared(%A: memref<4xf32>, %T: memref<1xf32>, %B: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %a = memref.load %A[%i] : memref<4xf32>
    memref.store %a, %T[%c0] : memref<1xf32>
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %t = memref.load %T[%c0] : memref<1xf32>
      memref.store %t, %B[%i, %j] : memref<4x8xf32>
    }) {dim = "j", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: there is no loop L0.
// ERR-NEXT: error: lt-distribute: no loop L0 (the module has no loops)
// ERR-NOT: error
func.func @no_loops(%A: memref<4xf32>) {
  return
}
