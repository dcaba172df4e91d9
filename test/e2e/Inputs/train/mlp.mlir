// A small classifier for loomc's command-line tests: integer labels come
// from loom-add-loss (cross-entropy over the last dimension).
loom.parameter @"fc1.weight" : tensor<6x16xf32> trainable
loom.parameter @"fc1.bias" : tensor<16xf32> = dense<0.0> : tensor<16xf32> trainable
loom.parameter @"fc2.weight" : tensor<16x3xf32> trainable
func.func @main(%x: tensor<4x6xf32> {loom.name = "x"},
                %w1: tensor<6x16xf32> {loom.param = @"fc1.weight"},
                %b1: tensor<16xf32> {loom.param = @"fc1.bias"},
                %w2: tensor<16x3xf32> {loom.param = @"fc2.weight"})
    -> (tensor<4x3xf32> {loom.name = "logits"}) {
  %h = loom.dot_general %x, %w1 contracting_dims = [1] x [0] : (tensor<4x6xf32>, tensor<6x16xf32>) -> tensor<4x16xf32>
  %hb = loom.add %h, %b1 : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %r = loom.tanh %hb : tensor<4x16xf32>
  %y = loom.dot_general %r, %w2 contracting_dims = [1] x [0] : (tensor<4x16xf32>, tensor<16x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}
