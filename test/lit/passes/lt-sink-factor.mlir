// lt-sink-factor{loop=L}: the inverse of lt-factor.  L sums into a scalar
// scratch (zeroed right before L) whose one read after L is multiplied by a
// factor computed before L: each term of the sum is multiplied by it
// instead, and the read is the result (a * sum(x) -> sum(a * x): maximal
// fusion's type-1 redundancy, TACO's SDDMM).  Floats need reassociation.
//
// Every chunk goes through lt-sink-factor{loop=1}: @scaled_sum prints its
// loop tree (TREE), the others refuse with a located one-line error (ERR).
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-sink-factor{loop=1})' --emit=loop-tree -o %t.tree 2>&1 | filecheck %s --check-prefix=ERR
// RUN: filecheck %s --input-file=%t.tree --check-prefix=TREE --match-full-lines --strict-whitespace
// The tail case: L1 split 2 r 1 over 3 first; the terms are in the inner level.
// RUN: sed -n '/^func.func @scaled_sum(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-split{loop=1 factor=3}, lt-sink-factor{loop=1})' --emit=loop-tree 2>/dev/null | filecheck %s --check-prefix=TAIL --match-full-lines --strict-whitespace
// Same checksums before and after, with and without the tail.
// RUN: sed -n '/^func.func @scaled_sum(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=SUM
// RUN: sed -n '/^func.func @scaled_sum(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-sink-factor{loop=1})' | filecheck %s --check-prefix=SUM
// RUN: sed -n '/^func.func @scaled_sum(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-split{loop=1 factor=3}, lt-sink-factor{loop=1})' | filecheck %s --check-prefix=SUM
// (the last digit of the float32 sum follows the host's vector width)
// SUM: arg2 f32[5] checksum 0.81945{{[12]}}
// lt-factor undoes it (w out of the sum, into lt-factor's scratch %2, w read
// again after L1) and lt-sink-factor puts the product back inside the sum
// (w's read computed again before L1).
// RUN: sed -n '/^func.func @scaled_sum(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-sink-factor{loop=1}, lt-factor{loop=1}, lt-sink-factor{loop=1})' --emit=loop-tree 2>/dev/null | filecheck %s --check-prefix=ROUND --match-full-lines --strict-whitespace
// ROUND: %2 <- alloc f32[] (1 elements)
// ROUND: for k in 7 : L1
// ROUND-NEXT:  %3 <- read A[i, k]
// ROUND-NEXT:  %4 <- mul(%3, %3)
// ROUND-NEXT:  %5 <- mul(%0, %4)
// ROUND-NEXT:  %2[] += %5
// ROUND-NEXT: %6 <- read %2[]
// ROUND-NEXT: %1[] += %6
//
// ERR: error: lt-sink-factor: multiplying each term reassociates the floating-point sum of L1 "for k in 7"
// ERR: error: lt-sink-factor: the reduction in L1 "for k in 7" is 'max', not 'add'
// ERR: error: lt-sink-factor: the sum of L1 "for k in 7" is used 2 times after it, not once by a product
// ERR: error: lt-sink-factor: the factor the sum of L1 "for k in 7" is multiplied by is computed after it from what may change
// ERR: error: lt-sink-factor: the scratch L1 "for k in 7" sums into is not set to zero once before it
// ERR: error: lt-sink-factor: the product that takes the sum of L1 "for k in 7" is not in its block
//
//      TREE:for i in 5 : L0
// TREE-NEXT: %0 <- read w[i]
// TREE-NEXT: %1 <- alloc f32[] (1 elements)
// TREE-NEXT: %1[] <- 0.0
// TREE-NEXT: for k in 7 : L1
// TREE-NEXT:  %2 <- read A[i, k]
// TREE-NEXT:  %3 <- mul(%2, %2)
// TREE-NEXT:  %4 <- mul(%0, %3)
// TREE-NEXT:  %1[] += %4
// TREE-NEXT: %5 <- read %1[]
// TREE-NEXT: O[i] <- %5
//
//      TAIL:for i in 5 : L0
// TAIL-NEXT: %0 <- read w[i]
// TAIL-NEXT: %1 <- alloc f32[] (1 elements)
// TAIL-NEXT: %1[] <- 0.0
// TAIL-NEXT: for k in 2 r 1 : L1
// TAIL-NEXT:  for k' in 3 : L2
// TAIL-NEXT:   %2 <- read A[i, k]
// TAIL-NEXT:   %3 <- mul(%2, %2)
// TAIL-NEXT:   %4 <- mul(%0, %3)
// TAIL-NEXT:   %1[] += %4
// TAIL-NEXT: %5 <- read %1[]
// TAIL-NEXT: O[i] <- %5

