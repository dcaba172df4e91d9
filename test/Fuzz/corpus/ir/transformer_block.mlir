// One GPT-style pre-norm transformer block (d_model 256, 8 heads of 32,
// MLP 1024, batch 4, sequence 64) with an MSE loss, on a 2x2 mesh:
// data parallel over "dp"; Megatron tensor parallel over "tp" with attention
// heads split across "tp" (Q/K/V column-parallel, output projection
// row-parallel) and the MLP split the same way. Each block therefore needs
// exactly one reduction over "tp" after attention and one after the MLP:
// the two `partial = sum {"tp"}` values below.
//
//   loom-opt examples/transformer_block.mlir
//   loom-opt examples/transformer_block.mlir --loom-print-sharding-rules

loom.mesh @cluster ["dp"=2 {bandwidth = 2.5e10, latency = 5.0e-6},
                    "tp"=2 {bandwidth = 4.5e11, latency = 1.0e-6}]

loom.parameter @"ln1.weight" : tensor<256xf32> = dense<1.0> : tensor<256xf32> trainable
loom.parameter @"ln1.bias" : tensor<256xf32> = dense<0.0> : tensor<256xf32> trainable
loom.parameter @"attn.wq" : tensor<256x256xf32> trainable
loom.parameter @"attn.wk" : tensor<256x256xf32> trainable
loom.parameter @"attn.wv" : tensor<256x256xf32> trainable
loom.parameter @"attn.wo" : tensor<256x256xf32> trainable
loom.parameter @"ln2.weight" : tensor<256xf32> = dense<1.0> : tensor<256xf32> trainable
loom.parameter @"ln2.bias" : tensor<256xf32> = dense<0.0> : tensor<256xf32> trainable
loom.parameter @"mlp.fc1" : tensor<256x1024xf32> trainable
loom.parameter @"mlp.fc2" : tensor<1024x256xf32> trainable

