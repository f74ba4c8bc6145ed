// lt-opt --import=linalg: a linalg-on-tensors module (torch-mlir's output) becomes lt
// loop nests with the default schedule; weights held as dense constants become arguments.
// The default schedule follows the vector register of --mcpu (this host's without it):
// RUN: lt-opt %s --import=linalg --emit=loop-tree --mcpu=znver4 | filecheck %s
// RUN: lt-opt %s --import=linalg --emit=loop-tree --mcpu=znver2 | filecheck %s --check-prefix=AVX2
// RUN: lt-opt %s --import=linalg --run | filecheck %s --check-prefix=TIMED
// A contraction keeps its own nest, in loop_tool's order (the output's last dim innermost);
// the transposed constant weight is transposed at import (w.T), its bias and ReLU fused into one nest.
// (Vector annotations follow the host's width, which a loop of 8 may not take: optional.)
// CHECK:      %0 <- alloc f32[i, j] (32 elements)
// CHECK-NEXT: for i in 4 : L0 [parallel]
// CHECK-NEXT:  for j in 8 : L1{{( \[vectorize [0-9]+\])?}}
// CHECK-NEXT:   %0[i, j] <- 0.0
// CHECK-NEXT:  for k in 16 : L2
// CHECK-NEXT:   for j in 8 : L3{{( \[vectorize [0-9]+\])?}}
// CHECK-NEXT:    %1 <- read input0[i, k]
// CHECK-NEXT:    %2 <- read const0.T[k, j]
// CHECK-NEXT:    %3 <- mul(%1, %2)
// CHECK-NEXT:    %0[i, j] += %3
// CHECK-NEXT: for i in 4 : L4 [parallel]
// CHECK-NEXT:  for j in 8 : L5{{( \[vectorize [0-9]+\])?}}
// CHECK-NEXT:   %4 <- read %0[i, j]
// CHECK-NEXT:   %5 <- read input1[j]
// CHECK-NEXT:   %6 <- add(%4, %5)
// CHECK-NEXT:   %7 <- max(%6, 0.0)
// CHECK-NEXT:   output0[i, j] <- %7
// On AVX2 (8 lanes) the contraction is register-tiled: 4 rows by one vector of 8.
// AVX2:      for i in 1 : L2 [parallel]
// AVX2-NEXT:  for k in 16 : L3
// AVX2-NEXT:   for i' in 4 : L4 [unroll full]
// AVX2-NEXT:    for j in 8 : L5 [unroll full, vectorize 8]
// TIMED: @main: {{.*}} ms (median of 20 runs after warm-up)
// TIMED-NEXT: arg3 f32[4, 8] checksum
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @main(%x: tensor<4x16xf32>, %bias: tensor<8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<0.5> : tensor<8x16xf32>
  %w1 = arith.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0],
                              [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0],
                              [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0],
                              [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0],
                              [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0],
                              [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0],
                              [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0],
                              [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0]]> : tensor<8x16xf32>
  %e = tensor.empty() : tensor<16x8xf32>
  %wt = linalg.transpose ins(%w1 : tensor<8x16xf32>) outs(%e : tensor<16x8xf32>) permutation = [1, 0]
  %o = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%o : tensor<4x8xf32>) -> tensor<4x8xf32>
  %mm = linalg.matmul ins(%x, %wt : tensor<4x16xf32>, tensor<16x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %bias : tensor<4x8xf32>, tensor<8xf32>) outs(%o : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.addf %a, %b : f32
    %m = arith.maximumf %s, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
