func.func @main(%x: tensor<256x256xf32> {loom.name = "x"}, %seed: tensor<i64> {loom.name = "seed"})
    -> (tensor<256x256xf32>, tensor<256x256xi1>) {
  %y, %m = loom.dropout %x, %seed ratio = 0.3 : (tensor<256x256xf32>, tensor<i64>) -> (tensor<256x256xf32>, tensor<256x256xi1>)
  return %y, %m : tensor<256x256xf32>, tensor<256x256xi1>
}
