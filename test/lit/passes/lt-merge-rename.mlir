// lt-merge{loop=L rename=true}: without a preceding sibling over L's dim,
// L merges into the nearest earlier loop P of its size, tail and inner
// extent: L's nest takes P's dim (the names swap where L's nest uses P's dim
// too) and what lies between, sharing no written buffer with P, moves above
// P.  The logistic-regression step: X @ w, then X.T @ p, read X once.
//
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-merge{loop=3 rename=true})' --emit=loop-tree -o %t.tree 2>&1 | filecheck %s --check-prefix=ERR
// RUN: filecheck %s --input-file=%t.tree --check-prefix=TREE --match-full-lines --strict-whitespace
//
// The same results before and after (the tail case split first).
// RUN: sed -n '/^func.func @logistic_step(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=SUM
// RUN: sed -n '/^func.func @logistic_step(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-merge{loop=3 rename=true})' | filecheck %s --check-prefix=SUM
// SUM:      arg2 f32[6] checksum 0.595551
// SUM-NEXT: arg3 f32[5] checksum -3.2148
// RUN: sed -n '/^func.func @tails(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=TAILSUM
// RUN: sed -n '/^func.func @tails(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-split{loop=0 factor=3}, lt-split{loop=4 factor=3}, lt-merge{loop=4 rename=true})' | filecheck %s --check-prefix=TAILSUM
// TAILSUM:      arg2 f32[7] checksum -1.99704
// TAILSUM-NEXT: arg3 f32[5] checksum 6.09252
// RUN: sed -n '/^func.func @tails(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-split{loop=0 factor=3}, lt-split{loop=4 factor=3}, lt-merge{loop=4 rename=true})' --emit=loop-tree | filecheck %s --check-prefix=TAIL --match-full-lines --strict-whitespace
//
// A nearer loop of the same extent that refuses -- the zeros of the sum L
// accumulates, when X is square -- is passed over: it is among what lies
// between, and moves above the loop L merges into (Sinkhorn's rotated
// iteration).  Before, P was that init loop and the merge was refused.
// RUN: sed -n '/^func.func @square(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-merge{loop=3 rename=true})' --emit=loop-tree | filecheck %s --check-prefix=SQUARE --match-full-lines --strict-whitespace
// RUN: sed -n '/^func.func @square(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=SQSUM
// RUN: sed -n '/^func.func @square(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-merge{loop=3 rename=true})' | filecheck %s --check-prefix=SQSUM
// SQSUM:      arg2 f32[6] checksum 1.82111
// SQSUM-NEXT: arg3 f32[6] checksum 11.4629
//      SQUARE:for i in 6 : L0
// SQUARE-NEXT: g[i] <- 0.0
// SQUARE-NEXT:for i in 6 : L1
// SQUARE-NEXT: p[i] <- 0.0
// SQUARE-NEXT: for j in 6 : L2
// SQUARE: for k in 6 : L3
// SQUARE-NEXT:  %3 <- read X[i, k]
// SQUARE-NEXT:  %4 <- read p[i]
// SQUARE-NEXT:  %5 <- mul(%3, %4)
// SQUARE-NEXT:  g[k] += %5
//
// Without rename=true the loops stay apart (loop_tool's merge: one dim).
// RUN: sed -n '/^func.func @logistic_step(/,/^}/p' %s | not lt-opt - -p 'builtin.module(lt-merge{loop=3})' 2>&1 | filecheck %s --check-prefix=PLAIN
// PLAIN: <stdin>:22:3: error: lt-merge: L3 "for k in 6" has no preceding sibling loop or parent level over dim 'k' to merge with

