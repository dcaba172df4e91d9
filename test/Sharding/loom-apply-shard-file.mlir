// loom-apply-shard-file shards the arguments a file names; optimizer state
// follows its weight (state_of); unknown names are errors with the line.
// RUN: loom-opt %s --loom-apply-shard-file="file=%S/Inputs/shards.txt" | FileCheck %s
// RUN: not loom-opt %s --loom-apply-shard-file="file=%S/Inputs/bad-shards.txt" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not loom-opt %s --loom-apply-shard-file="file=%S/Inputs/missing.txt" 2>&1 | FileCheck %s --check-prefix=MISSING

// CHECK-LABEL: func.func @train_step
// CHECK-SAME: loom.name = "x", loom.sharding = #loom.sharding<@m, [{"dp"}, {}]>
// CHECK-SAME: loom.param = @w, loom.sharding = #loom.sharding<@m, [{}, {"tp"}]>
// CHECK-SAME: loom.param = @w.exp_avg, loom.sharding = #loom.sharding<@m, [{}, {"tp"}]>
// BAD: bad-shards.txt:1: 'nope' is neither a parameter nor an input of the model
// MISSING: error: loom-apply-shard-file: cannot read {{.*}}missing.txt

loom.mesh @m ["dp"=2, "tp"=2]
loom.parameter @w : tensor<4x8xf32> trainable
loom.parameter @w.exp_avg : tensor<4x8xf32> = dense<0.0> : tensor<4x8xf32> state_of @w
func.func @train_step(%x: tensor<2x4xf32> {loom.name = "x"},
                      %w: tensor<4x8xf32> {loom.param = @w},
                      %m: tensor<4x8xf32> {loom.param = @w.exp_avg}) -> tensor<f32> {
  %h = loom.dot_general %x, %w contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %l = loom.reduce_sum %h dims = [0, 1] : (tensor<2x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
