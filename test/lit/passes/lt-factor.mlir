// lt-factor{loop=L}: take the factors of an add reduction's product that do
// not change across L out of it (the distributive law): L sums the rest into
// a fresh rank-0 scratch, and one reduction after L multiplies that sum by
// them.  Floats need reassociation allowed (lt.fastmath "fast", or a flag
// list with reassoc); integers do not.
//
// Every chunk below goes through the same pipeline, lt-factor{loop=1}: the
// chunks that factor print their loop tree (TREE) and IR (IR), the others
// refuse with a located one-line error (ERR).
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-factor{loop=1})' --emit=loop-tree -o %t.tree 2>&1 | filecheck %s --check-prefix=ERR
// RUN: filecheck %s --input-file=%t.tree --check-prefix=TREE --match-full-lines --strict-whitespace
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-factor{loop=1})' 2>/dev/null | filecheck %s --check-prefix=IR
//
// Same checksums before and after (the inputs are seeded; the sums here
// round alike both ways, and the integer one is exact).
// RUN: sed -n '/^func.func @row_scale(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=SUM
// RUN: sed -n '/^func.func @row_scale(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-factor{loop=1})' | filecheck %s --check-prefix=SUM
// SUM: arg2 f32[3] checksum 1.00594
// RUN: sed -n '/^func.func @tail(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=TAILSUM
// RUN: sed -n '/^func.func @tail(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-factor{loop=1})' | filecheck %s --check-prefix=TAILSUM
// TAILSUM: arg2 f32[5] checksum -14.2977
// RUN: sed -n '/^func.func @chain(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=CHAINSUM
// RUN: sed -n '/^func.func @chain(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-factor{loop=1})' | filecheck %s --check-prefix=CHAINSUM
// CHAINSUM: arg3 f32[6] checksum -26.0893
// RUN: sed -n '/^func.func @int_scale(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=INTSUM
// RUN: sed -n '/^func.func @int_scale(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-factor{loop=1})' | filecheck %s --check-prefix=INTSUM
// INTSUM: arg2 i32[4] checksum 33423
// RUN: sed -n '/^func.func @normalised(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=NORMSUM
// RUN: sed -n '/^func.func @normalised(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-factor{loop=1})' | filecheck %s --check-prefix=NORMSUM
// NORMSUM: arg3 f32[3, 4] checksum -21.1927
// RUN: sed -n '/^func.func @normalised_tail(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=NTAILSUM
// RUN: sed -n '/^func.func @normalised_tail(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-factor{loop=1})' | filecheck %s --check-prefix=NTAILSUM
// NTAILSUM: arg3 f32[3, 5] checksum 46.2456
//
// @default_mode has no lt.fastmath (refused below); --fastmath=fast allows it.
// RUN: sed -n '/^func.func @default_mode(/,/^}/p' %s | lt-opt - --fastmath=fast -p 'builtin.module(lt-factor{loop=1})' --emit=loop-tree | filecheck %s --check-prefix=FAST --match-full-lines --strict-whitespace
//      FAST:for i in 3 : L0
// FAST-NEXT: %0 <- alloc f32[] (1 elements)
// FAST-NEXT: %0[] <- 0.0
// FAST-NEXT: for k in 4 : L1
// FAST-NEXT:  %1 <- read A[i, k]
// FAST-NEXT:  %0[] += %1
// FAST-NEXT: %2 <- read b[i]
// FAST-NEXT: %3 <- read %0[]
// FAST-NEXT: %4 <- mul(%2, %3)
// FAST-NEXT: S[i] += %4
//  FAST-NOT:{{.}}

