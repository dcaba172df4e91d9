// RUN: loom-opt %s --canonicalize --split-input-file | FileCheck %s

// Canonicalizations of the shapes gradient rules build: sums of zero pads
// (the gradient of slicing) and transposed products (the gradient of a
// weight read transposed).

// The gradient of slicing a tensor into consecutive pieces (an LSTM's four
// gates, a recurrence's time steps) is a sum of zero pads, one full-size
// tensor per piece; the sum becomes one concat of the pieces in order,
// whatever the order of the additions.
// CHECK-LABEL: func.func @gates
// CHECK-SAME: (%[[I:.*]]: tensor<8x512xf32>, %[[F:.*]]: tensor<8x512xf32>, %[[G:.*]]: tensor<8x512xf32>, %[[O:.*]]: tensor<8x512xf32>)
// CHECK-NEXT: %[[C:.*]] = loom.concat %[[I]], %[[F]], %[[G]], %[[O]] axis = 1
// CHECK-NEXT: return %[[C]]
func.func @gates(%i: tensor<8x512xf32>, %f: tensor<8x512xf32>, %g: tensor<8x512xf32>, %o: tensor<8x512xf32>) -> tensor<8x2048xf32> {
  %po = loom.pad %o low = [0, 1536] high = [0, 0] value = 0.0 : f32 : (tensor<8x512xf32>) -> tensor<8x2048xf32>
  %pg = loom.pad %g low = [0, 1024] high = [0, 512] value = 0.0 : f32 : (tensor<8x512xf32>) -> tensor<8x2048xf32>
  %a = loom.add %po, %pg : tensor<8x2048xf32>
  %pi = loom.pad %i low = [0, 0] high = [0, 1536] value = 0.0 : f32 : (tensor<8x512xf32>) -> tensor<8x2048xf32>
  %pf = loom.pad %f low = [0, 512] high = [0, 1024] value = 0.0 : f32 : (tensor<8x512xf32>) -> tensor<8x2048xf32>
  %b = loom.add %pi, %pf : tensor<8x2048xf32>
  %c = loom.add %a, %b : tensor<8x2048xf32>
  return %c : tensor<8x2048xf32>
}

// -----

// Slabs that do not reach the ends keep one pad around the concat.
// CHECK-LABEL: func.func @inner
// CHECK-NEXT: %[[C:.*]] = loom.concat %arg1, %arg0 axis = 0
// CHECK-NEXT: %[[P:.*]] = loom.pad %[[C]] low = [1, 0] high = [2, 0]
// CHECK-NEXT: return %[[P]]
func.func @inner(%a: tensor<1x3xf32>, %b: tensor<2x3xf32>) -> tensor<6x3xf32> {
  %pa = loom.pad %a low = [3, 0] high = [2, 0] value = 0.0 : f32 : (tensor<1x3xf32>) -> tensor<6x3xf32>
  %pb = loom.pad %b low = [1, 0] high = [3, 0] value = 0.0 : f32 : (tensor<2x3xf32>) -> tensor<6x3xf32>
  %s = loom.add %pa, %pb : tensor<6x3xf32>
  return %s : tensor<6x3xf32>
}

// -----

