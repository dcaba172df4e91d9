// f32/f64 batch matmuls (and 16-bit ones into f32, or into 16 bits through an f32 result that is only rounded) on buffers become BLAS calls with transpose flags;
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

// -----

// 16-bit operands with an f32 result (a 16-bit dot_general): one call of the
// mixed entry point, with the operands as they are (no widened copies);
// cuBLAS runs it on tensor cores, the CPU widens for sgemm.
// CHECK: func.func private @loom_rt_batch_matmul_bf16_f32(memref<?x?x?xbf16, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xbf16, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, i64, i64, i64) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @bf16_into_f32
// CHECK: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK: %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK: call @loom_rt_batch_matmul_bf16_f32(%{{.*}}, %{{.*}}, %{{.*}}, %[[ZERO]], %[[ONE]], %[[ZERO]])
func.func @bf16_into_f32(%a: memref<2x3x4xbf16>, %b: memref<2x5x4xbf16>, %c: memref<2x3x5xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<2x3x5xf32>)
  linalg.batch_matmul indexing_maps = [
      affine_map<(b, m, n, k) -> (b, m, k)>,
      affine_map<(b, m, n, k) -> (b, n, k)>,
      affine_map<(b, m, n, k) -> (b, m, n)>]
    ins(%a, %b : memref<2x3x4xbf16>, memref<2x5x4xbf16>) outs(%c : memref<2x3x5xf32>)
  return
}

// -----

// CHECK-LABEL: func.func @f16_into_f32
// CHECK: call @loom_rt_batch_matmul_f16_f32(
func.func @f16_into_f32(%a: memref<2x3x4xf16>, %b: memref<2x4x5xf16>, %c: memref<2x3x5xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<2x3x4xf16>, memref<2x4x5xf16>) outs(%c : memref<2x3x5xf32>)
  return
}

// -----

// 16-bit operands into a 16-bit result accumulate in 16 bits in linalg's
// semantics: no BLAS entry point computes that, so they stay for the loops.
// CHECK-LABEL: func.func @bf16_into_bf16
// CHECK: linalg.batch_matmul
// CHECK-NOT: call
func.func @bf16_into_bf16(%a: memref<2x3x4xbf16>, %b: memref<2x4x5xbf16>, %c: memref<2x3x5xbf16>) {
  linalg.batch_matmul ins(%a, %b : memref<2x3x4xbf16>, memref<2x4x5xbf16>) outs(%c : memref<2x3x5xbf16>)
  return
}

// -----

// A 16-bit product whose f32 result is only rounded to bf16 (how a bf16
// dot_general's result reaches its users): one call of the rounded entry
// point writing the bf16 buffer (f32 sums, rounded once, as the truncf
// did); the f32 buffer, its fill, the rounding pass and the free are gone.
// CHECK: func.func private @loom_rt_batch_matmul_bf16(memref<?x?x?xbf16, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xbf16, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xbf16, strided<[?, ?, ?], offset: ?>>, i64, i64, i64) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @rounded
// CHECK-NOT: memref.alloc() : memref<2x3x5xf32>
// CHECK: %[[OUT:.*]] = memref.alloc() : memref<2x3x5xbf16>
// CHECK: %[[C:.*]] = memref.cast %[[OUT]]
// CHECK: call @loom_rt_batch_matmul_bf16(%{{.*}}, %{{.*}}, %[[C]], %{{.*}}, %{{.*}}, %{{.*}})
// CHECK-NOT: linalg.generic
// CHECK-NOT: memref.dealloc
// CHECK: return %[[OUT]]
func.func @rounded(%a: memref<2x3x4xbf16>, %b: memref<2x4x5xbf16>) -> memref<2x3x5xbf16> {
  %zero = arith.constant 0.0 : f32
  %acc = memref.alloc() : memref<2x3x5xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<2x3x5xf32>)
  linalg.batch_matmul ins(%a, %b : memref<2x3x4xbf16>, memref<2x4x5xbf16>) outs(%acc : memref<2x3x5xf32>)
  %out = memref.alloc() : memref<2x3x5xbf16>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>,
                                   affine_map<(d0, d1, d2) -> (d0, d1, d2)>],
                  iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%acc : memref<2x3x5xf32>) outs(%out : memref<2x3x5xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  }
  memref.dealloc %acc : memref<2x3x5xf32>
  return %out : memref<2x3x5xbf16>
}

// -----

// Kept in f32 when the result is used for more than its rounding (here
// also read by a second op), or when something between the product and the
// rounding writes memory.
// CHECK-LABEL: func.func @also_used
// CHECK: call @loom_rt_batch_matmul_bf16_f32(
// CHECK: linalg.generic
// CHECK-LABEL: func.func @write_between
// CHECK: call @loom_rt_batch_matmul_bf16_f32(
// CHECK: memref.store
// CHECK: linalg.generic
func.func @also_used(%a: memref<2x3x4xbf16>, %b: memref<2x4x5xbf16>, %out: memref<2x3x5xbf16>, %copy: memref<2x3x5xf32>) {
  %zero = arith.constant 0.0 : f32
  %acc = memref.alloc() : memref<2x3x5xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<2x3x5xf32>)
  linalg.batch_matmul ins(%a, %b : memref<2x3x4xbf16>, memref<2x4x5xbf16>) outs(%acc : memref<2x3x5xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>,
                                   affine_map<(d0, d1, d2) -> (d0, d1, d2)>],
                  iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%acc : memref<2x3x5xf32>) outs(%out : memref<2x3x5xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  }
  memref.copy %acc, %copy : memref<2x3x5xf32> to memref<2x3x5xf32>
  memref.dealloc %acc : memref<2x3x5xf32>
  return
}
func.func @write_between(%a: memref<2x3x4xbf16>, %b: memref<2x4x5xbf16>, %out: memref<2x3x5xbf16>) {
  %zero = arith.constant 0.0 : f32
  %z16 = arith.constant 0.0 : bf16
  %c0 = arith.constant 0 : index
  %acc = memref.alloc() : memref<2x3x5xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<2x3x5xf32>)
  linalg.batch_matmul ins(%a, %b : memref<2x3x4xbf16>, memref<2x4x5xbf16>) outs(%acc : memref<2x3x5xf32>)
  memref.store %z16, %a[%c0, %c0, %c0] : memref<2x3x4xbf16>
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>,
                                   affine_map<(d0, d1, d2) -> (d0, d1, d2)>],
                  iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%acc : memref<2x3x5xf32>) outs(%out : memref<2x3x5xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  }
  memref.dealloc %acc : memref<2x3x5xf32>
  return
}
