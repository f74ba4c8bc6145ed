// lt-online-softmax{loop=L}: the loop of a maximum (L) and the loops after it
// that sum exp(x - max) become one loop: each iteration takes the maximum so
// far, rescales the partial sums by exp(old - new) and adds its terms
// relative to the new maximum (the online softmax; with L split first, one
// rescale a tile: FlashAttention's loop).  Floats need reassociation allowed.
//
// Every chunk goes through lt-online-softmax{loop=1}: the first two print
// their loop tree (TREE), the others refuse with a located one-line error
// (ERR).
// RUN: not lt-opt %s --split-input-file -p 'builtin.module(lt-online-softmax{loop=1})' --emit=loop-tree -o %t.tree 2>&1 | filecheck %s --check-prefix=ERR
// RUN: filecheck %s --input-file=%t.tree --check-prefix=TREE --match-full-lines --strict-whitespace
// RUN: sed -n '/^func.func @softmax(/,/^}/p' %s | lt-opt - -p 'builtin.module(lt-online-softmax{loop=1})' | filecheck %s --check-prefix=IR
//
// Same checksums before and after (the sums round differently in the last
// bits; the printed digits agree).
// RUN: sed -n '/^func.func @softmax(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=SOFTSUM
// RUN: sed -n '/^func.func @softmax(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-online-softmax{loop=1})' | filecheck %s --check-prefix=SOFTSUM
// SOFTSUM: arg1 f32[3, 8] checksum 3
// RUN: sed -n '/^func.func @scores(/,/^}/p' %s | lt-opt - --run --repeat 1 | filecheck %s --check-prefix=SCORESUM
// RUN: sed -n '/^func.func @scores(/,/^}/p' %s | lt-opt - --run --repeat 1 -p 'builtin.module(lt-online-softmax{loop=1})' | filecheck %s --check-prefix=SCORESUM
// SCORESUM: arg2 f32[2, 3] checksum -1.1577

