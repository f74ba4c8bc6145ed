// lt-cache{loop=L operand=i}: at the start of each iteration of loop L, copy
// the tile of argument i that L's body reads into a local lt.alloc (marked
// `lt.cache = i`), through a nest of lt.loops over the tile's dims, and make
// the reads inside L read the copy.  lt-uncache{loop=L} takes it out again.
//
// Every chunk goes through lt-cache{loop=0 operand=0}: the chunks that cache
// print their loop tree (TREE) and IR (IR), the others refuse with a located
// one-line error (ERR).
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-cache{loop=0 operand=0})' --emit=loop-tree -o %t.tree 2>&1 | filecheck %s --check-prefix=ERR
// RUN: filecheck %s --input-file=%t.tree --check-prefix=TREE --match-full-lines --strict-whitespace
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-cache{loop=0 operand=0})' 2>/dev/null | filecheck %s --check-prefix=IR
//
// Out-of-range options are refused too (first chunk).
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | not lt-opt - -p 'builtin.module(lt-cache{loop=0 operand=3})' 2>&1 | filecheck %s --check-prefix=OPERAND
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | not lt-opt - -p 'builtin.module(lt-cache{loop=9 operand=0})' 2>&1 | filecheck %s --check-prefix=LOOP
// OPERAND: <stdin>:3:3: error: lt-cache: operand 3 is not an argument of @matmul (it has 3)
// LOOP: error: lt-cache: no loop L9 (the loop tree has L0..L3)
//
// lt-uncache restores the original loop tree; without a cache it refuses.
// RUN: sed -n '/^func.func @conv1d(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-cache{loop=0 operand=0}, lt-uncache{loop=0})' --emit=loop-tree 2>&1 | filecheck %s --check-prefix=UNCACHE --match-full-lines --strict-whitespace
// RUN: sed -n '/^func.func @conv1d(/,/^}/p' %s | not lt-opt - -p 'builtin.module(lt-uncache{loop=0})' 2>&1 | filecheck %s --check-prefix=NOCACHE
//      UNCACHE:remark: lt-cache: X: tile 12 over [i+j] (12 of 37 elements) copied into a local buffer at the start of each iteration of L0 "for i in 4 r 1"
// UNCACHE-NEXT:remark: lt-uncache: removed the cache of X from L0
// UNCACHE-NEXT:for i in 4 r 1 : L0
// UNCACHE-NEXT: for i' in 8 : L1
// UNCACHE-NEXT:  Y[i] <- 0.0
// UNCACHE-NEXT:  for j in 5 : L2
// UNCACHE-NEXT:   %0 <- read X[i + j]
// UNCACHE-NEXT:   %1 <- read W[j]
// UNCACHE-NEXT:   %2 <- mul(%0, %1)
// UNCACHE-NEXT:   Y[i] += %2
// NOCACHE: <stdin>:3:3: error: lt-uncache: L0 "for i in 4 r 1" has no cache (made by lt-cache)
//
// Caching never changes the result (checksums of seeded random inputs),
// tail iteration included; neither does taking the cache out, nor shrinking.
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=MATMUL
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-cache{loop=0 operand=0}, lt-cache{loop=0 operand=1})' | filecheck %s --check-prefix=MATMUL
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | env LT_PARALLEL_MIN_WORK=0 lt-opt - --run --repeat 1 -p 'builtin.module(lt-cache{loop=0 operand=1}, lt-parallel{loop=0})' | filecheck %s --check-prefix=MATMUL
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | env LT_PARALLEL_MIN_WORK=0 lt-opt - --run --repeat 1 -p 'builtin.module(lt-parallel{loop=0}, lt-cache{loop=1 operand=0})' | filecheck %s --check-prefix=MATMUL
//
// Inside a parallel loop a cache is each iteration's own: the lowering
// allocates it at the start of the parallel loop's body, not at the entry.
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | env LT_PARALLEL_MIN_WORK=0 lt-opt - -p 'builtin.module(lt-cache{loop=0 operand=1}, lt-parallel{loop=0}, lower-lt-to-scf)' | filecheck %s --check-prefix=PRIVATE
// PRIVATE-LABEL: func.func @matmul
// PRIVATE-NOT: memref.alloca
// PRIVATE: scf.parallel
// PRIVATE: memref.alloca() : memref<16x8xf32>
// RUN: sed -n '/^func.func @conv1d(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=CONV
// RUN: sed -n '/^func.func @conv1d(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-cache{loop=0 operand=0})' | filecheck %s --check-prefix=CONV
// RUN: sed -n '/^func.func @conv1d(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-cache{loop=1 operand=0}, lt-cache{loop=0 operand=1}, lt-shrink-buffers)' | filecheck %s --check-prefix=CONV
// RUN: sed -n '/^func.func @conv1d(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-cache{loop=0 operand=0}, lt-uncache{loop=0})' | filecheck %s --check-prefix=CONV
// MATMUL: arg2 f32[32, 8] checksum -30.997
// CONV: arg2 f32[33] checksum -11.6315

