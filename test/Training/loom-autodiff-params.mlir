// RUN: loom-opt %s --loom-autodiff 2>&1 | FileCheck %s

// By default only arguments bound to trainable parameters are
// differentiated: not data, not buffers. A parameter the loss does not use
// gets a zero gradient and a warning.
// CHECK: warning: the loss does not depend on parameter @unused; its gradient is zero
// CHECK-LABEL: func.func @f_grad
// CHECK-SAME: -> (tensor<f32> {loom.name = "loss"}, tensor<3xf32> {loom.name = "grad(w)"}, tensor<3xf32> {loom.name = "grad(unused)"})
// CHECK: %[[ZERO:.*]] = loom.constant dense<0.000000e+00> : tensor<3xf32>
// CHECK: return %{{.*}}, %{{.*}}, %[[ZERO]]
loom.parameter @w : tensor<3xf32> = dense<1.0> : tensor<3xf32> trainable
loom.parameter @unused : tensor<3xf32> = dense<1.0> : tensor<3xf32> trainable
loom.parameter @stats : tensor<3xf32> = dense<1.0> : tensor<3xf32>
func.func @f(%x: tensor<3xf32> {loom.name = "x"}, %w: tensor<3xf32> {loom.param = @w},
             %u: tensor<3xf32> {loom.param = @unused}, %s: tensor<3xf32> {loom.param = @stats})
    -> (tensor<f32> {loom.name = "loss"}) {
  %a = loom.mul %x, %w : tensor<3xf32>
  %b = loom.mul %a, %s : tensor<3xf32>
  %l = loom.reduce_sum %b dims = [0] : (tensor<3xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
