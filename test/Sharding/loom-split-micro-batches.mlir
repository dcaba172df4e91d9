// The loss function as the template of one micro-batch: --micro-batches K
// splits the model's batch (the step's whole batch) into K micro-batches.
// RUN: loom-opt %s --split-input-file --loom-split-micro-batches=count=4 --verify-diagnostics | FileCheck %s

// A mean loss: every op gets a batch of 16 / 4; the mean over the
// micro-batch is rescaled as under data parallelism (x 1/4: its share of
// the whole batch's mean) and the share returned times 4, so that the
// step's average over the 4 micro-batches is the whole batch's loss. The
// labels' index bound stays, no mesh or sharding remains.
// CHECK-LABEL: func.func @mean
// CHECK-SAME: %[[X:.*]]: tensor<4x32xf32> {loom.name = "x"}
// CHECK-SAME: %[[L:.*]]: tensor<4xi64> {loom.index_bound = 16 : i64, loom.name = "labels"}
// CHECK-SAME: tensor<32x64xf32> {loom.param = @w1}
// CHECK: loom.dot_general {{.*}} -> tensor<4x64xf32>
// CHECK: %[[CE:.*]] = loom.cross_entropy {{.*}} reduction = mean : (tensor<4x16xf32>, tensor<4xi64>) -> tensor<f32>
// CHECK: %[[Q:.*]] = loom.constant dense<2.500000e-01> : tensor<f32>
// CHECK: %[[SHARE:.*]] = loom.mul %[[CE]], %[[Q]]
// CHECK: %[[K:.*]] = loom.constant dense<4.000000e+00> : tensor<f32>
// CHECK: %[[LOSS:.*]] = loom.mul %[[SHARE]], %[[K]]
// CHECK: return %[[LOSS]]
// CHECK-NOT: loom.mesh
// CHECK-NOT: loom.sharding
// CHECK-NOT: loom.partitioned
loom.parameter @w1 : tensor<32x64xf32> trainable
loom.parameter @w2 : tensor<64x16xf32> trainable
func.func @mean(%x: tensor<16x32xf32> {loom.name = "x"},
                %labels: tensor<16xi64> {loom.name = "labels", loom.index_bound = 16},
                %w1: tensor<32x64xf32> {loom.param = @w1},
                %w2: tensor<64x16xf32> {loom.param = @w2}) -> tensor<f32> {
  %h = loom.dot_general %x, %w1 contracting_dims = [1] x [0] : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
  %a = loom.relu %h : tensor<16x64xf32>
  %o = loom.dot_general %a, %w2 contracting_dims = [1] x [0] : (tensor<16x64xf32>, tensor<64x16xf32>) -> tensor<16x16xf32>
  %loss = loom.cross_entropy %o, %labels reduction = mean : (tensor<16x16xf32>, tensor<16xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A sum loss: the micro-batch's sum is its share; times 4, averaged over 4.
// A regularizer that depends only on the weights is added to the loss once
// per micro-batch and averaged: once. Reshapes of the batch follow it.
// CHECK-LABEL: func.func @sum_with_regularizer
// CHECK: loom.reshape {{.*}} -> tensor<2x2x8xf32>
// CHECK: %[[S:.*]] = loom.reduce_sum {{.*}} -> tensor<f32>
// CHECK: %[[K:.*]] = loom.constant dense<4.000000e+00> : tensor<f32>
// CHECK: %[[SCALED:.*]] = loom.mul %[[S]], %[[K]]
// CHECK: loom.add %[[SCALED]]
loom.parameter @w : tensor<8x8xf32> trainable
func.func @sum_with_regularizer(%x: tensor<8x2x8xf32> {loom.name = "x"},
                                %w: tensor<8x8xf32> {loom.param = @w}) -> tensor<f32> {
  %r = loom.reshape %x : (tensor<8x2x8xf32>) -> tensor<16x8xf32>
  %y = loom.dot_general %r, %w contracting_dims = [1] x [0] : (tensor<16x8xf32>, tensor<8x8xf32>) -> tensor<16x8xf32>
  %y3 = loom.reshape %y : (tensor<16x8xf32>) -> tensor<8x2x8xf32>
  %sq = loom.mul %y3, %y3 : (tensor<8x2x8xf32>, tensor<8x2x8xf32>) -> tensor<8x2x8xf32>
  %s = loom.reduce_sum %sq dims = [0, 1, 2] : (tensor<8x2x8xf32>) -> tensor<f32>
  %w2 = loom.mul %w, %w : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %reg = loom.reduce_sum %w2 dims = [0, 1] : (tensor<8x8xf32>) -> tensor<f32>
  %loss = loom.add %s, %reg : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Labels flattened with the sequence ([B S]) do not lead with the batch but
// are read split along their first dimension: the input itself is split
// (micro-batch m reads its rows [8 m, 8 m + 8)).
// CHECK-LABEL: func.func @flat_labels
// CHECK-SAME: tensor<2x4x16xf32> {loom.name = "x"}
// CHECK-SAME: tensor<8xi64> {loom.index_bound = 16 : i64, loom.name = "labels"}
// CHECK-NOT: loom.all_slice
// CHECK: loom.cross_entropy {{.*}} : (tensor<8x16xf32>, tensor<8xi64>) -> tensor<f32>
func.func @flat_labels(%x: tensor<8x4x16xf32> {loom.name = "x"},
                       %labels: tensor<32xi64> {loom.name = "labels", loom.index_bound = 16}) -> tensor<f32> {
  %flat = loom.reshape %x : (tensor<8x4x16xf32>) -> tensor<32x16xf32>
  %loss = loom.cross_entropy %flat, %labels reduction = mean : (tensor<32x16xf32>, tensor<32xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// BatchNorm in training normalizes by statistics of the whole batch: one
// micro-batch at a time cannot compute them.
loom.parameter @g : tensor<3xf32> trainable
loom.parameter @b : tensor<3xf32> trainable
func.func @batch_norm(%x: tensor<8x3x5x5xf32> {loom.name = "x"},
                      %g: tensor<3xf32> {loom.param = @g},
                      %b: tensor<3xf32> {loom.param = @b}) -> tensor<f32> {
  // expected-error @+2 {{--micro-batches 4: 'loom.batch_norm_training' needs values of the whole batch of 8}}
  // expected-note @+1 {{the collective split micro-batches cannot perform: %0 = loom.all_gather}}
  %y:3 = loom.batch_norm_training %x, %g, %b epsilon = 1.0e-5
      : (tensor<8x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<8x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>)
  %s = loom.reduce_sum %y#0 dims = [0, 1, 2, 3] : (tensor<8x3x5x5xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// Dropout draws its mask by position in the whole tensor: the
// partitioner's whole-batch dropout (all_gather, dropout, all_slice) runs
// on the micro-batch's rows, tagged with their number of elements (the step
// gives micro-batch m the whole tensor's mask from element m * 32 on).
// CHECK-LABEL: func.func @dropout
// CHECK-NOT: loom.all_gather
// CHECK: loom.dropout %{{.*}}, %{{.*}} ratio = 3.000000e-01 {loom.micro_batch_rows = 32 : i64} : (tensor<4x8xf32>, tensor<i64>) -> (tensor<4x8xf32>, tensor<4x8xi1>)
// CHECK-NOT: loom.all_slice
loom.parameter @wd : tensor<8x8xf32> trainable
func.func @dropout(%x: tensor<16x8xf32> {loom.name = "x"}, %w: tensor<8x8xf32> {loom.param = @wd}) -> tensor<f32> {
  %seed = loom.constant dense<7> : tensor<i64>
  %h = loom.dot_general %x, %w contracting_dims = [1] x [0] : (tensor<16x8xf32>, tensor<8x8xf32>) -> tensor<16x8xf32>
  %y, %m = loom.dropout %h, %seed ratio = 0.3 : (tensor<16x8xf32>, tensor<i64>) -> (tensor<16x8xf32>, tensor<16x8xi1>)
  %s = loom.reduce_mean %y dims = [0, 1] : (tensor<16x8xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A loss that is not linear in the per-sample sum (its square).
func.func @nonlinear(%x: tensor<8x4xf32> {loom.name = "x"}) -> tensor<f32> {
  %s = loom.reduce_sum %x dims = [0, 1] : (tensor<8x4xf32>) -> tensor<f32>
  // expected-error @+2 {{'loom.mul' needs values of the whole batch of 8}}
  // expected-note @+1 {{the collective split micro-batches cannot perform: %3 = loom.all_reduce}}
  %sq = loom.mul %s, %s : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %sq : tensor<f32>
}

// -----

// expected-error @+1 {{--micro-batches 4: the batch of 6 (input 'x') does not split into 4 equal micro-batches}}
func.func @indivisible(%x: tensor<6x4xf32> {loom.name = "x"}) -> tensor<f32> {
  %s = loom.reduce_sum %x dims = [0, 1] : (tensor<6x4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A data input without the batch (an attention mask given as data) is not
// split: the module names it, and every micro-batch reads its whole entry.
// CHECK: module attributes {loom.batch_split = 4 : i64, loom.batch_whole_inputs = ["mask"]}
// CHECK-LABEL: func.func @unbatched_input
// CHECK-SAME: tensor<2x4xf32> {loom.name = "x"}
// CHECK-SAME: tensor<4x4xf32> {loom.name = "mask"}
func.func @unbatched_input(%x: tensor<8x4xf32> {loom.name = "x"}, %mask: tensor<4x4xf32> {loom.name = "mask"}) -> tensor<f32> {
  %y = loom.dot_general %x, %mask contracting_dims = [1] x [0] : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %s = loom.reduce_sum %y dims = [0, 1] : (tensor<8x4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
