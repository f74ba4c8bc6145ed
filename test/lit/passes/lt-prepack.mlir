// lt-prepack{loop=L operand=i}: the copy an lt-cache makes at the start of
// each iteration of an outermost loop L, of an argument the function only
// reads, moves into a pack function of its own (@<f>_pack_<name>, marked
// `lt.pack`) that fills one slab of a new argument <name>.packed per
// iteration of L; the function takes that argument (after its read-only
// ones) and L's iteration t reads slab t.  A caller runs the pack once for
// an argument that stays the same from call to call (a model's weights).
// Running the pair against the function before is tests/test_prepack.py's.
//
// Every chunk goes through lt-cache{loop=0 operand=1}, lt-prepack{loop=0}:
// the first two print their loop trees (TREE), the third is refused (its
// W is written, so lt-cache already refuses to copy it inside L0).
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-cache{loop=0 operand=1}, lt-prepack{loop=0})' --emit=loop-tree -o %t.tree 2>&1 | filecheck %s --check-prefix=REMARK
// RUN: filecheck %s --input-file=%t.tree --check-prefix=TREE --match-full-lines --strict-whitespace
// RUN: sed -n '/^func.func @rowscale(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-cache{loop=0 operand=1}, lt-prepack{loop=0})' 2>/dev/null | filecheck %s --check-prefix=IR
//
// Refused: a loop inside another, a loop with no cache (of that argument),
// an argument the function writes (outside L too), a loop that is not there.
// RUN: sed -n '/^func.func @rowscale(/,/^}/p' %s | not lt-opt - -p 'builtin.module(lt-cache{loop=1 operand=1}, lt-prepack{loop=1})' 2>&1 | filecheck %s --check-prefix=INNER
// RUN: sed -n '/^func.func @rowscale(/,/^}/p' %s | not lt-opt - -p 'builtin.module(lt-prepack{loop=0})' 2>&1 | filecheck %s --check-prefix=NOCACHE
// RUN: sed -n '/^func.func @rowscale(/,/^}/p' %s | not lt-opt - -p 'builtin.module(lt-cache{loop=0 operand=1}, lt-prepack{loop=0 operand=0})' 2>&1 | filecheck %s --check-prefix=OPERAND
// RUN: sed -n '/^func.func @written(/,/^}/p' %s | not lt-opt - -p 'builtin.module(lt-cache{loop=1 operand=1}, lt-prepack{loop=1})' 2>&1 | filecheck %s --check-prefix=WRITTEN
// RUN: sed -n '/^func.func @rowscale(/,/^}/p' %s | not lt-opt - -p 'builtin.module(lt-prepack{loop=7})' 2>&1 | filecheck %s --check-prefix=LOOP
// INNER: <stdin>:4:5: error: lt-prepack: L1 "for i in 4" is inside another loop; only an outermost loop's cache can be made once before the call
// NOCACHE: <stdin>:2:3: error: lt-prepack: L0 "for j in 2" has no cache (made by lt-cache)
// OPERAND: <stdin>:2:3: error: lt-prepack: L0 "for j in 2" has no cache of argument 0 (made by lt-cache)
// WRITTEN: <stdin>:7:5: error: lt-prepack: W is written in @written; a copy made before the call would be stale
// LOOP: error: lt-prepack: no loop L7 (the loop tree has L0..L2)
//
//      REMARK: remark: lt-prepack: W: the copy of L0 "for j in 2" made once by @rowscale_pack_W into W.packed (2 x 8), an argument of @rowscale
//      REMARK: remark: lt-prepack: W: the copy of L0 "for j in 2 r 5" made once by @rowscale_tail_pack_W into W.packed (3 x 8), an argument of @rowscale_tail
//      REMARK: error: lt-cache: W is written inside L0; only inputs read there can be cached

