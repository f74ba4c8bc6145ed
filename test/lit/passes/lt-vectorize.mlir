// lt-vectorize{loop=L width=W}: mark an innermost loop `lt.vectorize = W`;
// lower-lt-to-scf runs groups of W iterations as vector code
// (vector.load/vector.store along L's dim, vector.gather along another,
// arithmetic on vector<W x T>, vector.reduction for a reduction into one
// location, masked memory under an if on the dim or the data) and the
// iterations W does not divide as scalar code.
//
// Every chunk below goes through the same pipeline, lt-vectorize{loop=1 width=8}:
// the chunks it applies to print their loop tree (TREE) and, lowered, their
// vector code (LOWER); the others refuse with a located one-line error (ERR).
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-vectorize{loop=1 width=8})' --emit=loop-tree -o %t.tree 2>&1 | filecheck %s --check-prefix=ERR
// RUN: filecheck %s --input-file=%t.tree --check-prefix=TREE --match-full-lines --strict-whitespace
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-vectorize{loop=1 width=8}, lower-lt-to-scf, canonicalize)' 2>/dev/null | filecheck %s --check-prefix=LOWER
//
// A width below 2 is refused (every chunk with an L1 refuses; the first is checked).
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-vectorize{loop=1 width=1})' 2>&1 | filecheck %s --check-prefix=WIDTH
// So is a width above the loop's iterations (no vector would run).
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-vectorize{loop=1 width=64})' 2>&1 | filecheck %s --check-prefix=WIDE
//
// Vectorizing gives the untransformed checksums: exactly for elementwise
// code and for the matmul (each C element still sums over k in order); the
// row sum's vector.reduction reassociates, so only its leading digits are
// checked (9.70933 untransformed).
// RUN: sed -n '/^func.func @add35(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=SUM35
// RUN: sed -n '/^func.func @add35(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-vectorize{loop=1 width=8})' | filecheck %s --check-prefix=SUM35
// SUM35: arg2 f32[2, 35] checksum 9.70932
// RUN: sed -n '/^func.func @tiled(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=SUM33
// RUN: sed -n '/^func.func @tiled(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-vectorize{loop=1 width=8})' | filecheck %s --check-prefix=SUM33
// SUM33: arg2 f32[33] checksum 4.34537
// RUN: sed -n '/^func.func @row_sum(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=ROWSUM
// RUN: sed -n '/^func.func @row_sum(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-vectorize{loop=1 width=8})' | filecheck %s --check-prefix=ROWSUM
// RUN: sed -n '/^func.func @row_sum(/,/^}/p' %s | lt-opt - --fastmath=strict -p 'builtin.module(lt-vectorize{loop=1 width=8}, lower-lt-to-scf)' | filecheck %s --check-prefix=STRICTLANES
// STRICTLANES: vector.reduction <add>, %{{.*}} : vector<8xf32> into f32
// ROWSUM: arg1 f32[4] checksum 9.7093{{[0-9]}}
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=MMSUM
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-swap{loop=1}, lt-vectorize{loop=3 width=16})' | filecheck %s --check-prefix=MMSUM
// MMSUM: arg2 f32[32, 64] checksum -218.815
//
// The matmul with n innermost (lt-swap) and vectorized by 16: C[m, n:n+16]
// is loaded, updated with the broadcast A[m, k] times B[k, n:n+16], stored.
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-swap{loop=1}, lt-vectorize{loop=3 width=16})' --emit=loop-tree | filecheck %s --check-prefix=MMTREE --match-full-lines --strict-whitespace
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-swap{loop=1}, lt-vectorize{loop=3 width=16}, lower-lt-to-scf, canonicalize)' | filecheck %s --check-prefix=MM
//      MMTREE:for m in 32 : L0
// MMTREE-NEXT: for n in 64 : L1
// MMTREE-NEXT:  C[m, n] <- 0.0
// MMTREE-NEXT: for k in 64 : L2
// MMTREE-NEXT:  for n in 64 : L3 [vectorize 16]
//      MM-LABEL: func.func @matmul
//      MM:         scf.for %[[M:.*]] = %{{.*}} to %{{.*}} step
// MM-NEXT:           scf.for %{{.*}} = %{{.*}} to %{{.*}} step
// MM-NEXT:             memref.store %{{.*}}, %{{.*}}[%[[M]], %{{.*}}] : memref<32x64xf32>
// MM-NEXT:           }
// MM-NEXT:           scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step
// MM-NEXT:             scf.for %[[J:.*]] = %{{.*}} to %[[C4:.*]] step
// MM-NEXT:               %[[N:.*]] = arith.muli %[[J]], %[[C16:.*]] : index
// MM-NEXT:               %[[A:.*]] = memref.load %{{.*}}[%[[M]], %[[K]]] : memref<32x64xf32>
// MM-NEXT:               %[[B:.*]] = vector.load %{{.*}}[%[[K]], %[[N]]] : memref<64x64xf32>, vector<16xf32>
// MM-NEXT:               %[[AV:.*]] = vector.broadcast %[[A]] : f32 to vector<16xf32>
// MM-NEXT:               %[[P:.*]] = arith.mulf %[[AV]], %[[B]] {{.*}}: vector<16xf32>
// MM-NEXT:               %[[OLD:.*]] = vector.load %[[C:.*]][%[[M]], %[[N]]] : memref<32x64xf32>, vector<16xf32>
// MM-NEXT:               %[[NEW:.*]] = arith.addf %[[OLD]], %[[P]] {{.*}}: vector<16xf32>
// MM-NEXT:               vector.store %[[NEW]], %[[C]][%[[M]], %[[N]]] : memref<32x64xf32>, vector<16xf32>
// MM-NEXT:             }
//
// Native code, for an AVX-512 CPU (znver4) and an AVX2 one (znver2),
// whichever this host is: the inner loop runs on 512-bit (zmm) registers
// with AVX-512 and on two 256-bit (ymm) ones with AVX2; untransformed (k
// innermost, an in-order reduction into one C element) it is scalar on
// both, the multiply apart from the add that carries the sum (no FMA on the
// chain: lower-lt-to-scf's mark_in_order_chains).
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | lt-opt - --emit=asm --mcpu=znver2 | filecheck %s --check-prefix=SCALAR
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | lt-opt - --emit=asm --mcpu=znver4 | filecheck %s --check-prefix=SCALAR
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-swap{loop=1}, lt-vectorize{loop=3 width=16})' --emit=asm --mcpu=znver4 | filecheck %s --check-prefix=ZMM
// RUN: sed -n '/^func.func @matmul(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-swap{loop=1}, lt-vectorize{loop=3 width=16})' --emit=asm --mcpu=znver2 | filecheck %s --check-prefix=YMM
// ZMM-LABEL: matmul:
// ZMM:       vbroadcastss {{.*}}%zmm
// ZMM:       vfmadd{{[0-9]+}}ps {{.*}}%zmm
// ZMM:       retq
// YMM-LABEL: matmul:
// YMM-NOT:   %zmm
// YMM:       vbroadcastss {{.*}}%ymm
// YMM-NOT:   %zmm
// YMM:       vfmadd{{[0-9]+}}ps {{.*}}%ymm
// YMM-NOT:   %zmm
// YMM:       retq
// SCALAR-LABEL: matmul:
// SCALAR-NOT:   vfmadd
// SCALAR:       vmulss
// SCALAR-NOT:   vfmadd
// SCALAR:       vaddss
// SCALAR-NOT:   vfmadd
// SCALAR:       retq

