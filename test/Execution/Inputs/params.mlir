loom.parameter @a : tensor<3xf32> = dense<[1.0, 2.0, 3.0]> : tensor<3xf32> trainable
loom.parameter @a.exp_avg : tensor<3xf32> = dense<0.0> : tensor<3xf32> state_of @a
loom.parameter @b : tensor<2xf32> = dense<[4.0, 5.0]> : tensor<2xf32> trainable
func.func @f(%a: tensor<3xf32> {loom.param = @a}, %b: tensor<2xf32> {loom.param = @b}) -> tensor<3xf32> {
  return %a : tensor<3xf32>
}
