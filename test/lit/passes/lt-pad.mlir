// lt-pad{loop=L operand=i axis=a every=E by=P}: the lt-cache buffer at the
// start of L's body laid out with P unused elements after every E elements
// of axis a (GPU shared memory read without bank conflicts).  The logical
// shape and indices stay; the lowering gives the buffer its padded size and
// indexes it flat.  Results never change.
//
// The normal case: W's 8 x 40 tile, 4 elements after every 16 of a row: a
// row takes 40 + 4 * ceil(40 / 16) = 52 elements (the tail case of the
// padded axis: 40 is not a multiple of 16), the tile 8 * 52 = 416.
// RUN: lt-opt %s -p 'builtin.module(lt-split{loop=1 factor=8}, lt-cache{loop=1 operand=0}, lt-pad{loop=1 every=16 by=4})' --emit=loop-tree 2>&1 | filecheck %s --check-prefix=TREE
// RUN: lt-opt %s -p 'builtin.module(lt-split{loop=1 factor=8}, lt-cache{loop=1 operand=0}, lt-pad{loop=1 every=16 by=4}, lower-lt-to-scf)' 2>/dev/null | filecheck %s --check-prefix=IR
//      TREE: remark: lt-pad: L1 "for k in 2 r 5": %0 padded by 4 after every 16 along j (416 elements for 320)
//      TREE: for k in 2 r 5 : L1
// TREE-NEXT:  %0 <- alloc f32[k, j] (320 elements, pad 4 every 16 j)
//      IR: memref.alloca() : memref<416xf32>
//      IR: %[[ROW:.*]] = arith.muli %{{.*}}, %c52 : index
//      IR: %[[SLICE:.*]] = arith.divui %{{.*}}, %c16 : index
//      IR: %[[PAD:.*]] = arith.muli %[[SLICE]], %c4 : index
//      IR: memref.store %{{.*}}, %alloca[%{{.*}}] : memref<416xf32>
//
// Another axis: 5 elements after every 3 rows, one flat run of 8 * 40 + 5 *
// ceil(8 / 3) = 335 elements; the k tile's tail iteration (5 rows) reads
// the same layout.
// RUN: lt-opt %s -p 'builtin.module(lt-split{loop=1 factor=8}, lt-cache{loop=1 operand=0}, lt-pad{loop=1 axis=0 every=3 by=5}, lower-lt-to-scf)' 2>/dev/null | filecheck %s --check-prefix=AXIS0
// AXIS0: memref.alloca() : memref<335xf32>
//
// The tile's start along the padded axis is a multiple of E (a level of 8
// over j, padded every 8): the padding term is j / 8 - j0 / 8, so that
// neighbouring elements share it (LLVM joins them into vector accesses).
// RUN: lt-opt %s -p 'builtin.module(lt-split{loop=2 factor=8}, lt-cache{loop=2 operand=0}, lt-pad{loop=2 every=8 by=4}, lower-lt-to-scf)' 2>/dev/null | filecheck %s --check-prefix=ALIGNED
// ALIGNED: memref.alloca() : memref<12xf32>
// ALIGNED: %[[X:.*]] = arith.divui %{{.*}}, %c8{{.*}} : index
// ALIGNED: %[[B:.*]] = arith.divui %{{.*}}, %c8{{.*}} : index
// ALIGNED-NEXT: arith.subi %[[X]], %[[B]] : index
//
// The results do not change (checksums of seeded random inputs), on the CPU
// and through the GPU lowering (cuda-emulated: blocks and threads as loops).
// RUN: lt-opt %s --run --repeat 1 | filecheck %s --check-prefix=SUM
// RUN: lt-opt %s --run --repeat 1 -p 'builtin.module(lt-split{loop=1 factor=8}, lt-cache{loop=1 operand=0}, lt-pad{loop=1 every=16 by=4})' | filecheck %s --check-prefix=SUM
// RUN: lt-opt %s --run --repeat 1 -p 'builtin.module(lt-split{loop=1 factor=8}, lt-cache{loop=1 operand=0}, lt-pad{loop=1 axis=0 every=3 by=5})' | filecheck %s --check-prefix=SUM
// RUN: lt-opt %s --run --repeat 1 -p 'builtin.module(lt-split{loop=2 factor=8}, lt-cache{loop=2 operand=0}, lt-pad{loop=2 every=8 by=4})' | filecheck %s --check-prefix=SUM
// RUN: lt-opt %s --run --repeat 1 --target cuda-emulated -p 'builtin.module(lt-split{loop=1 factor=8}, lt-cache{loop=1 operand=0}, lt-pad{loop=1 every=16 by=4}, lt-gpu-map{loop=0 to=thread}, lt-gpu-map{loop=1 to=block}, lt-gpu-map{loop=3 to=thread}, lt-gpu-map{loop=5 to=thread})' | filecheck %s --check-prefix=SUM
// SUM: arg1 f32[40] checksum -23.1045
//
// Refused: no cache in the loop, no cache of that argument, an axis out of
// range, every below 1, a buffer already padded, a use other than loads and
// stores (a reduction into the buffer), no such loop.
// RUN: not lt-opt %s -p 'builtin.module(lt-pad{loop=1})' 2>&1 | filecheck %s --check-prefix=NOCACHE
// RUN: not lt-opt %s -p 'builtin.module(lt-cache{loop=1 operand=0}, lt-pad{loop=1 operand=1})' 2>&1 | filecheck %s --check-prefix=NOARG
// RUN: not lt-opt %s -p 'builtin.module(lt-cache{loop=1 operand=0}, lt-pad{loop=1 axis=2})' 2>&1 | filecheck %s --check-prefix=AXIS
// RUN: not lt-opt %s -p 'builtin.module(lt-cache{loop=1 operand=0}, lt-pad{loop=1 every=0})' 2>&1 | filecheck %s --check-prefix=EVERY
// RUN: not lt-opt %s -p 'builtin.module(lt-cache{loop=1 operand=0}, lt-pad{loop=1}, lt-pad{loop=1 by=8})' 2>&1 | filecheck %s --check-prefix=TWICE
// RUN: not lt-opt %s -p 'builtin.module(lt-pad{loop=3})' 2>&1 | filecheck %s --check-prefix=USE
// RUN: not lt-opt %s -p 'builtin.module(lt-pad{loop=9})' 2>&1 | filecheck %s --check-prefix=LOOP
// NOCACHE: lt-pad.mlir:70:3: error: lt-pad: L1 "for k in 21" has no cache (made by lt-cache)
// NOARG: error: lt-pad: L1 "for k in 21" has no cache of argument 1 (made by lt-cache)
// AXIS: error: lt-pad: axis 2 is out of range: the buffer has 1 axis (j)
// EVERY: error: lt-pad: every (0) and by (4) must be at least 1
// TWICE: error: lt-pad: the buffer is already padded (4 every 32 along j)
// USE: lt-pad.mlir:92:7: error: lt-pad: 'lt.reduce' uses the buffer: only loads and stores can be laid out padded
// LOOP: error: lt-pad: no loop L9 (the loop tree has L0..L4)

