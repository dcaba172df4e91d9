// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-add-loss

// expected-error @+1 {{loom-add-loss: output #0 has type 'tensor<4xi64>'; a loss needs a float tensor}}
func.func @int_output(%x: tensor<4xi64>) -> tensor<4xi64> {
  return %x : tensor<4xi64>
}

// -----

// expected-error @+1 {{loom-add-loss: output #0 has type 'tensor<4xf32>'; cross_entropy needs logits with a batch and a class dimension}}
func.func @vector(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// expected-error @+1 {{loom-add-loss: argument #0 is already named 'labels'}}
func.func @labels_taken(%x: tensor<4x3xf32> {loom.name = "labels"}) -> tensor<4x3xf32> {
  return %x : tensor<4x3xf32>
}
