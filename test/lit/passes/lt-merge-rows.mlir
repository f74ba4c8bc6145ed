// lt-merge{loop=L} of two CSR row nests: each iteration i runs an scf.for
// over row i's stored positions, indptr[i] .. indptr[i + 1].  With indptr
// marked lt.monotone (its values never decrease: the kernel frontend's
// validated CSR), rows cover disjoint positions, so the positions the
// first loop writes (e[p]) and the second reads are private to the row:
// the dependence test (analysis/dependence.py, row_range) lets the loops
// merge, and run in parallel (lt-parallel).  Without lt.monotone, or with
// a range that is not one row's (indptr[i] .. indptr[i + 2]), the rows may
// overlap and the merge is refused.
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-merge{loop=1})' --emit=loop-tree -o %t.tree 2>&1 | filecheck %s --check-prefix=ERR
// RUN: filecheck %s --input-file=%t.tree --check-prefix=TREE --match-full-lines --strict-whitespace
// RUN: sed -n '/^func.func @rows_tail(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-merge{loop=2})' --emit=loop-tree | filecheck %s --check-prefix=TAIL --match-full-lines --strict-whitespace
// RUN: sed -n '/^func.func @rows(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-parallel{loop=0})' --emit=loop-tree | filecheck %s --check-prefix=PAR
// PAR: for i in 8 : L0 [parallel]
//
// The merged loop computes what the two did (lt-opt --run draws sorted
// values for an lt.monotone argument): same checksums.
// RUN: sed -n '/^func.func @rows(/,/^}/p' %s | lt-opt - --run --repeat 1 --seed 1 | filecheck %s --check-prefix=SUM
// RUN: sed -n '/^func.func @rows(/,/^}/p' %s | lt-opt - --run --repeat 1 --seed 1 -p 'builtin.module(lt-merge{loop=1})' | filecheck %s --check-prefix=SUM
// SUM:      arg2 f32[20] checksum 24.4751
// SUM-NEXT: arg3 f32[8] checksum 24.4751
// RUN: sed -n '/^func.func @rows_tail(/,/^}/p' %s | lt-opt - --run --repeat 1 --seed 1 | filecheck %s --check-prefix=TSUM
// RUN: sed -n '/^func.func @rows_tail(/,/^}/p' %s | lt-opt - --run --repeat 1 --seed 1 -p 'builtin.module(lt-merge{loop=2})' | filecheck %s --check-prefix=TSUM
// TSUM:      arg2 f32[20] checksum 26.8814
// TSUM-NEXT: arg3 f32[7] checksum 26.8814

// The normal case: exponentials of each row's values, then each row's sum.
//      TREE:for i in 8 : L0
// TREE-NEXT: %0 <- read indptr[i]
// TREE-NEXT: %1 <- read indptr[i + 1]
// TREE-NEXT: for v2 in minsi(maxsi(index_cast(%0), 0), 20) .. minsi(maxsi(index_cast(%1), 0), 20) (bounds known at run time)
// TREE-NEXT:  %3 <- read x[v2]
// TREE-NEXT:  %4 <- exp(%3)
// TREE-NEXT:  e[v2] <- %4
// TREE-NEXT:  yield()
// TREE-NEXT: s[i] <- 0.0
// TREE-NEXT: %5 <- read indptr[i]
// TREE-NEXT: %6 <- read indptr[i + 1]
// TREE-NEXT: for v7 in minsi(maxsi(index_cast(%5), 0), 20) .. minsi(maxsi(index_cast(%6), 0), 20) (bounds known at run time)
// TREE-NEXT:  %8 <- read e[v7]
// TREE-NEXT:  s[i] += %8
// TREE-NEXT:  yield()
func.func @rows(%indptr: memref<9xi32> {lt.monotone, lt.name = "indptr"}, %x: memref<20xf32> {lt.name = "x"}, %e: memref<20xf32> {lt.name = "e"}, %s: memref<8xf32> {lt.name = "s"}) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c20 = arith.constant 20 : index
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %lo32 = memref.load %indptr[%i] : memref<9xi32>
    %i_next = arith.addi %i, %c1 : index
    %hi32 = memref.load %indptr[%i_next] : memref<9xi32>
    %lo = arith.index_cast %lo32 : i32 to index
    %hi = arith.index_cast %hi32 : i32 to index
    %lo_0 = arith.maxsi %lo, %c0 : index
    %hi_0 = arith.maxsi %hi, %c0 : index
    %lo_c = arith.minsi %lo_0, %c20 : index
    %hi_c = arith.minsi %hi_0, %c20 : index
    scf.for %p = %lo_c to %hi_c step %c1 {
      %a = memref.load %x[%p] : memref<20xf32>
      %b = math.exp %a : f32
      memref.store %b, %e[%p] : memref<20xf32>
    }
  }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i1: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    memref.store %zero, %s[%i] : memref<8xf32>
    %lo32 = memref.load %indptr[%i] : memref<9xi32>
    %i_next = arith.addi %i, %c1 : index
    %hi32 = memref.load %indptr[%i_next] : memref<9xi32>
    %lo = arith.index_cast %lo32 : i32 to index
    %hi = arith.index_cast %hi32 : i32 to index
    %lo_0 = arith.maxsi %lo, %c0 : index
    %hi_0 = arith.maxsi %hi, %c0 : index
    %lo_c = arith.minsi %lo_0, %c20 : index
    %hi_c = arith.minsi %hi_0, %c20 : index
    scf.for %q = %lo_c to %hi_c step %c1 {
      %v = memref.load %e[%q] : memref<20xf32>
      "lt.reduce"(%v, %s, %i) {kind = "add"} : (f32, memref<8xf32>, index) -> ()
    }
  }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// The tail case: both row loops run 7 rows as 3 blocks of 2 and a tail of 1;
