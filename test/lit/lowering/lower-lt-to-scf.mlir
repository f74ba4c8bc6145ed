// RUN: lt-opt %s --split-input-file --pass-pipeline='builtin.module(lower-lt-to-scf, canonicalize)' | filecheck %s

// A level without a tail is one scf.for; lt.dim is the loop's iteration.
// CHECK-LABEL: func.func @no_tail
// CHECK-DAG:   %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:   %[[C8:.*]] = arith.constant 8 : index
// CHECK:       scf.for %[[I:.*]] = %[[C0]] to %[[C8]] step
// CHECK-NEXT:    memref.load %{{.*}}[%[[I]]]
// CHECK-NOT:   lt.
func.func @no_tail(%A: memref<8xf32>, %B: memref<8xf32>) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %a = memref.load %A[%i] : memref<8xf32>
    memref.store %a, %B[%i] : memref<8xf32>
  }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// 33 split by 8 (`4 r 1` over `8`), with a statement of its own in each
// block of 8 (C[first element] <- 0): a main loop over 4 blocks of 8, then
// one clipped tail iteration at offset 32 whose inner level runs once.
// CHECK-LABEL: func.func @tail
// CHECK-DAG:   %[[C32:.*]] = arith.constant 32 : index
// CHECK-DAG:   %[[C8:.*]] = arith.constant 8 : index
// CHECK-DAG:   %[[C4:.*]] = arith.constant 4 : index
// CHECK:       scf.for %[[O:.*]] = %{{.*}} to %[[C4]] step
// CHECK-NEXT:    %[[BASE:.*]] = arith.muli %[[O]], %[[C8]]
// CHECK-NEXT:    memref.store %{{.*}}, %[[C:.*]][%[[BASE]]]
// CHECK-NEXT:    scf.for %[[J:.*]] = %{{.*}} to %[[C8]] step
// CHECK-NEXT:      %[[I:.*]] = arith.addi %[[BASE]], %[[J]]
// CHECK-NEXT:      memref.load %{{.*}}[%[[I]]]
// CHECK:       }
// CHECK-NEXT:  }
// CHECK-NEXT:  memref.store %{{.*}}, %[[C]][%[[C32]]]
// CHECK-NEXT:  %[[T:.*]] = memref.load %{{.*}}[%[[C32]]]
// CHECK-NEXT:  memref.store %[[T]], %{{.*}}[%[[C32]]]
// CHECK-NEXT:  return
func.func @tail(%A: memref<33xf32>, %B: memref<33xf32>, %C: memref<33xf32>) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i0: index):
    %first = "lt.dim"() {dim = "i"} : () -> index
    memref.store %zero, %C[%first] : memref<33xf32>
    "lt.loop"() ({
    ^bb0(%i1: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %a = memref.load %A[%i] : memref<33xf32>
      memref.store %a, %B[%i] : memref<33xf32>
    }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 1 : i64} : () -> ()
  return
}

// -----

