// lt-hoist{loop=L}: compute an expression that is invariant in L (ReACT's
// loop-invariant redundancy) once, in a new nest right before L over the
// dims of the loops inside L that it reads, into a scratch buffer that L
// then reads.
//
// Every chunk below goes through the same pipeline, lt-hoist{loop=2} (L1
// initialises A, L2 is the loop over k): the chunks that hoist print their
// loop tree (TREE), the others refuse with a located one-line error (ERR).
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-hoist{loop=2})' --emit=loop-tree -o %t.tree 2>&1 | filecheck %s --check-prefix=ERR
// RUN: filecheck %s --input-file=%t.tree --check-prefix=TREE --match-full-lines --strict-whitespace
// RUN: sed -n '/^func.func @react(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-hoist{loop=2})' | filecheck %s --check-prefix=IR
//
// Same checksums before and after (the hoisted ops compute the same values
// from the same inputs: bit-identical).
// RUN: sed -n '/^func.func @react(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=REACTSUM
// RUN: sed -n '/^func.func @react(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-hoist{loop=2})' | filecheck %s --check-prefix=REACTSUM
// REACTSUM: arg4 f32[4, 6] checksum 13.9092
// RUN: sed -n '/^func.func @tail(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=TAILSUM
// RUN: sed -n '/^func.func @tail(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-hoist{loop=2})' | filecheck %s --check-prefix=TAILSUM
// TAILSUM: arg4 f32[4, 6] checksum -19.8945
// RUN: sed -n '/^func.func @rank0(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=RANK0SUM
// RUN: sed -n '/^func.func @rank0(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-hoist{loop=2})' | filecheck %s --check-prefix=RANK0SUM
// RANK0SUM: arg4 f32[4, 6] checksum 7.46205