// lt-merge{loop=2} takes the second's blocks into the first's.
//      TAIL:for i in 3 r 1 : L0
// TAIL-NEXT: for i' in 2 : L1
// TAIL-NEXT:  %0 <- read indptr[i]
// TAIL-NEXT:  %1 <- read indptr[i + 1]
// TAIL-NEXT:  for v2 in minsi(maxsi(index_cast(%0), 0), 20) .. minsi(maxsi(index_cast(%1), 0), 20) (bounds known at run time)
// TAIL-NEXT:   %3 <- read x[v2]
// TAIL-NEXT:   %4 <- exp(%3)
// TAIL-NEXT:   e[v2] <- %4
// TAIL-NEXT:   yield()
// TAIL-NEXT: for i' in 2 : L2
// TAIL-NEXT:  s[i] <- 0.0
// TAIL-NEXT:  %5 <- read indptr[i]
// TAIL-NEXT:  %6 <- read indptr[i + 1]
// TAIL-NEXT:  for v7 in minsi(maxsi(index_cast(%5), 0), 20) .. minsi(maxsi(index_cast(%6), 0), 20) (bounds known at run time)
// TAIL-NEXT:   %8 <- read e[v7]
// TAIL-NEXT:   s[i] += %8
// TAIL-NEXT:   yield()
// TREE:// -----
func.func @rows_tail(%indptr: memref<8xi32> {lt.monotone, lt.name = "indptr"}, %x: memref<20xf32> {lt.name = "x"}, %e: memref<20xf32> {lt.name = "e"}, %s: memref<7xf32> {lt.name = "s"}) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c20 = arith.constant 20 : index
  "lt.loop"() ({
  ^bb0(%o: index):
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %lo32 = memref.load %indptr[%i] : memref<8xi32>
    %i_next = arith.addi %i, %c1 : index
    %hi32 = memref.load %indptr[%i_next] : memref<8xi32>
    %lo = arith.index_cast %lo32 : i32 to index
    %hi = arith.index_cast %hi32 : i32 to index
    %lo_0 = arith.maxsi %lo, %c0 : index
    %hi_0 = arith.maxsi %hi, %c0 : index
    %lo_c = arith.minsi %lo_0, %c20 : index
    %hi_c = arith.minsi %hi_0, %c20 : index
    scf.for %p = %lo_c to %hi_c step %c1 {
      %a = memref.load %x[%p] : memref<20xf32>
      %b = math.exp %a : f32
      memref.store %b, %e[%p] : memref<20xf32>
    }
  }) {dim = "i", size = 2 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 3 : i64, tail = 1 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%o: index):
  "lt.loop"() ({
  ^bb0(%i1: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    memref.store %zero, %s[%i] : memref<7xf32>
    %lo32 = memref.load %indptr[%i] : memref<8xi32>
    %i_next = arith.addi %i, %c1 : index
    %hi32 = memref.load %indptr[%i_next] : memref<8xi32>
    %lo = arith.index_cast %lo32 : i32 to index
    %hi = arith.index_cast %hi32 : i32 to index
    %lo_0 = arith.maxsi %lo, %c0 : index
    %hi_0 = arith.maxsi %hi, %c0 : index
    %lo_c = arith.minsi %lo_0, %c20 : index
    %hi_c = arith.minsi %hi_0, %c20 : index
    scf.for %q = %lo_c to %hi_c step %c1 {
      %v = memref.load %e[%q] : memref<20xf32>
      "lt.reduce"(%v, %s, %i) {kind = "add"} : (f32, memref<7xf32>, index) -> ()
    }
  }) {dim = "i", size = 2 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 3 : i64, tail = 1 : i64} : () -> ()
  return
}

// -----

