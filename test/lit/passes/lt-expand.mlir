// lt-expand{loop=L}: each scratch buffer allocated in L's body gets an
// axis over L's dim (L's rows) and is allocated before L (array
// expansion): no value of L's body crosses from one part to another any
// more, so lt-distribute can take L apart (it refuses before: the buffer is
// a value both parts use), and lt-shrink-buffers sizes it again.
// RUN: sed -n '/^func.func @rows(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-expand{loop=0})' --emit=loop-tree 2>/dev/null | filecheck %s --check-prefix=TREE --match-full-lines --strict-whitespace
// RUN: sed -n '/^func.func @rows(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-expand{loop=0}, lt-distribute{loop=0})' --emit=loop-tree 2>/dev/null | filecheck %s --check-prefix=DIST --match-full-lines --strict-whitespace
// RUN: sed -n '/^func.func @rows(/,/^}/p' %s | not lt-opt - -p 'builtin.module(lt-distribute{loop=0})' 2>&1 | filecheck %s --check-prefix=NODIST
// NODIST: error: lt-distribute: a value computed in one part of the body is used in another
// The tail case: L0 split 2 r 1 over 2, the buffer expanded over L1 "i'"
// holds L1's 2 rows (indexed from where L1 starts: i - i), allocated in
// L0's body.
// RUN: sed -n '/^func.func @rows(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-split{loop=0 factor=2}, lt-expand{loop=1})' --emit=loop-tree 2>/dev/null | filecheck %s --check-prefix=TAIL --match-full-lines --strict-whitespace
// Same checksums.
// RUN: sed -n '/^func.func @rows(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=SUM
// RUN: sed -n '/^func.func @rows(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-split{loop=0 factor=2}, lt-expand{loop=1}, lt-distribute{loop=1})' | filecheck %s --check-prefix=SUM
// SUM: arg1 f32[5, 6] checksum 40.1723
// Refused: no buffer in L1's body; a buffer already over the dim; a vectorized L.
// RUN: sed -n '/^func.func @rows(/,/^}/p' %s | not lt-opt - -p 'builtin.module(lt-expand{loop=1})' 2>&1 | filecheck %s --check-prefix=ERR1
// ERR1: error: lt-expand: L1 "for j in 6" allocates no scratch buffer in its body
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-expand{loop=0})' 2>&1 | filecheck %s --check-prefix=ERR
// ERR: error: lt-expand: a buffer allocated in L0 "for i in 5" is already over dim 'i'
// ERR: error: lt-expand: L0 "for i in 5" is annotated vectorize: its iterations share one body, with no row of a buffer of their own
// ERR: error: lt-expand: L0 "for i in 2 r 1" holds a level of its own dim 'i' inside: lt.dim 'i' is one row at its body and another in that level (expand the inner level)
//      TREE:%0 <- alloc f32[i, j] (30 elements)
// TREE-NEXT:for i in 5 : L0
// TREE-NEXT: for j in 6 : L1
// TREE-NEXT:  %1 <- read A[i, j]
// TREE-NEXT:  %2 <- mul(%1, %1)
// TREE-NEXT:  %0[i, j] <- %2
// TREE-NEXT: for j in 6 : L2
// TREE-NEXT:  %3 <- read %0[i, j]
// TREE-NEXT:  %4 <- add(%3, %3)
// TREE-NEXT:  B[i, j] <- %4
//      DIST:%0 <- alloc f32[i, j] (30 elements)
// DIST-NEXT:for i in 5 : L0
// DIST-NEXT: for j in 6 : L1
// DIST-NEXT:  %1 <- read A[i, j]
// DIST-NEXT:  %2 <- mul(%1, %1)
// DIST-NEXT:  %0[i, j] <- %2
// DIST-NEXT:for i in 5 : L2
// DIST-NEXT: for j in 6 : L3
// DIST-NEXT:  %3 <- read %0[i, j]
// DIST-NEXT:  %4 <- add(%3, %3)
// DIST-NEXT:  B[i, j] <- %4
//      TAIL:for i in 2 r 1 : L0
// TAIL-NEXT: %0 <- alloc f32[i, j] (12 elements)
// TAIL-NEXT: for i' in 2 : L1
// TAIL-NEXT:  for j in 6 : L2
// TAIL-NEXT:   %1 <- read A[i, j]
// TAIL-NEXT:   %2 <- mul(%1, %1)
// TAIL-NEXT:   %0[i - i, j] <- %2
// TAIL-NEXT:  for j in 6 : L3
// TAIL-NEXT:   %3 <- read %0[i - i, j]
// TAIL-NEXT:   %4 <- add(%3, %3)
// TAIL-NEXT:   B[i, j] <- %4
//
// values=true: a value computed in one part of L's body (x = A[i, 0]^2) and
// used in another (the loop over j) is stored into a new buffer over L's
// dim and loaded where used; L then distributes.  The tail case: L0 split
// 2 r 1, the values of L1 "i'" expanded and L1 distributed.  Refused where
// no value crosses the parts.
// RUN: sed -n '/^func.func @values(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-expand{loop=0 values=true}, lt-distribute{loop=0})' --emit=loop-tree 2>/dev/null | filecheck %s --check-prefix=VAL --match-full-lines --strict-whitespace
// RUN: sed -n '/^func.func @values(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-split{loop=0 factor=2}, lt-expand{loop=1 values=true}, lt-distribute{loop=1})' --emit=loop-tree 2>/dev/null | filecheck %s --check-prefix=VALTAIL --match-full-lines --strict-whitespace
// RUN: sed -n '/^func.func @values(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=VALSUM
// RUN: sed -n '/^func.func @values(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-split{loop=0 factor=2}, lt-expand{loop=1 values=true}, lt-distribute{loop=1})' | filecheck %s --check-prefix=VALSUM
// VALSUM: arg1 f32[5, 6] checksum 45.0015
// RUN: sed -n '/^func.func @values(/,/^}/p' %s | not lt-opt - -p 'builtin.module(lt-expand{loop=1 values=true})' 2>&1 | filecheck %s --check-prefix=VALERR
// VALERR: lt-expand: no value crosses the parts of L1 "for j in 6" (nothing to expand)
//      VAL:%0 <- alloc f32[i] (5 elements)
// VAL-NEXT:for i in 5 : L0
// VAL-NEXT: %1 <- read A[i, 0]
// VAL-NEXT: %2 <- mul(%1, %1)
// VAL-NEXT: %0[i] <- %2
// VAL-NEXT:for i in 5 : L1
// VAL-NEXT: for j in 6 : L2
// VAL-NEXT:  %3 <- read A[i, j]
// VAL-NEXT:  %4 <- read %0[i]
// VAL-NEXT:  %5 <- add(%3, %4)
// VAL-NEXT:  B[i, j] <- %5
//      VALTAIL:for i in 2 r 1 : L0
// VALTAIL-NEXT: %0 <- alloc f32[i] (2 elements)
// VALTAIL-NEXT: for i' in 2 : L1
// VALTAIL-NEXT:  %1 <- read A[i, 0]
// VALTAIL-NEXT:  %2 <- mul(%1, %1)
// VALTAIL-NEXT:  %0[i - i] <- %2
// VALTAIL-NEXT: for i' in 2 : L2
// VALTAIL-NEXT:  for j in 6 : L3
// VALTAIL-NEXT:   %3 <- read A[i, j]
// VALTAIL-NEXT:   %4 <- read %0[i - i]
// VALTAIL-NEXT:   %5 <- add(%3, %4)
// VALTAIL-NEXT:   B[i, j] <- %5
func.func @rows(%A: memref<5x6xf32> {lt.name = "A"}, %B: memref<5x6xf32> {lt.name = "B"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %t = "lt.alloc"() {dims = ["j"]} : () -> memref<6xf32>
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %a = memref.load %A[%i, %j] : memref<5x6xf32>
      %a2 = arith.mulf %a, %a : f32
      memref.store %a2, %t[%j] : memref<6xf32>
    }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%j1: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %x = memref.load %t[%j] : memref<6xf32>
      %y = arith.addf %x, %x : f32
      memref.store %y, %B[%i, %j] : memref<5x6xf32>
    }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 5 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

