// Every PTX the compiler emits must assemble: ptxas (nvidia-cuda-nvcc wheel,
// a test dependency) on a softmax, whose exp comes from libdevice, under
// lt-gpu-auto (rows to threads, scratch buffers in device memory).
// REQUIRES: ptxas
// RUN: lt-opt %s -p 'builtin.module(lt-gpu-auto)' --emit=ptx -o %t.ptx
// RUN: %ptxas -arch=sm_90 %t.ptx -o %t.cubin
// RUN: lt-opt %s -p 'builtin.module(lt-gpu-auto)' --emit=ptx --gpu-arch=sm_80 -o %t80.ptx
// RUN: %ptxas -arch=sm_80 %t80.ptx -o %t80.cubin
// RUN: filecheck %s --input-file=%t.ptx
// CHECK: .visible .entry softmax_kernel(
// CHECK: ex2.approx
// CHECK-NOT: .extern
// CHECK-NOT: __nv_expf

func.func @softmax(%X: memref<4x33xf32> {lt.name = "X"}, %Y: memref<4x33xf32> {lt.name = "Y"}) {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %MX = "lt.alloc"() {dims = ["m"]} : () -> memref<4xf32>
  %SUM = "lt.alloc"() {dims = ["m"]} : () -> memref<4xf32>
  "lt.loop"() ({
  ^bb0(%i3: index):
    %m = "lt.dim"() {dim = "m"} : () -> index
    memref.store %ninf, %MX[%m] : memref<4xf32>
    memref.store %zero, %SUM[%m] : memref<4xf32>
    "lt.loop"() ({
    ^bb0(%i0: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %x = memref.load %X[%m, %n] : memref<4x33xf32>
      "lt.reduce"(%x, %MX, %m) {kind = "max"} : (f32, memref<4xf32>, index) -> ()
    }) {dim = "n", size = 33 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%i1: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %x = memref.load %X[%m, %n] : memref<4x33xf32>
      %mx = memref.load %MX[%m] : memref<4xf32>
      %d = arith.subf %x, %mx : f32
      %e = math.exp %d : f32
      "lt.reduce"(%e, %SUM, %m) {kind = "add"} : (f32, memref<4xf32>, index) -> ()
    }) {dim = "n", size = 33 : i64, tail = 0 : i64} : () -> ()
    "lt.loop"() ({
    ^bb0(%i2: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      %x = memref.load %X[%m, %n] : memref<4x33xf32>
      %mx = memref.load %MX[%m] : memref<4xf32>
      %d = arith.subf %x, %mx : f32
      %e = math.exp %d : f32
      %s = memref.load %SUM[%m] : memref<4xf32>
      %y = arith.divf %e, %s : f32
      memref.store %y, %Y[%m, %n] : memref<4x33xf32>
    }) {dim = "n", size = 33 : i64, tail = 0 : i64} : () -> ()
  }) {dim = "m", size = 4 : i64, tail = 0 : i64} : () -> ()
  return
}

