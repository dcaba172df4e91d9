// A two-layer MLP classifier (784 -> 512 -> 10) with its loss, on a 2x2 mesh:
// data parallel over "dp", Megatron tensor parallel over "tp" (the first
// layer split by columns, the second by rows, so the hidden activation never
// moves and the output is a partial sum over "tp").
//
//   loom-opt examples/mlp.mlir
//   loom-opt examples/mlp.mlir --loom-print-sharding-rules
//   loomc examples/mlp.mlir --train --loss=none --optimizer=sgd --lr=0.005 \
//       --momentum=0.9 -o out && loom-run out --steps 20 --data synthetic

loom.mesh @cluster ["dp"=2 {bandwidth = 2.5e10, latency = 5.0e-6},
                    "tp"=2 {bandwidth = 4.5e11, latency = 1.0e-6}]

loom.parameter @"fc1.weight" : tensor<784x512xf32> trainable
loom.parameter @"fc1.bias" : tensor<512xf32> = dense<0.0> : tensor<512xf32> trainable
loom.parameter @"fc2.weight" : tensor<512x10xf32> trainable
loom.parameter @"fc2.bias" : tensor<10xf32> = dense<0.0> : tensor<10xf32> trainable

func.func @forward(
    %x: tensor<32x784xf32> {loom.name = "x", loom.sharding = #loom.sharding<@cluster, [{"dp"}, {}]>},
    %labels: tensor<32xi64> {loom.name = "labels", loom.index_bound = 10,
                             loom.sharding = #loom.sharding<@cluster, [{"dp"}]>},
    %w1: tensor<784x512xf32> {loom.param = @"fc1.weight",
                              loom.sharding = #loom.sharding<@cluster, [{}, {"tp"}]>},
    %b1: tensor<512xf32> {loom.param = @"fc1.bias",
                          loom.sharding = #loom.sharding<@cluster, [{"tp"}]>},
    %w2: tensor<512x10xf32> {loom.param = @"fc2.weight",
                             loom.sharding = #loom.sharding<@cluster, [{"tp"}, {}]>},
    %b2: tensor<10xf32> {loom.param = @"fc2.bias",
                         loom.sharding = #loom.sharding<@cluster, [{}]>})
    -> (tensor<f32> {loom.name = "loss", loom.sharding = #loom.sharding<@cluster, []>}) {
  %h = loom.dot_general %x, %w1 contracting_dims = [1] x [0]
      {loom.sharding = #loom.sharding<@cluster, [{"dp"}, {"tp"}]>}
      : (tensor<32x784xf32>, tensor<784x512xf32>) -> tensor<32x512xf32>
  %hb = loom.add %h, %b1 {loom.sharding = #loom.sharding<@cluster, [{"dp"}, {"tp"}]>}
      : (tensor<32x512xf32>, tensor<512xf32>) -> tensor<32x512xf32>
  %a = loom.relu %hb {loom.sharding = #loom.sharding<@cluster, [{"dp"}, {"tp"}]>} : tensor<32x512xf32>
  // Contracting over the "tp"-split dimension leaves partial sums.
  %o = loom.dot_general %a, %w2 contracting_dims = [1] x [0]
      {loom.sharding = #loom.sharding<@cluster, [{"dp"}, {}], partial = sum {"tp"}>}
      : (tensor<32x512xf32>, tensor<512x10xf32>) -> tensor<32x10xf32>
  %logits = loom.sharding_constraint %o <@cluster, [{"dp"}, {}]> : tensor<32x10xf32>
  %ob = loom.add %logits, %b2 : (tensor<32x10xf32>, tensor<10xf32>) -> tensor<32x10xf32>
  %loss = loom.cross_entropy %ob, %labels reduction = mean
      : (tensor<32x10xf32>, tensor<32xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}
