// Elementwise chains fuse; named ops (matmuls, transposes) are left alone.
// RUN: loom-opt %s --split-input-file --loom-convert-to-linalg --loom-fuse-elementwise | FileCheck %s

// CHECK-LABEL: func.func @chain
// CHECK-COUNT-1: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: arith.maximumf
func.func @chain(%x: tensor<16xf32>, %y: tensor<16xf32>) -> tensor<16xf32> {
  %0 = loom.exp %x : tensor<16xf32>
  %1 = loom.add %0, %y : tensor<16xf32>
  %2 = loom.relu %1 : tensor<16xf32>
  return %2 : tensor<16xf32>
}

// -----

// A transpose feeding a matmul stays a transpose (the matmul must reach BLAS).
// CHECK-LABEL: func.func @transpose_into_matmul
// CHECK: linalg.transpose
// CHECK: linalg.batch_matmul
func.func @transpose_into_matmul(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>) -> tensor<2x8x8xf32> {
  %kt = loom.transpose %k permutation = [0, 2, 1] : (tensor<2x8x4xf32>) -> tensor<2x4x8xf32>
  %s = loom.dot_general %q, %kt batching_dims = [0] x [0] contracting_dims = [2] x [1]
      : (tensor<2x8x4xf32>, tensor<2x4x8xf32>) -> tensor<2x8x8xf32>
  return %s : tensor<2x8x8xf32>
}
