// lt-split{loop=L factor=F}: a level of extent X (size S, tail T, inner
// extent E) becomes `X // (F*E) r X % (F*E)` over `F`.
//
// Every chunk below goes through the same pipeline, lt-split{loop=0 factor=8}:
// the chunks that split print their loop tree (TREE) and IR (IR), the others
// refuse with a located one-line error (ERR).
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-split{loop=0 factor=8})' --emit=loop-tree -o %t.tree 2>&1 | filecheck %s --check-prefix=ERR
// RUN: filecheck %s --input-file=%t.tree --check-prefix=TREE --match-full-lines --strict-whitespace
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-split{loop=0 factor=8})' 2>/dev/null | filecheck %s --check-prefix=IR
//
// A factor below 1 is refused (every chunk with a loop refuses; the first is checked).
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-split{loop=0 factor=0})' 2>&1 | filecheck %s --check-prefix=FACTOR
//
// Splitting never changes the result: @add (33 elements) and @retail (39 as
// `9 r 3` over `4`) give the untransformed checksums after one split and
// after splitting the new outer level again (33: `4 r 1` by 3 -> `1 r 9`
// over `3` over `8`); so does @iteration (20 by 4: `5` over `4`), whose
// stores index with the rewritten `outer * 4 + inner`.
// RUN: sed -n '/^func.func @add(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=SUM33
// RUN: sed -n '/^func.func @add(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-split{loop=0 factor=8})' | filecheck %s --check-prefix=SUM33
// RUN: sed -n '/^func.func @add(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-split{loop=0 factor=8}, lt-split{loop=0 factor=3})' | filecheck %s --check-prefix=SUM33
// RUN: sed -n '/^func.func @retail(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=SUM39
// RUN: sed -n '/^func.func @retail(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-split{loop=0 factor=8})' | filecheck %s --check-prefix=SUM39
// RUN: sed -n '/^func.func @iteration(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=SUM20
// RUN: sed -n '/^func.func @iteration(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-split{loop=0 factor=4})' | filecheck %s --check-prefix=SUM20
// SUM33: arg2 f32[33] checksum 4.34537
// SUM39: arg2 f32[39] checksum 7.57592
// SUM20: arg1 f32[20] checksum -3.66357
//
// Split by 8, @iteration (`2 r 4` over `8`) stores to B[min(outer * 8 + inner, 19)]:
// the inner level runs 4 times in the tail iteration, so the min never
// clips; it tells the static bounds check what it cannot derive.
// RUN: sed -n '/^func.func @iteration(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-split{loop=0 factor=8})' | filecheck %s --check-prefix=SUM20
//
// Splitting twice keeps the total: 33 -> `4 r 1` over `8` -> `1 r 9` over `3` over `8`,
// or, splitting the inner level by 4 instead, `4 r 1` over `2` over `4`.
// RUN: sed -n '/^func.func @add(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-split{loop=0 factor=8}, lt-split{loop=0 factor=3})' --emit=loop-tree | filecheck %s --check-prefix=TWICE --match-full-lines --strict-whitespace
// RUN: sed -n '/^func.func @add(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-split{loop=0 factor=8}, lt-split{loop=1 factor=4})' --emit=loop-tree | filecheck %s --check-prefix=SECOND --match-full-lines --strict-whitespace
//      TWICE:for i in 1 r 9 : L0
// TWICE-NEXT: for i' in 3 : L1
// TWICE-NEXT:  for i'' in 8 : L2
//      SECOND:for i in 4 r 1 : L0
// SECOND-NEXT: for i' in 2 : L1
// SECOND-NEXT:  for i'' in 4 : L2