// ReACT's example A = (B + E) * (C @ D), maximally fused: B[i, j] + E[i, j]
// does not depend on k.  It is computed once per (i, j) in a new j loop
// before L2 into a scratch over j, which the k loop reads.
//      TREE:for i in 4 : L0
// TREE-NEXT: for j in 6 : L1
// TREE-NEXT:  A[i, j] <- 0.0
// TREE-NEXT: %0 <- alloc f32[j] (6 elements)
// TREE-NEXT: for j in 6 : L2
// TREE-NEXT:  %1 <- read B[i, j]
// TREE-NEXT:  %2 <- read E[i, j]
// TREE-NEXT:  %3 <- add(%1, %2)
// TREE-NEXT:  %0[j] <- %3
// TREE-NEXT: for k in 8 : L3
// TREE-NEXT:  for j in 6 : L4
// TREE-NEXT:   %4 <- read %0[j]
// TREE-NEXT:   %5 <- read C[i, k]
// TREE-NEXT:   %6 <- read D[k, j]
// TREE-NEXT:   %7 <- mul(%5, %6)
// TREE-NEXT:   %8 <- mul(%4, %7)
// TREE-NEXT:   A[i, j] += %8
// TREE-NEXT:// -----
// IR-LABEL: func.func @react
// IR:           %[[T:.*]] = "lt.alloc"() {dims = ["j"]} : () -> memref<6xf32>
// IR-NEXT:      "lt.loop"() ({
// IR-NEXT:      ^bb0(%{{.*}}: index):
// IR-NEXT:        %[[J:.*]] = "lt.dim"() {dim = "j"} : () -> index
// IR-NEXT:        %[[B:.*]] = memref.load %arg0[%{{.*}}, %[[J]]] : memref<4x6xf32>
// IR-NEXT:        %[[E:.*]] = memref.load %arg1[%{{.*}}, %[[J]]] : memref<4x6xf32>
// IR-NEXT:        %[[S:.*]] = arith.addf %[[B]], %[[E]] : f32
// IR-NEXT:        memref.store %[[S]], %[[T]][%[[J]]] : memref<6xf32>
// IR-NEXT:      }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
// IR-NEXT:      "lt.loop"() ({
// IR-NEXT:      ^bb0(%{{.*}}: index):
// IR-NEXT:        %{{.*}} = "lt.dim"() {dim = "k"} : () -> index
// IR-NEXT:        "lt.loop"() ({
// IR-NEXT:        ^bb0(%{{.*}}: index):
// IR-NEXT:          %[[J2:.*]] = "lt.dim"() {dim = "j"} : () -> index
// IR-NEXT:          %[[TS:.*]] = memref.load %[[T]][%[[J2]]] : memref<6xf32>
// IR-NOT:           arith.addf
// IR:               %{{.*}} = arith.mulf %[[TS]], %{{.*}} : f32
func.func @react(%B: memref<4x6xf32> {lt.name = "B"}, %E: memref<4x6xf32> {lt.name = "E"}, %C: memref<4x8xf32> {lt.name = "C"}, %D: memref<8x6xf32> {lt.name = "D"}, %A: memref<4x6xf32> {lt.name = "A"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      memref.store %zero, %A[%i, %j] : memref<4x6xf32>
    }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      "lt.loop"() ({
      ^bb0(%j0: index):
        %j = "lt.dim"() {dim = "j"} : () -> index
        %b = memref.load %B[%i, %j] : memref<4x6xf32>
        %e = memref.load %E[%i, %j] : memref<4x6xf32>
        %s = arith.addf %b, %e : f32
        %c = memref.load %C[%i, %k] : memref<4x8xf32>
        %d = memref.load %D[%k, %j] : memref<8x6xf32>
        %cd = arith.mulf %c, %d : f32
        %p = arith.mulf %s, %cd : f32
        "lt.reduce"(%p, %A, %i, %j) {kind = "add"} : (f32, memref<4x6xf32>, index, index) -> ()
      }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "k", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// k of extent 7 split `2 r 1` over `3`: L2 is the outer level, so the
// expression is also inside the inner level of k (and its tail iteration).
// TREE-NEXT:for i in 4 : L0
// TREE-NEXT: for j in 6 : L1
// TREE-NEXT:  A[i, j] <- 0.0
// TREE-NEXT: %0 <- alloc f32[j] (6 elements)
// TREE-NEXT: for j in 6 : L2
// TREE-NEXT:  %1 <- read B[i, j]
// TREE-NEXT:  %2 <- read E[i, j]
// TREE-NEXT:  %3 <- add(%1, %2)
// TREE-NEXT:  %0[j] <- %3
// TREE-NEXT: for k in 2 r 1 : L3
// TREE-NEXT:  for k' in 3 : L4
// TREE-NEXT:   for j in 6 : L5
// TREE-NEXT:    %4 <- read %0[j]
// TREE-NEXT:    %5 <- read C[i, k]
// TREE-NEXT:    %6 <- read D[k, j]
// TREE-NEXT:    %7 <- mul(%5, %6)
// TREE-NEXT:    %8 <- mul(%4, %7)
// TREE-NEXT:    A[i, j] += %8
// TREE-NEXT:// -----
func.func @tail(%B: memref<4x6xf32> {lt.name = "B"}, %E: memref<4x6xf32> {lt.name = "E"}, %C: memref<4x7xf32> {lt.name = "C"}, %D: memref<7x6xf32> {lt.name = "D"}, %A: memref<4x6xf32> {lt.name = "A"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      memref.store %zero, %A[%i, %j] : memref<4x6xf32>
    }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%k1: index):
      "lt.loop"() ({
      ^bb0(%k0: index):
        %k = "lt.dim"() {dim = "k"} : () -> index
        "lt.loop"() ({
        ^bb0(%j0: index):
          %j = "lt.dim"() {dim = "j"} : () -> index
          %b = memref.load %B[%i, %j] : memref<4x6xf32>
          %e = memref.load %E[%i, %j] : memref<4x6xf32>
          %s = arith.addf %b, %e : f32
          %c = memref.load %C[%i, %k] : memref<4x7xf32>
          %d = memref.load %D[%k, %j] : memref<7x6xf32>
          %cd = arith.mulf %c, %d : f32
          %p = arith.mulf %s, %cd : f32
          "lt.reduce"(%p, %A, %i, %j) {kind = "add"} : (f32, memref<4x6xf32>, index, index) -> ()
      }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
      }) {dim = "k", size = 3 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "k", size = 2 : i64, tail = 1 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// B[i, i] * E[i, i] reads no dim iterated inside L2: the scratch is
// rank 0 and the statements come right before L2.
// TREE-NEXT:for i in 4 : L0
// TREE-NEXT: for j in 6 : L1
// TREE-NEXT:  A[i, j] <- 0.0
// TREE-NEXT: %0 <- alloc f32[] (1 elements)
// TREE-NEXT: %1 <- read B[i, i]
// TREE-NEXT: %2 <- read E[i, i]
// TREE-NEXT: %3 <- mul(%1, %2)
// TREE-NEXT: %0[] <- %3
// TREE-NEXT: for k in 8 : L2
// TREE-NEXT:  for j in 6 : L3
// TREE-NEXT:   %4 <- read %0[]
// TREE-NEXT:   %5 <- read C[i, k]
// TREE-NEXT:   %6 <- read D[k, j]
// TREE-NEXT:   %7 <- mul(%5, %6)
// TREE-NEXT:   %8 <- mul(%4, %7)
// TREE-NEXT:   A[i, j] += %8
//  TREE-NOT:{{.}}
func.func @rank0(%B: memref<4x6xf32> {lt.name = "B"}, %E: memref<4x6xf32> {lt.name = "E"}, %C: memref<4x8xf32> {lt.name = "C"}, %D: memref<8x6xf32> {lt.name = "D"}, %A: memref<4x6xf32> {lt.name = "A"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      memref.store %zero, %A[%i, %j] : memref<4x6xf32>
    }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      "lt.loop"() ({
      ^bb0(%j0: index):
        %j = "lt.dim"() {dim = "j"} : () -> index
        %xi = memref.load %B[%i, %i] : memref<4x6xf32>
        %yi = memref.load %E[%i, %i] : memref<4x6xf32>
        %s = arith.mulf %xi, %yi : f32
        %c = memref.load %C[%i, %k] : memref<4x8xf32>
        %d = memref.load %D[%k, %j] : memref<8x6xf32>
        %cd = arith.mulf %c, %d : f32
        %p = arith.mulf %s, %cd : f32
        "lt.reduce"(%p, %A, %i, %j) {kind = "add"} : (f32, memref<4x6xf32>, index, index) -> ()
      }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "k", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Every arithmetic op depends on k: nothing to hoist.
// ERR: lt-hoist.mlir:[[# @LINE + 19]]:14: error: lt-hoist: no expression in L2 "for k in 8" is invariant: 'arith.mulf' depends on dim 'k'
func.func @all_k(%B: memref<4x6xf32> {lt.name = "B"}, %E: memref<4x6xf32> {lt.name = "E"}, %C: memref<4x8xf32> {lt.name = "C"}, %D: memref<8x6xf32> {lt.name = "D"}, %A: memref<4x6xf32> {lt.name = "A"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      memref.store %zero, %A[%i, %j] : memref<4x6xf32>
    }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      "lt.loop"() ({
      ^bb0(%j0: index):
        %j = "lt.dim"() {dim = "j"} : () -> index
        %c = memref.load %C[%i, %k] : memref<4x8xf32>
        %d = memref.load %D[%k, %j] : memref<8x6xf32>
        %p = arith.mulf %c, %d : f32
        "lt.reduce"(%p, %A, %i, %j) {kind = "add"} : (f32, memref<4x6xf32>, index, index) -> ()
      }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "k", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// B[i, j] is invariant but is a lone load: no gain.
// ERR-NEXT: lt-hoist.mlir:[[# @LINE + 17]]:14: error: lt-hoist: only loads are invariant in L2 "for k in 8": a lone load is no gain, and every arithmetic op depends on dim 'k'
func.func @only_loads(%B: memref<4x6xf32> {lt.name = "B"}, %E: memref<4x6xf32> {lt.name = "E"}, %C: memref<4x8xf32> {lt.name = "C"}, %D: memref<8x6xf32> {lt.name = "D"}, %A: memref<4x6xf32> {lt.name = "A"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      memref.store %zero, %A[%i, %j] : memref<4x6xf32>
    }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      "lt.loop"() ({
      ^bb0(%j0: index):
        %j = "lt.dim"() {dim = "j"} : () -> index
        %b = memref.load %B[%i, %j] : memref<4x6xf32>
        %c = memref.load %C[%i, %k] : memref<4x8xf32>
        %d = memref.load %D[%k, %j] : memref<8x6xf32>
        %cd = arith.mulf %c, %d : f32
        %p = arith.mulf %b, %cd : f32
        "lt.reduce"(%p, %A, %i, %j) {kind = "add"} : (f32, memref<4x6xf32>, index, index) -> ()
      }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "k", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// j is split into two levels inside L2: the scratch needs one level per dim.
// ERR-NEXT: lt-hoist.mlir:[[# @LINE + 21]]:16: error: lt-hoist: dim 'j' is split into 2 levels inside L2 "for k in 8" around the invariant expression: the scratch buffer needs one level per dim (hoist before splitting)
func.func @split_j(%B: memref<4x6xf32> {lt.name = "B"}, %E: memref<4x6xf32> {lt.name = "E"}, %C: memref<4x8xf32> {lt.name = "C"}, %D: memref<8x6xf32> {lt.name = "D"}, %A: memref<4x6xf32> {lt.name = "A"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      memref.store %zero, %A[%i, %j] : memref<4x6xf32>
    }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      "lt.loop"() ({
      ^bb0(%j1: index):
        "lt.loop"() ({
        ^bb0(%j0: index):
          %j = "lt.dim"() {dim = "j"} : () -> index
          %b = memref.load %B[%i, %j] : memref<4x6xf32>
          %e = memref.load %E[%i, %j] : memref<4x6xf32>
          %s = arith.addf %b, %e : f32
          %c = memref.load %C[%i, %k] : memref<4x8xf32>
          %d = memref.load %D[%k, %j] : memref<8x6xf32>
          %cd = arith.mulf %c, %d : f32
          %p = arith.mulf %s, %cd : f32
          "lt.reduce"(%p, %A, %i, %j) {kind = "add"} : (f32, memref<4x6xf32>, index, index) -> ()
        }) {dim = "j", size = 2 : i64, tail = 0 : i64} : () -> ()
      }) {dim = "j", size = 3 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "k", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// The invariant sum is computed under an scf.if inside L2.
// ERR-NEXT: lt-hoist.mlir:[[# @LINE + 21]]:16: error: lt-hoist: the invariant expression is computed under a condition ('scf.if') inside L2 "for k in 8": computed before the loop it would be computed where the program might not (out of bounds)
func.func @guarded(%B: memref<4x6xf32> {lt.name = "B"}, %E: memref<4x6xf32> {lt.name = "E"}, %C: memref<4x8xf32> {lt.name = "C"}, %D: memref<8x6xf32> {lt.name = "D"}, %A: memref<4x6xf32> {lt.name = "A"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      memref.store %zero, %A[%i, %j] : memref<4x6xf32>
    }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      "lt.loop"() ({
      ^bb0(%j0: index):
        %j = "lt.dim"() {dim = "j"} : () -> index
        %in = arith.cmpi ule, %j, %k : index
        scf.if %in {
          %b = memref.load %B[%i, %j] : memref<4x6xf32>
          %e = memref.load %E[%i, %j] : memref<4x6xf32>
          %s = arith.addf %b, %e : f32
          %c = memref.load %C[%i, %k] : memref<4x8xf32>
          %d = memref.load %D[%k, %j] : memref<8x6xf32>
          %cd = arith.mulf %c, %d : f32
          %p = arith.mulf %s, %cd : f32
          "lt.reduce"(%p, %A, %i, %j) {kind = "add"} : (f32, memref<4x6xf32>, index, index) -> ()
        }
      }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "k", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// L2 is parallel: the hoisted nest would run outside that mapping.
// ERR-NEXT: lt-hoist.mlir:[[# @LINE + 11]]:5: error: lt-hoist: L2 "for k in 8" is annotated parallel: the hoisted nest would run before it, outside that mapping (hoist before annotating)
func.func @parallel(%B: memref<4x6xf32> {lt.name = "B"}, %E: memref<4x6xf32> {lt.name = "E"}, %C: memref<4x8xf32> {lt.name = "C"}, %D: memref<8x6xf32> {lt.name = "D"}, %A: memref<4x6xf32> {lt.name = "A"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      memref.store %zero, %A[%i, %j] : memref<4x6xf32>
    }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      "lt.loop"() ({
      ^bb0(%j0: index):
        %j = "lt.dim"() {dim = "j"} : () -> index
        %b = memref.load %B[%i, %j] : memref<4x6xf32>
        %e = memref.load %E[%i, %j] : memref<4x6xf32>
        %s = arith.addf %b, %e : f32
        %c = memref.load %C[%i, %k] : memref<4x8xf32>
        %d = memref.load %D[%k, %j] : memref<8x6xf32>
        %cd = arith.mulf %c, %d : f32
        %p = arith.mulf %s, %cd : f32
        "lt.reduce"(%p, %A, %i, %j) {kind = "add"} : (f32, memref<4x6xf32>, index, index) -> ()
      }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "k", lt.parallel, size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}
