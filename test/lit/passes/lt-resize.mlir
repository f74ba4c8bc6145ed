// lt-resize{loop=L delta=D}: level L (size x, tail y, inner extent E) gets
// x + D iterations; its parent level P (the nearest enclosing level over the
// same dim, whole extent X) becomes `X // e' r X % e'` with e' = (x + D)*E + y.
//
// Every chunk below goes through the same pipeline, lt-resize{loop=1 delta=1}:
// the chunks that resize print their loop tree (TREE) and IR (IR), the others
// refuse with a located one-line error (ERR).
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-resize{loop=1 delta=1})' --emit=loop-tree -o %t.tree 2>&1 | filecheck %s --check-prefix=ERR
// RUN: filecheck %s --input-file=%t.tree --check-prefix=TREE --match-full-lines --strict-whitespace
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-resize{loop=1 delta=1})' 2>/dev/null | filecheck %s --check-prefix=IR
//
// delta 0 changes nothing and is refused; so is a level left with no iteration
// (every chunk with a loop L1 refuses; the first is checked).
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-resize{loop=1 delta=0})' 2>&1 | filecheck %s --check-prefix=DELTA0
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-resize{loop=1 delta=-5})' 2>&1 | filecheck %s --check-prefix=EMPTY
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-resize{loop=0 delta=-1})' 2>&1 | filecheck %s --check-prefix=OUTER
//
// CompilerGym's walk-through: 1024 as `1024` over `1` over `1`
// (programs.pointwise_add(1024, blocks=[1, 1])), L1 grown by 1 once, then twice.
// RUN: sed -n '/^func.func @walk(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-resize{loop=1 delta=1})' --emit=loop-tree | filecheck %s --check-prefix=WALK1 --match-full-lines --strict-whitespace
// RUN: sed -n '/^func.func @walk(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-resize{loop=1 delta=1}, lt-resize{loop=1 delta=1})' --emit=loop-tree | filecheck %s --check-prefix=WALK2 --match-full-lines --strict-whitespace
//      WALK1:for i in 512 : L0
// WALK1-NEXT: for i' in 2 : L1
// WALK1-NEXT:  for i'' in 1 : L2
//      WALK2:for i in 341 r 1 : L0
// WALK2-NEXT: for i' in 3 : L1
// WALK2-NEXT:  for i'' in 1 : L2
//
// Shrinking gives iterations back: @walk's L1 `3` -> `2` after two steps up
// is `512` over `2` again.
// RUN: sed -n '/^func.func @walk(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-resize{loop=1 delta=1}, lt-resize{loop=1 delta=1}, lt-resize{loop=1 delta=-1})' --emit=loop-tree | filecheck %s --check-prefix=WALK1 --match-full-lines --strict-whitespace
//
// Loops over other dims between P and L: @middle's `for i' in 8` shrunk by 3
// (32 as `4` over `8` -> `6 r 2` over `5`); `for j` sees other groups of i,
// fine since every buffer written is private to i.  @conflict writes a
// scratch element every iteration of i shares: refused.
// RUN: sed -n '/^func.func @middle(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-resize{loop=2 delta=-3})' --emit=loop-tree | filecheck %s --check-prefix=MIDDLE --match-full-lines --strict-whitespace
// RUN: sed -n '/^func.func @conflict(/,/^}/p' %s | not lt-opt - -p 'builtin.module(lt-resize{loop=2 delta=1})' 2>&1 | filecheck %s --check-prefix=CONFLICT
//      MIDDLE:for i in 6 r 2 : L0
// MIDDLE-NEXT: for j in 3 : L1
// MIDDLE-NEXT:  for i' in 5 : L2
//
// Resizing never changes the result: the same checksums before and after.
// RUN: sed -n '/^func.func @grow(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=SUM30
// RUN: sed -n '/^func.func @grow(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-resize{loop=1 delta=1})' | filecheck %s --check-prefix=SUM30
// RUN: sed -n '/^func.func @grow(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-resize{loop=1 delta=-3})' | filecheck %s --check-prefix=SUM30
// RUN: sed -n '/^func.func @retail(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=SUM38
// RUN: sed -n '/^func.func @retail(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-resize{loop=1 delta=1})' | filecheck %s --check-prefix=SUM38
// RUN: sed -n '/^func.func @retail(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-resize{loop=2 delta=-1})' | filecheck %s --check-prefix=SUM38
// RUN: sed -n '/^func.func @walk(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=SUM1024
// RUN: sed -n '/^func.func @walk(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-resize{loop=1 delta=1}, lt-resize{loop=1 delta=1})' | filecheck %s --check-prefix=SUM1024
// RUN: sed -n '/^func.func @vector(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=SUM32
// RUN: sed -n '/^func.func @vector(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-resize{loop=1 delta=1})' | filecheck %s --check-prefix=SUM32
// RUN: sed -n '/^func.func @vector(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-resize{loop=1 delta=-7})' | filecheck %s --check-prefix=SUM32
// RUN: sed -n '/^func.func @middle(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=SUMMID
// RUN: sed -n '/^func.func @middle(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-resize{loop=2 delta=-3})' | filecheck %s --check-prefix=SUMMID
// SUM30: arg2 f32[30] checksum 4.63775
// SUM38: arg2 f32[38] checksum 7.3024
// SUM1024: arg2 f32[1024] checksum -55.9693
// SUM32: arg2 f32[32] checksum 4.27497
// SUMMID: arg1 f32[32, 3] checksum 22.5539

