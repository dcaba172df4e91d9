// RUN: loom-opt %s --loom-build-train-step="optimizer=sgd lr=0.1 momentum=0.9 weight-decay=0.01 micro-batches=2" --canonicalize --cse | FileCheck %s --check-prefix=SGD
// RUN: loom-opt %s --loom-build-train-step="optimizer=adamw lr-schedule=warmup-cosine warmup-steps=10 total-steps=100 grad-clip=1.0" --canonicalize --cse | FileCheck %s --check-prefix=ADAMW
// RUN: loom-opt %s --loom-build-train-step="optimizer=adam weight-decay=0.1 keep-forward=true" --canonicalize | FileCheck %s --check-prefix=ADAM

// SGD with momentum and two micro-batches: state is a new zero parameter;
// data gains a leading micro-batch dimension; each micro-batch's gradient is
// seeded with 1/2 and the two are summed; L2 decay is added to the gradient;
// buf = 0.9 buf + d; w -= lr * buf.
// SGD: loom.parameter @w.momentum_buffer : tensor<3x2xf32> = dense<0.000000e+00> : tensor<3x2xf32> state_of @w{{$}}
// SGD: loom.parameter @optimizer.step : tensor<i64> = dense<0> : tensor<i64>
// SGD-LABEL: func.func @train_step(%arg0: tensor<2x4x3xf32> {loom.name = "x"}, %arg1: tensor<3x2xf32> {loom.param = @w}, %arg2: tensor<3x2xf32> {loom.param = @w.momentum_buffer}, %arg3: tensor<i64> {loom.param = @optimizer.step})
// SGD-SAME: -> (tensor<f32> {loom.name = "loss"}, tensor<3x2xf32> {loom.param = @w}, tensor<3x2xf32> {loom.param = @w.momentum_buffer}, tensor<i64> {loom.param = @optimizer.step}) attributes {loom.micro_batches = 2 : i64}
// SGD-NOT: func.func @f
// SGD: loom.slice %arg0 [0:1, 0:4, 0:3]
// SGD: %[[G0:.*]] = loom.dot_general %{{.*}}, %{{.*}} contracting_dims = [0] x [0] : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
// SGD: loom.slice %arg0 [1:2, 0:4, 0:3]
// SGD: %[[G1:.*]] = loom.dot_general %{{.*}}, %{{.*}} contracting_dims = [0] x [0] : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
// SGD: %[[G:.*]] = loom.add %[[G0]], %[[G1]]
// SGD: %[[STEP:.*]] = loom.add %arg3, %{{.*}} : tensor<i64>
// SGD: %[[DECAY:.*]] = loom.mul %arg1, %{{.*}} : (tensor<3x2xf32>, tensor<f32>) -> tensor<3x2xf32>
// SGD: %[[D:.*]] = loom.add %[[G]], %[[DECAY]]
// SGD: %[[MB:.*]] = loom.mul %arg2, %{{.*}} : (tensor<3x2xf32>, tensor<f32>) -> tensor<3x2xf32>
// SGD: %[[BUF:.*]] = loom.add %[[MB]], %{{.*}}
// SGD: %[[UPD:.*]] = loom.mul %[[BUF]], %{{.*}}
// SGD: %[[W:.*]] = loom.sub %arg1, %[[UPD]]
// SGD: return %{{.*}}, %[[W]], %[[BUF]], %[[STEP]]

// AdamW with global-norm clipping and a warmup-cosine schedule of the step
// counter; bias corrections in f64 from the incremented step; decoupled
// decay multiplies the weight first.
// ADAMW: loom.parameter @w.exp_avg : tensor<3x2xf32>
// ADAMW: loom.parameter @w.exp_avg_sq : tensor<3x2xf32>
// ADAMW-LABEL: func.func @train_step
// ADAMW: %[[NORM:.*]] = loom.sqrt %{{.*}} : tensor<f32>
// ADAMW: %[[COEF:.*]] = loom.min
// ADAMW: %[[G:.*]] = loom.mul %{{.*}}, %[[COEF]] : (tensor<3x2xf32>, tensor<f32>) -> tensor<3x2xf32>
// ADAMW: %[[T:.*]] = loom.cast %arg4 : tensor<i64> to tensor<f64>
// ADAMW: loom.cos
// ADAMW: %[[WARM:.*]] = loom.compare lt, %[[T]]
// ADAMW: %[[SCHED:.*]] = loom.select %[[WARM]]
// ADAMW: %[[LR:.*]] = loom.mul %[[SCHED]], %{{.*}} : tensor<f64>
// ADAMW: %[[DECAYED:.*]] = loom.mul %arg1, %{{.*}} : (tensor<3x2xf32>, tensor<f32>) -> tensor<3x2xf32>
// ADAMW: %[[M:.*]] = loom.add
// ADAMW: %[[GG:.*]] = loom.mul %[[G]], %[[G]]
// ADAMW: %[[V:.*]] = loom.add
// ADAMW: loom.pow
// ADAMW: loom.pow
// ADAMW: %[[DENOM:.*]] = loom.add %{{.*}}, %{{.*}} : (tensor<3x2xf32>, tensor<f32>) -> tensor<3x2xf32>
// ADAMW: %[[RATIO:.*]] = loom.div %[[M]], %[[DENOM]]
// ADAMW: %[[STEPV:.*]] = loom.mul %{{.*}}, %[[RATIO]]
// ADAMW: %[[NEW:.*]] = loom.sub %[[DECAYED]], %[[STEPV]]
// ADAMW: return %{{.*}}, %[[NEW]], %[[M]], %[[V]], %{{.*}}

// Adam adds L2 decay to the gradient; keep-forward keeps @f.
// ADAM-LABEL: func.func @f(
// ADAM-LABEL: func.func @train_step
// ADAM: %[[DECAY:.*]] = loom.mul %arg1, %{{.*}} : (tensor<3x2xf32>, tensor<f32>) -> tensor<3x2xf32>
// ADAM: %[[G:.*]] = loom.add %{{.*}}, %[[DECAY]] : tensor<3x2xf32>
// ADAM: loom.mul %[[G]], %[[G]]
loom.parameter @w : tensor<3x2xf32> = dense<0.5> : tensor<3x2xf32> trainable
func.func @f(%x: tensor<4x3xf32> {loom.name = "x"}, %w: tensor<3x2xf32> {loom.param = @w}) -> (tensor<f32> {loom.name = "loss"}) {
  %y = loom.dot_general %x, %w contracting_dims = [1] x [0] : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %l = loom.reduce_mean %y dims = [0, 1] : (tensor<4x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
