// f32/f64 batch matmuls on buffers become BLAS calls with transpose flags;
// a zero fill right before folds into beta = 0.
// RUN: loom-opt %s --split-input-file --loom-lower-matmul-to-blas | FileCheck %s

// CHECK: func.func private @loom_rt_batch_matmul_f32(memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, i64, i64, i64) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @plain
// CHECK-NOT: linalg.fill
// CHECK: %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK: %[[A:.*]] = memref.cast %arg0
// CHECK: %[[B:.*]] = memref.cast %arg1
// CHECK: %[[C:.*]] = memref.cast %arg2
// CHECK: call @loom_rt_batch_matmul_f32(%[[A]], %[[B]], %[[C]], %[[ZERO]], %[[ZERO]], %[[ZERO]])
func.func @plain(%a: memref<2x3x4xf32>, %b: memref<2x4x5xf32>, %c: memref<2x3x5xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<2x3x5xf32>)
  linalg.batch_matmul ins(%a, %b : memref<2x3x4xf32>, memref<2x4x5xf32>) outs(%c : memref<2x3x5xf32>)
  return
}

// -----

// Transposed operands set the flags; without a fill, C accumulates.
// CHECK-LABEL: func.func @transposed
// CHECK: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK: call @loom_rt_batch_matmul_f64(%{{.*}}, %{{.*}}, %{{.*}}, %[[ONE]], %[[ONE]], %[[ONE]])
func.func @transposed(%a: memref<2x4x3xf64>, %b: memref<2x5x4xf64>, %c: memref<2x3x5xf64>) {
  linalg.batch_matmul indexing_maps = [
      affine_map<(b, m, n, k) -> (b, k, m)>,
      affine_map<(b, m, n, k) -> (b, n, k)>,
      affine_map<(b, m, n, k) -> (b, m, n)>]
    ins(%a, %b : memref<2x4x3xf64>, memref<2x5x4xf64>) outs(%c : memref<2x3x5xf64>)
  return
}

// -----

// Other element types stay for the loop lowering.
// CHECK-LABEL: func.func @integers
// CHECK: linalg.batch_matmul
// CHECK-NOT: call
func.func @integers(%a: memref<2x3x4xi32>, %b: memref<2x4x5xi32>, %c: memref<2x3x5xi32>) {
  linalg.batch_matmul ins(%a, %b : memref<2x3x4xi32>, memref<2x4x5xi32>) outs(%c : memref<2x3x5xi32>)
  return
}
