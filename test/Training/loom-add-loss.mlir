// RUN: loom-opt %s --split-input-file --loom-add-loss | FileCheck %s
// RUN: loom-opt %s --split-input-file --loom-add-loss=loss=mse | FileCheck %s --check-prefix=MSE

// Classifier logits [N, C]: cross-entropy against new i64 labels [N].
// CHECK-LABEL: func.func @classifier
// CHECK-SAME: %{{.*}}: tensor<8xi64> {loom.index_bound = 10 : i64, loom.name = "labels"}) -> (tensor<f32> {loom.name = "loss"})
// CHECK: %[[L:.*]] = loom.cross_entropy %{{.*}}, %arg1 reduction = mean : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
// CHECK: return %[[L]] : tensor<f32>
// MSE-LABEL: func.func @classifier
// MSE-SAME: %{{.*}}: tensor<8x10xf32> {loom.name = "labels"}) -> (tensor<f32> {loom.name = "loss"})
// MSE: loom.mse_loss %{{.*}}, %arg1 reduction = mean : (tensor<8x10xf32>, tensor<8x10xf32>) -> tensor<f32>
func.func @classifier(%x: tensor<8x10xf32>) -> (tensor<8x10xf32> {loom.name = "y"}) {
  %y = loom.tanh %x : tensor<8x10xf32>
  return %y : tensor<8x10xf32>
}

// -----

// Language-model logits [B, T, V]: flattened to [B*T, V], labels [B, T].
// CHECK-LABEL: func.func @lm
// CHECK-SAME: %{{.*}}: tensor<2x5xi64> {loom.index_bound = 7 : i64, loom.name = "labels"})
// CHECK: %[[F:.*]] = loom.reshape %arg0 : (tensor<2x5x7xf32>) -> tensor<10x7xf32>
// CHECK: %[[T:.*]] = loom.reshape %arg1 : (tensor<2x5xi64>) -> tensor<10xi64>
// CHECK: loom.cross_entropy %[[F]], %[[T]] reduction = mean : (tensor<10x7xf32>, tensor<10xi64>) -> tensor<f32>
func.func @lm(%logits: tensor<2x5x7xf32>) -> tensor<2x5x7xf32> {
  return %logits : tensor<2x5x7xf32>
}