func.func @forward(
    %x: tensor<4x64x256xf32> {loom.name = "x", loom.sharding = #loom.sharding<@cluster, [{"dp"}, {}, {}]>},
    %target: tensor<4x64x256xf32> {loom.name = "target", loom.sharding = #loom.sharding<@cluster, [{"dp"}, {}, {}]>},
    // Additive causal mask: 0 on and below the diagonal, -1e9 above.
    %mask: tensor<64x64xf32> {loom.name = "mask", loom.sharding = #loom.sharding<@cluster, [{}, {}]>},
    %g1: tensor<256xf32> {loom.param = @"ln1.weight"},
    %b1: tensor<256xf32> {loom.param = @"ln1.bias"},
    %wq: tensor<256x256xf32> {loom.param = @"attn.wq", loom.sharding = #loom.sharding<@cluster, [{}, {"tp"}]>},
    %wk: tensor<256x256xf32> {loom.param = @"attn.wk", loom.sharding = #loom.sharding<@cluster, [{}, {"tp"}]>},
    %wv: tensor<256x256xf32> {loom.param = @"attn.wv", loom.sharding = #loom.sharding<@cluster, [{}, {"tp"}]>},
    %wo: tensor<256x256xf32> {loom.param = @"attn.wo", loom.sharding = #loom.sharding<@cluster, [{"tp"}, {}]>},
    %g2: tensor<256xf32> {loom.param = @"ln2.weight"},
    %b2: tensor<256xf32> {loom.param = @"ln2.bias"},
    %w1: tensor<256x1024xf32> {loom.param = @"mlp.fc1", loom.sharding = #loom.sharding<@cluster, [{}, {"tp"}]>},
    %w2: tensor<1024x256xf32> {loom.param = @"mlp.fc2", loom.sharding = #loom.sharding<@cluster, [{"tp"}, {}]>})
    -> tensor<f32> {
  // --- attention ---
  %ln1 = loom.layer_norm %x, %g1, %b1 axis = 2 epsilon = 1.0e-5
      : (tensor<4x64x256xf32>, tensor<256xf32>, tensor<256xf32>) -> tensor<4x64x256xf32>
  %q0 = loom.dot_general %ln1, %wq contracting_dims = [2] x [0]
      : (tensor<4x64x256xf32>, tensor<256x256xf32>) -> tensor<4x64x256xf32>
  %k0 = loom.dot_general %ln1, %wk contracting_dims = [2] x [0]
      : (tensor<4x64x256xf32>, tensor<256x256xf32>) -> tensor<4x64x256xf32>
  %v0 = loom.dot_general %ln1, %wv contracting_dims = [2] x [0]
      : (tensor<4x64x256xf32>, tensor<256x256xf32>) -> tensor<4x64x256xf32>
  %q1 = loom.reshape %q0 : (tensor<4x64x256xf32>) -> tensor<4x64x8x32xf32>
  %k1 = loom.reshape %k0 : (tensor<4x64x256xf32>) -> tensor<4x64x8x32xf32>
  %v1 = loom.reshape %v0 : (tensor<4x64x256xf32>) -> tensor<4x64x8x32xf32>
  // [batch, head, seq, head_dim], heads split over "tp".
  %q = loom.transpose %q1 permutation = [0, 2, 1, 3]
      {loom.sharding = #loom.sharding<@cluster, [{"dp"}, {"tp"}, {}, {}]>}
      : (tensor<4x64x8x32xf32>) -> tensor<4x8x64x32xf32>
  %k = loom.transpose %k1 permutation = [0, 2, 1, 3]
      {loom.sharding = #loom.sharding<@cluster, [{"dp"}, {"tp"}, {}, {}]>}
      : (tensor<4x64x8x32xf32>) -> tensor<4x8x64x32xf32>
  %v = loom.transpose %v1 permutation = [0, 2, 1, 3]
      {loom.sharding = #loom.sharding<@cluster, [{"dp"}, {"tp"}, {}, {}]>}
      : (tensor<4x64x8x32xf32>) -> tensor<4x8x64x32xf32>
  %s = loom.dot_general %q, %k batching_dims = [0, 1] x [0, 1] contracting_dims = [3] x [3]
      : (tensor<4x8x64x32xf32>, tensor<4x8x64x32xf32>) -> tensor<4x8x64x64xf32>
  %scale = loom.constant dense<0.176776695> : tensor<f32>
  %ss = loom.mul %s, %scale : (tensor<4x8x64x64xf32>, tensor<f32>) -> tensor<4x8x64x64xf32>
  %sm = loom.add %ss, %mask : (tensor<4x8x64x64xf32>, tensor<64x64xf32>) -> tensor<4x8x64x64xf32>
  %p = loom.softmax %sm axis = 3
      {loom.sharding = #loom.sharding<@cluster, [{"dp"}, {"tp"}, {}, {}]>} : tensor<4x8x64x64xf32>
  %ctx = loom.dot_general %p, %v batching_dims = [0, 1] x [0, 1] contracting_dims = [3] x [2]
      : (tensor<4x8x64x64xf32>, tensor<4x8x64x32xf32>) -> tensor<4x8x64x32xf32>
  %ct = loom.transpose %ctx permutation = [0, 2, 1, 3]
      : (tensor<4x8x64x32xf32>) -> tensor<4x64x8x32xf32>
  %c = loom.reshape %ct : (tensor<4x64x8x32xf32>) -> tensor<4x64x256xf32>
  %attn = loom.dot_general %c, %wo contracting_dims = [2] x [0]
      {loom.sharding = #loom.sharding<@cluster, [{"dp"}, {}, {}], partial = sum {"tp"}>}
      : (tensor<4x64x256xf32>, tensor<256x256xf32>) -> tensor<4x64x256xf32>
  %h1 = loom.add %x, %attn {loom.sharding = #loom.sharding<@cluster, [{"dp"}, {}, {}]>}
      : tensor<4x64x256xf32>
  // --- MLP ---
  %ln2 = loom.layer_norm %h1, %g2, %b2 axis = 2 epsilon = 1.0e-5
      : (tensor<4x64x256xf32>, tensor<256xf32>, tensor<256xf32>) -> tensor<4x64x256xf32>
  %f1 = loom.dot_general %ln2, %w1 contracting_dims = [2] x [0]
      {loom.sharding = #loom.sharding<@cluster, [{"dp"}, {}, {"tp"}]>}
      : (tensor<4x64x256xf32>, tensor<256x1024xf32>) -> tensor<4x64x1024xf32>
  %a = loom.gelu %f1 approximate = tanh : tensor<4x64x1024xf32>
  %f2 = loom.dot_general %a, %w2 contracting_dims = [2] x [0]
      {loom.sharding = #loom.sharding<@cluster, [{"dp"}, {}, {}], partial = sum {"tp"}>}
      : (tensor<4x64x1024xf32>, tensor<1024x256xf32>) -> tensor<4x64x256xf32>
  %h2 = loom.add %h1, %f2 {loom.sharding = #loom.sharding<@cluster, [{"dp"}, {}, {}]>}
      : tensor<4x64x256xf32>
  %loss = loom.mse_loss %h2, %target reduction = mean
      : (tensor<4x64x256xf32>, tensor<4x64x256xf32>) -> tensor<f32>
  return %loss : tensor<f32>
}