// The normal case: 30 as `6` over `5`; L1 grows to 6, L0 gives one of its
// chunks: `5` over `6`.
//      TREE:for i in 5 : L0
// TREE-NEXT: for i' in 6 : L1
// TREE-NEXT:  %0 <- read A[i]
// TREE-NEXT:  %1 <- read B[i]
// TREE-NEXT:  %2 <- add(%0, %1)
// TREE-NEXT:  C[i] <- %2
// TREE-NEXT:// -----
// IR-LABEL: func.func @grow
// IR:         "lt.loop"() ({
// IR-NEXT:    ^bb0(%{{.*}}: index):
// IR-NEXT:      "lt.loop"() ({
// IR:           }) {dim = "i", size = 6 : i64, tail = 0 : i64} : () -> ()
// IR-NEXT:    }) {dim = "i", size = 5 : i64, tail = 0 : i64} : () -> ()
// DELTA0: lt-resize.mlir:[[# @LINE + 6]]:5: error: lt-resize: delta must not be 0
// EMPTY: lt-resize.mlir:[[# @LINE + 5]]:5: error: lt-resize: delta -5 would leave L1 "for i' in 5" with 0 iterations (at least 1)
// OUTER: lt-resize.mlir:[[# @LINE + 2]]:3: error: lt-resize: L0 "for i in 6" is the outermost level of dim 'i': no level to give iterations to
func.func @grow(%A: memref<30xf32> {lt.name = "A"}, %B: memref<30xf32> {lt.name = "B"}, %C: memref<30xf32> {lt.name = "C"}) {
  "lt.loop"() ({
  ^bb0(%i1: index):
    "lt.loop"() ({
    ^bb0(%i0: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %a = memref.load %A[%i] : memref<30xf32>
      %b = memref.load %B[%i] : memref<30xf32>
      %c = arith.addf %a, %b : f32
      memref.store %c, %C[%i] : memref<30xf32>
    }) {dim = "i", size = 5 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 6 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// The tail case: 38 as `3 r 5` over `2 r 3` over `4`.  L1 keeps its own tail
// and covers 3*4 + 3 = 15 elements; L0 covers 38 as `2 r 8` of those.
//      TREE:for i in 2 r 8 : L0
// TREE-NEXT: for i' in 3 r 3 : L1 [unroll 2]
// TREE-NEXT:  for i'' in 4 : L2
// TREE-NEXT:   %0 <- read A[i]
// TREE-NEXT:   %1 <- read B[i]
// TREE-NEXT:   %2 <- add(%0, %1)
// TREE-NEXT:   C[i] <- %2
// TREE-NEXT:// -----
func.func @retail(%A: memref<38xf32> {lt.name = "A"}, %B: memref<38xf32> {lt.name = "B"}, %C: memref<38xf32> {lt.name = "C"}) {
  "lt.loop"() ({
  ^bb0(%i2: index):
    "lt.loop"() ({
    ^bb0(%i1: index):
      "lt.loop"() ({
      ^bb0(%i0: index):
        %i = "lt.dim"() {dim = "i"} : () -> index
        %a = memref.load %A[%i] : memref<38xf32>
        %b = memref.load %B[%i] : memref<38xf32>
        %c = arith.addf %a, %b : f32
        memref.store %c, %C[%i] : memref<38xf32>
      }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "i", size = 2 : i64, tail = 3 : i64, lt.unroll = 2} : () -> ()
  }) {dim = "i", size = 3 : i64, tail = 5 : i64} : () -> ()
  return
}

// -----

// The walk-through's program; L1 grows to 2: `512` over `2` over `1`.
//      TREE:for i in 512 : L0
// TREE-NEXT: for i' in 2 : L1
// TREE-NEXT:  for i'' in 1 : L2
// TREE-NEXT:   %0 <- read A[i]
// TREE-NEXT:   %1 <- read B[i]
// TREE-NEXT:   %2 <- add(%0, %1)
// TREE-NEXT:   C[i] <- %2
// TREE-NEXT:// -----
func.func @walk(%A: memref<1024xf32> {lt.name = "A"}, %B: memref<1024xf32> {lt.name = "B"}, %C: memref<1024xf32> {lt.name = "C"}) {
  "lt.loop"() ({
  ^bb0(%i2: index):
    "lt.loop"() ({
    ^bb0(%i1: index):
      "lt.loop"() ({
      ^bb0(%i0: index):
        %i = "lt.dim"() {dim = "i"} : () -> index
        %a = memref.load %A[%i] : memref<1024xf32>
        %b = memref.load %B[%i] : memref<1024xf32>
        %c = arith.addf %a, %b : f32
        memref.store %c, %C[%i] : memref<1024xf32>
      }) {dim = "i", size = 1 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "i", size = 1 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 1024 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// A vectorized level may end up with fewer iterations than lanes: the
// lowering runs what the width does not cover as scalar code (32 as `4` over
// `8` -> `3 r 5` over `9`; with delta=-7, `32` over `1`).
//      TREE:for i in 3 r 5 : L0
// TREE-NEXT: for i' in 9 : L1 [vectorize 16]
// TREE-NEXT:  %0 <- read A[i]
// TREE-NEXT:  %1 <- read B[i]
// TREE-NEXT:  %2 <- add(%0, %1)
// TREE-NEXT:  C[i] <- %2
//  TREE-NOT:{{.}}
func.func @vector(%A: memref<32xf32> {lt.name = "A"}, %B: memref<32xf32> {lt.name = "B"}, %C: memref<32xf32> {lt.name = "C"}) {
  "lt.loop"() ({
  ^bb0(%i1: index):
    "lt.loop"() ({
    ^bb0(%i0: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %a = memref.load %A[%i] : memref<32xf32>
      %b = memref.load %B[%i] : memref<32xf32>
      %c = arith.addf %a, %b : f32
      memref.store %c, %C[%i] : memref<32xf32>
    }) {dim = "i", size = 8 : i64, tail = 0 : i64, lt.vectorize = 16} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: `for j` is the outermost level of its dim (no iterations to take
// from).  With loop=2 (`for i'`, parent `for i` over `for j`), see MIDDLE.
// ERR: lt-resize.mlir:[[# @LINE + 5]]:5: error: lt-resize: L1 "for j in 3" is the outermost level of dim 'j': no iterations to take from
func.func @middle(%A: memref<32x3xf32> {lt.name = "A"}, %B: memref<32x3xf32> {lt.name = "B"}) {
  %two = arith.constant 2.0 : f32
  "lt.loop"() ({
  ^bb0(%i1: index):
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      "lt.loop"() ({
      ^bb0(%i0: index):
        %i = "lt.dim"() {dim = "i"} : () -> index
        %a = memref.load %A[%i, %j] : memref<32x3xf32>
        %b = arith.mulf %a, %two : f32
        memref.store %b, %B[%i, %j] : memref<32x3xf32>
      }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "j", size = 3 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused (loop=2): S[0] is written by every iteration of i, and `for j`
// between the two levels of i would see those iterations in other groups
// (the location is in the function alone, as sed passes it on stdin).
// CONFLICT: <stdin>:8:7: error: lt-resize: cannot regroup dim 'i' around L1 "for j in 3": argument 2 is written and accessed at elements that other iterations of dim 'i' also access
// ERR-NEXT: lt-resize.mlir:[[# @LINE + 5]]:5: error: lt-resize: L1 "for j in 3" is the outermost level of dim 'j': no iterations to take from
func.func @conflict(%A: memref<32x3xf32> {lt.name = "A"}, %B: memref<32x3xf32> {lt.name = "B"}, %S: memref<1xf32> {lt.name = "S"}) {
  %c0 = arith.constant 0 : index
  "lt.loop"() ({
  ^bb0(%i1: index):
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      "lt.loop"() ({
      ^bb0(%i0: index):
        %i = "lt.dim"() {dim = "i"} : () -> index
        %a = memref.load %A[%i, %j] : memref<32x3xf32>
        %s = memref.load %S[%c0] : memref<1xf32>
        %b = arith.addf %a, %s : f32
        memref.store %b, %B[%i, %j] : memref<32x3xf32>
        memref.store %a, %S[%c0] : memref<1xf32>
      }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "j", size = 3 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: L1 would cover 9 elements, more than the 8 its parent has.
// ERR-NEXT: lt-resize.mlir:[[# @LINE + 4]]:5: error: lt-resize: L1 "for i' in 8" would cover 9 elements of dim 'i' with 9 iterations, more than the 8 of its parent level L0 "for i in 1"
func.func @whole(%A: memref<8xf32> {lt.name = "A"}, %B: memref<8xf32> {lt.name = "B"}) {
  "lt.loop"() ({
  ^bb0(%i1: index):
    "lt.loop"() ({
    ^bb0(%i0: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %a = memref.load %A[%i] : memref<8xf32>
      memref.store %a, %B[%i] : memref<8xf32>
    }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 1 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: after lt-distribute the parent holds two levels of i, which must
// cover one extent.
// ERR-NEXT: lt-resize.mlir:[[# @LINE + 4]]:5: error: lt-resize: the parent level L0 "for i in 4" of L1 "for i' in 8" holds 2 levels of dim 'i' side by side (they must keep one extent; merge them first)
func.func @distributed(%A: memref<32xf32> {lt.name = "A"}, %B: memref<32xf32> {lt.name = "B"}, %C: memref<32xf32> {lt.name = "C"}) {
  "lt.loop"() ({
  ^bb0(%i2: index):
    "lt.loop"() ({
    ^bb0(%i1: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %a = memref.load %A[%i] : memref<32xf32>
      memref.store %a, %B[%i] : memref<32xf32>
    }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%i0: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %b = memref.load %B[%i] : memref<32xf32>
      memref.store %b, %C[%i] : memref<32xf32>
    }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: N[0] counts the iterations of L0; with chunks of 9 there would be
// fewer of them.
// ERR-NEXT: lt-resize.mlir:[[# @LINE + 6]]:5: error: lt-resize: a statement between L0 "for i in 4" and L1 "for i' in 8" would run a different number of times
func.func @statement(%A: memref<32xf32> {lt.name = "A"}, %B: memref<32xf32> {lt.name = "B"}, %N: memref<1xf32> {lt.name = "N"}) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  "lt.loop"() ({
  ^bb0(%i1: index):
    "lt.reduce"(%one, %N, %c0) {kind = "add"} : (f32, memref<1xf32>, index) -> ()
    "lt.loop"() ({
    ^bb0(%i0: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %a = memref.load %A[%i] : memref<32xf32>
      memref.store %a, %B[%i] : memref<32xf32>
    }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: the tile T (as lt-shrink-buffers makes it) holds one iteration
// of L0, 8 elements from `lt.dim i` at the start of L0's body; with chunks of
// 9 both would be wrong.
// ERR-NEXT: lt-resize.mlir:[[# @LINE + 5]]:13: error: lt-resize: an index computed between L0 "for i in 4" and L1 "for i' in 8" reads dim 'i' (its value would change)
func.func @tile(%A: memref<32xf32> {lt.name = "A"}, %B: memref<32xf32> {lt.name = "B"}) {
  %T = "lt.alloc"() {dims = ["i"]} : () -> memref<8xf32>
  "lt.loop"() ({
  ^bb0(%i1: index):
    %base = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%i0: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %r = arith.subi %i, %base : index
      %a = memref.load %A[%i] : memref<32xf32>
      memref.store %a, %T[%r] : memref<8xf32>
      %t = memref.load %T[%r] : memref<8xf32>
      memref.store %t, %B[%i] : memref<32xf32>
    }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: B is indexed with lt-split's `outer * 8 + inner`, which would
// count other chunks.
// ERR-NEXT: lt-resize.mlir:[[# @LINE + 2]]:3: error: lt-resize: the iteration number of L0 "for i in 2 r 4" is used (it would count other chunks)
func.func @iteration(%A: memref<20xf32> {lt.name = "A"}, %B: memref<20xf32> {lt.name = "B"}) {
  "lt.loop"() ({
  ^bb0(%outer: index):
    "lt.loop"() ({
    ^bb0(%inner: index):
      %c8 = arith.constant 8 : index
      %scaled = arith.muli %outer, %c8 : index
      %sum = arith.addi %scaled, %inner : index
      %c19 = arith.constant 19 : index
      %old = arith.minsi %sum, %c19 : index
      %i = "lt.dim"() {dim = "i"} : () -> index
      %a = memref.load %A[%i] : memref<20xf32>
      memref.store %a, %B[%old] : memref<20xf32>
    }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 2 : i64, tail = 4 : i64} : () -> ()
  return
}

// -----

// Refused: L1 is unrolled completely and would have 65 iterations.
// ERR-NEXT: lt-resize.mlir:[[# @LINE + 4]]:5: error: lt-resize: L1 "for i' in 64" is unrolled completely and would have 65 iterations (full unrolling stops at 64)
func.func @unrolled(%A: memref<128xf32> {lt.name = "A"}, %B: memref<128xf32> {lt.name = "B"}) {
  "lt.loop"() ({
  ^bb0(%i1: index):
    "lt.loop"() ({
    ^bb0(%i0: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %a = memref.load %A[%i] : memref<128xf32>
      memref.store %a, %B[%i] : memref<128xf32>
    }) {dim = "i", size = 64 : i64, tail = 0 : i64, lt.unroll = 0} : () -> ()
  }) {dim = "i", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused by the registry's check after the pass: a block of 1025 threads
// is more than a GPU launches (the IR is left as it was; the check names the
// kernel's root, L0).
// ERR-NEXT: error: lt-resize: refused: it would leave L0 GPU-mapped although 1025 threads per block (at most 1024)
func.func @threads(%A: memref<2048xf32> {lt.name = "A"}, %B: memref<2048xf32> {lt.name = "B"}) {
  "lt.loop"() ({
  ^bb0(%i1: index):
    "lt.loop"() ({
    ^bb0(%i0: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %a = memref.load %A[%i] : memref<2048xf32>
      memref.store %a, %B[%i] : memref<2048xf32>
    }) {dim = "i", size = 1024 : i64, tail = 0 : i64, lt.gpu = "thread"} : () -> ()
  }) {dim = "i", size = 2 : i64, tail = 0 : i64, lt.gpu = "block"} : () -> ()
  return
}

// -----

// Refused: there is no loop L1.
// ERR-NEXT: error: lt-resize: no loop L1 (the loop tree has L0)
// ERR-NOT: error
func.func @one_level(%A: memref<4xf32> {lt.name = "A"}, %B: memref<4xf32> {lt.name = "B"}) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %a = memref.load %A[%i] : memref<4xf32>
    memref.store %a, %B[%i] : memref<4xf32>
  }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}
