// RUN: loom-opt %s --loom-build-train-step="optimizer=adam" --loom-apply-strategy=strategy=dp | FileCheck %s --check-prefix=DP
// RUN: loom-opt %s --loom-build-train-step="optimizer=adam" --loom-apply-strategy=strategy=tp | FileCheck %s --check-prefix=TP
// RUN: loom-opt %s --loom-build-train-step="optimizer=adam" --loom-apply-strategy=strategy=dp-tp | FileCheck %s --check-prefix=DPTP
// RUN: loom-opt %s --loom-build-train-step="optimizer=adam" --loom-apply-strategy=strategy=zero1 | FileCheck %s --check-prefix=ZERO1
// RUN: loom-opt %s --loom-build-train-step="optimizer=adam" --loom-apply-strategy=strategy=zero3 | FileCheck %s --check-prefix=ZERO3
// RUN: not loom-opt %s --loom-build-train-step="optimizer=adam" --loom-apply-strategy="strategy=dp dp-axis=data" 2>&1 | FileCheck %s --check-prefix=AXIS
// RUN: not loom-opt %s --loom-build-train-step="optimizer=adam" --loom-apply-strategy=strategy=fsdp 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// A two-layer MLP on a 2x2 mesh.
loom.mesh @m ["dp"=2, "tp"=2]
loom.parameter @w1 : tensor<8x16xf32> trainable
loom.parameter @b1 : tensor<16xf32> trainable
loom.parameter @w2 : tensor<16x8xf32> trainable
func.func @f(%x: tensor<4x8xf32> {loom.name = "x"}, %w1: tensor<8x16xf32> {loom.param = @w1},
             %b1: tensor<16xf32> {loom.param = @b1}, %w2: tensor<16x8xf32> {loom.param = @w2},
             %t: tensor<4x8xf32> {loom.name = "labels"}) -> tensor<f32> {
  %h = loom.dot_general %x, %w1 contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %hb = loom.add %h, %b1 : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %a = loom.relu %hb : tensor<4x16xf32>
  %y = loom.dot_general %a, %w2 contracting_dims = [1] x [0] : (tensor<4x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
  %l = loom.mse_loss %y, %t reduction = mean : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// Data parallel: inputs split on the batch, everything else whole.
// DP-LABEL: func.func @train_step
// DP-SAME: loom.name = "x", loom.sharding = #loom.sharding<@m, [{"dp"}, {}]>
// DP-SAME: loom.param = @w1, loom.sharding = #loom.sharding<@m, [{}, {}]>
// DP-SAME: loom.name = "labels", loom.sharding = #loom.sharding<@m, [{"dp"}, {}]>
// DP-SAME: loom.param = @w1.exp_avg, loom.sharding = #loom.sharding<@m, [{}, {}]>

// Megatron: w1 (and its bias) by columns, w2 by rows; state like weights.
// TP-LABEL: func.func @train_step
// TP-SAME: loom.name = "x", loom.sharding = #loom.sharding<@m, [{}, {}]>
// TP-SAME: loom.param = @w1, loom.sharding = #loom.sharding<@m, [{}, {"tp"}]>
// TP-SAME: loom.param = @b1, loom.sharding = #loom.sharding<@m, [{"tp"}]>
// TP-SAME: loom.param = @w2, loom.sharding = #loom.sharding<@m, [{"tp"}, {}]>
// TP-SAME: loom.param = @w1.exp_avg, loom.sharding = #loom.sharding<@m, [{}, {"tp"}]>

// DPTP-LABEL: func.func @train_step
// DPTP-SAME: loom.name = "x", loom.sharding = #loom.sharding<@m, [{"dp"}, {}]>
// DPTP-SAME: loom.param = @w1, loom.sharding = #loom.sharding<@m, [{}, {"tp"}]>
// DPTP-SAME: loom.param = @w2, loom.sharding = #loom.sharding<@m, [{"tp"}, {}]>

// ZeRO-1: state split over dp as well (on the first dimension that allows
// it); weights as dp-tp.
// ZERO1-LABEL: func.func @train_step
// ZERO1-SAME: loom.param = @w1, loom.sharding = #loom.sharding<@m, [{}, {"tp"}]>
// ZERO1-SAME: loom.param = @w1.exp_avg, loom.sharding = #loom.sharding<@m, [{"dp"}, {"tp"}]>
// ZERO1-SAME: loom.param = @b1.exp_avg, loom.sharding = #loom.sharding<@m, [{"tp", "dp"}]>

// ZeRO-3: weights too.
// ZERO3-LABEL: func.func @train_step
// ZERO3-SAME: loom.param = @w1, loom.sharding = #loom.sharding<@m, [{"dp"}, {"tp"}]>
// ZERO3-SAME: loom.param = @w2, loom.sharding = #loom.sharding<@m, [{"tp", "dp"}, {}]>

// AXIS: error: strategy 'dp' needs a mesh axis "data"; mesh @m has none
// UNKNOWN: error: unknown strategy 'fsdp' (expected dp, tp, dp-tp, zero1, zero2, zero3 or replicated)
