// RUN: loom-opt %s --split-input-file --loom-overlap-collectives | FileCheck %s
// RUN: loom-opt %s --split-input-file --loom-overlap-collectives --loom-convert-to-linalg | FileCheck %s --check-prefix=LOWER

// A gradient bucket reduced while the rest of the backward pass computes:
// the all_reduce moves up to just after its last operand and is started
// there (loom.async); its wait stands before the next collective that may
// start (one in flight). The tp reduction read at once stays blocking. The
// reduce_scatter, hoisted to its operand, is waited for just before its
// reader; the all_gather of the updated weight stays where it is and
// overlaps the other weight's update.
// CHECK-LABEL: func.func @step
// CHECK: %[[G1:.*]] = loom.tanh %arg0
// CHECK-NEXT: %[[B:.*]]:2 = loom.all_reduce %[[G1]], %[[G1]] over @m ["dp"] reduction = sum {loom.async} : tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT: %[[Y:.*]] = loom.neg %arg1
// CHECK-NEXT: %[[W:.*]]:2 = loom.wait %[[B]]#0, %[[B]]#1 : tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT: %[[T:.*]] = loom.all_reduce %[[Y]] over @m ["tp"] reduction = sum : tensor<2xf32>
// CHECK-NEXT: loom.exp %[[T]]
// CHECK-NEXT: %[[G2:.*]] = loom.sigmoid
// CHECK-NEXT: %[[RS:.*]] = loom.reduce_scatter %[[G2]] over @m ["dp"] dim = 0 reduction = sum {loom.async}
// CHECK: loom.sub %arg0, %[[W]]#0
// CHECK: %[[RSW:.*]] = loom.wait %[[RS]]
// CHECK-NEXT: loom.sub %{{.*}}, %[[RSW]]
// CHECK-NEXT: %[[AG:.*]] = loom.all_gather %{{.*}} over @m ["dp"] dim = 0 {loom.async}
// CHECK-NEXT: loom.mul
// CHECK-NEXT: loom.add
// CHECK-NEXT: %[[AGW:.*]] = loom.wait %[[AG]]
// CHECK-NEXT: return %{{.*}}, %[[AGW]]
// The lowering starts each where it stands and completes it at its wait,
// passing the operand again so that it stays alive until then.
// LOWER-LABEL: func.func @step
// LOWER: %[[H:.*]] = call @loom_rt_all_reduce_start_f32(
// LOWER: call @loom_rt_collective_wait_f32(%[[H]],
// LOWER: call @loom_rt_all_reduce_f32(
// LOWER: call @loom_rt_reduce_scatter_start_f32(
// LOWER: call @loom_rt_collective_wait_f32(
// LOWER: call @loom_rt_all_gather_start_f32(
// LOWER: call @loom_rt_collective_wait_f32(
// LOWER: return
loom.mesh @m ["dp"=2, "tp"=2]
func.func @step(%w: tensor<4xf32>, %y: tensor<2xf32>, %v: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<4xf32>)
    attributes {loom.partitioned = @m} {
  %g1 = loom.tanh %w : tensor<4xf32>
  %y2 = loom.neg %y : tensor<2xf32>
  %t = loom.all_reduce %y2 over @m ["tp"] reduction = sum : tensor<2xf32>
  %e = loom.exp %t : tensor<2xf32>
  %g2 = loom.sigmoid %v : tensor<4xf32>
  %more = loom.sqrt %v : tensor<4xf32>
  %b:2 = loom.all_reduce %g1, %g1 over @m ["dp"] reduction = sum : tensor<4xf32>, tensor<4xf32>
  %rs = loom.reduce_scatter %g2 over @m ["dp"] dim = 0 reduction = sum : (tensor<4xf32>) -> tensor<2xf32>
  %sum = loom.reduce_sum %e dims = [0] : (tensor<2xf32>) -> tensor<f32>
  %u1 = loom.sub %w, %b#0 : tensor<4xf32>
  %u2 = loom.add %u1, %b#1 : tensor<4xf32>
  %s = loom.slice %v [0:2] : (tensor<4xf32>) -> tensor<2xf32>
  %u3 = loom.sub %s, %rs : tensor<2xf32>
  %ag = loom.all_gather %u3 over @m ["dp"] dim = 0 : (tensor<2xf32>) -> tensor<4xf32>
  %u4 = loom.mul %u2, %more : tensor<4xf32>
  %u5 = loom.add %u4, %sum : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %u5, %ag : tensor<4xf32>, tensor<4xf32>
}

