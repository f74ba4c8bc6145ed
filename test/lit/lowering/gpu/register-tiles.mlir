// Register tiles across a block-level sequential loop (lowering/gpu/
// register_tiles.py): a thread loop nest in a sequential loop of the block
// loop that reduces into elements each thread owns (its index reads every
// thread loop's dim and otherwise only fully unrolled loops') keeps them in
// a per-thread buffer (a memref.alloca of the unrolled loops' extents, which
// LLVM keeps in registers), loaded before the sequential loop and stored
// after it, instead of loading and storing Y once an iteration.
//
// Normal and tail cases: k in 3 r 4 (the tail slice), n in 3 r 1 [thread]
// (thread 3 owns one element of its pair: its tile is loaded and stored at
// slot 0 only).
// RUN: lt-opt %s -p 'builtin.module(lt-gpu-map{loop=0 to=block}, lt-gpu-map{loop=2 to=thread}, lt-unroll{loop=4 factor=0})' --emit=loop-tree | filecheck %s --check-prefix=TREE --match-full-lines --strict-whitespace
// RUN: lt-opt %s -p 'builtin.module(lt-gpu-map{loop=0 to=block}, lt-gpu-map{loop=2 to=thread}, lt-unroll{loop=4 factor=0}, lower-lt-to-gpu, canonicalize, cse)' | filecheck %s
// The same numbers on the CPU and through the GPU lowering, emulated (each
// emulated thread its own tile):
// RUN: lt-opt %s --run --repeat 1 | filecheck %s --check-prefix=SUM
// RUN: lt-opt %s --run --repeat 1 --target=cuda-emulated -p 'builtin.module(lt-gpu-map{loop=0 to=block}, lt-gpu-map{loop=2 to=thread}, lt-unroll{loop=4 factor=0})' | filecheck %s --check-prefix=SUM
// SUM: arg1 f32[4, 7] checksum 42.0184
//
// Refused: n' not unrolled (a tile indexed at run time would live in local
// memory, not registers): Y is read and written inside the k loop, as before.
// RUN: lt-opt %s -p 'builtin.module(lt-gpu-map{loop=0 to=block}, lt-gpu-map{loop=2 to=thread}, lower-lt-to-gpu, canonicalize, cse)' | filecheck %s --check-prefix=KEEP
//
//      TREE:for m in 4 : L0 [gpu block]
// TREE-NEXT: for k in 3 r 4 : L1
// TREE-NEXT:  for n in 3 r 1 : L2 [gpu thread]
// TREE-NEXT:   for k' in 12 : L3
// TREE-NEXT:    for n' in 2 : L4 [unroll full]
// TREE-NEXT:     %0 <- read X[m, k]
// TREE-NEXT:     Y[m, n] += %0
//
// CHECK-LABEL: func.func @rows(
// CHECK:         gpu.launch
// CHECK-NEXT:      %[[TILE:.*]] = memref.alloca() : memref<2xf32>
// CHECK:           scf.if
// CHECK:             %[[Y0:.*]] = memref.load %arg1[%{{.*}}] : memref<4x7xf32>
// CHECK-NEXT:        memref.store %[[Y0]], %[[TILE]][%[[C0:.*]]] : memref<2xf32>
// CHECK:             %[[Y1:.*]] = memref.load %arg1[%{{.*}}] : memref<4x7xf32>
// CHECK-NEXT:        memref.store %[[Y1]], %[[TILE]][%[[C1:.*]]] : memref<2xf32>
// CHECK:           scf.if
// CHECK-NEXT:        memref.load %arg1[%{{.*}}, %c6] : memref<4x7xf32>
// CHECK-NEXT:        memref.store %{{.*}}, %[[TILE]][%[[C0]]] : memref<2xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      scf.for
// CHECK-NOT:         %arg1[
// CHECK:           gpu.barrier
// CHECK-NEXT:      scf.if
// CHECK:             memref.load %[[TILE]][%[[C0]]] : memref<2xf32>
// CHECK-NEXT:        memref.store %{{.*}}, %arg1[%{{.*}}] : memref<4x7xf32>
// CHECK:             memref.load %[[TILE]][%[[C1]]] : memref<2xf32>
// CHECK-NEXT:        memref.store %{{.*}}, %arg1[%{{.*}}] : memref<4x7xf32>
// CHECK:           scf.if
// CHECK-NEXT:        memref.load %[[TILE]][%[[C0]]] : memref<2xf32>
// CHECK-NEXT:        memref.store %{{.*}}, %arg1[%{{.*}}, %c6] : memref<4x7xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      gpu.terminator
//
// KEEP:         gpu.launch
// KEEP-NOT:       memref.alloca
// KEEP:           scf.for
// KEEP:             scf.for
// KEEP:               memref.load %arg1
// KEEP:               memref.store %{{.*}}, %arg1

func.func @rows(%X: memref<4x40xf32> {lt.name = "X"}, %Y: memref<4x7xf32> {lt.name = "Y"}) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    "lt.loop"() ({
    ^bb0(%i1: index):
      "lt.loop"() ({
      ^bb0(%i2: index):
        "lt.loop"() ({
        ^bb0(%i3: index):
          "lt.loop"() ({
          ^bb0(%i4: index):
            %k = "lt.dim"() {dim = "k"} : () -> index
            %n = "lt.dim"() {dim = "n"} : () -> index
            %x = memref.load %X[%m, %k] : memref<4x40xf32>
            "lt.reduce"(%x, %Y, %m, %n) {kind = "add"} : (f32, memref<4x7xf32>, index, index) -> ()
          }) {dim = "n", size = 2 : i64, tail = 0 : i64} : () -> ()
        }) {dim = "k", size = 12 : i64, tail = 0 : i64} : () -> ()
      }) {dim = "n", size = 3 : i64, tail = 1 : i64} : () -> ()
    }) {dim = "k", size = 3 : i64, tail = 4 : i64} : () -> ()
  }) {dim = "m", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}
