// Rows side by side (recipes.row_tile): a row reduction vectorized in blocks
// of W with the rows unrolled inside the block loop,
//
//   for i in 2 r 2 { for j in 5 { for i' in 4 [unroll] { for j' in 8 [vectorize 8] { S[i] += A[i, j] * x[j] }}}}
//
// keeps each row's sum in a vector accumulator across the blocks (its place
// S[i] is the same in every block: index arithmetic on the row loop's
// iteration and the unrolled row's constant) and reduces its lanes once a
// row, after the block loop -- not once a block.  The tail of the rows (10
// = 2 x 4 + 2) gets the same.
// RUN: lt-opt %s -p 'builtin.module(lt-split{loop=0 factor=4}, lt-split{loop=2 factor=8}, lt-swap{loop=1}, lt-unroll{loop=2}, lt-vectorize{loop=3 width=8}, lower-lt-to-scf, canonicalize)' | filecheck %s --check-prefix=ROWS
// ROWS-LABEL: func.func @rows
// ROWS:         scf.for
// ROWS:           scf.for
// ROWS-NOT:         vector.reduction
// ROWS:             vector.load %arg0
// ROWS-NOT:         vector.reduction
// ROWS:           {{^ +}$}}
// ROWS-COUNT-4:   vector.reduction <add>
// ROWS-NOT:       scf.for
// ROWS:         {{^ +}$}}
// ROWS:         scf.for
// ROWS-NOT:       vector.reduction
// ROWS:         {{^ +}$}}
// ROWS-COUNT-2: vector.reduction <add>
// ROWS-NOT:     scf.for
// ROWS:         return
//
// Refused (the row loop not unrolled): the place varies with the row loop's
// induction variable, so the accumulator is carried across no loop that
// runs more than once and each block reduces its lanes inside the loops.
// RUN: lt-opt %s -p 'builtin.module(lt-split{loop=0 factor=4}, lt-split{loop=2 factor=8}, lt-swap{loop=1}, lt-vectorize{loop=3 width=8}, lower-lt-to-scf, canonicalize)' | filecheck %s --check-prefix=LOOPED
// LOOPED-LABEL: func.func @rows
// LOOPED:         scf.for
// LOOPED-NEXT:      arith.muli
// LOOPED-NEXT:      scf.for
// LOOPED:             scf.for
// LOOPED:               vector.reduction <add>
// LOOPED:             {{^ +}$}}
//
// Every schedule computes the same sums as the plain nest.
// RUN: lt-opt %s --run --repeat 1 | filecheck %s --check-prefix=SUM
// RUN: lt-opt %s --run --repeat 1 -p 'builtin.module(lt-split{loop=0 factor=4}, lt-split{loop=2 factor=8}, lt-swap{loop=1}, lt-unroll{loop=2}, lt-vectorize{loop=3 width=8})' | filecheck %s --check-prefix=SUM
// RUN: lt-opt %s --run --repeat 1 -p 'builtin.module(lt-split{loop=0 factor=4}, lt-split{loop=2 factor=8}, lt-swap{loop=1}, lt-vectorize{loop=3 width=8})' | filecheck %s --check-prefix=SUM
// SUM: arg2 f32[10] checksum -47.7415
func.func @rows(%A: memref<10x40xf32> {lt.name = "A"}, %x: memref<40xf32> {lt.name = "x"}, %S: memref<10xf32> {lt.name = "S"}) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %a = memref.load %A[%i, %j] : memref<10x40xf32>
      %b = memref.load %x[%j] : memref<40xf32>
      %p = arith.mulf %a, %b : f32
      "lt.reduce"(%p, %S, %i) {kind = "add"} : (f32, memref<10xf32>, index) -> ()
    }) {dim = "j", size = 40 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 10 : i64, tail = 0 : i64} : () -> ()
  return
}
