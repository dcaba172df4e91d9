// RUN: loom-opt %s --split-input-file --loom-bucket-all-reduce | FileCheck %s
// RUN: loom-opt %s --split-input-file --loom-bucket-all-reduce=bucket-bytes=40 | FileCheck %s --check-prefix=SMALL

// Gradients all-reduced after their scaling by a scalar (as partitioning
// leaves them): each all_reduce moves before the scaling and up to its
// operand; compatible ones fuse into one placed at the last member. The
// "tp" reduction is another kind and stays apart; the loss, used only by
// the return, joins the gradients' bucket.
// CHECK-LABEL: func.func @grads
// CHECK: %[[TP:.*]] = loom.all_reduce %{{.*}} over @m ["tp"] reduction = sum : tensor<2xf32>
// CHECK: %[[G1:.*]] = loom.tanh
// CHECK: %[[G2:.*]] = loom.exp
// CHECK-NEXT: %[[F:.*]]:3 = loom.all_reduce %{{.*}}, %[[G1]], %[[G2]] over @m ["dp"] reduction = sum : tensor<f32>, tensor<4xf32>, tensor<4xf32>
// CHECK-DAG: loom.mul %[[F]]#1, %arg2
// CHECK-DAG: loom.div %[[F]]#2, %arg2
// CHECK-NOT: loom.all_reduce
// CHECK: return %[[F]]#0
// Buckets of at most 40 bytes: the loss and the first gradient (20 bytes),
// then the second gradient alone.
// SMALL-LABEL: func.func @grads
// SMALL: loom.all_reduce %{{.*}} over @m ["tp"]
// SMALL: loom.all_reduce %{{.*}}, %{{.*}} over @m ["dp"] reduction = sum : tensor<f32>, tensor<4xf32>
// SMALL: loom.all_reduce %{{.*}} over @m ["dp"] reduction = sum : tensor<4xf32>
loom.mesh @m ["dp"=2, "tp"=2]
func.func @grads(%x: tensor<4xf32>, %y: tensor<2xf32>, %s: tensor<f32>)
    -> (tensor<f32>, tensor<4xf32>, tensor<4xf32>, tensor<2xf32>)
    attributes {loom.partitioned = @m} {
  %l = loom.reduce_sum %x dims = [0] : (tensor<4xf32>) -> tensor<f32>
  %lr = loom.all_reduce %l over @m ["dp"] reduction = sum : tensor<f32>
  %t = loom.all_reduce %y over @m ["tp"] reduction = sum : tensor<2xf32>
  %g1 = loom.tanh %x : tensor<4xf32>
  %g2 = loom.exp %x : tensor<4xf32>
  %s1 = loom.mul %g1, %s : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %r1 = loom.all_reduce %s1 over @m ["dp"] reduction = sum : tensor<4xf32>
  %s2 = loom.div %g2, %s : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %r2 = loom.all_reduce %s2 over @m ["dp"] reduction = sum : tensor<4xf32>
  return %lr, %r1, %r2, %t : tensor<f32>, tensor<4xf32>, tensor<4xf32>, tensor<2xf32>
}

// -----

// Outside a partitioned function a scalar may differ between devices: the
// scaling stays before the all_reduce. A result used before the next
// all_reduce runs closes the bucket.
// CHECK-LABEL: func.func @unpartitioned
// CHECK: %[[M:.*]] = loom.mul
// CHECK-NEXT: %[[A:.*]] = loom.all_reduce %[[M]] over @m ["dp"] reduction = sum : tensor<4xf32>
// CHECK-NEXT: %[[U:.*]] = loom.exp %[[A]]
// CHECK-NEXT: loom.all_reduce %[[U]] over @m ["dp"] reduction = sum : tensor<4xf32>
loom.mesh @m ["dp"=2]
func.func @unpartitioned(%x: tensor<4xf32>, %s: tensor<f32>) -> tensor<4xf32> {
  %m = loom.mul %x, %s : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %a = loom.all_reduce %m over @m ["dp"] reduction = sum : tensor<4xf32>
  %u = loom.exp %a : tensor<4xf32>
  %b = loom.all_reduce %u over @m ["dp"] reduction = sum : tensor<4xf32>
  return %b : tensor<4xf32>
}

// -----

// A planned step reduces a weight's gradient where it is made, before the
// transpose back to the weight's layout (and a reshape): the relayouts move
// before the all_reduces (they move elements, reduce none), so the two
// gradients stay adjacent and share a bucket.
// CHECK-LABEL: func.func @relayout
// CHECK: %[[T:.*]] = loom.transpose %arg0
// CHECK: %[[R:.*]] = loom.reshape %arg1
// CHECK-NEXT: %[[F:.*]]:2 = loom.all_reduce %[[T]], %[[R]] over @m ["dp"] reduction = sum : tensor<3x2xf32>, tensor<6xf32>
// CHECK-NOT: loom.all_reduce
// CHECK: return %[[F]]#0, %[[F]]#1
loom.mesh @m ["dp"=2]
func.func @relayout(%g1: tensor<2x3xf32>, %g2: tensor<2x3xf32>)
    -> (tensor<3x2xf32>, tensor<6xf32>) attributes {loom.partitioned = @m} {
  %a = loom.all_reduce %g1 over @m ["dp"] reduction = sum : tensor<2x3xf32>
  %t = loom.transpose %a permutation = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %b = loom.all_reduce %g2 over @m ["dp"] reduction = sum : tensor<2x3xf32>
  %r = loom.reshape %b : (tensor<2x3xf32>) -> tensor<6xf32>
  return %t, %r : tensor<3x2xf32>, tensor<6xf32>
}
