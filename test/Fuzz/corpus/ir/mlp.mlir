// A small MLP with its loss, no shardings: input for loomc --strategy auto.
loom.parameter @"fc1.weight" : tensor<32x64xf32> trainable
loom.parameter @"fc2.weight" : tensor<64x16xf32> trainable
func.func @forward(%x: tensor<16x32xf32> {loom.name = "x"},
                   %labels: tensor<16xi64> {loom.name = "labels", loom.index_bound = 16},
                   %w1: tensor<32x64xf32> {loom.param = @"fc1.weight"},
                   %w2: tensor<64x16xf32> {loom.param = @"fc2.weight"}) -> tensor<f32> {
  %h = loom.dot_general %x, %w1 contracting_dims = [1] x [0] : (tensor<16x32xf32>, tensor<32x64xf32>) -> tensor<16x64xf32>
  %a = loom.relu %h : tensor<16x64xf32>
  %o = loom.dot_general %a, %w2 contracting_dims = [1] x [0] : (tensor<16x64xf32>, tensor<64x16xf32>) -> tensor<16x16xf32>
  %loss = loom.cross_entropy %o, %labels reduction = mean : (tensor<16x16xf32>, tensor<16xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