// Left alone: overlapping slabs, a gap, a non-zero pad value, pads along
// two dimensions, another term in the sum, a sum whose pads overlap one
// added later (the chain is matched from its root only).
// CHECK-LABEL: func.func @kept
// CHECK-NOT: loom.concat
// CHECK: return
func.func @kept(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>, %y: tensor<4x3xf32>)
    -> (tensor<4x3xf32>, tensor<5x3xf32>, tensor<4x3xf32>, tensor<4x6xf32>, tensor<4x3xf32>, tensor<4x3xf32>) {
  %o1 = loom.pad %a low = [0, 0] high = [2, 0] value = 0.0 : f32 : (tensor<2x3xf32>) -> tensor<4x3xf32>
  %o2 = loom.pad %b low = [1, 0] high = [1, 0] value = 0.0 : f32 : (tensor<2x3xf32>) -> tensor<4x3xf32>
  %overlap = loom.add %o1, %o2 : tensor<4x3xf32>
  %g1 = loom.pad %a low = [0, 0] high = [3, 0] value = 0.0 : f32 : (tensor<2x3xf32>) -> tensor<5x3xf32>
  %g2 = loom.pad %b low = [3, 0] high = [0, 0] value = 0.0 : f32 : (tensor<2x3xf32>) -> tensor<5x3xf32>
  %gap = loom.add %g1, %g2 : tensor<5x3xf32>
  %n1 = loom.pad %a low = [0, 0] high = [2, 0] value = 1.0 : f32 : (tensor<2x3xf32>) -> tensor<4x3xf32>
  %n2 = loom.pad %b low = [2, 0] high = [0, 0] value = 0.0 : f32 : (tensor<2x3xf32>) -> tensor<4x3xf32>
  %nonzero = loom.add %n1, %n2 : tensor<4x3xf32>
  %d1 = loom.pad %a low = [0, 0] high = [2, 3] value = 0.0 : f32 : (tensor<2x3xf32>) -> tensor<4x6xf32>
  %d2 = loom.pad %b low = [2, 3] high = [0, 0] value = 0.0 : f32 : (tensor<2x3xf32>) -> tensor<4x6xf32>
  %twodims = loom.add %d1, %d2 : tensor<4x6xf32>
  %t1 = loom.pad %a low = [0, 0] high = [2, 0] value = 0.0 : f32 : (tensor<2x3xf32>) -> tensor<4x3xf32>
  %t2 = loom.pad %b low = [2, 0] high = [0, 0] value = 0.0 : f32 : (tensor<2x3xf32>) -> tensor<4x3xf32>
  %t12 = loom.add %t1, %t2 : tensor<4x3xf32>
  %other = loom.add %t12, %y : tensor<4x3xf32>
  %s1 = loom.pad %a low = [0, 0] high = [2, 0] value = 0.0 : f32 : (tensor<2x3xf32>) -> tensor<4x3xf32>
  %s2 = loom.pad %b low = [2, 0] high = [0, 0] value = 0.0 : f32 : (tensor<2x3xf32>) -> tensor<4x3xf32>
  %partial = loom.add %s1, %s2 : tensor<4x3xf32>
  %twice = loom.add %partial, %o1 : tensor<4x3xf32>
  return %overlap, %gap, %nonzero, %twodims, %other, %twice : tensor<4x3xf32>, tensor<5x3xf32>, tensor<4x3xf32>, tensor<4x6xf32>, tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// A transpose that swaps a dot_general's free dimensions (a weight
// gradient built as h^T dy, then put in the weight's layout) is the product
// of the swapped operands: dy^T h.
// CHECK-LABEL: func.func @weight_gradient
// CHECK-NEXT: %[[D:.*]] = loom.dot_general %arg1, %arg0 contracting_dims = [0] x [0] : (tensor<8x1536xf32>, tensor<8x512xf32>) -> tensor<1536x512xf32>
// CHECK-NEXT: return %[[D]]
func.func @weight_gradient(%h: tensor<8x512xf32>, %dy: tensor<8x1536xf32>) -> tensor<1536x512xf32> {
  %d = loom.dot_general %h, %dy contracting_dims = [0] x [0] : (tensor<8x512xf32>, tensor<8x1536xf32>) -> tensor<512x1536xf32>
  %t = loom.transpose %d permutation = [1, 0] : (tensor<512x1536xf32>) -> tensor<1536x512xf32>
  return %t : tensor<1536x512xf32>
}

// -----

// With batch dimensions (kept in front); a permutation that also moves a
// batch dimension, or a product used twice, is left alone.
// CHECK-LABEL: func.func @batched
// CHECK-NEXT: %[[D:.*]] = loom.dot_general %arg1, %arg0 batching_dims = [0] x [0] contracting_dims = [1] x [1] : (tensor<2x4x5xf32>, tensor<2x4x3xf32>) -> tensor<2x5x3xf32>
// CHECK-NEXT: %[[K:.*]] = loom.dot_general %arg0, %arg1
// CHECK-NEXT: loom.transpose %[[K]] permutation = [2, 1, 0]
// CHECK: %[[U:.*]] = loom.dot_general %arg0, %arg1
// CHECK-NEXT: loom.transpose %[[U]] permutation = [0, 2, 1]
func.func @batched(%a: tensor<2x4x3xf32>, %b: tensor<2x4x5xf32>) -> (tensor<2x5x3xf32>, tensor<5x3x2xf32>, tensor<2x5x3xf32>, tensor<2x3x5xf32>) {
  %d = loom.dot_general %a, %b batching_dims = [0] x [0] contracting_dims = [1] x [1] : (tensor<2x4x3xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %t = loom.transpose %d permutation = [0, 2, 1] : (tensor<2x3x5xf32>) -> tensor<2x5x3xf32>
  %k = loom.dot_general %a, %b batching_dims = [0] x [0] contracting_dims = [1] x [1] : (tensor<2x4x3xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %kt = loom.transpose %k permutation = [2, 1, 0] : (tensor<2x3x5xf32>) -> tensor<5x3x2xf32>
  %u = loom.dot_general %a, %b batching_dims = [0] x [0] contracting_dims = [1] x [1] : (tensor<2x4x3xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %ut = loom.transpose %u permutation = [0, 2, 1] : (tensor<2x3x5xf32>) -> tensor<2x5x3xf32>
  return %t, %kt, %ut, %u : tensor<2x5x3xf32>, tensor<5x3x2xf32>, tensor<2x5x3xf32>, tensor<2x3x5xf32>
}

// -----

// Ops a plan has split (loom.factors, loom.sharding) are left as planned.
// CHECK-LABEL: func.func @planned
// CHECK: loom.transpose
// CHECK: loom.pad
// CHECK: loom.add
// CHECK-NOT: loom.concat
func.func @planned(%h: tensor<8x512xf32>, %dy: tensor<8x1536xf32>, %a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> (tensor<1536x512xf32>, tensor<4x3xf32>) {
  %d = loom.dot_general %h, %dy contracting_dims = [0] x [0] {loom.factors = [[], [], []]} : (tensor<8x512xf32>, tensor<8x1536xf32>) -> tensor<512x1536xf32>
  %t = loom.transpose %d permutation = [1, 0] : (tensor<512x1536xf32>) -> tensor<1536x512xf32>
  %pa = loom.pad %a low = [0, 0] high = [2, 0] value = 0.0 : f32 : (tensor<2x3xf32>) -> tensor<4x3xf32>
  %pb = loom.pad %b low = [2, 0] high = [0, 0] value = 0.0 : f32 : (tensor<2x3xf32>) -> tensor<4x3xf32>
  %s = loom.add %pa, %pb {loom.factors = [[], []]} : tensor<4x3xf32>
  return %t, %s : tensor<1536x512xf32>, tensor<4x3xf32>
}
