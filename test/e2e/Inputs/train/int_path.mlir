// The weight reaches the output only through a float -> int -> float round
// trip, so no gradient can reach it.
loom.parameter @w : tensor<3xf32> = dense<[0.5, 1.5, 2.5]> : tensor<3xf32> trainable
func.func @main(%x: tensor<4x3xf32> {loom.name = "x"}, %w: tensor<3xf32> {loom.param = @w}) -> tensor<4x3xf32> {
  %i = loom.cast %w : tensor<3xf32> to tensor<3xi64>
  %f = loom.cast %i : tensor<3xi64> to tensor<3xf32>
  %y = loom.mul %x, %f : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}