// Row sums scaled by b[i]: S[i] = b[i] * sum_k A[i, k].  b[i] is read
// after the k loop, once per row; the loop sums A[i, k] alone.
//      TREE:for i in 3 : L0
// TREE-NEXT: S[i] <- 0.0
// TREE-NEXT: %0 <- alloc f32[] (1 elements)
// TREE-NEXT: %0[] <- 0.0
// TREE-NEXT: for k in 4 : L1
// TREE-NEXT:  %1 <- read A[i, k]
// TREE-NEXT:  %0[] += %1
// TREE-NEXT: %2 <- read b[i]
// TREE-NEXT: %3 <- read %0[]
// TREE-NEXT: %4 <- mul(%2, %3)
// TREE-NEXT: S[i] += %4
// TREE-NEXT:// -----
// The scratch's zero is made at the start of the block (constants and
// index computations come before the statements around them).
// IR-LABEL: func.func @row_scale
// IR:           ^bb0(%{{.*}}: index):
// IR-NEXT:      %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// IR-NEXT:      %[[I:.*]] = "lt.dim"() {dim = "i"} : () -> index
// IR-NEXT:      memref.store %{{.*}}, %[[S:.*]][%[[I]]] : memref<3xf32>
// IR-NEXT:      %[[T:.*]] = "lt.alloc"() {dims = []} : () -> memref<f32>
// IR-NEXT:      memref.store %[[ZERO]], %[[T]][] : memref<f32>
// IR-NEXT:      "lt.loop"() ({
// IR-NEXT:      ^bb0(%{{.*}}: index):
// IR-NEXT:        %[[K:.*]] = "lt.dim"() {dim = "k"} : () -> index
// IR-NEXT:        %[[A:.*]] = memref.load %{{.*}}[%[[I]], %[[K]]] : memref<3x4xf32>
// IR-NEXT:        "lt.reduce"(%[[A]], %[[T]]) {kind = "add"} : (f32, memref<f32>) -> ()
// IR-NEXT:      }) {dim = "k", size = 4 : i64, tail = 0 : i64} : () -> ()
// IR-NEXT:      %[[B:.*]] = memref.load %{{.*}}[%[[I]]] : memref<3xf32>
// IR-NEXT:      %[[TOT:.*]] = memref.load %[[T]][] : memref<f32>
// IR-NEXT:      %[[P:.*]] = arith.mulf %[[B]], %[[TOT]] : f32
// IR-NEXT:      "lt.reduce"(%[[P]], %[[S]], %[[I]]) {kind = "add"} : (f32, memref<3xf32>, index) -> ()
// IR-NEXT:    }) {dim = "i", size = 3 : i64, tail = 0 : i64} : () -> ()
func.func @row_scale(%A: memref<3x4xf32> {lt.name = "A"}, %b: memref<3xf32> {lt.name = "b"}, %S: memref<3xf32> {lt.name = "S"}) attributes {lt.fastmath = "fast"} {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    memref.store %zero, %S[%i] : memref<3xf32>
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      %a = memref.load %A[%i, %k] : memref<3x4xf32>
      %c = memref.load %b[%i] : memref<3xf32>
      %p = arith.mulf %a, %c : f32
      "lt.reduce"(%p, %S, %i) {kind = "add"} : (f32, memref<3xf32>, index) -> ()
    }) {dim = "k", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 3 : i64, tail = 0 : i64} : () -> ()
  return
}


// -----

