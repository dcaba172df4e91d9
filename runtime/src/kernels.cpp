//===- kernels.cpp - BLAS-backed kernels for compiled Loom code -----------===//

#include "loom/kernels.h"
#include "loom/runtime.h"

#include <cblas.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

// OpenBLAS extensions (declared in its cblas.h on Debian, repeated here so
// that other CBLAS headers work too).
extern "C" int openblas_get_num_threads(void);
extern "C" void openblas_set_num_threads(int);

namespace {

/// A matrix view: element (r, c) at data[r * rowStride + c * colStride].
template <typename T>
struct View {
  T *data;
  int64_t rows, cols, rowStride, colStride;
  T at(int64_t r, int64_t c) const { return data[r * rowStride + c * colStride]; }
};

/// How to hand a view to row-major BLAS: as is (unit column stride) or
/// transposed (unit row stride); false if neither works.
template <typename T>
bool blasLayout(const View<T> &v, bool &transposed, int64_t &ld) {
  if (v.colStride == 1 || v.cols == 1) {
    transposed = false;
    ld = v.rows == 1 ? v.cols : v.rowStride;
    if (ld < v.cols)
      ld = v.cols;
    return true;
  }
  if (v.rowStride == 1 || v.rows == 1) {
    transposed = true;
    ld = v.cols == 1 ? v.rows : v.colStride;
    if (ld < v.rows)
      ld = v.rows;
    return true;
  }
  return false;
}

void gemm(bool ta, bool tb, int m, int n, int k, const float *a, int lda,
          const float *b, int ldb, float beta, float *c, int ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
              tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a, lda, b, ldb,
              beta, c, ldc);
}

void gemm(bool ta, bool tb, int m, int n, int k, const double *a, int lda,
          const double *b, int ldb, double beta, double *c, int ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
              tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0, a, lda, b, ldb,
              beta, c, ldc);
}

/// Below this many multiply-adds per product, OpenBLAS's threads cost more
/// (synchronization, spinning) than they save: measured 10x slower for the
/// 128x64x128 products of attention on 2 cores.
constexpr int64_t kThreadedGemmWork = int64_t(1) << 22;

/// Runs small products on one BLAS thread, restoring the count after.
struct BlasThreads {
  explicit BlasThreads(int64_t work) {
    if (work < kThreadedGemmWork) {
      saved = openblas_get_num_threads();
      if (saved > 1)
        openblas_set_num_threads(1);
    }
  }
  ~BlasThreads() {
    if (saved > 1)
      openblas_set_num_threads(saved);
  }
  int saved = 0;
};

template <typename T, typename Desc>
void batchMatmul(Desc *a, Desc *b, Desc *c, bool transA, bool transB,
                 bool accumulate) {
  int64_t batch = c->sizes[0], m = c->sizes[1], n = c->sizes[2];
  int64_t k = transA ? a->sizes[1] : a->sizes[2];
  if (batch == 0 || m == 0 || n == 0)
    return;
  if (k == 0) {
    if (!accumulate)
      for (int64_t i = 0; i < batch; ++i)
        for (int64_t r = 0; r < m; ++r)
          for (int64_t col = 0; col < n; ++col)
            c->aligned[c->offset + i * c->strides[0] + r * c->strides[1] +
                       col * c->strides[2]] = T(0);
    return;
  }
  BlasThreads threads(m * n * k);
  for (int64_t i = 0; i < batch; ++i) {
    T *ap = a->aligned + a->offset + i * a->strides[0];
    T *bp = b->aligned + b->offset + i * b->strides[0];
    T *cp = c->aligned + c->offset + i * c->strides[0];
    // Logical A is [m, k], B is [k, n] whatever the storage.
    View<T> av = transA ? View<T>{ap, m, k, a->strides[2], a->strides[1]}
                        : View<T>{ap, m, k, a->strides[1], a->strides[2]};
    View<T> bv = transB ? View<T>{bp, k, n, b->strides[2], b->strides[1]}
                        : View<T>{bp, k, n, b->strides[1], b->strides[2]};
    View<T> cv{cp, m, n, c->strides[1], c->strides[2]};
    bool ta, tb, tc;
    int64_t lda, ldb, ldc;
    if (blasLayout(av, ta, lda) && blasLayout(bv, tb, ldb) &&
        blasLayout(cv, tc, ldc) && !tc) {
      gemm(ta, tb, static_cast<int>(m), static_cast<int>(n),
           static_cast<int>(k), ap, static_cast<int>(lda), bp,
           static_cast<int>(ldb), accumulate ? T(1) : T(0), cp,
           static_cast<int>(ldc));
      continue;
    }
    for (int64_t r = 0; r < m; ++r)
      for (int64_t col = 0; col < n; ++col) {
        T acc = accumulate ? cv.at(r, col) : T(0);
        for (int64_t x = 0; x < k; ++x)
          acc += av.at(r, x) * bv.at(x, col);
        cp[r * cv.rowStride + col * cv.colStride] = acc;
      }
  }
}

} // namespace

extern "C" void _mlir_ciface_loom_rt_batch_matmul_f32(loom_memref3_f32 *a,
                                                      loom_memref3_f32 *b,
                                                      loom_memref3_f32 *c,
                                                      int64_t transA,
                                                      int64_t transB,
                                                      int64_t accumulate) {
  batchMatmul<float>(a, b, c, transA != 0, transB != 0, accumulate != 0);
}

extern "C" void _mlir_ciface_loom_rt_batch_matmul_f64(loom_memref3_f64 *a,
                                                      loom_memref3_f64 *b,
                                                      loom_memref3_f64 *c,
                                                      int64_t transA,
                                                      int64_t transB,
                                                      int64_t accumulate) {
  batchMatmul<double>(a, b, c, transA != 0, transB != 0, accumulate != 0);
}