// The init of g moves above the first loop; k and i swap in the second nest.
//      TREE:for i in 5 : L0
// TREE-NEXT: g[i] <- 0.0
// TREE-NEXT:for i in 6 : L1
// TREE-NEXT: p[i] <- 0.0
// TREE-NEXT: for j in 5 : L2
// TREE-NEXT:  %0 <- read X[i, j]
// TREE-NEXT:  %1 <- read w[j]
// TREE-NEXT:  %2 <- mul(%0, %1)
// TREE-NEXT:  p[i] += %2
// TREE-NEXT: for k in 5 : L3
// TREE-NEXT:  %3 <- read X[i, k]
// TREE-NEXT:  %4 <- read p[i]
// TREE-NEXT:  %5 <- mul(%3, %4)
// TREE-NEXT:  g[k] += %5

func.func @logistic_step(%X: memref<6x5xf32> {lt.name = "X"}, %w: memref<5xf32> {lt.name = "w"}, %p: memref<6xf32> {lt.name = "p"}, %g: memref<5xf32> {lt.name = "g"}) {
  "lt.loop"() ({
  ^bb0(%a0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %zero = arith.constant 0.0 : f32
    memref.store %zero, %p[%i] : memref<6xf32>
    "lt.loop"() ({
    ^bb0(%a1: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %x = memref.load %X[%i, %j] : memref<6x5xf32>
      %v = memref.load %w[%j] : memref<5xf32>
      %m = arith.mulf %x, %v : f32
      "lt.reduce"(%m, %p, %i) {kind = "add"} : (f32, memref<6xf32>, index) -> ()
    }) {dim = "j", size = 5 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 6 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%a0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %zero = arith.constant 0.0 : f32
    memref.store %zero, %g[%i] : memref<5xf32>
  }) {dim = "i", size = 5 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%a0: index):
    %k = "lt.dim"() {dim = "k"} : () -> index
    "lt.loop"() ({
    ^bb0(%a1: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %x = memref.load %X[%k, %i] : memref<6x5xf32>
      %r = memref.load %p[%k] : memref<6xf32>
      %m = arith.mulf %x, %r : f32
      "lt.reduce"(%m, %g, %i) {kind = "add"} : (f32, memref<5xf32>, index) -> ()
    }) {dim = "i", size = 5 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "k", size = 6 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Tails: both nests split by 3 (7 rows: 2 r 1); the levels merge as one.
//      TAIL:for i in 5 : L0
// TAIL-NEXT: g[i] <- 0.0
// TAIL-NEXT:for i in 2 r 1 : L1
// TAIL-NEXT: for i' in 3 : L2
// TAIL-NEXT:  p[i] <- 0.0
// TAIL-NEXT:  for j in 5 : L3
// TAIL-NEXT:   %0 <- read X[i, j]
// TAIL-NEXT:   %1 <- read w[j]
// TAIL-NEXT:   %2 <- mul(%0, %1)
// TAIL-NEXT:   p[i] += %2
// TAIL-NEXT: for i' in 3 : L4
// TAIL-NEXT:  for k in 5 : L5
// TAIL-NEXT:   %3 <- read X[i, k]
// TAIL-NEXT:   %4 <- read p[i]
// TAIL-NEXT:   %5 <- mul(%3, %4)
// TAIL-NEXT:   g[k] += %5
// Unsplit, the same function merges as the first: 7 rows.
//      TREE:// -----
// TREE-NEXT:for i in 5 : L0
// TREE-NEXT: g[i] <- 0.0
// TREE-NEXT:for i in 7 : L1

func.func @tails(%X: memref<7x5xf32> {lt.name = "X"}, %w: memref<5xf32> {lt.name = "w"}, %p: memref<7xf32> {lt.name = "p"}, %g: memref<5xf32> {lt.name = "g"}) {
  "lt.loop"() ({
  ^bb0(%a0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %zero = arith.constant 0.0 : f32
    memref.store %zero, %p[%i] : memref<7xf32>
    "lt.loop"() ({
    ^bb0(%a1: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %x = memref.load %X[%i, %j] : memref<7x5xf32>
      %v = memref.load %w[%j] : memref<5xf32>
      %m = arith.mulf %x, %v : f32
      "lt.reduce"(%m, %p, %i) {kind = "add"} : (f32, memref<7xf32>, index) -> ()
    }) {dim = "j", size = 5 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 7 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%a0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %zero = arith.constant 0.0 : f32
    memref.store %zero, %g[%i] : memref<5xf32>
  }) {dim = "i", size = 5 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%a0: index):
    %k = "lt.dim"() {dim = "k"} : () -> index
    "lt.loop"() ({
    ^bb0(%a1: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %x = memref.load %X[%k, %i] : memref<7x5xf32>
      %r = memref.load %p[%k] : memref<7xf32>
      %m = arith.mulf %x, %r : f32
      "lt.reduce"(%m, %g, %i) {kind = "add"} : (f32, memref<5xf32>, index) -> ()
    }) {dim = "i", size = 5 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "k", size = 7 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: the nest between writes w, which the first loop reads.
// ERR: {{.*}}lt-merge-rename.mlir:{{[0-9]+}}:3: error: lt-merge: "for k in 6" cannot move next to "for i in 6": a statement between them shares a buffer it writes with the earlier loop
// ERR-NOT: error

func.func @writes_what_the_first_reads(%X: memref<6x5xf32> {lt.name = "X"}, %w: memref<5xf32> {lt.name = "w"}, %p: memref<6xf32> {lt.name = "p"}, %g: memref<5xf32> {lt.name = "g"}) {
  "lt.loop"() ({
  ^bb0(%a0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %zero = arith.constant 0.0 : f32
    memref.store %zero, %p[%i] : memref<6xf32>
    "lt.loop"() ({
    ^bb0(%a1: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %x = memref.load %X[%i, %j] : memref<6x5xf32>
      %v = memref.load %w[%j] : memref<5xf32>
      %m = arith.mulf %x, %v : f32
      "lt.reduce"(%m, %p, %i) {kind = "add"} : (f32, memref<6xf32>, index) -> ()
    }) {dim = "j", size = 5 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 6 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%a0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %zero = arith.constant 0.0 : f32
    memref.store %zero, %g[%i] : memref<5xf32>
    memref.store %zero, %w[%i] : memref<5xf32>
  }) {dim = "i", size = 5 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%a0: index):
    %k = "lt.dim"() {dim = "k"} : () -> index
    "lt.loop"() ({
    ^bb0(%a1: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %x = memref.load %X[%k, %i] : memref<6x5xf32>
      %r = memref.load %p[%k] : memref<6xf32>
      %m = arith.mulf %x, %r : f32
      "lt.reduce"(%m, %g, %i) {kind = "add"} : (f32, memref<5xf32>, index) -> ()
    }) {dim = "i", size = 5 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "k", size = 6 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

func.func @square(%X: memref<6x6xf32> {lt.name = "X"}, %w: memref<6xf32> {lt.name = "w"}, %p: memref<6xf32> {lt.name = "p"}, %g: memref<6xf32> {lt.name = "g"}) {
  "lt.loop"() ({
  ^bb0(%a0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %zero = arith.constant 0.0 : f32
    memref.store %zero, %p[%i] : memref<6xf32>
    "lt.loop"() ({
    ^bb0(%a1: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %x = memref.load %X[%i, %j] : memref<6x6xf32>
      %v = memref.load %w[%j] : memref<6xf32>
      %m = arith.mulf %x, %v : f32
      "lt.reduce"(%m, %p, %i) {kind = "add"} : (f32, memref<6xf32>, index) -> ()
    }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 6 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%a0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %zero = arith.constant 0.0 : f32
    memref.store %zero, %g[%i] : memref<6xf32>
  }) {dim = "i", size = 6 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%a0: index):
    %k = "lt.dim"() {dim = "k"} : () -> index
    "lt.loop"() ({
    ^bb0(%a1: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %x = memref.load %X[%k, %i] : memref<6x6xf32>
      %r = memref.load %p[%k] : memref<6xf32>
      %m = arith.mulf %x, %r : f32
      "lt.reduce"(%m, %g, %i) {kind = "add"} : (f32, memref<6xf32>, index) -> ()
    }) {dim = "i", size = 6 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "k", size = 6 : i64, tail = 0 : i64} : () -> ()
  return
}
