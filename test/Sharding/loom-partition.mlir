// RUN: loom-opt %s --split-input-file --loom-partition --canonicalize --cse | FileCheck %s

// Megatron: a column-split then a row-split weight need exactly one
// all_reduce (of the row-parallel partial sum); everything between stays
// split, locally shaped.
// CHECK-LABEL: func.func @megatron_mlp
// CHECK-SAME: %{{.*}}: tensor<8x8xf32> {loom.param = @w1, loom.sharding = #loom.sharding<@m, [{}, {"tp"}]>}
// CHECK-SAME: attributes {loom.partitioned = @m}
// CHECK: loom.dot_general %arg0, %arg1 {{.*}} -> tensor<4x8xf32>
// CHECK: loom.tanh %{{.*}} : tensor<4x8xf32>
// CHECK: %[[P:.*]] = loom.dot_general {{.*}} -> tensor<4x8xf32>
// CHECK-NEXT: loom.all_reduce %[[P]] over @m ["tp"] reduction = sum : tensor<4x8xf32>
// CHECK-NOT: loom.all_
// CHECK: return
loom.mesh @m ["tp"=2]
loom.parameter @w1 : tensor<8x16xf32> trainable
loom.parameter @w2 : tensor<16x8xf32> trainable
func.func @megatron_mlp(%x: tensor<4x8xf32>,
    %w1: tensor<8x16xf32> {loom.param = @w1, loom.sharding = #loom.sharding<@m, [{}, {"tp"}]>},
    %w2: tensor<16x8xf32> {loom.param = @w2, loom.sharding = #loom.sharding<@m, [{"tp"}, {}]>}) -> tensor<4x8xf32> {
  %h = loom.dot_general %x, %w1 contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %a = loom.tanh %h : tensor<4x16xf32>
  %y = loom.dot_general %a, %w2 contracting_dims = [1] x [0] : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %r = loom.add %y, %x : tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// Data parallel: the batch stays split, the weight gradient (a contraction
// over the split batch) is a partial sum, all-reduced before the update of
// the replicated weight; the mean loss is rescaled so that the partial sums
// add up to the global mean.
// CHECK-LABEL: func.func @dp_step
// CHECK-SAME: %{{.*}}: tensor<2x8xf32> {loom.sharding = #loom.sharding<@m, [{"dp"}, {}]>}
// CHECK: %[[MEAN:.*]] = loom.reduce_mean %{{.*}} dims = [0, 1] : (tensor<2x4xf32>) -> tensor<f32>
// CHECK: %[[SCALED:.*]] = loom.mul %[[MEAN]], %{{.*}} : tensor<f32>
// CHECK: %[[G:.*]] = loom.dot_general %arg0, %{{.*}} contracting_dims = [0] x [0] : (tensor<2x8xf32>, tensor<2x4xf32>) -> tensor<8x4xf32>
// CHECK: %[[GSUM:.*]] = loom.all_reduce %[[G]] over @m ["dp"] reduction = sum : tensor<8x4xf32>
// CHECK: loom.sub %arg1, %{{.*}}
// CHECK: loom.all_reduce %[[SCALED]] over @m ["dp"] reduction = sum : tensor<f32>
loom.mesh @m ["dp"=2]
loom.parameter @w : tensor<8x4xf32> trainable
func.func @dp_step(%x: tensor<4x8xf32> {loom.sharding = #loom.sharding<@m, [{"dp"}, {}]>},
    %w: tensor<8x4xf32> {loom.param = @w}) -> (tensor<f32>, tensor<8x4xf32> {loom.param = @w}) {
  %y = loom.dot_general %x, %w contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %l = loom.reduce_mean %y dims = [0, 1] : (tensor<4x4xf32>) -> tensor<f32>
  %c = loom.constant dense<0.0625> : tensor<4x4xf32>
  %g = loom.dot_general %x, %c contracting_dims = [0] x [0] : (tensor<4x8xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %n = loom.sub %w, %g : tensor<8x4xf32>
  return %l, %n : tensor<f32>, tensor<8x4xf32>
}

// -----

// ZeRO: the optimizer state (and here the weight) is split over dp; the
// weight is gathered where it is used and the partial gradient is
// reduce-scattered into the split of the state.
// CHECK-LABEL: func.func @zero
// CHECK: %[[W:.*]] = loom.all_gather %arg1 over @m ["dp"] dim = 0 : (tensor<4x4xf32>) -> tensor<8x4xf32>
// CHECK: loom.dot_general %arg0, %[[W]]
// CHECK: %[[G:.*]] = loom.dot_general %arg0, %{{.*}} contracting_dims = [0] x [0] : (tensor<2x8xf32>, tensor<2x4xf32>) -> tensor<8x4xf32>
// CHECK: %[[GS:.*]] = loom.reduce_scatter %[[G]] over @m ["dp"] dim = 0 reduction = sum : (tensor<8x4xf32>) -> tensor<4x4xf32>
// CHECK: loom.add %arg2, %[[GS]] : tensor<4x4xf32>
loom.mesh @m ["dp"=2]
loom.parameter @w : tensor<8x4xf32> trainable
loom.parameter @mom : tensor<8x4xf32>
func.func @zero(%x: tensor<4x8xf32> {loom.sharding = #loom.sharding<@m, [{"dp"}, {}]>},
    %w: tensor<8x4xf32> {loom.param = @w, loom.sharding = #loom.sharding<@m, [{"dp"}, {}]>},
    %m: tensor<8x4xf32> {loom.param = @mom, loom.sharding = #loom.sharding<@m, [{"dp"}, {}]>})
    -> (tensor<4x4xf32>, tensor<8x4xf32> {loom.param = @mom}) {
  %y = loom.dot_general %x, %w contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %g = loom.dot_general %x, %y contracting_dims = [0] x [0] : (tensor<4x8xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %mn = loom.add %m, %g : tensor<8x4xf32>
  return %y, %mn : tensor<4x4xf32>, tensor<8x4xf32>
}

// -----

// A split moving between dimensions is one all_to_all; a replicated value
// becoming split is an all_slice (no communication).
// CHECK-LABEL: func.func @moves
// CHECK: loom.all_to_all %arg0 over @m ["x"] split_dim = 1 concat_dim = 0 : (tensor<2x8xf32>) -> tensor<4x4xf32>
// CHECK: loom.all_slice %arg1 over @m ["x"] dim = 0 : (tensor<4xf32>) -> tensor<2xf32>
loom.mesh @m ["x"=2]
func.func @moves(%a: tensor<4x8xf32> {loom.sharding = #loom.sharding<@m, [{"x"}, {}]>}, %b: tensor<4xf32>)
    -> (tensor<4x8xf32> {loom.sharding = #loom.sharding<@m, [{}, {"x"}]>}, tensor<4xf32> {loom.sharding = #loom.sharding<@m, [{"x"}]>}) {
  return %a, %b : tensor<4x8xf32>, tensor<4xf32>
}

// -----

// Ops whose elements depend on their global position see whole tensors.
// CHECK-LABEL: func.func @dropout
// CHECK: %[[X:.*]] = loom.all_gather %arg0 over @m ["x"] dim = 0 : (tensor<2x8xf32>) -> tensor<4x8xf32>
// CHECK: loom.dropout %[[X]], %{{.*}} : (tensor<4x8xf32>, tensor<i64>) -> (tensor<4x8xf32>, tensor<4x8xi1>)
loom.mesh @m ["x"=2]
func.func @dropout(%a: tensor<4x8xf32> {loom.sharding = #loom.sharding<@m, [{"x"}, {}]>}, %s: tensor<i64>) -> tensor<4x8xf32> {
  %y, %k = loom.dropout %a, %s ratio = 5.000000e-01 : (tensor<4x8xf32>, tensor<i64>) -> (tensor<4x8xf32>, tensor<4x8xi1>)
  return %y : tensor<4x8xf32>
}

// -----

// A partial value used elementwise, then needed split: the partial axes
// reduce-scatter into the split (the rest all-reduce) and the elementwise
// work runs on the shard (ZeRO optimizer updates), not all-reduce + slice.
// CHECK-LABEL: func.func @compute_on_slices
// CHECK: %[[RS:.*]] = loom.reduce_scatter %arg0 over @m ["dp"] dim = 0 reduction = sum : (tensor<8x4xf32>) -> tensor<4x4xf32>
// CHECK-NEXT: %[[AR:.*]] = loom.all_reduce %[[RS]] over @m ["tp"] reduction = sum : tensor<4x4xf32>
// CHECK-NEXT: loom.mul %[[AR]], %arg2 : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
// CHECK-NEXT: loom.mul %[[AR]], %[[AR]] : tensor<4x4xf32>
// CHECK-NOT: loom.all_
// CHECK: return
loom.mesh @m ["dp"=2, "tp"=2]
func.func @compute_on_slices(%g: tensor<8x4xf32> {loom.sharding = #loom.sharding<@m, [{}, {}], partial = sum {"dp", "tp"}>},
                  %m: tensor<8x4xf32> {loom.sharding = #loom.sharding<@m, [{"dp"}, {}]>},
                  %s: tensor<f32>) -> (tensor<8x4xf32> {loom.sharding = #loom.sharding<@m, [{"dp"}, {}]>}) {
  %a = loom.mul %g, %s : (tensor<8x4xf32>, tensor<f32>) -> tensor<8x4xf32>
  %b = loom.mul %g, %g : tensor<8x4xf32>
  %c = loom.add %a, %b : tensor<8x4xf32>
  %d = loom.add %m, %c : tensor<8x4xf32>
  return %d : tensor<8x4xf32>
}

// -----

// Merging a dimension split over "dp" with a minor one split over "tp"
// would leave a strided block, not a slice of the merged dimension: the
// minor split is gathered first and the merged rows split over "dp" only.
// CHECK-LABEL: func.func @no_strided_merge
// CHECK: %[[G:.*]] = loom.all_gather %arg0 over @m ["tp"] dim = 1 : (tensor<2x8x4xf32>) -> tensor<2x16x4xf32>
// CHECK-NEXT: %[[R:.*]] = loom.reshape %[[G]] : (tensor<2x16x4xf32>) -> tensor<32x4xf32>
// CHECK: return
loom.mesh @m ["dp"=2, "tp"=2]
func.func @no_strided_merge(%x: tensor<4x16x4xf32> {loom.sharding = #loom.sharding<@m, [{"dp"}, {"tp"}, {}]>})
    -> (tensor<64x4xf32> {loom.sharding = #loom.sharding<@m, [{"dp"}, {}]>}) {
  %r = loom.reshape %x {loom.sharding = #loom.sharding<@m, [{"dp", "tp"}, {}]>} : (tensor<4x16x4xf32>) -> tensor<64x4xf32>
  return %r : tensor<64x4xf32>
}
