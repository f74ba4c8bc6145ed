// lt-parallel{loop=L}: mark L `lt.parallel`; lower-lt-to-scf emits an
// scf.parallel over its full iterations (the tail iteration runs after it),
// which the CPU pipeline turns into OpenMP.  Reductions into locations that
// several iterations share combine with memref.atomic_rmw.
//
// Every chunk below goes through the same pipeline, lt-parallel{loop=1}: the
// chunks it applies to print their loop tree (TREE), the others refuse with a
// located one-line error (ERR).  Lowered, @matmul_n and @rows show their scf
// code (LOWERN, LOWERT; one by one, as @row_sum does not lower, see below).
// RUN: not env LT_PARALLEL_MIN_WORK=0 lt-opt %s --split-input-file -p 'builtin.module(lt-parallel{loop=1})' --emit=loop-tree -o %t.tree 2>&1 | filecheck %s --check-prefix=ERR
// RUN: filecheck %s --input-file=%t.tree --check-prefix=TREE --match-full-lines --strict-whitespace
// RUN: sed -n '/^func.func @matmul_n(/,/^}/p' %s | env LT_PARALLEL_MIN_WORK=0 lt-opt - -p 'builtin.module(lt-parallel{loop=1}, lower-lt-to-scf, canonicalize)' | filecheck %s --check-prefix=LOWERN
// RUN: sed -n '/^func.func @rows(/,/^}/p' %s | env LT_PARALLEL_MIN_WORK=0 lt-opt - -p 'builtin.module(lt-parallel{loop=1}, lower-lt-to-scf, canonicalize)' | filecheck %s --check-prefix=LOWERT
//
// The outermost level of the clipped matmul (33 rows as `4 r 1` over `8`) in
// parallel: scf.parallel over the 4 full blocks, then the tail row 32 serially;
// omp.parallel in the llvm dialect, __kmpc_fork_call in LLVM IR.
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | env LT_PARALLEL_MIN_WORK=0 lt-opt - -p 'builtin.module(lt-parallel{loop=0})' --emit=loop-tree | filecheck %s --check-prefix=MMTREE --match-full-lines --strict-whitespace
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | env LT_PARALLEL_MIN_WORK=0 lt-opt - -p 'builtin.module(lt-parallel{loop=0}, lower-lt-to-scf, canonicalize)' | filecheck %s --check-prefix=MM
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | env LT_PARALLEL_MIN_WORK=0 lt-opt - -p 'builtin.module(lt-parallel{loop=0}, lower-lt-to-llvm)' | filecheck %s --check-prefix=OMP
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | env LT_PARALLEL_MIN_WORK=0 lt-opt - -p 'builtin.module(lt-parallel{loop=0})' --emit=llvm | filecheck %s --check-prefix=KMPC
//      MMTREE:for m in 4 r 1 : L0 [parallel]
// MMTREE-NEXT: for m' in 8 : L1
// MMTREE-NEXT:  for n in 48 : L2
//  MM-LABEL: func.func @matmul
//  MM-DAG:     %[[C4:.*]] = arith.constant 4 : index
//  MM-DAG:     %[[C32:.*]] = arith.constant 32 : index
//  MM:         scf.parallel (%[[B:.*]]) = (%{{.*}}) to (%[[C4]]) step (%{{.*}}) {
//  MM-NEXT:      %[[M0:.*]] = arith.muli %[[B]], %{{.*}} : index
//  MM-NEXT:      scf.for
//  MM-NOT:       memref.atomic_rmw
//  MM:           scf.reduce
//  MM-NEXT:    }
//  MM-NEXT:    scf.for %[[N:.*]] = %{{.*}} to %{{.*}} step
//  MM-NEXT:      memref.store %{{.*}}, %{{.*}}[%[[C32]], %[[N]]] : memref<33x48xf32>
//  MM-NOT:     scf.parallel
//  OMP-LABEL: llvm.func @matmul
//  OMP:         omp.parallel {
//  OMP-NEXT:      omp.wsloop {
//  OMP-NEXT:        omp.loop_nest
//  OMP:           omp.terminator
//  KMPC-LABEL: define void @matmul(
//  KMPC:         call void {{.*}}@__kmpc_fork_call({{.*}}@matmul..omp_par
//  KMPC:       define internal void @matmul..omp_par(
//  KMPC:         call void @__kmpc_for_static_init_8u(
//
// schedule=dynamic|guided (lt.schedule): the iterations are dealt to threads
// as they finish (OpenMP's dispatch API), not one equal run each; the tail
// row still runs after the loop, and the sums do not change.  An unknown
// schedule is refused.
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | env LT_PARALLEL_MIN_WORK=0 lt-opt - -p 'builtin.module(lt-parallel{loop=0 schedule=guided})' --emit=loop-tree | filecheck %s --check-prefix=GTREE --match-full-lines --strict-whitespace
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | env LT_PARALLEL_MIN_WORK=0 lt-opt - -p 'builtin.module(lt-parallel{loop=0 schedule=guided}, lower-lt-to-llvm)' | filecheck %s --check-prefix=GOMP
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | env LT_PARALLEL_MIN_WORK=0 lt-opt - -p 'builtin.module(lt-parallel{loop=0 schedule=dynamic})' --emit=llvm | filecheck %s --check-prefix=GKMPC
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | env LT_PARALLEL_MIN_WORK=0 lt-opt - --run --repeat 3 -p 'builtin.module(lt-parallel{loop=0 schedule=dynamic})' | filecheck %s --check-prefix=MMSUM
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | not lt-opt - -p 'builtin.module(lt-parallel{loop=0 schedule=auto})' 2>&1 | filecheck %s --check-prefix=GERR
//      GTREE:for m in 4 r 1 : L0 [parallel, schedule guided]
// GTREE-NEXT: for m' in 8 : L1
//  GOMP-LABEL: llvm.func @matmul
//  GOMP:         omp.wsloop schedule(guided) {
//  GKMPC-LABEL: define internal void @matmul..omp_par(
//  GKMPC:         call void @__kmpc_dispatch_init_8u(
//  GKMPC-NOT:     __kmpc_for_static_init
//  GERR: <stdin>:3:3: error: lt-parallel: unknown schedule 'auto' (static, dynamic, guided)
//
// Running in parallel gives the untransformed checksums.
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | lt-opt - --run --repeat 3 | filecheck %s --check-prefix=MMSUM
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | env LT_PARALLEL_MIN_WORK=0 lt-opt - --run --repeat 3 -p 'builtin.module(lt-parallel{loop=0})' | filecheck %s --check-prefix=MMSUM
// MMSUM: arg2 f32[33, 48] checksum -27.0155
// RUN: sed -n '/^func.func @rows(/,/^}/p' %s | lt-opt - --run --repeat 3 | filecheck %s --check-prefix=ROWSSUM
// RUN: sed -n '/^func.func @rows(/,/^}/p' %s | env LT_PARALLEL_MIN_WORK=0 lt-opt - --run --repeat 3 -p 'builtin.module(lt-parallel{loop=1})' | filecheck %s --check-prefix=ROWSSUM
// ROWSSUM: arg2 f32[2, 33] checksum 5.58446
//
// The reduction loop of a row sum in parallel: its 64 iterations share S[m].
// The lowering cuts them into one chunk a core (the number of chunks is the
// compiling machine's core count); each chunk sums into a private tile
// (one f32, S[m]'s axis is fixed in the loop) and adds it to S[m] with one
// memref.atomic_rmw addf at its end, not one an element (lowering/partials.py).
//
// RUN: sed -n '/^func.func @row_sum(/,/^}/p' %s | env LT_PARALLEL_MIN_WORK=0 lt-opt - -p 'builtin.module(lt-parallel{loop=1}, lower-lt-to-scf, canonicalize)' | filecheck %s --check-prefix=ATOMIC
// RUN: sed -n '/^func.func @row_sum(/,/^}/p' %s | lt-opt - --run --repeat 2 | filecheck %s --check-prefix=ROWSUM
// RUN: sed -n '/^func.func @row_sum(/,/^}/p' %s | env LT_PARALLEL_MIN_WORK=0 lt-opt - --run --repeat 2 -p 'builtin.module(lt-parallel{loop=1})' | filecheck %s --check-prefix=ROWSUM
// ROWSUM: arg1 f32[33] checksum -54.29
// ATOMIC-LABEL: func.func @row_sum
// ATOMIC:         scf.for %[[M:.*]] = %{{.*}} to %{{.*}} step
// ATOMIC-NEXT:      memref.store %{{.*}}, %[[S:.*]][%[[M]]] : memref<33xf32>
// ATOMIC-NEXT:      scf.parallel (%[[C:.*]]) = (%{{.*}}) to (%{{.*}}) step (%{{.*}}) {
// ATOMIC-NEXT:        %[[BASE:.*]] = arith.muli %[[C]], %{{.*}} : index
// ATOMIC-NEXT:        %[[P:.*]] = memref.alloca() : memref<1xf32>
// ATOMIC-NEXT:        memref.store %{{.*}}, %[[P]][%{{.*}}] : memref<1xf32>
// ATOMIC-NEXT:        scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// ATOMIC-NEXT:          %[[N:.*]] = arith.addi %[[BASE]], %[[J]] : index
// ATOMIC-NEXT:          %[[A:.*]] = memref.load %{{.*}}[%[[M]], %[[N]]] : memref<33x64xf32>
// ATOMIC-NEXT:          memref.load %[[P]]
// ATOMIC-NEXT:          arith.addf
// ATOMIC-NEXT:          memref.store %{{.*}}, %[[P]]
// ATOMIC-NEXT:        }
// ATOMIC-NEXT:        %[[SUM:.*]] = memref.load %[[P]][%{{.*}}] : memref<1xf32>
// ATOMIC-NEXT:        memref.atomic_rmw addf %[[SUM]], %[[S]][%[[M]]] : (f32, memref<33xf32>) -> f32
// ATOMIC-NEXT:        scf.reduce
//
// Too little work to share: without LT_PARALLEL_MIN_WORK=0 the same loop runs
// on one thread (64 additions a run, 33 runs a call), and the pass says so.
// RUN: sed -n '/^func.func @row_sum(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-parallel{loop=1}, lower-lt-to-scf, canonicalize)' 2>&1 | filecheck %s --check-prefix=SMALL
// SMALL: remark: lt-parallel: L1 "for n in 64" will run on one thread: a run does about 128 operations, too few to pay for starting the threads (33 runs a call); run an outer loop in parallel
// SMALL-NOT: scf.parallel
// SMALL-NOT: atomic_rmw

