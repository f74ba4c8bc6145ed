// lower-lt-to-gpu: each kernel (mapped loop nest at the top of a function)
// becomes a gpu.launch sized by its mapped loops; other top-level
// statements become a launch of one thread.  A mapped loop's iterations are
// its block/thread ids; the tail iteration and ids past a clipped extent are
// predicated off with scf.if.  A reduction that threads share accumulates
// per thread (an alloca), is combined across the warp with shuffles, and
// lane 0 adds it atomically.
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lower-lt-to-gpu, canonicalize, cse)' -o %t 2>&1 | filecheck %s --check-prefix=ERR
// RUN: filecheck %s --input-file=%t
// RUN: sed -n '/^func.func @add(/,/^}/p' %s | lt-opt - -p 'builtin.module(lower-lt-to-gpu{emulate=1}, canonicalize, cse)' | filecheck %s --check-prefix=EMU
//
// Emulated (the cuda-emulated target): the same predicated kernel with the
// 4 blocks and 256 threads as sequential loops, no gpu.launch.
// EMU-LABEL: func.func @add(
// EMU-NOT:       gpu.launch
// EMU:           scf.for %[[B:.*]] = %{{.*}} to %[[C4:.*]] step
// EMU-NEXT:        %[[FULL:.*]] = arith.cmpi ult, %[[B]], %{{.*}} : index
// EMU-NEXT:        scf.if %[[FULL]] {
// EMU-NEXT:          %[[B0:.*]] = arith.muli %[[B]], %{{.*}} : index
// EMU-NEXT:          scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step
// EMU-NEXT:            %[[I:.*]] = arith.addi %[[B0]], %[[T]] : index
// EMU-NEXT:            memref.load %{{.*}}[%[[I]]] : memref<1000xf32>
// EMU:             %[[TAIL:.*]] = arith.cmpi eq, %[[B]], %{{.*}} : index
// EMU-NEXT:        scf.if %[[TAIL]] {
// EMU-NEXT:          scf.for %[[T2:.*]] = %{{.*}} to %{{.*}} step
// EMU-NEXT:            %[[LIVE:.*]] = arith.cmpi ult, %[[T2]], %{{.*}} : index
// EMU-NEXT:            scf.if %[[LIVE]] {
// EMU-NOT:       gpu.launch
// EMU:           return
//
// Tail case: 1000 = 3 r 232 blocks of 256 threads: 4 blocks; blocks 0..2 run
// every thread, block 3 threads 0..231 at offset 768.
// CHECK-LABEL: func.func @add(
// CHECK-DAG:     %[[C768:.*]] = arith.constant 768 : index
// CHECK-DAG:     %[[C232:.*]] = arith.constant 232 : index
// CHECK-DAG:     %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG:     %[[C256:.*]] = arith.constant 256 : index
// CHECK:         gpu.launch blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C4]], %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) threads(%[[T:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C256]],
// CHECK-NEXT:      %[[FULL:.*]] = arith.cmpi ult, %[[B]], %[[C3]] : index
// CHECK-NEXT:      scf.if %[[FULL]] {
// CHECK-NEXT:        %[[B0:.*]] = arith.muli %[[B]], %[[C256]] : index
// CHECK-NEXT:        %[[I:.*]] = arith.addi %[[B0]], %[[T]] : index
// CHECK-NEXT:        memref.load %{{.*}}[%[[I]]] : memref<1000xf32>
// CHECK:             memref.store %{{.*}}, %{{.*}}[%[[I]]] : memref<1000xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[TAIL:.*]] = arith.cmpi eq, %[[B]], %[[C3]] : index
// CHECK-NEXT:      scf.if %[[TAIL]] {
// CHECK-NEXT:        %[[LIVE:.*]] = arith.cmpi ult, %[[T]], %[[C232]] : index
// CHECK-NEXT:        scf.if %[[LIVE]] {
// CHECK-NEXT:          %[[J:.*]] = arith.addi %[[T]], %[[C768]] : index
// CHECK-NEXT:          memref.load %{{.*}}[%[[J]]] : memref<1000xf32>
// CHECK:               memref.store %{{.*}}, %{{.*}}[%[[J]]] : memref<1000xf32>
// CHECK:           gpu.terminator
//
// Reduction case: S[] = 0 runs on one thread; then 2 x 256 threads each sum
// a column of 64 into a private accumulator, shuffle-combine across the warp,
// lane 0 of each warp writes a shared slot, a barrier, warp 0 (every warp,
// converged) combines the 8 slots, a barrier, one atomic a block.
// CHECK-LABEL: func.func @total_sum(
// CHECK:         gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %[[ONE:.*]], %{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]]) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]]) {
// CHECK-NEXT:      memref.store %{{.*}}, %[[S:.*]][] : memref<f32>
// CHECK-NEXT:      gpu.terminator
// CHECK:         gpu.launch blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C2:.*]], %{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]]) threads(%[[T:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C256:.*]], %{{.*}} = %[[ONE]], %{{.*}} = %[[ONE]]) {
// CHECK-NEXT:      %[[P:.*]] = memref.alloca() : memref<f32>
// CHECK:           memref.store %{{.*}}, %[[P]][] : memref<f32>
// CHECK-NEXT:      scf.for %[[M:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:        memref.load %{{.*}}[%[[M]], %{{.*}}] : memref<64x512xf32>
// CHECK-NEXT:        memref.load %[[P]][] : memref<f32>
// CHECK-NEXT:        arith.addf
// CHECK-NEXT:        memref.store %{{.*}}, %[[P]][] : memref<f32>
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[V:.*]] = memref.load %[[P]][] : memref<f32>
// CHECK-NEXT:      %[[X:.*]], %{{.*}} = gpu.shuffle xor %[[V]], %{{.*}}, %{{.*}} : f32
// CHECK-COUNT-4:   gpu.shuffle xor
// CHECK:           %[[LANE:.*]] = gpu.lane_id
// CHECK-NEXT:      %[[FIRST:.*]] = arith.cmpi eq, %[[LANE]], %{{.*}} : index
// CHECK-NEXT:      %[[SLOTS:.*]] = memref.get_global @lt_shared_0 : memref<8xf32, 3>
// CHECK-NEXT:      %[[WARP:.*]] = arith.divui %[[T]], %{{.*}} : index
// CHECK-NEXT:      scf.if %[[FIRST]] {
// CHECK-NEXT:        memref.store %{{.*}}, %[[SLOTS]][%[[WARP]]] : memref<8xf32, 3>
// CHECK-NEXT:      }
// CHECK-NEXT:      gpu.barrier
// CHECK-NEXT:      %[[PRESENT:.*]] = arith.cmpi ult, %[[LANE]], %{{.*}} : index
// CHECK-NEXT:      %[[W:.*]] = scf.if %[[PRESENT]] -> (f32) {
// CHECK-NEXT:        memref.load %[[SLOTS]][%[[LANE]]] : memref<8xf32, 3>
// CHECK:           } else {
// CHECK-NEXT:        scf.yield %{{.*}} : f32
// CHECK-NEXT:      }
// CHECK-NEXT:      gpu.shuffle xor %[[W]]
// CHECK-COUNT-4:   gpu.shuffle xor
// CHECK:           gpu.barrier
// CHECK-NEXT:      %[[T0:.*]] = arith.cmpi eq, %[[T]], %{{.*}} : index
// CHECK-NEXT:      scf.if %[[T0]] {
// CHECK-NEXT:        memref.atomic_rmw addf %{{.*}}, %[[S2:.*]][] : (f32, memref<f32>) -> f32
// CHECK-NEXT:      }
//
// Side by side: a block a row; thread 0 stores S[m] = 0, a barrier, then the
// 1000 threads add their elements (1000 is no multiple of 32: no shuffles).
// CHECK-LABEL: func.func @row_sum(
// CHECK:         gpu.launch blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C4:.*]], %{{.*}}) threads(%[[T:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C1000:.*]], %{{.*}}, %{{.*}}) {
// CHECK-NEXT:      %[[FIRST:.*]] = arith.cmpi eq, %[[T]], %{{.*}} : index
// CHECK-NEXT:      scf.if %[[FIRST]] {
// CHECK-NEXT:        memref.store %{{.*}}, %[[S:.*]][%[[B]]] : memref<4xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      gpu.barrier
// CHECK-NEXT:      %[[A:.*]] = memref.load %{{.*}}[%[[B]], %[[T]]] : memref<4x1000xf32>
// CHECK-NEXT:      memref.atomic_rmw addf %[[A]], %[[S]][%[[B]]] : (f32, memref<4xf32>) -> f32
// CHECK-NEXT:      gpu.terminator
//
// Block-shared buffer: %t, allocated in the block loop, is a shared-memory
// global (address space 3); thread 0 initialises it, a barrier, the 1024
// threads combine their maxima into it (shuffles, slots, one atomic a block,
// on shared memory), a barrier, and the threads read it.
// CHECK-LABEL: func.func @row_max(
// CHECK:         gpu.launch blocks(%[[B:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %{{.*}}, %{{.*}}) threads(%[[T:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C1024:.*]], %{{.*}}, %{{.*}}) {
// CHECK-NEXT:      %[[TILE:.*]] = memref.get_global @lt_shared_{{.}} : memref<1xf32, 3>
// CHECK:           scf.if
// CHECK-NEXT:        memref.store %{{.*}}, %[[TILE]][%{{.*}}] : memref<1xf32, 3>
// CHECK-NEXT:      }
// CHECK-NEXT:      gpu.barrier
// CHECK:           memref.get_global @lt_shared_{{.}} : memref<32xf32, 3>
// CHECK:           gpu.barrier
// CHECK:           gpu.barrier
// CHECK:           memref.atomic_rmw maximumf %{{.*}}, %[[TILE]][%{{.*}}] : (f32, memref<1xf32, 3>) -> f32
// CHECK:           gpu.barrier
// CHECK-NEXT:      memref.load %[[TILE]][%{{.*}}] : memref<1xf32, 3>
//
// Refused: a mapped loop inside an unmapped one (only hand-written IR gets here;
// lt-gpu-map refuses to make it).
// ERR: lower-lt-to-gpu.mlir:[[# @LINE + 44]]:5: error: lower-lt-to-gpu: illegal GPU mapping: it is inside an unmapped loop

