// RUN: loom-opt %s --split-input-file --loom-autocast=precision=bf16 | FileCheck %s
// RUN: loom-opt %s --split-input-file --loom-autocast=precision=fp16 | FileCheck %s --check-prefix=F16
// RUN: loom-opt %s --split-input-file --loom-autocast=precision=fp32 | FileCheck %s --check-prefix=F32
// RUN: loom-opt %s --split-input-file --loom-autocast=precision=bf16 --loom-build-train-step --canonicalize --cse | FileCheck %s --check-prefix=STEP

// PyTorch autocast's rules: the product takes bf16 operands (the f32 master
// weight is cast), the bias joins the product's type, a scalar does not
// promote, softmax stays bf16 (its lowering computes in f32 inside), an f32
// tensor promotes a bf16 one, the loss computes in f32.
loom.parameter @w : tensor<4x8xf32> trainable
loom.parameter @b : tensor<8xf32> trainable
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: (%[[X:.*]]: tensor<2x4xf32> {{.*}}, %[[Y:.*]]: tensor<2x8xf32> {{.*}}, %[[L:.*]]: tensor<2xi64> {{.*}}, %[[W:.*]]: tensor<4x8xf32> {{.*}}, %[[B:.*]]: tensor<8xf32> {{.*}}) -> tensor<f32>
// CHECK-DAG: %[[XL:.*]] = loom.cast %[[X]] : tensor<2x4xf32> to tensor<2x4xbf16>
// CHECK-DAG: %[[WL:.*]] = loom.cast %[[W]] : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK: %[[H:.*]] = loom.dot_general %[[XL]], %[[WL]] contracting_dims = [1] x [0] : (tensor<2x4xbf16>, tensor<4x8xbf16>) -> tensor<2x8xbf16>
// CHECK: %[[BL:.*]] = loom.cast %[[B]] : tensor<8xf32> to tensor<8xbf16>
// CHECK: %[[HB:.*]] = loom.add %[[H]], %[[BL]] : (tensor<2x8xbf16>, tensor<8xbf16>) -> tensor<2x8xbf16>
// CHECK: %[[HALF:.*]] = loom.cast %{{.*}} : tensor<f32> to tensor<bf16>
// CHECK: %[[S:.*]] = loom.mul %[[HB]], %[[HALF]] : (tensor<2x8xbf16>, tensor<bf16>) -> tensor<2x8xbf16>
// CHECK: %[[P:.*]] = loom.softmax %[[S]] axis = 1 : tensor<2x8xbf16>
// CHECK: %[[PF:.*]] = loom.cast %[[P]] : tensor<2x8xbf16> to tensor<2x8xf32>
// CHECK: %[[M:.*]] = loom.add %[[PF]], %[[Y]] : tensor<2x8xf32>
// CHECK: loom.cross_entropy %[[M]], %[[L]] reduction = mean : (tensor<2x8xf32>, tensor<2xi64>) -> tensor<f32>
// F16: loom.dot_general {{.*}} : (tensor<2x4xf16>, tensor<4x8xf16>) -> tensor<2x8xf16>
// F32-NOT: loom.cast

// The step: f32 master weights and AdamW state; the weight's gradient
// comes back through the cast as f32.
// STEP: loom.parameter @w.exp_avg : tensor<4x8xf32>
// STEP-LABEL: func.func @train_step
// STEP: %[[GW:.*]] = loom.dot_general {{.*}} : (tensor<2x4xbf16>, tensor<2x8xbf16>) -> tensor<4x8xbf16>
// STEP: loom.cast %[[GW]] : tensor<4x8xbf16> to tensor<4x8xf32>
func.func @mlp(%x: tensor<2x4xf32> {loom.name = "x"}, %y: tensor<2x8xf32> {loom.name = "y"},
               %labels: tensor<2xi64> {loom.name = "labels"},
               %w: tensor<4x8xf32> {loom.param = @w}, %b: tensor<8xf32> {loom.param = @b}) -> tensor<f32> {
  %h = loom.dot_general %x, %w contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %hb = loom.add %h, %b : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %half = loom.constant dense<0.5> : tensor<f32>
  %s = loom.mul %hb, %half : (tensor<2x8xf32>, tensor<f32>) -> tensor<2x8xf32>
  %p = loom.softmax %s axis = 1 : tensor<2x8xf32>
  %m = loom.add %p, %y : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %l = loom.cross_entropy %m, %labels reduction = mean : (tensor<2x8xf32>, tensor<2xi64>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A function's outputs keep their types: a bf16 result is cast back (the
// sum accumulates in f32 when lowered, rounding once to bf16).
loom.parameter @w : tensor<4x8xf32> trainable
// CHECK-LABEL: func.func @out
// CHECK: %[[H:.*]] = loom.dot_general {{.*}} -> tensor<2x8xbf16>
// CHECK: %[[R:.*]] = loom.relu %[[H]] : tensor<2x8xbf16>
// CHECK: %[[S:.*]] = loom.reduce_sum %[[R]] dims = [0, 1] : (tensor<2x8xbf16>) -> tensor<bf16>
// CHECK: %[[O:.*]] = loom.cast %[[S]] : tensor<bf16> to tensor<f32>
// CHECK: return %[[O]] : tensor<f32>
func.func @out(%x: tensor<2x4xf32> {loom.name = "x"}, %w: tensor<4x8xf32> {loom.param = @w}) -> tensor<f32> {
  %h = loom.dot_general %x, %w contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %r = loom.relu %h : tensor<2x8xf32>
  %s = loom.reduce_sum %r dims = [0, 1] : (tensor<2x8xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

