// RUN: loom-opt %s --split-input-file --loom-convert-to-linalg="conv-as-gemm=true" | FileCheck %s
// RUN: loom-opt %s --split-input-file --loom-convert-to-linalg | FileCheck %s --check-prefix=LOOPS

// conv-as-gemm (the CUDA pipelines): the padded input's windows copied out
// as patches [C, KH, KW, N, OH, OW] (window index o * stride + k *
// dilation), one [1, F, C*KH*KW] x [1, C*KH*KW, N*OH*OW] product, the
// result [F, N, OH, OW] transposed to [N, F, OH, OW].
// CHECK-DAG: #[[WIN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d3, d0, d4 * 2 + d1 * 3, d5 * 2 + d2 * 3)>
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>
// CHECK-LABEL: func.func @strided_dilated
// CHECK: %[[PAD:.*]] = tensor.pad %arg0 low[0, 0, 1, 2] high[0, 0, 1, 2]
// CHECK: %[[P:.*]] = linalg.generic {indexing_maps = [#[[WIN]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%[[PAD]] : tensor<2x3x11x13xf32>) outs(%{{.*}} : tensor<3x2x2x2x4x5xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: linalg.yield %[[IN]]
// CHECK: %[[W:.*]] = tensor.expand_shape %{{.*}} output_shape [1, 4, 12]
// CHECK: linalg.batch_matmul ins(%[[W]], %{{.*}} : tensor<1x4x12xf32>, tensor<1x12x40xf32>) outs(%{{.*}} : tensor<1x4x40xf32>)
// CHECK: linalg.transpose ins(%{{.*}} : tensor<4x2x4x5xf32>) outs(%{{.*}} : tensor<2x4x4x5xf32>) permutation = [1, 0, 2, 3]
// LOOPS-LABEL: func.func @strided_dilated
// LOOPS-NOT: linalg.batch_matmul
// LOOPS: "reduction", "reduction", "reduction"]
func.func @strided_dilated(%x: tensor<2x3x9x9xf32>, %w: tensor<4x3x2x2xf32>) -> tensor<2x4x4x5xf32> {
  %0 = loom.conv %x, %w strides = [2, 2] padding = [1, 2, 1, 2] dilations = [3, 3] groups = 1
      : (tensor<2x3x9x9xf32>, tensor<4x3x2x2xf32>) -> tensor<2x4x4x5xf32>
  return %0 : tensor<2x4x4x5xf32>
}

// -----

// bf16: bf16 patches and filter into an f32 product (tensor cores on
// cuBLAS), rounded to bf16 once.
// CHECK-LABEL: func.func @bf16
// CHECK: linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<1x4x27xbf16>, tensor<1x27x64xbf16>) outs(%{{.*}} : tensor<1x4x64xf32>)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @bf16(%x: tensor<1x3x8x8xbf16>, %w: tensor<4x3x3x3xbf16>) -> tensor<1x4x8x8xbf16> {
  %0 = loom.conv %x, %w strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1
      : (tensor<1x3x8x8xbf16>, tensor<4x3x3x3xbf16>) -> tensor<1x4x8x8xbf16>
  return %0 : tensor<1x4x8x8xbf16>
}

// -----

// Grouped convolutions stay one generic summing each window.
// CHECK-LABEL: func.func @grouped
// CHECK-NOT: linalg.batch_matmul
// CHECK: "reduction", "reduction", "reduction"]
func.func @grouped(%x: tensor<1x4x8x8xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32> {
  %0 = loom.conv %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 2
      : (tensor<1x4x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  return %0 : tensor<1x4x6x6xf32>
}