// A quotient by a value invariant in L1 (softmax's normalisation before
// `@ V`: O[i, e] += P[i, j] / s[i] * V[j, e]) whose accumulator moves along e
// inside L1: the sum over j goes to a scratch over e, zeroed by a nest over
// e before L1; after it, a nest over e divides each sum by s[i].
// TREE-NEXT:for i in 3 : L0
// TREE-NEXT: %0 <- alloc f32[e] (4 elements)
// TREE-NEXT: for e in 4 : L1
// TREE-NEXT:  %0[e] <- 0.0
// TREE-NEXT: for j in 5 : L2
// TREE-NEXT:  %1 <- read P[i, j]
// TREE-NEXT:  for e in 4 : L3
// TREE-NEXT:   %2 <- read V[j, e]
// TREE-NEXT:   %3 <- mul(%1, %2)
// TREE-NEXT:   %0[e] += %3
// TREE-NEXT: for e in 4 : L4
// TREE-NEXT:  %4 <- read s[i]
// TREE-NEXT:  %5 <- read %0[e]
// TREE-NEXT:  %6 <- div(%5, %4)
// TREE-NEXT:  O[i, e] += %6
// TREE-NEXT:// -----
func.func @normalised(%P: memref<3x5xf32> {lt.name = "P"}, %s: memref<3xf32> {lt.name = "s"}, %V: memref<5x4xf32> {lt.name = "V"}, %O: memref<3x4xf32> {lt.name = "O"}) attributes {lt.fastmath = "fast"} {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %p = memref.load %P[%i, %j] : memref<3x5xf32>
      %t = memref.load %s[%i] : memref<3xf32>
      %q = arith.divf %p, %t : f32
      "lt.loop"() ({
      ^bb0(%e0: index):
        %e = "lt.dim"() {dim = "e"} : () -> index
        %v = memref.load %V[%j, %e] : memref<5x4xf32>
        %pv = arith.mulf %q, %v : f32
        "lt.reduce"(%pv, %O, %i, %e) {kind = "add"} : (f32, memref<3x4xf32>, index, index) -> ()
      }) {dim = "e", size = 4 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "j", size = 5 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 3 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// The tail case: e in 2 tiles of 2 and a tail of 1 inside L1; the scratch's
// nests repeat those levels.
// TREE-NEXT:for i in 3 : L0
// TREE-NEXT: %0 <- alloc f32[e] (5 elements)
// TREE-NEXT: for e in 2 r 1 : L1
// TREE-NEXT:  for e' in 2 : L2
// TREE-NEXT:   %0[e] <- 0.0
// TREE-NEXT: for j in 5 : L3
// TREE-NEXT:  %1 <- read P[i, j]
// TREE-NEXT:  for e in 2 r 1 : L4
// TREE-NEXT:   for e' in 2 : L5
// TREE-NEXT:    %2 <- read V[j, e]
// TREE-NEXT:    %3 <- mul(%1, %2)
// TREE-NEXT:    %0[e] += %3
// TREE-NEXT: for e in 2 r 1 : L6
// TREE-NEXT:  for e' in 2 : L7
// TREE-NEXT:   %4 <- read s[i]
// TREE-NEXT:   %5 <- read %0[e]
// TREE-NEXT:   %6 <- div(%5, %4)
// TREE-NEXT:   O[i, e] += %6
// TREE-NEXT:// -----
func.func @normalised_tail(%P: memref<3x5xf32> {lt.name = "P"}, %s: memref<3xf32> {lt.name = "s"}, %V: memref<5x5xf32> {lt.name = "V"}, %O: memref<3x5xf32> {lt.name = "O"}) attributes {lt.fastmath = "fast"} {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %p = memref.load %P[%i, %j] : memref<3x5xf32>
      %t = memref.load %s[%i] : memref<3xf32>
      %q = arith.divf %p, %t : f32
      "lt.loop"() ({
      ^bb0(%e0: index):
        "lt.loop"() ({
        ^bb0(%e1: index):
          %e = "lt.dim"() {dim = "e"} : () -> index
          %v = memref.load %V[%j, %e] : memref<5x5xf32>
          %pv = arith.mulf %q, %v : f32
          "lt.reduce"(%pv, %O, %i, %e) {kind = "add"} : (f32, memref<3x5xf32>, index, index) -> ()
        }) {dim = "e", size = 2 : i64, tail = 0 : i64} : () -> ()
      }) {dim = "e", size = 2 : i64, tail = 1 : i64} : () -> ()
    }) {dim = "j", size = 5 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 3 : i64, tail = 0 : i64} : () -> ()
  return
}
// -----

