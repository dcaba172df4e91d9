// Round-trip of every loom op: custom form, and generic form back to custom.
// RUN: loom-opt %s --split-input-file | loom-opt --split-input-file | FileCheck %s
// RUN: loom-opt %s --split-input-file --mlir-print-op-generic | loom-opt --split-input-file | FileCheck %s

// Constants, including a resource that keeps bytes out of the op.
// CHECK-LABEL: func.func @constants
func.func @constants() -> (tensor<2xf32>, tensor<i64>, tensor<2xi1>, tensor<2xf32>) {
  // CHECK: loom.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
  %0 = loom.constant dense<[1.0, 2.0]> : tensor<2xf32>
  // CHECK: loom.constant dense<7> : tensor<i64>
  %1 = loom.constant dense<7> : tensor<i64>
  // CHECK: loom.constant dense<[true, false]> : tensor<2xi1>
  %2 = loom.constant dense<[true, false]> : tensor<2xi1>
  // CHECK: loom.constant dense_resource<blob> : tensor<2xf32>
  %3 = loom.constant dense_resource<blob> : tensor<2xf32>
  return %0, %1, %2, %3 : tensor<2xf32>, tensor<i64>, tensor<2xi1>, tensor<2xf32>
}
{-#
  dialect_resources: {
    builtin: {
      blob: "0x040000000000803F00000040"
    }
  }
#-}

// -----

// Parameters: trainable, buffer, external data, no initial value.
// CHECK: loom.parameter @fc1.weight : tensor<2x2xf32> = dense<1.000000e+00> : tensor<2x2xf32> trainable
// CHECK: loom.parameter @bn.running_mean : tensor<4xf32> = dense<0.000000e+00> : tensor<4xf32>
// CHECK: loom.parameter @big : tensor<1024x1024xbf16> = #loom.external<"weights.bin", offset = 4096> trainable
// CHECK: loom.parameter @fresh : tensor<8xf32> trainable
// CHECK-LABEL: func.func @params
// CHECK-SAME: {loom.param = @fc1.weight}
loom.parameter @fc1.weight : tensor<2x2xf32> = dense<1.0> : tensor<2x2xf32> trainable
loom.parameter @"bn.running_mean" : tensor<4xf32> = dense<0.0> : tensor<4xf32>
loom.parameter @big : tensor<1024x1024xbf16> = #loom.external<"weights.bin", offset = 4096> trainable
loom.parameter @fresh : tensor<8xf32> trainable
// CHECK-SAME: %{{.*}}: tensor<2xf32> {loom.name = "input.1"}) -> (tensor<2x2xf32> {loom.name = "y"})
func.func @params(%w: tensor<2x2xf32> {loom.param = @fc1.weight}, %x: tensor<2xf32> {loom.name = "input.1"})
    -> (tensor<2x2xf32> {loom.name = "y"}) {
  return %w : tensor<2x2xf32>
}

// -----

// CHECK-LABEL: func.func @unary
func.func @unary(%x: tensor<4x8xf32>, %i: tensor<4xi32>) {
  // CHECK: loom.neg %{{.*}} : tensor<4x8xf32>
  %0 = loom.neg %x : tensor<4x8xf32>
  // CHECK: loom.abs %{{.*}} : tensor<4xi32>
  %1 = loom.abs %i : tensor<4xi32>
  // CHECK: loom.exp
  %2 = loom.exp %x : tensor<4x8xf32>
  // CHECK: loom.log
  %3 = loom.log %x : tensor<4x8xf32>
  // CHECK: loom.sqrt
  %4 = loom.sqrt %x : tensor<4x8xf32>
  // CHECK: loom.rsqrt
  %5 = loom.rsqrt %x : tensor<4x8xf32>
  // CHECK: loom.tanh
  %6 = loom.tanh %x : tensor<4x8xf32>
  // CHECK: loom.sigmoid
  %7 = loom.sigmoid %x : tensor<4x8xf32>
  // CHECK: loom.relu
  %8 = loom.relu %x : tensor<4x8xf32>
  // CHECK: loom.erf
  %9 = loom.erf %x : tensor<4x8xf32>
  // CHECK: loom.floor
  %f0 = loom.floor %x : tensor<4x8xf32>
  // CHECK: loom.ceil
  %f1 = loom.ceil %x : tensor<4x8xf32>
  // CHECK: loom.round
  %f2 = loom.round %x : tensor<4x8xf32>
  // CHECK: loom.sin
  %f3 = loom.sin %x : tensor<4x8xf32>
  // CHECK: loom.cos
  %f4 = loom.cos %x : tensor<4x8xf32>
  // CHECK: loom.gelu %{{.*}} : tensor<4x8xf32>
  %10 = loom.gelu %x : tensor<4x8xf32>
  // CHECK: loom.gelu %{{.*}} approximate = tanh : tensor<4x8xf32>
  %11 = loom.gelu %x approximate = tanh : tensor<4x8xf32>
  // CHECK: loom.cast %{{.*}} : tensor<4x8xf32> to tensor<4x8xbf16>
  %12 = loom.cast %x : tensor<4x8xf32> to tensor<4x8xbf16>
  // CHECK: loom.cast %{{.*}} : tensor<4xi32> to tensor<4xf64>
  %13 = loom.cast %i : tensor<4xi32> to tensor<4xf64>
  return
}

// -----

// CHECK-LABEL: func.func @binary
func.func @binary(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %s: tensor<f32>, %i: tensor<4xi64>) {
  // CHECK: loom.add %{{.*}}, %{{.*}} : tensor<4x8xf32>
  %0 = loom.add %a, %a : tensor<4x8xf32>
  // CHECK: loom.sub %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = loom.sub %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: loom.mul %{{.*}}, %{{.*}} : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = loom.mul %s, %a : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: loom.div %{{.*}}, %{{.*}} : tensor<4xi64>
  %3 = loom.div %i, %i : tensor<4xi64>
  // CHECK: loom.pow %{{.*}}, %{{.*}} : tensor<4xi64>
  %p = loom.pow %i, %i : tensor<4xi64>
  // CHECK: loom.pow
  %4 = loom.pow %a, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  // CHECK: loom.max
  %5 = loom.max %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: loom.min
  %6 = loom.min %a, %a : tensor<4x8xf32>
  // CHECK: loom.compare lt, %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xi1>
  %7 = loom.compare lt, %a, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xi1>
  // CHECK: loom.compare eq, %{{.*}}, %{{.*}} : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
  %8 = loom.compare eq, %i, %i : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi1>
  // CHECK: loom.select %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %9 = loom.select %7, %a, %s : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return
}

// -----

// CHECK-LABEL: func.func @contraction
func.func @contraction(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>,
                       %q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>) {
  // CHECK: loom.dot_general %{{.*}}, %{{.*}} contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %0 = loom.dot_general %x, %w contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  // CHECK: loom.dot_general %{{.*}}, %{{.*}} batching_dims = [0, 1] x [0, 1] contracting_dims = [3] x [3] : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32>
  %1 = loom.dot_general %q, %k batching_dims = [0, 1] x [0, 1] contracting_dims = [3] x [3]
      : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32>
  return
}

// -----

// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: tensor<4x8xf32>) {
  // CHECK: loom.reduce_sum %{{.*}} dims = [1] keepdims : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %0 = loom.reduce_sum %x dims = [1] keepdims : (tensor<4x8xf32>) -> tensor<4x1xf32>
  // CHECK: loom.reduce_mean %{{.*}} dims = [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  %1 = loom.reduce_mean %x dims = [0, 1] : (tensor<4x8xf32>) -> tensor<f32>
  // CHECK: loom.reduce_max %{{.*}} dims = [0] : (tensor<4x8xf32>) -> tensor<8xf32>
  %2 = loom.reduce_max %x dims = [0] : (tensor<4x8xf32>) -> tensor<8xf32>
  // CHECK: loom.reduce_min %{{.*}} dims = [] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = loom.reduce_min %x dims = [] : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: loom.reduce_prod %{{.*}} dims = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
  %4 = loom.reduce_prod %x dims = [1] : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

// CHECK-LABEL: func.func @windows
func.func @windows(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %dw: tensor<3x1x3x3xf32>,
                   %s: tensor<2x3x10xf32>, %k: tensor<5x3x3xf32>, %v: tensor<1x2x4x4x4xf32>,
                   %vk: tensor<2x2x2x2x2xf32>) {
  // CHECK: loom.conv %{{.*}}, %{{.*}} strides = [1] padding = [1, 1] dilations = [1] groups = 1 : (tensor<2x3x10xf32>, tensor<5x3x3xf32>) -> tensor<2x5x10xf32>
  %c1 = loom.conv %s, %k strides = [1] padding = [1, 1] dilations = [1] groups = 1
      : (tensor<2x3x10xf32>, tensor<5x3x3xf32>) -> tensor<2x5x10xf32>
  // CHECK: loom.conv {{.*}} : (tensor<1x2x4x4x4xf32>, tensor<2x2x2x2x2xf32>) -> tensor<1x2x2x2x2xf32>
  %c3 = loom.conv %v, %vk strides = [2, 2, 2] padding = [0, 0, 0, 0, 0, 0] dilations = [1, 1, 1] groups = 1
      : (tensor<1x2x4x4x4xf32>, tensor<2x2x2x2x2xf32>) -> tensor<1x2x2x2x2xf32>
  // CHECK: loom.max_pool %{{.*}} kernel = [2, 2, 2] {{.*}} : (tensor<1x2x4x4x4xf32>) -> tensor<1x2x3x3x3xf32>
  %p3 = loom.max_pool %v kernel = [2, 2, 2] strides = [1, 1, 1] padding = [0, 0, 0, 0, 0, 0] dilations = [1, 1, 1]
      : (tensor<1x2x4x4x4xf32>) -> tensor<1x2x3x3x3xf32>
  // CHECK: loom.max_pool_indices %{{.*}} kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1] column_major : (tensor<2x3x8x8xf32>) -> tensor<2x3x4x4xi64>
  %mi = loom.max_pool_indices %x kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1] column_major
      : (tensor<2x3x8x8xf32>) -> tensor<2x3x4x4xi64>
  // CHECK: loom.avg_pool %{{.*}} kernel = [3] strides = [2] padding = [1, 1] : (tensor<2x3x10xf32>) -> tensor<2x3x5xf32>
  %p1 = loom.avg_pool %s kernel = [3] strides = [2] padding = [1, 1] : (tensor<2x3x10xf32>) -> tensor<2x3x5xf32>
  // CHECK: loom.conv %{{.*}}, %{{.*}} strides = [2, 2] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1 : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x4x4xf32>
  %0 = loom.conv %x, %w strides = [2, 2] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1
      : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x4x4xf32>
  // CHECK: loom.conv {{.*}} groups = 3 : (tensor<2x3x8x8xf32>, tensor<3x1x3x3xf32>) -> tensor<2x3x4x4xf32>
  %1 = loom.conv %x, %dw strides = [1, 1] padding = [0, 0, 0, 0] dilations = [2, 2] groups = 3
      : (tensor<2x3x8x8xf32>, tensor<3x1x3x3xf32>) -> tensor<2x3x4x4xf32>
  // CHECK: loom.max_pool %{{.*}} kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1] : (tensor<2x3x8x8xf32>) -> tensor<2x3x4x4xf32>
  %2 = loom.max_pool %x kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1]
      : (tensor<2x3x8x8xf32>) -> tensor<2x3x4x4xf32>
  // CHECK: loom.avg_pool %{{.*}} kernel = [3, 3] strides = [1, 1] padding = [1, 1, 1, 1] count_include_pad : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
  %3 = loom.avg_pool %x kernel = [3, 3] strides = [1, 1] padding = [1, 1, 1, 1] count_include_pad
      : (tensor<2x3x8x8xf32>) -> tensor<2x3x8x8xf32>
  // CHECK: loom.avg_pool %{{.*}} kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] : (tensor<2x3x8x8xf32>) -> tensor<2x3x4x4xf32>
  %4 = loom.avg_pool %x kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0]
      : (tensor<2x3x8x8xf32>) -> tensor<2x3x4x4xf32>
  return
}

