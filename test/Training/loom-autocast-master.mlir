// RUN: loom-opt %s --loom-autocast=precision=bf16 | FileCheck %s

// A bf16 model gets f32 master weights: the parameter becomes f32 (its
// initial value converted exactly) and is cast back where it is read; the
// model computes in bf16 as before, the loss in f32.
loom.parameter @w : tensor<2x2xbf16> = dense<[[1.5, -2.0], [0.0078125, 3.0]]> : tensor<2x2xbf16> trainable
// CHECK: loom.parameter @w : tensor<2x2xf32> = dense<{{\[\[}}1.500000e+00, -2.000000e+00], [7.812500e-03, 3.000000e+00]]> : tensor<2x2xf32> trainable
// CHECK-LABEL: func.func @bf16_model
// CHECK-SAME: %[[W:[a-z0-9]*]]: tensor<2x2xf32> {loom.param = @w}
// CHECK: %[[WL:.*]] = loom.cast %[[W]] : tensor<2x2xf32> to tensor<2x2xbf16>
// CHECK: loom.dot_general %{{.*}}, %[[WL]] {{.*}} -> tensor<3x2xbf16>
// CHECK: loom.mse_loss {{.*}} : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<f32>
// CHECK: return %{{.*}} : tensor<bf16>
func.func @bf16_model(%x: tensor<3x2xbf16> {loom.name = "x"}, %y: tensor<3x2xbf16> {loom.name = "y"},
                      %w: tensor<2x2xbf16> {loom.param = @w}) -> tensor<bf16> {
  %h = loom.dot_general %x, %w contracting_dims = [1] x [0] : (tensor<3x2xbf16>, tensor<2x2xbf16>) -> tensor<3x2xbf16>
  %l = loom.mse_loss %h, %y reduction = mean : (tensor<3x2xbf16>, tensor<3x2xbf16>) -> tensor<bf16>
  return %l : tensor<bf16>
}
