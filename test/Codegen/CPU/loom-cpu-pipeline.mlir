// The CPU pipeline ends in the LLVM dialect with a C interface per entry.
// RUN: loom-opt %s --loom-cpu-pipeline | FileCheck %s
// RUN: loom-opt %s --loom-cpu-pipeline | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVMIR

// CHECK: llvm.func @_mlir_ciface_loom_rt_batch_matmul_f32
// CHECK: llvm.func @mlp(
// CHECK: llvm.func @_mlir_ciface_mlp(
// LLVMIR: define void @_mlir_ciface_mlp(ptr %0, ptr %1, ptr %2)
func.func @mlp(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>) -> tensor<8x4xf32> {
  %0 = loom.dot_general %x, %w contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  %1 = loom.gelu %0 : tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}
