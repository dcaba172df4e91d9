// nn.MultiheadAttention's layout change: (B, T, E) -> (T, B, E) -> (T*B, E).
// Under data parallelism the batch B is split, and B is the minor part of
// the merged T*B dimension: no block of T*B rows holds one device's batch.
loom.parameter @w : tensor<16x16xf32> trainable
func.func @forward(%x: tensor<8x5x16xf32> {loom.name = "x"},
                   %w: tensor<16x16xf32> {loom.param = @w}) -> tensor<f32> {
  %t = loom.transpose %x permutation = [1, 0, 2] : (tensor<8x5x16xf32>) -> tensor<5x8x16xf32>
  %m = loom.reshape %t : (tensor<5x8x16xf32>) -> tensor<40x16xf32>
  %y = loom.dot_general %m, %w contracting_dims = [1] x [0] : (tensor<40x16xf32>, tensor<16x16xf32>) -> tensor<40x16xf32>
  %r = loom.tanh %y : tensor<40x16xf32>
  %l = loom.reduce_mean %r dims = [0, 1] : (tensor<40x16xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
