// Lowering of loom ops to linalg/tensor/arith/math on tensors.
// RUN: loom-opt %s --split-input-file --loom-convert-to-linalg | FileCheck %s

// Broadcasting binary ops read size-1 and missing dimensions at index 0.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @add_broadcast
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<8xf32>) outs(%[[E]] : tensor<4x8xf32>)
// CHECK: arith.addf
func.func @add_broadcast(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = loom.add %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Unsigned integers become signless with unsigned arithmetic.
// CHECK-LABEL: func.func @unsigned(%arg0: tensor<4xi8>, %arg1: tensor<4xi8>) -> tensor<4xi8>
// CHECK: arith.divui
// CHECK: arith.maxui
func.func @unsigned(%a: tensor<4xui8>, %b: tensor<4xui8>) -> tensor<4xui8> {
  %0 = loom.div %a, %b : tensor<4xui8>
  %1 = loom.max %0, %b : tensor<4xui8>
  return %1 : tensor<4xui8>
}

// -----

// A matmul whose rhs is stored [N, K] uses a transposed indexing map, no copy.
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @matmul_transposed_rhs
// CHECK-NOT: linalg.transpose
// CHECK: %[[L:.*]] = tensor.expand_shape %arg0 {{\[\[}}0, 1], [2]] output_shape [1, 8, 16]
// CHECK: %[[R:.*]] = tensor.expand_shape %arg1 {{\[\[}}0, 1], [2]] output_shape [1, 32, 16]
// CHECK: %[[Z:.*]] = linalg.fill
// CHECK: linalg.batch_matmul indexing_maps = [#[[A]], #[[B]], #[[C]]] ins(%[[L]], %[[R]] : tensor<1x8x16xf32>, tensor<1x32x16xf32>) outs(%[[Z]] : tensor<1x8x32xf32>)
func.func @matmul_transposed_rhs(%x: tensor<8x16xf32>, %w: tensor<32x16xf32>) -> tensor<8x32xf32> {
  %0 = loom.dot_general %x, %w contracting_dims = [1] x [1] : (tensor<8x16xf32>, tensor<32x16xf32>) -> tensor<8x32xf32>
  return %0 : tensor<8x32xf32>
}

// -----

// 16-bit floats multiply-accumulate in f32 (PyTorch's CPU kernels and cuBLAS
// do the same) and round once: the product is a batch_matmul of the bf16
// operands into an f32 result (its body widens them, exactly; tensor cores
// on the GPU, sgemm on widened copies on the CPU), with no widened operand
// in between; a bf16 sum accumulates in f32 too.
// CHECK-LABEL: func.func @bf16_accumulates_in_f32
// CHECK-NOT: arith.extf
// CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x8x32xf32>)
// CHECK: %[[MM:.*]] = linalg.batch_matmul ins(%{{.*}}, %{{.*}} : tensor<1x8x16xbf16>, tensor<1x16x32xbf16>) outs(%[[Z]] : tensor<1x8x32xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[MM]] : tensor<1x8x32xf32>) outs(%{{.*}} : tensor<1x8x32xbf16>)
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: %[[S0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<8xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<8x32xbf16>) outs(%[[S0]] : tensor<8xf32>)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: arith.truncf %{{.*}} : f32 to bf16
func.func @bf16_accumulates_in_f32(%x: tensor<8x16xbf16>, %w: tensor<16x32xbf16>) -> tensor<8xbf16> {
  %0 = loom.dot_general %x, %w contracting_dims = [1] x [0] : (tensor<8x16xbf16>, tensor<16x32xbf16>) -> tensor<8x32xbf16>
  %1 = loom.reduce_sum %0 dims = [1] : (tensor<8x32xbf16>) -> tensor<8xbf16>
  return %1 : tensor<8xbf16>
}

// -----

// Batch dimensions that are not leading are moved there with a transpose.
// CHECK-LABEL: func.func @batch_not_leading
// CHECK: linalg.transpose ins(%arg0 : tensor<4x2x3xf32>) outs(%{{.*}} : tensor<2x4x3xf32>) permutation = [1, 0, 2]
// CHECK: linalg.batch_matmul
func.func @batch_not_leading(%a: tensor<4x2x3xf32>, %b: tensor<2x3x5xf32>) -> tensor<2x4x5xf32> {
  %0 = loom.dot_general %a, %b batching_dims = [1] x [0] contracting_dims = [2] x [1]
      : (tensor<4x2x3xf32>, tensor<2x3x5xf32>) -> tensor<2x4x5xf32>
  return %0 : tensor<2x4x5xf32>
}

// -----

// Reductions: identity fill, a reduction iterator, keepdims by expand_shape;
// float sums may be reassociated (vectorized).
// CHECK-LABEL: func.func @reduce_mean_keepdims
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<4xf32>)
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} outs(%[[INIT]]
// CHECK: arith.addf %{{.*}}, %{{.*}} fastmath<reassoc> : f32
// CHECK: %[[MEAN:.*]] = linalg.generic
// CHECK: arith.divf %{{.*}}, %{{.*}} : f32
// CHECK: tensor.expand_shape %[[MEAN]] {{\[\[}}0, 1]] output_shape [4, 1] : tensor<4xf32> into tensor<4x1xf32>
func.func @reduce_mean_keepdims(%x: tensor<4x8xf32>) -> tensor<4x1xf32> {
  %0 = loom.reduce_mean %x dims = [1] keepdims : (tensor<4x8xf32>) -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

// -----

// Max reductions start from -inf and propagate NaN.
// CHECK-LABEL: func.func @reduce_max
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: arith.maximumf
func.func @reduce_max(%x: tensor<4x8xf32>) -> tensor<8xf32> {
  %0 = loom.reduce_max %x dims = [0] : (tensor<4x8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// Convolution: padded input, a generic over (n, g, f, oh, ow, c, kh, kw).
// CHECK-LABEL: func.func @conv
// CHECK: tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @conv(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32> {
  %0 = loom.conv %x, %w strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  return %0 : tensor<1x4x8x8xf32>
}

// -----

// Average pooling without count_include_pad divides by a constant count of
// in-bounds positions.
// CHECK-LABEL: func.func @avg_pool_counts
// CHECK: arith.constant dense<{{\[\[}}4.000000e+00, 6.000000e+00, 4.000000e+00], [6.000000e+00, 9.000000e+00, 6.000000e+00], [4.000000e+00, 6.000000e+00, 4.000000e+00]]> : tensor<3x3xf32>
func.func @avg_pool_counts(%x: tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32> {
  %0 = loom.avg_pool %x kernel = [3, 3] strides = [1, 1] padding = [1, 1, 1, 1]
      : (tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32>
  return %0 : tensor<1x1x3x3xf32>
}

// -----

// Data movement lowers to tensor ops.
// CHECK-LABEL: func.func @shapes
// CHECK: tensor.collapse_shape %arg0 {{\[\[}}0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>
// CHECK: tensor.extract_slice %arg0[0, 1, 0] [2, 2, 2] [1, 1, 3]
// CHECK: tensor.pad %arg0 low[0, 1, 0] high[0, 0, 0]
// CHECK: tensor.insert_slice
// CHECK: linalg.transpose
func.func @shapes(%x: tensor<2x3x4xf32>) -> (tensor<6x4xf32>, tensor<2x2x2xf32>, tensor<2x4x4xf32>, tensor<4x3x4xf32>, tensor<4x2x3xf32>) {
  %0 = loom.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %1 = loom.slice %x [0:2, 1:3, 0:4:3] : (tensor<2x3x4xf32>) -> tensor<2x2x2xf32>
  %2 = loom.pad %x low = [0, 1, 0] high = [0, 0, 0] value = 0.0 : f32 : (tensor<2x3x4xf32>) -> tensor<2x4x4xf32>
  %3 = loom.concat %x, %x axis = 0 : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<4x3x4xf32>
  %4 = loom.transpose %x permutation = [2, 0, 1] : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  return %0, %1, %2, %3, %4 : tensor<6x4xf32>, tensor<2x2x2xf32>, tensor<2x4x4xf32>, tensor<4x3x4xf32>, tensor<4x2x3xf32>
}

// -----

// Gather wraps negative indices and clamps before reading the table.
// CHECK-LABEL: func.func @gather
// CHECK: linalg.generic
// CHECK: arith.index_cast
// CHECK: arith.cmpi slt
// CHECK: arith.maxsi
// CHECK: arith.minsi
// CHECK: tensor.extract %arg0
func.func @gather(%t: tensor<10x4xf32>, %i: tensor<3xi64>) -> tensor<3x4xf32> {
  %0 = loom.gather %t[%i] axis = 0 : (tensor<10x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// Scatter-add: zeros, then per line along the axis (the dimensions that are
// not indexed never collide: an scf.forall), a serial loop over the
// updates that adds each one at its (wrapped, clamped) index; repeated
// indices accumulate.
// CHECK-LABEL: func.func @scatter_add
// CHECK: linalg.fill
// CHECK: scf.forall (%[[J:.*]]) in (4) shared_outs(%[[ACC:.*]] = %{{.*}})
// CHECK: %[[LINE:.*]] = tensor.extract_slice %[[ACC]][0, %[[J]]] [10, 1] [1, 1] : tensor<10x4xf32> to tensor<10xf32>
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[LINE]])
// CHECK: tensor.extract %arg1
// CHECK: arith.index_cast
// CHECK: arith.minsi
// CHECK: tensor.extract %arg0
// CHECK: arith.addf
// CHECK: tensor.insert
// CHECK: scf.forall.in_parallel
// CHECK: tensor.parallel_insert_slice %{{.*}} into %[[ACC]][0, %[[J]]] [10, 1] [1, 1]
func.func @scatter_add(%u: tensor<3x4xf32>, %i: tensor<3xi64>) -> tensor<10x4xf32> {
  %0 = loom.scatter_add %u[%i] axis = 0 : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<10x4xf32>
  return %0 : tensor<10x4xf32>
}

// -----

// Indices over every update dimension: one serial loop nest.
// CHECK-LABEL: func.func @scatter_add_1d
// CHECK-NOT: scf.forall
// CHECK: scf.for
// CHECK: tensor.insert
func.func @scatter_add_1d(%u: tensor<3xf32>, %i: tensor<3xi64>) -> tensor<10xf32> {
  %0 = loom.scatter_add %u[%i] axis = 0 : (tensor<3xf32>, tensor<3xi64>) -> tensor<10xf32>
  return %0 : tensor<10xf32>
}

// -----

// Dropout: a counter-based hash of the global element index.
// CHECK-LABEL: func.func @dropout
// CHECK: tensor.extract %arg1[]
// CHECK: linalg.generic
// CHECK: linalg.index 0
// CHECK: linalg.index 1
// CHECK: arith.constant -7046029254386353131 : i64
// CHECK: arith.shrui
// CHECK: arith.cmpi uge
func.func @dropout(%x: tensor<4x8xf32>, %s: tensor<i64>) -> (tensor<4x8xf32>, tensor<4x8xi1>) {
  %0:2 = loom.dropout %x, %s ratio = 0.5 : (tensor<4x8xf32>, tensor<i64>) -> (tensor<4x8xf32>, tensor<4x8xi1>)
  return %0#0, %0#1 : tensor<4x8xf32>, tensor<4x8xi1>
}

// -----

// Cross-entropy: each row's maximum and sum of exp(x - max), the
// exponentials computed inside the sum (nothing of x's size is written),
// then per-sample picks of x - max - log(sum) at the labels with weights
// that are 0 for ignored labels; mean divides by the total weight.
// CHECK-LABEL: func.func @cross_entropy
// CHECK: %[[MAX:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<4x5xf32>)
// CHECK: arith.maximumf
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%arg0, %[[MAX]] : tensor<4x5xf32>, tensor<4xf32>)
// CHECK: arith.subf
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: linalg.generic {{.*}}ins(%arg1 : tensor<4xi64>)
// CHECK: arith.cmpi ne
// CHECK: tensor.extract %arg0
// CHECK: tensor.extract %[[MAX]]
// CHECK: tensor.extract %[[SUM]]
// CHECK: math.log
// CHECK: tensor.extract %arg2
// CHECK: arith.divf
func.func @cross_entropy(%x: tensor<4x5xf32>, %l: tensor<4xi64>, %w: tensor<5xf32>) -> tensor<f32> {
  %0 = loom.cross_entropy %x, %l weight = %w reduction = mean ignore_index = -1
      : (tensor<4x5xf32>, tensor<4xi64>, tensor<5xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Declarations stay; parameters are function arguments already.
// CHECK: loom.mesh @m ["dp"=2]
// CHECK: loom.parameter @w : tensor<4xf32> trainable
// CHECK-LABEL: func.func @constraint_is_identity
// CHECK-NEXT: return %arg0
loom.mesh @m ["dp"=2]
loom.parameter @w : tensor<4xf32> trainable
func.func @constraint_is_identity(%x: tensor<4xf32> {loom.param = @w}) -> tensor<4xf32> {
  %0 = loom.sharding_constraint %x <@m, [{"dp"}]> : tensor<4xf32>
  return %0 : tensor<4xf32>
}
