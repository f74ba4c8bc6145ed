// From gpu.launch to PTX.  lower-lt-to-nvvm = lower-lt-to-gpu, kernel
// outlining (gpu.launch_func on the host, one gpu.module per kernel), then
// convert-gpu-to-nvvm with bare-pointer kernel parameters (noalias, and
// 16-byte aligned: the runtime checks it, LLVM merges a thread's neighbouring
// accesses into vector loads).
// --emit=ptx runs the whole chain (LLVM IR through the MLIR C API, llvmlite's
// NVPTX backend at O3); --emit=launch-plan prints what the runtime replays.
// RUN: lt-opt %s --split-input-file -p 'builtin.module(lower-lt-to-nvvm)' | filecheck %s --check-prefix=NVVM
// RUN: sed -n '/^func.func @add(/,/^}/p' %s | lt-opt - --emit=ptx | filecheck %s --check-prefix=PTX
// RUN: sed -n '/^func.func @add(/,/^}/p' %s | lt-opt - --emit=launch-plan | filecheck %s --check-prefix=PLAN
// RUN: sed -n '/^func.func @total_sum(/,/^}/p' %s | lt-opt - --emit=ptx --gpu-arch=sm_80 | filecheck %s --check-prefix=SUM
// RUN: sed -n '/^func.func @add(/,/^}/p' %s | not lt-opt - --emit=ptx --gpu-arch=sm_42 2>&1 | filecheck %s --check-prefix=ARCH
// RUN: sed -n '/^func.func @add(/,/^}/p' %s | not lt-opt - --emit=llvm 2>&1 | filecheck %s --check-prefix=CPU
//
// NVVM-LABEL: gpu.launch_func @add_kernel::@add_kernel blocks in (%{{.*}}) threads in
// NVVM:       gpu.module @add_kernel {
// NVVM-NEXT:    llvm.func @add_kernel(%{{.*}}: !llvm.ptr {llvm.align = 16 : i64, llvm.noalias}, %{{.*}}: !llvm.ptr {llvm.align = 16 : i64, llvm.noalias}, %{{.*}}: !llvm.ptr {llvm.align = 16 : i64, llvm.noalias}) attributes {{{.*}}nvvm.kernel, nvvm.maxntid = array<i32: 256, 1, 1>}
// NVVM:         nvvm.read.ptx.sreg.ctaid.x
// NVVM:         nvvm.read.ptx.sreg.tid.x
// NVVM:         llvm.icmp "ult"
// NVVM-LABEL: gpu.launch_func @total_sum_kernel::@total_sum_kernel blocks in
// NVVM-NEXT:  gpu.launch_func @total_sum_kernel_0::@total_sum_kernel blocks in
// NVVM:       gpu.module @total_sum_kernel_0 {
// NVVM:         llvm.alloca
// NVVM-COUNT-5: nvvm.shfl.sync bfly
// NVVM:         nvvm.read.ptx.sreg.laneid
// NVVM:         llvm.atomicrmw fadd
//
// PTX:      .version 8.0
// PTX-NEXT: .target sm_90
// PTX:      .visible .entry add_kernel(
// PTX:      .maxntid 256, 1, 1
// PTX:        mov.u32 %[[B:r[0-9]+]], %ctaid.x;
// PTX:        mov.u32 %[[T:r[0-9]+]], %tid.x;
// PTX:        setp.eq.b32 %{{p[0-9]+}}, %[[B]], 3;
// PTX:        ld.global.nc.b32
// PTX:        setp.ne.b32 %{{p[0-9]+}}, %[[B]], 3;
// PTX-NEXT:   setp.gt.u32 %{{p[0-9]+}}, %[[T]], 231;
// PTX:        ld.global.nc.b32 %{{r[0-9]+}}, [%{{rd[0-9]+}}+3072];
// PTX:        st.global.b32 [%{{rd[0-9]+}}+3072]
//
// PLAN:      "entry": "add",
// PLAN:      {"kernel": "add_kernel", "grid": [4, 1, 1], "block": [256, 1, 1], "shared_bytes": 0, "params": [{"kind": "arg", "index": 0}, {"kind": "arg", "index": 1}, {"kind": "arg", "index": 2}]}]}
//
// SUM:      .target sm_80
// SUM:      .visible .entry total_sum_kernel(
// SUM:      .visible .entry total_sum_kernel_0(
// SUM-COUNT-5: shfl.sync.bfly.b32
// SUM:        mov.u32 %{{r[0-9]+}}, %laneid;
// SUM:        atom.global.add.f32
//
// ARCH: error: unknown GPU architecture 'sm_42' (known: sm_75, sm_80, sm_86, sm_89, sm_90, sm_90a, sm_100, sm_120)
// CPU: error: lower-lt-to-scf does not lower the 'lt.gpu' annotation (GPU-mapped loops compile for target cuda: lower-lt-to-gpu, lt-opt --emit=ptx)

func.func @add(%A: memref<1000xf32> {lt.name = "A"}, %B: memref<1000xf32> {lt.name = "B"}, %C: memref<1000xf32> {lt.name = "C"}) {
  "lt.loop"() ({
  ^bb0(%i1: index):
    "lt.loop"() ({
    ^bb0(%i0: index):
      %i = "lt.dim"() {dim = "i"} : () -> index
      %a = memref.load %A[%i] : memref<1000xf32>
      %b = memref.load %B[%i] : memref<1000xf32>
      %c = arith.addf %a, %b : f32
      memref.store %c, %C[%i] : memref<1000xf32>
    }) {dim = "i", size = 256 : i64, tail = 0 : i64, lt.gpu = "thread"} : () -> ()
  }) {dim = "i", size = 3 : i64, tail = 232 : i64, lt.gpu = "block"} : () -> ()
  return
}

// -----
func.func @total_sum(%A: memref<64x512xf32> {lt.name = "A"}, %S: memref<f32> {lt.name = "S"}) {
  %init = arith.constant 0.0 : f32
  memref.store %init, %S[] : memref<f32>
  "lt.loop"() ({
  ^bb0(%i2: index):
    "lt.loop"() ({
    ^bb0(%i1: index):
      %n = "lt.dim"() {dim = "n"} : () -> index
      "lt.loop"() ({
      ^bb0(%i0: index):
        %m = "lt.dim"() {dim = "m"} : () -> index
        %a = memref.load %A[%m, %n] : memref<64x512xf32>
        "lt.reduce"(%a, %S) {kind = "add"} : (f32, memref<f32>) -> ()
      }) {dim = "m", size = 64 : i64, tail = 0 : i64} : () -> ()
    }) {dim = "n", size = 256 : i64, tail = 0 : i64, lt.gpu = "thread"} : () -> ()
  }) {dim = "n", size = 2 : i64, tail = 0 : i64, lt.gpu = "block"} : () -> ()
  return
}
