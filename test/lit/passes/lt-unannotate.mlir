// lt-unannotate{loop=L name=N}: take lt.N off loop L (the way back from
// lt-parallel, lt-unroll, lt-vectorize, lt-gpu-map).  Normal case: the
// parallel, unroll and vectorize annotations come off one by one; the
// results stay those of the annotated module (--run checksums).  Refused: a
// loop without the annotation, an unknown name, no such loop.
// RUN: lt-opt %s -p 'builtin.module(lt-unannotate{loop=0 name=parallel}, lt-unannotate{loop=1 name=unroll})' --emit=loop-tree | filecheck %s --check-prefix=TREE --match-full-lines --strict-whitespace
// RUN: lt-opt %s -p 'builtin.module(lt-unannotate{loop=4 name=vectorize})' --emit=loop-tree | filecheck %s --check-prefix=VEC --match-full-lines --strict-whitespace
// RUN: lt-opt %s --run --repeat 1 | filecheck %s --check-prefix=SUM
// RUN: lt-opt %s --run --repeat 1 -p 'builtin.module(lt-unannotate{loop=0 name=parallel}, lt-unannotate{loop=1 name=unroll}, lt-unannotate{loop=4 name=vectorize})' | filecheck %s --check-prefix=SUM
// A parallel loop's schedule (lt.schedule) comes off with it.
// RUN: env LT_PARALLEL_MIN_WORK=0 lt-opt %s -p 'builtin.module(lt-unannotate{loop=0 name=parallel}, lt-parallel{loop=0 schedule=guided})' --emit=loop-tree | filecheck %s --check-prefix=SCHED --match-full-lines
// RUN: env LT_PARALLEL_MIN_WORK=0 lt-opt %s -p 'builtin.module(lt-unannotate{loop=0 name=parallel}, lt-parallel{loop=0 schedule=guided}, lt-unannotate{loop=0 name=parallel})' --emit=loop-tree | filecheck %s --check-prefix=TREE0 --match-full-lines
//   SCHED:for m in 4 r 1 : L0 [parallel, schedule guided]
//   TREE0:for m in 4 r 1 : L0
// RUN: not lt-opt %s -p 'builtin.module(lt-unannotate{loop=2 name=parallel})' 2>&1 | filecheck %s --check-prefix=ABSENT
// RUN: not lt-opt %s -p 'builtin.module(lt-unannotate{loop=0 name=fast})' 2>&1 | filecheck %s --check-prefix=NAME
// RUN: not lt-opt %s -p 'builtin.module(lt-unannotate{loop=9 name=parallel})' 2>&1 | filecheck %s --check-prefix=NOLOOP
//      TREE:for m in 4 r 1 : L0
// TREE-NEXT: for m' in 8 : L1
// TREE-NEXT:  for n in 48 : L2
// TREE-NEXT:   C[m, n] <- 0.0
// TREE-NEXT:  for k in 64 : L3
// TREE-NEXT:   for n in 48 : L4 [vectorize 16]
//      VEC:for m in 4 r 1 : L0 [parallel]
// VEC-NEXT: for m' in 8 : L1 [unroll full]
//      VEC:   for n in 48 : L4
//      SUM: @matmul: {{.*}} ms
// SUM-NEXT:   arg2 f32[33, 48] checksum [[SUM:.*]]
// ABSENT: lt-unannotate.mlir:[[# @LINE + 11]]:7: error: lt-unannotate: L2 "for n in 48" is not annotated parallel
// NAME: lt-unannotate.mlir:[[# @LINE + 5]]:3: error: lt-unannotate: option 'name' must be one of parallel, unroll, vectorize, gpu, prefetch, double_buffer, min_blocks, got 'fast'
// NOLOOP: error: lt-unannotate: no loop L9 (the loop tree has L0..L4)

func.func @matmul(%arg0: memref<33x64xf32> {lt.name = "A"}, %arg1: memref<64x48xf32> {lt.name = "B"}, %arg2: memref<33x48xf32> {lt.name = "C"}) {
  %cst = arith.constant 0.000000e+00 : f32
  "lt.loop"() ({
  ^bb0(%arg3: index):
    "lt.loop"() ({
    ^bb0(%arg4: index):
      %0 = "lt.dim"() {dim = "m"} : () -> index
      "lt.loop"() ({
      ^bb0(%arg5: index):
        %1 = "lt.dim"() {dim = "n"} : () -> index
        memref.store %cst, %arg2[%0, %1] : memref<33x48xf32>
      }) {dim = "n", size = 48 : i64, tail = 0 : i64} : () -> ()
      "lt.loop"() ({
      ^bb0(%arg5: index):
        "lt.loop"() ({
        ^bb0(%arg6: index):
          %1 = "lt.dim"() {dim = "n"} : () -> index
          %2 = "lt.dim"() {dim = "k"} : () -> index
          %3 = memref.load %arg0[%0, %2] : memref<33x64xf32>
          %4 = memref.load %arg1[%2, %1] : memref<64x48xf32>
          %5 = arith.mulf %3, %4 : f32
          "lt.reduce"(%5, %arg2, %0, %1) {kind = "add"} : (f32, memref<33x48xf32>, index, index) -> ()
        }) {dim = "n", lt.vectorize = 16 : i64, size = 48 : i64, tail = 0 : i64} : () -> ()
      }) {dim = "k", size = 64 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "m", lt.unroll = 0 : i64, size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", lt.parallel, size = 4 : i64, tail = 1 : i64} : () -> ()
  return
}
