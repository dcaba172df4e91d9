// RUN: loom-opt %s --split-input-file --loom-autodiff=wrt=all --canonicalize --cse | FileCheck %s

// Elementwise with numpy broadcasting: the bias gradient is the result
// gradient summed over the broadcast (batch) dimension; tanh' = 1 - y^2.
// CHECK-LABEL: func.func @bias_grad
// CHECK-SAME: -> (tensor<f32>, tensor<2x3xf32> {loom.name = "grad(arg0)"}, tensor<3xf32> {loom.name = "grad(b)"})
// CHECK: %[[Y:.*]] = loom.tanh
// CHECK: %[[YY:.*]] = loom.mul %[[Y]], %[[Y]]
// CHECK: loom.sub %{{.*}}, %[[YY]]
// CHECK: %[[DX:.*]] = loom.mul
// CHECK: %[[DB:.*]] = loom.reduce_sum %[[DX]] dims = [0] : (tensor<2x3xf32>) -> tensor<3xf32>
// CHECK: return %{{.*}}, %[[DX]], %[[DB]]
loom.parameter @b : tensor<3xf32> trainable
func.func @bias(%x: tensor<2x3xf32>, %b: tensor<3xf32> {loom.param = @b}) -> tensor<f32> {
  %y = loom.add %x, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %t = loom.tanh %y : tensor<2x3xf32>
  %l = loom.reduce_sum %t dims = [0, 1] : (tensor<2x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A matmul: dx = dy w^T and dw = x^T dy, both dot_generals without
// transposes.
// CHECK-LABEL: func.func @matmul_grad
// CHECK: %[[DY:.*]] = loom.broadcast %{{.*}} dims = [] : (tensor<f32>) -> tensor<2x3xf32>
// CHECK: loom.dot_general %[[DY]], %arg1 contracting_dims = [1] x [1] : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
// CHECK: loom.dot_general %arg0, %[[DY]] contracting_dims = [0] x [0] : (tensor<2x4xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
// CHECK-NOT: loom.transpose
func.func @matmul(%x: tensor<2x4xf32>, %w: tensor<4x3xf32>) -> tensor<f32> {
  %y = loom.dot_general %x, %w contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  %l = loom.reduce_mean %y dims = [0, 1] : (tensor<2x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Attention scores Q K^T with batch dims, softmax, and a max reduction:
// the gradient rule builds dK as [b, d, t] transposed back, which
// canonicalizes to dS^T Q in K's layout; softmax' is y * (dy - sum(dy * y));
// the max's gradient is shared by ties.
// CHECK-LABEL: func.func @attention_grad
// CHECK: %[[P:.*]] = loom.softmax
// CHECK: %[[HIT:.*]] = loom.compare eq, %[[P]]
// CHECK: loom.select %[[HIT]]
// CHECK: loom.reduce_sum %{{.*}} dims = [2] keepdims
// CHECK: %[[DS:.*]] = loom.mul %[[P]]
// CHECK: loom.dot_general %[[DS]], %arg1 batching_dims = [0] x [0] contracting_dims = [2] x [1] : (tensor<2x3x5xf32>, tensor<2x5x4xf32>) -> tensor<2x3x4xf32>
// CHECK: loom.dot_general %[[DS]], %arg0 batching_dims = [0] x [0] contracting_dims = [1] x [1] : (tensor<2x3x5xf32>, tensor<2x3x4xf32>) -> tensor<2x5x4xf32>
// CHECK-NOT: loom.transpose
func.func @attention(%q: tensor<2x3x4xf32>, %k: tensor<2x5x4xf32>) -> tensor<f32> {
  %s = loom.dot_general %q, %k batching_dims = [0] x [0] contracting_dims = [2] x [2] : (tensor<2x3x4xf32>, tensor<2x5x4xf32>) -> tensor<2x3x5xf32>
  %p = loom.softmax %s axis = 2 : tensor<2x3x5xf32>
  %l = loom.reduce_max %p dims = [0, 1, 2] : (tensor<2x3x5xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Convolution: the input gradient is a stride-1 convolution of the
// zero-dilated output gradient with the channel-swapped, spatially reversed
// filter; the filter gradient convolves the input (channels as batch) with
// the output gradient, strides and dilations swapped.
// CHECK-LABEL: func.func @conv_grad
// CHECK: %[[REV:.*]] = loom.constant dense<[2, 1, 0]> : tensor<3xi64>
// CHECK: loom.transpose %{{.*}} permutation = [0, 2, 1, 3, 4] : (tensor<1x3x2x3x3xf32>) -> tensor<1x2x3x3x3xf32>
// CHECK: loom.gather %{{.*}}[%[[REV]]] axis = 2
// CHECK: %[[WT:.*]] = loom.gather %{{.*}}[%[[REV]]] axis = 3
// CHECK: loom.pad %{{.*}} high = [0, 0, 0, 1, 0, 1]
// CHECK: %[[DIL:.*]] = loom.slice %{{.*}} [0:1, 0:3, 0:5, 0:5] : (tensor<1x3x6x6xf32>) -> tensor<1x3x5x5xf32>
// CHECK: loom.conv %[[DIL]], %[[WT]] strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1 : (tensor<1x3x5x5xf32>, tensor<2x3x3x3xf32>) -> tensor<1x2x5x5xf32>
// CHECK: %[[DW:.*]] = loom.conv %{{.*}}, %{{.*}} strides = [1, 1] padding = [1, 1, 1, 1] dilations = [2, 2] groups = 1 {loom.weight_gradient} : (tensor<2x1x5x5xf32>, tensor<3x1x3x3xf32>) -> tensor<2x3x3x3xf32>
// CHECK: loom.transpose %[[DW]] permutation = [1, 0, 2, 3] : (tensor<2x3x3x3xf32>) -> tensor<3x2x3x3xf32>
func.func @conv(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<f32> {
  %y = loom.conv %x, %w strides = [2, 2] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1 : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32>
  %l = loom.reduce_sum %y dims = [0, 1, 2, 3] : (tensor<1x3x3x3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Max pooling scatters each window's gradient to the element it took.
// CHECK-LABEL: func.func @pool_grad
// CHECK: %[[IDX:.*]] = loom.max_pool_indices %arg0 kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1]
// CHECK: %[[FLAT:.*]] = loom.reshape %[[IDX]] : (tensor<1x2x2x2xi64>) -> tensor<8xi64>
// CHECK: %[[S:.*]] = loom.scatter_add %{{.*}}[%[[FLAT]]] axis = 0 : (tensor<8xf32>, tensor<8xi64>) -> tensor<32xf32>
// CHECK: loom.reshape %[[S]] : (tensor<32xf32>) -> tensor<1x2x4x4xf32>
func.func @pool(%x: tensor<1x2x4x4xf32>) -> tensor<f32> {
  %y = loom.max_pool %x kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1] : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  %l = loom.reduce_sum %y dims = [0, 1, 2, 3] : (tensor<1x2x2x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// An embedding lookup's gradient is a scatter-add into the table; the
// integer indices get no gradient.
// CHECK-LABEL: func.func @embedding_grad
// CHECK-SAME: -> (tensor<f32>, tensor<10x4xf32> {loom.name = "grad(arg0)"})
// CHECK: loom.scatter_add %{{.*}}[%arg1] axis = 0 : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<10x4xf32>
func.func @embedding(%t: tensor<10x4xf32>, %i: tensor<2x3xi64>) -> tensor<f32> {
  %e = loom.gather %t[%i] axis = 0 : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  %l = loom.reduce_sum %e dims = [0, 1, 2] : (tensor<2x3x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Cross-entropy: (softmax(x) - onehot(labels)) / N.
// CHECK-LABEL: func.func @ce_grad
// CHECK: %[[IOTA:.*]] = loom.constant dense<[0, 1, 2]> : tensor<3xi64>
// CHECK: %[[N:.*]] = loom.constant dense<4.000000e+00> : tensor<f32>
// CHECK: loom.div %{{.*}}, %[[N]]
// CHECK: %[[L:.*]] = loom.broadcast %arg1 dims = [0] : (tensor<4xi64>) -> tensor<4x3xi64>
// CHECK: %[[C:.*]] = loom.broadcast %[[IOTA]] dims = [1] : (tensor<3xi64>) -> tensor<4x3xi64>
// CHECK: %[[HOT:.*]] = loom.compare eq, %[[L]], %[[C]]
// CHECK: %[[P:.*]] = loom.softmax %arg0 axis = 1
// CHECK: %[[T:.*]] = loom.cast %[[HOT]] : tensor<4x3xi1> to tensor<4x3xf32>
// CHECK: loom.sub %[[P]], %[[T]]
func.func @ce(%x: tensor<4x3xf32>, %l: tensor<4xi64>) -> tensor<f32> {
  %y = loom.cross_entropy %x, %l reduction = mean : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
  return %y : tensor<f32>
}

// -----

// Layer norm recomputes the normalized input; scale and bias gradients sum
// over the leading dimensions.
// CHECK-LABEL: func.func @ln_grad
// CHECK: %[[MU:.*]] = loom.reduce_mean %arg0 dims = [1] keepdims
// CHECK: %[[XC:.*]] = loom.sub %arg0, %[[MU]]
// CHECK: %[[RSTD:.*]] = loom.rsqrt
// CHECK: %[[XHAT:.*]] = loom.mul %[[XC]], %[[RSTD]]
// CHECK: %[[DX:.*]] = loom.mul %[[RSTD]], %{{.*}} : (tensor<2x1xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
// CHECK: %[[GX:.*]] = loom.mul %{{.*}}, %[[XHAT]]
// CHECK: %[[DG:.*]] = loom.reduce_sum %[[GX]] dims = [0] : (tensor<2x4xf32>) -> tensor<4xf32>
// CHECK: %[[DB:.*]] = loom.reduce_sum %{{.*}} dims = [0] : (tensor<2x4xf32>) -> tensor<4xf32>
// CHECK: return %{{.*}}, %[[DX]], %[[DG]], %[[DB]]
func.func @ln(%x: tensor<2x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<f32> {
  %y = loom.layer_norm %x, %g, %b axis = 1 epsilon = 1.0e-5 : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %l = loom.reduce_sum %y dims = [0, 1] : (tensor<2x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Concat splits the gradient; a strided slice's gradient is dilated with
// zeros and padded back to the input's shape.
// CHECK-LABEL: func.func @slice_concat_grad
// CHECK: %[[A:.*]] = loom.slice %[[G:.*]] [0:4, 0:3] : (tensor<4x5xf32>) -> tensor<4x3xf32>
// CHECK: %[[B:.*]] = loom.slice %[[G]] [0:4, 3:5] : (tensor<4x5xf32>) -> tensor<4x2xf32>
// CHECK: loom.reshape %[[A]] : (tensor<4x3xf32>) -> tensor<4x3x1xf32>
// CHECK: loom.pad %{{.*}} low = [0, 0, 0] high = [0, 0, 1]
// CHECK: %[[DX:.*]] = loom.pad %{{.*}} low = [0, 1] high = [0, 0] value = 0.000000e+00 : f32 : (tensor<4x5xf32>) -> tensor<4x6xf32>
// CHECK: return %{{.*}}, %[[DX]], %[[B]]
func.func @slice_concat(%x: tensor<4x6xf32>, %y: tensor<4x2xf32>) -> tensor<f32> {
  %s = loom.slice %x [0:4, 1:6:2] : (tensor<4x6xf32>) -> tensor<4x3xf32>
  %c = loom.concat %s, %y axis = 1 : (tensor<4x3xf32>, tensor<4x2xf32>) -> tensor<4x5xf32>
  %l = loom.reduce_sum %c dims = [0, 1] : (tensor<4x5xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Values that do not lead to the loss get no backward code, and a value
// used twice gets the sum of both gradients.
// CHECK-LABEL: func.func @pruned_grad
// CHECK-NOT: loom.exp
// CHECK: %[[S:.*]] = loom.sin %arg0
// CHECK: %[[C:.*]] = loom.cos %arg0
// CHECK: loom.add %{{.*}}, %{{.*}} : tensor<3xf32>
func.func @pruned(%x: tensor<3xf32>) -> (tensor<f32>, tensor<3xf32>) {
  %unused = loom.exp %x : tensor<3xf32>
  %s = loom.sin %x : tensor<3xf32>
  %p = loom.mul %s, %x : tensor<3xf32>
  %l = loom.reduce_sum %p dims = [0] : (tensor<3xf32>) -> tensor<f32>
  return %l, %unused : tensor<f32>, tensor<3xf32>
}
