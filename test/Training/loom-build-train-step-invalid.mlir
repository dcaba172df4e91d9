// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-build-train-step="optimizer=sgd lr=0.1 momentum=0.9"

// expected-error @+1 {{loom-build-train-step: optimizer state @w.momentum_buffer would clash with this symbol}}
loom.parameter @w.momentum_buffer : tensor<3xf32> trainable
loom.parameter @w : tensor<3xf32> trainable
func.func @clash(%w: tensor<3xf32> {loom.param = @w}) -> tensor<f32> {
  %l = loom.reduce_sum %w dims = [0] : (tensor<3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Buffers (non-trainable parameters) are not trained.
loom.parameter @stats : tensor<3xf32> = dense<1.0> : tensor<3xf32>
// expected-error @+1 {{loom-build-train-step: @buffers_only has no trainable parameters: nothing to train}}
func.func @buffers_only(%s: tensor<3xf32> {loom.param = @stats}) -> tensor<f32> {
  %l = loom.reduce_sum %s dims = [0] : (tensor<3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

loom.parameter @w : tensor<3xf32> trainable
// expected-error @+1 {{loom-build-train-step: the first result of @vector_loss is 'tensor<3xf32>', not a scalar float loss (run loom-add-loss first)}}
func.func @vector_loss(%w: tensor<3xf32> {loom.param = @w}) -> tensor<3xf32> {
  return %w : tensor<3xf32>
}

// -----

// Only non-trainable parameters may be updated by the forward pass.
loom.parameter @w : tensor<3xf32> trainable
// expected-error @+1 {{loom-build-train-step: result #1 updates trainable parameter @w; the optimizer owns trainable parameters}}
func.func @updates_weight(%w: tensor<3xf32> {loom.param = @w})
    -> (tensor<f32>, tensor<3xf32> {loom.param = @w}) {
  %l = loom.reduce_sum %w dims = [0] : (tensor<3xf32>) -> tensor<f32>
  return %l, %w : tensor<f32>, tensor<3xf32>
}

// -----

loom.parameter @w : tensor<3xf32> trainable
loom.parameter @s : tensor<3xf32> = dense<0.0> : tensor<3xf32>
// expected-error @+1 {{loom-build-train-step: result #1 updates @s, which is not a parameter argument of @not_an_argument}}
func.func @not_an_argument(%w: tensor<3xf32> {loom.param = @w})
    -> (tensor<f32>, tensor<3xf32> {loom.param = @s}) {
  %l = loom.reduce_sum %w dims = [0] : (tensor<3xf32>) -> tensor<f32>
  return %l, %w : tensor<f32>, tensor<3xf32>
}
