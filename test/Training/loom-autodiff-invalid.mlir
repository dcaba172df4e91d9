// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-autodiff

// A parameter that reaches the loss only through an integer cast: no
// gradient can flow, which is an error naming the op, not a silent zero.
loom.parameter @w : tensor<3xf32> trainable
func.func @through_int(%w: tensor<3xf32> {loom.param = @w}) -> tensor<f32> {
  // expected-error @+1 {{not differentiable: the result depends on parameter @w only through 'loom.cast', which produces 'tensor<3xi32>', so no gradient reaches parameter @w}}
  %i = loom.cast %w : tensor<3xf32> to tensor<3xi32>
  %f = loom.cast %i : tensor<3xi32> to tensor<3xf32>
  %l = loom.reduce_sum %f dims = [0] : (tensor<3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// An imported op Loom cannot express has no gradient rule.
loom.parameter @w : tensor<3xf32> trainable
func.func @opaque(%w: tensor<3xf32> {loom.param = @w}) -> tensor<f32> {
  // expected-error @+1 {{'loom.opaque' (imported Hardmax) has no gradient rule, but the gradient with respect to parameter @w flows through it}}
  %y = loom.opaque "Hardmax"(%w) {} : (tensor<3xf32>) -> tensor<3xf32>
  %l = loom.reduce_sum %y dims = [0] : (tensor<3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Class weights of a loss are not differentiable (as in PyTorch).
loom.parameter @cw : tensor<3xf32> trainable
func.func @loss_weight(%x: tensor<2x3xf32>, %l: tensor<2xi64>, %cw: tensor<3xf32> {loom.param = @cw}) -> tensor<f32> {
  // expected-error @+1 {{'loom.cross_entropy' has no gradient for operand #2, but parameter @cw reaches it}}
  %y = loom.cross_entropy %x, %l weight = %cw reduction = mean : (tensor<2x3xf32>, tensor<2xi64>, tensor<3xf32>) -> tensor<f32>
  return %y : tensor<f32>
}

// -----

// expected-error @+1 {{loom-autodiff: @no_params has no trainable parameters to differentiate with respect to}}
func.func @no_params(%x: tensor<3xf32>) -> tensor<f32> {
  %l = loom.reduce_sum %x dims = [0] : (tensor<3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

loom.parameter @w : tensor<3xf32> trainable
// expected-error @+1 {{loom-autodiff: the first result of @not_scalar is 'tensor<3xf32>', not a scalar float loss (run loom-add-loss first)}}
func.func @not_scalar(%w: tensor<3xf32> {loom.param = @w}) -> tensor<3xf32> {
  return %w : tensor<3xf32>
}
