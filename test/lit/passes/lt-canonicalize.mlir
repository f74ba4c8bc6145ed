// lt-canonicalize: remove size-1 levels (their lt.dim reads 0), merge a level
// with its only child level of the same dim, then fold index arithmetic and
// duplicate lt.dim ops (upstream canonicalize, cse).  It never refuses: what
// cannot be simplified stays as it is.
//
// Every chunk below goes through lt-canonicalize; each prints its loop tree
// (TREE) and IR (IR).
// RUN: lt-opt %s --split-input-file -p 'builtin.module(lt-canonicalize)' --emit=loop-tree | filecheck %s --check-prefix=TREE --match-full-lines --strict-whitespace
// RUN: lt-opt %s --split-input-file -p 'builtin.module(lt-canonicalize)' | filecheck %s --check-prefix=IR
//
// Canonicalizing never changes the result: same checksums before and after.
// RUN: sed -n '/^func.func @tiled(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=SUM
// RUN: sed -n '/^func.func @tiled(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-canonicalize)' | filecheck %s --check-prefix=SUM
// SUM: arg1 f32[1, 32] checksum -4.86339
// RUN: sed -n '/^func.func @tail(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=TAILSUM
// RUN: sed -n '/^func.func @tail(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-canonicalize)' | filecheck %s --check-prefix=TAILSUM
// TAILSUM: arg1 f32[35] checksum -4.26711
//
// lt-split then lt-canonicalize is the identity on the loop tree, tail included.
// RUN: sed -n '/^func.func @tail(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-canonicalize, lt-split{loop=0 factor=8}, lt-canonicalize)' --emit=loop-tree | filecheck %s --check-prefix=ROUND --match-full-lines --strict-whitespace
//      ROUND:for m in 35 : L0
// ROUND-NEXT: %0 <- read A[m]
// ROUND-NEXT: B[m] <- %0
//  ROUND-NOT:{{.}}

