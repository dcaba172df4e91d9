// The partitioned training step of each strategy has the collectives the
// strategy is known for, and no others (adam, so that ZeRO has state).
// RUN: loom-opt %s --loom-build-train-step="optimizer=adam lr=0.1" --loom-apply-strategy=strategy=dp --loom-partition --canonicalize --cse --loom-bucket-all-reduce | FileCheck %s --check-prefix=DP
// RUN: loom-opt %s --loom-build-train-step="optimizer=adam lr=0.1" --loom-apply-strategy=strategy=tp --loom-partition --canonicalize --cse --loom-bucket-all-reduce | FileCheck %s --check-prefix=TP
// RUN: loom-opt %s --loom-build-train-step="optimizer=adam lr=0.1" --loom-apply-strategy=strategy=dp-tp --loom-partition --canonicalize --cse --loom-bucket-all-reduce | FileCheck %s --check-prefix=DPTP
// RUN: loom-opt %s --loom-build-train-step="optimizer=adam lr=0.1" --loom-apply-strategy=strategy=zero2 --loom-partition --canonicalize --cse --loom-bucket-all-reduce | FileCheck %s --check-prefix=ZERO2
// RUN: loom-opt %s --loom-build-train-step="optimizer=adam lr=0.1" --loom-apply-strategy=strategy=zero3 --loom-partition --canonicalize --cse --loom-bucket-all-reduce | FileCheck %s --check-prefix=ZERO3
// RUN: loom-opt %s --loom-build-train-step="optimizer=adam lr=0.1 number-gradient-rules=true" --loom-apply-strategy=strategy=zero3 --loom-partition --canonicalize --cse --loom-bucket-all-reduce | FileCheck %s --check-prefix=ZERO3R