// -----

// CHECK-LABEL: func.func @shapes
func.func @shapes(%x: tensor<2x3x4xf32>, %b: tensor<4xf32>, %t: tensor<10x4xf32>, %i: tensor<2x3xi64>) {
  // CHECK: loom.reshape %{{.*}} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %0 = loom.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  // CHECK: loom.transpose %{{.*}} permutation = [2, 0, 1] : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %1 = loom.transpose %x permutation = [2, 0, 1] : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  // CHECK: loom.broadcast %{{.*}} dims = [2] : (tensor<4xf32>) -> tensor<2x3x4xf32>
  %2 = loom.broadcast %b dims = [2] : (tensor<4xf32>) -> tensor<2x3x4xf32>
  // CHECK: loom.concat %{{.*}}, %{{.*}} axis = 0 : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<4x3x4xf32>
  %3 = loom.concat %x, %2 axis = 0 : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<4x3x4xf32>
  // CHECK: loom.slice %{{.*}} [0:2, 1:3, 0:4:3] : (tensor<2x3x4xf32>) -> tensor<2x2x2xf32>
  %4 = loom.slice %x [0:2, 1:3, 0:4:3] : (tensor<2x3x4xf32>) -> tensor<2x2x2xf32>
  // CHECK: loom.gather %{{.*}}[%{{.*}}] axis = 0 : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  %5 = loom.gather %t[%i] axis = 0 : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  // CHECK: loom.gather %{{.*}}[%{{.*}}] axis = 1 : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<10x2x3xf32>
  %6 = loom.gather %t[%i] axis = 1 : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<10x2x3xf32>
  // CHECK: loom.scatter_add %{{.*}}[%{{.*}}] axis = 0 : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<10x4xf32>
  %8 = loom.scatter_add %5[%i] axis = 0 : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<10x4xf32>
  // CHECK: loom.top_k_indices %{{.*}} k = 3 : (tensor<40xf32>) -> tensor<3xi32>
  %flat = loom.reshape %t : (tensor<10x4xf32>) -> tensor<40xf32>
  %9 = loom.top_k_indices %flat k = 3 : (tensor<40xf32>) -> tensor<3xi32>
  // CHECK: loom.pad %{{.*}} low = [0, 1, 0] high = [1, 0, 2] value = 0.000000e+00 : f32 : (tensor<2x3x4xf32>) -> tensor<3x4x6xf32>
  %7 = loom.pad %x low = [0, 1, 0] high = [1, 0, 2] value = 0.0 : f32 : (tensor<2x3x4xf32>) -> tensor<3x4x6xf32>
  return
}