// The size-1 level over r disappears (r reads 0) and `for m in 4` over
// `for m' in 8` becomes `for m in 32`.
//      TREE:for m in 32 : L0
// TREE-NEXT: %0 <- read A[0, m]
// TREE-NEXT: B[0, m] <- %0
// TREE-NEXT:// -----
// IR-LABEL: func.func @tiled
// IR-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// IR-NEXT:    "lt.loop"() ({
// IR-NEXT:    ^bb0(%{{.*}}: index):
// IR-NEXT:      %[[M:.*]] = "lt.dim"() {dim = "m"} : () -> index
// IR-NEXT:      %[[A:.*]] = memref.load %{{.*}}[%[[C0]], %[[M]]] : memref<1x32xf32>
// IR-NEXT:      memref.store %[[A]], %{{.*}}[%[[C0]], %[[M]]] : memref<1x32xf32>
// IR-NEXT:    }) {dim = "m", size = 32 : i64, tail = 0 : i64} : () -> ()
// IR-NEXT:    return
func.func @tiled(%A: memref<1x32xf32> {lt.name = "A"}, %B: memref<1x32xf32> {lt.name = "B"}) {
  "lt.loop"() ({
  ^bb0(%r0: index):
    %r = "lt.dim"() {dim = "r"} : () -> index
    "lt.loop"() ({
    ^bb0(%m1: index):
      "lt.loop"() ({
      ^bb0(%m0: index):
        %m = "lt.dim"() {dim = "m"} : () -> index
        %a = memref.load %A[%r, %m] : memref<1x32xf32>
        memref.store %a, %B[%r, %m] : memref<1x32xf32>
      }) {dim = "m", size = 8 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "m", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 1 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// The tail case: `4 r 3` over `8` merges into `35`; a size-1 level with a
// tail is not a unit level, but `1 r 3` over `8` over `4` still merges
// level by level into `35`.
// TREE-NEXT:@tail:
// TREE-NEXT:for m in 35 : L0
// TREE-NEXT: %0 <- read A[m]
// TREE-NEXT: B[m] <- %0
// TREE-NEXT:@tail2:
// TREE-NEXT:for m in 35 : L1
// TREE-NEXT: %0 <- read B[m]
// TREE-NEXT: C[m] <- %0
// TREE-NEXT:// -----
func.func @tail(%A: memref<35xf32> {lt.name = "A"}, %B: memref<35xf32> {lt.name = "B"}) {
  "lt.loop"() ({
  ^bb0(%m1: index):
    "lt.loop"() ({
    ^bb0(%m0: index):
      %m = "lt.dim"() {dim = "m"} : () -> index
      %a = memref.load %A[%m] : memref<35xf32>
      memref.store %a, %B[%m] : memref<35xf32>
    }) {dim = "m", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 4 : i64, tail = 3 : i64} : () -> ()
  return
}
func.func @tail2(%B: memref<35xf32> {lt.name = "B"}, %C: memref<35xf32> {lt.name = "C"}) {
  "lt.loop"() ({
  ^bb0(%m2: index):
    "lt.loop"() ({
    ^bb0(%m1: index):
      "lt.loop"() ({
      ^bb0(%m0: index):
        %m = "lt.dim"() {dim = "m"} : () -> index
        %b = memref.load %B[%m] : memref<35xf32>
        memref.store %b, %C[%m] : memref<35xf32>
      }) {dim = "m", size = 4 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "m", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 1 : i64, tail = 3 : i64} : () -> ()
  return
}

// -----

// Duplicate lt.dim ops and `+ 0` fold away.
// TREE-NEXT:for i in 16 : L0
// TREE-NEXT: %0 <- read A[i]
// TREE-NEXT: B[i] <- %0
// TREE-NEXT:// -----
// IR-LABEL: func.func @fold
// IR-NEXT:    "lt.loop"() ({
// IR-NEXT:    ^bb0(%{{.*}}: index):
// IR-NEXT:      %[[I:.*]] = "lt.dim"() {dim = "i"} : () -> index
// IR-NEXT:      %[[A:.*]] = memref.load %{{.*}}[%[[I]]] : memref<16xf32>
// IR-NEXT:      memref.store %[[A]], %{{.*}}[%[[I]]] : memref<16xf32>
// IR-NEXT:    }) {dim = "i", size = 16 : i64, tail = 0 : i64} : () -> ()
func.func @fold(%A: memref<16xf32> {lt.name = "A"}, %B: memref<16xf32> {lt.name = "B"}) {
  %zero = arith.constant 0 : index
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %j = "lt.dim"() {dim = "i"} : () -> index
    %k = arith.addi %j, %zero : index
    %a = memref.load %A[%i] : memref<16xf32>
    memref.store %a, %B[%k] : memref<16xf32>
  }) {dim = "i", size = 16 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// A loop of one iteration vanishes entirely.
// TREE-NEXT:%0 <- read A[0]
// TREE-NEXT:B[0] <- %0
// TREE-NEXT:// -----
func.func @scalar(%A: memref<1xf32> {lt.name = "A"}, %B: memref<1xf32> {lt.name = "B"}) {
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    %a = memref.load %A[%i] : memref<1xf32>
    memref.store %a, %B[%i] : memref<1xf32>
  }) {dim = "i", size = 1 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// What cannot be simplified stays: an annotated size-1 level and annotated
// pairs, a child level with a tail (`2 r 1`, over a level its annotation
// keeps), a used iteration number, and a parent holding statements besides
// its child.
// TREE-NEXT:@annotated:
// TREE-NEXT:for r in 1 : L0 [parallel]
// TREE-NEXT: for m in 4 : L1
// TREE-NEXT:  for m' in 8 : L2 [unroll 2]
// TREE-NEXT:   %0 <- read A[r, m]
// TREE-NEXT:   B[r, m] <- %0
// TREE-NEXT:@child_tail:
// TREE-NEXT:for m in 3 : L3
// TREE-NEXT: for m' in 2 r 1 : L4
// TREE-NEXT:  for m'' in 4 : L5 [unroll 4]
// TREE-NEXT:   %0 <- read A[m]
// TREE-NEXT:   B[m] <- %0
// TREE-NEXT:@numbered:
// TREE-NEXT:for m in 4 : L6
// TREE-NEXT: for m' in 8 : L7
// TREE-NEXT:  %0 <- read A[m]
// TREE-NEXT:  N[L6.iteration] <- %0
// TREE-NEXT:@busy_parent:
// TREE-NEXT:for m in 4 : L8
// TREE-NEXT: F[m] <- 0.0
// TREE-NEXT: for m' in 8 : L9
// TREE-NEXT:  %0 <- read A[m]
// TREE-NEXT:  B[m] <- %0
//  TREE-NOT:{{.}}
func.func @annotated(%A: memref<1x32xf32> {lt.name = "A"}, %B: memref<1x32xf32> {lt.name = "B"}) {
  "lt.loop"() ({
  ^bb0(%r0: index):
    %r = "lt.dim"() {dim = "r"} : () -> index
    "lt.loop"() ({
    ^bb0(%m1: index):
      "lt.loop"() ({
      ^bb0(%m0: index):
        %m = "lt.dim"() {dim = "m"} : () -> index
        %a = memref.load %A[%r, %m] : memref<1x32xf32>
        memref.store %a, %B[%r, %m] : memref<1x32xf32>
      }) {dim = "m", size = 8 : i64, tail = 0 : i64, lt.unroll = 2} : () -> ()
    }) {dim = "m", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "r", size = 1 : i64, tail = 0 : i64, lt.parallel} : () -> ()
  return
}
func.func @child_tail(%A: memref<27xf32> {lt.name = "A"}, %B: memref<27xf32> {lt.name = "B"}) {
  "lt.loop"() ({
  ^bb0(%m2: index):
    "lt.loop"() ({
    ^bb0(%m1: index):
      "lt.loop"() ({
      ^bb0(%m0: index):
        %m = "lt.dim"() {dim = "m"} : () -> index
        %a = memref.load %A[%m] : memref<27xf32>
        memref.store %a, %B[%m] : memref<27xf32>
      }) {dim = "m", size = 4 : i64, tail = 0 : i64, lt.unroll = 4} : () -> ()
    }) {dim = "m", size = 2 : i64, tail = 1 : i64} : () -> ()
  }) {dim = "m", size = 3 : i64, tail = 0 : i64} : () -> ()
  return
}
func.func @numbered(%A: memref<32xf32> {lt.name = "A"}, %N: memref<4xf32> {lt.name = "N"}) {
  "lt.loop"() ({
  ^bb0(%m1: index):
    "lt.loop"() ({
    ^bb0(%m0: index):
      %m = "lt.dim"() {dim = "m"} : () -> index
      %a = memref.load %A[%m] : memref<32xf32>
      memref.store %a, %N[%m1] : memref<4xf32>
    }) {dim = "m", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}
func.func @busy_parent(%A: memref<32xf32> {lt.name = "A"}, %B: memref<32xf32> {lt.name = "B"}, %F: memref<32xf32> {lt.name = "F"}) {
  %zero = arith.constant 0.0 : f32
  "lt.loop"() ({
  ^bb0(%m1: index):
    %first = "lt.dim"() {dim = "m"} : () -> index
    memref.store %zero, %F[%first] : memref<32xf32>
    "lt.loop"() ({
    ^bb0(%m0: index):
      %m = "lt.dim"() {dim = "m"} : () -> index
      %a = memref.load %A[%m] : memref<32xf32>
      memref.store %a, %B[%m] : memref<32xf32>
    }) {dim = "m", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}
