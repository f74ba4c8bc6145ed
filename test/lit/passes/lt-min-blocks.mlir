// lt-min-blocks{loop=L blocks=N}: the kernel rooted at block loop L asks
// the assembler to fit N of its blocks on a multiprocessor (PTX
// .minnctapersm N, CUDA's __launch_bounds__(threads, N)): its registers
// are capped at 65536 / (N x threads).  The schedule is
// recipes.gpu_tiled_matmul(tile=32, regs=4, k_tile=8) on a 64 x 48 x 32
// matmul (n's second block a tail of 16 columns).
//
// The normal case: the annotation, the kernel's .minnctapersm (the first
// kernel, C's initialisation, has none), the same results emulated.
// RUN: lt-opt %s -p 'builtin.module(lt-distribute{loop=1}, lt-distribute{loop=0}, lt-split{loop=2 factor=32}, lt-split{loop=3 factor=4}, lt-split{loop=5 factor=32}, lt-split{loop=6 factor=4}, lt-split{loop=8 factor=8}, lt-swap{loop=4}, lt-swap{loop=5}, lt-swap{loop=7}, lt-swap{loop=8}, lt-swap{loop=3}, lt-swap{loop=6}, lt-swap{loop=7}, lt-swap{loop=5}, lt-swap{loop=4}, lt-cache{loop=4 operand=0}, lt-cache{loop=4 operand=1}, lt-split{loop=6 factor=8}, lt-swap{loop=5}, lt-split{loop=8 factor=8}, lt-gpu-map{loop=2 to=block}, lt-gpu-map{loop=3 to=block}, lt-gpu-map{loop=6 to=thread}, lt-gpu-map{loop=7 to=thread}, lt-gpu-map{loop=9 to=thread}, lt-gpu-map{loop=10 to=thread}, lt-gpu-map{loop=11 to=thread}, lt-gpu-map{loop=12 to=thread}, lt-unroll{loop=14 factor=0}, lt-unroll{loop=15 factor=0}, lt-gpu-auto{threads=256}, lt-min-blocks{loop=2 blocks=2})' --emit=loop-tree 2>&1 | filecheck %s --check-prefix=TREE
// TREE: remark: lt-min-blocks: L2 "for m in 2": the kernel asks for 2 blocks a multiprocessor
// TREE: for m in 2 : L2 [gpu block, min_blocks 2]
// RUN: lt-opt %s -p 'builtin.module(lt-distribute{loop=1}, lt-distribute{loop=0}, lt-split{loop=2 factor=32}, lt-split{loop=3 factor=4}, lt-split{loop=5 factor=32}, lt-split{loop=6 factor=4}, lt-split{loop=8 factor=8}, lt-swap{loop=4}, lt-swap{loop=5}, lt-swap{loop=7}, lt-swap{loop=8}, lt-swap{loop=3}, lt-swap{loop=6}, lt-swap{loop=7}, lt-swap{loop=5}, lt-swap{loop=4}, lt-cache{loop=4 operand=0}, lt-cache{loop=4 operand=1}, lt-split{loop=6 factor=8}, lt-swap{loop=5}, lt-split{loop=8 factor=8}, lt-gpu-map{loop=2 to=block}, lt-gpu-map{loop=3 to=block}, lt-gpu-map{loop=6 to=thread}, lt-gpu-map{loop=7 to=thread}, lt-gpu-map{loop=9 to=thread}, lt-gpu-map{loop=10 to=thread}, lt-gpu-map{loop=11 to=thread}, lt-gpu-map{loop=12 to=thread}, lt-unroll{loop=14 factor=0}, lt-unroll{loop=15 factor=0}, lt-gpu-auto{threads=256}, lt-min-blocks{loop=2 blocks=2})' --emit=ptx 2>/dev/null | filecheck %s --check-prefix=PTX
// PTX: .entry mm_kernel(
// PTX-NOT: .minnctapersm
// PTX: .entry mm_kernel_0(
// PTX: .maxntid 8, 8, 1
// PTX-NEXT: .minnctapersm 2
// RUN: lt-opt %s --run --repeat 1 | filecheck %s --check-prefix=SUM
// RUN: lt-opt %s --run --repeat 1 --target cuda-emulated -p 'builtin.module(lt-distribute{loop=1}, lt-distribute{loop=0}, lt-split{loop=2 factor=32}, lt-split{loop=3 factor=4}, lt-split{loop=5 factor=32}, lt-split{loop=6 factor=4}, lt-split{loop=8 factor=8}, lt-swap{loop=4}, lt-swap{loop=5}, lt-swap{loop=7}, lt-swap{loop=8}, lt-swap{loop=3}, lt-swap{loop=6}, lt-swap{loop=7}, lt-swap{loop=5}, lt-swap{loop=4}, lt-cache{loop=4 operand=0}, lt-cache{loop=4 operand=1}, lt-split{loop=6 factor=8}, lt-swap{loop=5}, lt-split{loop=8 factor=8}, lt-gpu-map{loop=2 to=block}, lt-gpu-map{loop=3 to=block}, lt-gpu-map{loop=6 to=thread}, lt-gpu-map{loop=7 to=thread}, lt-gpu-map{loop=9 to=thread}, lt-gpu-map{loop=10 to=thread}, lt-gpu-map{loop=11 to=thread}, lt-gpu-map{loop=12 to=thread}, lt-unroll{loop=14 factor=0}, lt-unroll{loop=15 factor=0}, lt-gpu-auto{threads=256}, lt-min-blocks{loop=2 blocks=3})' | filecheck %s --check-prefix=SUM
// SUM: arg2 f32[64, 48] checksum 33.4675
//
// The tail case: the kernel of the clipped matmul's init nest (48 columns
// on 256 threads: a guard on the thread id) asks for 8.
// RUN: lt-opt %s -p 'builtin.module(lt-distribute{loop=1}, lt-distribute{loop=0}, lt-split{loop=2 factor=32}, lt-split{loop=3 factor=4}, lt-split{loop=5 factor=32}, lt-split{loop=6 factor=4}, lt-split{loop=8 factor=8}, lt-swap{loop=4}, lt-swap{loop=5}, lt-swap{loop=7}, lt-swap{loop=8}, lt-swap{loop=3}, lt-swap{loop=6}, lt-swap{loop=7}, lt-swap{loop=5}, lt-swap{loop=4}, lt-cache{loop=4 operand=0}, lt-cache{loop=4 operand=1}, lt-split{loop=6 factor=8}, lt-swap{loop=5}, lt-split{loop=8 factor=8}, lt-gpu-map{loop=2 to=block}, lt-gpu-map{loop=3 to=block}, lt-gpu-map{loop=6 to=thread}, lt-gpu-map{loop=7 to=thread}, lt-gpu-map{loop=9 to=thread}, lt-gpu-map{loop=10 to=thread}, lt-gpu-map{loop=11 to=thread}, lt-gpu-map{loop=12 to=thread}, lt-unroll{loop=14 factor=0}, lt-unroll{loop=15 factor=0}, lt-gpu-auto{threads=256}, lt-min-blocks{loop=0 blocks=8})' --emit=ptx 2>/dev/null | filecheck %s --check-prefix=INIT
// INIT: .entry mm_kernel(
// INIT: .minnctapersm 8
//
// Refused: a thread loop, a block loop inside another, fewer than one
// block, an unmapped loop, no such loop.
// RUN: not lt-opt %s -p 'builtin.module(lt-distribute{loop=1}, lt-distribute{loop=0}, lt-split{loop=2 factor=32}, lt-split{loop=3 factor=4}, lt-split{loop=5 factor=32}, lt-split{loop=6 factor=4}, lt-split{loop=8 factor=8}, lt-swap{loop=4}, lt-swap{loop=5}, lt-swap{loop=7}, lt-swap{loop=8}, lt-swap{loop=3}, lt-swap{loop=6}, lt-swap{loop=7}, lt-swap{loop=5}, lt-swap{loop=4}, lt-cache{loop=4 operand=0}, lt-cache{loop=4 operand=1}, lt-split{loop=6 factor=8}, lt-swap{loop=5}, lt-split{loop=8 factor=8}, lt-gpu-map{loop=2 to=block}, lt-gpu-map{loop=3 to=block}, lt-gpu-map{loop=6 to=thread}, lt-gpu-map{loop=7 to=thread}, lt-gpu-map{loop=9 to=thread}, lt-gpu-map{loop=10 to=thread}, lt-gpu-map{loop=11 to=thread}, lt-gpu-map{loop=12 to=thread}, lt-unroll{loop=14 factor=0}, lt-unroll{loop=15 factor=0}, lt-gpu-auto{threads=256}, lt-min-blocks{loop=1})' 2>&1 | filecheck %s --check-prefix=THREAD
// RUN: not lt-opt %s -p 'builtin.module(lt-distribute{loop=1}, lt-distribute{loop=0}, lt-split{loop=2 factor=32}, lt-split{loop=3 factor=4}, lt-split{loop=5 factor=32}, lt-split{loop=6 factor=4}, lt-split{loop=8 factor=8}, lt-swap{loop=4}, lt-swap{loop=5}, lt-swap{loop=7}, lt-swap{loop=8}, lt-swap{loop=3}, lt-swap{loop=6}, lt-swap{loop=7}, lt-swap{loop=5}, lt-swap{loop=4}, lt-cache{loop=4 operand=0}, lt-cache{loop=4 operand=1}, lt-split{loop=6 factor=8}, lt-swap{loop=5}, lt-split{loop=8 factor=8}, lt-gpu-map{loop=2 to=block}, lt-gpu-map{loop=3 to=block}, lt-gpu-map{loop=6 to=thread}, lt-gpu-map{loop=7 to=thread}, lt-gpu-map{loop=9 to=thread}, lt-gpu-map{loop=10 to=thread}, lt-gpu-map{loop=11 to=thread}, lt-gpu-map{loop=12 to=thread}, lt-unroll{loop=14 factor=0}, lt-unroll{loop=15 factor=0}, lt-gpu-auto{threads=256}, lt-min-blocks{loop=3})' 2>&1 | filecheck %s --check-prefix=INNER
// RUN: not lt-opt %s -p 'builtin.module(lt-distribute{loop=1}, lt-distribute{loop=0}, lt-split{loop=2 factor=32}, lt-split{loop=3 factor=4}, lt-split{loop=5 factor=32}, lt-split{loop=6 factor=4}, lt-split{loop=8 factor=8}, lt-swap{loop=4}, lt-swap{loop=5}, lt-swap{loop=7}, lt-swap{loop=8}, lt-swap{loop=3}, lt-swap{loop=6}, lt-swap{loop=7}, lt-swap{loop=5}, lt-swap{loop=4}, lt-cache{loop=4 operand=0}, lt-cache{loop=4 operand=1}, lt-split{loop=6 factor=8}, lt-swap{loop=5}, lt-split{loop=8 factor=8}, lt-gpu-map{loop=2 to=block}, lt-gpu-map{loop=3 to=block}, lt-gpu-map{loop=6 to=thread}, lt-gpu-map{loop=7 to=thread}, lt-gpu-map{loop=9 to=thread}, lt-gpu-map{loop=10 to=thread}, lt-gpu-map{loop=11 to=thread}, lt-gpu-map{loop=12 to=thread}, lt-unroll{loop=14 factor=0}, lt-unroll{loop=15 factor=0}, lt-gpu-auto{threads=256}, lt-min-blocks{loop=2 blocks=0})' 2>&1 | filecheck %s --check-prefix=ZERO
// RUN: not lt-opt %s -p 'builtin.module(lt-min-blocks{loop=0})' 2>&1 | filecheck %s --check-prefix=PLAIN
// RUN: not lt-opt %s -p 'builtin.module(lt-min-blocks{loop=5})' 2>&1 | filecheck %s --check-prefix=LOOP
// THREAD: error: lt-min-blocks: L1 "for n in 48" is not a kernel's outermost block loop (map it to blocks first: lt-gpu-map)
// INNER: error: lt-min-blocks: L3 "for n in 1 r 16" is not a kernel's outermost block loop
// ZERO: error: lt-min-blocks: blocks must be at least 1, got 0
// PLAIN: error: lt-min-blocks: L0 "for m in 64" is not a kernel's outermost block loop
// LOOP: error: lt-min-blocks: no loop L5 (the loop tree has L0..L2)

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
