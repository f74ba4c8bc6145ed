// lt-double-buffer{loop=L}: annotate the k-slice loop L of a shared-memory
// GEMM: on the GPU the copies of iteration i + 1's lt-cache tiles go into a
// second stage of shared memory (cp.async) while iteration i computes.
// The schedule below is recipes.gpu_tiled_matmul(tile=32, regs=4,
// k_tile=8, double_buffer=True) on a 64 x 48 x 32 matmul: blocks of 32 x
// 32 of C, so n's second block is a tail (16 columns: clipped copies).
//
// The normal case: the annotation, the tree, and the same results on the
// CPU (which ignores it) and through the GPU lowering (cuda-emulated: the
// same pipeline with plain copies).
// RUN: lt-opt %s -p 'builtin.module(lt-distribute{loop=1}, lt-distribute{loop=0}, lt-split{loop=2 factor=32}, lt-split{loop=3 factor=4}, lt-split{loop=5 factor=32}, lt-split{loop=6 factor=4}, lt-split{loop=8 factor=8}, lt-swap{loop=4}, lt-swap{loop=5}, lt-swap{loop=7}, lt-swap{loop=8}, lt-swap{loop=3}, lt-swap{loop=6}, lt-swap{loop=7}, lt-swap{loop=5}, lt-swap{loop=4}, lt-cache{loop=4 operand=0}, lt-cache{loop=4 operand=1}, lt-double-buffer{loop=4}, lt-split{loop=6 factor=8}, lt-swap{loop=5}, lt-split{loop=8 factor=8}, lt-gpu-map{loop=2 to=block}, lt-gpu-map{loop=3 to=block}, lt-gpu-map{loop=6 to=thread}, lt-gpu-map{loop=7 to=thread}, lt-gpu-map{loop=9 to=thread}, lt-gpu-map{loop=10 to=thread}, lt-gpu-map{loop=11 to=thread}, lt-gpu-map{loop=12 to=thread}, lt-unroll{loop=14 factor=0}, lt-unroll{loop=15 factor=0}, lt-gpu-auto{threads=256})' --emit=loop-tree 2>&1 | filecheck %s --check-prefix=TREE
// TREE: remark: lt-double-buffer: L4 "for k in 4": the copies into %0, %2 for iteration i + 1 overlap iteration i (two stages each)
// TREE: for k in 4 : L4 [double_buffer]
// RUN: lt-opt %s --run --repeat 1 | filecheck %s --check-prefix=SUM
// RUN: lt-opt %s --run --repeat 1 -p 'builtin.module(lt-distribute{loop=1}, lt-distribute{loop=0}, lt-split{loop=2 factor=32}, lt-split{loop=3 factor=4}, lt-split{loop=5 factor=32}, lt-split{loop=6 factor=4}, lt-split{loop=8 factor=8}, lt-swap{loop=4}, lt-swap{loop=5}, lt-swap{loop=7}, lt-swap{loop=8}, lt-swap{loop=3}, lt-swap{loop=6}, lt-swap{loop=7}, lt-swap{loop=5}, lt-swap{loop=4}, lt-cache{loop=4 operand=0}, lt-cache{loop=4 operand=1}, lt-double-buffer{loop=4})' | filecheck %s --check-prefix=SUM
// RUN: lt-opt %s --run --repeat 1 --target cuda-emulated -p 'builtin.module(lt-distribute{loop=1}, lt-distribute{loop=0}, lt-split{loop=2 factor=32}, lt-split{loop=3 factor=4}, lt-split{loop=5 factor=32}, lt-split{loop=6 factor=4}, lt-split{loop=8 factor=8}, lt-swap{loop=4}, lt-swap{loop=5}, lt-swap{loop=7}, lt-swap{loop=8}, lt-swap{loop=3}, lt-swap{loop=6}, lt-swap{loop=7}, lt-swap{loop=5}, lt-swap{loop=4}, lt-cache{loop=4 operand=0}, lt-cache{loop=4 operand=1}, lt-split{loop=6 factor=8}, lt-swap{loop=5}, lt-split{loop=8 factor=8}, lt-gpu-map{loop=2 to=block}, lt-gpu-map{loop=3 to=block}, lt-gpu-map{loop=6 to=thread}, lt-gpu-map{loop=7 to=thread}, lt-gpu-map{loop=9 to=thread}, lt-gpu-map{loop=10 to=thread}, lt-gpu-map{loop=11 to=thread}, lt-gpu-map{loop=12 to=thread}, lt-unroll{loop=14 factor=0}, lt-unroll{loop=15 factor=0}, lt-gpu-auto{threads=256})' | filecheck %s --check-prefix=SUM
// RUN: lt-opt %s --run --repeat 1 --target cuda-emulated -p 'builtin.module(lt-distribute{loop=1}, lt-distribute{loop=0}, lt-split{loop=2 factor=32}, lt-split{loop=3 factor=4}, lt-split{loop=5 factor=32}, lt-split{loop=6 factor=4}, lt-split{loop=8 factor=8}, lt-swap{loop=4}, lt-swap{loop=5}, lt-swap{loop=7}, lt-swap{loop=8}, lt-swap{loop=3}, lt-swap{loop=6}, lt-swap{loop=7}, lt-swap{loop=5}, lt-swap{loop=4}, lt-cache{loop=4 operand=0}, lt-cache{loop=4 operand=1}, lt-double-buffer{loop=4}, lt-split{loop=6 factor=8}, lt-swap{loop=5}, lt-split{loop=8 factor=8}, lt-gpu-map{loop=2 to=block}, lt-gpu-map{loop=3 to=block}, lt-gpu-map{loop=6 to=thread}, lt-gpu-map{loop=7 to=thread}, lt-gpu-map{loop=9 to=thread}, lt-gpu-map{loop=10 to=thread}, lt-gpu-map{loop=11 to=thread}, lt-gpu-map{loop=12 to=thread}, lt-unroll{loop=14 factor=0}, lt-unroll{loop=15 factor=0}, lt-gpu-auto{threads=256})' | filecheck %s --check-prefix=SUM
// SUM: arg2 f32[64, 48] checksum 33.4675
//
// In the emitted PTX, one two-stage array per tile (2 x 256 floats), shared by the
// full and the clipped block's pipelines; each element a cp.async (no
// unrolled vector loop here: recipes' vector=4 gives 16-byte ones); the
// prologue's group and one group an iteration, waiting for all but the
// newest; two barriers an iteration.
// RUN: lt-opt %s -p 'builtin.module(lt-distribute{loop=1}, lt-distribute{loop=0}, lt-split{loop=2 factor=32}, lt-split{loop=3 factor=4}, lt-split{loop=5 factor=32}, lt-split{loop=6 factor=4}, lt-split{loop=8 factor=8}, lt-swap{loop=4}, lt-swap{loop=5}, lt-swap{loop=7}, lt-swap{loop=8}, lt-swap{loop=3}, lt-swap{loop=6}, lt-swap{loop=7}, lt-swap{loop=5}, lt-swap{loop=4}, lt-cache{loop=4 operand=0}, lt-cache{loop=4 operand=1}, lt-double-buffer{loop=4}, lt-split{loop=6 factor=8}, lt-swap{loop=5}, lt-split{loop=8 factor=8}, lt-gpu-map{loop=2 to=block}, lt-gpu-map{loop=3 to=block}, lt-gpu-map{loop=6 to=thread}, lt-gpu-map{loop=7 to=thread}, lt-gpu-map{loop=9 to=thread}, lt-gpu-map{loop=10 to=thread}, lt-gpu-map{loop=11 to=thread}, lt-gpu-map{loop=12 to=thread}, lt-unroll{loop=14 factor=0}, lt-unroll{loop=15 factor=0}, lt-gpu-auto{threads=256})' --emit=ptx 2>/dev/null | filecheck %s --check-prefix=PTX
// PTX-DAG: .shared .align 16 .b8 lt_shared_2[2048];
// PTX-DAG: .shared .align 16 .b8 lt_shared_3[2048];
// PTX: cp.async.ca.shared.global [{{.*}}], [{{.*}}], 4;
// PTX: cp.async.commit_group;
// PTX: cp.async.commit_group;
// PTX-NEXT: cp.async.wait_group {{.*}}1;
// PTX-NEXT: bar.sync
// PTX-NOT: lt_shared_0
//
// A loop that is not block-level sequential (here inside a thread loop:
// its tile is the thread's own) runs as it is on the GPU too.
// RUN: lt-opt %s -p 'builtin.module(lt-split{loop=2 factor=8}, lt-cache{loop=2 operand=1}, lt-double-buffer{loop=2}, lt-gpu-auto{threads=7})' --emit=ptx 2>/dev/null | filecheck %s --check-prefix=THREADS
// THREADS: .entry mm_kernel(
// THREADS-NOT: cp.async
// RUN: lt-opt %s --run --repeat 1 --target cuda-emulated -p 'builtin.module(lt-split{loop=2 factor=8}, lt-cache{loop=2 operand=1}, lt-double-buffer{loop=2}, lt-gpu-auto{threads=7})' | filecheck %s --check-prefix=SUM
//
// Refused: a tail iteration of L (k in 3 r 8 over slices of 8), a loop
// without a cache, a GPU-mapped loop, a loop of one iteration, a body with
// something else before the copies, a loop already annotated, no such loop.
// RUN: not lt-opt %s -p 'builtin.module(lt-split{loop=2 factor=12}, lt-cache{loop=2 operand=1}, lt-double-buffer{loop=2})' 2>&1 | filecheck %s --check-prefix=TAIL
// RUN: not lt-opt %s -p 'builtin.module(lt-double-buffer{loop=2})' 2>&1 | filecheck %s --check-prefix=NOCACHE
// RUN: not lt-opt %s -p 'builtin.module(lt-cache{loop=1 operand=1}, lt-gpu-map{loop=0 to=block}, lt-gpu-map{loop=1 to=thread}, lt-double-buffer{loop=1})' 2>&1 | filecheck %s --check-prefix=MAPPED
// RUN: not lt-opt %s -p 'builtin.module(lt-split{loop=2 factor=32}, lt-cache{loop=2 operand=1}, lt-double-buffer{loop=2})' 2>&1 | filecheck %s --check-prefix=ONCE
// RUN: not lt-opt %s -p 'builtin.module(lt-double-buffer{loop=3})' 2>&1 | filecheck %s --check-prefix=FIRST
// RUN: not lt-opt %s -p 'builtin.module(lt-distribute{loop=1}, lt-distribute{loop=0}, lt-split{loop=2 factor=32}, lt-split{loop=3 factor=4}, lt-split{loop=5 factor=32}, lt-split{loop=6 factor=4}, lt-split{loop=8 factor=8}, lt-swap{loop=4}, lt-swap{loop=5}, lt-swap{loop=7}, lt-swap{loop=8}, lt-swap{loop=3}, lt-swap{loop=6}, lt-swap{loop=7}, lt-swap{loop=5}, lt-swap{loop=4}, lt-cache{loop=4 operand=0}, lt-double-buffer{loop=4}, lt-double-buffer{loop=4})' 2>&1 | filecheck %s --check-prefix=TWICE
// RUN: not lt-opt %s -p 'builtin.module(lt-double-buffer{loop=9})' 2>&1 | filecheck %s --check-prefix=LOOP
// TAIL: error: lt-double-buffer: L2 "for k in 2 r 8" has a tail iteration: make its iterations divide the dim
// NOCACHE: error: lt-double-buffer: L2 "for k in 32": its body has no lt-cache buffer to fill ahead
// MAPPED: error: lt-double-buffer: L1 "for n in 48" is annotated 'gpu': double buffering pipelines a sequential loop
// ONCE: error: lt-double-buffer: L2 "for k in 1" runs once: nothing to overlap
// FIRST: error: lt-double-buffer: L3 "for k in 2": its body does not start with the copy nest of an lt-cache buffer
// TWICE: error: lt-double-buffer: L4 "for k in 4" is annotated 'double_buffer'
// LOOP: error: lt-double-buffer: no loop L9 (the loop tree has L0..L5)

