// RUN: loom-opt %s --split-input-file --loom-compress-gradients | FileCheck %s

// The all-reduce in front of the marked barrier becomes the top-k exchange:
// residual added, 10% of 64 entries (k = 7) selected, positions and values
// gathered over the reduction's axes, summed back; the residual is a new
// argument and result, its parameter every device's block stacked on dim 0
// (4 devices: 4 x 8 rows).
loom.mesh @mesh ["dp"=2, "tp"=2]
loom.parameter @w : tensor<8x8xf32> trainable
// CHECK: loom.parameter @w : tensor<8x8xf32> trainable
// CHECK-NEXT: loom.parameter @w.error_feedback : tensor<32x8xf32> = dense<0.000000e+00> : tensor<32x8xf32> state_of @w
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %[[G:[^:]*]]: tensor<8x8xf32>
// CHECK-SAME: %[[RES:[^:]*]]: tensor<8x8xf32> {loom.param = @w.error_feedback, loom.sharding = #loom.sharding<@mesh, [{"dp", "tp"}, {}]>}
// CHECK-SAME: -> (tensor<8x8xf32>, tensor<8x8xf32> {loom.param = @w.error_feedback, loom.sharding = #loom.sharding<@mesh, [{"dp", "tp"}, {}]>})
// CHECK: %[[ACC:.*]] = loom.add %[[G]], %[[RES]]
// CHECK: %[[FLAT:.*]] = loom.reshape %[[ACC]] : (tensor<8x8xf32>) -> tensor<64xf32>
// CHECK: %[[IDX:.*]] = loom.top_k_indices %[[FLAT]] k = 7 : (tensor<64xf32>) -> tensor<7xi32>
// CHECK: %[[SENT:.*]] = loom.gather %[[FLAT]][%[[IDX]]] axis = 0
// CHECK: %[[AI:.*]] = loom.all_gather %[[IDX]] over @mesh ["dp"] dim = 0 : (tensor<7xi32>) -> tensor<14xi32>
// CHECK: %[[AV:.*]] = loom.all_gather %[[SENT]] over @mesh ["dp"] dim = 0 : (tensor<7xf32>) -> tensor<14xf32>
// CHECK: %[[SUM:.*]] = loom.scatter_add %[[AV]][%[[AI]]] axis = 0 : (tensor<14xf32>, tensor<14xi32>) -> tensor<64xf32>
// CHECK: %[[OUT:.*]] = loom.reshape %[[SUM]] : (tensor<64xf32>) -> tensor<8x8xf32>
// CHECK: %[[MINE:.*]] = loom.scatter_add %[[SENT]][%[[IDX]]] axis = 0
// CHECK: %[[KEPT:.*]] = loom.sub %[[FLAT]], %[[MINE]]
// CHECK: %[[NEW:.*]] = loom.reshape %[[KEPT]] : (tensor<64xf32>) -> tensor<8x8xf32>
// CHECK-NOT: loom.all_reduce
// CHECK-NOT: loom.optimization_barrier
// CHECK: return %[[OUT]], %[[NEW]]
func.func @train_step(%g: tensor<8x8xf32>) -> tensor<8x8xf32>
    attributes {loom.grad_compression = "topk:0.1", loom.partitioned = @mesh} {
  %r = loom.all_reduce %g over @mesh ["dp"] reduction = sum : tensor<8x8xf32>
  %b = loom.optimization_barrier %r : tensor<8x8xf32> {loom.grad_compression = "topk:0.1", loom.param = @w}
  return %b : tensor<8x8xf32>
}

// -----

// A weight reduced per use has one residual per reduction.
loom.mesh @mesh ["dp"=2]
loom.parameter @w : tensor<4x4xf32> trainable
// CHECK: loom.parameter @w.error_feedback : tensor<8x4xf32>
// CHECK: loom.parameter @w.error_feedback.1 : tensor<8x4xf32>
// CHECK-LABEL: func.func @per_use
// CHECK-COUNT-2: loom.top_k_indices {{.*}} k = 16 : (tensor<16xf32>) -> tensor<16xi32>
// CHECK: %[[SUM:.*]] = loom.add
// CHECK: return %[[SUM]], %{{.*}}, %{{.*}} : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
func.func @per_use(%g1: tensor<4x4xf32>, %g2: tensor<4x4xf32>) -> tensor<4x4xf32>
    attributes {loom.grad_compression = "topk:1", loom.partitioned = @mesh} {
  %r1 = loom.all_reduce %g1 over @mesh ["dp"] reduction = sum : tensor<4x4xf32>
  %r2 = loom.all_reduce %g2 over @mesh ["dp"] reduction = sum : tensor<4x4xf32>
  %s = loom.add %r1, %r2 : tensor<4x4xf32>
  %b = loom.optimization_barrier %s : tensor<4x4xf32> {loom.grad_compression = "topk:1", loom.param = @w}
  return %b : tensor<4x4xf32>
}

// -----

// A reduce-scatter (ZeRO): the exchanged sum is sliced to this device's
// block, after a transpose the exchange leaves in place.
loom.mesh @mesh ["dp"=2]
loom.parameter @w : tensor<4x8xf32> trainable
// CHECK-LABEL: func.func @zero
// CHECK: loom.top_k_indices {{.*}} k = 4 : (tensor<32xf32>) -> tensor<4xi32>
// CHECK: %[[S:.*]] = loom.reshape %{{.*}} : (tensor<32xf32>) -> tensor<8x4xf32>
// CHECK: %[[B:.*]] = loom.all_slice %[[S]] over @mesh ["dp"] dim = 0 : (tensor<8x4xf32>) -> tensor<4x4xf32>
// CHECK: loom.transpose %[[B]]
// CHECK-NOT: loom.reduce_scatter
func.func @zero(%g: tensor<8x4xf32>) -> tensor<4x4xf32>
    attributes {loom.grad_compression = "topk:0.1", loom.partitioned = @mesh} {
  %r = loom.reduce_scatter %g over @mesh ["dp"] dim = 0 reduction = sum : (tensor<8x4xf32>) -> tensor<4x4xf32>
  %t = loom.transpose %r permutation = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %b = loom.optimization_barrier %t : tensor<4x4xf32> {loom.grad_compression = "topk:0.1", loom.param = @w}
  return %b : tensor<4x4xf32>
}

// -----

// Nothing reduced in front of the barrier (one device, or a gradient that
// is not partial): only the barrier goes.
loom.mesh @mesh ["dp"=2]
loom.parameter @w : tensor<4xf32> trainable
// CHECK-LABEL: func.func @nothing
// CHECK-NOT: error_feedback
// CHECK-NOT: loom.optimization_barrier
// CHECK: return %arg0
func.func @nothing(%g: tensor<4xf32>) -> tensor<4xf32>
    attributes {loom.grad_compression = "topk:0.5", loom.partitioned = @mesh} {
  %b = loom.optimization_barrier %g : tensor<4xf32> {loom.grad_compression = "topk:0.5", loom.param = @w}
  return %b : tensor<4xf32>
}
