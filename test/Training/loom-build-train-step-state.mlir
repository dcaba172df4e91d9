// RUN: loom-opt %s --loom-build-train-step="optimizer=sgd lr=0.1 micro-batches=2" | FileCheck %s

// State the forward pass updates (BatchNorm's running statistics, as
// loom.torch imports them): a forward result with loom.param = @running is
// the next value of that non-trainable parameter. The step returns it last;
// micro-batch 1 starts from what micro-batch 0 left.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[R:[a-z0-9]+]]: tensor<3xf32> {loom.param = @running}
// CHECK-SAME: tensor<i64> {loom.param = @optimizer.step}, tensor<3xf32> {loom.param = @running})
// CHECK: %[[R0:.*]] = loom.add %[[R]], %{{.*}} : tensor<3xf32>
// CHECK: %[[R1:.*]] = loom.add %[[R0]], %{{.*}} : tensor<3xf32>
// CHECK: return {{.*}}, %[[R1]] : {{.*}}
loom.parameter @w : tensor<3xf32> = dense<1.0> : tensor<3xf32> trainable
loom.parameter @running : tensor<3xf32> = dense<0.0> : tensor<3xf32>
func.func @f(%x: tensor<3xf32> {loom.name = "x"}, %w: tensor<3xf32> {loom.param = @w},
             %r: tensor<3xf32> {loom.param = @running})
    -> (tensor<f32> {loom.name = "loss"}, tensor<3xf32> {loom.param = @running}) {
  %h = loom.mul %x, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %l = loom.reduce_sum %h dims = [0] : (tensor<3xf32>) -> tensor<f32>
  %next = loom.add %r, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %l, %next : tensor<f32>, tensor<3xf32>
}