func.func @mm(%A: memref<64x32xf32> {lt.name = "A"}, %B: memref<32x48xf32> {lt.name = "B"}, %C: memref<64x48xf32> {lt.name = "C"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i2: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    "lt.loop"() ({
    ^bb0(%i1: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      memref.store %zero, %C[%m, %n] : memref<64x48xf32>
      "lt.loop"() ({
      ^bb0(%i0: index):
        %k = "lt.dim"() {dim = "k"} : () -> index
        %a = memref.load %A[%m, %k] : memref<64x32xf32>
        %b = memref.load %B[%k, %n] : memref<32x48xf32>
        %p = arith.mulf %a, %b : f32
        "lt.reduce"(%p, %C, %m, %n) {kind = "add"} : (f32, memref<64x48xf32>, index, index) -> ()
      }) {dim = "k", size = 32 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "n", size = 48 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 64 : i64, tail = 0 : i64} : () -> ()
  return
}

// Something before the copy nest (a hand-made cache buffer).
func.func @early(%X: memref<2x4xf32> {lt.name = "X"}, %Y: memref<4xf32> {lt.name = "Y"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%a: index):
    %k = "lt.dim"() {dim = "k"} : () -> index
    memref.store %zero, %Y[%k] : memref<4xf32>
    %t = "lt.alloc"() {dims = ["i"], lt.cache = 0 : i64} : () -> memref<4xf32>
    "lt.loop"() ({
    ^bb0(%b: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %x = memref.load %X[%k, %i] : memref<2x4xf32>
      memref.store %x, %t[%i] : memref<4xf32>
    }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%c: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %v = memref.load %t[%i] : memref<4xf32>
      "lt.reduce"(%v, %Y, %i) {kind = "add"} : (f32, memref<4xf32>, index) -> ()
    }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "k", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}
