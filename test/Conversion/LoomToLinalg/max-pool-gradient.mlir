// RUN: loom-opt %s --loom-convert-to-linalg="scatter-threads=65536" | FileCheck %s
// RUN: loom-opt %s --loom-convert-to-linalg | FileCheck %s --check-prefix=SCATTER

// A max pool's gradient (the scatter-add MaxPoolOp::buildGradients builds
// at loom.max_pool_indices), for the CUDA pipelines: gathered per input
// element, one generic over the input's shape with no operand but its
// output. Each of the 9 taps, in descending order (taps (2, 2), (2, 1),
// ...: the windows in ascending order, the scatter's), finds the window
// that would take this element there (h + 1 - kh divisible by 2 and inside
// the 4 x 4 windows), reads its index and gradient, and adds the gradient
// where the index is this element.
// CHECK-LABEL: func.func @max_pool_grad
// CHECK: %[[G:.*]] = linalg.generic {indexing_maps = [#{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%{{.*}} : tensor<2x3x8x8xf32>)
// CHECK-COUNT-9: tensor.extract %{{.*}}[%{{.*}}] : tensor<96xi64>
// CHECK: linalg.yield
// CHECK: tensor.collapse_shape %[[G]] {{.*}} into tensor<384xf32>
// CHECK-NOT: scf.for
// The CPU keeps the scatter: one serial pass over the 96 window gradients.
// SCATTER-LABEL: func.func @max_pool_grad
// SCATTER: scf.for
// SCATTER-NOT: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x3x8x8xf32>)
func.func @max_pool_grad(%x: tensor<2x3x8x8xf32>, %dy: tensor<2x3x4x4xf32>) -> tensor<384xf32> {
  %i = loom.max_pool_indices %x kernel = [3, 3] strides = [2, 2] padding = [1, 1, 1, 1] dilations = [1, 1]
      : (tensor<2x3x8x8xf32>) -> tensor<2x3x4x4xi64>
  %fi = loom.reshape %i : (tensor<2x3x4x4xi64>) -> tensor<96xi64>
  %fdy = loom.reshape %dy : (tensor<2x3x4x4xf32>) -> tensor<96xf32>
  %dx = loom.scatter_add %fdy[%fi] axis = 0 : (tensor<96xf32>, tensor<96xi64>) -> tensor<384xf32>
  return %dx : tensor<384xf32>
}
