//===- gemm.h - Row-major batched matmuls as column-major GEMMs -*- C++ -*-===//
//
// Compiled code calls `loom_rt_*batch_matmul_<type>(A, B, C, transA, transB,
// accumulate)` on rank-3 memref descriptors (row-major, any strides):
//
//   C[b] = op(A[b]) * op(B[b])  (+ C[b] when `accumulate`)
//
// with A [B, M, K] ([B, K, M] transposed) and B [B, K, N] ([B, N, K]
// transposed); a batch of 1 in A or B broadcasts. cuBLAS (like every BLAS)
// is column-major: a row-major matrix is the column-major matrix of its
// transpose, so C^T = op(B)^T * op(A)^T, a strided batched GEMM of shape
// (N, M, K) with B first. mapBatchMatmul is that mapping, one pure function
// of the descriptors: the CUDA library calls cuBLAS with what it returns,
// and the unit tests run the same call through OpenBLAS's column-major
// interface against the CPU kernel, without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_GEMM_H
#define LOOM_GEMM_H

#include <cstdint>
#include <string>

namespace loom::gemm {

/// A rank-3 memref descriptor of any element type (MLIR's layout).
struct Memref3 {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizes[3];
  int64_t strides[3];
};

/// One column-major strided batched GEMM:
///   for b < batch: C_b = alpha op(A_b) op(B_b) + beta C_b,
/// C_b of m x n, op(A_b) m x k, op(B_b) k x n, X_b at x + b * strideX
/// elements. Pointers are byte addresses; strides and leading dimensions
/// count elements.
struct ColumnMajorGemm {
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0;
  const char *a = nullptr;
  int64_t lda = 1, strideA = 0;
  const char *b = nullptr;
  int64_t ldb = 1, strideB = 0;
  char *c = nullptr;
  int64_t ldc = 1, strideC = 0;
  int64_t batch = 0;
  /// beta = 1 (accumulate into C) or 0 (C is overwritten, never read).
  bool accumulate = false;
  /// Nothing to compute (an empty C).
  bool empty() const { return batch == 0 || m == 0 || n == 0; }
};

/// The GEMM of `C = op(A) op(B) (+ C)` on row-major descriptors with
/// `elementBytes`-byte elements; false with `error` when a layout has no
/// unit stride in either matrix dimension (no GEMM reads it) or the batch
/// sizes disagree.
bool mapBatchMatmul(const Memref3 &a, const Memref3 &b, const Memref3 &c,
                    bool transA, bool transB, bool accumulate,
                    int64_t elementBytes, ColumnMajorGemm &out,
                    std::string &error);

/// The same with operands of `operandBytes`-byte and a result of
/// `resultBytes`-byte elements (bf16 x bf16 -> f32: 2 and 4).
bool mapBatchMatmul(const Memref3 &a, const Memref3 &b, const Memref3 &c,
                    bool transA, bool transB, bool accumulate,
                    int64_t operandBytes, int64_t resultBytes,
                    ColumnMajorGemm &out, std::string &error);

/// "4 x 128x64x32": batch x M x N x K in the caller's row-major terms, for
/// messages and profiles.
std::string describe(const ColumnMajorGemm &g);

} // namespace loom::gemm

#endif // LOOM_GEMM_H
