// A tensor with no elements (a dimension of size 0) is refused where it is
// used, with its location: lt loops run at least once.
// RUN: not lt-opt %s --import=linalg 2>&1 | filecheck %s
// CHECK: {{.*}}import-linalg-empty.mlir:10:11: error: result %{{.*}} has type tensor<0x4xf32>: a tensor with a dimension of size 0 (no elements) cannot be imported: every lt loop runs at least once
// CHECK-NOT: Traceback
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @main(%x: tensor<3x4xf32>) -> tensor<4xf32> {
  %zero = arith.constant 0.000000e+00 : f32
  %none = tensor.extract_slice %x[0, 0] [0, 4] [1, 1] : tensor<3x4xf32> to tensor<0x4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %r = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%none : tensor<0x4xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %out: f32):
    %s = arith.addf %out, %a : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