func.func @add(%A: memref<1000xf32> {lt.name = "A"}, %B: memref<1000xf32> {lt.name = "B"}, %C: memref<1000xf32> {lt.name = "C"}) {
  "lt.loop"() ({
  ^bb0(%i1: index):
    "lt.loop"() ({
    ^bb0(%i0: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %a = memref.load %A[%i] : memref<1000xf32>
      %b = memref.load %B[%i] : memref<1000xf32>
      %c = arith.addf %a, %b : f32
      memref.store %c, %C[%i] : memref<1000xf32>
    }) {dim = "i", size = 256 : i64, tail = 0 : i64, lt.gpu = "thread"} : () -> ()
  }) {dim = "i", size = 3 : i64, tail = 232 : i64, lt.gpu = "block"} : () -> ()
  return
}

// -----

func.func @total_sum(%A: memref<64x512xf32> {lt.name = "A"}, %S: memref<f32> {lt.name = "S"}) {
  %init = arith.constant 0.0 : f32
  memref.store %init, %S[] : memref<f32>
  "lt.loop"() ({
  ^bb0(%i2: index):
    "lt.loop"() ({
    ^bb0(%i1: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      "lt.loop"() ({
      ^bb0(%i0: index):
        %m = "lt.dim"() {dim = "m"} : () -> index
        %a = memref.load %A[%m, %n] : memref<64x512xf32>
        "lt.reduce"(%a, %S) {kind = "add"} : (f32, memref<f32>) -> ()
      }) {dim = "m", size = 64 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "n", size = 256 : i64, tail = 0 : i64, lt.gpu = "thread"} : () -> ()
  }) {dim = "n", size = 2 : i64, tail = 0 : i64, lt.gpu = "block"} : () -> ()
  return
}

// -----

func.func @nested(%A: memref<4x8xf32> {lt.name = "A"}, %C: memref<4x8xf32> {lt.name = "C"}) {
  "lt.loop"() ({
  ^bb0(%i1: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    "lt.loop"() ({
    ^bb0(%i0: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %a = memref.load %A[%m, %n] : memref<4x8xf32>
      memref.store %a, %C[%m, %n] : memref<4x8xf32>
    }) {dim = "n", size = 8 : i64, tail = 0 : i64, lt.gpu = "thread"} : () -> ()
  }) {dim = "m", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

func.func @row_sum(%A: memref<4x1000xf32> {lt.name = "A"}, %S: memref<4xf32> {lt.name = "S"}) {
  %init = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i1: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    memref.store %init, %S[%m] : memref<4xf32>
    "lt.loop"() ({
    ^bb0(%i0: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %a = memref.load %A[%m, %n] : memref<4x1000xf32>
      "lt.reduce"(%a, %S, %m) {kind = "add"} : (f32, memref<4xf32>, index) -> ()
    }) {dim = "n", size = 1000 : i64, tail = 0 : i64, lt.gpu = "thread"} : () -> ()
  }) {dim = "m", size = 4 : i64, tail = 0 : i64, lt.gpu = "block"} : () -> ()
  return
}

// -----

func.func @row_max(%A: memref<4x1024xf32> {lt.name = "A"}, %Y: memref<4x1024xf32> {lt.name = "Y"}) {
  %ninf = arith.constant 0xFF800000 : f32
  "lt.loop"() ({
  ^bb0(%i1: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    %t = "lt.alloc"() {dims = ["m"]} : () -> memref<1xf32>
    %m0 = "lt.dim"() {dim = "m"} : () -> index
    %r = arith.subi %m, %m0 : index
    memref.store %ninf, %t[%r] : memref<1xf32>
    "lt.loop"() ({
    ^bb0(%i0: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %a = memref.load %A[%m, %n] : memref<4x1024xf32>
      "lt.reduce"(%a, %t, %r) {kind = "max"} : (f32, memref<1xf32>, index) -> ()
    }) {dim = "n", size = 1024 : i64, tail = 0 : i64, lt.gpu = "thread"} : () -> ()
    "lt.loop"() ({
    ^bb0(%i0: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %x = memref.load %t[%r] : memref<1xf32>
      memref.store %x, %Y[%m, %n] : memref<4x1024xf32>
    }) {dim = "n", size = 1024 : i64, tail = 0 : i64, lt.gpu = "thread"} : () -> ()
  }) {dim = "m", size = 4 : i64, tail = 0 : i64, lt.gpu = "block"} : () -> ()
  return
}