// The n loop of a matmul: C[m, n] belongs to one iteration of n, no atomics.
//      TREE:for m in 8 : L0
// TREE-NEXT: for n in 16 : L1 [parallel]
// TREE-NEXT:  C[m, n] <- 0.0
// TREE-NEXT:  for k in 32 : L2
// TREE-NEXT:   %0 <- read A[m, k]
// TREE-NEXT:   %1 <- read B[k, n]
// TREE-NEXT:   %2 <- mul(%0, %1)
// TREE-NEXT:   C[m, n] += %2
// TREE-NEXT:// -----
// LOWERN-LABEL: func.func @matmul_n
// LOWERN:         scf.for %[[M:.*]] = %{{.*}} to %{{.*}} step
// LOWERN-NEXT:      scf.parallel (%[[N:.*]]) = (%{{.*}}) to (%{{.*}}) step (%{{.*}}) {
// LOWERN-NEXT:        memref.store %{{.*}}, %[[C:.*]][%[[M]], %[[N]]] : memref<8x16xf32>
// LOWERN-NEXT:        scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step
// LOWERN:               %[[OLD:.*]] = memref.load %[[C]][%[[M]], %[[N]]] : memref<8x16xf32>
// LOWERN-NEXT:          %[[NEW:.*]] = arith.addf %[[OLD]], %{{.*}} : f32
// LOWERN-NEXT:          memref.store %[[NEW]], %[[C]][%[[M]], %[[N]]] : memref<8x16xf32>
// LOWERN-NEXT:        }
// LOWERN-NEXT:        scf.reduce
// LOWERN-NEXT:      }
// LOWERN-NEXT:    }
// LOWERN-NEXT:    return
func.func @matmul_n(%A: memref<8x32xf32> {lt.name = "A"}, %B: memref<32x16xf32> {lt.name = "B"}, %C: memref<8x16xf32> {lt.name = "C"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i2: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    "lt.loop"() ({
    ^bb0(%i1: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      memref.store %zero, %C[%m, %n] : memref<8x16xf32>
      "lt.loop"() ({
      ^bb0(%i0: index):
        %k = "lt.dim"() {dim = "k"} : () -> index
        %a = memref.load %A[%m, %k] : memref<8x32xf32>
        %b = memref.load %B[%k, %n] : memref<32x16xf32>
        %p = arith.mulf %a, %b : f32
        "lt.reduce"(%p, %C, %m, %n) {kind = "add"} : (f32, memref<8x16xf32>, index, index) -> ()
      }) {dim = "k", size = 32 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "n", size = 16 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 8 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// The tail case: per row, 33 as `4 r 1` over `8`; the 4 full blocks run in
// parallel, the clipped tail block (element 32) runs after them.
// TREE-NEXT:for r in 2 : L0
// TREE-NEXT: for i in 4 r 1 : L1 [parallel]
// TREE-NEXT:  for i' in 8 : L2
// TREE-NEXT:   %0 <- read A[r, i]
// TREE-NEXT:   %1 <- read B[r, i]
// TREE-NEXT:   %2 <- add(%0, %1)
// TREE-NEXT:   C[r, i] <- %2
// TREE-NEXT:// -----
// LOWERT-LABEL: func.func @rows
// LOWERT-DAG:     %[[C32:.*]] = arith.constant 32 : index
// LOWERT-DAG:     %[[C4:.*]] = arith.constant 4 : index
// LOWERT:         scf.for %[[R:.*]] = %{{.*}} to %{{.*}} step
// LOWERT-NEXT:      scf.parallel (%[[B:.*]]) = (%{{.*}}) to (%[[C4]]) step (%{{.*}}) {
// LOWERT-NEXT:        %[[I0:.*]] = arith.muli %[[B]], %{{.*}} : index
// LOWERT-NEXT:        scf.for
// LOWERT:             scf.reduce
// LOWERT-NEXT:      }
// LOWERT-NEXT:      %[[A:.*]] = memref.load %{{.*}}[%[[R]], %[[C32]]] : memref<2x33xf32>
// LOWERT-NEXT:      %[[BB:.*]] = memref.load %{{.*}}[%[[R]], %[[C32]]] : memref<2x33xf32>
// LOWERT-NEXT:      %[[S:.*]] = arith.addf %[[A]], %[[BB]] {{.*}}: f32
// LOWERT-NEXT:      memref.store %[[S]], %{{.*}}[%[[R]], %[[C32]]] : memref<2x33xf32>
// LOWERT-NEXT:    }
// LOWERT-NEXT:    return
func.func @rows(%A: memref<2x33xf32> {lt.name = "A"}, %B: memref<2x33xf32> {lt.name = "B"}, %C: memref<2x33xf32> {lt.name = "C"}) {
  "lt.loop"() ({
  ^bb0(%r0: index):
    %r = "lt.dim"() {dim = "r"} : () -> index
    "lt.loop"() ({
    ^bb0(%i1: index):
      "lt.loop"() ({
      ^bb0(%i0: index):
        %i = "lt.dim"() {dim = "i"} : () -> index
        %a = memref.load %A[%r, %i] : memref<2x33xf32>
        %b = memref.load %B[%r, %i] : memref<2x33xf32>
        %c = arith.addf %a, %b : f32
        memref.store %c, %C[%r, %i] : memref<2x33xf32>
      }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "i", size = 4 : i64, tail = 1 : i64} : () -> ()
  }) {dim = "r", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// A shared reduction is accepted (it will combine atomically).
// TREE-NEXT:for m in 33 : L0
// TREE-NEXT: S[m] <- 0.0
// TREE-NEXT: for n in 64 : L1 [parallel]
// TREE-NEXT:  %0 <- read A[m, n]
// TREE-NEXT:  S[m] += %0
func.func @row_sum(%A: memref<33x64xf32> {lt.name = "A"}, %S: memref<33xf32> {lt.name = "S"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i1: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    memref.store %zero, %S[%m] : memref<33xf32>
    "lt.loop"() ({
    ^bb0(%i0: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %a = memref.load %A[%m, %n] : memref<33x64xf32>
      "lt.reduce"(%a, %S, %m) {kind = "add"} : (f32, memref<33xf32>, index) -> ()
    }) {dim = "n", size = 64 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 33 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: L1 is inside the parallel L0.
// ERR: lt-parallel.mlir:[[# @LINE + 4]]:5: error: lt-parallel: L1 is already inside a parallel loop
func.func @nested(%A: memref<4x8xf32>, %B: memref<4x8xf32>) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    "lt.loop"() ({
    ^bb0(%j0: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %j = "lt.dim"() {dim = "j"} : () -> index
      %a = memref.load %A[%i, %j] : memref<4x8xf32>
      memref.store %a, %B[%i, %j] : memref<4x8xf32>
    }) {dim = "j", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64, lt.parallel} : () -> ()
  return
}

// -----

// Refused: L1 holds the parallel L2.
// ERR-NEXT: lt-parallel.mlir:[[# @LINE + 5]]:5: error: lt-parallel: L1 holds a parallel loop
func.func @holds(%A: memref<2x4x8xf32>, %B: memref<2x4x8xf32>) {
  "lt.loop"() ({
  ^bb0(%r0: index):
    %r = "lt.dim"() {dim = "r"} : () -> index
    "lt.loop"() ({
    ^bb0(%i0: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      "lt.loop"() ({
      ^bb0(%j0: index):
        %j = "lt.dim"() {dim = "j"} : () -> index
        %a = memref.load %A[%r, %i, %j] : memref<2x4x8xf32>
        memref.store %a, %B[%r, %i, %j] : memref<2x4x8xf32>
      }) {dim = "j", size = 8 : i64, tail = 0 : i64, lt.parallel} : () -> ()
    }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: a running sum kept with a plain load and store is a race.
// ERR-NEXT: lt-parallel.mlir:[[# @LINE + 5]]:5: error: lt-parallel: cannot run L1 "for i in 32" in parallel: argument 1 is written and accessed at elements that other iterations of dim 'i' also access
func.func @running_sum(%A: memref<2x32xf32>, %S: memref<2xf32>) {
  "lt.loop"() ({
  ^bb0(%r0: index):
    %r = "lt.dim"() {dim = "r"} : () -> index
    "lt.loop"() ({
    ^bb0(%i0: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %a = memref.load %A[%r, %i] : memref<2x32xf32>
      %s = memref.load %S[%r] : memref<2xf32>
      %t = arith.addf %s, %a : f32
      memref.store %t, %S[%r] : memref<2xf32>
    }) {dim = "i", size = 32 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: reductions of two kinds (add, max) into one accumulator do not
// commute with each other.
// ERR-NEXT: lt-parallel.mlir:[[# @LINE + 5]]:5: error: lt-parallel: cannot run L1 "for i in 32" in parallel: argument 1 is written and accessed at elements that other iterations of dim 'i' also access
func.func @two_kinds(%A: memref<2x32xf32>, %S: memref<2xf32>) {
  "lt.loop"() ({
  ^bb0(%r0: index):
    %r = "lt.dim"() {dim = "r"} : () -> index
    "lt.loop"() ({
    ^bb0(%i0: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %a = memref.load %A[%r, %i] : memref<2x32xf32>
      "lt.reduce"(%a, %S, %r) {kind = "add"} : (f32, memref<2xf32>, index) -> ()
      "lt.reduce"(%a, %S, %r) {kind = "max"} : (f32, memref<2xf32>, index) -> ()
    }) {dim = "i", size = 32 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: there is no loop L1.
// ERR-NEXT: error: lt-parallel: no loop L1 (the loop tree has L0)
// ERR-NOT: error
func.func @one_loop(%A: memref<4xf32>, %B: memref<4xf32>) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %a = memref.load %A[%i] : memref<4xf32>
    memref.store %a, %B[%i] : memref<4xf32>
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// The clipped matmul for the RUN lines at the top (not a case of its own:
// its L1, `for m' in 8`, may run in parallel too).
// TREE-NEXT:// -----
// TREE-NEXT:for m in 4 r 1 : L0
// TREE-NEXT: for m' in 8 : L1 [parallel]
// TREE-NEXT:  for n in 48 : L2
// TREE-NEXT:   C[m, n] <- 0.0
// TREE-NEXT:   for k in 64 : L3
// TREE-NEXT:    %0 <- read A[m, k]
// TREE-NEXT:    %1 <- read B[k, n]
// TREE-NEXT:    %2 <- mul(%0, %1)
// TREE-NEXT:    C[m, n] += %2
//  TREE-NOT:{{.}}
func.func @matmul(%A: memref<33x64xf32> {lt.name = "A"}, %B: memref<64x48xf32> {lt.name = "B"}, %C: memref<33x48xf32> {lt.name = "C"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i3: index):
    "lt.loop"() ({
    ^bb0(%i2: index):
      %m = "lt.dim"() {dim = "m"} : () -> index
      "lt.loop"() ({
      ^bb0(%i1: index):
        %n = "lt.dim"() {dim = "n"} : () -> index
        memref.store %zero, %C[%m, %n] : memref<33x48xf32>
        "lt.loop"() ({
        ^bb0(%i0: index):
          %k = "lt.dim"() {dim = "k"} : () -> index
          %a = memref.load %A[%m, %k] : memref<33x64xf32>
          %b = memref.load %B[%k, %n] : memref<64x48xf32>
          %p = arith.mulf %a, %b : f32
          "lt.reduce"(%p, %C, %m, %n) {kind = "add"} : (f32, memref<33x48xf32>, index, index) -> ()
        }) {dim = "k", size = 64 : i64, tail = 0 : i64} : () -> ()
      }) {dim = "n", size = 48 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "m", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 4 : i64, tail = 1 : i64} : () -> ()
  return
}
