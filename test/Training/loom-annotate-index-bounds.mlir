// loom-annotate-index-bounds: integer inputs used as gather indices or as
// class labels get the size of what they index; given bounds stay.
// RUN: loom-opt %s --split-input-file --loom-annotate-index-bounds | FileCheck %s

// Token ids index a 100-row table; labels index 10 classes.
// CHECK-LABEL: func.func @lm
// CHECK-SAME: %arg0: tensor<4xi64> {loom.index_bound = 100 : i64}
// CHECK-SAME: %arg2: tensor<4xi64> {loom.index_bound = 10 : i64}
func.func @lm(%ids: tensor<4xi64>, %table: tensor<100x10xf32>, %labels: tensor<4xi64>) -> tensor<f32> {
  %e = loom.gather %table[%ids] axis = 0 : (tensor<100x10xf32>, tensor<4xi64>) -> tensor<4x10xf32>
  %l = loom.cross_entropy %e, %labels reduction = mean : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A bound the model gives is kept; a float input gets none.
// CHECK-LABEL: func.func @kept
// CHECK-SAME: %arg0: tensor<4xi64> {loom.index_bound = 7 : i64}
// CHECK-SAME: %arg1: tensor<7x3xf32>)
func.func @kept(%ids: tensor<4xi64> {loom.index_bound = 7 : i64}, %table: tensor<7x3xf32>) -> tensor<4x3xf32> {
  %e = loom.gather %table[%ids] axis = 0 : (tensor<7x3xf32>, tensor<4xi64>) -> tensor<4x3xf32>
  return %e : tensor<4x3xf32>
}
