// lt-shrink-buffers on a GPU block whose tile passes the 48 KiB of shared
// memory a block may declare: a tile that each thread owns element by
// element (every access from thread chains of one shape, the thread's n on
// the n axis: gpu_mapping.owned_plan) moves into the block anyway -- the
// CUDA lowering keeps each thread's elements as its own, no shared memory
// (@owned: 64 KiB a block).  One that threads share (@reversed reads
// T[m, 63 - n, e]: another thread's row) stays in device memory (refused
// from the block).  The tail case: e split 5 r 16 over 48 first.
// RUN: sed -n '/^func.func @owned(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-shrink-buffers)' --emit=loop-tree 2>&1 | filecheck %s --check-prefix=OWNED
// RUN: sed -n '/^func.func @owned(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-split{loop=2 factor=48}, lt-shrink-buffers)' --emit=loop-tree 2>&1 | filecheck %s --check-prefix=TAIL
// RUN: sed -n '/^func.func @reversed(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-shrink-buffers)' --emit=loop-tree 2>&1 | filecheck %s --check-prefix=SHARED
// Same checksums (emulated) before and after.
// RUN: sed -n '/^func.func @owned(/,/^}/p' %s | lt-opt - --run --repeat 1 --target cuda-emulated | filecheck %s --check-prefix=SUM
// RUN: sed -n '/^func.func @owned(/,/^}/p' %s | lt-opt - --run --repeat 1 --target cuda-emulated -p 'builtin.module(lt-shrink-buffers)' | filecheck %s --check-prefix=SUM
// RUN: sed -n '/^func.func @owned(/,/^}/p' %s | lt-opt - --run --repeat 1 --target cuda-emulated -p 'builtin.module(lt-split{loop=2 factor=48}, lt-shrink-buffers)' | filecheck %s --check-prefix=SUM
// RUN: sed -n '/^func.func @reversed(/,/^}/p' %s | lt-opt - --run --repeat 1 --target cuda-emulated -p 'builtin.module(lt-shrink-buffers)' | filecheck %s --check-prefix=SUM
// SUM: arg1 f32[4, 64, 256] checksum 65855.5
//
// OWNED: remark: lt-shrink-buffers: %0 over [m, n, e]: 65536 -> 16384 elements (262144 -> 65536 bytes), in the block, each element one thread's
// OWNED: for m in 4 : L0 [gpu block]
// OWNED-NEXT: %0 <- alloc f32[m, n, e] (16384 elements)
// OWNED: %0[m - m, n, e] <- %2
// OWNED: %3 <- read %0[m - m, n, e]
//
// TAIL: remark: lt-shrink-buffers: %0 over [m, n, e]: 65536 -> 16384 elements
// TAIL: for m in 4 : L0 [gpu block]
// TAIL-NEXT: %0 <- alloc f32[m, n, e] (16384 elements)
// TAIL: for e in 5 r 16 : L2
//
// SHARED: remark: lt-shrink-buffers: no lt.alloc could shrink
// SHARED-NEXT: %0 <- alloc f32[m, n, e] (65536 elements)
// SHARED-NEXT: for m in 4 : L0 [gpu block]
// SHARED: %3 <- read %0[m, 63 - n, e]

func.func @owned(%X: memref<4x64x256xf32> {lt.name = "X"}, %Y: memref<4x64x256xf32> {lt.name = "Y"}) {
  %two = arith.constant 2.0 : f32
  %one = arith.constant 1.0 : f32
  %T = "lt.alloc"() {dims = ["m", "n", "e"]} : () -> memref<4x64x256xf32>
  "lt.loop"() ({
  ^bb0(%i0: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    "lt.loop"() ({
    ^bb0(%i1: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      "lt.loop"() ({
      ^bb0(%i2: index):
        %e = "lt.dim"() {dim = "e"} : () -> index
        %x = memref.load %X[%m, %n, %e] : memref<4x64x256xf32>
        %y = arith.mulf %x, %two : f32
        memref.store %y, %T[%m, %n, %e] : memref<4x64x256xf32>
      }) {dim = "e", size = 256 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "n", size = 64 : i64, tail = 0 : i64, lt.gpu = "thread"} : () -> ()
    "lt.loop"() ({
    ^bb0(%i3: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      "lt.loop"() ({
      ^bb0(%i4: index):
        %e = "lt.dim"() {dim = "e"} : () -> index
        %r = "lt.dim"() {dim = "n"} : () -> index
        %t = memref.load %T[%m, %r, %e] : memref<4x64x256xf32>
        %z = arith.addf %t, %one : f32
        memref.store %z, %Y[%m, %n, %e] : memref<4x64x256xf32>
      }) {dim = "e", size = 256 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "n", size = 64 : i64, tail = 0 : i64, lt.gpu = "thread"} : () -> ()
  }) {dim = "m", size = 4 : i64, tail = 0 : i64, lt.gpu = "block"} : () -> ()
  return
}

func.func @reversed(%X: memref<4x64x256xf32> {lt.name = "X"}, %Y: memref<4x64x256xf32> {lt.name = "Y"}) {
  %two = arith.constant 2.0 : f32
  %one = arith.constant 1.0 : f32
  %T = "lt.alloc"() {dims = ["m", "n", "e"]} : () -> memref<4x64x256xf32>
  "lt.loop"() ({
  ^bb0(%i0: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    "lt.loop"() ({
    ^bb0(%i1: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      "lt.loop"() ({
      ^bb0(%i2: index):
        %e = "lt.dim"() {dim = "e"} : () -> index
        %x = memref.load %X[%m, %n, %e] : memref<4x64x256xf32>
        %y = arith.mulf %x, %two : f32
        memref.store %y, %T[%m, %n, %e] : memref<4x64x256xf32>
      }) {dim = "e", size = 256 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "n", size = 64 : i64, tail = 0 : i64, lt.gpu = "thread"} : () -> ()
    "lt.loop"() ({
    ^bb0(%i3: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      "lt.loop"() ({
      ^bb0(%i4: index):
        %e = "lt.dim"() {dim = "e"} : () -> index
        %last = arith.constant 63 : index
        %r = arith.subi %last, %n : index
        %t = memref.load %T[%m, %r, %e] : memref<4x64x256xf32>
        %z = arith.addf %t, %one : f32
        memref.store %z, %Y[%m, %n, %e] : memref<4x64x256xf32>
      }) {dim = "e", size = 256 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "n", size = 64 : i64, tail = 0 : i64, lt.gpu = "thread"} : () -> ()
  }) {dim = "m", size = 4 : i64, tail = 0 : i64, lt.gpu = "block"} : () -> ()
  return
}
