// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-mark-remat | FileCheck %s
// RUN: loom-opt %s --split-input-file --loom-mark-remat=mode=full | FileCheck %s --check-prefix=FULL

// Three repeated layers: each is one segment. mode=full also marks the ops
// after the layers (the loss) as segment 3 + 1 (segment 3 would hold the
// ops before them).
// CHECK-LABEL: func.func @layers
// CHECK: loom.dot_general {{.*}}loom.remat = 0
// CHECK: loom.tanh {{.*}}loom.remat = 0
// CHECK: loom.dot_general {{.*}}loom.remat = 1
// CHECK: loom.tanh {{.*}}loom.remat = 1
// CHECK: loom.dot_general {{.*}}loom.remat = 2
// CHECK: loom.tanh {{.*}}loom.remat = 2
// CHECK-NOT: loom.remat
// CHECK: return
// FULL-LABEL: func.func @layers
// FULL: loom.tanh {{.*}}loom.remat = 2
// FULL: loom.reduce_sum {{.*}}loom.remat = 4
func.func @layers(%x: tensor<4x8xf32>, %w0: tensor<8x8xf32>, %w1: tensor<8x8xf32>, %w2: tensor<8x8xf32>) -> tensor<f32> {
  %h0 = loom.dot_general %x, %w0 contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %a0 = loom.tanh %h0 : tensor<4x8xf32>
  %h1 = loom.dot_general %a0, %w1 contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %a1 = loom.tanh %h1 : tensor<4x8xf32>
  %h2 = loom.dot_general %a1, %w2 contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %a2 = loom.tanh %h2 : tensor<4x8xf32>
  %l = loom.reduce_sum %a2 dims = [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Nothing repeats: mode=layers has nothing to mark and says so.
// CHECK-LABEL: func.func @single
// CHECK-NOT: loom.remat
// FULL-LABEL: func.func @single
// FULL: loom.tanh {{.*}}loom.remat = 0
// expected-warning @+1 {{no repeated layers in @single: nothing to rematerialize}}
func.func @single(%x: tensor<4xf32>) -> tensor<f32> {
  %a = loom.tanh %x : tensor<4xf32>
  %l = loom.reduce_sum %a dims = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
