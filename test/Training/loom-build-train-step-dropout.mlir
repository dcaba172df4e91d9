// RUN: loom-opt %s --loom-build-train-step="optimizer=sgd lr=0.1 micro-batches=2" | FileCheck %s

// Dropout draws a fresh mask every step and micro-batch: the model's seed is
// offset by step * K + m (K micro-batches), and the backward pass reuses the
// mask of the same op.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[STEP:[a-z0-9]+]]: tensor<i64> {loom.param = @optimizer.step})
// CHECK: %[[SEED0:.*]] = loom.constant dense<5> : tensor<i64>
// CHECK: %[[K0:.*]] = loom.mul %[[STEP]], %{{.*}} : tensor<i64>
// CHECK: %[[I0:.*]] = loom.add %[[K0]], %{{.*}} : tensor<i64>
// CHECK: %[[S0:.*]] = loom.add %[[SEED0]], %[[I0]] : tensor<i64>
// CHECK: %{{.*}}, %[[MASK0:.*]] = loom.dropout %{{.*}}, %[[S0]]
// CHECK: loom.select %[[MASK0]]
// CHECK: %[[SEED1:.*]] = loom.constant dense<5> : tensor<i64>
// CHECK: %[[S1:.*]] = loom.add %[[SEED1]], %{{.*}} : tensor<i64>
// CHECK: loom.dropout %{{.*}}, %[[S1]]
loom.parameter @w : tensor<8xf32> = dense<1.0> : tensor<8xf32> trainable
func.func @f(%x: tensor<8xf32> {loom.name = "x"}, %w: tensor<8xf32> {loom.param = @w}) -> tensor<f32> {
  %seed = loom.constant dense<5> : tensor<i64>
  %h = loom.mul %x, %w : tensor<8xf32>
  %d, %m = loom.dropout %h, %seed ratio = 5.000000e-01 : (tensor<8xf32>, tensor<i64>) -> (tensor<8xf32>, tensor<8xi1>)
  %l = loom.reduce_sum %d dims = [0] : (tensor<8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