func.func @already(%A: memref<5x6xf32> {lt.name = "A"}, %B: memref<5x6xf32> {lt.name = "B"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %t = "lt.alloc"() {dims = ["i", "j"]} : () -> memref<5x6xf32>
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %a = memref.load %A[%i, %j] : memref<5x6xf32>
      %a2 = arith.mulf %a, %a : f32
      memref.store %a2, %t[%i, %j] : memref<5x6xf32>
    }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%j1: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %x = memref.load %t[%i, %j] : memref<5x6xf32>
      %y = arith.addf %x, %x : f32
      memref.store %y, %B[%i, %j] : memref<5x6xf32>
    }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 5 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

func.func @vectorized(%A: memref<5x6xf32> {lt.name = "A"}, %B: memref<5x6xf32> {lt.name = "B"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %t = "lt.alloc"() {dims = ["j"]} : () -> memref<6xf32>
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %a = memref.load %A[%i, %j] : memref<5x6xf32>
      %a2 = arith.mulf %a, %a : f32
      memref.store %a2, %t[%j] : memref<6xf32>
    }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%j1: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %x = memref.load %t[%j] : memref<6xf32>
      %y = arith.addf %x, %x : f32
      memref.store %y, %B[%i, %j] : memref<5x6xf32>
    }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 5 : i64, tail = 0 : i64, lt.vectorize = 4 : i64} : () -> ()
  return
}

// -----

func.func @blk(%A: memref<5x6xf32> {lt.name = "A"}, %B: memref<5x6xf32> {lt.name = "B"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%io: index):
    %t = "lt.alloc"() {dims = ["j"]} : () -> memref<6xf32>
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      memref.store %zero, %t[%j] : memref<6xf32>
    }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%ii: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      "lt.loop"() ({
      ^bb0(%j1: index):
        %j = "lt.dim"() {dim = "j"} : () -> index
        %a = memref.load %A[%i, %j] : memref<5x6xf32>
        "lt.reduce"(%a, %t, %j) {kind = "add"} : (f32, memref<6xf32>, index) -> ()
        %x = memref.load %t[%j] : memref<6xf32>
        memref.store %x, %B[%i, %j] : memref<5x6xf32>
      }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "i", size = 2 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 2 : i64, tail = 1 : i64} : () -> ()
  return
}
// -----

func.func @values(%A: memref<5x6xf32> {lt.name = "A"}, %B: memref<5x6xf32> {lt.name = "B"}) {
  %c0 = arith.constant 0 : index
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %a0 = memref.load %A[%i, %c0] : memref<5x6xf32>
    %x = arith.mulf %a0, %a0 : f32
    "lt.loop"() ({
    ^bb0(%j0: index):
      %j = "lt.dim"() {dim = "j"} : () -> index
      %a = memref.load %A[%i, %j] : memref<5x6xf32>
      %y = arith.addf %a, %x : f32
      memref.store %y, %B[%i, %j] : memref<5x6xf32>
    }) {dim = "j", size = 6 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 5 : i64, tail = 0 : i64} : () -> ()
  return
}
