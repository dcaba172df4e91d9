// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-autocast=precision=bf16
// RUN: not loom-opt %s --split-input-file --loom-autocast=precision=fp8 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not loom-opt %s --split-input-file --loom-autocast=precision=fp16 --loom-build-train-step=loss-scale=dynamic 2>&1 | FileCheck %s --check-prefix=STAGES

// UNKNOWN: loom-autocast: unknown precision 'fp8' (expected bf16, fp16 or fp32)
// STAGES: loom-build-train-step: dynamic loss scaling needs the overflow check over every stage's gradients; it is not supported with pipeline stages yet

// Master weights come from f32 weights or weights in the compute type; an
// f16 model computed in bf16 is neither.
loom.parameter @w : tensor<4x8xf16> trainable
// expected-error @+1 {{loom-autocast: trainable parameter @w is 'f16'; mixed precision in 'bf16' keeps f32 master weights of an f32 or 'bf16' model (leave --precision out to train it in 'f16' as it is)}}
func.func @f16(%x: tensor<2x4xf16> {loom.name = "x"}, %w: tensor<4x8xf16> {loom.param = @w}) -> tensor<f16> {
  %h = loom.dot_general %x, %w contracting_dims = [1] x [0] : (tensor<2x4xf16>, tensor<4x8xf16>) -> tensor<2x8xf16>
  %l = loom.reduce_sum %h dims = [0, 1] : (tensor<2x8xf16>) -> tensor<f16>
  return %l : tensor<f16>
}

// -----

// fp16 loss scaling with pipeline stages is refused by the step builder.
loom.parameter @w : tensor<4x8xf32> trainable
func.func @staged(%x: tensor<2x4xf32> {loom.name = "x"}, %w: tensor<4x8xf32> {loom.param = @w}) -> tensor<f32> {
  %h = loom.dot_general %x, %w contracting_dims = [1] x [0] {loom.stage = 0 : i64} : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %l = loom.reduce_sum %h dims = [0, 1] {loom.stage = 1 : i64} : (tensor<2x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