// A projection (w0) whose softmax keeps it out of tensor parallelism, then
// a Megatron pair (w1 by columns, w2 by rows).
loom.mesh @m ["dp"=2, "tp"=2]
loom.parameter @w0 : tensor<8x8xf32> trainable
loom.parameter @w1 : tensor<8x16xf32> trainable
loom.parameter @w2 : tensor<16x8xf32> trainable
func.func @f(%x: tensor<4x8xf32> {loom.name = "x"}, %w0: tensor<8x8xf32> {loom.param = @w0},
             %w1: tensor<8x16xf32> {loom.param = @w1}, %w2: tensor<16x8xf32> {loom.param = @w2},
             %t: tensor<4x8xf32> {loom.name = "labels"}) -> tensor<f32> {
  %h0 = loom.dot_general %x, %w0 contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %s = loom.softmax %h0 axis = 1 : tensor<4x8xf32>
  %h = loom.dot_general %s, %w1 contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %a = loom.relu %h : tensor<4x16xf32>
  %y = loom.dot_general %a, %w2 contracting_dims = [1] x [0] : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %l = loom.mse_loss %y, %t reduction = mean : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// Data parallel: the loss and one bucket of all three gradients.
// DP-LABEL: func.func @train_step
// DP-NOT: loom.all_gather
// DP: loom.all_reduce %{{.*}} over @m ["dp"] reduction = sum : tensor<f32>
// DP-NOT: loom.all_
// DP: loom.all_reduce %{{.*}}, %{{.*}}, %{{.*}} over @m ["dp"] reduction = sum : tensor<16x8xf32>, tensor<8x16xf32>, tensor<8x8xf32>
// DP-NOT: loom.all_
// DP-NOT: loom.reduce_scatter
// DP: return

// Megatron: exactly one all-reduce forward (the row-parallel output) and
// one backward (the gradient of the column-parallel input).
// TP-LABEL: func.func @train_step
// TP-SAME: loom.param = @w1, loom.sharding = #loom.sharding<@m, [{}, {"tp"}]>
// TP-SAME: loom.param = @w2, loom.sharding = #loom.sharding<@m, [{"tp"}, {}]>
// TP: %[[Y:.*]] = loom.dot_general %{{.*}}, %arg3 contracting_dims = [1] x [0] {{.*}} -> tensor<4x8xf32>
// TP-NEXT: loom.all_reduce %[[Y]] over @m ["tp"] reduction = sum : tensor<4x8xf32>
// TP: loom.mse_loss
// TP-NOT: loom.all_
// TP: %[[DS:.*]] = loom.dot_general %{{.*}}, %arg2 contracting_dims = [1] x [1] {{.*}} -> tensor<4x8xf32>
// TP-NEXT: loom.all_reduce %[[DS]] over @m ["tp"] reduction = sum : tensor<4x8xf32>
// TP-NOT: loom.all_
// TP-NOT: loom.reduce_scatter
// TP: return

// Both: the tp pair as above, the batch and the gradient bucket over dp.
// DPTP-LABEL: func.func @train_step
// DPTP: loom.all_reduce %{{.*}} over @m ["tp"] reduction = sum : tensor<2x8xf32>
// DPTP: loom.all_reduce %{{.*}} over @m ["dp"] reduction = sum : tensor<f32>
// DPTP: loom.all_reduce %{{.*}} over @m ["tp"] reduction = sum : tensor<2x8xf32>
// DPTP: loom.all_reduce %{{.*}}, %{{.*}}, %{{.*}} over @m ["dp"] reduction = sum : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
// DPTP-NOT: loom.all_
// DPTP: return

// ZeRO-2: each gradient reduce-scattered into the optimizer state's shard
// (no all-reduce of gradients), the update on shards, the new parameters
// all-gathered.
// ZERO2-LABEL: func.func @train_step
// ZERO2-COUNT-3: loom.reduce_scatter %{{.*}} over @m ["dp"] dim = 0 reduction = sum : (tensor<8x8xf32>) -> tensor<4x8xf32>
// ZERO2-NOT: loom.all_reduce
// ZERO2-COUNT-3: loom.all_gather %{{.*}} over @m ["dp"] dim = 0 : (tensor<4x8xf32>) -> tensor<8x8xf32>
// ZERO2: return

// ZeRO-3: parameters stored split and gathered before use (once: without
// numbered gradient rules the partitioner cannot tell the backward pass's
// reads, and CSE merges them); activations never move over dp; gradients
// reduce-scattered; nothing gathered after the update.
// ZERO3-LABEL: func.func @train_step
// ZERO3: loom.all_gather %arg1 over @m ["dp"] dim = 0 : (tensor<4x8xf32>) -> tensor<8x8xf32>
// ZERO3: loom.all_gather %arg2 over @m ["dp"] dim = 0
// ZERO3: loom.all_gather %arg3 over @m ["dp"] dim = 0
// ZERO3-NOT: loom.all_gather
// ZERO3-NOT: loom.all_to_all
// ZERO3-COUNT-3: loom.reduce_scatter %{{.*}} over @m ["dp"] dim = 0 reduction = sum
// ZERO3-NOT: loom.all_

// With numbered rules (as loomc builds the step), the weights the backward
// pass reads (w1, w2: the input gradients of their matmuls; w0's input needs
// none) are gathered again there (loom.regather, which CSE keeps apart), so
// the forward pass's gathered copies die after their forward use.
// ZERO3R-LABEL: func.func @train_step
// ZERO3R-COUNT-3: loom.all_gather %arg{{[123]}} over @m ["dp"] dim = 0 :
// ZERO3R: loom.all_gather %arg3 over @m ["dp"] dim = 0 {loom.regather}
// ZERO3R-NEXT: loom.dot_general %{{.*}}, %{{.*}} contracting_dims = [1] x [1]
// ZERO3R: loom.all_gather %arg2 over @m ["dp"] dim = 0 {loom.regather}
// ZERO3R-NEXT: loom.dot_general %{{.*}}, %{{.*}} contracting_dims = [1] x [1]
// ZERO3R-NOT: loom.all_gather
// ZERO3: return
