// lt-shrink-buffers: every lt.alloc shrinks to the tile live under the
// innermost common enclosing loops of its accesses.  An axis over dim d
// shrinks to the inner extent E of the innermost common level of d when every
// access indexes it with exactly `lt.dim d`; the index becomes
// `min(max(lt.dim d - base, 0), E - 1)` with `base` = `lt.dim d` at the start
// of the innermost common loop's body (the clamp is the identity; it lets the
// interval bounds check see the range).  Tail iterations use a prefix.
//
// RUN: lt-opt %s --split-input-file -p 'builtin.module(lt-shrink-buffers)' 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK
// RUN: lt-opt %s --split-input-file -p 'builtin.module(lt-shrink-buffers)' --emit=loop-tree 2>/dev/null | filecheck %s --check-prefix=TREE --match-full-lines --strict-whitespace
// RUN: lt-opt %s --split-input-file -p 'builtin.module(lt-shrink-buffers)' 2>/dev/null | filecheck %s --check-prefix=IR
//
// The blog's clipped matmul computes the same numbers through the 8x32 tile
// as through the 33x48 buffer, tail iterations (m = 32, n in 32..47) included.
// RUN: sed -n '/^func.func @clipped_matmul(/,/^}/p' %s | lt-opt - --emit=loop-tree | filecheck %s --check-prefix=BEFORE --match-full-lines --strict-whitespace
// RUN: sed -n '/^func.func @clipped_matmul(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=SUM
// RUN: sed -n '/^func.func @clipped_matmul(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-shrink-buffers)' | filecheck %s --check-prefix=SUM
// RUN: sed -n '/^func.func @even(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=SUM32
// RUN: sed -n '/^func.func @even(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-shrink-buffers)' | filecheck %s --check-prefix=SUM32
// SUM: arg2 f32[33, 48] checksum 32618
// B = 2 A + 2 on seed-0 inputs: 2 * default_rng(0).standard_normal(32).astype(float32).sum() + 64.
// SUM32: arg1 f32[32] checksum 54.2732