// k split `4 r 1` over `8` (33 elements): L1 is the outer level, so the
// scratch sums over both levels, the tail iteration included.  The row
// index and b[i] are computed inside the inner level; they are recomputed
// after L1 (an lt.dim of i there means the same row).
// TREE-NEXT:for i in 5 : L0
// TREE-NEXT: S[i] <- 0.0
// TREE-NEXT: %0 <- alloc f32[] (1 elements)
// TREE-NEXT: %0[] <- 0.0
// TREE-NEXT: for k in 4 r 1 : L1
// TREE-NEXT:  for k' in 8 : L2
// TREE-NEXT:   %1 <- read A[i, k]
// TREE-NEXT:   %0[] += %1
// TREE-NEXT: %2 <- read b[i]
// TREE-NEXT: %3 <- read %0[]
// TREE-NEXT: %4 <- mul(%2, %3)
// TREE-NEXT: S[i] += %4
// TREE-NEXT:// -----
// IR-LABEL: func.func @tail
// IR:           "lt.reduce"(%{{.*}}, %[[T2:.*]]) {kind = "add"} : (f32, memref<f32>) -> ()
// IR-NEXT:    }) {dim = "k", size = 8 : i64, tail = 0 : i64} : () -> ()
// IR-NEXT:  }) {dim = "k", size = 4 : i64, tail = 1 : i64} : () -> ()
// IR-NEXT:  %[[I2:.*]] = "lt.dim"() {dim = "i"} : () -> index
// IR-NEXT:  %[[B2:.*]] = memref.load %{{.*}}[%[[I2]]] : memref<5xf32>
// IR-NEXT:  %[[TOT2:.*]] = memref.load %[[T2]][] : memref<f32>
// IR-NEXT:  %[[P2:.*]] = arith.mulf %[[B2]], %[[TOT2]] : f32
// IR-NEXT:  "lt.reduce"(%[[P2]], %{{.*}}, %[[I2]]) {kind = "add"} : (f32, memref<5xf32>, index) -> ()
func.func @tail(%A: memref<5x33xf32> {lt.name = "A"}, %b: memref<5xf32> {lt.name = "b"}, %S: memref<5xf32> {lt.name = "S"}) attributes {lt.fastmath = "fast"} {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    memref.store %zero, %S[%i] : memref<5xf32>
    "lt.loop"() ({
    ^bb0(%k1: index):
      "lt.loop"() ({
      ^bb0(%k0: index):
        %k = "lt.dim"() {dim = "k"} : () -> index
        %a = memref.load %A[%i, %k] : memref<5x33xf32>
        %i2 = "lt.dim"() {dim = "i"} : () -> index
        %c = memref.load %b[%i2] : memref<5xf32>
        %p = arith.mulf %c, %a : f32
        "lt.reduce"(%p, %S, %i2) {kind = "add"} : (f32, memref<5xf32>, index) -> ()
      }) {dim = "k", size = 8 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "k", size = 4 : i64, tail = 1 : i64} : () -> ()
  }) {dim = "i", size = 5 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// A chain (b[i] * A[i, k]) * (B[k] * 2.0): the invariant factors b[i] and
// 2.0 leave the loop (multiplied in their order), the varying ones A[i, k]
// and B[k] stay.
// TREE-NEXT:for i in 6 : L0
// TREE-NEXT: S[i] <- 0.0
// TREE-NEXT: %0 <- alloc f32[] (1 elements)
// TREE-NEXT: %0[] <- 0.0
// TREE-NEXT: for k in 16 : L1
// TREE-NEXT:  %1 <- read A[i, k]
// TREE-NEXT:  %2 <- read B[k]
// TREE-NEXT:  %3 <- mul(%1, %2)
// TREE-NEXT:  %0[] += %3
// TREE-NEXT: %4 <- read b[i]
// TREE-NEXT: %5 <- mul(%4, 2.0)
// TREE-NEXT: %6 <- read %0[]
// TREE-NEXT: %7 <- mul(%5, %6)
// TREE-NEXT: S[i] += %7
// TREE-NEXT:// -----
func.func @chain(%A: memref<6x16xf32> {lt.name = "A"}, %B: memref<16xf32> {lt.name = "B"}, %b: memref<6xf32> {lt.name = "b"}, %S: memref<6xf32> {lt.name = "S"}) attributes {lt.fastmath = "fast"} {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    memref.store %zero, %S[%i] : memref<6xf32>
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      %a = memref.load %A[%i, %k] : memref<6x16xf32>
      %c = memref.load %b[%i] : memref<6xf32>
      %x = memref.load %B[%k] : memref<16xf32>
      %l = arith.mulf %c, %a : f32
      %r = arith.mulf %x, %two : f32
      %p = arith.mulf %l, %r : f32
      "lt.reduce"(%p, %S, %i) {kind = "add"} : (f32, memref<6xf32>, index) -> ()
    }) {dim = "k", size = 16 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 6 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Integers need no fastmath mode: wrapping sums are exact in any order.
// TREE-NEXT:for i in 4 : L0
// TREE-NEXT: S[i] <- 0
// TREE-NEXT: %0 <- alloc i32[] (1 elements)
// TREE-NEXT: %0[] <- 0
// TREE-NEXT: for k in 8 : L1
// TREE-NEXT:  %1 <- read A[i, k]
// TREE-NEXT:  %0[] += %1
// TREE-NEXT: %2 <- read b[i]
// TREE-NEXT: %3 <- read %0[]
// TREE-NEXT: %4 <- mul(%2, %3)
// TREE-NEXT: S[i] += %4
//  TREE-NOT:{{.}}
// IR-LABEL: func.func @int_scale
// IR:           ^bb0(%{{.*}}: index):
// IR-NEXT:      %[[ZI:.*]] = arith.constant 0 : i32
// IR:           %[[TI:.*]] = "lt.alloc"() {dims = []} : () -> memref<i32>
// IR-NEXT:      memref.store %[[ZI]], %[[TI]][] : memref<i32>
// IR:           arith.muli
func.func @int_scale(%A: memref<4x8xi32> {lt.name = "A"}, %b: memref<4xi32> {lt.name = "b"}, %S: memref<4xi32> {lt.name = "S"}) {
  %zero = arith.constant 0 : i32
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    memref.store %zero, %S[%i] : memref<4xi32>
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      %a = memref.load %A[%i, %k] : memref<4x8xi32>
      %c = memref.load %b[%i] : memref<4xi32>
      %p = arith.muli %c, %a : i32
      "lt.reduce"(%p, %S, %i) {kind = "add"} : (i32, memref<4xi32>, index) -> ()
    }) {dim = "k", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: a max reduction; b[i] * max(x) is max(b[i] * x) only for b[i] >= 0.
// ERR: lt-factor.mlir:[[# @LINE + 11]]:7: error: lt-factor: the reduction into S is 'max': multiplication does not distribute over max (a * max(x) is max(a * x) only for a >= 0, which the pass cannot know)
func.func @row_max(%A: memref<3x4xf32> {lt.name = "A"}, %b: memref<3xf32> {lt.name = "b"}, %S: memref<3xf32> {lt.name = "S"}) attributes {lt.fastmath = "fast"} {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      %a = memref.load %A[%i, %k] : memref<3x4xf32>
      %c = memref.load %b[%i] : memref<3xf32>
      %p = arith.mulf %a, %c : f32
      "lt.reduce"(%p, %S, %i) {kind = "max"} : (f32, memref<3xf32>, index) -> ()
    }) {dim = "k", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 3 : i64, tail = 0 : i64} : () -> ()
  return
}


