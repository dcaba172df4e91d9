loom.parameter @w1 : tensor<8x8xf32> trainable
loom.parameter @w2 : tensor<8x8xf32> trainable
loom.parameter @w3 : tensor<8x4xf32> trainable

func.func @forward(%x: tensor<4x8xf32> {loom.name = "x"},
                   %y: tensor<4x4xf32> {loom.name = "labels"},
                   %w1: tensor<8x8xf32> {loom.param = @w1},
                   %w2: tensor<8x8xf32> {loom.param = @w2},
                   %w3: tensor<8x4xf32> {loom.param = @w3}) -> (tensor<f32> {loom.name = "loss"}) {
  %h1 = loom.dot_general %x, %w1 contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("layer1")
  %a1 = loom.tanh %h1 : tensor<4x8xf32> loc("act1")
  %h2 = loom.dot_general %a1, %w2 contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("layer2")
  %a2 = loom.tanh %h2 : tensor<4x8xf32> loc("act2")
  %o = loom.dot_general %a2, %w3 contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32> loc("layer3")
  %d = loom.sub %o, %y : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %sq = loom.mul %d, %d : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %loss = loom.reduce_mean %sq dims = [0, 1] : (tensor<4x4xf32>) -> tensor<f32> loc("loss")
  return %loss : tensor<f32>
}
