//===- gemm.cpp - Row-major batched matmuls as column-major GEMMs ---------===//

#include "loom/gemm.h"

#include <algorithm>

using namespace loom::gemm;

namespace {

/// A row-major matrix view: element (r, c) at r * rowStride + c * colStride.
struct View {
  int64_t rows, cols, rowStride, colStride;
};

/// The column-major matrix a row-major view is stored as: with a unit
/// column stride, its transpose (cols x rows) with leading dimension
/// rowStride (`transposed` = true: the view is op = T of what is stored);
/// with a unit row stride, itself (rows x cols) with leading dimension
/// colStride. Size-1 dimensions may have any stride. False when neither
/// stride is 1.
bool storage(const View &v, bool &transposed, int64_t &ld) {
  if (v.colStride == 1 || v.cols == 1) {
    transposed = true;
    ld = v.rows == 1 ? v.cols : v.rowStride;
    ld = std::max<int64_t>({ld, v.cols, 1});
    return true;
  }
  if (v.rowStride == 1 || v.rows == 1) {
    transposed = false;
    ld = v.cols == 1 ? v.rows : v.colStride;
    ld = std::max<int64_t>({ld, v.rows, 1});
    return true;
  }
  return false;
}

std::string layoutText(const char *what, const View &v) {
  return std::string(what) + " (" + std::to_string(v.rows) + " x " +
         std::to_string(v.cols) + ", strides " + std::to_string(v.rowStride) +
         ", " + std::to_string(v.colStride) + ")";
}

} // namespace

bool loom::gemm::mapBatchMatmul(const Memref3 &a, const Memref3 &b,
                                const Memref3 &c, bool transA, bool transB,
                                bool accumulate, int64_t elementBytes,
                                ColumnMajorGemm &out, std::string &error) {
  return mapBatchMatmul(a, b, c, transA, transB, accumulate, elementBytes,
                        elementBytes, out, error);
}

bool loom::gemm::mapBatchMatmul(const Memref3 &a, const Memref3 &b,
                                const Memref3 &c, bool transA, bool transB,
                                bool accumulate, int64_t operandBytes,
                                int64_t resultBytes, ColumnMajorGemm &out,
                                std::string &error) {
  int64_t batch = c.sizes[0], m = c.sizes[1], n = c.sizes[2];
  int64_t k = transA ? a.sizes[1] : a.sizes[2];
  int64_t am = transA ? a.sizes[2] : a.sizes[1];
  int64_t bk = transB ? b.sizes[2] : b.sizes[1];
  int64_t bn = transB ? b.sizes[1] : b.sizes[2];
  if (am != m || bn != n || bk != k ||
      (a.sizes[0] != batch && a.sizes[0] != 1) ||
      (b.sizes[0] != batch && b.sizes[0] != 1)) {
    error = "batch matmul operands do not fit: A [" +
            std::to_string(a.sizes[0]) + ", " + std::to_string(a.sizes[1]) +
            ", " + std::to_string(a.sizes[2]) + "], B [" +
            std::to_string(b.sizes[0]) + ", " + std::to_string(b.sizes[1]) +
            ", " + std::to_string(b.sizes[2]) + "], C [" +
            std::to_string(batch) + ", " + std::to_string(m) + ", " +
            std::to_string(n) + "]";
    return false;
  }
  out = ColumnMajorGemm();
  out.batch = batch;
  out.accumulate = accumulate;
  // C^T (n x m) = op(B)^T (n x k) * op(A)^T (k x m), column-major.
  out.m = n;
  out.n = m;
  out.k = k;
  View av = transA ? View{m, k, a.strides[2], a.strides[1]}
                   : View{m, k, a.strides[1], a.strides[2]};
  View bv = transB ? View{k, n, b.strides[2], b.strides[1]}
                   : View{k, n, b.strides[1], b.strides[2]};
  View cv{m, n, c.strides[1], c.strides[2]};
  bool cStoredTransposed, bStoredTransposed, aStoredTransposed;
  if (!storage(cv, cStoredTransposed, out.ldc) || !cStoredTransposed) {
    error = "no GEMM writes " + layoutText("the result", cv) +
            ": its columns must be contiguous";
    return false;
  }
  // The first operand is bv^T: stored as bv^T (op N) or as bv (op T).
  if (!storage(bv, bStoredTransposed, out.lda)) {
    error = "no GEMM reads " + layoutText("the right operand", bv);
    return false;
  }
  out.transA = !bStoredTransposed;
  // The second is av^T: stored as av^T (op N) or as av (op T).
  if (!storage(av, aStoredTransposed, out.ldb)) {
    error = "no GEMM reads " + layoutText("the left operand", av);
    return false;
  }
  out.transB = !aStoredTransposed;
  auto base = [&](const Memref3 &d, int64_t bytes) {
    return static_cast<char *>(d.aligned) + d.offset * bytes;
  };
  out.a = base(b, operandBytes);
  out.b = base(a, operandBytes);
  out.c = base(c, resultBytes);
  out.strideA = b.sizes[0] == 1 ? 0 : b.strides[0];
  out.strideB = a.sizes[0] == 1 ? 0 : a.strides[0];
  out.strideC = c.strides[0];
  return true;
}

std::string loom::gemm::describe(const ColumnMajorGemm &g) {
  // In the caller's row-major terms: batch x M x N x K.
  return std::to_string(g.batch) + " x " + std::to_string(g.n) + "x" +
         std::to_string(g.m) + "x" + std::to_string(g.k);
}