// The normal case: m = 32 by 8.  Each iteration of L0 reads 8 rows of A
// (the m' level) and all 16 columns (k): an 8x16 tile.  The copy nest's m'
// level is one more inner level of L0 covering 8, like its sibling.
//      TREE:for m in 4 : L0
// TREE-NEXT: %0 <- alloc f32[m, k] (128 elements)
// TREE-NEXT: for m' in 8 : L1
// TREE-NEXT:  for k in 16 : L2
// TREE-NEXT:   %1 <- read A[m, k]
// TREE-NEXT:   %0[m - m, k] <- %1
// TREE-NEXT: for m' in 8 : L3
// TREE-NEXT:  for n in 8 : L4
// TREE-NEXT:   C[m, n] <- 0.0
// TREE-NEXT:   for k in 16 : L5
// TREE-NEXT:    %2 <- read %0[m - m, k]
// TREE-NEXT:    %3 <- read B[k, n]
// TREE-NEXT:    %4 <- mul(%2, %3)
// TREE-NEXT:    C[m, n] += %4
// TREE-NEXT:// -----
// IR-LABEL: func.func @matmul
// IR:         ^bb0(%{{.*}}: index):
// IR-NEXT:      %[[T:.*]] = "lt.alloc"() {dims = ["m", "k"], lt.cache = 0 : i64} : () -> memref<8x16xf32>
// IR-NEXT:      %[[BASE:.*]] = "lt.dim"() {dim = "m"} : () -> index
// IR-NEXT:      "lt.loop"() ({
// IR-NEXT:      ^bb0(%{{.*}}: index):
// IR-NEXT:        "lt.loop"() ({
// IR-NEXT:        ^bb0(%{{.*}}: index):
// IR-NEXT:          %[[M:.*]] = "lt.dim"() {dim = "m"} : () -> index
// IR-NEXT:          %[[K:.*]] = "lt.dim"() {dim = "k"} : () -> index
// IR-NEXT:          %[[V:.*]] = memref.load %arg0[%[[M]], %[[K]]] : memref<32x16xf32>
// IR-NEXT:          %[[R:.*]] = arith.subi %[[M]], %[[BASE]] : index
// IR-NEXT:          memref.store %[[V]], %[[T]][%[[R]], %[[K]]] : memref<8x16xf32>
// IR-NEXT:        }) {dim = "k", size = 16 : i64, tail = 0 : i64} : () -> ()
// IR-NEXT:      }) {dim = "m", size = 8 : i64, tail = 0 : i64} : () -> ()
// IR:           %[[M2:.*]] = "lt.dim"() {dim = "m"} : () -> index
// IR-NEXT:      %[[R2:.*]] = arith.subi %[[M2]], %[[BASE]] : index
// IR:           %[[K2:.*]] = "lt.dim"() {dim = "k"} : () -> index
// IR-NEXT:      memref.load %[[T]][%[[R2]], %[[K2]]] : memref<8x16xf32>
// IR-NOT:       memref.load %arg0
func.func @matmul(%A: memref<32x16xf32> {lt.name = "A"}, %B: memref<16x8xf32> {lt.name = "B"}, %C: memref<32x8xf32> {lt.name = "C"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i3: index):
    "lt.loop"() ({
    ^bb0(%i2: index):
      %m = "lt.dim"() {dim = "m"} : () -> index
      "lt.loop"() ({
      ^bb0(%i1: index):
        %n = "lt.dim"() {dim = "n"} : () -> index
        memref.store %zero, %C[%m, %n] : memref<32x8xf32>
        "lt.loop"() ({
        ^bb0(%i0: index):
          %k = "lt.dim"() {dim = "k"} : () -> index
          %a = memref.load %A[%m, %k] : memref<32x16xf32>
          %b = memref.load %B[%k, %n] : memref<16x8xf32>
          %p = arith.mulf %a, %b : f32
          "lt.reduce"(%p, %C, %m, %n) {kind = "add"} : (f32, memref<32x8xf32>, index, index) -> ()
        }) {dim = "k", size = 16 : i64, tail = 0 : i64} : () -> ()
      }) {dim = "n", size = 8 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "m", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// The tail case: 33 = `4 r 1` over 8, a window X[i + j] (j < 5).  An
// iteration of L0 reads X[base .. base + 8 + 5 - 2]: 12 elements, copied by
// a nest over i' and j (an element once per (i', j) that reaches it).  In the
// tail iteration the copy's i' level, like the reading one, covers 1 element:
// the copy fills the prefix X[32 .. 36] and stays inside X.
//      TREE:for i in 4 r 1 : L0
// TREE-NEXT: %0 <- alloc f32[i+j] (12 elements)
// TREE-NEXT: for i' in 8 : L1
// TREE-NEXT:  for j in 5 : L2
// TREE-NEXT:   %1 <- read X[i + j]
// TREE-NEXT:   %0[minsi(maxsi(i + j - i, 0), 11)] <- %1
// TREE-NEXT: for i' in 8 : L3
// TREE-NEXT:  Y[i] <- 0.0
// TREE-NEXT:  for j in 5 : L4
// TREE-NEXT:   %2 <- read %0[minsi(maxsi(i + j - i, 0), 11)]
// TREE-NEXT:   %3 <- read W[j]
// TREE-NEXT:   %4 <- mul(%2, %3)
// TREE-NEXT:   Y[i] += %4
// IR-LABEL: func.func @conv1d
// IR:         %[[T:.*]] = "lt.alloc"() {dims = ["i+j"], lt.cache = 0 : i64} : () -> memref<12xf32>
// IR-NEXT:    %[[BASE:.*]] = "lt.dim"() {dim = "i"} : () -> index
// IR:             %[[IJ:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// IR-NEXT:        %[[V:.*]] = memref.load %arg0[%[[IJ]]] : memref<37xf32>
// IR-NEXT:        %[[D:.*]] = arith.subi %[[IJ]], %[[BASE]] : index
// IR:             memref.store %[[V]], %[[T]][%{{.*}}] : memref<12xf32>
// IR-NEXT:      }) {dim = "j", size = 5 : i64, tail = 0 : i64} : () -> ()
// IR-NEXT:    }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
// IR:           memref.load %[[T]][%{{.*}}] : memref<12xf32>
// IR:         }) {dim = "i", size = 4 : i64, tail = 1 : i64} : () -> ()
func.func @conv1d(%X: memref<37xf32> {lt.name = "X"}, %W: memref<5xf32> {lt.name = "W"}, %Y: memref<33xf32> {lt.name = "Y"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i2: index):
    "lt.loop"() ({
    ^bb0(%i1: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      memref.store %zero, %Y[%i] : memref<33xf32>
      "lt.loop"() ({
      ^bb0(%i0: index):
        %j = "lt.dim"() {dim = "j"} : () -> index
        %ij = arith.addi %i, %j : index
        %x = memref.load %X[%ij] : memref<37xf32>
        %w = memref.load %W[%j] : memref<5xf32>
        %p = arith.mulf %x, %w : f32
        "lt.reduce"(%p, %Y, %i) {kind = "add"} : (f32, memref<33xf32>, index) -> ()
      }) {dim = "j", size = 5 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 1 : i64} : () -> ()
  return
}

// -----

// Refused: argument 0 is written inside L0 (a copy would hide the write).
// ERR: lt-cache.mlir:[[# @LINE + 8]]:5: error: lt-cache: Y is written inside L0; only inputs read there can be cached
func.func @written(%Y: memref<8xf32> {lt.name = "Y"}, %X: memref<8xf32> {lt.name = "X"}) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %x = memref.load %X[%i] : memref<8xf32>
    %y = memref.load %Y[%i] : memref<8xf32>
    %s = arith.addf %x, %y : f32
    memref.store %s, %Y[%i] : memref<8xf32>
  }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: L0 does not read argument 0 (the next nest does).
// ERR: lt-cache.mlir:[[# @LINE + 3]]:3: error: lt-cache: A is not read inside L0 "for i in 8"
func.func @unread(%A: memref<8xf32> {lt.name = "A"}, %B: memref<8xf32> {lt.name = "B"}) {
  %one = arith.constant 1.0 : f32
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    memref.store %one, %B[%i] : memref<8xf32>
  }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i1: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %a = memref.load %A[%i] : memref<8xf32>
    memref.store %a, %B[%i] : memref<8xf32>
  }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: a strided index `2 * i` is not a sum of lt.dim values and values
// fixed in one iteration of L0, so the read cannot be rebased onto a tile.
// ERR: lt-cache.mlir:[[# @LINE + 9]]:12: error: lt-cache: index 0 of a read of A is not a sum of lt.dim values and values fixed during one iteration of L0; cannot rebase it
func.func @strided(%A: memref<16xf32> {lt.name = "A"}, %B: memref<8xf32> {lt.name = "B"}) {
  %c2 = arith.constant 2 : index
  "lt.loop"() ({
  ^bb0(%i0: index):
    "lt.loop"() ({
    ^bb0(%i1: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %i2 = arith.muli %i, %c2 : index
      %a = memref.load %A[%i2] : memref<16xf32>
      memref.store %a, %B[%i] : memref<8xf32>
    }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}