// The normal case: T lives across the two inner nests of one iteration of
// `for i in 4`, so 8 of its 32 elements suffice.
// REMARK: remark: lt-shrink-buffers: %0 over [i]: 32 -> 8 elements (128 -> 32 bytes)
//      TREE:%0 <- alloc f32[i] (8 elements)
// TREE-NEXT:for i in 4 : L0
// TREE-NEXT: for i' in 8 : L1
// TREE-NEXT:  %1 <- read A[i]
// TREE-NEXT:  %2 <- mul(%1, 2.0)
// TREE-NEXT:  %0[i - i] <- %2
// TREE-NEXT: for i' in 8 : L2
// TREE-NEXT:  %3 <- read %0[i - i]
// TREE-NEXT:  %4 <- add(%3, 2.0)
// TREE-NEXT:  B[i] <- %4
// TREE-NEXT:// -----
// IR-LABEL: func.func @even
// IR:         %[[T:.*]] = "lt.alloc"() {dims = ["i"]} : () -> memref<8xf32>
// IR:         ^bb0(%{{.*}}: index):
// IR-NEXT:      %[[BASE:.*]] = "lt.dim"() {dim = "i"} : () -> index
// IR:           %[[I:.*]] = "lt.dim"() {dim = "i"} : () -> index
// IR-NEXT:      %[[R:.*]] = arith.subi %[[I]], %[[BASE]] : index
// IR:           memref.store %{{.*}}, %[[T]][%[[R]]] : memref<8xf32>
// IR:           memref.load %[[T]][%{{.*}}] : memref<8xf32>
func.func @even(%A: memref<32xf32> {lt.name = "A"}, %B: memref<32xf32> {lt.name = "B"}) {
  %two = arith.constant 2.0 : f32
  %T = "lt.alloc"() {dims = ["i"]} : () -> memref<32xf32>
  "lt.loop"() ({
  ^bb0(%i0: index):
    "lt.loop"() ({
    ^bb0(%i1: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %a = memref.load %A[%i] : memref<32xf32>
      %t = arith.mulf %a, %two : f32
      memref.store %t, %T[%i] : memref<32xf32>
    }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%i2: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %t = memref.load %T[%i] : memref<32xf32>
      %b = arith.addf %t, %two : f32
      memref.store %b, %B[%i] : memref<32xf32>
    }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// The tail case, the blog's: 33 = `4 r 1` over 8 and 48 = `1 r 16` over 32.
// T over [m, n] shrinks from 33x48 to 8x32; the tail iterations (one row,
// sixteen columns) use a prefix of the tile.
//      BEFORE:%0 <- alloc f32[m, n] (1584 elements)
// BEFORE-NEXT:for m in 4 r 1 : L0
// BEFORE-NEXT: for n in 1 r 16 : L1
// BEFORE-NEXT:  for m' in 8 : L2
// BEFORE-NEXT:   for n' in 32 : L3
// BEFORE-NEXT:    %0[m, n] <- 0.0
// BEFORE-NEXT:  for k in 64 : L4
// BEFORE-NEXT:   for m' in 8 : L5
// BEFORE-NEXT:    %1 <- read A[m, k]
// BEFORE-NEXT:    for n' in 32 : L6
// BEFORE-NEXT:     %2 <- read B[k, n]
// BEFORE-NEXT:     %3 <- mul(%1, %2)
// BEFORE-NEXT:     %4 <- max(%3, 0.0)
// BEFORE-NEXT:     %0[m, n] += %4
// BEFORE-NEXT:  for m' in 8 : L7
// BEFORE-NEXT:   for n' in 32 : L8
// BEFORE-NEXT:    %5 <- read %0[m, n]
// BEFORE-NEXT:    C[m, n] <- %5
// REMARK-NEXT: remark: lt-shrink-buffers: %0 over [m, n]: 1584 -> 256 elements (6336 -> 1024 bytes)
// TREE-NEXT:%0 <- alloc f32[m, n] (256 elements)
// TREE-NEXT:for m in 4 r 1 : L0
// TREE-NEXT: for n in 1 r 16 : L1
// TREE-NEXT:  for m' in 8 : L2
// TREE-NEXT:   for n' in 32 : L3
// TREE-NEXT:    %0[m - m, n - n] <- 0.0
// TREE-NEXT:  for k in 64 : L4
// TREE-NEXT:   for m' in 8 : L5
// TREE-NEXT:    %1 <- read A[m, k]
// TREE-NEXT:    for n' in 32 : L6
// TREE-NEXT:     %2 <- read B[k, n]
// TREE-NEXT:     %3 <- mul(%1, %2)
// TREE-NEXT:     %4 <- max(%3, 0.0)
// TREE-NEXT:     %0[m - m, n - n] += %4
// TREE-NEXT:  for m' in 8 : L7
// TREE-NEXT:   for n' in 32 : L8
// TREE-NEXT:    %5 <- read %0[m - m, n - n]
// TREE-NEXT:    C[m, n] <- %5
// TREE-NEXT:// -----
// IR-LABEL: func.func @clipped_matmul
// IR:         %[[T:.*]] = "lt.alloc"() {dims = ["m", "n"]} : () -> memref<8x32xf32>
// The bases: m and n where L1's body starts.
// IR:         ^bb0(%{{.*}}: index):
// IR-NEXT:      "lt.loop"() ({
// IR-NEXT:      ^bb0(%{{.*}}: index):
// IR-NEXT:        %[[M0:.*]] = "lt.dim"() {dim = "m"} : () -> index
// IR-NEXT:        %[[N0:.*]] = "lt.dim"() {dim = "n"} : () -> index
// IR:             %[[M:.*]] = "lt.dim"() {dim = "m"} : () -> index
// IR-NEXT:        %[[RM:.*]] = arith.subi %[[M]], %[[M0]] : index
// IR:             %[[N:.*]] = "lt.dim"() {dim = "n"} : () -> index
// IR-NEXT:        %[[RN:.*]] = arith.subi %[[N]], %[[N0]] : index
// IR-NEXT:        memref.store %{{.*}}, %[[T]][%[[RM]], %[[RN]]] : memref<8x32xf32>
// IR:             "lt.reduce"(%{{.*}}, %[[T]], %{{.*}}, %{{.*}}) {kind = "add"} : (f32, memref<8x32xf32>, index, index) -> ()
// IR:             memref.load %[[T]][%{{.*}}, %{{.*}}] : memref<8x32xf32>
func.func @clipped_matmul(%A: memref<33x64xf32> {lt.name = "A"}, %B: memref<64x48xf32> {lt.name = "B"}, %C: memref<33x48xf32> {lt.name = "C"}) {
  %zero = arith.constant 0.0 : f32
  %T = "lt.alloc"() {dims = ["m", "n"]} : () -> memref<33x48xf32>
  "lt.loop"() ({
  ^bb0(%i0: index):
    "lt.loop"() ({
    ^bb0(%i1: index):
      "lt.loop"() ({
      ^bb0(%i2: index):
        %m = "lt.dim"() {dim = "m"} : () -> index
        "lt.loop"() ({
        ^bb0(%i3: index):
          %n = "lt.dim"() {dim = "n"} : () -> index
          memref.store %zero, %T[%m, %n] : memref<33x48xf32>
        }) {dim = "n", size = 32 : i64, tail = 0 : i64} : () -> ()
      }) {dim = "m", size = 8 : i64, tail = 0 : i64} : () -> ()
      "lt.loop"() ({
      ^bb0(%i4: index):
        %k = "lt.dim"() {dim = "k"} : () -> index
        "lt.loop"() ({
        ^bb0(%i5: index):
          %m = "lt.dim"() {dim = "m"} : () -> index
          %a = memref.load %A[%m, %k] : memref<33x64xf32>
          "lt.loop"() ({
          ^bb0(%i6: index):
            %n = "lt.dim"() {dim = "n"} : () -> index
            %b = memref.load %B[%k, %n] : memref<64x48xf32>
            %p = arith.mulf %a, %b : f32
            %q = arith.maximumf %p, %zero : f32
            "lt.reduce"(%q, %T, %m, %n) {kind = "add"} : (f32, memref<33x48xf32>, index, index) -> ()
          }) {dim = "n", size = 32 : i64, tail = 0 : i64} : () -> ()
        }) {dim = "m", size = 8 : i64, tail = 0 : i64} : () -> ()
      }) {dim = "k", size = 64 : i64, tail = 0 : i64} : () -> ()
      "lt.loop"() ({
      ^bb0(%i7: index):
        %m = "lt.dim"() {dim = "m"} : () -> index
        "lt.loop"() ({
        ^bb0(%i8: index):
          %n = "lt.dim"() {dim = "n"} : () -> index
          %t = memref.load %T[%m, %n] : memref<33x48xf32>
          memref.store %t, %C[%m, %n] : memref<33x48xf32>
        }) {dim = "n", size = 32 : i64, tail = 0 : i64} : () -> ()
      }) {dim = "m", size = 8 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "n", size = 1 : i64, tail = 16 : i64} : () -> ()
  }) {dim = "m", size = 4 : i64, tail = 1 : i64} : () -> ()
  return
}

// -----

// Left alone (the pass never refuses; it says what it did): %0 is indexed
// with `i + 1`, not exactly `lt.dim i`; %1's accesses share no loop.
// REMARK-NEXT: remark: lt-shrink-buffers: no lt.alloc could shrink
//      TREE:%0 <- alloc f32[i] (34 elements)
// TREE-NEXT:%1 <- alloc f32[i] (32 elements)
// TREE-NEXT:for i in 4 r 1 : L0
// TREE-NEXT: for i' in 8 : L1
// TREE-NEXT:  %0[i + 1] <- 0.0
// TREE-NEXT:  %2 <- read %0[i + 1]
// TREE-NEXT:for i in 32 : L2
// TREE-NEXT: %1[i] <- 1.0
// TREE-NEXT:for i in 32 : L3
// TREE-NEXT: %3 <- read %1[i]
// TREE-NEXT: A[i] <- %3
// IR-LABEL: func.func @kept
// IR: "lt.alloc"() {dims = ["i"]} : () -> memref<34xf32>
// IR: "lt.alloc"() {dims = ["i"]} : () -> memref<32xf32>
func.func @kept(%A: memref<33xf32> {lt.name = "A"}) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %c1 = arith.constant 1 : index
  %S = "lt.alloc"() {dims = ["i"]} : () -> memref<34xf32>
  %U = "lt.alloc"() {dims = ["i"]} : () -> memref<32xf32>
  "lt.loop"() ({
  ^bb0(%i0: index):
    "lt.loop"() ({
    ^bb0(%i1: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %ip = arith.addi %i, %c1 : index
      memref.store %zero, %S[%ip] : memref<34xf32>
      %s = memref.load %S[%ip] : memref<34xf32>
    }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 1 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%j0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    memref.store %one, %U[%i] : memref<32xf32>
  }) {dim = "i", size = 32 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%j1: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %u = memref.load %U[%i] : memref<32xf32>
    memref.store %u, %A[%i] : memref<33xf32>
  }) {dim = "i", size = 32 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// GPU: the innermost mapped loop around every access of %0 is the block loop
// over m, so the tile moves into it (block-shared memory) and its m axis
// shrinks to what one block uses, although blocks run at the same time.
// %1, over [m, n], would need 64 KiB of shared memory (more than the 48 KiB
// a block may declare statically): it stays in device memory, unshrunk
// (its only common level over m is the block loop).
// REMARK-NEXT: remark: lt-shrink-buffers: %0 over [m]: 4 -> 1 elements (16 -> 4 bytes), in shared memory (one per block)
//      TREE:%0 <- alloc f32[m, n] (65536 elements)
// TREE-NEXT:for m in 4 : L0 [gpu block]
// TREE-NEXT: %1 <- alloc f32[m] (1 elements)
// TREE-NEXT: %1[m - m] <- 0.0
// IR-LABEL: func.func @gpu_rows
// IR:         "lt.alloc"() {dims = ["m", "n"]} : () -> memref<4x16384xf32>
// IR:         "lt.loop"() ({
// IR-NEXT:    ^bb0(%{{.*}}: index):
// IR-NEXT:      "lt.alloc"() {dims = ["m"], lt.private} : () -> memref<1xf32>
func.func @gpu_rows(%X: memref<4x16384xf32> {lt.name = "X"}, %S: memref<4xf32> {lt.name = "S"}, %Y: memref<4x16384xf32> {lt.name = "Y"}) {
  %zero = arith.constant 0.0 : f32
  %T = "lt.alloc"() {dims = ["m"]} : () -> memref<4xf32>
  %U = "lt.alloc"() {dims = ["m", "n"]} : () -> memref<4x16384xf32>
  "lt.loop"() ({
  ^bb0(%i1: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    memref.store %zero, %T[%m] : memref<4xf32>
    "lt.loop"() ({
    ^bb0(%i0: index):
      "lt.loop"() ({
      ^bb0(%i2: index):
        %n = "lt.dim"() {dim = "n"} : () -> index
        %x = memref.load %X[%m, %n] : memref<4x16384xf32>
        memref.store %x, %U[%m, %n] : memref<4x16384xf32>
        "lt.reduce"(%x, %T, %m) {kind = "add"} : (f32, memref<4xf32>, index) -> ()
      }) {dim = "n", size = 16 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "n", size = 1024 : i64, tail = 0 : i64, lt.gpu = "thread"} : () -> ()
    "lt.loop"() ({
    ^bb0(%i0: index):
      "lt.loop"() ({
      ^bb0(%i2: index):
        %n = "lt.dim"() {dim = "n"} : () -> index
        %u = memref.load %U[%m, %n] : memref<4x16384xf32>
        memref.store %u, %Y[%m, %n] : memref<4x16384xf32>
      }) {dim = "n", size = 16 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "n", size = 1024 : i64, tail = 0 : i64, lt.gpu = "thread"} : () -> ()
    %t = memref.load %T[%m] : memref<4xf32>
    memref.store %t, %S[%m] : memref<4xf32>
  }) {dim = "m", size = 4 : i64, tail = 0 : i64, lt.gpu = "block"} : () -> ()
  return
}
