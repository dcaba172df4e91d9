// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-rematerialize | FileCheck %s
// CSE cannot merge a recomputation back into the forward pass:
// RUN: loom-opt %s --split-input-file --verify-diagnostics --loom-rematerialize --cse | FileCheck %s --check-prefix=CSE

// Two segments. What the backward pass reads of each is recomputed from
// the segment's inputs (through a barrier) just before the backward pass
// first reads it: segment 1 first (its value is read first), from segment
// 0's output, which stays; then segment 0 from the arguments.
// CHECK-LABEL: func.func @two_segments
// CHECK-SAME: (%[[X:.*]]: tensor<3xf32>, %[[W:.*]]: tensor<3xf32>)
// CHECK: %[[H:.*]] = loom.mul %[[X]], %[[W]] {loom.remat = 0 : i64}
// CHECK: %[[A:.*]] = loom.tanh %[[H]] {loom.remat = 0 : i64}
// CHECK: %[[B:.*]] = loom.exp %[[A]] {loom.remat = 1 : i64}
// CHECK: %[[L:.*]] = loom.reduce_sum %[[B]]
// CHECK: %[[A1:.*]] = loom.optimization_barrier %[[A]] : tensor<3xf32>
// CHECK: %[[B1:.*]] = loom.exp %[[A1]] {loom.recomputed = 1 : i64}
// CHECK: %[[G1:.*]] = loom.mul %[[B1]], %[[B1]]
// CHECK: %[[IN:.*]]:2 = loom.optimization_barrier %[[X]], %[[W]]
// CHECK: %[[H2:.*]] = loom.mul %[[IN]]#0, %[[IN]]#1 {loom.recomputed = 0 : i64}
// CHECK: %[[A2:.*]] = loom.tanh %[[H2]] {loom.recomputed = 0 : i64}
// CHECK: %[[G2:.*]] = loom.mul %[[G1]], %[[A2]]
// CHECK: return %[[L]], %[[G2]]
// CSE-LABEL: func.func @two_segments
// CSE: loom.tanh {{.*}}loom.remat = 0
// CSE: loom.exp {{.*}}loom.remat = 1
// CSE: loom.exp {{.*}}loom.recomputed = 1
// CSE: loom.tanh {{.*}}loom.recomputed = 0
func.func @two_segments(%x: tensor<3xf32>, %w: tensor<3xf32>) -> (tensor<f32>, tensor<3xf32>) {
  %h = loom.mul %x, %w {loom.remat = 0 : i64} : tensor<3xf32>
  %a = loom.tanh %h {loom.remat = 0 : i64} : tensor<3xf32>
  %b = loom.exp %a {loom.remat = 1 : i64} : tensor<3xf32>
  %l = loom.reduce_sum %b dims = [0] : (tensor<3xf32>) -> tensor<f32>
  %g1 = loom.mul %b, %b : tensor<3xf32>
  %g2 = loom.mul %g1, %a : tensor<3xf32>
  return %l, %g2 : tensor<f32>, tensor<3xf32>
}

// -----

// Only what the backward pass reads is recomputed: %h is not read, but %a
// needs it. Unmarked ops whose operands all come from a segment (here a
// reshape, as a partitioner inserts) join it.
// CHECK-LABEL: func.func @closure
// CHECK: loom.optimization_barrier
// CHECK-NEXT: loom.mul {{.*}}loom.recomputed = 0
// CHECK-NEXT: loom.tanh {{.*}}loom.recomputed = 0
// CHECK-NEXT: loom.reshape {{.*}}loom.recomputed = 0
// CHECK-NEXT: loom.mul
func.func @closure(%x: tensor<4xf32>) -> (tensor<f32>, tensor<2x2xf32>) {
  %h = loom.mul %x, %x {loom.remat = 0 : i64} : tensor<4xf32>
  %a = loom.tanh %h {loom.remat = 0 : i64} : tensor<4xf32>
  %r = loom.reshape %a : (tensor<4xf32>) -> tensor<2x2xf32>
  %l = loom.reduce_sum %r dims = [0, 1] : (tensor<2x2xf32>) -> tensor<f32>
  %g = loom.mul %r, %r : tensor<2x2xf32>
  return %l, %g : tensor<f32>, tensor<2x2xf32>
}

// -----

// Nothing marked: nothing changes.
// CHECK-LABEL: func.func @unmarked
// CHECK-NOT: optimization_barrier
// CHECK-NOT: recomputed
func.func @unmarked(%x: tensor<3xf32>) -> (tensor<f32>, tensor<3xf32>) {
  %a = loom.tanh %x : tensor<3xf32>
  %l = loom.reduce_sum %a dims = [0] : (tensor<3xf32>) -> tensor<f32>
  %g = loom.mul %a, %a : tensor<3xf32>
  return %l, %g : tensor<f32>, tensor<3xf32>
}

// -----

func.func @bad_mark(%x: tensor<3xf32>) -> tensor<f32> {
  // expected-error @+1 {{'loom.remat' must be a non-negative integer}}
  %a = loom.tanh %x {loom.remat = -1 : i64} : tensor<3xf32>
  %l = loom.reduce_sum %a dims = [0] : (tensor<3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
