// lt-prefetch{loop=L distance=D}: annotate L `lt.prefetch = D`; the CPU
// lowering then asks the cache, at the start of each iteration of L, for
// each cache line of the rows the reads in L's body read along L's dim, D
// iterations ahead (clamped into the buffer): `memref.prefetch`, a hint that
// never changes a result.
//
// The normal case: W[k, j] along L1's k, a row of 8 floats (one line).
// RUN: lt-opt %s -p 'builtin.module(lt-prefetch{loop=1 distance=4})' --emit=loop-tree 2>&1 | filecheck %s --check-prefix=TREE
// RUN: lt-opt %s -p 'builtin.module(lt-prefetch{loop=1 distance=4}, lower-lt-to-scf)' 2>/dev/null | filecheck %s --check-prefix=IR
//      TREE: remark: lt-prefetch: L1 "for k in 21" prefetches W (32 bytes a row) 4 iterations ahead
//      TREE: for k in 21 : L1 [prefetch 4]
// TREE-NEXT:  for j in 8 : L2
// TREE-NEXT:   %0 <- read W[k, j]
//      IR: scf.for %[[K:.*]] = %{{.*}} to %c21 step %{{.*}} {
// IR-NEXT:   %[[D:.*]] = arith.constant 4 : index
// IR-NEXT:   %[[A:.*]] = arith.addi %[[K]], %[[D]] : index
// IR-NEXT:   %[[E:.*]] = arith.constant 20 : index
// IR-NEXT:   %[[I:.*]] = arith.minsi %[[A]], %[[E]] : index
// IR-NEXT:   %[[Z:.*]] = arith.constant 0 : index
// IR-NEXT:   memref.prefetch %arg0[%[[I]], %[[Z]]], read, locality<3>, data : memref<21x8xf32>
//
// The tail case: k split 21 = `2 r 5` over 8; L2, the innermost level over
// k, prefetches; the last rows clamp to row 20, in the tail iteration too.
// RUN: lt-opt %s -p 'builtin.module(lt-split{loop=1 factor=8}, lt-prefetch{loop=2 distance=4})' --emit=loop-tree 2>&1 | filecheck %s --check-prefix=TAIL
// RUN: lt-opt %s -p 'builtin.module(lt-split{loop=1 factor=8}, lt-prefetch{loop=2 distance=4}, lower-lt-to-scf)' 2>/dev/null | filecheck %s --check-prefix=TAILIR
//      TAIL: for k in 2 r 5 : L1
// TAIL-NEXT:  for k' in 8 : L2 [prefetch 4]
//      TAILIR: arith.constant 20 : index
// TAILIR-NEXT: arith.minsi
//      TAILIR: memref.prefetch %arg0
//
// The results do not change (checksums of seeded random inputs).
// RUN: lt-opt %s --run --repeat 1 | filecheck %s --check-prefix=SUM
// RUN: lt-opt %s --run --repeat 1 -p 'builtin.module(lt-prefetch{loop=1 distance=4})' | filecheck %s --check-prefix=SUM
// RUN: lt-opt %s --run --repeat 1 -p 'builtin.module(lt-split{loop=1 factor=8}, lt-prefetch{loop=2 distance=4}, lt-prefetch{loop=3 distance=30})' | filecheck %s --check-prefix=SUM
// SUM: arg1 f32[8] checksum 2.81684
//
// lt-unannotate takes it off again; on the GPU it is dropped.
// RUN: lt-opt %s -p 'builtin.module(lt-prefetch{loop=1 distance=4}, lt-unannotate{loop=1 name=prefetch})' --emit=loop-tree 2>&1 | filecheck %s --check-prefix=OFF
// OFF: for k in 21 : L1
// OFF-NOT: prefetch
//
// Refused: no read along the loop's dim (L0 only stores), a distance below
// 1, a vectorized loop, no such loop.
// RUN: not lt-opt %s -p 'builtin.module(lt-prefetch{loop=0 distance=4})' 2>&1 | filecheck %s --check-prefix=NOROW
// RUN: not lt-opt %s -p 'builtin.module(lt-prefetch{loop=1 distance=0})' 2>&1 | filecheck %s --check-prefix=DIST
// RUN: not lt-opt %s -p 'builtin.module(lt-vectorize{loop=2 width=8}, lt-prefetch{loop=2})' 2>&1 | filecheck %s --check-prefix=VEC
// RUN: not lt-opt %s -p 'builtin.module(lt-prefetch{loop=9})' 2>&1 | filecheck %s --check-prefix=LOOP
// NOROW: lt-prefetch.mlir:56:3: error: lt-prefetch: no read in L0 "for j in 8" reads a row of at most 1 KB along dim 'j' or through an index loaded there, with the axes before it fixed in the loop
// DIST: lt-prefetch.mlir:61:3: error: lt-prefetch: distance must be at least 1, got 0
// VEC: lt-prefetch.mlir:64:5: error: lt-prefetch: L2 "for j in 8" is annotated 'vectorize': prefetches are for a scalar CPU loop
// LOOP: error: lt-prefetch: no loop L9 (the loop tree has L0..L2)

func.func @colsum(%W: memref<21x8xf32> {lt.name = "W"}, %Y: memref<8xf32> {lt.name = "Y"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%a: index):
    %j = "lt.dim"() {dim = "j"} : () -> index
    memref.store %zero, %Y[%j] : memref<8xf32>
  }) {dim = "j", size = 8 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%b: index):
    %k = "lt.dim"() {dim = "k"} : () -> index
    "lt.loop"() ({
    ^bb0(%c: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %w = memref.load %W[%k, %j] : memref<21x8xf32>
      "lt.reduce"(%w, %Y, %j) {kind = "add"} : (f32, memref<8xf32>, index) -> ()
    }) {dim = "j", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "k", size = 21 : i64, tail = 0 : i64} : () -> ()
  return
}