// 32 elements per row by 8: 4 vector iterations, no scalar rest.
//      TREE:for r in 2 : L0
// TREE-NEXT: for i in 32 : L1 [vectorize 8]
// TREE-NEXT:  %0 <- read A[r, i]
// TREE-NEXT:  %1 <- read B[r, i]
// TREE-NEXT:  %2 <- add(%0, %1)
// TREE-NEXT:  C[r, i] <- %2
// TREE-NEXT:// -----
// LOWER-LABEL: func.func @add32
// LOWER:         scf.for %[[R:.*]] = %{{.*}} to %{{.*}} step
// LOWER-NEXT:      scf.for %[[J:.*]] = %{{.*}} to %[[C4:.*]] step
// LOWER-NEXT:        %[[I:.*]] = arith.muli %[[J]], %[[C8:.*]] : index
// LOWER-NEXT:        %[[A:.*]] = vector.load %{{.*}}[%[[R]], %[[I]]] : memref<2x32xf32>, vector<8xf32>
// LOWER-NEXT:        %[[B:.*]] = vector.load %{{.*}}[%[[R]], %[[I]]] : memref<2x32xf32>, vector<8xf32>
// LOWER-NEXT:        %[[S:.*]] = arith.addf %[[A]], %[[B]] {{.*}}: vector<8xf32>
// LOWER-NEXT:        vector.store %[[S]], %{{.*}}[%[[R]], %[[I]]] : memref<2x32xf32>, vector<8xf32>
// LOWER-NEXT:      }
// LOWER-NEXT:    }
// LOWER-NEXT:    return
// WIDTH: lt-vectorize.mlir:[[# @LINE + 5]]:5: error: lt-vectorize: width must be at least 2, got 1
// WIDE: lt-vectorize.mlir:[[# @LINE + 4]]:5: error: lt-vectorize: width 64 exceeds the 32 iterations of L1 "for i in 32"
func.func @add32(%A: memref<2x32xf32> {lt.name = "A"}, %B: memref<2x32xf32> {lt.name = "B"}, %C: memref<2x32xf32> {lt.name = "C"}) {
  "lt.loop"() ({
  ^bb0(%r0: index):
    "lt.loop"() ({
    ^bb0(%i0: index):
      %r = "lt.dim"() {dim = "r"} : () -> index
      %i = "lt.dim"() {dim = "i"} : () -> index
      %a = memref.load %A[%r, %i] : memref<2x32xf32>
      %b = memref.load %B[%r, %i] : memref<2x32xf32>
      %c = arith.addf %a, %b : f32
      memref.store %c, %C[%r, %i] : memref<2x32xf32>
    }) {dim = "i", size = 32 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// The tail case: 35 by 8 is 4 vector iterations, then the 3 remaining
// iterations (32, 33, 34) as a scalar loop.
// TREE-NEXT:for r in 2 : L0
// TREE-NEXT: for i in 35 : L1 [vectorize 8]
// TREE-NEXT:  %0 <- read A[r, i]
// TREE-NEXT:  %1 <- read B[r, i]
// TREE-NEXT:  %2 <- add(%0, %1)
// TREE-NEXT:  C[r, i] <- %2
// TREE-NEXT:// -----
// LOWER-LABEL: func.func @add35
// LOWER:         scf.for %[[R:.*]] = %{{.*}} to %{{.*}} step
// LOWER-NEXT:      scf.for %{{.*}} = %{{.*}} to %[[C4:.*]] step
// LOWER:             vector.load %{{.*}} : memref<2x35xf32>, vector<8xf32>
// LOWER:             vector.store %{{.*}} : memref<2x35xf32>, vector<8xf32>
// LOWER-NEXT:      }
// LOWER-NEXT:      scf.for %[[J:.*]] = %{{.*}} to %[[C3:.*]] step
// LOWER-NEXT:        %[[I:.*]] = arith.addi %[[J]], %[[C32:.*]] : index
// LOWER-NEXT:        %[[A:.*]] = memref.load %{{.*}}[%[[R]], %[[I]]] : memref<2x35xf32>
// LOWER-NEXT:        %[[B:.*]] = memref.load %{{.*}}[%[[R]], %[[I]]] : memref<2x35xf32>
// LOWER-NEXT:        %[[S:.*]] = arith.addf %[[A]], %[[B]] {{.*}}: f32
// LOWER-NEXT:        memref.store %[[S]], %{{.*}}[%[[R]], %[[I]]] : memref<2x35xf32>
// LOWER-NEXT:      }
// LOWER-NEXT:    }
// LOWER-NEXT:    return
func.func @add35(%A: memref<2x35xf32> {lt.name = "A"}, %B: memref<2x35xf32> {lt.name = "B"}, %C: memref<2x35xf32> {lt.name = "C"}) {
  "lt.loop"() ({
  ^bb0(%r0: index):
    "lt.loop"() ({
    ^bb0(%i0: index):
      %r = "lt.dim"() {dim = "r"} : () -> index
      %i = "lt.dim"() {dim = "i"} : () -> index
      %a = memref.load %A[%r, %i] : memref<2x35xf32>
      %b = memref.load %B[%r, %i] : memref<2x35xf32>
      %c = arith.addf %a, %b : f32
      memref.store %c, %C[%r, %i] : memref<2x35xf32>
    }) {dim = "i", size = 35 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// A level tail: 33 as `4 r 1` over `8` with the inner level vectorized.  The
// 4 full iterations run one vector each; in the clipped tail iteration the
// inner level covers 1 element, which runs as scalar code at 32.
// TREE-NEXT:for i in 4 r 1 : L0
// TREE-NEXT: for i' in 8 : L1 [vectorize 8]
// TREE-NEXT:  %0 <- read A[i]
// TREE-NEXT:  %1 <- read B[i]
// TREE-NEXT:  %2 <- add(%0, %1)
// TREE-NEXT:  C[i] <- %2
// TREE-NEXT:// -----
// LOWER-LABEL: func.func @tiled
// LOWER-DAG:     %[[C32:.*]] = arith.constant 32 : index
// LOWER:         scf.for %[[O:.*]] = %{{.*}} to %[[C4:.*]] step
// LOWER-NEXT:      %[[I:.*]] = arith.muli %[[O]], %[[C8:.*]] : index
// LOWER-NEXT:      vector.load %{{.*}}[%[[I]]] : memref<33xf32>, vector<8xf32>
// LOWER-NEXT:      vector.load %{{.*}}[%[[I]]] : memref<33xf32>, vector<8xf32>
// LOWER-NEXT:      arith.addf {{.*}}: vector<8xf32>
// LOWER-NEXT:      vector.store %{{.*}}[%[[I]]] : memref<33xf32>, vector<8xf32>
// LOWER-NEXT:    }
// LOWER-NEXT:    %[[A:.*]] = memref.load %{{.*}}[%[[C32]]] : memref<33xf32>
// LOWER-NEXT:    %[[B:.*]] = memref.load %{{.*}}[%[[C32]]] : memref<33xf32>
// LOWER-NEXT:    %[[S:.*]] = arith.addf %[[A]], %[[B]] {{.*}}: f32
// LOWER-NEXT:    memref.store %[[S]], %{{.*}}[%[[C32]]] : memref<33xf32>
// LOWER-NEXT:    return
func.func @tiled(%A: memref<33xf32> {lt.name = "A"}, %B: memref<33xf32> {lt.name = "B"}, %C: memref<33xf32> {lt.name = "C"}) {
  "lt.loop"() ({
  ^bb0(%i1: index):
    "lt.loop"() ({
    ^bb0(%i0: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %a = memref.load %A[%i] : memref<33xf32>
      %b = memref.load %B[%i] : memref<33xf32>
      %c = arith.addf %a, %b : f32
      memref.store %c, %C[%i] : memref<33xf32>
    }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 1 : i64} : () -> ()
  return
}

// -----

// A reduction into one location: the groups of 8 accumulate in a vector
// carried across the vector loop (an alloca of 8 floats at the top of the
// function, which LLVM keeps in a register), reduced once with
// vector.reduction (its lanes combined in any order, reassoc: in a tree, not
// a chain of 8 adds; in order only with --fastmath=strict) and added into
// S[m] after it; the 3 iterations left over
// (32..34) add one element each.
// TREE-NEXT:for m in 4 : L0
// TREE-NEXT: S[m] <- 0.0
// TREE-NEXT: for n in 35 : L1 [vectorize 8]
// TREE-NEXT:  %0 <- read A[m, n]
// TREE-NEXT:  S[m] += %0
// LOWER-LABEL: func.func @row_sum
// LOWER-DAG:     %[[ZEROS:.*]] = arith.constant dense<0.000000e+00> : vector<8xf32>
// LOWER-DAG:     %[[CARRY:.*]] = memref.alloca() : memref<8xf32>
// LOWER:         scf.for %[[M:.*]] = %{{.*}} to %{{.*}} step
// LOWER-NEXT:      memref.store %{{.*}}, %[[S:.*]][%[[M]]] : memref<4xf32>
// LOWER-NEXT:      vector.store %[[ZEROS]], %[[CARRY]][%{{.*}}] : memref<8xf32>, vector<8xf32>
// LOWER-NEXT:      scf.for %[[J:.*]] = %{{.*}} to %[[C4:.*]] step
// LOWER-NEXT:        %[[N:.*]] = arith.muli %[[J]], %[[C8:.*]] : index
// LOWER-NEXT:        %[[V:.*]] = vector.load %{{.*}}[%[[M]], %[[N]]] : memref<4x35xf32>, vector<8xf32>
// LOWER-NEXT:        %[[C:.*]] = vector.load %[[CARRY]][%{{.*}}] : memref<8xf32>, vector<8xf32>
// LOWER-NEXT:        %[[SUM:.*]] = arith.addf %[[C]], %[[V]] {{.*}}: vector<8xf32>
// LOWER-NEXT:        vector.store %[[SUM]], %[[CARRY]][%{{.*}}] : memref<8xf32>, vector<8xf32>
// LOWER-NEXT:      }
// LOWER-NEXT:      %[[T:.*]] = vector.load %[[CARRY]][%{{.*}}] : memref<8xf32>, vector<8xf32>
// LOWER-NEXT:      %[[R:.*]] = vector.reduction <add>, %[[T]] fastmath<reassoc,contract> : vector<8xf32> into f32
// LOWER-NEXT:      %[[OLD:.*]] = memref.load %[[S]][%[[M]]] : memref<4xf32>
// LOWER-NEXT:      %[[NEW:.*]] = arith.addf %[[OLD]], %[[R]] {{.*}}: f32
// LOWER-NEXT:      memref.store %[[NEW]], %[[S]][%[[M]]] : memref<4xf32>
// LOWER-NEXT:      scf.for %[[K:.*]] = %{{.*}} to %[[C3:.*]] step
// LOWER-NEXT:        %[[N2:.*]] = arith.addi %[[K]], %[[C32:.*]] : index
// LOWER-NEXT:        %[[X:.*]] = memref.load %{{.*}}[%[[M]], %[[N2]]] : memref<4x35xf32>
// LOWER-NEXT:        %[[OLD2:.*]] = memref.load %[[S]][%[[M]]] : memref<4xf32>
// LOWER-NEXT:        %[[NEW2:.*]] = arith.addf %[[OLD2]], %[[X]] {{.*}}: f32
// LOWER-NEXT:        memref.store %[[NEW2]], %[[S]][%[[M]]] : memref<4xf32>
// LOWER-NEXT:      }
// LOWER-NEXT:    }
// LOWER-NEXT:    return
func.func @row_sum(%A: memref<4x35xf32> {lt.name = "A"}, %S: memref<4xf32> {lt.name = "S"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i1: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    memref.store %zero, %S[%m] : memref<4xf32>
    "lt.loop"() ({
    ^bb0(%i0: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %a = memref.load %A[%m, %n] : memref<4x35xf32>
      "lt.reduce"(%a, %S, %m) {kind = "add"} : (f32, memref<4xf32>, index) -> ()
    }) {dim = "n", size = 35 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// A column sum: accepted.  Its rows may also run in parallel, in either
// order of the two passes (the vector's lanes are distinct elements of S,
// which the rows share): on CPU threads each thread sums into a private
// tile of S, vectorized as usual; mapped to GPU blocks each lane is one
// atomic update of device memory.  The result is the untransformed one.
// TREE-NEXT:// -----
// TREE-NEXT:for r in 4 : L0
// TREE-NEXT: for i in 32 : L1 [vectorize 8]
// TREE-NEXT:  %0 <- read A[r, i]
// TREE-NEXT:  S[i] += %0
// TREE-NEXT:// -----
// RUN: sed -n '/^func.func @col_sum(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=COLSUM
// RUN: sed -n '/^func.func @col_sum(/,/^}/p' %s | env LT_PARALLEL_MIN_WORK=0 lt-opt - --run --repeat 1 -p 'builtin.module(lt-vectorize{loop=1 width=8}, lt-parallel{loop=0})' | filecheck %s --check-prefix=COLSUM
// RUN: sed -n '/^func.func @col_sum(/,/^}/p' %s | env LT_PARALLEL_MIN_WORK=0 lt-opt - --run --repeat 1 -p 'builtin.module(lt-parallel{loop=0}, lt-vectorize{loop=1 width=8})' | filecheck %s --check-prefix=COLSUM
// RUN: sed -n '/^func.func @col_sum(/,/^}/p' %s | lt-opt - --run --repeat 1 --target cuda-emulated -p 'builtin.module(lt-vectorize{loop=1 width=8}, lt-gpu-map{loop=0 to=block})' | filecheck %s --check-prefix=COLSUM
// RUN: sed -n '/^func.func @col_sum(/,/^}/p' %s | lt-opt - --run --repeat 1 --target cuda-emulated -p 'builtin.module(lt-gpu-map{loop=0 to=block}, lt-vectorize{loop=1 width=8})' | filecheck %s --check-prefix=COLSUM
// COLSUM: arg1 f32[32] checksum 15.9148
// RUN: sed -n '/^func.func @col_sum(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-vectorize{loop=1 width=8}, lt-gpu-map{loop=0 to=block}, lower-lt-to-gpu)' | filecheck %s --check-prefix=GPUVEC
// GPUVEC: vector.load %{{.*}} : memref<4x32xf32>, vector<8xf32>
// GPUVEC-COUNT-8: memref.atomic_rmw addf
// GPUVEC-NOT: memref.atomic_rmw
// Moving the vectorized loop outward is refused by the move itself.
// RUN: sed -n '/^func.func @col_sum(/,/^}/p' %s | not lt-opt - -p 'builtin.module(lt-vectorize{loop=1 width=8}, lt-swap{loop=0})' 2>&1 | filecheck %s --check-prefix=OUTWARD
// OUTWARD: error: lt-swap: refused: it would leave L0 vectorized although only an innermost loop can be vectorized
func.func @col_sum(%A: memref<4x32xf32> {lt.name = "A"}, %S: memref<32xf32> {lt.name = "S"}) {
  "lt.loop"() ({
  ^bb0(%r0: index):
    %r = "lt.dim"() {dim = "r"} : () -> index
    "lt.loop"() ({
    ^bb0(%i0: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %a = memref.load %A[%r, %i] : memref<4x32xf32>
      "lt.reduce"(%a, %S, %i) {kind = "add"} : (f32, memref<32xf32>, index) -> ()
    }) {dim = "i", size = 32 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: in the m, n, k matmul, L1 (n) is not innermost (lt-swap it first).
// ERR: lt-vectorize.mlir:[[# @LINE + 6]]:5: error: lt-vectorize: cannot vectorize L1 "for n in 64": only an innermost loop can be vectorized
func.func @matmul(%A: memref<32x64xf32> {lt.name = "A"}, %B: memref<64x64xf32> {lt.name = "B"}, %C: memref<32x64xf32> {lt.name = "C"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i2: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    "lt.loop"() ({
    ^bb0(%i1: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      memref.store %zero, %C[%m, %n] : memref<32x64xf32>
      "lt.loop"() ({
      ^bb0(%i0: index):
        %k = "lt.dim"() {dim = "k"} : () -> index
        %a = memref.load %A[%m, %k] : memref<32x64xf32>
        %b = memref.load %B[%k, %n] : memref<64x64xf32>
        %p = arith.mulf %a, %b : f32
        "lt.reduce"(%p, %C, %m, %n) {kind = "add"} : (f32, memref<32x64xf32>, index, index) -> ()
      }) {dim = "k", size = 64 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "n", size = 64 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 32 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: a running sum kept with a plain load and store (not lt.reduce):
// every iteration reads what the one before wrote.
// ERR-NEXT: lt-vectorize.mlir:[[# @LINE + 4]]:5: error: lt-vectorize: cannot vectorize L1 "for i in 32": argument 1 is written and accessed at elements that other iterations of dim 'i' also access
func.func @running_sum(%A: memref<2x32xf32>, %S: memref<2xf32>) {
  "lt.loop"() ({
  ^bb0(%r0: index):
    "lt.loop"() ({
    ^bb0(%i0: index):
      %r = "lt.dim"() {dim = "r"} : () -> index
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

// A transposed read, A[i, r], strides through memory along i: a
// vector.gather of 8 elements, A's row length (2) apart, from A[i, r]; the
// store along B's rows stays a vector.store.
// TREE-NEXT:for r in 2 : L0
// TREE-NEXT: for i in 32 : L1 [vectorize 8]
// TREE-NEXT:  %0 <- read A[i, r]
// TREE-NEXT:  B[r, i] <- %0
// TREE-NEXT:// -----
// LOWER-LABEL: func.func @transpose_load
// LOWER-DAG:     %[[PASS:.*]] = arith.constant dense<0.000000e+00> : vector<8xf32>
// LOWER-DAG:     %[[ALL:.*]] = arith.constant dense<true> : vector<8xi1>
// LOWER-DAG:     %[[STRIDE:.*]] = arith.constant dense<2> : vector<8xindex>
// LOWER:         scf.for %[[R:.*]] = %{{.*}} to %{{.*}} step
// LOWER-NEXT:      scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step
// LOWER-NEXT:        %[[I:.*]] = arith.muli %[[J]], %{{.*}} : index
// LOWER-NEXT:        %[[STEP:.*]] = vector.step : vector<8xindex>
// LOWER-NEXT:        %[[OFF:.*]] = arith.muli %[[STEP]], %[[STRIDE]] : vector<8xindex>
// LOWER-NEXT:        %[[G:.*]] = vector.gather %{{.*}}[%[[I]], %[[R]]] [%[[OFF]]], %[[ALL]], %[[PASS]] : memref<32x2xf32>, vector<8xindex>, vector<8xi1>, vector<8xf32> into vector<8xf32>
// LOWER-NEXT:        vector.store %[[G]], %{{.*}}[%[[R]], %[[I]]] : memref<2x32xf32>, vector<8xf32>
// RUN: sed -n '/^func.func @transpose_load(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=TLSUM
// RUN: sed -n '/^func.func @transpose_load(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-vectorize{loop=1 width=8})' | filecheck %s --check-prefix=TLSUM
// TLSUM: arg1 f32[2, 32] checksum 4.27497
func.func @transpose_load(%A: memref<32x2xf32> {lt.name = "A"}, %B: memref<2x32xf32> {lt.name = "B"}) {
  "lt.loop"() ({
  ^bb0(%r0: index):
    "lt.loop"() ({
    ^bb0(%i0: index):
      %r = "lt.dim"() {dim = "r"} : () -> index
      %i = "lt.dim"() {dim = "i"} : () -> index
      %a = memref.load %A[%i, %r] : memref<32x2xf32>
      memref.store %a, %B[%r, %i] : memref<2x32xf32>
    }) {dim = "i", size = 32 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// A body under a condition on i (a triangle's guard, i < 8r + 3) vectorizes
// under a mask: the lanes' comparison is a vector<8xi1>; where every lane
// holds, the body runs unmasked; where some but not all do, its loads and
// stores are masked and the max-reduction into S[r] takes -inf (max's
// identity) on the lanes that are off.  S[r] is the same place in every
// group, so both branches' maxima go into one vector carried across the
// groups, its lanes reduced once a row, after them.  The tail (37 = 4 x 8
// + 5) stays scalar under the scalar guard.  The sums are the scalar code's.
// TREE-NEXT:for r in 5 : L0
// TREE-NEXT: for i in 37 : L1 [vectorize 8]
// TREE-NEXT:  %0 <- cmpi slt(i, r*8 + 3)
// TREE-NEXT:  if(%0)
// TREE-NEXT:   %1 <- read A[r, i]
// TREE-NEXT:   %2 <- read B[r, i]
// TREE-NEXT:   %3 <- add(%1, %2)
// TREE-NEXT:   B[r, i] <- %3
// TREE-NEXT:   S[r] max= %1
// TREE-NEXT:   yield()
// TREE-NEXT:// -----
// LOWER-LABEL: func.func @triangle
// LOWER-DAG:     %[[NEGINF:.*]] = arith.constant dense<0xFF800000> : vector<8xf32>
// LOWER-DAG:     %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<8xf32>
// LOWER:         %[[LANES:.*]] = arith.addi %{{.*}}, %{{.*}} : vector<8xindex>
// LOWER-NEXT:    %[[BOUND:.*]] = vector.broadcast %{{.*}} : index to vector<8xindex>
// LOWER-NEXT:    %[[MASK:.*]] = arith.cmpi slt, %[[LANES]], %[[BOUND]] : vector<8xindex>
// LOWER-NEXT:    %[[EVERY:.*]] = vector.reduction <and>, %[[MASK]] : vector<8xi1> into i1
// LOWER-NEXT:    %[[SOME:.*]] = vector.reduction <or>, %[[MASK]] : vector<8xi1> into i1
// LOWER-NEXT:    %[[PARTLY:.*]] = arith.xori %[[SOME]], %[[EVERY]] : i1
// LOWER-NEXT:    scf.if %[[EVERY]] {
// LOWER-NEXT:      %[[A:.*]] = vector.load %{{.*}} : memref<5x37xf32>, vector<8xf32>
// LOWER:           vector.store %{{.*}} : memref<5x37xf32>, vector<8xf32>
// LOWER-NEXT:      %[[OLD:.*]] = vector.load %[[ACC:.*]][%{{.*}}] : memref<8xf32>, vector<8xf32>
// LOWER-NEXT:      %[[MAX:.*]] = arith.maximumf %[[OLD]], %[[A]] fastmath<nsz> : vector<8xf32>
// LOWER-NEXT:      vector.store %[[MAX]], %[[ACC]][%{{.*}}] : memref<8xf32>, vector<8xf32>
// LOWER:         scf.if %[[PARTLY]] {
// LOWER-NEXT:      %[[MA:.*]] = vector.maskedload %{{.*}}, %[[MASK]], %[[ZERO]] : memref<5x37xf32>, vector<8xi1>, vector<8xf32> into vector<8xf32>
// LOWER-NEXT:      vector.maskedload %{{.*}}, %[[MASK]], %[[ZERO]]
// LOWER-NEXT:      %[[SUM:.*]] = arith.addf
// LOWER-NEXT:      vector.maskedstore %{{.*}}, %[[MASK]], %[[SUM]] : memref<5x37xf32>, vector<8xi1>, vector<8xf32>
// LOWER-NEXT:      %[[OFF:.*]] = arith.select %[[MASK]], %[[MA]], %[[NEGINF]] : vector<8xi1>, vector<8xf32>
// LOWER-NEXT:      %[[OLD2:.*]] = vector.load %[[ACC]][%{{.*}}] : memref<8xf32>, vector<8xf32>
// LOWER-NEXT:      arith.maximumf %[[OLD2]], %[[OFF]] fastmath<nsz> : vector<8xf32>
// LOWER-NOT:       vector.reduction
// LOWER:         %[[ALL:.*]] = vector.load %[[ACC]][%{{.*}}] : memref<8xf32>, vector<8xf32>
// LOWER-NEXT:    vector.reduction <maximumf>, %[[ALL]] fastmath<reassoc,nsz> : vector<8xf32> into f32
// LOWER:         scf.for %{{.*}} = %{{.*}} to %[[C5:.*]] step
// LOWER:           %[[C:.*]] = arith.cmpi slt, %{{.*}}, %{{.*}} : index
// LOWER-NEXT:      scf.if %[[C]] {
// LOWER-NEXT:        memref.load %{{.*}} : memref<5x37xf32>
// RUN: sed -n '/^func.func @triangle(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=TRISUM
// RUN: sed -n '/^func.func @triangle(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-vectorize{loop=1 width=8})' | filecheck %s --check-prefix=TRISUM
// TRISUM: arg1 f32[5, 37] checksum 27.4089
// TRISUM: arg2 f32[5] checksum 7.84053
func.func @triangle(%A: memref<5x37xf32> {lt.name = "A"}, %B: memref<5x37xf32> {lt.name = "B"}, %S: memref<5xf32> {lt.name = "S"}) {
  "lt.loop"() ({
  ^bb0(%r0: index):
    "lt.loop"() ({
    ^bb0(%i0: index):
      %r = "lt.dim"() {dim = "r"} : () -> index
      %i = "lt.dim"() {dim = "i"} : () -> index
      %c8 = arith.constant 8 : index
      %c3 = arith.constant 3 : index
      %r8 = arith.muli %r, %c8 : index
      %bound = arith.addi %r8, %c3 : index
      %in = arith.cmpi slt, %i, %bound : index
      scf.if %in {
        %a = memref.load %A[%r, %i] : memref<5x37xf32>
        %b = memref.load %B[%r, %i] : memref<5x37xf32>
        %s = arith.addf %a, %b : f32
        memref.store %s, %B[%r, %i] : memref<5x37xf32>
        "lt.reduce"(%a, %S, %r) {kind = "max"} : (f32, memref<5xf32>, index) -> ()
      }
    }) {dim = "i", size = 37 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 5 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: an if/else on i (each lane would take one branch or the other).
// ERR-NEXT: lt-vectorize.mlir:[[# @LINE + 9]]:7: error: lt-vectorize: cannot vectorize L1 "for i in 32": an if/else (or an if with results) on a condition of the vectorized dim
func.func @if_else_on_lanes(%A: memref<2x32xf32>, %B: memref<2x32xf32>) {
  "lt.loop"() ({
  ^bb0(%r0: index):
    "lt.loop"() ({
    ^bb0(%i0: index):
      %r = "lt.dim"() {dim = "r"} : () -> index
      %i = "lt.dim"() {dim = "i"} : () -> index
      %c = arith.cmpi slt, %i, %r : index
      scf.if %c {
        %a = memref.load %A[%r, %i] : memref<2x32xf32>
        memref.store %a, %B[%r, %i] : memref<2x32xf32>
      } else {
        %z = arith.constant 0.0 : f32
        memref.store %z, %B[%r, %i] : memref<2x32xf32>
      }
    }) {dim = "i", size = 32 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: a transposed write, B[i, r].
// ERR-NEXT: lt-vectorize.mlir:[[# @LINE + 9]]:7: error: lt-vectorize: cannot vectorize L1 "for i in 32": a store is not contiguous in the vectorized dim 'i'
func.func @transpose_store(%A: memref<2x32xf32>, %B: memref<32x2xf32>) {
  "lt.loop"() ({
  ^bb0(%r0: index):
    "lt.loop"() ({
    ^bb0(%i0: index):
      %r = "lt.dim"() {dim = "r"} : () -> index
      %i = "lt.dim"() {dim = "i"} : () -> index
      %a = memref.load %A[%r, %i] : memref<2x32xf32>
      memref.store %a, %B[%i, %r] : memref<32x2xf32>
    }) {dim = "i", size = 32 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: the index i is converted to a value (a ramp 0, 1, 2, ...).
// ERR-NEXT: lt-vectorize.mlir:[[# @LINE + 8]]:12: error: lt-vectorize: cannot vectorize L1 "for i in 32": 'arith.index_cast' uses an index of the vectorized dim as a value
func.func @ramp(%B: memref<2x32xi32>) {
  "lt.loop"() ({
  ^bb0(%r0: index):
    "lt.loop"() ({
    ^bb0(%i0: index):
      %r = "lt.dim"() {dim = "r"} : () -> index
      %i = "lt.dim"() {dim = "i"} : () -> index
      %v = arith.index_cast %i : index to i32
      memref.store %v, %B[%r, %i] : memref<2x32xi32>
    }) {dim = "i", size = 32 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: A[r, 2 * i] as i + i (stride 2).
// ERR-NEXT: lt-vectorize.mlir:[[# @LINE + 8]]:13: error: lt-vectorize: cannot vectorize L1 "for i in 16": an index adds two values of the vectorized dim
func.func @stride2(%A: memref<2x32xf32>, %B: memref<2x16xf32>) {
  "lt.loop"() ({
  ^bb0(%r0: index):
    "lt.loop"() ({
    ^bb0(%i0: index):
      %r = "lt.dim"() {dim = "r"} : () -> index
      %i = "lt.dim"() {dim = "i"} : () -> index
      %ii = arith.addi %i, %i : index
      %a = memref.load %A[%r, %ii] : memref<2x32xf32>
      memref.store %a, %B[%r, %i] : memref<2x16xf32>
    }) {dim = "i", size = 16 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: a reversal, A[r, 31 - i].
// ERR-NEXT: lt-vectorize.mlir:[[# @LINE + 9]]:12: error: lt-vectorize: cannot vectorize L1 "for i in 32": an index subtracts the vectorized dim
func.func @reverse(%A: memref<2x32xf32>, %B: memref<2x32xf32>) {
  %last = arith.constant 31 : index
  "lt.loop"() ({
  ^bb0(%r0: index):
    "lt.loop"() ({
    ^bb0(%i0: index):
      %r = "lt.dim"() {dim = "r"} : () -> index
      %i = "lt.dim"() {dim = "i"} : () -> index
      %j = arith.subi %last, %i : index
      %a = memref.load %A[%r, %j] : memref<2x32xf32>
      memref.store %a, %B[%r, %i] : memref<2x32xf32>
    }) {dim = "i", size = 32 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: counting (every iteration adds the same 1.0).
// ERR-NEXT: lt-vectorize.mlir:[[# @LINE + 8]]:7: error: lt-vectorize: cannot vectorize L1 "for i in 32": a reduction adds the same value in every vectorized iteration
func.func @count(%S: memref<2xf32>) {
  %one = arith.constant 1.0 : f32
  "lt.loop"() ({
  ^bb0(%r0: index):
    "lt.loop"() ({
    ^bb0(%i0: index):
      %r = "lt.dim"() {dim = "r"} : () -> index
      "lt.reduce"(%one, %S, %r) {kind = "add"} : (f32, memref<2xf32>, index) -> ()
    }) {dim = "i", size = 32 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: a call on a varying value.
// ERR-NEXT: lt-vectorize.mlir:[[# @LINE + 10]]:12: error: lt-vectorize: cannot vectorize L1 "for i in 32": 'func.call' cannot be vectorized
func.func private @f(f32) -> f32
func.func @call(%A: memref<2x32xf32>, %B: memref<2x32xf32>) {
  "lt.loop"() ({
  ^bb0(%r0: index):
    "lt.loop"() ({
    ^bb0(%i0: index):
      %r = "lt.dim"() {dim = "r"} : () -> index
      %i = "lt.dim"() {dim = "i"} : () -> index
      %a = memref.load %A[%r, %i] : memref<2x32xf32>
      %b = func.call @f(%a) : (f32) -> f32
      memref.store %b, %B[%r, %i] : memref<2x32xf32>
    }) {dim = "i", size = 32 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// An if on a condition from the data (a > 0): the comparison of the vector
// is the mask; the store is a vector.store where every lane holds and a
// vector.maskedstore where some do.
// TREE-NEXT:for r in 2 : L0
// TREE-NEXT: for i in 32 : L1 [vectorize 8]
// TREE-NEXT:  %0 <- read A[r, i]
// TREE-NEXT:  %1 <- cmpf ogt(%0, 0.0)
// TREE-NEXT:  if(%1)
// TREE-NEXT:   B[r, i] <- %0
// TREE-NEXT:   yield()
//  TREE-NOT:{{.}}
// LOWER-LABEL: func.func @relu
// LOWER:         %[[A:.*]] = vector.load %{{.*}} : memref<2x32xf32>, vector<8xf32>
// LOWER-NEXT:    %[[MASK:.*]] = arith.cmpf ogt, %[[A]], %{{.*}} : vector<8xf32>
// LOWER-NEXT:    %[[EVERY:.*]] = vector.reduction <and>, %[[MASK]] : vector<8xi1> into i1
// LOWER-NEXT:    %[[SOME:.*]] = vector.reduction <or>, %[[MASK]] : vector<8xi1> into i1
// LOWER-NEXT:    %[[PARTLY:.*]] = arith.xori %[[SOME]], %[[EVERY]] : i1
// LOWER-NEXT:    scf.if %[[EVERY]] {
// LOWER-NEXT:      vector.store %[[A]], %{{.*}} : memref<2x32xf32>, vector<8xf32>
// LOWER-NEXT:    }
// LOWER-NEXT:    scf.if %[[PARTLY]] {
// LOWER-NEXT:      vector.maskedstore %{{.*}}, %[[MASK]], %[[A]] : memref<2x32xf32>, vector<8xi1>, vector<8xf32>
// RUN: sed -n '/^func.func @relu(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=RELUSUM
// RUN: sed -n '/^func.func @relu(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-vectorize{loop=1 width=8})' | filecheck %s --check-prefix=RELUSUM
// RELUSUM: arg1 f32[2, 32] checksum 26.018
func.func @relu(%A: memref<2x32xf32> {lt.name = "A"}, %B: memref<2x32xf32> {lt.name = "B"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%r0: index):
    "lt.loop"() ({
    ^bb0(%i0: index):
      %r = "lt.dim"() {dim = "r"} : () -> index
      %i = "lt.dim"() {dim = "i"} : () -> index
      %a = memref.load %A[%r, %i] : memref<2x32xf32>
      %pos = arith.cmpf ogt, %a, %zero : f32
      scf.if %pos {
        memref.store %a, %B[%r, %i] : memref<2x32xf32>
      }
    }) {dim = "i", size = 32 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: there is no loop L1.
// ERR-NEXT: error: lt-vectorize: no loop L1 (the loop tree has L0)
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
