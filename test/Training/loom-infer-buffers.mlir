// RUN: loom-opt %s --loom-infer-buffers --verify-diagnostics | FileCheck %s

// A causal mask stored as a float initializer is only compared: a buffer.
// The weight stays trainable; an unused parameter is left alone.
// CHECK: loom.parameter @mask : tensor<4x4xf32> = dense<1.000000e+00> : tensor<4x4xf32>{{$}}
// CHECK: loom.parameter @w : tensor<4x4xf32> = dense<5.000000e-01> : tensor<4x4xf32> trainable
// CHECK: loom.parameter @unused : tensor<4xf32> trainable
// expected-remark @+1 {{@mask is a buffer, not a weight: the results depend on it only through values no gradient passes (comparisons, integers)}}
loom.parameter @mask : tensor<4x4xf32> = dense<1.0> : tensor<4x4xf32> trainable
loom.parameter @w : tensor<4x4xf32> = dense<0.5> : tensor<4x4xf32> trainable
loom.parameter @unused : tensor<4xf32> trainable
func.func @attention(%s: tensor<4x4xf32>, %mask: tensor<4x4xf32> {loom.param = @mask},
                     %w: tensor<4x4xf32> {loom.param = @w}, %u: tensor<4xf32> {loom.param = @unused})
    -> tensor<4x4xf32> {
  %zero = loom.constant dense<0.0> : tensor<f32>
  %ninf = loom.constant dense<-1.0e9> : tensor<f32>
  %keep = loom.compare ne, %mask, %zero : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xi1>
  %sw = loom.mul %s, %w : tensor<4x4xf32>
  %m = loom.select %keep, %sw, %ninf : (tensor<4x4xi1>, tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
  %p = loom.softmax %m axis = 1 : tensor<4x4xf32>
  return %p : tensor<4x4xf32>
}