func.func @scaled_sum(%A: memref<5x7xf32> {lt.name = "A"}, %w: memref<5xf32> {lt.name = "w"}, %O: memref<5xf32> {lt.name = "O"}) attributes {lt.fastmath = "fast"} {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %wi = memref.load %w[%i] : memref<5xf32>
    %s = "lt.alloc"() {dims = []} : () -> memref<f32>
    memref.store %zero, %s[] : memref<f32>
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      %a = memref.load %A[%i, %k] : memref<5x7xf32>
      %sq = arith.mulf %a, %a : f32
      "lt.reduce"(%sq, %s) {kind = "add"} : (f32, memref<f32>) -> ()
    }) {dim = "k", size = 7 : i64, tail = 0 : i64} : () -> ()
    %t = memref.load %s[] : memref<f32>
    %y = arith.mulf %wi, %t : f32
    memref.store %y, %O[%i] : memref<5xf32>
  }) {dim = "i", size = 5 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

func.func @default_mode(%A: memref<5x7xf32> {lt.name = "A"}, %w: memref<5xf32> {lt.name = "w"}, %O: memref<5xf32> {lt.name = "O"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %wi = memref.load %w[%i] : memref<5xf32>
    %s = "lt.alloc"() {dims = []} : () -> memref<f32>
    memref.store %zero, %s[] : memref<f32>
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      %a = memref.load %A[%i, %k] : memref<5x7xf32>
      %sq = arith.mulf %a, %a : f32
      "lt.reduce"(%sq, %s) {kind = "add"} : (f32, memref<f32>) -> ()
    }) {dim = "k", size = 7 : i64, tail = 0 : i64} : () -> ()
    %t = memref.load %s[] : memref<f32>
    %y = arith.mulf %wi, %t : f32
    memref.store %y, %O[%i] : memref<5xf32>
  }) {dim = "i", size = 5 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

func.func @max_sum(%A: memref<5x7xf32> {lt.name = "A"}, %w: memref<5xf32> {lt.name = "w"}, %O: memref<5xf32> {lt.name = "O"}) attributes {lt.fastmath = "fast"} {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %wi = memref.load %w[%i] : memref<5xf32>
    %s = "lt.alloc"() {dims = []} : () -> memref<f32>
    memref.store %zero, %s[] : memref<f32>
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      %a = memref.load %A[%i, %k] : memref<5x7xf32>
      %sq = arith.mulf %a, %a : f32
      "lt.reduce"(%sq, %s) {kind = "max"} : (f32, memref<f32>) -> ()
    }) {dim = "k", size = 7 : i64, tail = 0 : i64} : () -> ()
    %t = memref.load %s[] : memref<f32>
    %y = arith.mulf %wi, %t : f32
    memref.store %y, %O[%i] : memref<5xf32>
  }) {dim = "i", size = 5 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

func.func @read_twice(%A: memref<5x7xf32> {lt.name = "A"}, %w: memref<5xf32> {lt.name = "w"}, %O: memref<5xf32> {lt.name = "O"}) attributes {lt.fastmath = "fast"} {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %wi = memref.load %w[%i] : memref<5xf32>
    %s = "lt.alloc"() {dims = []} : () -> memref<f32>
    memref.store %zero, %s[] : memref<f32>
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      %a = memref.load %A[%i, %k] : memref<5x7xf32>
      %sq = arith.mulf %a, %a : f32
      "lt.reduce"(%sq, %s) {kind = "add"} : (f32, memref<f32>) -> ()
    }) {dim = "k", size = 7 : i64, tail = 0 : i64} : () -> ()
    %t = memref.load %s[] : memref<f32>
    %y = arith.mulf %wi, %t : f32
    %z = arith.addf %y, %t : f32
    memref.store %z, %O[%i] : memref<5xf32>
  }) {dim = "i", size = 5 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

func.func @factor_after(%A: memref<5x7xf32> {lt.name = "A"}, %w: memref<5xf32> {lt.name = "w"}, %O: memref<5xf32> {lt.name = "O"}) attributes {lt.fastmath = "fast"} {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %wi = memref.load %w[%i] : memref<5xf32>
    %s = "lt.alloc"() {dims = []} : () -> memref<f32>
    memref.store %zero, %s[] : memref<f32>
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      %a = memref.load %A[%i, %k] : memref<5x7xf32>
      %sq = arith.mulf %a, %a : f32
      "lt.reduce"(%sq, %s) {kind = "add"} : (f32, memref<f32>) -> ()
      memref.store %a, %O[%i] : memref<5xf32>
    }) {dim = "k", size = 7 : i64, tail = 0 : i64} : () -> ()
    %t = memref.load %s[] : memref<f32>
    %wl = memref.load %O[%i] : memref<5xf32>
    %y = arith.mulf %wl, %t : f32
    memref.store %y, %O[%i] : memref<5xf32>
  }) {dim = "i", size = 5 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

func.func @not_zeroed(%A: memref<5x7xf32> {lt.name = "A"}, %w: memref<5xf32> {lt.name = "w"}, %O: memref<5xf32> {lt.name = "O"}) attributes {lt.fastmath = "fast"} {
  %zero = arith.constant 1.0 : f32
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %wi = memref.load %w[%i] : memref<5xf32>
    %s = "lt.alloc"() {dims = []} : () -> memref<f32>
    memref.store %zero, %s[] : memref<f32>
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      %a = memref.load %A[%i, %k] : memref<5x7xf32>
      %sq = arith.mulf %a, %a : f32
      "lt.reduce"(%sq, %s) {kind = "add"} : (f32, memref<f32>) -> ()
    }) {dim = "k", size = 7 : i64, tail = 0 : i64} : () -> ()
    %t = memref.load %s[] : memref<f32>
    %y = arith.mulf %wi, %t : f32
    memref.store %y, %O[%i] : memref<5xf32>
  }) {dim = "i", size = 5 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

func.func @product_later(%A: memref<5x7xf32> {lt.name = "A"}, %w: memref<3xf32> {lt.name = "w"}, %O: memref<5x3xf32> {lt.name = "O"}) attributes {lt.fastmath = "fast"} {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %s = "lt.alloc"() {dims = []} : () -> memref<f32>
    memref.store %zero, %s[] : memref<f32>
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      %a = memref.load %A[%i, %k] : memref<5x7xf32>
      %sq = arith.mulf %a, %a : f32
      "lt.reduce"(%sq, %s) {kind = "add"} : (f32, memref<f32>) -> ()
    }) {dim = "k", size = 7 : i64, tail = 0 : i64} : () -> ()
    %t = memref.load %s[] : memref<f32>
    "lt.loop"() ({
    ^bb0(%e0: index):
      %e = "lt.dim"() {dim = "e"} : () -> index
      %we = memref.load %w[%e] : memref<3xf32>
      %y = arith.mulf %we, %t : f32
      memref.store %y, %O[%i, %e] : memref<5x3xf32>
    }) {dim = "e", size = 3 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 5 : i64, tail = 0 : i64} : () -> ()
  return
}