// -----

// Refused: the location's lt.dim e sits above the inner level of e that
// holds the reduction (each inner iteration updates the same element): no
// scratch over e fits both.
// ERR-NEXT: lt-factor.mlir:[[# @LINE + 18]]:11: error: lt-factor: the location the reduction updates moves along a dim that the loops inside L1 "for j in 5" split around its index: no scratch shape fits
func.func @split_index(%P: memref<3x5xf32> {lt.name = "P"}, %s: memref<3xf32> {lt.name = "s"}, %V: memref<5x4xf32> {lt.name = "V"}, %O: memref<3x4xf32> {lt.name = "O"}) attributes {lt.fastmath = "fast"} {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %p = memref.load %P[%i, %j] : memref<3x5xf32>
      %t = memref.load %s[%i] : memref<3xf32>
      %q = arith.divf %p, %t : f32
      "lt.loop"() ({
      ^bb0(%e0: index):
        %e = "lt.dim"() {dim = "e"} : () -> index
        "lt.loop"() ({
        ^bb0(%e1: index):
          %v = memref.load %V[%j, %e] : memref<5x4xf32>
          %pv = arith.mulf %q, %v : f32
          "lt.reduce"(%pv, %O, %i, %e) {kind = "add"} : (f32, memref<3x4xf32>, index, index) -> ()
        }) {dim = "e", size = 2 : i64, tail = 0 : i64} : () -> ()
      }) {dim = "e", size = 2 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "j", size = 5 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 3 : i64, tail = 0 : i64} : () -> ()
  return
}
// -----