extern "C" void memrefCopy(int64_t elementSize, loom_unranked_memref *src,
                           loom_unranked_memref *dst) {
  // Ranked descriptor: allocated, aligned, offset, sizes[rank], strides[rank].
  auto fields = [](loom_unranked_memref *m) {
    return static_cast<int64_t *>(m->descriptor);
  };
  int64_t rank = src->rank;
  int64_t *s = fields(src), *d = fields(dst);
  char *srcBase = reinterpret_cast<char *>(s[1]) + s[2] * elementSize;
  char *dstBase = reinterpret_cast<char *>(d[1]) + d[2] * elementSize;
  const int64_t *sizes = s + 3, *srcStrides = s + 3 + rank,
                *dstStrides = d + 3 + rank;
  int64_t total = 1;
  for (int64_t i = 0; i < rank; ++i)
    total *= sizes[i];
  if (total == 0)
    return;
  std::vector<int64_t> index(rank, 0);
  for (int64_t n = 0; n < total; ++n) {
    int64_t so = 0, doff = 0;
    for (int64_t i = 0; i < rank; ++i) {
      so += index[i] * srcStrides[i];
      doff += index[i] * dstStrides[i];
    }
    std::memcpy(dstBase + doff * elementSize, srcBase + so * elementSize,
                elementSize);
    for (int64_t i = rank - 1; i >= 0; --i) {
      if (++index[i] < sizes[i])
        break;
      index[i] = 0;
    }
  }
}

//===----------------------------------------------------------------------===//
// bfloat16 conversions LLVM lowers to library calls
//===----------------------------------------------------------------------===//

namespace {
/// float -> bfloat16 bits, rounding to nearest even (NaNs stay quiet NaNs).
uint16_t bf16Bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((bits >> 16) | 0x0040u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}

__bf16 fromBits(uint16_t b) {
  __bf16 out;
  std::memcpy(&out, &b, 2);
  return out;
}
} // namespace

extern "C" __bf16 __truncsfbf2(float f) { return fromBits(bf16Bits(f)); }

extern "C" __bf16 __truncdfbf2(double d) {
  // Correctly rounded without double rounding: to float rounding to odd
  // (truncate, then set the last bit when anything was dropped), then to
  // bfloat16 rounding to nearest even.
  if (std::isnan(d))
    return fromBits(bf16Bits(static_cast<float>(d)));
  float f = static_cast<float>(d);
  if (std::isfinite(f) && static_cast<double>(f) != d) {
    if (std::fabs(static_cast<double>(f)) > std::fabs(d))
      f = std::nextafter(f, 0.0f);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    bits |= 1u;
    std::memcpy(&f, &bits, 4);
  }
  return fromBits(bf16Bits(f));
}

namespace {
/// |x| as an unsigned integer that orders like the magnitude: the IEEE bits
/// with the sign cleared.
template <typename Bits>
void topKByBits(const Bits *x, int64_t n, int64_t k, int64_t *out,
                int32_t *out32) {
  const Bits mask = static_cast<Bits>(~(Bits(1) << (8 * sizeof(Bits) - 1)));
  std::vector<int64_t> order(n);
  for (int64_t i = 0; i < n; ++i)
    order[i] = i;
  auto larger = [&](int64_t a, int64_t b) {
    Bits ma = x[a] & mask, mb = x[b] & mask;
    return ma != mb ? ma > mb : a < b;
  };
  if (k < n)
    std::nth_element(order.begin(), order.begin() + (k - 1), order.end(),
                     larger);
  std::sort(order.begin(), order.begin() + k);
  if (out)
    std::memcpy(out, order.data(), k * sizeof(int64_t));
  else
    for (int64_t i = 0; i < k; ++i)
      out32[i] = static_cast<int32_t>(order[i]);
}
} // namespace

extern "C" void _mlir_ciface_loom_rt_top_k_indices(int64_t k, int64_t dtype,
                                                   int64_t indexDtype,
                                                   loom_memref1 *input,
                                                   loom_memref1 *indices) {
  int64_t n = input->size;
  int64_t *out = nullptr;
  int32_t *out32 = nullptr;
  if (indexDtype == LOOM_DTYPE_I64)
    out = static_cast<int64_t *>(indices->aligned) + indices->offset;
  else
    out32 = static_cast<int32_t *>(indices->aligned) + indices->offset;
  if (k < 1 || k > n || indices->size != k ||
      (indexDtype != LOOM_DTYPE_I64 && (indexDtype != LOOM_DTYPE_I32 || n > INT32_MAX))) {
    std::fprintf(stderr, "loom: top_k_indices: k = %lld for %lld elements\n",
                 static_cast<long long>(k), static_cast<long long>(n));
    std::exit(1);
  }
  switch (dtype) {
  case LOOM_DTYPE_F32:
    return topKByBits(static_cast<const uint32_t *>(input->aligned) +
                          input->offset, n, k, out, out32);
  case LOOM_DTYPE_F64:
    return topKByBits(static_cast<const uint64_t *>(input->aligned) +
                          input->offset, n, k, out, out32);
  case LOOM_DTYPE_F16:
  case LOOM_DTYPE_BF16:
    return topKByBits(static_cast<const uint16_t *>(input->aligned) +
                          input->offset, n, k, out, out32);
  default:
    std::fprintf(stderr, "loom: top_k_indices: dtype %lld is not a float\n",
                 static_cast<long long>(dtype));
    std::exit(1);
  }
}
