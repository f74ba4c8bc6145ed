// lt-unroll{loop=L factor=F}: mark L `lt.unroll = F`; lower-lt-to-scf emits
// F copies of the body per iteration of the generated loop, then the
// iterations F does not divide (one copy each); F=0 unrolls completely, with
// constant iteration numbers.
//
// Every chunk below goes through the same pipeline, lt-unroll{loop=0 factor=4}:
// the chunks it applies to print their loop tree (TREE) and, lowered, their
// scf code (LOWER); the others refuse with a located one-line error (ERR).
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-unroll{loop=0 factor=4})' --emit=loop-tree -o %t.tree 2>&1 | filecheck %s --check-prefix=ERR
// RUN: filecheck %s --input-file=%t.tree --check-prefix=TREE --match-full-lines --strict-whitespace
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-unroll{loop=0 factor=4}, lower-lt-to-scf, canonicalize)' 2>/dev/null | filecheck %s --check-prefix=LOWER
//
// Full unrolling (factor=0): @three becomes three constant-index copies;
// @long (100 iterations) is refused.
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-unroll{loop=0 factor=0})' 2>&1 | filecheck %s --check-prefix=FULLERR
// RUN: sed -n '/^func.func @three(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-unroll{loop=0 factor=0})' --emit=loop-tree | filecheck %s --check-prefix=FULLTREE --match-full-lines --strict-whitespace
// RUN: sed -n '/^func.func @three(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-unroll{loop=0 factor=0}, lower-lt-to-scf, canonicalize)' | filecheck %s --check-prefix=FULL
// FULLTREE:for i in 3 : L0 [unroll full]
// FULL-LABEL: func.func @three
// FULL-DAG:     %[[C0:.*]] = arith.constant 0 : index
// FULL-DAG:     %[[C1:.*]] = arith.constant 1 : index
// FULL-DAG:     %[[C2:.*]] = arith.constant 2 : index
// FULL-NOT:     scf.for
// FULL:         %[[A0:.*]] = memref.load %{{.*}}[%[[C0]]]
// FULL:         memref.store %{{.*}}, %{{.*}}[%[[C0]]]
// FULL-NEXT:    %[[A1:.*]] = memref.load %{{.*}}[%[[C1]]]
// FULL:         memref.store %{{.*}}, %{{.*}}[%[[C1]]]
// FULL-NEXT:    %[[A2:.*]] = memref.load %{{.*}}[%[[C2]]]
// FULL:         memref.store %{{.*}}, %{{.*}}[%[[C2]]]
// FULL-NEXT:    return
//
// A negative factor is refused (every chunk with a loop refuses; the first is checked).
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-unroll{loop=0 factor=-1})' 2>&1 | filecheck %s --check-prefix=NEG
// So is factor 1 (one copy an iteration: nothing unrolled).
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-unroll{loop=0 factor=1})' 2>&1 | filecheck %s --check-prefix=ONE
//
// Unrolling never changes the result: same checksums, by 4 and completely.
// RUN: sed -n '/^func.func @add35(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=SUM35
// RUN: sed -n '/^func.func @add35(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-unroll{loop=0 factor=4})' | filecheck %s --check-prefix=SUM35
// RUN: sed -n '/^func.func @add35(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-unroll{loop=0 factor=0})' | filecheck %s --check-prefix=SUM35
// SUM35: arg2 f32[35] checksum 5.67905
// RUN: sed -n '/^func.func @tiled(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=SUM37
// RUN: sed -n '/^func.func @tiled(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-unroll{loop=0 factor=4})' | filecheck %s --check-prefix=SUM37
// RUN: sed -n '/^func.func @tiled(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-unroll{loop=0 factor=0}, lt-unroll{loop=1 factor=3})' | filecheck %s --check-prefix=SUM37
// SUM37: arg2 f32[37] checksum 6.80082