// Refused: in a matrix-vector product both factors change with k.
// ERR-NEXT: lt-factor.mlir:[[# @LINE + 11]]:7: error: lt-factor: no factor of the product is invariant in L1 "for k in 4": %0 (read of A) depends on dim 'k'; %1 (read of x) depends on dim 'k'
func.func @matvec(%A: memref<3x4xf32> {lt.name = "A"}, %x: memref<4xf32> {lt.name = "x"}, %S: memref<3xf32> {lt.name = "S"}) attributes {lt.fastmath = "fast"} {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      %a = memref.load %A[%i, %k] : memref<3x4xf32>
      %c = memref.load %x[%k] : memref<4xf32>
      %p = arith.mulf %a, %c : f32
      "lt.reduce"(%p, %S, %i) {kind = "add"} : (f32, memref<3xf32>, index) -> ()
    }) {dim = "k", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 3 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: strict floating point keeps every sum in its order.
// ERR-NEXT: lt-factor.mlir:[[# @LINE + 11]]:7: error: lt-factor: factoring reassociates the floating-point sum (a * sum(x) rounds differently from sum(a * x)) and the function's fastmath mode 'strict' does not allow it: use --fastmath=fast, or lt.fastmath = "fast" (or a flag list with reassoc) on the function
func.func @strict(%A: memref<3x4xf32> {lt.name = "A"}, %b: memref<3xf32> {lt.name = "b"}, %S: memref<3xf32> {lt.name = "S"}) attributes {lt.fastmath = "strict"} {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      %a = memref.load %A[%i, %k] : memref<3x4xf32>
      %c = memref.load %b[%i] : memref<3xf32>
      %p = arith.mulf %a, %c : f32
      "lt.reduce"(%p, %S, %i) {kind = "add"} : (f32, memref<3xf32>, index) -> ()
    }) {dim = "k", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 3 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: the default mode (no lt.fastmath) contracts but does not
// reassociate (--fastmath=fast allows it: FAST above).
// ERR-NEXT: lt-factor.mlir:[[# @LINE + 11]]:7: error: lt-factor: factoring reassociates the floating-point sum (a * sum(x) rounds differently from sum(a * x)) and the function's fastmath mode 'default' does not allow it: use --fastmath=fast, or lt.fastmath = "fast" (or a flag list with reassoc) on the function
func.func @default_mode(%A: memref<3x4xf32> {lt.name = "A"}, %b: memref<3xf32> {lt.name = "b"}, %S: memref<3xf32> {lt.name = "S"}) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      %a = memref.load %A[%i, %k] : memref<3x4xf32>
      %c = memref.load %b[%i] : memref<3xf32>
      %p = arith.mulf %a, %c : f32
      "lt.reduce"(%p, %S, %i) {kind = "add"} : (f32, memref<3xf32>, index) -> ()
    }) {dim = "k", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 3 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: the running sum S[i] is read inside the loop (a prefix sum
// written to T); factored, T would see the partial sums without b[i].
// ERR-NEXT: lt-factor.mlir:[[# @LINE + 12]]:12: error: lt-factor: the accumulator S is also read inside L1 "for k in 4": the partial sum would be observed or split
func.func @observed(%A: memref<3x4xf32> {lt.name = "A"}, %b: memref<3xf32> {lt.name = "b"}, %S: memref<3xf32> {lt.name = "S"}, %T: memref<3x4xf32> {lt.name = "T"}) attributes {lt.fastmath = "fast"} {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      %a = memref.load %A[%i, %k] : memref<3x4xf32>
      %c = memref.load %b[%i] : memref<3xf32>
      %p = arith.mulf %a, %c : f32
      "lt.reduce"(%p, %S, %i) {kind = "add"} : (f32, memref<3xf32>, index) -> ()
      %s = memref.load %S[%i] : memref<3xf32>
      memref.store %s, %T[%i, %k] : memref<3x4xf32>
    }) {dim = "k", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 3 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: two reductions into S inside the loop.
// ERR-NEXT: lt-factor.mlir:[[# @LINE + 12]]:7: error: lt-factor: the accumulator S is also reduced into by another lt.reduce inside L1 "for k in 4": the partial sum would be observed or split
func.func @twice(%A: memref<3x4xf32> {lt.name = "A"}, %b: memref<3xf32> {lt.name = "b"}, %S: memref<3xf32> {lt.name = "S"}) attributes {lt.fastmath = "fast"} {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      %a = memref.load %A[%i, %k] : memref<3x4xf32>
      %c = memref.load %b[%i] : memref<3xf32>
      %p = arith.mulf %a, %c : f32
      "lt.reduce"(%p, %S, %i) {kind = "add"} : (f32, memref<3xf32>, index) -> ()
      "lt.reduce"(%a, %S, %i) {kind = "add"} : (f32, memref<3xf32>, index) -> ()
    }) {dim = "k", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 3 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: column sums T[k] change with k; L1 is not the reduced loop.
// ERR-NEXT: lt-factor.mlir:[[# @LINE + 11]]:7: error: lt-factor: the location the reduction updates in T changes across the iterations of L1 "for k in 4" (it depends on dim 'k'): the reduction is not over this loop
func.func @columns(%A: memref<3x4xf32> {lt.name = "A"}, %b: memref<3xf32> {lt.name = "b"}, %T: memref<4xf32> {lt.name = "T"}) attributes {lt.fastmath = "fast"} {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      %a = memref.load %A[%i, %k] : memref<3x4xf32>
      %c = memref.load %b[%i] : memref<3xf32>
      %p = arith.mulf %a, %c : f32
      "lt.reduce"(%p, %T, %k) {kind = "add"} : (f32, memref<4xf32>, index) -> ()
    }) {dim = "k", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 3 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: a plain row sum has no product to factor.
// ERR-NEXT: lt-factor.mlir:[[# @LINE + 5]]:5: error: lt-factor: L1 "for k in 4" holds no lt.reduce of a product
func.func @row_sum(%A: memref<3x4xf32> {lt.name = "A"}, %S: memref<3xf32> {lt.name = "S"}) attributes {lt.fastmath = "fast"} {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      %a = memref.load %A[%i, %k] : memref<3x4xf32>
      "lt.reduce"(%a, %S, %i) {kind = "add"} : (f32, memref<3xf32>, index) -> ()
    }) {dim = "k", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 3 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: there is no loop L1.
// ERR-NEXT: error: lt-factor: no loop L1 (the loop tree has L0)
// ERR-NOT: error
func.func @one_loop(%A: memref<4xf32>, %S: memref<1xf32>) {
  %z = arith.constant 0 : index
  "lt.loop"() ({
  ^bb0(%k0: index):
    %k = "lt.dim"() {dim = "k"} : () -> index
    %a = memref.load %A[%k] : memref<4xf32>
    "lt.reduce"(%a, %S, %z) {kind = "add"} : (f32, memref<1xf32>, index) -> ()
  }) {dim = "k", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}