// Softmax's first two nests: the row maximum and the sum of exp(x - max)
// become one loop over n (the online normaliser): the maximum before each
// element (%2), the new one (%4), the sum rescaled by exp(%2 - %6), then
// the element's term.  The third nest reads the final maximum and sum as
// before.  After the loop, the sum is NaN where the maximum is -inf.
//      TREE:%0 <- alloc f32[m] (3 elements)
// TREE-NEXT:%1 <- alloc f32[m] (3 elements)
// TREE-NEXT:for m in 3 : L0
// TREE-NEXT: %0[m] <- -inf
// TREE-NEXT: %1[m] <- 0.0
// TREE-NEXT: for n in 8 : L1
// TREE-NEXT:  %2 <- read %0[m]
// TREE-NEXT:  %3 <- read X[m, n]
// TREE-NEXT:  %0[m] max= %3
// TREE-NEXT:  %4 <- read %0[m]
// TREE-NEXT:  %5 <- cmpf oeq(%4, -inf)
// TREE-NEXT:  %6 <- select(%5, 0.0, %4)
// TREE-NEXT:  %7 <- sub(%2, %6)
// TREE-NEXT:  %8 <- exp(%7)
// TREE-NEXT:  %9 <- read %1[m]
// TREE-NEXT:  %10 <- mul(%9, %8)
// TREE-NEXT:  %1[m] <- %10
// TREE-NEXT:  %11 <- read X[m, n]
// TREE-NEXT:  %12 <- sub(%11, %6)
// TREE-NEXT:  %13 <- exp(%12)
// TREE-NEXT:  %1[m] += %13
// TREE-NEXT: %14 <- read %1[m]
// TREE-NEXT: %15 <- read %0[m]
// TREE-NEXT: %16 <- cmpf oeq(%15, -inf)
// TREE-NEXT: %17 <- sub(%15, %15)
// TREE-NEXT: %18 <- select(%16, %17, %14)
// TREE-NEXT: %1[m] <- %18
// TREE-NEXT: for n in 8 : L2
// TREE-NEXT:  %19 <- read X[m, n]
// TREE-NEXT:  %20 <- read %0[m]
// TREE-NEXT:  %21 <- sub(%19, %20)
// TREE-NEXT:  %22 <- exp(%21)
// TREE-NEXT:  %23 <- read %1[m]
// TREE-NEXT:  %24 <- div(%22, %23)
// TREE-NEXT:  Y[m, n] <- %24
// TREE-NEXT:// -----
// The ops that see the maximum's -inf carry flags of their own (no nnan,
// ninf), whatever the function's mode.
// IR-LABEL: func.func @softmax
// IR:       arith.cmpf oeq, %{{.*}}, %{{.*}} fastmath<contract> : f32
// IR:       math.exp %{{.*}} fastmath<contract> : f32
func.func @softmax(%X: memref<3x8xf32> {lt.name = "X"}, %Y: memref<3x8xf32> {lt.name = "Y"}) attributes {lt.fastmath = "fast"} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %MX = "lt.alloc"() {dims = ["m"]} : () -> memref<3xf32>
  %SUM = "lt.alloc"() {dims = ["m"]} : () -> memref<3xf32>
  "lt.loop"() ({
  ^bb0(%i3: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    memref.store %ninf, %MX[%m] : memref<3xf32>
    memref.store %zero, %SUM[%m] : memref<3xf32>
    "lt.loop"() ({
    ^bb0(%i0: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %x = memref.load %X[%m, %n] : memref<3x8xf32>
      "lt.reduce"(%x, %MX, %m) {kind = "max"} : (f32, memref<3xf32>, index) -> ()
    }) {dim = "n", size = 8 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%i1: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %x = memref.load %X[%m, %n] : memref<3x8xf32>
      %mx = memref.load %MX[%m] : memref<3xf32>
      %d = arith.subf %x, %mx : f32
      %e = math.exp %d : f32
      "lt.reduce"(%e, %SUM, %m) {kind = "add"} : (f32, memref<3xf32>, index) -> ()
    }) {dim = "n", size = 8 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%i2: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %x = memref.load %X[%m, %n] : memref<3x8xf32>
      %mx = memref.load %MX[%m] : memref<3xf32>
      %d = arith.subf %x, %mx : f32
      %e = math.exp %d : f32
      %s = memref.load %SUM[%m] : memref<3xf32>
      %y = arith.divf %e, %s : f32
      memref.store %y, %Y[%m, %n] : memref<3x8xf32>
    }) {dim = "n", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 3 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// The tail case, attention from given scores: L1 covers j in 2 tiles of 3
// and a tail of 1, and so does the consumer.  One rescale a tile: the
// accumulator row (L4, cloned from its zero initialisation L1) and the sum.
//      TREE:%0 <- alloc f32[i] (2 elements)
// TREE-NEXT:%1 <- alloc f32[i, e] (6 elements)
// TREE-NEXT:%2 <- alloc f32[i] (2 elements)
// TREE-NEXT:for i in 2 : L0
// TREE-NEXT: %0[i] <- -inf
// TREE-NEXT: for e in 3 : L1
// TREE-NEXT:  %1[i, e] <- 0.0
// TREE-NEXT: %2[i] <- 0.0
// TREE-NEXT: for j in 2 r 1 : L2
// TREE-NEXT:  %3 <- read %0[i]
// TREE-NEXT:  for j' in 3 : L3
// TREE-NEXT:   %4 <- read S[i, j]
// TREE-NEXT:   %0[i] max= %4
// TREE-NEXT:  %5 <- read %0[i]
// TREE-NEXT:  %6 <- cmpf oeq(%5, -inf)
// TREE-NEXT:  %7 <- select(%6, 0.0, %5)
// TREE-NEXT:  %8 <- sub(%3, %7)
// TREE-NEXT:  %9 <- exp(%8)
// TREE-NEXT:  for e in 3 : L4
// TREE-NEXT:   %10 <- read %1[i, e]
// TREE-NEXT:   %11 <- mul(%10, %9)
// TREE-NEXT:   %1[i, e] <- %11
// TREE-NEXT:  %12 <- read %2[i]
// TREE-NEXT:  %13 <- mul(%12, %9)
// TREE-NEXT:  %2[i] <- %13
// TREE-NEXT:  for j' in 3 : L5
// TREE-NEXT:   %14 <- read S[i, j]
// TREE-NEXT:   %15 <- sub(%14, %7)
// TREE-NEXT:   %16 <- exp(%15)
// TREE-NEXT:   for e in 3 : L6
// TREE-NEXT:    %17 <- read V[j, e]
// TREE-NEXT:    %18 <- mul(%16, %17)
// TREE-NEXT:    %1[i, e] += %18
// TREE-NEXT:   %2[i] += %16
// TREE-NEXT: for e in 3 : L7
// TREE-NEXT:  %19 <- read %1[i, e]
// TREE-NEXT:  %20 <- read %0[i]
// TREE-NEXT:  %21 <- cmpf oeq(%20, -inf)
// TREE-NEXT:  %22 <- sub(%20, %20)
// TREE-NEXT:  %23 <- select(%21, %22, %19)
// TREE-NEXT:  %1[i, e] <- %23
// TREE-NEXT: %24 <- read %2[i]
// TREE-NEXT: %25 <- read %0[i]
// TREE-NEXT: %26 <- cmpf oeq(%25, -inf)
// TREE-NEXT: %27 <- sub(%25, %25)
// TREE-NEXT: %28 <- select(%26, %27, %24)
// TREE-NEXT: %2[i] <- %28
// TREE-NEXT: for e in 3 : L8
// TREE-NEXT:  %29 <- read %1[i, e]
// TREE-NEXT:  %30 <- read %2[i]
// TREE-NEXT:  %31 <- div(%29, %30)
// TREE-NEXT:  O[i, e] <- %31
func.func @scores(%S: memref<2x7xf32> {lt.name = "S"}, %V: memref<7x3xf32> {lt.name = "V"}, %O: memref<2x3xf32> {lt.name = "O"}) attributes {lt.fastmath = "reassoc"} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %MX = "lt.alloc"() {dims = ["i"]} : () -> memref<2xf32>
  %ACC = "lt.alloc"() {dims = ["i", "e"]} : () -> memref<2x3xf32>
  %SUM = "lt.alloc"() {dims = ["i"]} : () -> memref<2xf32>
  "lt.loop"() ({
  ^bb0(%i0: index):
    %i = "lt.dim"() {dim = "i"} : () -> index
    memref.store %ninf, %MX[%i] : memref<2xf32>
    "lt.loop"() ({
    ^bb0(%i1: index):
      "lt.loop"() ({
      ^bb0(%i2: index):
        %j = "lt.dim"() {dim = "j"} : () -> index
        %s = memref.load %S[%i, %j] : memref<2x7xf32>
        "lt.reduce"(%s, %MX, %i) {kind = "max"} : (f32, memref<2xf32>, index) -> ()
      }) {dim = "j", size = 3 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "j", size = 2 : i64, tail = 1 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%i3: index):
      %e = "lt.dim"() {dim = "e"} : () -> index
      memref.store %zero, %ACC[%i, %e] : memref<2x3xf32>
    }) {dim = "e", size = 3 : i64, tail = 0 : i64} : () -> ()
    memref.store %zero, %SUM[%i] : memref<2xf32>
    "lt.loop"() ({
    ^bb0(%i4: index):
      "lt.loop"() ({
      ^bb0(%i5: index):
        %j = "lt.dim"() {dim = "j"} : () -> index
        %s = memref.load %S[%i, %j] : memref<2x7xf32>
        %mx = memref.load %MX[%i] : memref<2xf32>
        %d = arith.subf %s, %mx : f32
        %p = math.exp %d : f32
        "lt.loop"() ({
        ^bb0(%i6: index):
          %e = "lt.dim"() {dim = "e"} : () -> index
          %v = memref.load %V[%j, %e] : memref<7x3xf32>
          %pv = arith.mulf %p, %v : f32
          "lt.reduce"(%pv, %ACC, %i, %e) {kind = "add"} : (f32, memref<2x3xf32>, index, index) -> ()
        }) {dim = "e", size = 3 : i64, tail = 0 : i64} : () -> ()
        "lt.reduce"(%p, %SUM, %i) {kind = "add"} : (f32, memref<2xf32>, index) -> ()
      }) {dim = "j", size = 3 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "j", size = 2 : i64, tail = 1 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%i7: index):
      %e = "lt.dim"() {dim = "e"} : () -> index
      %a = memref.load %ACC[%i, %e] : memref<2x3xf32>
      %t = memref.load %SUM[%i] : memref<2xf32>
      %o = arith.divf %a, %t : f32
      memref.store %o, %O[%i, %e] : memref<2x3xf32>
    }) {dim = "e", size = 3 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "i", size = 2 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----

// The function's fastmath mode does not allow reassociation.
// ERR: lt-online-softmax.mlir:[[# @LINE + 12]]:5: error: lt-online-softmax: the online softmax computes exp(x - m) * exp(m - M) for exp(x - M) and sums in another order, and the function's fastmath mode 'default' does not allow reassociation: use --fastmath=fast, or lt.fastmath = "fast" (or a flag list with reassoc) on the function
func.func @default_mode(%X: memref<3x8xf32> {lt.name = "X"}, %Y: memref<3x8xf32> {lt.name = "Y"}) {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %MX = "lt.alloc"() {dims = ["m"]} : () -> memref<3xf32>
  %SUM = "lt.alloc"() {dims = ["m"]} : () -> memref<3xf32>
  "lt.loop"() ({
  ^bb0(%i3: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    memref.store %ninf, %MX[%m] : memref<3xf32>
    memref.store %zero, %SUM[%m] : memref<3xf32>
    "lt.loop"() ({
    ^bb0(%i0: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %x = memref.load %X[%m, %n] : memref<3x8xf32>
      "lt.reduce"(%x, %MX, %m) {kind = "max"} : (f32, memref<3xf32>, index) -> ()
    }) {dim = "n", size = 8 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%i1: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %x = memref.load %X[%m, %n] : memref<3x8xf32>
      %mx = memref.load %MX[%m] : memref<3xf32>
      %d = arith.subf %x, %mx : f32
      %e = math.exp %d : f32
      "lt.reduce"(%e, %SUM, %m) {kind = "add"} : (f32, memref<3xf32>, index) -> ()
    }) {dim = "n", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 3 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----


// ERR-NEXT: lt-online-softmax.mlir:[[# @LINE + 13]]:5: error: lt-online-softmax: L1 "for n in 8" holds no lt.reduce of kind max
// L1 sums: no maximum to run.
func.func @no_max(%X: memref<3x8xf32> {lt.name = "X"}, %Y: memref<3x8xf32> {lt.name = "Y"}) attributes {lt.fastmath = "fast"} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %MX = "lt.alloc"() {dims = ["m"]} : () -> memref<3xf32>
  %SUM = "lt.alloc"() {dims = ["m"]} : () -> memref<3xf32>
  "lt.loop"() ({
  ^bb0(%i3: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    memref.store %ninf, %MX[%m] : memref<3xf32>
    memref.store %zero, %SUM[%m] : memref<3xf32>
    "lt.loop"() ({
    ^bb0(%i0: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %x = memref.load %X[%m, %n] : memref<3x8xf32>
      "lt.reduce"(%x, %MX, %m) {kind = "add"} : (f32, memref<3xf32>, index) -> ()
    }) {dim = "n", size = 8 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%i1: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %x = memref.load %X[%m, %n] : memref<3x8xf32>
      %mx = memref.load %MX[%m] : memref<3xf32>
      %d = arith.subf %x, %mx : f32
      %e = math.exp %d : f32
      "lt.reduce"(%e, %SUM, %m) {kind = "add"} : (f32, memref<3xf32>, index) -> ()
    }) {dim = "n", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 3 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----


// ERR-NEXT: lt-online-softmax.mlir:[[# @LINE + 26]]:13: error: lt-online-softmax: exp(x - M) is used non-linearly by 'arith.addf' in L2 "for n in 8": a rescaled term would not rescale the result
// exp(x - M) + 1 does not scale with exp(x - M).
func.func @nonlinear(%X: memref<3x8xf32> {lt.name = "X"}, %Y: memref<3x8xf32> {lt.name = "Y"}) attributes {lt.fastmath = "fast"} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %MX = "lt.alloc"() {dims = ["m"]} : () -> memref<3xf32>
  %SUM = "lt.alloc"() {dims = ["m"]} : () -> memref<3xf32>
  "lt.loop"() ({
  ^bb0(%i3: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    memref.store %ninf, %MX[%m] : memref<3xf32>
    memref.store %zero, %SUM[%m] : memref<3xf32>
    "lt.loop"() ({
    ^bb0(%i0: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %x = memref.load %X[%m, %n] : memref<3x8xf32>
      "lt.reduce"(%x, %MX, %m) {kind = "max"} : (f32, memref<3xf32>, index) -> ()
    }) {dim = "n", size = 8 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%i1: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %x = memref.load %X[%m, %n] : memref<3x8xf32>
      %mx = memref.load %MX[%m] : memref<3xf32>
      %d = arith.subf %x, %mx : f32
      %e = math.exp %d : f32
      %e1 = arith.addf %e, %one : f32
      "lt.reduce"(%e1, %SUM, %m) {kind = "add"} : (f32, memref<3xf32>, index) -> ()
    }) {dim = "n", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 3 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----


// ERR-NEXT: lt-online-softmax.mlir:[[# @LINE + 26]]:7: error: lt-online-softmax: a term exp(x - M) is stored to a function argument in L2 "for n in 8": its partial values would stay there
// A term stored to an argument would stay relative to a partial maximum.
func.func @to_argument(%X: memref<3x8xf32> {lt.name = "X"}, %Y: memref<3x8xf32> {lt.name = "Y"}) attributes {lt.fastmath = "fast"} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %MX = "lt.alloc"() {dims = ["m"]} : () -> memref<3xf32>
  %SUM = "lt.alloc"() {dims = ["m"]} : () -> memref<3xf32>
  "lt.loop"() ({
  ^bb0(%i3: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    memref.store %ninf, %MX[%m] : memref<3xf32>
    memref.store %zero, %SUM[%m] : memref<3xf32>
    "lt.loop"() ({
    ^bb0(%i0: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %x = memref.load %X[%m, %n] : memref<3x8xf32>
      "lt.reduce"(%x, %MX, %m) {kind = "max"} : (f32, memref<3xf32>, index) -> ()
    }) {dim = "n", size = 8 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%i1: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %x = memref.load %X[%m, %n] : memref<3x8xf32>
      %mx = memref.load %MX[%m] : memref<3xf32>
      %d = arith.subf %x, %mx : f32
      %e = math.exp %d : f32
      memref.store %e, %Y[%m, %n] : memref<3x8xf32>
      "lt.reduce"(%e, %SUM, %m) {kind = "add"} : (f32, memref<3xf32>, index) -> ()
    }) {dim = "n", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 3 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----


// ERR-NEXT: lt-online-softmax.mlir:[[# @LINE + 26]]:7: error: lt-online-softmax: an accumulator of terms is not set to zero right before the group (the statement before it touches it otherwise): its starting value would be rescaled
// The sum starts at 1: its starting value would be rescaled too.
func.func @not_zero(%X: memref<3x8xf32> {lt.name = "X"}, %Y: memref<3x8xf32> {lt.name = "Y"}) attributes {lt.fastmath = "fast"} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %MX = "lt.alloc"() {dims = ["m"]} : () -> memref<3xf32>
  %SUM = "lt.alloc"() {dims = ["m"]} : () -> memref<3xf32>
  "lt.loop"() ({
  ^bb0(%i3: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    memref.store %ninf, %MX[%m] : memref<3xf32>
    memref.store %one, %SUM[%m] : memref<3xf32>
    "lt.loop"() ({
    ^bb0(%i0: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %x = memref.load %X[%m, %n] : memref<3x8xf32>
      "lt.reduce"(%x, %MX, %m) {kind = "max"} : (f32, memref<3xf32>, index) -> ()
    }) {dim = "n", size = 8 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%i1: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %x = memref.load %X[%m, %n] : memref<3x8xf32>
      %mx = memref.load %MX[%m] : memref<3xf32>
      %d = arith.subf %x, %mx : f32
      %e = math.exp %d : f32
      "lt.reduce"(%e, %SUM, %m) {kind = "add"} : (f32, memref<3xf32>, index) -> ()
    }) {dim = "n", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 3 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----


// ERR-NEXT: lt-online-softmax.mlir:[[# @LINE + 24]]:12: error: lt-online-softmax: x - M in L2 "for n in 8": x is not the value L1 "for n in 8" takes the maximum of (exp(x - M) <= 1 holds only for those)
// exp(w - M) with w not the value whose maximum M is: it may exceed 1 (overflow).
func.func @other_x(%X: memref<3x8xf32> {lt.name = "X"}, %Y: memref<3x8xf32> {lt.name = "Y"}, %W: memref<3x8xf32> {lt.name = "W"}) attributes {lt.fastmath = "fast"} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %MX = "lt.alloc"() {dims = ["m"]} : () -> memref<3xf32>
  %SUM = "lt.alloc"() {dims = ["m"]} : () -> memref<3xf32>
  "lt.loop"() ({
  ^bb0(%i3: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    memref.store %ninf, %MX[%m] : memref<3xf32>
    memref.store %zero, %SUM[%m] : memref<3xf32>
    "lt.loop"() ({
    ^bb0(%i0: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %x = memref.load %X[%m, %n] : memref<3x8xf32>
      "lt.reduce"(%x, %MX, %m) {kind = "max"} : (f32, memref<3xf32>, index) -> ()
    }) {dim = "n", size = 8 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%i1: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %w = memref.load %W[%m, %n] : memref<3x8xf32>
      %mx = memref.load %MX[%m] : memref<3xf32>
      %d = arith.subf %w, %mx : f32
      %e = math.exp %d : f32
      "lt.reduce"(%e, %SUM, %m) {kind = "add"} : (f32, memref<3xf32>, index) -> ()
    }) {dim = "n", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 3 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----


// ERR-NEXT: lt-online-softmax.mlir:[[# @LINE + 26]]:7: error: lt-online-softmax: a term exp(x - M) is reduced by 'max' in L2 "for n in 8": only sums rescale
// A maximum of the terms does not rescale.
func.func @max_of_terms(%X: memref<3x8xf32> {lt.name = "X"}, %Y: memref<3x8xf32> {lt.name = "Y"}) attributes {lt.fastmath = "fast"} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %MX = "lt.alloc"() {dims = ["m"]} : () -> memref<3xf32>
  %SUM = "lt.alloc"() {dims = ["m"]} : () -> memref<3xf32>
  "lt.loop"() ({
  ^bb0(%i3: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    memref.store %ninf, %MX[%m] : memref<3xf32>
    memref.store %zero, %SUM[%m] : memref<3xf32>
    "lt.loop"() ({
    ^bb0(%i0: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %x = memref.load %X[%m, %n] : memref<3x8xf32>
      "lt.reduce"(%x, %MX, %m) {kind = "max"} : (f32, memref<3xf32>, index) -> ()
    }) {dim = "n", size = 8 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%i1: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %x = memref.load %X[%m, %n] : memref<3x8xf32>
      %mx = memref.load %MX[%m] : memref<3xf32>
      %d = arith.subf %x, %mx : f32
      %e = math.exp %d : f32
      "lt.reduce"(%e, %SUM, %m) {kind = "max"} : (f32, memref<3xf32>, index) -> ()
    }) {dim = "n", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 3 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----


// ERR-NEXT: lt-online-softmax.mlir:[[# @LINE + 19]]:5: error: lt-online-softmax: L2 "for n in 4" reads the maximum but covers dim 'n' differently from L1 "for n in 8"
// The sum's loop covers n in other steps than the maximum's.
func.func @shape(%X: memref<3x8xf32> {lt.name = "X"}, %Y: memref<3x8xf32> {lt.name = "Y"}) attributes {lt.fastmath = "fast"} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %MX = "lt.alloc"() {dims = ["m"]} : () -> memref<3xf32>
  %SUM = "lt.alloc"() {dims = ["m"]} : () -> memref<3xf32>
  "lt.loop"() ({
  ^bb0(%i3: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    memref.store %ninf, %MX[%m] : memref<3xf32>
    memref.store %zero, %SUM[%m] : memref<3xf32>
    "lt.loop"() ({
    ^bb0(%i0: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %x = memref.load %X[%m, %n] : memref<3x8xf32>
      "lt.reduce"(%x, %MX, %m) {kind = "max"} : (f32, memref<3xf32>, index) -> ()
    }) {dim = "n", size = 8 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%i1: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      "lt.loop"() ({
      ^bb0(%i5: index):
        %n2 = "lt.dim"() {dim = "n"} : () -> index
        %x = memref.load %X[%m, %n2] : memref<3x8xf32>
        %mx = memref.load %MX[%m] : memref<3xf32>
        %d = arith.subf %x, %mx : f32
        %e = math.exp %d : f32
        "lt.reduce"(%e, %SUM, %m) {kind = "add"} : (f32, memref<3xf32>, index) -> ()
      }) {dim = "n", size = 2 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "n", size = 4 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 3 : i64, tail = 0 : i64} : () -> ()
  return
}

// -----


// ERR-NEXT: lt-online-softmax.mlir:[[# @LINE + 17]]:7: error: lt-online-softmax: no loop after L1 "for n in 8" in its block reads the maximum M
// Nothing after L1 reads the maximum.
func.func @no_reader(%X: memref<3x8xf32> {lt.name = "X"}, %Y: memref<3x8xf32> {lt.name = "Y"}) attributes {lt.fastmath = "fast"} {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %MX = "lt.alloc"() {dims = ["m"]} : () -> memref<3xf32>
  %SUM = "lt.alloc"() {dims = ["m"]} : () -> memref<3xf32>
  "lt.loop"() ({
  ^bb0(%i3: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    memref.store %ninf, %MX[%m] : memref<3xf32>
    memref.store %zero, %SUM[%m] : memref<3xf32>
    "lt.loop"() ({
    ^bb0(%i0: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %x = memref.load %X[%m, %n] : memref<3x8xf32>
      "lt.reduce"(%x, %MX, %m) {kind = "max"} : (f32, memref<3xf32>, index) -> ()
    }) {dim = "n", size = 8 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%i1: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %x = memref.load %X[%m, %n] : memref<3x8xf32>
      "lt.reduce"(%x, %SUM, %m) {kind = "add"} : (f32, memref<3xf32>, index) -> ()
    }) {dim = "n", size = 8 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 3 : i64, tail = 0 : i64} : () -> ()
  return
}