// Nested tails: 50 as `3 r 2` over `4` over `4`, a statement in each block
// of the outer and middle levels.  The outer level's clipped iteration
// covers 2 elements at offset 48, so there the middle level runs 0 full
// iterations of 4 and one clipped iteration of 2, in which the innermost
// level runs 2 times: a single scf.for of 2.
// CHECK-LABEL: func.func @nested_tail
// CHECK-DAG:   %[[C48:.*]] = arith.constant 48 : index
// CHECK-DAG:   %[[C2:.*]] = arith.constant 2 : index
// CHECK:       scf.for
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:       scf.for %[[J:.*]] = %{{.*}} to %[[C2]] step
// CHECK-NEXT:    %[[I:.*]] = arith.addi %[[J]], %[[C48]]
// CHECK-NEXT:    memref.load %{{.*}}[%[[I]]]
func.func @nested_tail(%A: memref<50xf32>, %B: memref<50xf32>, %C: memref<50xf32>) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i0: index):
    %o = "lt.dim"() {dim = "i"} : () -> index
    memref.store %zero, %C[%o] : memref<50xf32>
    "lt.loop"() ({
    ^bb0(%i1: index):
      %p = "lt.dim"() {dim = "i"} : () -> index
      memref.store %zero, %C[%p] : memref<50xf32>
      "lt.loop"() ({
      ^bb0(%i2: index):
        %i = "lt.dim"() {dim = "i"} : () -> index
        %a = memref.load %A[%i] : memref<50xf32>
        memref.store %a, %B[%i] : memref<50xf32>
      }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 3 : i64, tail = 2 : i64} : () -> ()
  return
}

// -----

// A split that nothing came between (the levels of a dim nested directly,
// none annotated, no iteration number read) runs as the loop it was: one
// scf.for over its extent, tails included (33 as `4 r 1` over `8`), so a
// split alone changes no code (LLVM, given the nest, vectorizes the outer
// loop across strided accesses or keeps a reduction in memory).
// CHECK-LABEL: func.func @split_chain
// CHECK-DAG:   %[[C33:.*]] = arith.constant 33 : index
// CHECK:       scf.for %[[I:.*]] = %{{.*}} to %[[C33]] step
// CHECK-NEXT:    memref.load %{{.*}}[%[[I]]]
// CHECK-NEXT:    memref.store
// CHECK-NEXT:  }
// CHECK-NEXT:  return
func.func @split_chain(%A: memref<33xf32>, %B: memref<33xf32>) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    "lt.loop"() ({
    ^bb0(%i1: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %a = memref.load %A[%i] : memref<33xf32>
      memref.store %a, %B[%i] : memref<33xf32>
    }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 1 : i64} : () -> ()
  return
}

// -----

// The chain under a level with a statement of its own: 40 as `2 r 8` over
// (`4` over `4`).  Each block of 16 runs the chain as one loop of 16; the
// clipped block at offset 32 as one loop of the 8 elements left.
// CHECK-LABEL: func.func @chain_in_tail
// CHECK-DAG:   %[[C32:.*]] = arith.constant 32 : index
// CHECK-DAG:   %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG:   %[[C8:.*]] = arith.constant 8 : index
// CHECK:       scf.for %[[O:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT:    %[[BASE:.*]] = arith.muli %[[O]], %[[C16]]
// CHECK-NEXT:    memref.store
// CHECK-NEXT:    scf.for %[[J:.*]] = %{{.*}} to %[[C16]] step
// CHECK-NEXT:      arith.addi %[[BASE]], %[[J]]
// CHECK-NOT:       scf.for
// CHECK:       memref.store %{{.*}}[%[[C32]]]
// CHECK-NEXT:  scf.for %[[K:.*]] = %{{.*}} to %[[C8]] step
// CHECK-NEXT:    arith.addi %[[K]], %[[C32]]
// CHECK-NOT:   scf.for
// CHECK:       return
func.func @chain_in_tail(%A: memref<40xf32>, %B: memref<40xf32>, %C: memref<40xf32>) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i0: index):
    %o = "lt.dim"() {dim = "i"} : () -> index
    memref.store %zero, %C[%o] : memref<40xf32>
    "lt.loop"() ({
    ^bb0(%i1: index):
      "lt.loop"() ({
      ^bb0(%i2: index):
        %i = "lt.dim"() {dim = "i"} : () -> index
        %a = memref.load %A[%i] : memref<40xf32>
        memref.store %a, %B[%i] : memref<40xf32>
      }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 2 : i64, tail = 8 : i64} : () -> ()
  return
}

// -----

// An annotated level keeps its structure (the annotation asked for it):
// `lt.unroll = 2` on the inner level of a split of 16 by 8.
// CHECK-LABEL: func.func @annotated_split
// CHECK:       scf.for
// CHECK:         scf.for
// CHECK:       return
func.func @annotated_split(%A: memref<16xf32>, %B: memref<16xf32>) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    "lt.loop"() ({
    ^bb0(%i1: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %a = memref.load %A[%i] : memref<16xf32>
      memref.store %a, %B[%i] : memref<16xf32>
    }) {dim = "i", size = 8 : i64, tail = 0 : i64, lt.unroll = 2 : i64} : () -> ()
  }) {dim = "i", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// lt.reduce is load/combine/store; the initialising store stays where the
// program put it (before the k loop, under n).  Window arithmetic on lt.dim
// values (x + k) is ordinary arith.
// CHECK-LABEL: func.func @conv
// CHECK:       scf.for %[[I:.*]] =
// CHECK-NEXT:    memref.store %{{.*}}, %[[Y:.*]][%[[I]]]
// CHECK-NEXT:    scf.for %[[K:.*]] =
// CHECK-NEXT:      %[[IK:.*]] = arith.addi %[[I]], %[[K]]
// CHECK-NEXT:      %[[X:.*]] = memref.load %{{.*}}[%[[IK]]]
// CHECK-NEXT:      %[[W:.*]] = memref.load %{{.*}}[%[[K]]]
// CHECK-NEXT:      %[[P:.*]] = arith.mulf %[[X]], %[[W]]
// CHECK-NEXT:      %[[OLD:.*]] = memref.load %[[Y]][%[[I]]]
// CHECK-NEXT:      %[[NEW:.*]] = arith.addf %[[OLD]], %[[P]]
// CHECK-NEXT:      memref.store %[[NEW]], %[[Y]][%[[I]]]
func.func @conv(%X: memref<10xf32>, %W: memref<3xf32>, %Y: memref<8xf32>) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    memref.store %zero, %Y[%i] : memref<8xf32>
    "lt.loop"() ({
    ^bb0(%k0: index):
      %k = "lt.dim"() {dim = "k"} : () -> index
      %ik = arith.addi %i, %k : index
      %x = memref.load %X[%ik] : memref<10xf32>
      %w = memref.load %W[%k] : memref<3xf32>
      %p = arith.mulf %x, %w : f32
      "lt.reduce"(%p, %Y, %i) {kind = "add"} : (f32, memref<8xf32>, index) -> ()
    }) {dim = "k", size = 3 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Each reduce kind has its combiner (floats: NaN-propagating max/min).
// CHECK-LABEL: func.func @kinds
// CHECK: arith.mulf
// CHECK: arith.maximumf
// CHECK: arith.minimumf
// CHECK: arith.maxsi
func.func @kinds(%A: memref<4xf32>, %P: memref<1xf32>, %M: memref<1xf32>, %N: memref<1xf32>, %I: memref<4xi32>, %J: memref<1xi32>) {
  %c0 = arith.constant 0 : index
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %a = memref.load %A[%i] : memref<4xf32>
    "lt.reduce"(%a, %P, %c0) {kind = "mul"} : (f32, memref<1xf32>, index) -> ()
    "lt.reduce"(%a, %M, %c0) {kind = "max"} : (f32, memref<1xf32>, index) -> ()
    "lt.reduce"(%a, %N, %c0) {kind = "min"} : (f32, memref<1xf32>, index) -> ()
    %b = memref.load %I[%i] : memref<4xi32>
    "lt.reduce"(%b, %J, %c0) {kind = "max"} : (i32, memref<1xi32>, index) -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Scratch buffers are hoisted to the entry: small ones on the stack, large
// ones on the heap with a dealloc before the return.
// CHECK-LABEL: func.func @scratch
// CHECK:       %[[SMALL:.*]] = memref.alloca() : memref<16xf32>
// CHECK-NEXT:  %[[BIG:.*]] = memref.alloc() : memref<65536xf32>
// CHECK-NEXT:  scf.for
// CHECK:       memref.dealloc %[[BIG]]
// CHECK-NEXT:  return
func.func @scratch(%A: memref<16xf32>) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %small = "lt.alloc"() {dims = ["i"]} : () -> memref<16xf32>
    %big = "lt.alloc"() {dims = ["j"]} : () -> memref<65536xf32>
    %i = "lt.dim"() {dim = "i"} : () -> index
    %a = memref.load %A[%i] : memref<16xf32>
    memref.store %a, %small[%i] : memref<16xf32>
    memref.store %a, %big[%i] : memref<65536xf32>
    %b = memref.load %small[%i] : memref<16xf32>
    %c = memref.load %big[%i] : memref<65536xf32>
    %d = arith.addf %b, %c : f32
    memref.store %d, %A[%i] : memref<16xf32>
  }) {dim = "i", size = 16 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Several scratch buffers at the very start of the function all hoist.
// CHECK-LABEL: func.func @two_scratch
// CHECK-DAG:   memref.alloca() : memref<4xf32>
// CHECK-DAG:   memref.alloca() : memref<4xf32>
// CHECK:       scf.for
func.func @two_scratch(%A: memref<4xf32>, %B: memref<4xf32>) {
  %t = "lt.alloc"() {dims = ["i"]} : () -> memref<4xf32>
  %u = "lt.alloc"() {dims = ["i"]} : () -> memref<4xf32>
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %a = memref.load %A[%i] : memref<4xf32>
    memref.store %a, %t[%i] : memref<4xf32>
    %b = memref.load %t[%i] : memref<4xf32>
    memref.store %b, %u[%i] : memref<4xf32>
    %c = memref.load %u[%i] : memref<4xf32>
    memref.store %c, %B[%i] : memref<4xf32>
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}
