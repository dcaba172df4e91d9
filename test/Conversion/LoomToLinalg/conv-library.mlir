// RUN: loom-opt %s --split-input-file --loom-convert-to-linalg="conv-as-gemm=true conv-library=true" | FileCheck %s

// conv-library (the CPU pipeline): a grouped, forward-like f32 or bf16
// convolution (no kernel dimension wider than the output's) is a call to
// the runtime's loom_rt_conv_<type> on flat buffers, its shape as 26
// integers: k, groups, N, C, F, then three entries each (the first k used;
// 1 or 0 past them) for input sizes, kernel, output, strides, padding
// before, after, dilations. The result is the call's buffer.
// CHECK-LABEL: func.func private @loom_rt_conv_f32(memref<?xi64>, memref<?xf32>, memref<?xf32>, memref<?xf32>) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @strided_dilated
// CHECK-DAG: %[[P:.*]] = arith.constant dense<[2, 2, 2, 4, 6, 9, 9, 1, 2, 2, 1, 4, 5, 1, 2, 2, 1, 1, 2, 0, 1, 2, 0, 3, 3, 1]> : tensor<26xi64>
// CHECK-DAG: %[[XF:.*]] = tensor.collapse_shape %arg0 {{.*}} : tensor<2x4x9x9xf32> into tensor<648xf32>
// CHECK-DAG: %[[Y:.*]] = memref.alloc() : memref<240xf32>
// CHECK-DAG: %[[PB:.*]] = bufferization.to_buffer %[[P]] read_only : tensor<26xi64> to memref<26xi64>
// CHECK-DAG: %[[XB:.*]] = bufferization.to_buffer %[[XF]] read_only
// CHECK: call @loom_rt_conv_f32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (memref<?xi64>, memref<?xf32>, memref<?xf32>, memref<?xf32>) -> ()
// CHECK: %[[R:.*]] = bufferization.to_tensor %[[Y]] restrict writable : memref<240xf32> to tensor<240xf32>
// CHECK: tensor.expand_shape %[[R]] {{.*}} output_shape [2, 6, 4, 5]
// CHECK-NOT: linalg.generic
func.func @strided_dilated(%x: tensor<2x4x9x9xf32>, %w: tensor<6x2x2x2xf32>) -> tensor<2x6x4x5xf32> {
  %0 = loom.conv %x, %w strides = [2, 2] padding = [1, 2, 1, 2] dilations = [3, 3] groups = 2
      : (tensor<2x4x9x9xf32>, tensor<6x2x2x2xf32>) -> tensor<2x6x4x5xf32>
  return %0 : tensor<2x6x4x5xf32>
}

// -----

// Depthwise (groups = channels), bf16, 1-D: the call too.
// CHECK-LABEL: func.func @depthwise_bf16
// CHECK: arith.constant dense<[1, 8, 2, 8, 8, 10, 1, 1, 3, 1, 1, 10, 1, 1, 1, 1, 1, 1, 0, 0, 1, 0, 0, 1, 1, 1]> : tensor<26xi64>
// CHECK: call @loom_rt_conv_bf16
// CHECK-NOT: linalg.generic
func.func @depthwise_bf16(%x: tensor<2x8x10xbf16>, %w: tensor<8x1x3xbf16>) -> tensor<2x8x10xbf16> {
  %0 = loom.conv %x, %w strides = [1] padding = [1, 1] dilations = [1] groups = 8
      : (tensor<2x8x10xbf16>, tensor<8x1x3xbf16>) -> tensor<2x8x10xbf16>
  return %0 : tensor<2x8x10xbf16>
}

// -----

// An ungrouped convolution, a weight gradient's shape (the "kernel" is the
// output gradient, wider than the 3 x 3 result) and f64 stay im2col GEMMs.
// CHECK-LABEL: func.func @ungrouped
// CHECK-NOT: call @loom_rt_conv
// CHECK: linalg.batch_matmul
// CHECK-LABEL: func.func @weight_gradient
// CHECK-NOT: call @loom_rt_conv
// CHECK: linalg.batch_matmul
// CHECK-LABEL: func.func @marked_weight_gradient
// CHECK-NOT: call @loom_rt_conv
// CHECK: linalg.generic
// CHECK-LABEL: func.func @f64
// CHECK-NOT: call @loom_rt_conv
// CHECK: linalg.batch_matmul
func.func @ungrouped(%x: tensor<2x3x9x9xf32>, %w: tensor<4x3x2x2xf32>) -> tensor<2x4x4x5xf32> {
  %0 = loom.conv %x, %w strides = [2, 2] padding = [1, 2, 1, 2] dilations = [3, 3] groups = 1
      : (tensor<2x3x9x9xf32>, tensor<4x3x2x2xf32>) -> tensor<2x4x4x5xf32>
  return %0 : tensor<2x4x4x5xf32>
}
func.func @weight_gradient(%xt: tensor<3x2x8x8xf32>, %dyt: tensor<4x2x8x8xf32>) -> tensor<3x4x3x3xf32> {
  %0 = loom.conv %xt, %dyt strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1
      : (tensor<3x2x8x8xf32>, tensor<4x2x8x8xf32>) -> tensor<3x4x3x3xf32>
  return %0 : tensor<3x4x3x3xf32>
}
// Marked by the gradient rule (a depthwise weight gradient: a 1 x 1
// "kernel", the output gradient, padded to a 3 x 3 result): not the call.
func.func @marked_weight_gradient(%xt: tensor<1x64x1x1xf32>, %dyt: tensor<16x4x1x1xf32>) -> tensor<1x16x3x3xf32> {
  %0 = loom.conv %xt, %dyt strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 16 {loom.weight_gradient}
      : (tensor<1x64x1x1xf32>, tensor<16x4x1x1xf32>) -> tensor<1x16x3x3xf32>
  return %0 : tensor<1x16x3x3xf32>
}
func.func @f64(%x: tensor<2x3x9x9xf64>, %w: tensor<4x3x2x2xf64>) -> tensor<2x4x8x8xf64> {
  %0 = loom.conv %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1
      : (tensor<2x3x9x9xf64>, tensor<4x3x2x2xf64>) -> tensor<2x4x8x8xf64>
  return %0 : tensor<2x4x8x8xf64>
}
