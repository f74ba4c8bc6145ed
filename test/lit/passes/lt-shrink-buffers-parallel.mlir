// lt-shrink-buffers under lt-parallel: a scratch buffer whose accesses all
// lie in a parallel loop moves into that loop's body, one tile a thread
// (`lt.private`), shrunk along the parallel level and the levels inside it;
// iterations never share it.  Run before lt-parallel, the shrunk buffer is
// one tile every iteration uses, and lt-parallel refuses and says the order.
//
// The normal case: the frontend's MLP (x @ W1, relu, @ W2), its hidden
// layer in scratch %0[b, h], parallel over rows b.
// RUN: lt-opt %s -p 'builtin.module(lt-parallel{loop=0}, lt-shrink-buffers)' --emit=loop-tree 2>&1 | filecheck %s --check-prefix=NORMAL
// NORMAL: remark: lt-shrink-buffers: %0 over [b, h]: 160 -> 16 elements (640 -> 64 bytes), one per thread of the parallel loop
// NORMAL: for b in 10 : L0 [parallel]
// NORMAL-NEXT:  %0 <- alloc f32[b, h] (16 elements)
//
// The tail case: rows split by 4 (2 chunks and a tail of 2), the outer level
// parallel; the tile is one row of h in each thread, the tail chunk uses it too.
// RUN: lt-opt %s -p 'builtin.module(lt-split{loop=0 factor=4}, lt-parallel{loop=0}, lt-shrink-buffers)' --emit=loop-tree 2>&1 | filecheck %s --check-prefix=TAIL
// TAIL: remark: lt-shrink-buffers: %0 over [b, h]: 160 -> 16 elements (640 -> 64 bytes), one per thread of the parallel loop
// TAIL: for b in 2 r 2 : L0 [parallel]
// TAIL-NEXT:  %0 <- alloc f32[b, h] (16 elements)
// TAIL-NEXT:  for b' in 4 : L1
//
// Same numbers, on threads (LT_PARALLEL_MIN_WORK=0: no loop is too small).
// RUN: lt-opt %s --run --repeat 1 | filecheck %s --check-prefix=SUM
// RUN: env LT_PARALLEL_MIN_WORK=0 OMP_NUM_THREADS=2 lt-opt %s --run --repeat 3 -p 'builtin.module(lt-parallel{loop=0}, lt-shrink-buffers)' | filecheck %s --check-prefix=SUM
// RUN: env LT_PARALLEL_MIN_WORK=0 OMP_NUM_THREADS=2 lt-opt %s --run --repeat 3 -p 'builtin.module(lt-split{loop=0 factor=4}, lt-parallel{loop=0}, lt-shrink-buffers)' | filecheck %s --check-prefix=SUM
// SUM: arg3 f32[10, 4] checksum 20.5535
//
// The refused case: shrunk first, the one tile is shared by every row.
// RUN: not lt-opt %s -p 'builtin.module(lt-shrink-buffers, lt-parallel{loop=0})' 2>&1 | filecheck %s --check-prefix=REFUSED
// REFUSED: error: lt-parallel: cannot run L0 "for b in 10" in parallel: a scratch buffer is written and accessed at elements that other iterations of dim 'b' also access (run lt-shrink-buffers after lt-parallel, not before: it gives each thread its own tile)

func.func @mlp(%a0: memref<10x8xf32> {lt.name = "A"}, %a1: memref<8x16xf32> {lt.name = "B"}, %a2: memref<16x4xf32> {lt.name = "C"}, %a3: memref<10x4xf32> {lt.name = "D"}) {
  %cst11 = arith.constant 0x00000000 : f32
  %c0 = arith.constant 0 : index
  %buf10 = "lt.alloc"() {dims = ["b", "h"]} : () -> memref<10x16xf32>
  "lt.loop"() ({
  ^bb0(%i1: index):
    %d2 = "lt.dim"() {dim = "b"} : () -> index
    "lt.loop"() ({
    ^bb0(%i12: index):
      %d13 = "lt.dim"() {dim = "h"} : () -> index
      memref.store %cst11, %buf10[%d2, %d13] : memref<10x16xf32>
    }) {dim = "h", size = 16 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%i3: index):
      %d4 = "lt.dim"() {dim = "i"} : () -> index
      "lt.loop"() ({
      ^bb0(%i5: index):
        %d6 = "lt.dim"() {dim = "h"} : () -> index
        %v7 = memref.load %a0[%d2, %d4] : memref<10x8xf32>
        %v8 = memref.load %a1[%d4, %d6] : memref<8x16xf32>
        %v9 = arith.mulf %v7, %v8 : f32
        "lt.reduce"(%v9, %buf10, %d2, %d6) {kind = "add"} : (f32, memref<10x16xf32>, index, index) -> ()
      }) {dim = "h", size = 16 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%i22: index):
      %d23 = "lt.dim"() {dim = "o"} : () -> index
      memref.store %cst11, %a3[%d2, %d23] : memref<10x4xf32>
    }) {dim = "o", size = 4 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%i14: index):
      %d15 = "lt.dim"() {dim = "h"} : () -> index
      %v16 = memref.load %buf10[%d2, %d15] : memref<10x16xf32>
      %v17 = arith.maximumf %v16, %cst11 : f32
      "lt.loop"() ({
      ^bb0(%i18: index):
        %d19 = "lt.dim"() {dim = "o"} : () -> index
        %v20 = memref.load %a2[%d15, %d19] : memref<16x4xf32>
        %v21 = arith.mulf %v17, %v20 : f32
        "lt.reduce"(%v21, %a3, %d2, %d19) {kind = "add"} : (f32, memref<10x4xf32>, index, index) -> ()
      }) {dim = "o", size = 4 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "h", size = 16 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "b", size = 10 : i64, tail = 0 : i64} : () -> ()
  return
}

