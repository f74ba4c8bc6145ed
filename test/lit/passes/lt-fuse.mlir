// lt-fuse{loop=L recompute=false}: L is the outermost loop of a producer nest
// that computes every element of a scratch buffer T (an lt.alloc): loops over
// T's dims (any number of levels, tails included) around a per-element
// computation that writes T only at its own element (a plain store, then
// lt.reduce).  Every later memref.load T[a, b] becomes a copy of that
// computation with T's dims bound to a, b (a reduction into a fresh rank-0
// lt.alloc right before the read); then the nest and T are erased.  This
// removes ReACT's type-3 (load-store) and type-4 (dead-value: SDDMM computes
// only the stored dot products) redundancy; a read in a loop its indices do
// not depend on would recompute each element (type 2) and is refused unless
// recompute=true.
//
// Every chunk goes through lt-fuse{loop=0}: the chunks that fuse print their
// loop tree (TREE) and IR (IR), the others refuse with a located one-line
// error (ERR).
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-fuse{loop=0})' --emit=loop-tree -o %t.tree 2>&1 | filecheck %s --check-prefix=ERR
// RUN: filecheck %s --input-file=%t.tree --check-prefix=TREE --match-full-lines --strict-whitespace
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-fuse{loop=0})' 2>/dev/null | filecheck %s --check-prefix=IR
//
// Fusing never changes the result: same checksums before and after.
// RUN: sed -n '/^func.func @dense(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=DENSESUM
// RUN: sed -n '/^func.func @dense(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-fuse{loop=0})' | filecheck %s --check-prefix=DENSESUM
// DENSESUM: arg1 f32[4, 8] checksum 22.2732
// RUN: sed -n '/^func.func @split_tails(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=TAILSUM
// RUN: sed -n '/^func.func @split_tails(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-fuse{loop=0})' | filecheck %s --check-prefix=TAILSUM
// TAILSUM: arg2 f32[33, 16] checksum -88.8694
//
// --seed 1: random indptr values whose clamped rows are not all empty.
// RUN: sed -n '/^func.func @sddmm(/,/^}/p' %s | lt-opt - --run --repeat 1 --seed 1 | filecheck %s --check-prefix=SDDMMSUM
// RUN: sed -n '/^func.func @sddmm(/,/^}/p' %s | lt-opt - --run --repeat 1 --seed 1 -p 'builtin.module(lt-fuse{loop=0})' | filecheck %s --check-prefix=SDDMMSUM
// SDDMMSUM: arg5 f32[20] checksum 1.88546
// RUN: sed -n '/^func.func @rename(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=RENAMESUM
// RUN: sed -n '/^func.func @rename(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-fuse{loop=0})' | filecheck %s --check-prefix=RENAMESUM
// RENAMESUM: arg2 f32[4, 8] checksum 76.7126
//
// recompute=true accepts the redundant recomputation the default refuses
// (TACO-style maximal fusion), with the same results.
// RUN: sed -n '/^func.func @chain(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-fuse{loop=0 recompute=true})' --emit=loop-tree | filecheck %s --check-prefix=CHAIN --match-full-lines --strict-whitespace
// RUN: sed -n '/^func.func @chain(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=CHAINSUM
// RUN: sed -n '/^func.func @chain(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-fuse{loop=0 recompute=true})' | filecheck %s --check-prefix=CHAINSUM
// CHAINSUM: arg2 f32[4, 6] checksum 76.3853
//      CHAIN:for i in 4 : L0
// CHAIN-NEXT: for j in 6 : L1
// CHAIN-NEXT:  out[i, j] <- 0.0
// CHAIN-NEXT:  for h in 8 : L2
// CHAIN-NEXT:   %0 <- read A[i, h]
// CHAIN-NEXT:   %1 <- exp(%0)
// CHAIN-NEXT:   %2 <- read C[h, j]
// CHAIN-NEXT:   %3 <- mul(%1, %2)
// CHAIN-NEXT:   out[i, j] += %3
//  CHAIN-NOT:{{.}}
// RUN: sed -n '/^func.func @csr_row(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-fuse{loop=0 recompute=true})' --emit=loop-tree | filecheck %s --check-prefix=ROW --match-full-lines --strict-whitespace
// RUN: sed -n '/^func.func @csr_row(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=ROWSUM
// RUN: sed -n '/^func.func @csr_row(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-fuse{loop=0 recompute=true})' | filecheck %s --check-prefix=ROWSUM
// ROWSUM: arg3 f32[9] checksum 6.20815
//      ROW:for i in 4 : L0
// ROW-NEXT: %0 <- read arg0[i]
// ROW-NEXT: for v1 in 0 .. minsi(maxsi(index_cast(%0), 0), 9) (bounds known at run time)
// ROW-NEXT:  %2 <- read arg2[i, 0]
// ROW-NEXT:  %3 <- exp(%2)
// ROW-NEXT:  arg3[v1] <- %3
// ROW-NEXT:  yield()
//  ROW-NOT:{{.}}
//
// The other options: a loop that does not exist, a malformed flag.
// RUN: sed -n '/^func.func @dense(/,/^}/p' %s | not lt-opt - -p 'builtin.module(lt-fuse{loop=9})' 2>&1 | filecheck %s --check-prefix=LOOP
// RUN: sed -n '/^func.func @dense(/,/^}/p' %s | not lt-opt - -p 'builtin.module(lt-fuse{loop=0 recompute=maybe})' 2>&1 | filecheck %s --check-prefix=FLAG
// LOOP: error: lt-fuse: no loop L9 (the loop tree has L0..L3)
// FLAG: error: lt-fuse: option 'recompute' expects bool, got 'maybe'