// The normal case: Y[i, j] = X[i, j] * W[j] with j = 2 tiles of 8 outermost.
// lt-cache{loop=0 operand=1} copies W's tile of 8 at the start of each
// iteration of L0; lt-prepack moves that copy into @rowscale_pack_W, which
// fills W.packed[t, 0..7] for iteration t, and L0's reads read that slab.
//      TREE:@rowscale:
// TREE-NEXT:for j in 2 : L0 [parallel]
// TREE-NEXT: for i in 4 : L1
// TREE-NEXT:  for j' in 8 : L2
// TREE-NEXT:   %0 <- read X[i, j]
// TREE-NEXT:   %1 <- read W.packed[L0.iteration, j - j]
// TREE-NEXT:   %2 <- mul(%0, %1)
// TREE-NEXT:   Y[i, j] <- %2
// TREE-NEXT:@rowscale_pack_W:
// TREE-NEXT:for j in 2 : L3 [parallel]
// TREE-NEXT: for j' in 8 : L4
// TREE-NEXT:  %0 <- read W[j]
// TREE-NEXT:  W.packed[L3.iteration, j - j] <- %0
// TREE-NEXT:// -----
// IR-LABEL: func.func @rowscale(%arg0: memref<4x16xf32> {lt.name = "X"}, %arg1: memref<16xf32> {lt.name = "W"}, %arg2: memref<2x8xf32> {lt.name = "W.packed"}, %arg3: memref<4x16xf32> {lt.name = "Y"})
// IR-NOT:       lt.alloc
// IR:           ^bb0(%[[T:.*]]: index):
// IR-NEXT:      %[[BASE:.*]] = "lt.dim"() {dim = "j"} : () -> index
// IR:           %[[J:.*]] = "lt.dim"() {dim = "j"} : () -> index
// IR-NEXT:      %[[R:.*]] = arith.subi %[[J]], %[[BASE]] : index
// IR:           memref.load %arg2[%[[T]], %[[R]]] : memref<2x8xf32>
// IR-NOT:       memref.load %arg1
// IR-LABEL: func.func @rowscale_pack_W(%arg0: memref<16xf32> {lt.name = "W"}, %arg1: memref<2x8xf32> {lt.name = "W.packed"}) attributes {lt.pack = "rowscale"}
// IR:           ^bb0(%[[T2:.*]]: index):
// IR-NEXT:      %[[BASE2:.*]] = "lt.dim"() {dim = "j"} : () -> index
// IR:           %[[J2:.*]] = "lt.dim"() {dim = "j"} : () -> index
// IR-NEXT:      %[[V:.*]] = memref.load %arg0[%[[J2]]] : memref<16xf32>
// IR-NEXT:      %[[R2:.*]] = arith.subi %[[J2]], %[[BASE2]] : index
// IR-NEXT:      memref.store %[[V]], %arg1[%[[T2]], %[[R2]]] : memref<2x8xf32>
// IR:           }) {dim = "j", lt.parallel, size = 2 : i64, tail = 0 : i64} : () -> ()
func.func @rowscale(%X: memref<4x16xf32> {lt.name = "X"}, %W: memref<16xf32> {lt.name = "W"}, %Y: memref<4x16xf32> {lt.name = "Y"}) {
  "lt.loop"() ({
  ^bb0(%t: index):
    "lt.loop"() ({
    ^bb0(%u: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      "lt.loop"() ({
      ^bb0(%v: index):
        %j = "lt.dim"() {dim = "j"} : () -> index
        %x = memref.load %X[%i, %j] : memref<4x16xf32>
        %w = memref.load %W[%j] : memref<16xf32>
        %y = arith.mulf %x, %w : f32
        memref.store %y, %Y[%i, %j] : memref<4x16xf32>
      }) {dim = "j", size = 8 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "j", lt.parallel, size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// The tail case: 21 = `2 r 5` over 8.  W.packed has a slab for the tail
//      TREE:@rowscale_tail:
// TREE-NEXT:for j in 2 r 5 : L0
// TREE-NEXT: for i in 4 : L1
// TREE-NEXT:  for j' in 8 : L2
// TREE-NEXT:   %0 <- read X[i, j]
// TREE-NEXT:   %1 <- read W.packed[L0.iteration, j - j]
// TREE-NEXT:   %2 <- mul(%0, %1)
// TREE-NEXT:   Y[i, j] <- %2
// TREE-NEXT:@rowscale_tail_pack_W:
// TREE-NEXT:for j in 2 r 5 : L3
// TREE-NEXT: for j' in 8 : L4
// TREE-NEXT:  %0 <- read W[j]
// TREE-NEXT:  W.packed[L3.iteration, j - j] <- %0
// iteration too (3 x 8); the pack loop has L0's tail, so its copy writes 5
// elements of that slab, the ones the tail iteration reads.
func.func @rowscale_tail(%X: memref<4x21xf32> {lt.name = "X"}, %W: memref<21xf32> {lt.name = "W"}, %Y: memref<4x21xf32> {lt.name = "Y"}) {
  "lt.loop"() ({
  ^bb0(%t: index):
    "lt.loop"() ({
    ^bb0(%u: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      "lt.loop"() ({
      ^bb0(%v: index):
        %j = "lt.dim"() {dim = "j"} : () -> index
        %x = memref.load %X[%i, %j] : memref<4x21xf32>
        %w = memref.load %W[%j] : memref<21xf32>
        %y = arith.mulf %x, %w : f32
        memref.store %y, %Y[%i, %j] : memref<4x21xf32>
      }) {dim = "j", size = 8 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "j", size = 2 : i64, tail = 5 : i64} : () -> ()
  return
}

// -----

// Refused: W is written in the function (by L0), so a copy made before the
// call would hold the old values.
func.func @written(%X: memref<4x16xf32> {lt.name = "X"}, %W: memref<16xf32> {lt.name = "W"}, %Y: memref<4x16xf32> {lt.name = "Y"}) {
  "lt.loop"() ({
  ^bb0(%t: index):
    %j = "lt.dim"() {dim = "j"} : () -> index
    %w = memref.load %W[%j] : memref<16xf32>
    %w2 = arith.addf %w, %w : f32
    memref.store %w2, %W[%j] : memref<16xf32>
  }) {dim = "j", size = 16 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%t: index):
    "lt.loop"() ({
    ^bb0(%u: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      "lt.loop"() ({
      ^bb0(%v: index):
        %j = "lt.dim"() {dim = "j"} : () -> index
        %x = memref.load %X[%i, %j] : memref<4x16xf32>
        %w = memref.load %W[%j] : memref<16xf32>
        %y = arith.mulf %x, %w : f32
        memref.store %y, %Y[%i, %j] : memref<4x16xf32>
      }) {dim = "j", size = 8 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "j", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}
