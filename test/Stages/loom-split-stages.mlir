// RUN: loom-opt %S/Inputs/mlp3.mlir --loom-training-pipeline="loss=none optimizer=sgd lr=0.1 micro-batches=4 stages=2" | FileCheck %s --check-prefix=STEP
// RUN: loom-opt %S/Inputs/mlp3.mlir --loom-training-pipeline="loss=none optimizer=sgd lr=0.1 micro-batches=4 stages=2" --loom-sharding-pipeline="mesh=pp=2 strategy=replicated pipeline=true bucket-mb=0" | FileCheck %s
// RUN: loom-opt %S/Inputs/mlp3.mlir --loom-training-pipeline="loss=none optimizer=sgd lr=0.1 stages=2 stage-boundaries=layer3" | FileCheck %s --check-prefix=BOUNDARY

// The balanced cut puts layer1 (512 flops) on stage 0 and layer2, layer3
// and the loss (512 + 256 + elementwise) on stage 1. The step is one
// micro-batch's template: data without a micro-batch dimension, the loss
// gradient seeded with 1/4; every op names its stage and phase; gradients
// run on their op's stage; updates on their weight's.
// STEP: module attributes {loom.pipeline = {micro_batches = 4 : i64}}
// STEP: func.func @train_step(%arg0: tensor<4x8xf32> {loom.name = "x"}
// STEP-DAG: %[[QUARTER:.*]] = loom.constant dense<2.500000e-01> : tensor<f32>
// STEP: loom.dot_general %arg0, %arg2 {{.*}}{loom.phase = "forward", loom.stage = 0 : i64}
// STEP: loom.dot_general {{.*}}, %arg3 {{.*}}{loom.phase = "forward", loom.stage = 1 : i64}
// STEP: loom.reduce_mean {{.*}}{loom.phase = "forward", loom.stage = 1 : i64}
// STEP: loom.mul %[[QUARTER]], {{.*}}{loom.phase = "backward", loom.stage = 1 : i64}
// The gradient of layer1's input activation: layer2's rule, on stage 1.
// STEP: loom.dot_general {{.*}}, %arg3 contracting_dims = [1] x [1] {loom.phase = "backward", loom.stage = 1 : i64}
// STEP: loom.dot_general %arg0, {{.*}}{loom.phase = "backward", loom.stage = 0 : i64}
// STEP: loom.sub %arg2, {{.*}}{loom.phase = "update", loom.stage = 0 : i64}
// STEP: loom.sub %arg3, {{.*}}{loom.phase = "update", loom.stage = 1 : i64}

// BOUNDARY: loom.tanh {{.*}}{loom.phase = "forward", loom.stage = 0 : i64}
// BOUNDARY: loom.tanh {{.*}}{loom.phase = "forward", loom.stage = 0 : i64}
// BOUNDARY: loom.dot_general {{.*}}%arg4 {{.*}}{loom.phase = "forward", loom.stage = 1 : i64}

// The split: stage 0 sends layer1's activation (send:0), stage 1 receives
// it (recv:0) and keeps it for its weight gradient (stash); stage 1's
// input half sends the activation's gradient back (send_grad:0); stage 0's
// weight half reads it through its input half's stash. Weights, their
// gradients (grad:N, summed over micro-batches by the runtime) and their
// update live on their stage only; the loss is the last stage's; the step
// counter is advanced by every update. 1F1B by default.
// CHECK: module attributes {{[{]}}{{(loom.overlap = (true|false), )?}}loom.pipeline = {actions = {{\[\[}}"F(0,0)", "SEND_F(0,0)", "F(0,1)", "SEND_F(0,1)", "RECV_B(0,0)", "B(0,0)", "F(0,2)", "SEND_F(0,2)", "RECV_B(0,1)", "B(0,1)", "F(0,3)", "SEND_F(0,3)", "RECV_B(0,2)", "B(0,2)", "RECV_B(0,3)", "B(0,3)", "U(0)"],
// CHECK-SAME: ["RECV_F(1,0)", "F(1,0)", "B(1,0)", "SEND_B(1,0)", "RECV_F(1,1)", "F(1,1)", "B(1,1)", "SEND_B(1,1)", "RECV_F(1,2)", "F(1,2)", "B(1,2)", "SEND_B(1,2)", "RECV_F(1,3)", "F(1,3)", "B(1,3)", "SEND_B(1,3)", "U(1)"]],
// CHECK-SAME: bubble = 0.19{{[0-9]*}} : f64, micro_batches = 4 : i64, ranks = 2 : i64, schedule = "1f1b", stages = 2 : i64, virtual_stages = 1 : i64}}
// CHECK: loom.mesh @mesh ["pp"=2]
// CHECK-NOT: func.func @train_step
// CHECK-LABEL: func.func @stage0_forward(
// CHECK-SAME: {loom.name = "x"
// CHECK-SAME: {loom.param = @w1
// CHECK-SAME: -> ({{.*}}{loom.pipe = "stash:0"}, tensor<4x8xf32> {loom.pipe = "send:0"})
// CHECK-SAME: loom.program = {kind = "forward", stage = 0 : i64}
// CHECK: loom.dot_general
// CHECK: loom.tanh
// CHECK-NOT: loom.dot_general
// CHECK: return
// CHECK-LABEL: func.func @stage0_backward_input(%arg0: tensor<4x8xf32> {loom.pipe = "recv_grad:0"}) -> (tensor<4x8xf32> {loom.pipe = "stash:1"})
// CHECK-LABEL: func.func @stage0_backward_weight(
// CHECK-SAME: {loom.pipe = "stash:0"}, {{.*}}{loom.pipe = "stash:1"}, {{.*}}{loom.name = "x"
// CHECK-SAME: -> (tensor<8x8xf32> {loom.pipe = "grad:0"})
// CHECK-LABEL: func.func @stage0_update(
// CHECK-SAME: {loom.pipe = "grad:0"}, %arg1: tensor<8x8xf32> {loom.param = @w1,
// CHECK-SAME: -> (tensor<8x8xf32> {loom.param = @w1{{.*}}, tensor<i64> {loom.param = @optimizer.step
// CHECK-NOT: @w2
// CHECK-LABEL: func.func @stage1_forward(%arg0: tensor<4x8xf32> {loom.pipe = "recv:0"}, {{.*}}{loom.param = @w2{{.*}}{loom.param = @w3{{.*}}{loom.name = "labels"
// CHECK-SAME: tensor<f32> {loom.name = "loss"}
// CHECK-NOT: @w1
// CHECK-LABEL: func.func @stage1_backward_input(
// CHECK-SAME: -> (tensor<4x8xf32> {loom.pipe = "send_grad:0"}
// CHECK-LABEL: func.func @stage1_backward_weight(
// CHECK-SAME: -> (tensor<8x8xf32> {loom.pipe = "grad:0"}, tensor<8x4xf32> {loom.pipe = "grad:1"})
// CHECK-LABEL: func.func @stage1_update(
// CHECK-SAME: {loom.param = @w2{{.*}}{loom.param = @w3
