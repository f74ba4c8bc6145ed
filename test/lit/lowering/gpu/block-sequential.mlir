// Thread loops inside a sequential loop of the innermost block loop (the
// k-slices of a shared-memory GEMM): every thread of the block runs the
// sequential loop; its body is split into parts like the block loop's, with
// a gpu.barrier between the parts and one ending each iteration, so the next
// slice cannot overwrite the shared tile while other threads still read it.
// The tile, allocated in the block, is shared memory (address space 3).
//
// Normal and tail case: k in 3 r 4 slices of 12 (the last slice is 4 long:
// threads 4.. are predicated off in it, and still reach the barriers).
// RUN: lt-opt %s -p 'builtin.module(lt-gpu-map{loop=0 to=block}, lt-gpu-map{loop=2 to=thread}, lt-gpu-map{loop=3 to=thread})' --emit=loop-tree | filecheck %s --check-prefix=TREE --match-full-lines --strict-whitespace
// RUN: lt-opt %s -p 'builtin.module(lt-gpu-map{loop=0 to=block}, lt-gpu-map{loop=2 to=thread}, lt-gpu-map{loop=3 to=thread}, lower-lt-to-gpu, canonicalize, cse)' | filecheck %s
// The same numbers on the CPU and through the GPU lowering, emulated:
// RUN: lt-opt %s --run --repeat 1 | filecheck %s --check-prefix=SUM
// RUN: lt-opt %s --run --repeat 1 --target=cuda-emulated -p 'builtin.module(lt-gpu-map{loop=0 to=block}, lt-gpu-map{loop=2 to=thread}, lt-gpu-map{loop=3 to=thread})' | filecheck %s --check-prefix=SUM
// SUM: arg1 f32[4, 40] checksum 6.00263
//
// Refused: a sequential loop with an annotation between the block loop and
// the thread loops (an unrolled loop is not one every thread runs alike).
// RUN: not lt-opt %s -p 'builtin.module(lt-gpu-map{loop=0 to=block}, lt-unroll{loop=1 factor=3}, lt-gpu-map{loop=2 to=thread})' 2>&1 | filecheck %s --check-prefix=ERR
// ERR: error: lt-gpu-map: cannot map L2 "for k' in 12" to threads: its enclosing loop is not mapped; thread loops may sit in sequential loops of the innermost block loop only when no loop between has annotations
//
//      TREE:for m in 4 : L0 [gpu block]
// TREE-NEXT: for k in 3 r 4 : L1
// TREE-NEXT:  %0 <- alloc f32[k] (12 elements)
// TREE-NEXT:  for k' in 12 : L2 [gpu thread]
// TREE-NEXT:   %1 <- read X[m, k]
// TREE-NEXT:   %0[k - k] <- %1
// TREE-NEXT:  for k' in 12 : L3 [gpu thread]
// TREE-NEXT:   %2 <- read %0[k - k]
// TREE-NEXT:   %3 <- add(%2, %2)
// TREE-NEXT:   Y[m, k] <- %3
//
// CHECK-LABEL: func.func @tiles(
// CHECK:         gpu.launch blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %{{.*}}, %{{.*}}) threads(%[[T:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C12:.*]], %{{.*}}, %{{.*}}) {
// CHECK-NEXT:      %[[TILE:.*]] = memref.get_global @lt_shared_0 : memref<12xf32, 3>
// CHECK:           scf.for
// CHECK:             memref.store %{{.*}}, %[[TILE]][%{{.*}}] : memref<12xf32, 3>
// CHECK-NEXT:        gpu.barrier
// CHECK:             memref.load %[[TILE]][%{{.*}}] : memref<12xf32, 3>
// CHECK:             memref.store
// CHECK-NEXT:        gpu.barrier
// CHECK-NEXT:      }
// The tail slice: the copy guarded to threads 0..3, the barriers outside the guards.
// CHECK:           %[[LIVE:.*]] = arith.cmpi ult, %[[T]], %{{.*}} : index
// CHECK-NEXT:      scf.if %[[LIVE]] {
// CHECK:             memref.store %{{.*}}, %[[TILE]][%{{.*}}] : memref<12xf32, 3>
// CHECK-NEXT:      }
// CHECK-NEXT:      gpu.barrier
// CHECK-NEXT:      scf.if %[[LIVE]] {
// CHECK:           }
// CHECK-NEXT:      gpu.barrier
// CHECK-NEXT:      gpu.terminator

func.func @tiles(%X: memref<4x40xf32> {lt.name = "X"}, %Y: memref<4x40xf32> {lt.name = "Y"}) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    "lt.loop"() ({
    ^bb0(%i1: index):
      %t = "lt.alloc"() {dims = ["k"]} : () -> memref<12xf32>
      %base = "lt.dim"() {dim = "k"} : () -> index
      "lt.loop"() ({
      ^bb0(%i2: index):
        %k = "lt.dim"() {dim = "k"} : () -> index
        %x = memref.load %X[%m, %k] : memref<4x40xf32>
        %r = arith.subi %k, %base : index
        memref.store %x, %t[%r] : memref<12xf32>
      }) {dim = "k", size = 12 : i64, tail = 0 : i64} : () -> ()
      "lt.loop"() ({
      ^bb0(%i2: index):
        %k = "lt.dim"() {dim = "k"} : () -> index
        %r = arith.subi %k, %base : index
        %v = memref.load %t[%r] : memref<12xf32>
        %d = arith.addf %v, %v : f32
        memref.store %d, %Y[%m, %k] : memref<4x40xf32>
      }) {dim = "k", size = 12 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "k", size = 3 : i64, tail = 4 : i64} : () -> ()
  }) {dim = "m", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}
