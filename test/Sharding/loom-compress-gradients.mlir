// RUN: loom-opt %s --split-input-file --loom-compress-gradients | FileCheck %s

// The reduction below the round trip (the partial sum passed through the
// casts): it takes the 16-bit values, the widening cast follows it.
loom.mesh @mesh ["dp"=2]
// CHECK-LABEL: func.func @below
// CHECK: %[[N:.*]] = loom.cast %arg0 {loom.grad_compression = "fp16"} : tensor<8x4xf32> to tensor<8x4xf16>
// CHECK: %[[T:.*]] = loom.transpose %[[N]] {{.*}} -> tensor<4x8xf16>
// CHECK: %[[R:.*]] = loom.reduce_scatter %[[T]] over @mesh ["dp"] dim = 0 reduction = sum : (tensor<4x8xf16>) -> tensor<2x8xf16>
// CHECK: %[[W:.*]] = loom.cast %[[R]] : tensor<2x8xf16> to tensor<2x8xf32>
// CHECK: return %[[W]]
func.func @below(%g: tensor<8x4xf32>) -> tensor<2x8xf32> {
  %n = loom.cast %g {loom.grad_compression = "fp16"} : tensor<8x4xf32> to tensor<8x4xf16>
  %w = loom.cast %n : tensor<8x4xf16> to tensor<8x4xf32>
  %t = loom.transpose %w permutation = [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %r = loom.reduce_scatter %t over @mesh ["dp"] dim = 0 reduction = sum : (tensor<4x8xf32>) -> tensor<2x8xf32>
  return %r : tensor<2x8xf32>
}

// -----

// The reduction above the narrowing cast: the cast moves before it.
loom.mesh @mesh ["dp"=2]
// CHECK-LABEL: func.func @above
// CHECK: %[[N:.*]] = loom.cast %arg0 {loom.grad_compression = "bf16"} : tensor<8xf32> to tensor<8xbf16>
// CHECK: %[[R:.*]] = loom.all_reduce %[[N]] over @mesh ["dp"] reduction = sum : tensor<8xbf16>
// CHECK: %[[W:.*]] = loom.cast %[[R]] : tensor<8xbf16> to tensor<8xf32>
// CHECK: return %[[W]]
func.func @above(%g: tensor<8xf32>) -> tensor<8xf32> {
  %r = loom.all_reduce %g over @mesh ["dp"] reduction = sum : tensor<8xf32>
  %n = loom.cast %r {loom.grad_compression = "bf16"} : tensor<8xf32> to tensor<8xbf16>
  %w = loom.cast %n : tensor<8xbf16> to tensor<8xf32>
  return %w : tensor<8xf32>
}

// -----

// No reduction (one device), or a max reduction: left as it is.
loom.mesh @mesh ["dp"=2]
// CHECK-LABEL: func.func @left
// CHECK: loom.cast %arg0 {loom.grad_compression = "fp16"} : tensor<8xf32> to tensor<8xf16>
// CHECK: loom.all_reduce %{{.*}} over @mesh ["dp"] reduction = max : tensor<8xf32>
func.func @left(%g: tensor<8xf32>) -> tensor<8xf32> {
  %n = loom.cast %g {loom.grad_compression = "fp16"} : tensor<8xf32> to tensor<8xf16>
  %w = loom.cast %n : tensor<8xf16> to tensor<8xf32>
  %r = loom.all_reduce %w over @mesh ["dp"] reduction = max : tensor<8xf32>
  return %r : tensor<8xf32>
}
