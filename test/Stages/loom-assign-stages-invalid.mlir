// RUN: not loom-opt %S/Inputs/mlp3.mlir --loom-training-pipeline="loss=none optimizer=sgd stages=9 lr=0.1" 2>&1 | FileCheck %s --check-prefix=MANY
// RUN: not loom-opt %S/Inputs/mlp3.mlir --loom-training-pipeline="loss=none optimizer=sgd lr=0.1 stages=3 stage-boundaries=layer2" 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not loom-opt %S/Inputs/mlp3.mlir --loom-training-pipeline="loss=none optimizer=sgd lr=0.1 stages=2 stage-boundaries=nosuchop" 2>&1 | FileCheck %s --check-prefix=NAME
// RUN: not loom-opt %s --loom-assign-stages="stages=3 boundaries=b,c" 2>&1 | FileCheck %s --check-prefix=SKIP
// RUN: not loom-opt %S/Inputs/mlp3.mlir --loom-training-pipeline="loss=none optimizer=sgd lr=0.1 micro-batches=3 stages=4" --loom-sharding-pipeline="mesh=pp=2 strategy=replicated pipeline=true virtual-stages=2 schedule=interleaved" 2>&1 | FileCheck %s --check-prefix=INTERLEAVED
// RUN: not loom-opt %S/Inputs/mlp3.mlir --loom-training-pipeline="loss=none optimizer=sgd lr=0.1 stages=2 grad-clip=1.0" 2>&1 | FileCheck %s --check-prefix=CLIP
// RUN: not loom-opt %S/Inputs/mlp3.mlir --loom-training-pipeline="loss=none optimizer=sgd lr=0.1 stages=2" --loom-sharding-pipeline="mesh=pp=3 strategy=replicated pipeline=true" 2>&1 | FileCheck %s --check-prefix=RANKS
// Loom's micro-batch is the model's batch (--micro-batches M accumulates M
// of them per step), so M always divides the step's batch; what can fail
// is the micro-batch's split over the data-parallel axis inside a stage.
// RUN: not loom-opt %S/Inputs/mlp3.mlir --loom-training-pipeline="loss=none optimizer=sgd lr=0.1 stages=2 micro-batches=2" --loom-sharding-pipeline="mesh=pp=2,dp=8 strategy=dp pipeline=true" 2>&1 | FileCheck %s --check-prefix=DPBATCH

// MANY: error: loom-assign-stages: cannot cut the model into 9 pipeline stages: it has 8 ops that read activations
// COUNT: error: loom-assign-stages: 1 stage boundaries make 2 stages, the pipeline has 3
// NAME: error: loom-assign-stages: stage boundary 'nosuchop' names no op of the model that reads activations
// INTERLEAVED: error: loom-schedule-pipeline: the interleaved schedule runs micro-batches in groups of the 2 pipeline ranks; 3 micro-batches are not a multiple of 2
// CLIP: error: loom-build-train-step: gradient clipping needs the norm over every stage's gradients; it is not supported with pipeline stages yet
// DPBATCH: error: data-parallel over "dp" (8 devices) needs a batch divisible by 8, but input 'x' has 4
// RANKS: error: loom-split-stages: the step has 2 pipeline stages, but the mesh has 3 pipeline ranks (axis pp) x 1 virtual stages

// A residual connection from stage 0 into stage 2 skips stage 1.
// SKIP: error: loc("r"): loom-assign-stages: this op on stage 2 uses a value made on stage 0 by 'loom.tanh' ('a')
loom.parameter @w1 : tensor<8x8xf32> trainable
loom.parameter @w2 : tensor<8x8xf32> trainable
func.func @forward(%x: tensor<4x8xf32> {loom.name = "x"},
                   %w1: tensor<8x8xf32> {loom.param = @w1},
                   %w2: tensor<8x8xf32> {loom.param = @w2}) -> tensor<f32> {
  %a = loom.tanh %x : tensor<4x8xf32> loc("a")
  %b = loom.dot_general %a, %w1 contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("b")
  %c = loom.dot_general %b, %w2 contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("c")
  %r = loom.add %c, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("r")
  %l = loom.reduce_mean %r dims = [0, 1] : (tensor<4x8xf32>) -> tensor<f32> loc("l")
  return %l : tensor<f32>
}