// -----

// Outside a partitioned function, and over groups of one device, nothing
// changes.
// CHECK-LABEL: func.func @whole
// CHECK-NOT: loom.async
// CHECK-NOT: loom.wait
loom.mesh @m ["dp"=2, "tp"=1]
func.func @whole(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = loom.all_reduce %x over @m ["dp"] reduction = sum : tensor<4xf32>
  %e = loom.exp %x : tensor<4xf32>
  %a = loom.add %r, %e : tensor<4xf32>
  return %a : tensor<4xf32>
}
func.func @one(%x: tensor<4xf32>) -> tensor<4xf32> attributes {loom.partitioned = @m} {
  %r = loom.all_reduce %x over @m ["tp"] reduction = sum : tensor<4xf32>
  %e = loom.exp %x : tensor<4xf32>
  %a = loom.add %r, %e : tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

// Weights' gathers (ZeRO-3: all_gathers of arguments) are prefetched: those
// an op reads first start just before the op that reads the previous ones,
// after their waits; the first at the function's start. The layer norm's
// two gathers are in flight together. The gather of a computed value (%u)
// stays where it is.
// CHECK-LABEL: func.func @fsdp
// CHECK-NEXT: %[[W1:.*]] = loom.all_gather %arg1 over @m ["dp"] dim = 0 {loom.async}
// CHECK-NEXT: %[[E:.*]] = loom.exp %arg0
// CHECK-NEXT: %[[W1W:.*]] = loom.wait %[[W1]]
// CHECK-NEXT: %[[G:.*]] = loom.all_gather %arg2 over @m ["dp"] dim = 0 {loom.async}
// CHECK-NEXT: %[[B:.*]] = loom.all_gather %arg3 over @m ["dp"] dim = 0 {loom.async}
// CHECK-NEXT: %[[Y:.*]] = loom.dot_general %[[E]], %[[W1W]]
// CHECK-NEXT: %[[T:.*]] = loom.tanh %[[Y]]
// CHECK-NEXT: %[[GW:.*]] = loom.wait %[[G]]
// CHECK-NEXT: %[[BW:.*]] = loom.wait %[[B]]
// CHECK-NEXT: %[[W2:.*]] = loom.all_gather %arg4 over @m ["dp"] dim = 0 {loom.async}
// CHECK-NEXT: %[[N:.*]] = loom.layer_norm %[[T]], %[[GW]], %[[BW]]
// CHECK-NEXT: %[[W2W:.*]] = loom.wait %[[W2]]
// CHECK-NEXT: %[[Z:.*]] = loom.dot_general %[[N]], %[[W2W]]
// CHECK-NEXT: %[[U:.*]] = loom.neg %[[Z]]
// CHECK-NEXT: loom.all_gather %[[U]] over @m ["dp"] dim = 0 :
loom.mesh @m ["dp"=2]
func.func @fsdp(%x: tensor<4x4xf32>, %w1: tensor<2x4xf32>, %g: tensor<2xf32>,
                %b: tensor<2xf32>, %w2: tensor<2x4xf32>)
    -> (tensor<4x4xf32>, tensor<8x4xf32>) attributes {loom.partitioned = @m} {
  %e = loom.exp %x : tensor<4x4xf32>
  %W1 = loom.all_gather %w1 over @m ["dp"] dim = 0 : (tensor<2x4xf32>) -> tensor<4x4xf32>
  %y = loom.dot_general %e, %W1 contracting_dims = [1] x [0] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %t = loom.tanh %y : tensor<4x4xf32>
  %G = loom.all_gather %g over @m ["dp"] dim = 0 : (tensor<2xf32>) -> tensor<4xf32>
  %B = loom.all_gather %b over @m ["dp"] dim = 0 : (tensor<2xf32>) -> tensor<4xf32>
  %n = loom.layer_norm %t, %G, %B axis = 1 epsilon = 1.000000e-05 : (tensor<4x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
  %W2 = loom.all_gather %w2 over @m ["dp"] dim = 0 : (tensor<2x4xf32>) -> tensor<4x4xf32>
  %z = loom.dot_general %n, %W2 contracting_dims = [1] x [0] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %u = loom.neg %z : tensor<4x4xf32>
  %ug = loom.all_gather %u over @m ["dp"] dim = 0 : (tensor<4x4xf32>) -> tensor<8x4xf32>
  return %z, %ug : tensor<4x4xf32>, tensor<8x4xf32>
}