// Type 3 (load-store): T = 2A is read once per element right after; the
// copy replaces the read and T disappears.
//      TREE:for i in 4 : L0
// TREE-NEXT: for j in 8 : L1
// TREE-NEXT:  %0 <- read A[i, j]
// TREE-NEXT:  %1 <- mul(%0, 2.0)
// TREE-NEXT:  %2 <- add(%1, 1.0)
// TREE-NEXT:  out[i, j] <- %2
// TREE-NEXT:// -----
// IR-LABEL: func.func @dense
//   IR-NOT:   lt.alloc
//       IR:   %[[I:.*]] = "lt.dim"() {dim = "i"} : () -> index
//       IR:   %[[J:.*]] = "lt.dim"() {dim = "j"} : () -> index
//  IR-NEXT:   %[[A:.*]] = memref.load %{{.*}}[%[[I]], %[[J]]] : memref<4x8xf32>
//  IR-NEXT:   %[[B:.*]] = arith.mulf %[[A]], %{{.*}} : f32
//  IR-NEXT:   %[[D:.*]] = arith.addf %[[B]], %{{.*}} : f32
//  IR-NEXT:   memref.store %[[D]], %{{.*}}[%[[I]], %[[J]]] : memref<4x8xf32>
func.func @dense(%A: memref<4x8xf32> {lt.name = "A"}, %out: memref<4x8xf32> {lt.name = "out"}) {
  %two = arith.constant 2.0 : f32
  %one = arith.constant 1.0 : f32
  %T = "lt.alloc"() {dims = ["i", "j"]} : () -> memref<4x8xf32>
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %a = memref.load %A[%i, %j] : memref<4x8xf32>
      %b = arith.mulf %a, %two : f32
      memref.store %b, %T[%i, %j] : memref<4x8xf32>
    }) {dim = "j", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i1: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%j1: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %t = memref.load %T[%i, %j] : memref<4x8xf32>
      %d = arith.addf %t, %one : f32
      memref.store %d, %out[%i, %j] : memref<4x8xf32>
    }) {dim = "j", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// A matmul producer split `4 r 1` over `8` (m: 33) and `4` over `4` (n), read
// by a consumer in the other loop order: each element's reduction moves into
// a rank-0 scratch right before its read.
//      TREE:for n in 16 : L0
// TREE-NEXT: for m in 33 : L1
// TREE-NEXT:  %0 <- alloc f32[] (1 elements)
// TREE-NEXT:  %0[] <- 0.0
// TREE-NEXT:  for k in 8 : L2
// TREE-NEXT:   %1 <- read A[m, k]
// TREE-NEXT:   %2 <- read B[k, n]
// TREE-NEXT:   %3 <- mul(%1, %2)
// TREE-NEXT:   %0[] += %3
// TREE-NEXT:  %4 <- read %0[]
// TREE-NEXT:  %5 <- mul(%4, 2.0)
// TREE-NEXT:  out[m, n] <- %5
// TREE-NEXT:// -----
func.func @split_tails(%A: memref<33x8xf32> {lt.name = "A"}, %B: memref<8x16xf32> {lt.name = "B"}, %out: memref<33x16xf32> {lt.name = "out"}) {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %T = "lt.alloc"() {dims = ["m", "n"]} : () -> memref<33x16xf32>
  "lt.loop"() ({
  ^bb0(%m1: index):
    "lt.loop"() ({
    ^bb0(%m0: index):
      %m = "lt.dim"() {dim = "m"} : () -> index
      "lt.loop"() ({
      ^bb0(%n1: index):
        "lt.loop"() ({
        ^bb0(%n0: index):
          %n = "lt.dim"() {dim = "n"} : () -> index
          memref.store %zero, %T[%m, %n] : memref<33x16xf32>
          "lt.loop"() ({
          ^bb0(%k0: index):
            %k = "lt.dim"() {dim = "k"} : () -> index
            %a = memref.load %A[%m, %k] : memref<33x8xf32>
            %b = memref.load %B[%k, %n] : memref<8x16xf32>
            %p = arith.mulf %a, %b : f32
            "lt.reduce"(%p, %T, %m, %n) {kind = "add"} : (f32, memref<33x16xf32>, index, index) -> ()
          }) {dim = "k", size = 8 : i64, tail = 0 : i64} : () -> ()
        }) {dim = "n", size = 4 : i64, tail = 0 : i64} : () -> ()
      }) {dim = "n", size = 4 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "m", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 4 : i64, tail = 1 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%n2: index):
    %n = "lt.dim"() {dim = "n"} : () -> index
    "lt.loop"() ({
    ^bb0(%m2: index):
      %m = "lt.dim"() {dim = "m"} : () -> index
      %t = memref.load %T[%m, %n] : memref<33x16xf32>
      %v = arith.mulf %t, %two : f32
      memref.store %v, %out[%m, %n] : memref<33x16xf32>
    }) {dim = "m", size = 33 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "n", size = 16 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// SDDMM, out = A .* (B C^T) with A in CSR (indptr, indices, data): the
// producer computes all 8x6 dot products, the consumer reads them only at the
// stored positions.  Fused, the dot product is computed inside the scf.for
// over the row's entries, with j = indices[p]: O(nnz K) instead of O(N M K)
// (type 4, dead values).
//      TREE:for i in 8 : L0
// TREE-NEXT: %0 <- read indptr[i]
// TREE-NEXT: %1 <- read indptr[i + 1]
// TREE-NEXT: for v2 in maxsi(index_cast(%0), 0) .. minsi(index_cast(%1), 20) (bounds known at run time)
// TREE-NEXT:  %3 <- read indices[v2]
// TREE-NEXT:  %4 <- read data[v2]
// TREE-NEXT:  %5 <- alloc f32[] (1 elements)
// TREE-NEXT:  %5[] <- 0.0
// TREE-NEXT:  for k in 16 : L1
// TREE-NEXT:   %6 <- read B[i, k]
// TREE-NEXT:   %7 <- read C[minsi(maxsi(index_cast(%3), 0), 5), k]
// TREE-NEXT:   %8 <- mul(%6, %7)
// TREE-NEXT:   %5[] += %8
// TREE-NEXT:  %9 <- read %5[]
// TREE-NEXT:  %10 <- mul(%4, %9)
// TREE-NEXT:  out[v2] <- %10
// TREE-NEXT:  yield()
// TREE-NEXT:// -----
// IR-LABEL: func.func @sddmm
//   IR-NOT:   lt.alloc
//       IR:   %[[I:.*]] = "lt.dim"() {dim = "i"} : () -> index
//       IR:   scf.for %[[P:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
//       IR:     %[[J:.*]] = arith.minsi %{{.*}}, %{{.*}} : index
//       IR:     %[[S:.*]] = "lt.alloc"() {dims = []} : () -> memref<f32>
//  IR-NEXT:     memref.store %{{.*}}, %[[S]][] : memref<f32>
//  IR-NEXT:     "lt.loop"() ({
//  IR-NEXT:     ^bb0(%{{.*}}: index):
//  IR-NEXT:       %[[K:.*]] = "lt.dim"() {dim = "k"} : () -> index
//  IR-NEXT:       %[[B:.*]] = memref.load %{{.*}}[%[[I]], %[[K]]] : memref<8x16xf32>
//  IR-NEXT:       %[[C:.*]] = memref.load %{{.*}}[%[[J]], %[[K]]] : memref<6x16xf32>
//  IR-NEXT:       %[[M:.*]] = arith.mulf %[[B]], %[[C]] : f32
//  IR-NEXT:       "lt.reduce"(%[[M]], %[[S]]) {kind = "add"} : (f32, memref<f32>) -> ()
//  IR-NEXT:     }) {dim = "k", size = 16 : i64, tail = 0 : i64} : () -> ()
//  IR-NEXT:     %[[V:.*]] = memref.load %[[S]][] : memref<f32>
//  IR-NEXT:     %[[O:.*]] = arith.mulf %{{.*}}, %[[V]] : f32
//  IR-NEXT:     memref.store %[[O]], %{{.*}}[%[[P]]] : memref<20xf32>
func.func @sddmm(%indptr: memref<9xi32> {lt.name = "indptr"}, %indices: memref<20xi32> {lt.name = "indices"}, %data: memref<20xf32> {lt.name = "data"}, %B: memref<8x16xf32> {lt.name = "B"}, %C: memref<6x16xf32> {lt.name = "C"}, %out: memref<20xf32> {lt.name = "out"}) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %c20 = arith.constant 20 : index
  %T = "lt.alloc"() {dims = ["i", "j"]} : () -> memref<8x6xf32>
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      memref.store %zero, %T[%i, %j] : memref<8x6xf32>
      "lt.loop"() ({
      ^bb0(%k0: index):
        %k = "lt.dim"() {dim = "k"} : () -> index
        %b = memref.load %B[%i, %k] : memref<8x16xf32>
        %c = memref.load %C[%j, %k] : memref<6x16xf32>
        %p = arith.mulf %b, %c : f32
        "lt.reduce"(%p, %T, %i, %j) {kind = "add"} : (f32, memref<8x6xf32>, index, index) -> ()
      }) {dim = "k", size = 16 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i1: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %lo32 = memref.load %indptr[%i] : memref<9xi32>
    %i_next = arith.addi %i, %c1 : index
    %hi32 = memref.load %indptr[%i_next] : memref<9xi32>
    %lo = arith.index_cast %lo32 : i32 to index
    %hi = arith.index_cast %hi32 : i32 to index
    %lo_c = arith.maxsi %lo, %c0 : index
    %hi_c = arith.minsi %hi, %c20 : index
    scf.for %p = %lo_c to %hi_c step %c1 {
      %j32 = memref.load %indices[%p] : memref<20xi32>
      %jr = arith.index_cast %j32 : i32 to index
      %jl = arith.maxsi %jr, %c0 : index
      %j = arith.minsi %jl, %c5 : index
      %a = memref.load %data[%p] : memref<20xf32>
      %t = memref.load %T[%i, %j] : memref<8x6xf32>
      %v = arith.mulf %a, %t : f32
      memref.store %v, %out[%p] : memref<20xf32>
    }
  }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// The consumer's loop over k holds the read, so the copied k loop gets a fresh
// dim, k2 (a loop over k inside one over k would be a level of it).  Its
// unroll annotation comes along.  The two reads of one element in one block
// share one copy.
//      TREE:for i in 4 : L0
// TREE-NEXT: for k in 8 : L1
// TREE-NEXT:  %0 <- alloc f32[] (1 elements)
// TREE-NEXT:  %0[] <- 0.0
// TREE-NEXT:  for k2 in 8 : L2 [unroll 2]
// TREE-NEXT:   %1 <- read A[i, k2]
// TREE-NEXT:   %2 <- read B[k2, k]
// TREE-NEXT:   %3 <- mul(%1, %2)
// TREE-NEXT:   %0[] max= %3
// TREE-NEXT:  %4 <- read %0[]
// TREE-NEXT:  %5 <- mul(%4, %4)
// TREE-NEXT:  out[i, k] <- %5
//  TREE-NOT:{{.}}
func.func @rename(%A: memref<4x8xf32> {lt.name = "A"}, %B: memref<8x8xf32> {lt.name = "B"}, %out: memref<4x8xf32> {lt.name = "out"}) {
  %zero = arith.constant 0.0 : f32
  %T = "lt.alloc"() {dims = ["i", "j"]} : () -> memref<4x8xf32>
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      memref.store %zero, %T[%i, %j] : memref<4x8xf32>
      "lt.loop"() ({
      ^bb0(%k0: index):
        %k = "lt.dim"() {dim = "k"} : () -> index
        %a = memref.load %A[%i, %k] : memref<4x8xf32>
        %b = memref.load %B[%k, %j] : memref<8x8xf32>
        %p = arith.mulf %a, %b : f32
        "lt.reduce"(%p, %T, %i, %j) {kind = "max"} : (f32, memref<4x8xf32>, index, index) -> ()
      }) {dim = "k", size = 8 : i64, tail = 0 : i64, lt.unroll = 2} : () -> ()
    }) {dim = "j", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i1: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%k1: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      %t = memref.load %T[%i, %k] : memref<4x8xf32>
      %u = memref.load %T[%i, %k] : memref<4x8xf32>
      %v = arith.mulf %t, %u : f32
      memref.store %v, %out[%i, %k] : memref<4x8xf32>
    }) {dim = "k", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: the read T[i, h] sits in the loop over j, which does not change
// its indices: fused, each element of T = exp(A) would be computed once per j
// (ReACT's type 2, what maximal fusion introduces).
// ERR: lt-fuse.mlir:[[# @LINE + 25]]:14: error: lt-fuse: the read of %0[i, h] sits in "for j in 6", whose iterations do not change its indices: fused, each element of %0 would be computed 6 times (redundant recomputation); lt-fuse{loop=0 recompute=true} accepts that
func.func @chain(%A: memref<4x8xf32> {lt.name = "A"}, %C: memref<8x6xf32> {lt.name = "C"}, %out: memref<4x6xf32> {lt.name = "out"}) {
  %zero = arith.constant 0.0 : f32
  %T = "lt.alloc"() {dims = ["i", "h"]} : () -> memref<4x8xf32>
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%h0: index):
      %h = "lt.dim"() {dim = "h"} : () -> index
      %a = memref.load %A[%i, %h] : memref<4x8xf32>
      %e = math.exp %a : f32
      memref.store %e, %T[%i, %h] : memref<4x8xf32>
    }) {dim = "h", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i1: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%j1: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      memref.store %zero, %out[%i, %j] : memref<4x6xf32>
      "lt.loop"() ({
      ^bb0(%h1: index):
        %h = "lt.dim"() {dim = "h"} : () -> index
        %t = memref.load %T[%i, %h] : memref<4x8xf32>
        %c = memref.load %C[%h, %j] : memref<8x6xf32>
        %p = arith.mulf %t, %c : f32
        "lt.reduce"(%p, %out, %i, %j) {kind = "add"} : (f32, memref<4x6xf32>, index, index) -> ()
      }) {dim = "h", size = 8 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: the read T[i, 0] sits in an scf.for whose induction variable its
// indices do not use.
// ERR-NEXT: lt-fuse.mlir:[[# @LINE + 25]]:12: error: lt-fuse: the read of %0[i, 0] sits in an scf.for, whose iterations do not change its indices: fused, each element of %0 would be computed once per iteration of an scf.for (redundant recomputation); lt-fuse{loop=0 recompute=true} accepts that
func.func @csr_row(%indptr: memref<5xi32>, %indices: memref<9xi32>, %A: memref<4x8xf32>, %out: memref<9xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c9 = arith.constant 9 : index
  %T = "lt.alloc"() {dims = ["i", "j"]} : () -> memref<4x8xf32>
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %a = memref.load %A[%i, %j] : memref<4x8xf32>
      %e = math.exp %a : f32
      memref.store %e, %T[%i, %j] : memref<4x8xf32>
    }) {dim = "j", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i1: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %lo32 = memref.load %indptr[%i] : memref<5xi32>
    %lo = arith.index_cast %lo32 : i32 to index
    %lo_c = arith.maxsi %lo, %c0 : index
    %hi_c = arith.minsi %lo_c, %c9 : index
    scf.for %p = %c0 to %hi_c step %c1 {
      %t = memref.load %T[%i, %c0] : memref<4x8xf32>
      memref.store %t, %out[%p] : memref<9xf32>
    }
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: the nest writes a function argument, not a scratch buffer.
// ERR-NEXT: lt-fuse.mlir:[[# @LINE + 2]]:3: error: lt-fuse: L0 "for i in 4" writes arg1, a function argument; only a scratch buffer (lt.alloc) can be fused away
func.func @argument(%A: memref<4x8xf32>, %B: memref<4x8xf32>, %out: memref<4x8xf32>) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %a = memref.load %A[%i, %j] : memref<4x8xf32>
      memref.store %a, %B[%i, %j] : memref<4x8xf32>
    }) {dim = "j", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i1: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%j1: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %b = memref.load %B[%i, %j] : memref<4x8xf32>
      memref.store %b, %out[%i, %j] : memref<4x8xf32>
    }) {dim = "j", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: the loop over i holds a statement (a hoisted load) besides the
// loop over j.
// ERR-NEXT: lt-fuse.mlir:[[# @LINE + 7]]:14: error: lt-fuse: "for i in 4" holds statements besides "for j in 8"; the loops of a producer nest over %0's dims hold only the next level
func.func @hoisted(%A: memref<4x8xf32>, %out: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %T = "lt.alloc"() {dims = ["i", "j"]} : () -> memref<4x8xf32>
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %first = memref.load %A[%i, %c0] : memref<4x8xf32>
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %a = memref.load %A[%i, %j] : memref<4x8xf32>
      %d = arith.subf %a, %first : f32
      memref.store %d, %T[%i, %j] : memref<4x8xf32>
    }) {dim = "j", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i1: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%j1: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %t = memref.load %T[%i, %j] : memref<4x8xf32>
      memref.store %t, %out[%i, %j] : memref<4x8xf32>
    }) {dim = "j", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: L0 iterates b, which does not index T.
// ERR-NEXT: lt-fuse.mlir:[[# @LINE + 3]]:3: error: lt-fuse: L0 "for b in 2" iterates dim 'b', which does not index %0 (written at [i]); L must be the outermost loop of its producer nest
func.func @batch(%A: memref<2x4xf32>, %out: memref<4xf32>) {
  %T = "lt.alloc"() {dims = ["i"]} : () -> memref<4xf32>
  "lt.loop"() ({
  ^bb0(%b0: index):
    %b = "lt.dim"() {dim = "b"} : () -> index
    "lt.loop"() ({
    ^bb0(%i0: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %a = memref.load %A[%b, %i] : memref<2x4xf32>
      memref.store %a, %T[%i] : memref<4xf32>
    }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "b", size = 2 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i1: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %t = memref.load %T[%i] : memref<4xf32>
    memref.store %t, %out[%i] : memref<4xf32>
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: T[i, j + 1] is not written at the loops' dims.
// ERR-NEXT: lt-fuse.mlir:[[# @LINE + 12]]:7: error: lt-fuse: L0 "for i in 4" writes %0 at an index that is not one of its loops' dims
func.func @shifted(%A: memref<4x9xf32>, %out: memref<4x8xf32>) {
  %one = arith.constant 1 : index
  %T = "lt.alloc"() {dims = ["i", "j"]} : () -> memref<4x9xf32>
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %j1 = arith.addi %j, %one : index
      %a = memref.load %A[%i, %j] : memref<4x9xf32>
      memref.store %a, %T[%i, %j1] : memref<4x9xf32>
    }) {dim = "j", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i1: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%j1: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %t = memref.load %T[%i, %j] : memref<4x9xf32>
      memref.store %t, %out[%i, %j] : memref<4x8xf32>
    }) {dim = "j", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: the nest computes 8 of T's 9 columns.
// ERR-NEXT: lt-fuse.mlir:[[# @LINE + 6]]:5: error: lt-fuse: the nest covers 8 of %0's 9 elements along dim 'j'; it must compute every element
func.func @partial(%A: memref<4x9xf32>, %out: memref<4x8xf32>) {
  %T = "lt.alloc"() {dims = ["i", "j"]} : () -> memref<4x9xf32>
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %a = memref.load %A[%i, %j] : memref<4x9xf32>
      memref.store %a, %T[%i, %j] : memref<4x9xf32>
    }) {dim = "j", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i1: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%j1: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %t = memref.load %T[%i, %j] : memref<4x9xf32>
      memref.store %t, %out[%i, %j] : memref<4x8xf32>
    }) {dim = "j", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: the nest reads T (a reduction written as load, add, store).
// ERR-NEXT: lt-fuse.mlir:[[# @LINE + 12]]:12: error: lt-fuse: L0 "for i in 4" reads %0 inside the nest (only its own lt.reduce may)
func.func @self_read(%A: memref<4x8xf32>, %out: memref<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %T = "lt.alloc"() {dims = ["i"]} : () -> memref<4xf32>
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    memref.store %zero, %T[%i] : memref<4xf32>
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      %a = memref.load %A[%i, %k] : memref<4x8xf32>
      %s = memref.load %T[%i] : memref<4xf32>
      %n = arith.addf %s, %a : f32
      memref.store %n, %T[%i] : memref<4xf32>
    }) {dim = "k", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i1: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %t = memref.load %T[%i] : memref<4xf32>
    memref.store %t, %out[%i] : memref<4xf32>
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: T is read before the nest computes it.
// ERR-NEXT: lt-fuse.mlir:[[# @LINE + 4]]:12: error: lt-fuse: %0 is read before its producer L0
func.func @read_before(%A: memref<4xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %T = "lt.alloc"() {dims = ["i"]} : () -> memref<4xf32>
  %early = memref.load %T[%c0] : memref<4xf32>
  memref.store %early, %out[%c0] : memref<4xf32>
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %a = memref.load %A[%i] : memref<4xf32>
    memref.store %a, %T[%i] : memref<4xf32>
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i1: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %t = memref.load %T[%i] : memref<4xf32>
    memref.store %t, %out[%i] : memref<4xf32>
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: the consumer writes A, which the computation reads, before it
// reads T.
// ERR-NEXT: lt-fuse.mlir:[[# @LINE + 13]]:5: error: lt-fuse: arg0, which the computation of %0 reads, is written after L0 and before a read; the fused computation would read the new values
func.func @clobbered(%A: memref<4xf32>, %out: memref<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %T = "lt.alloc"() {dims = ["i"]} : () -> memref<4xf32>
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %a = memref.load %A[%i] : memref<4xf32>
    memref.store %a, %T[%i] : memref<4xf32>
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i1: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    memref.store %zero, %A[%i] : memref<4xf32>
    %t = memref.load %T[%i] : memref<4xf32>
    memref.store %t, %out[%i] : memref<4xf32>
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: T is read by memref.copy, not by memref.load.
// ERR-NEXT: lt-fuse.mlir:[[# @LINE + 9]]:3: error: lt-fuse: %0 is passed to memref.copy; lt-fuse replaces only plain memref.load reads
func.func @copied(%A: memref<4xf32>, %out: memref<4xf32>) {
  %T = "lt.alloc"() {dims = ["i"]} : () -> memref<4xf32>
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %a = memref.load %A[%i] : memref<4xf32>
    memref.store %a, %T[%i] : memref<4xf32>
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  memref.copy %T, %out : memref<4xf32> to memref<4xf32>
  return
}

// -----

// Refused: y = x / d is read through a column index gathered from memory
// (PageRank's A @ (x / d)): a column is gathered by every row that has it,
// so fused, each y[j] would be computed once per such row.
// ERR-NEXT: lt-fuse.mlir:[[# @LINE + 34]]:12: error: lt-fuse: the read of %0[minsi(maxsi(index_cast(%7), 0), 7)] sits in "for i in 4", whose iterations do not change its indices: fused, each element of %0 would be computed 4 times (redundant recomputation); lt-fuse{loop=0 recompute=true} accepts that
func.func @gathered(%indptr: memref<5xi32> {lt.name = "indptr"}, %indices: memref<9xi32> {lt.name = "indices"}, %x: memref<8xf32> {lt.name = "x"}, %d: memref<8xf32> {lt.name = "d"}, %out: memref<4xf32> {lt.name = "out"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c7 = arith.constant 7 : index
  %c9 = arith.constant 9 : index
  %zero = arith.constant 0.0 : f32
  %T = "lt.alloc"() {dims = ["j"]} : () -> memref<8xf32>
  "lt.loop"() ({
  ^bb0(%j0: index):
    %j = "lt.dim"() {dim = "j"} : () -> index
    %a = memref.load %x[%j] : memref<8xf32>
    %b = memref.load %d[%j] : memref<8xf32>
    %q = arith.divf %a, %b : f32
    memref.store %q, %T[%j] : memref<8xf32>
  }) {dim = "j", size = 8 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i1: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    memref.store %zero, %out[%i] : memref<4xf32>
    %lo32 = memref.load %indptr[%i] : memref<5xi32>
    %i_1 = arith.addi %i, %c1 : index
    %hi32 = memref.load %indptr[%i_1] : memref<5xi32>
    %lo = arith.index_cast %lo32 : i32 to index
    %hi = arith.index_cast %hi32 : i32 to index
    %lo_c = arith.minsi %lo, %c9 : index
    %lo_d = arith.maxsi %lo_c, %c0 : index
    %hi_c = arith.minsi %hi, %c9 : index
    %hi_d = arith.maxsi %hi_c, %c0 : index
    scf.for %p = %lo_d to %hi_d step %c1 {
      %c32 = memref.load %indices[%p] : memref<9xi32>
      %c = arith.index_cast %c32 : i32 to index
      %c_lo = arith.maxsi %c, %c0 : index
      %col = arith.minsi %c_lo, %c7 : index
      %t = memref.load %T[%col] : memref<8xf32>
      "lt.reduce"(%t, %out, %i) {kind = "add"} : (f32, memref<4xf32>, index) -> ()
    }
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: the row sums S are read at rows[p], the row of each stored
// position p of a CSR matrix (its COO row array, which the kernel frontend
// marks lt.repeats: each row's value repeats for each of its positions):
// fused, each row's sum would be computed once per stored value in the row.
// ERR-NEXT: lt-fuse.mlir:[[# @LINE + 24]]:10: error: lt-fuse: the read of %0[minsi(maxsi(index_cast(%2), 0), 3)] sits in "for p in 9", whose iterations do not change its indices: fused, each element of %0 would be computed 9 times (redundant recomputation); lt-fuse{loop=0 recompute=true} accepts that
func.func @repeats(%rows: memref<9xi32> {lt.name = "rows", lt.repeats}, %A: memref<4x8xf32> {lt.name = "A"}, %v: memref<9xf32> {lt.name = "v"}, %out: memref<9xf32> {lt.name = "out"}) {
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
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
  ^bb0(%p0: index):
    %p = "lt.dim"() {dim = "p"} : () -> index
    %r32 = memref.load %rows[%p] : memref<9xi32>
    %r = arith.index_cast %r32 : i32 to index
    %r_lo = arith.maxsi %r, %c0 : index
    %row = arith.minsi %r_lo, %c3 : index
    %s = memref.load %S[%row] : memref<4xf32>
    %x = memref.load %v[%p] : memref<9xf32>
    %q = arith.divf %x, %s : f32
    memref.store %q, %out[%p] : memref<9xf32>
  }) {dim = "p", size = 9 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: E = exp(A) is read by the row sum and by the division, in two
// loops that cannot share one copy of the computation: fused, each exp would
// be computed twice (softmax keeps E, a row at a time once shrunk).
// ERR-NEXT: lt-fuse.mlir:[[# @LINE + 24]]:12: error: lt-fuse: %0 is read in 2 places that cannot share one computation: fused, each element of %0 would be computed 2 times (redundant recomputation); lt-fuse{loop=0 recompute=true} accepts that
// ERR-NOT: error
func.func @two_readers(%A: memref<4x8xf32> {lt.name = "A"}, %out: memref<4x8xf32> {lt.name = "out"}) {
  %zero = arith.constant 0.0 : f32
  %E = "lt.alloc"() {dims = ["i", "j"]} : () -> memref<4x8xf32>
  %S = "lt.alloc"() {dims = ["i"]} : () -> memref<4xf32>
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %a = memref.load %A[%i, %j] : memref<4x8xf32>
      %e = math.exp %a : f32
      memref.store %e, %E[%i, %j] : memref<4x8xf32>
    }) {dim = "j", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i1: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    memref.store %zero, %S[%i] : memref<4xf32>
    "lt.loop"() ({
    ^bb0(%j1: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %e = memref.load %E[%i, %j] : memref<4x8xf32>
      "lt.reduce"(%e, %S, %i) {kind = "add"} : (f32, memref<4xf32>, index) -> ()
    }) {dim = "j", size = 8 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%j2: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %e = memref.load %E[%i, %j] : memref<4x8xf32>
      %s = memref.load %S[%i] : memref<4xf32>
      %q = arith.divf %e, %s : f32
      memref.store %q, %out[%i, %j] : memref<4x8xf32>
    }) {dim = "j", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}