func.func @colsum(%W: memref<21x40xf32> {lt.name = "W"}, %Y: memref<40xf32> {lt.name = "Y"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%a: index):
    %j = "lt.dim"() {dim = "j"} : () -> index
    memref.store %zero, %Y[%j] : memref<40xf32>
  }) {dim = "j", size = 40 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%b: index):
    %k = "lt.dim"() {dim = "k"} : () -> index
    "lt.loop"() ({
    ^bb0(%c: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %w = memref.load %W[%k, %j] : memref<21x40xf32>
      "lt.reduce"(%w, %Y, %j) {kind = "add"} : (f32, memref<40xf32>, index) -> ()
    }) {dim = "j", size = 40 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "k", size = 21 : i64, tail = 0 : i64} : () -> ()
  return
}

// A cache buffer (hand-made) that a reduction writes: lt-pad refuses it.
func.func @reduced(%W: memref<4xf32> {lt.name = "W"}) {
  "lt.loop"() ({
  ^bb0(%a: index):
    %t = "lt.alloc"() {dims = ["i"], lt.cache = 0 : i64} : () -> memref<4xf32>
    "lt.loop"() ({
    ^bb0(%b: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %w = memref.load %W[%i] : memref<4xf32>
      "lt.reduce"(%w, %t, %i) {kind = "add"} : (f32, memref<4xf32>, index) -> ()
    }) {dim = "i", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}