// -----

// CHECK-LABEL: func.func @nn
func.func @nn(%x: tensor<2x3x4xf32>, %g: tensor<4xf32>, %img: tensor<2x3x5x5xf32>, %c: tensor<3xf32>,
              %seed: tensor<i64>) {
  // CHECK: loom.softmax %{{.*}} axis = 2 : tensor<2x3x4xf32>
  %0 = loom.softmax %x axis = 2 : tensor<2x3x4xf32>
  // CHECK: loom.log_softmax %{{.*}} axis = 0 : tensor<2x3x4xf32>
  %1 = loom.log_softmax %x axis = 0 : tensor<2x3x4xf32>
  // Epsilons are f64: a float64 model keeps 1e-5 exactly (an f32 attribute held 9.99999974E-6).
  // CHECK: loom.layer_norm %{{.*}}, %{{.*}}, %{{.*}} axis = 2 epsilon = 1.000000e-05 : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  %2 = loom.layer_norm %x, %g, %g axis = 2 epsilon = 1.0e-5 : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  // CHECK: loom.batch_norm_inference {{.*}} epsilon = 1.000000e-03 : (tensor<2x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x5x5xf32>
  %3 = loom.batch_norm_inference %img, %c, %c, %c, %c epsilon = 1.0e-3
      : (tensor<2x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x5x5xf32>
  // CHECK: loom.batch_norm_training {{.*}} : (tensor<2x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>)
  %4:3 = loom.batch_norm_training %img, %c, %c epsilon = 1.0e-5
      : (tensor<2x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x5x5xf32>, tensor<3xf32>, tensor<3xf32>)
  // CHECK: loom.dropout %{{.*}}, %{{.*}} ratio = 1.000000e-01 : (tensor<2x3x4xf32>, tensor<i64>) -> (tensor<2x3x4xf32>, tensor<2x3x4xi1>)
  %5:2 = loom.dropout %x, %seed ratio = 0.1 : (tensor<2x3x4xf32>, tensor<i64>) -> (tensor<2x3x4xf32>, tensor<2x3x4xi1>)
  return
}

// -----

// CHECK-LABEL: func.func @losses
func.func @losses(%logits: tensor<4x10xf32>, %labels: tensor<4xi64>, %w: tensor<10xf32>,
                  %seq: tensor<2x10x3xf32>, %seqlabels: tensor<2x3xi32>, %p: tensor<4x1xf32>) {
  // CHECK: loom.cross_entropy %{{.*}}, %{{.*}} reduction = mean : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  %0 = loom.cross_entropy %logits, %labels reduction = mean : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  // CHECK: loom.cross_entropy %{{.*}}, %{{.*}} weight = %{{.*}} reduction = sum ignore_index = -100 : (tensor<4x10xf32>, tensor<4xi64>, tensor<10xf32>) -> tensor<f32>
  %1 = loom.cross_entropy %logits, %labels weight = %w reduction = sum ignore_index = -100
      : (tensor<4x10xf32>, tensor<4xi64>, tensor<10xf32>) -> tensor<f32>
  // CHECK: loom.cross_entropy %{{.*}}, %{{.*}} reduction = none : (tensor<2x10x3xf32>, tensor<2x3xi32>) -> tensor<2x3xf32>
  %2 = loom.cross_entropy %seq, %seqlabels reduction = none : (tensor<2x10x3xf32>, tensor<2x3xi32>) -> tensor<2x3xf32>
  // CHECK: loom.nll_loss %{{.*}}, %{{.*}} reduction = mean : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  %3 = loom.nll_loss %logits, %labels reduction = mean : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>
  // CHECK: loom.mse_loss %{{.*}}, %{{.*}} reduction = mean : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<f32>
  %4 = loom.mse_loss %p, %p reduction = mean : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<f32>
  // CHECK: loom.mse_loss %{{.*}}, %{{.*}} reduction = none : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
  %5 = loom.mse_loss %p, %p reduction = none : (tensor<4x1xf32>, tensor<4x1xf32>) -> tensor<4x1xf32>
  return
}

// -----

// Meshes and sharding annotations on arguments, results, ops and constraints.
// CHECK: loom.mesh @cluster ["dp"=2, "tp"=4]
// CHECK: loom.mesh @pod ["node"=2 {bandwidth = 5.0e+10, latency = 5.0e-06}, "gpu"=8 {bandwidth = 4.5e+11}]
// CHECK-LABEL: func.func @shardings
// CHECK-SAME: {loom.sharding = #loom.sharding<@cluster, [{"dp"}, {}]>}
// CHECK-SAME: -> (tensor<8x16xf32> {loom.sharding = #loom.sharding<@cluster, [{"dp"}, {"tp"}]>})
loom.mesh @cluster ["dp"=2, "tp"=4]
loom.mesh @pod ["node"=2 {bandwidth = 5.0e10, latency = 5.0e-6}, "gpu"=8 {bandwidth = 4.5e11}]
func.func @shardings(%x: tensor<8x16xf32> {loom.sharding = #loom.sharding<@cluster, [{"dp"}, {}]>})
    -> (tensor<8x16xf32> {loom.sharding = #loom.sharding<@cluster, [{"dp"}, {"tp"}]>}) {
  // CHECK: loom.exp %{{.*}} {loom.sharding = #loom.sharding<@cluster, [{"dp", "tp"}, {}]>}
  %0 = loom.exp %x {loom.sharding = #loom.sharding<@cluster, [{"dp", "tp"}, {}]>} : tensor<8x16xf32>
  // CHECK: loom.relu %{{.*}} {loom.sharding = #loom.sharding<@cluster, [{}, {}], partial = sum {"tp"}>}
  %1 = loom.relu %0 {loom.sharding = #loom.sharding<@cluster, [{}, {}], partial = sum {"tp"}>} : tensor<8x16xf32>
  // CHECK: loom.sharding_constraint %{{.*}} <@cluster, [{"dp"}, {"tp"}]> : tensor<8x16xf32>
  %2 = loom.sharding_constraint %1 <@cluster, [{"dp"}, {"tp"}]> : tensor<8x16xf32>
  // CHECK: loom.cotangent %{{.*}} of %{{.*}} : tensor<8x16xf32>
  %c = loom.cotangent %2 of %1 : tensor<8x16xf32>
  // CHECK: loom.dropout {{.*}} {loom.sharding = [#loom.sharding<@pod, [{"node"}, {"gpu"}]>, #loom.sharding<@pod, [{"node"}, {"gpu"}]>]}
  %s = loom.constant dense<3> : tensor<i64>
  %3:2 = loom.dropout %2, %s ratio = 0.5
      {loom.sharding = [#loom.sharding<@pod, [{"node"}, {"gpu"}]>, #loom.sharding<@pod, [{"node"}, {"gpu"}]>]}
      : (tensor<8x16xf32>, tensor<i64>) -> (tensor<8x16xf32>, tensor<8x16xi1>)
  // CHECK: loom.reduce_max {{.*}} {loom.sharding = #loom.sharding<@cluster, [], partial = max {"dp", "tp"}>}
  %4 = loom.reduce_max %3#0 dims = [0, 1] {loom.sharding = #loom.sharding<@cluster, [], partial = max {"dp", "tp"}>}
      : (tensor<8x16xf32>) -> tensor<f32>
  return %3#0 : tensor<8x16xf32>
}

// -----

// Imported ops Loom cannot express keep their name and attributes.
// CHECK-LABEL: func.func @opaque
func.func @opaque(%b: tensor<1x6x4xf32>, %s: tensor<1x1x6xf32>) -> tensor<3x3xi64> {
  // CHECK: loom.opaque "NonMaxSuppression"(%{{.*}}, %{{.*}}) {center_point_box = 0 : i64} : (tensor<1x6x4xf32>, tensor<1x1x6xf32>) -> tensor<3x3xi64>
  %0 = loom.opaque "NonMaxSuppression"(%b, %s) {center_point_box = 0 : i64}
      : (tensor<1x6x4xf32>, tensor<1x1x6xf32>) -> tensor<3x3xi64>
  return %0 : tensor<3x3xi64>
}

// -----

// Collectives of per-device programs.
// CHECK-LABEL: func.func @collectives
loom.mesh @m2 ["dp"=2, "tp"=4]
func.func @collectives(%x: tensor<8x16xf32>, %y: tensor<16xbf16>) {
  // CHECK: loom.all_reduce %{{.*}} over @m2 ["tp"] reduction = sum : tensor<8x16xf32>
  %0 = loom.all_reduce %x over @m2 ["tp"] reduction = sum : tensor<8x16xf32>
  // CHECK: loom.all_reduce %{{.*}}, %{{.*}} over @m2 ["dp", "tp"] reduction = max : tensor<8x16xf32>, tensor<16xbf16>
  %1:2 = loom.all_reduce %x, %y over @m2 ["dp", "tp"] reduction = max : tensor<8x16xf32>, tensor<16xbf16>
  // CHECK: loom.all_gather %{{.*}} over @m2 ["dp"] dim = 0 : (tensor<8x16xf32>) -> tensor<16x16xf32>
  %2 = loom.all_gather %x over @m2 ["dp"] dim = 0 : (tensor<8x16xf32>) -> tensor<16x16xf32>
  // CHECK: loom.reduce_scatter %{{.*}} over @m2 ["tp", "dp"] dim = 1 reduction = sum : (tensor<8x16xf32>) -> tensor<8x2xf32>
  %3 = loom.reduce_scatter %x over @m2 ["tp", "dp"] dim = 1 reduction = sum : (tensor<8x16xf32>) -> tensor<8x2xf32>
  // CHECK: loom.all_to_all %{{.*}} over @m2 ["tp"] split_dim = 1 concat_dim = 0 : (tensor<8x16xf32>) -> tensor<32x4xf32>
  %4 = loom.all_to_all %x over @m2 ["tp"] split_dim = 1 concat_dim = 0 : (tensor<8x16xf32>) -> tensor<32x4xf32>
  // CHECK: loom.all_slice %{{.*}} over @m2 ["tp"] dim = 1 : (tensor<8x16xf32>) -> tensor<8x4xf32>
  %5 = loom.all_slice %x over @m2 ["tp"] dim = 1 : (tensor<8x16xf32>) -> tensor<8x4xf32>
  // CHECK: loom.send_recv %{{.*}} over @m2 ["tp"] offset = 1 : tensor<8x16xf32>
  %6 = loom.send_recv %x over @m2 ["tp"] offset = 1 : tensor<8x16xf32>
  // CHECK: loom.send_recv %{{.*}} over @m2 ["dp", "tp"] offset = -3 cyclic : tensor<16xbf16>
  %7 = loom.send_recv %y over @m2 ["dp", "tp"] offset = -3 cyclic : tensor<16xbf16>
  return
}

// A started collective and its wait (loom-overlap-collectives).
// CHECK-LABEL: func.func @started
func.func @started(%x: tensor<8x16xf32>, %y: tensor<16xbf16>) -> (tensor<8x16xf32>, tensor<16xbf16>) {
  // CHECK: %[[R:.*]]:2 = loom.all_reduce %{{.*}}, %{{.*}} over @m2 ["dp"] reduction = sum {loom.async} : tensor<8x16xf32>, tensor<16xbf16>
  %0:2 = loom.all_reduce %x, %y over @m2 ["dp"] reduction = sum {loom.async} : tensor<8x16xf32>, tensor<16xbf16>
  %1 = loom.tanh %x : tensor<8x16xf32>
  // CHECK: loom.wait %[[R]]#0, %[[R]]#1 : tensor<8x16xf32>, tensor<16xbf16>
  %2:2 = loom.wait %0#0, %0#1 : tensor<8x16xf32>, tensor<16xbf16>
  %3 = loom.add %1, %2#0 : tensor<8x16xf32>
  return %3, %2#1 : tensor<8x16xf32>, tensor<16xbf16>
}

// CHECK-LABEL: func.func @optimization_barrier
func.func @optimization_barrier(%x: tensor<8x16xf32>, %y: tensor<16xbf16>) -> (tensor<8x16xf32>, tensor<16xbf16>) {
  // CHECK: %{{.*}}:2 = loom.optimization_barrier %{{.*}}, %{{.*}} : tensor<8x16xf32>, tensor<16xbf16>
  %0:2 = loom.optimization_barrier %x, %y : tensor<8x16xf32>, tensor<16xbf16>
  // CHECK: loom.tanh %{{.*}} {loom.remat = 3 : i64}
  %1 = loom.tanh %0#0 {loom.remat = 3 : i64} : tensor<8x16xf32>
  // CHECK: loom.tanh %{{.*}} {loom.recomputed = 3 : i64}
  %2 = loom.tanh %0#0 {loom.recomputed = 3 : i64} : tensor<8x16xf32>
  return %2, %0#1 : tensor<8x16xf32>, tensor<16xbf16>
}
