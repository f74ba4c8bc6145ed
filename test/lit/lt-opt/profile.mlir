// RUN: lt-opt %s --profile --repeat 3 | filecheck %s
// RUN: lt-opt %s --profile --repeat 3 --pass-pipeline='builtin.module(lt-parallel{loop=0})' | filecheck %s --check-prefix=PAR
// RUN: lt-opt %s --profile --repeat 3 --pass-pipeline='builtin.module(lt-split{loop=3 factor=4})' | filecheck %s --check-prefix=BOUND
// RUN: lt-opt %s --profile --repeat 3 --target cuda-emulated --pass-pipeline='builtin.module(lt-gpu-map{loop=0 to=block}, lt-gpu-map{loop=1 to=thread})' | filecheck %s --check-prefix=GPU
// RUN: lt-opt %s --profile --repeat 3 --target cuda-emulated --pass-pipeline='builtin.module(lt-gpu-map{loop=0 to=block}, lt-gpu-map{loop=1 to=thread}, lt-unroll{loop=2 factor=0})' | filecheck %s --check-prefix=UNROLLED
// RUN: not lt-opt %s --profile --mcpu=znver2 2>&1 | filecheck %s --check-prefix=MCPU
// RUN: not lt-opt %s --profile --target cuda-emulated --mattr=-fma 2>&1 | filecheck %s --check-prefix=MCPU
// RUN: not lt-opt %s --profile --entry nope 2>&1 | filecheck %s --check-prefix=ENTRY

// --profile times every loop entered at most 4096 times a call in an
// instrumented build (a cycle-counter read before and after each such loop)
// and prints the loop tree with each loop's share of a call and its own time
// in front; statements get blank padding.  The last line compares the
// instrumented time with the plain one.  Here L3 is entered 5 * 8 * 48 = 1920
// times a call: every loop is timed.
// CHECK:      {{^ *[0-9]+\.[0-9]%  +[0-9]+\.[0-9]{3} (ms|us) own}}  for m in 4 r 1 : L0
// CHECK-NEXT: {{^ *[0-9]+\.[0-9]%  +[0-9]+\.[0-9]{3} (ms|us) own}}   for m' in 8 : L1
// CHECK-NEXT: {{^ *[0-9]+\.[0-9]%  +-?[0-9]+\.[0-9]{3} (ms|us) own}}    for n in 48 : L2
// CHECK-NEXT: {{^                    +}}C[m, n] <- 0.0
// CHECK-NEXT: {{^ *[0-9]+\.[0-9]%  +[0-9]+\.[0-9]{3} (ms|us) own}}     for k in 64 : L3
// CHECK-NEXT: {{^                    +}}%0 <- read A[m, k]
// CHECK:      {{^                    +}}C[m, n] += %2
// CHECK-NEXT: {{^total [0-9]+\.[0-9]{3} (ms|us) per call instrumented, [0-9]+\.[0-9]{3} (ms|us) plain: overhead [+-][0-9]+\.[0-9]% \(median of 3 runs\)$}}

// Under a parallel loop the counters sum over threads; the profile scales
// them back to wall time.
// PAR:      {{^ *[0-9]+\.[0-9]%  +[0-9]+\.[0-9]{3} (ms|us) own}}  for m in 4 r 1 : L0 [parallel]
// PAR-NEXT: {{^ *[0-9]+\.[0-9]%  +[0-9]+\.[0-9]{3} (ms|us) own}}   for m' in 8 : L1
// PAR:      {{^total .* overhead [+-][0-9]+\.[0-9]% \(median of 3 runs\)$}}

// Split k by 4: the new inner loop L4 is entered 1920 * 16 = 30720 times a
// call, too often to time; its line says whose own time holds its time, and
// the column widens for every line alike.
// BOUND:      {{^ *[0-9]+\.[0-9]%  +[0-9]+\.[0-9]{3} (ms|us) own +}}  for m in 4 r 1 : L0
// BOUND:      {{^ *[0-9]+\.[0-9]%  +[0-9]+\.[0-9]{3} (ms|us) own +}}     for k in 16 : L3
// BOUND-NEXT: {{^   ·  in L3 \(30720 entries a call\)}}      for k' in 4 : L4
// BOUND-NEXT: {{^                                 +}}%0 <- read A[m, k]
// BOUND:      {{^total .* overhead [+-][0-9]+\.[0-9]% \(median of 3 runs\)$}}

// On a GPU mapping (here cuda-emulated: the GPU lowering on the CPU; on
// cuda, thread 0 of each block reads %clock64) the kernel's root is timed
// as its launch; mapped loops are not timed (their iterations run side by
// side), and the loops in them are timed per thread.  The block loop's
// tail (33 = 4 x 8 + 1 rows) runs in the same launch.
// GPU:      {{^ *[0-9]+\.[0-9]%  +[0-9]+\.[0-9]{3} (ms|us) own}}  for m in 4 r 1 : L0 [gpu block]
// GPU-NEXT: {{^   ·  threads, in L0 +}}for m' in 8 : L1 [gpu thread]
// GPU-NEXT: {{^ *[0-9]+\.[0-9]%  +[0-9]+\.[0-9]{3} (ms|us) own}}    for n in 48 : L2
// GPU:      {{^ *[0-9]+\.[0-9]%  +[0-9]+\.[0-9]{3} (ms|us) own}}     for k in 64 : L3
// GPU:      {{^total .* overhead [+-][0-9]+\.[0-9]% \(median of 3 runs\)$}}

// An unrolled loop is copies of its body: neither it nor the loops in it
// are timed (marks in it would be copied too).
// UNROLLED:      {{^ *[0-9]+\.[0-9]%  +[0-9]+\.[0-9]{3} (ms|us) own}}  for m in 4 r 1 : L0 [gpu block]
// UNROLLED:      {{^   ·  unrolled, in L0 +}}for n in 48 : L2 [unroll full]
// UNROLLED:      {{^   ·  under unrolled L2, in L0 +}}for k in 64 : L3

// MCPU: error: --profile runs on this host's CPU or GPU; drop --mcpu/--mattr
// ENTRY: error: no function @nope in the module (it has @matmul)

func.func @matmul(%A: memref<33x64xf32> {lt.name = "A"}, %B: memref<64x48xf32> {lt.name = "B"}, %C: memref<33x48xf32> {lt.name = "C"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i0: index):
    "lt.loop"() ({
    ^bb0(%i1: index):
      %m = "lt.dim"() {dim = "m"} : () -> index
      "lt.loop"() ({
      ^bb0(%i2: index):
        %n = "lt.dim"() {dim = "n"} : () -> index
        memref.store %zero, %C[%m, %n] : memref<33x48xf32>
        "lt.loop"() ({
        ^bb0(%i3: index):
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
