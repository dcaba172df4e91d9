// RUN: loom-opt %s --split-input-file --loom-convert-to-linalg="conv-as-gemm=true" | FileCheck %s
// RUN: loom-opt %s --split-input-file --loom-convert-to-linalg | FileCheck %s --check-prefix=LOOPS

// conv-as-gemm (the CUDA pipelines): the input's windows copied out as
// patches [C, KH, KW, N, OH, OW] (window index o * stride + k * dilation -
// low padding), one [1, F, C*KH*KW] x [1, C*KH*KW, N*OH*OW] product, the
// result [F, N, OH, OW] transposed to [N, F, OH, OW]. The padding is read,
// not materialized (no tensor.pad): an index outside the input (compared
// unsigned, so a negative one is outside too) reads element 0 and yields 0.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4, d5)>
// CHECK-LABEL: func.func @strided_dilated
// CHECK-NOT: tensor.pad
// CHECK: %[[P:.*]] = linalg.generic {indexing_maps = [#[[ID]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel"]} outs(%{{.*}} : tensor<3x2x2x2x4x5xf32>)
// CHECK: %[[N:.*]] = linalg.index 3 : index
// CHECK: %[[C:.*]] = linalg.index 0 : index
// CHECK: %[[OH:.*]] = linalg.index 4 : index
// CHECK: %[[OHS:.*]] = arith.muli %[[OH]], %c2
// CHECK: %[[KH:.*]] = linalg.index 1 : index
// CHECK: %[[KHD:.*]] = arith.muli %[[KH]], %c3
// CHECK: %[[HP:.*]] = arith.addi %[[OHS]], %[[KHD]]
// CHECK: %[[H:.*]] = arith.subi %[[HP]], %c1
// CHECK: %[[HIN:.*]] = arith.cmpi ult, %[[H]], %c9
// CHECK: %[[HC:.*]] = arith.select %[[HIN]], %[[H]], %c0
// CHECK: %[[W:.*]] = arith.subi %{{.*}}, %c2
// CHECK: %[[WIN:.*]] = arith.cmpi ult, %[[W]], %c9
// CHECK: %[[IN:.*]] = arith.andi %[[HIN]], %[[WIN]]
// CHECK: %[[WC:.*]] = arith.select %[[WIN]], %[[W]], %c0
// CHECK: %[[X:.*]] = tensor.extract %arg0[%[[N]], %[[C]], %[[HC]], %[[WC]]] : tensor<2x3x9x9xf32>
// CHECK: %[[Y:.*]] = arith.select %[[IN]], %[[X]], %{{.*}} : f32
// CHECK: linalg.yield %[[Y]]
// CHECK: %[[F:.*]] = tensor.expand_shape %{{.*}} output_shape [1, 4, 12]
// CHECK: linalg.batch_matmul ins(%[[F]], %{{.*}} : tensor<1x4x12xf32>, tensor<1x12x40xf32>) outs(%{{.*}} : tensor<1x4x40xf32>)
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

// Without padding the window is the input's indexing map. A window wider
// than the output (a weight gradient: the 6x6 "kernel" is the output
// gradient, the output the 3x3 filter's) gets patches [N, OH, OW, C, KH,
// KW], KW innermost, read by the product as a transposed operand.
// CHECK-DAG: #[[WIN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d3, d0, d1 + d4, d2 + d5)>
// CHECK-DAG: #[[WINT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d3, d1 + d4, d2 + d5)>
// CHECK-DAG: #[[LHS:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[RHST:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-LABEL: func.func @unpadded
// CHECK: linalg.generic {indexing_maps = [#[[WIN]], #{{.*}}]{{.*}} ins(%arg0 : tensor<2x3x8x8xf32>) outs(%{{.*}} : tensor<3x3x3x2x6x6xf32>)
// CHECK-LABEL: func.func @wide_window
// CHECK: linalg.generic {indexing_maps = [#[[WINT]], #{{.*}}]{{.*}} ins(%arg0 : tensor<2x3x8x8xf32>) outs(%{{.*}} : tensor<2x3x3x3x6x6xf32>)
// CHECK: linalg.batch_matmul indexing_maps = [#[[LHS]], #[[RHST]], #{{.*}}] ins(%{{.*}}, %{{.*}} : tensor<1x4x108xf32>, tensor<1x18x108xf32>) outs(%{{.*}} : tensor<1x4x18xf32>)
func.func @unpadded(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32> {
  %0 = loom.conv %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>
  return %0 : tensor<2x4x6x6xf32>
}
func.func @wide_window(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x6x6xf32>) -> tensor<2x4x3x3xf32> {
  %0 = loom.conv %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<2x3x8x8xf32>, tensor<4x3x6x6xf32>) -> tensor<2x4x3x3xf32>
  return %0 : tensor<2x4x3x3xf32>
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