// Refused: indptr is not marked lt.monotone, so row 0's range may reach into
// row 1's (the second loop could read e before the first wrote it).
// ERR: lt-merge-rows.mlir:[[# @LINE + 24]]:3: error: lt-merge: cannot fuse: argument 2 is written and accessed at elements that other iterations of dim 'i' also access (a position of an scf.for from X[i] to X[i + 1] is row i's own only where X is an argument marked lt.monotone that the loops do not write)
func.func @unmarked(%indptr: memref<9xi32> {lt.name = "indptr"}, %x: memref<20xf32> {lt.name = "x"}, %e: memref<20xf32> {lt.name = "e"}, %s: memref<8xf32> {lt.name = "s"}) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c20 = arith.constant 20 : index
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %lo32 = memref.load %indptr[%i] : memref<9xi32>
    %i_next = arith.addi %i, %c1 : index
    %hi32 = memref.load %indptr[%i_next] : memref<9xi32>
    %lo = arith.index_cast %lo32 : i32 to index
    %hi = arith.index_cast %hi32 : i32 to index
    %lo_0 = arith.maxsi %lo, %c0 : index
    %hi_0 = arith.maxsi %hi, %c0 : index
    %lo_c = arith.minsi %lo_0, %c20 : index
    %hi_c = arith.minsi %hi_0, %c20 : index
    scf.for %p = %lo_c to %hi_c step %c1 {
      %a = memref.load %x[%p] : memref<20xf32>
      %b = math.exp %a : f32
      memref.store %b, %e[%p] : memref<20xf32>
    }
  }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i1: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    memref.store %zero, %s[%i] : memref<8xf32>
    %lo32 = memref.load %indptr[%i] : memref<9xi32>
    %i_next = arith.addi %i, %c1 : index
    %hi32 = memref.load %indptr[%i_next] : memref<9xi32>
    %lo = arith.index_cast %lo32 : i32 to index
    %hi = arith.index_cast %hi32 : i32 to index
    %lo_0 = arith.maxsi %lo, %c0 : index
    %hi_0 = arith.maxsi %hi, %c0 : index
    %lo_c = arith.minsi %lo_0, %c20 : index
    %hi_c = arith.minsi %hi_0, %c20 : index
    scf.for %q = %lo_c to %hi_c step %c1 {
      %v = memref.load %e[%q] : memref<20xf32>
      "lt.reduce"(%v, %s, %i) {kind = "add"} : (f32, memref<8xf32>, index) -> ()
    }
  }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// Refused: each loop's range is indptr[i] .. indptr[i + 2], two rows', which
// the next iteration's range overlaps.
// ERR: lt-merge-rows.mlir:[[# @LINE + 25]]:3: error: lt-merge: cannot fuse: argument 2 is written and accessed at elements that other iterations of dim 'i' also access (a position of an scf.for from X[i] to X[i + 1] is row i's own only where X is an argument marked lt.monotone that the loops do not write)
func.func @skip(%indptr: memref<9xi32> {lt.monotone, lt.name = "indptr"}, %x: memref<20xf32> {lt.name = "x"}, %e: memref<20xf32> {lt.name = "e"}, %s: memref<8xf32> {lt.name = "s"}) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c20 = arith.constant 20 : index
  %c2 = arith.constant 2 : index
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %lo32 = memref.load %indptr[%i] : memref<9xi32>
    %i_next = arith.addi %i, %c2 : index
    %hi32 = memref.load %indptr[%i_next] : memref<9xi32>
    %lo = arith.index_cast %lo32 : i32 to index
    %hi = arith.index_cast %hi32 : i32 to index
    %lo_0 = arith.maxsi %lo, %c0 : index
    %hi_0 = arith.maxsi %hi, %c0 : index
    %lo_c = arith.minsi %lo_0, %c20 : index
    %hi_c = arith.minsi %hi_0, %c20 : index
    scf.for %p = %lo_c to %hi_c step %c1 {
      %a = memref.load %x[%p] : memref<20xf32>
      %b = math.exp %a : f32
      memref.store %b, %e[%p] : memref<20xf32>
    }
  }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
  "lt.loop"() ({
  ^bb0(%i1: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    memref.store %zero, %s[%i] : memref<8xf32>
    %lo32 = memref.load %indptr[%i] : memref<9xi32>
    %i_next = arith.addi %i, %c2 : index
    %hi32 = memref.load %indptr[%i_next] : memref<9xi32>
    %lo = arith.index_cast %lo32 : i32 to index
    %hi = arith.index_cast %hi32 : i32 to index
    %lo_0 = arith.maxsi %lo, %c0 : index
    %hi_0 = arith.maxsi %hi, %c0 : index
    %lo_c = arith.minsi %lo_0, %c20 : index
    %hi_c = arith.minsi %hi_0, %c20 : index
    scf.for %q = %lo_c to %hi_c step %c1 {
      %v = memref.load %e[%q] : memref<20xf32>
      "lt.reduce"(%v, %s, %i) {kind = "add"} : (f32, memref<8xf32>, index) -> ()
    }
  }) {dim = "i", size = 8 : i64, tail = 0 : i64} : () -> ()
  return
}
