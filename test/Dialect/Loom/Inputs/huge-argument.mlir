loom.parameter @"w" : tensor<2xf32> trainable
func.func @forward(%x: tensor<2xf32> {loom.name = "x"}, %y: tensor<4611686018427387904xf32> {loom.name = "y"}, %w: tensor<2xf32> {loom.param = @"w"}) -> tensor<f32> {
  %m = loom.mul %x, %w : tensor<2xf32>
  %s = loom.reduce_sum %m dims = [0] : (tensor<2xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
