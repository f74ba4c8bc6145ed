// lt-distribute{loop=L} where L is the outer level of a split and one part
// of its body holds no level of L's dim.  A part that reads no dim (a
// count) gets L's iterations in a loop of its own, the tail iteration as a
// full one (2 r 1 -> 3); a part that reads lt.dim of L's dim at L's body (the
// start of each chunk of the inner level) is refused: in a loop of its own
// the dim would count single elements.
// RUN: sed -n '/^func.func @counts(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-distribute{loop=0})' --emit=loop-tree | filecheck %s --check-prefix=TREE --match-full-lines --strict-whitespace
// RUN: sed -n '/^func.func @counts(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=SUM
// RUN: sed -n '/^func.func @counts(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-distribute{loop=0})' | filecheck %s --check-prefix=SUM
// SUM: arg1 f32[5, 6] checksum -7.28919
// SUM: arg2 f32[1] checksum 6
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-distribute{loop=0})' 2>&1 >/dev/null | filecheck %s --check-prefix=ERR
//      TREE:for i in 3 : L0
// TREE-NEXT: C[0] += 1.0
// TREE-NEXT:for i in 2 r 1 : L1
// TREE-NEXT: for i' in 2 : L2
// TREE-NEXT:  for j in 6 : L3
// TREE-NEXT:   %0 <- read A[i, j]
// TREE-NEXT:   %1 <- mul(%0, 2.0)
// TREE-NEXT:   B[i, j] <- %1
func.func @counts(%A: memref<5x6xf32> {lt.name = "A"}, %B: memref<5x6xf32> {lt.name = "B"}, %C: memref<1xf32> {lt.name = "C"}) {
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  %c0 = arith.constant 0 : index
  "lt.loop"() ({
  ^bb0(%io: index):
    "lt.reduce"(%one, %C, %c0) {kind = "add"} : (f32, memref<1xf32>, index) -> ()
    "lt.loop"() ({
    ^bb0(%ii: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      "lt.loop"() ({
      ^bb0(%j0: index):
        %j = "lt.dim"() {dim = "j"} : () -> index
        %a = memref.load %A[%i, %j] : memref<5x6xf32>
        %b = arith.mulf %a, %two : f32
        memref.store %b, %B[%i, %j] : memref<5x6xf32>
      }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "i", size = 2 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 2 : i64, tail = 1 : i64} : () -> ()
  return
}

// -----

// ERR: lt-distribute-levels.mlir:[[# @LINE + 5]]:10: error: lt-distribute: a part of "for i in 2"'s body reads dim 'i' and has no level over it inside, as another part has: in a loop of its own the dim would count single elements instead of the inner levels' chunks
func.func @chunk_start(%A: memref<4x6xf32> {lt.name = "A"}, %B: memref<4x6xf32> {lt.name = "B"}, %C: memref<4xf32> {lt.name = "C"}) {
  "lt.loop"() ({
  ^bb0(%io: index):
    %i0 = "lt.dim"() {dim = "i"} : () -> index
    %c = memref.load %A[%i0, %i0] : memref<4x6xf32>
    %c2 = arith.mulf %c, %c : f32
    memref.store %c2, %C[%i0] : memref<4xf32>
    "lt.loop"() ({
    ^bb0(%ii: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      "lt.loop"() ({
      ^bb0(%j1: index):
        %j = "lt.dim"() {dim = "j"} : () -> index
        %a = memref.load %A[%i, %j] : memref<4x6xf32>
        %s = arith.addf %a, %a : f32
        memref.store %s, %B[%i, %j] : memref<4x6xf32>
      }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "i", size = 2 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}