// An even split: 32 by 8 is `4` over `8`.
//      TREE:for i in 4 : L0
// TREE-NEXT: for i' in 8 : L1
// TREE-NEXT:  %0 <- read A[i]
// TREE-NEXT:  B[i] <- %0
// TREE-NEXT:// -----
// FACTOR: lt-split.mlir:[[# @LINE + 2]]:3: error: lt-split: factor must be at least 1, got 0
func.func @even(%A: memref<32xf32> {lt.name = "A"}, %B: memref<32xf32> {lt.name = "B"}) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %a = memref.load %A[%i] : memref<32xf32>
    memref.store %a, %B[%i] : memref<32xf32>
  }) {dim = "i", size = 32 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// The tail case: 33 by 8 is `4 r 1` over `8` (the rest stays exact).
// TREE-NEXT:for i in 4 r 1 : L0
// TREE-NEXT: for i' in 8 : L1
// TREE-NEXT:  %0 <- read A[i]
// TREE-NEXT:  %1 <- read B[i]
// TREE-NEXT:  %2 <- add(%0, %1)
// TREE-NEXT:  C[i] <- %2
// TREE-NEXT:// -----
// IR-LABEL: func.func @add
// IR:         "lt.loop"() ({
// IR-NEXT:    ^bb0(%{{.*}}: index):
// IR-NEXT:      "lt.loop"() ({
// IR-NEXT:      ^bb0(%{{.*}}: index):
// IR-NEXT:        "lt.dim"() {dim = "i"}
// IR:           }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
// IR-NEXT:    }) {dim = "i", size = 4 : i64, tail = 1 : i64} : () -> ()
func.func @add(%A: memref<33xf32> {lt.name = "A"}, %B: memref<33xf32> {lt.name = "B"}, %C: memref<33xf32> {lt.name = "C"}) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %a = memref.load %A[%i] : memref<33xf32>
    %b = memref.load %B[%i] : memref<33xf32>
    %c = arith.addf %a, %b : f32
    memref.store %c, %C[%i] : memref<33xf32>
  }) {dim = "i", size = 33 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Splitting a level that already has a tail keeps its total: 39 as `9 r 3`
// over `4`, split by 8 (chunks of 32), is `1 r 7` over `8` over `4`
// (7 = (9 % 8) * 4 + 3).  The annotation stays on the split (inner) level.
// TREE-NEXT:for i in 1 r 7 : L0
// TREE-NEXT: for i' in 8 : L1 [unroll 2]
// TREE-NEXT:  for i'' in 4 : L2
// TREE-NEXT:   %0 <- read A[i]
// TREE-NEXT:   %1 <- read B[i]
// TREE-NEXT:   %2 <- add(%0, %1)
// TREE-NEXT:   C[i] <- %2
// TREE-NEXT:// -----
func.func @retail(%A: memref<39xf32> {lt.name = "A"}, %B: memref<39xf32> {lt.name = "B"}, %C: memref<39xf32> {lt.name = "C"}) {
  "lt.loop"() ({
  ^bb0(%i1: index):
    "lt.loop"() ({
    ^bb0(%i0: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %a = memref.load %A[%i] : memref<39xf32>
      %b = memref.load %B[%i] : memref<39xf32>
      %c = arith.addf %a, %b : f32
      memref.store %c, %C[%i] : memref<39xf32>
    }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 9 : i64, tail = 3 : i64, lt.unroll = 2} : () -> ()
  return
}

// -----

// Uses of the split level's iteration number become `outer * 8 + inner`
// (20 by 8 is `2 r 4` over `8`: the tail iteration's inner level runs 4 times).
// TREE-NEXT:for i in 2 r 4 : L0
// TREE-NEXT: for i' in 8 : L1
// TREE-NEXT:  %0 <- read A[i]
// TREE-NEXT:  B[minsi(L0.iteration*8 + L1.iteration, 19)] <- %0
//  TREE-NOT:{{.}}
// IR-LABEL: func.func @iteration
// IR:         "lt.loop"() ({
// IR-NEXT:    ^bb0(%[[OUTER:.*]]: index):
// IR-NEXT:      "lt.loop"() ({
// IR-NEXT:      ^bb0(%[[INNER:.*]]: index):
// IR-NEXT:        %[[C8:.*]] = arith.constant 8 : index
// IR-NEXT:        %[[SCALED:.*]] = arith.muli %[[OUTER]], %[[C8]] : index
// IR-NEXT:        %[[SUM:.*]] = arith.addi %[[SCALED]], %[[INNER]] : index
// IR-NEXT:        %[[C19:.*]] = arith.constant 19 : index
// IR-NEXT:        %[[OLD:.*]] = arith.minsi %[[SUM]], %[[C19]] : index
// IR-NEXT:        %[[I:.*]] = "lt.dim"() {dim = "i"} : () -> index
// IR-NEXT:        %[[A:.*]] = memref.load %{{.*}}[%[[I]]] : memref<20xf32>
// IR-NEXT:        memref.store %[[A]], %{{.*}}[%[[OLD]]] : memref<20xf32>
// IR-NEXT:      }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
// IR-NEXT:    }) {dim = "i", size = 2 : i64, tail = 4 : i64} : () -> ()
func.func @iteration(%A: memref<20xf32> {lt.name = "A"}, %B: memref<20xf32> {lt.name = "B"}) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %a = memref.load %A[%i] : memref<20xf32>
    memref.store %a, %B[%i0] : memref<20xf32>
  }) {dim = "i", size = 20 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: the outer level would be empty (8 > 4 iterations).
// ERR: lt-split.mlir:[[# @LINE + 2]]:3: error: lt-split: factor 8 exceeds the 4 iterations of L0 "for i in 4 r 1"
func.func @presplit(%A: memref<33xf32> {lt.name = "A"}, %B: memref<33xf32> {lt.name = "B"}) {
  "lt.loop"() ({
  ^bb0(%i1: index):
    "lt.loop"() ({
    ^bb0(%i0: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %a = memref.load %A[%i] : memref<33xf32>
      memref.store %a, %B[%i] : memref<33xf32>
    }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 1 : i64} : () -> ()
  return
}

// -----

// Refused: there is no loop L0 (no loop to locate the error at).
// ERR-NEXT: error: lt-split: no loop L0 (the module has no loops)
// ERR-NOT: error
func.func @no_loops(%A: memref<4xf32>) {
  return
}
