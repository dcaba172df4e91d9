// RUN: loom-opt %s --loom-prepare-for-execution -split-input-file -verify-diagnostics

// A step's results become caller-provided buffers: a scalar result is
// named, not a crash.
// expected-error @+1 {{a step's results must be ranked tensors; result 1 is 'f32'}}
func.func @scalar_result(%a: tensor<4xf32>, %s: f32) -> (tensor<4xf32>, f32) {
  return %a, %s : tensor<4xf32>, f32
}
