// What lt-opt --import=linalg refuses: one located line and exit code 1.
// RUN: not lt-opt %s --import=linalg 2>&1 | filecheck %s
// CHECK: {{.*}}import-linalg-errors.mlir:9:8: error: cannot import this reduction: its output must be combined once, by an add, mul, max or min of a value computed from the inputs
// CHECK-NOT: Traceback
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @main(%x: tensor<4x16xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  // a reduction by subtraction (not associative): lt.reduce has no such kind
  %r = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x16xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %out: f32):
    %s = arith.subf %out, %a : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
