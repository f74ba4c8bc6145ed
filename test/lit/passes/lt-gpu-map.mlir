// lt-gpu-map{loop=L to=block|thread}: run L's iterations as CUDA blocks or
// threads.  Mapped loops form kernels: a mapped loop at the top of the
// function, mapped loops directly nested in it (nothing else in between),
// blocks outside threads; only the innermost block loop may hold thread
// loops side by side with other statements (barriers between them, the
// statements on thread 0).  lt-gpu-auto maps each nest's independent outer
// loops, splitting the innermost by 256 threads.
//
// Normal case (@matmul: m to blocks, n to threads), tail case (@add: 1000 =
// 3 r 232 blocks of 256 threads) and side by side (@row_sum: S[m] = 0 on
// thread 0, the n loop on the threads) print their loop trees (TREE); the
// racy loop refuses (ERR).
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-gpu-map{loop=0 to=block}, lt-gpu-map{loop=1 to=thread})' --emit=loop-tree -o %t.tree 2>&1 | filecheck %s --check-prefix=ERR
// RUN: filecheck %s --input-file=%t.tree --check-prefix=TREE --match-full-lines --strict-whitespace
// RUN: lt-opt %s --split-input-file -p 'builtin.module(lt-gpu-auto)' --emit=loop-tree 2>%t.remarks | filecheck %s --check-prefix=AUTO --match-full-lines --strict-whitespace
// RUN: filecheck %s --input-file=%t.remarks --check-prefix=REMARK
//
// Mapped, the same numbers: each chunk run unmapped on the CPU and mapped,
// with the GPU lowering emulated on the CPU (RUNSUM, the checksums).
// RUN: sed -n '/^func.func @row_sum(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=RUNSUM
// RUN: sed -n '/^func.func @row_sum(/,/^}/p' %s | lt-opt - --run --repeat 1 --target=cuda-emulated -p 'builtin.module(lt-gpu-auto)' | filecheck %s --check-prefix=RUNSUM
// RUN: sed -n '/^func.func @row_sum(/,/^}/p' %s | lt-opt - --run --repeat 1 --target=cuda-emulated -p 'builtin.module(lt-gpu-map{loop=0 to=thread})' | filecheck %s --check-prefix=RUNSUM
// RUNSUM: arg1 f32[4] checksum -60.4084
//
// Refused: inner loop first, a loop beside statements, too many threads,
// block inside thread, an unknown mapping, a mapped loop on a parallel one,
// and a later pass that would break a mapping.
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | not lt-opt - -p 'builtin.module(lt-gpu-map{loop=1 to=block})' 2>&1 | filecheck %s --check-prefix=INNER
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | not lt-opt - -p 'builtin.module(lt-gpu-map{loop=0 to=block}, lt-gpu-map{loop=1 to=thread}, lt-gpu-map{loop=2 to=thread})' 2>&1 | filecheck %s --check-prefix=BESIDE
// RUN: sed -n '/^func.func @copy(/,/^}/p' %s | not lt-opt - -p 'builtin.module(lt-gpu-map{loop=0 to=thread})' 2>&1 | filecheck %s --check-prefix=THREADS
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | not lt-opt - -p 'builtin.module(lt-gpu-map{loop=0 to=thread}, lt-gpu-map{loop=1 to=block})' 2>&1 | filecheck %s --check-prefix=ORDER
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | not lt-opt - -p 'builtin.module(lt-gpu-map{loop=0 to=warp})' 2>&1 | filecheck %s --check-prefix=WARP
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | not lt-opt - -p 'builtin.module(lt-parallel{loop=0}, lt-gpu-map{loop=0 to=block})' 2>&1 | filecheck %s --check-prefix=PAR
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | not lt-opt - -p 'builtin.module(lt-gpu-map{loop=0 to=block}, lt-gpu-map{loop=1 to=thread}, lt-swap{loop=0})' 2>&1 | filecheck %s --check-prefix=SWAP
//
//      TREE:for m in 8 : L0 [gpu block]
// TREE-NEXT: for n in 16 : L1 [gpu thread]
// TREE-NEXT:  C[m, n] <- 0.0
// TREE-NEXT:  for k in 32 : L2
// TREE-NEXT:   %0 <- read A[m, k]
// TREE-NEXT:   %1 <- read B[k, n]
// TREE-NEXT:   %2 <- mul(%0, %1)
// TREE-NEXT:   C[m, n] += %2
// TREE-NEXT:// -----
// TREE-NEXT:for i in 3 r 232 : L0 [gpu block]
// TREE-NEXT: for i' in 256 : L1 [gpu thread]
// TREE-NEXT:  %0 <- read A[i]
// TREE-NEXT:  %1 <- read B[i]
// TREE-NEXT:  %2 <- add(%0, %1)
// TREE-NEXT:  C[i] <- %2
// TREE-NEXT:// -----
// TREE-NEXT:for m in 4 : L0 [gpu block]
// TREE-NEXT: S[m] <- 0.0
// TREE-NEXT: for n in 1000 : L1 [gpu thread]
// TREE-NEXT:  %0 <- read A[m, n]
// TREE-NEXT:  S[m] += %0
//
// ERR: lt-gpu-map.mlir:[[# @LINE + 92]]:3: error: lt-gpu-map: cannot map L0 "for i in 2000" to blocks: its iterations are not independent: argument 1 is written and accessed at elements that other iterations of dim 'i' also access
//
// lt-gpu-auto: the row sum gets a block a row and its n loop read
// thread-strided on 256 threads (consecutive threads, consecutive elements;
// 1000 = 3 r 232 steps; they share S[m]: a register a thread across the
// steps, then one combine); the racy loop stays on one thread, with a remark.
//      AUTO:for m in 8 : L0 [gpu block]
// AUTO-NEXT: for n in 16 : L1 [gpu thread]
//      AUTO:for i in 3 r 232 : L0 [gpu block]
// AUTO-NEXT: for i' in 256 : L1 [gpu thread]
//      AUTO:for m in 4 : L0 [gpu block]
// AUTO-NEXT: S[m] <- 0.0
// AUTO-NEXT: for n in 3 r 232 : L1
// AUTO-NEXT:  for n' in 256 : L2 [gpu thread]
//      AUTO:@last:
// AUTO-NEXT:for i in 2000 : L0
// AUTO-NEXT: %0 <- read A[i]
// AUTO-NEXT: C[0] <- %0
// AUTO-NEXT:@copy:
// AUTO-NEXT:for i in 7 r 208 : L1 [gpu block]
// AUTO-NEXT: for i' in 256 : L2 [gpu thread]
// REMARK: remark: lt-gpu-auto: runs on one GPU thread: L0 "for i in 2000"
//
// INNER: error: lt-gpu-map: cannot map L1 "for n in 16" to blocks: it is inside an unmapped loop: a kernel's outermost mapped loop must be at the top of the function (map the enclosing loops first, outside in)
// BESIDE: error: lt-gpu-map: cannot map L2 "for k in 32" to threads: its enclosing thread loop has other statements (only thread loops may sit side by side, in a block loop)
// THREADS: error: lt-gpu-map: cannot map L0 "for i in 2000" to threads: 2000 threads per block (at most 1024)
// ORDER: error: lt-gpu-map: cannot map L1 "for n in 16" to blocks: block loops must enclose thread loops
// WARP: error: lt-gpu-map: option 'to' must be block or thread, got 'warp'
// PAR: error: lt-gpu-map: cannot map L0 "for m in 8" to blocks: a GPU-mapped loop cannot also be lt.parallel
// SWAP: error: lt-swap: refused: it would leave L1 GPU-mapped although block loops must enclose thread loops

func.func @matmul(%A: memref<8x32xf32> {lt.name = "A"}, %B: memref<32x16xf32> {lt.name = "B"}, %C: memref<8x16xf32> {lt.name = "C"}) {
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
    }) {dim = "i", size = 256 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 3 : i64, tail = 232 : i64} : () -> ()
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
    }) {dim = "n", size = 1000 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

func.func @last(%A: memref<2000xf32> {lt.name = "A"}, %C: memref<1xf32> {lt.name = "C"}) {
  %c0 = arith.constant 0 : index
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %a = memref.load %A[%i] : memref<2000xf32>
    memref.store %a, %C[%c0] : memref<1xf32>
  }) {dim = "i", size = 2000 : i64, tail = 0 : i64} : () -> ()
  return
}

func.func @copy(%A: memref<2000xf32> {lt.name = "A"}, %C: memref<2000xf32> {lt.name = "C"}) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %a = memref.load %A[%i] : memref<2000xf32>
    memref.store %a, %C[%i] : memref<2000xf32>
  }) {dim = "i", size = 2000 : i64, tail = 0 : i64} : () -> ()
  return
}
