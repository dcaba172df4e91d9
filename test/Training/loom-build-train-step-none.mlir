// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-build-train-step="optimizer=none" | FileCheck %s

// optimizer=none: the function already is the step (loom.torch's traced
// PyTorch backward and SGD update): no gradient, no optimizer state; the
// step returns the loss, the counter, and the parameters' new values.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[W:[a-z0-9]+]]: tensor<3xf32> {loom.param = @w}
// CHECK-SAME: -> (tensor<f32> {loom.name = "loss"}, tensor<i64> {loom.param = @optimizer.step}, tensor<3xf32> {loom.param = @w})
// CHECK-NOT: exp_avg
// CHECK: %[[NEW:.*]] = loom.sub %[[W]]
// CHECK: return %{{.*}}, %{{.*}}, %[[NEW]]
loom.parameter @w : tensor<3xf32> = dense<1.0> : tensor<3xf32>
func.func @traced(%x: tensor<3xf32> {loom.name = "x"}, %w: tensor<3xf32> {loom.param = @w})
    -> (tensor<f32> {loom.name = "loss"}, tensor<3xf32> {loom.param = @w}) {
  %h = loom.mul %x, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %l = loom.reduce_sum %h dims = [0] : (tensor<3xf32>) -> tensor<f32>
  %lr = loom.constant dense<0.1> : tensor<f32>
  %g = loom.mul %x, %lr : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %next = loom.sub %w, %g : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %l, %next : tensor<f32>, tensor<3xf32>
}

// -----

// A trainable parameter has no one to update it.
loom.parameter @v : tensor<3xf32> = dense<1.0> : tensor<3xf32> trainable
// expected-error @+1 {{loom-build-train-step: optimizer=none builds no gradient, but @v is trainable}}
func.func @trainable(%v: tensor<3xf32> {loom.param = @v}) -> tensor<f32> {
  %l = loom.reduce_sum %v dims = [0] : (tensor<3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
