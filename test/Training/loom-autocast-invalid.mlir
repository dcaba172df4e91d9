// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-autocast=precision=bf16
// RUN: not loom-opt %s --split-input-file --loom-autocast=precision=fp8 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not loom-opt %s --split-input-file --loom-autocast=precision=fp16 --loom-build-train-step=loss-scale=dynamic 2>&1 | FileCheck %s --check-prefix=STAGES

// UNKNOWN: loom-autocast: unknown precision 'fp8' (expected bf16, fp16 or fp32)
// STAGES: loom-build-train-step: dynamic loss scaling needs the overflow check over every stage's gradients; it is not supported with pipeline stages yet

// Master weights are the model's f32 parameters: a bf16 model has none.
loom.parameter @w : tensor<4x8xbf16> trainable
// expected-error @+1 {{loom-autocast: trainable parameter @w is 'bf16'; mixed precision keeps f32 master weights of an f32 model}}
func.func @bf16(%x: tensor<2x4xbf16> {loom.name = "x"}, %w: tensor<4x8xbf16> {loom.param = @w}) -> tensor<bf16> {
  %h = loom.dot_general %x, %w contracting_dims = [1] x [0] : (tensor<2x4xbf16>, tensor<4x8xbf16>) -> tensor<2x8xbf16>
  %l = loom.reduce_sum %h dims = [0, 1] : (tensor<2x8xbf16>) -> tensor<bf16>
  return %l : tensor<bf16>
}

// -----

// fp16 loss scaling with pipeline stages is refused by the step builder.
loom.parameter @w : tensor<4x8xf32> trainable
func.func @staged(%x: tensor<2x4xf32> {loom.name = "x"}, %w: tensor<4x8xf32> {loom.param = @w}) -> tensor<f32> {
  %h = loom.dot_general %x, %w contracting_dims = [1] x [0] {loom.stage = 0 : i64} : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %l = loom.reduce_sum %h dims = [0, 1] {loom.stage = 1 : i64} : (tensor<2x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