// 32 iterations by 4: a loop of 8 iterations, 4 copies each (at 4j .. 4j+3).
//      TREE:for i in 32 : L0 [unroll 4]
// TREE-NEXT: %0 <- read A[i]
// TREE-NEXT: %1 <- read B[i]
// TREE-NEXT: %2 <- add(%0, %1)
// TREE-NEXT: C[i] <- %2
// TREE-NEXT:// -----
// LOWER-LABEL: func.func @add32
// LOWER-DAG:     %[[C8:.*]] = arith.constant 8 : index
// LOWER-DAG:     %[[C4:.*]] = arith.constant 4 : index
// LOWER-DAG:     %[[C1:.*]] = arith.constant 1 : index
// LOWER-DAG:     %[[C2:.*]] = arith.constant 2 : index
// LOWER-DAG:     %[[C3:.*]] = arith.constant 3 : index
// LOWER:         scf.for %[[J:.*]] = %{{.*}} to %[[C8]] step %[[C1]] {
// LOWER-NEXT:      %[[I0:.*]] = arith.muli %[[J]], %[[C4]] : index
// LOWER-NEXT:      memref.load %{{.*}}[%[[I0]]]
// LOWER:           memref.store %{{.*}}, %{{.*}}[%[[I0]]]
// LOWER-NEXT:      %[[I1:.*]] = arith.addi %[[I0]], %[[C1]] : index
// LOWER-NEXT:      memref.load %{{.*}}[%[[I1]]]
// LOWER:           memref.store %{{.*}}, %{{.*}}[%[[I1]]]
// LOWER-NEXT:      %[[I2:.*]] = arith.addi %[[I0]], %[[C2]] : index
// LOWER-NEXT:      memref.load %{{.*}}[%[[I2]]]
// LOWER:           memref.store %{{.*}}, %{{.*}}[%[[I2]]]
// LOWER-NEXT:      %[[I3:.*]] = arith.addi %[[I0]], %[[C3]] : index
// LOWER-NEXT:      memref.load %{{.*}}[%[[I3]]]
// LOWER:           memref.store %{{.*}}, %{{.*}}[%[[I3]]]
// LOWER-NEXT:    }
// LOWER-NEXT:    return
// NEG: lt-unroll.mlir:[[# @LINE + 3]]:3: error: lt-unroll: factor must not be negative, got -1
// ONE: lt-unroll.mlir:[[# @LINE + 2]]:3: error: lt-unroll: factor 1 unrolls nothing (0 unrolls L0 "for i in 32" completely, 2 or more partly)
func.func @add32(%A: memref<32xf32> {lt.name = "A"}, %B: memref<32xf32> {lt.name = "B"}, %C: memref<32xf32> {lt.name = "C"}) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %a = memref.load %A[%i] : memref<32xf32>
    %b = memref.load %B[%i] : memref<32xf32>
    %c = arith.addf %a, %b : f32
    memref.store %c, %C[%i] : memref<32xf32>
  }) {dim = "i", size = 32 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// The tail case: 35 iterations by 4 are 8 iterations of 4 copies, then the
// 3 iterations 4 does not divide, one copy each at constant 32, 33, 34.
// TREE-NEXT:for i in 35 : L0 [unroll 4]
// TREE-NEXT: %0 <- read A[i]
// TREE-NEXT: %1 <- read B[i]
// TREE-NEXT: %2 <- add(%0, %1)
// TREE-NEXT: C[i] <- %2
// TREE-NEXT:// -----
// LOWER-LABEL: func.func @add35
// LOWER-DAG:     %[[C32:.*]] = arith.constant 32 : index
// LOWER-DAG:     %[[C33:.*]] = arith.constant 33 : index
// LOWER-DAG:     %[[C34:.*]] = arith.constant 34 : index
// LOWER-DAG:     %[[C8:.*]] = arith.constant 8 : index
// LOWER:         scf.for %{{.*}} = %{{.*}} to %[[C8]] step
// LOWER-COUNT-4:   arith.addf
// LOWER:         }
// LOWER-NEXT:    memref.load %{{.*}}[%[[C32]]]
// LOWER:         memref.store %{{.*}}, %{{.*}}[%[[C32]]]
// LOWER-NEXT:    memref.load %{{.*}}[%[[C33]]]
// LOWER:         memref.store %{{.*}}, %{{.*}}[%[[C33]]]
// LOWER-NEXT:    memref.load %{{.*}}[%[[C34]]]
// LOWER:         memref.store %{{.*}}, %{{.*}}[%[[C34]]]
// LOWER-NEXT:    return
func.func @add35(%A: memref<35xf32> {lt.name = "A"}, %B: memref<35xf32> {lt.name = "B"}, %C: memref<35xf32> {lt.name = "C"}) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %a = memref.load %A[%i] : memref<35xf32>
    %b = memref.load %B[%i] : memref<35xf32>
    %c = arith.addf %a, %b : f32
    memref.store %c, %C[%i] : memref<35xf32>
  }) {dim = "i", size = 35 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// A level with a tail, 37 as `9 r 1` over `4`: 2 iterations of 4 copies of
// the inner loop, 1 remaining iteration (at 32), then the clipped tail
// iteration (1 element at 36).
// TREE-NEXT:for i in 9 r 1 : L0 [unroll 4]
// TREE-NEXT: for i' in 4 : L1
// TREE-NEXT:  %0 <- read A[i]
// TREE-NEXT:  %1 <- read B[i]
// TREE-NEXT:  %2 <- add(%0, %1)
// TREE-NEXT:  C[i] <- %2
// TREE-NEXT:// -----
// LOWER-LABEL: func.func @tiled
// LOWER-DAG:     %[[C2:.*]] = arith.constant 2 : index
// LOWER-DAG:     %[[C4:.*]] = arith.constant 4 : index
// LOWER-DAG:     %[[C32:.*]] = arith.constant 32 : index
// LOWER-DAG:     %[[C36:.*]] = arith.constant 36 : index
// LOWER:         scf.for %{{.*}} = %{{.*}} to %[[C2]] step
// LOWER-COUNT-4:   scf.for %{{.*}} = %{{.*}} to %[[C4]] step
// LOWER:         scf.for %[[K:.*]] = %{{.*}} to %[[C4]] step
// LOWER-NEXT:      %[[I:.*]] = arith.addi %[[K]], %[[C32]] : index
// LOWER-NEXT:      memref.load %{{.*}}[%[[I]]]
// LOWER:         }
// LOWER-NEXT:    memref.load %{{.*}}[%[[C36]]]
// LOWER:         memref.store %{{.*}}, %{{.*}}[%[[C36]]]
// LOWER-NEXT:    return
func.func @tiled(%A: memref<37xf32> {lt.name = "A"}, %B: memref<37xf32> {lt.name = "B"}, %C: memref<37xf32> {lt.name = "C"}) {
  "lt.loop"() ({
  ^bb0(%i1: index):
    "lt.loop"() ({
    ^bb0(%i0: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %a = memref.load %A[%i] : memref<37xf32>
      %b = memref.load %B[%i] : memref<37xf32>
      %c = arith.addf %a, %b : f32
      memref.store %c, %C[%i] : memref<37xf32>
    }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 9 : i64, tail = 1 : i64} : () -> ()
  return
}

// -----

// 100 iterations unroll by 4, but not completely (more than 64).
// TREE-NEXT:for i in 100 : L0 [unroll 4]
// TREE-NEXT: %0 <- read A[i]
// TREE-NEXT: B[i] <- %0
//  TREE-NOT:{{.}}
// FULLERR: lt-unroll.mlir:[[# @LINE + 2]]:3: error: lt-unroll: L0 "for i in 100" has 100 iterations; full unrolling stops at 64
func.func @long(%A: memref<100xf32> {lt.name = "A"}, %B: memref<100xf32> {lt.name = "B"}) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %a = memref.load %A[%i] : memref<100xf32>
    memref.store %a, %B[%i] : memref<100xf32>
  }) {dim = "i", size = 100 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: 4 copies per iteration exceed the 3 iterations.
// ERR: lt-unroll.mlir:[[# @LINE + 2]]:3: error: lt-unroll: factor 4 exceeds the 3 iterations of L0 "for i in 3"
func.func @three(%A: memref<3xf32> {lt.name = "A"}, %B: memref<3xf32> {lt.name = "B"}) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %a = memref.load %A[%i] : memref<3xf32>
    memref.store %a, %B[%i] : memref<3xf32>
  }) {dim = "i", size = 3 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: there is no loop L0.
// ERR-NEXT: error: lt-unroll: no loop L0 (the module has no loops)
// ERR-NOT: error
// FULLERR-NEXT: error: lt-unroll: no loop L0 (the module has no loops)
// FULLERR-NOT: error
func.func @no_loops(%A: memref<4xf32>) {
  return
}
