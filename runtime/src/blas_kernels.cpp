//===- blas_kernels.cpp - BLAS-backed kernels for compiled Loom code ------===//
//
// The CPU batch matmuls compiled code calls (loom/kernels.h), in their own
// library (libloom_blas.so) so that only what runs them links OpenBLAS: the
// JIT and CPU rank programs, not GPU programs.
//
//===----------------------------------------------------------------------===//

#include "loom/kernels.h"

#include "bf16.h"
#include "dnnl_gemm.h"

#include <cblas.h>
#include <algorithm>
#include <cstdint>
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

/// Runs small products on one BLAS thread, restoring the count after.
struct BlasThreads {
  explicit BlasThreads(int64_t work) {
    if (work < loom::dnnl_gemm::kThreadedWork) {
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
    // A batch of 1 broadcasts (whatever its stride), as on the GPU
    // (loom::gemm::mapBatchMatmul).
    T *ap = a->aligned + a->offset + (a->sizes[0] == 1 ? 0 : i * a->strides[0]);
    T *bp = b->aligned + b->offset + (b->sizes[0] == 1 ? 0 : i * b->strides[0]);
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


namespace {

float bf16ToFloat(uint16_t bits) { return loom::bf16::toFloat(bits); }

float f16ToFloat(uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, sizeof h);
  return static_cast<float>(h);
}

/// `d` widened (exactly) into `storage`, row-major with the same sizes.
template <float (*Widen)(uint16_t)>
loom_memref3_f32 widened(const loom_memref3_16 *d, std::vector<float> &storage) {
  int64_t s0 = d->sizes[0], s1 = d->sizes[1], s2 = d->sizes[2];
  storage.resize(size_t(s0 * s1 * s2));
  float *out = storage.data();
  for (int64_t i = 0; i < s0; ++i)
    for (int64_t r = 0; r < s1; ++r) {
      const uint16_t *row =
          d->aligned + d->offset + i * d->strides[0] + r * d->strides[1];
      for (int64_t c = 0; c < s2; ++c)
        *out++ = Widen(row[c * d->strides[2]]);
    }
  loom_memref3_f32 m;
  m.allocated = m.aligned = storage.data();
  m.offset = 0;
  for (int i = 0; i < 3; ++i)
    m.sizes[i] = d->sizes[i];
  m.strides[0] = s1 * s2;
  m.strides[1] = s2;
  m.strides[2] = 1;
  return m;
}

/// oneDNN's view of a descriptor.
template <typename Desc>
loom::dnnl_gemm::Operand operand(Desc *d, loom::dnnl_gemm::Type type) {
  loom::dnnl_gemm::Operand o;
  o.data = d->aligned + d->offset;
  for (int i = 0; i < 3; ++i) {
    o.sizes[i] = d->sizes[i];
    o.strides[i] = d->strides[i];
  }
  o.type = type;
  return o;
}

/// The product through oneDNN where it has native 16-bit kernels here:
/// true when done. As many threads as OpenBLAS uses for a product of this
/// size, so that the two pools do not oversubscribe the rank's cores.
template <typename CDesc>
bool viaDnnl(loom_memref3_16 *a, loom_memref3_16 *b, CDesc *c,
             loom::dnnl_gemm::Type type, loom::dnnl_gemm::Type resultType,
             bool transA, bool transB, bool accumulate) {
  int64_t batch = c->sizes[0], m = c->sizes[1], n = c->sizes[2];
  int64_t k = transA ? a->sizes[1] : a->sizes[2];
  if (batch == 0 || m == 0 || n == 0 || k == 0)
    return false;
  return loom::dnnl_gemm::batchMatmul(
      operand(a, type), operand(b, type), operand(c, resultType), transA,
      transB, accumulate, loom::dnnl_gemm::threadsFor(batch * m * n * k));
}

template <float (*Widen)(uint16_t)>
void mixedBatchMatmul(loom_memref3_16 *a, loom_memref3_16 *b,
                      loom_memref3_f32 *c, bool transA, bool transB,
                      bool accumulate) {
  if (Widen == bf16ToFloat &&
      viaDnnl(a, b, c, loom::dnnl_gemm::Type::bf16,
              loom::dnnl_gemm::Type::f32, transA, transB, accumulate))
    return;
  // Reused across calls: a step's products widen the same sizes each time.
  thread_local std::vector<float> wideA, wideB;
  loom_memref3_f32 wa = widened<Widen>(a, wideA), wb = widened<Widen>(b, wideB);
  batchMatmul<float>(&wa, &wb, c, transA, transB, accumulate);
}

/// f32 -> bf16, rounded to nearest even (arith.truncf's rounding); NaN stays
/// a (quiet) NaN.
uint16_t floatToBf16(float f) { return loom::bf16::fromFloat(f); }

uint16_t floatToF16(float f) {
  _Float16 h = static_cast<_Float16>(f);
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof bits);
  return bits;
}

/// The product in f32, rounded once into the 16-bit `c` (what the f32
/// product followed by arith.truncf gives).
template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
void roundedBatchMatmul(loom_memref3_16 *a, loom_memref3_16 *b,
                        loom_memref3_16 *c, bool transA, bool transB,
                        bool accumulate) {
  if (Widen == bf16ToFloat &&
      viaDnnl(a, b, c, loom::dnnl_gemm::Type::bf16,
              loom::dnnl_gemm::Type::bf16, transA, transB, accumulate))
    return;
  thread_local std::vector<float> wideC;
  loom_memref3_f32 wc = widened<Widen>(c, wideC);
  mixedBatchMatmul<Widen>(a, b, &wc, transA, transB, accumulate);
  const float *in = wideC.data();
  for (int64_t i = 0; i < c->sizes[0]; ++i)
    for (int64_t r = 0; r < c->sizes[1]; ++r) {
      uint16_t *row =
          c->aligned + c->offset + i * c->strides[0] + r * c->strides[1];
      for (int64_t k = 0; k < c->sizes[2]; ++k)
        row[k * c->strides[2]] = Narrow(*in++);
    }
}

} // namespace

extern "C" void _mlir_ciface_loom_rt_batch_matmul_bf16(
    loom_memref3_16 *a, loom_memref3_16 *b, loom_memref3_16 *c,
    int64_t transA, int64_t transB, int64_t accumulate) {
  roundedBatchMatmul<bf16ToFloat, floatToBf16>(a, b, c, transA != 0,
                                               transB != 0, accumulate != 0);
}

extern "C" void _mlir_ciface_loom_rt_batch_matmul_f16(
    loom_memref3_16 *a, loom_memref3_16 *b, loom_memref3_16 *c,
    int64_t transA, int64_t transB, int64_t accumulate) {
  roundedBatchMatmul<f16ToFloat, floatToF16>(a, b, c, transA != 0,
                                             transB != 0, accumulate != 0);
}

extern "C" void _mlir_ciface_loom_rt_batch_matmul_bf16_f32(
    loom_memref3_16 *a, loom_memref3_16 *b, loom_memref3_f32 *c,
    int64_t transA, int64_t transB, int64_t accumulate) {
  mixedBatchMatmul<bf16ToFloat>(a, b, c, transA != 0, transB != 0,
                                accumulate != 0);
}

extern "C" void _mlir_ciface_loom_rt_batch_matmul_f16_f32(
    loom_memref3_16 *a, loom_memref3_16 *b, loom_memref3_f32 *c,
    int64_t transA, int64_t transB, int64_t accumulate) {
  mixedBatchMatmul<f16ToFloat>(a, b, c, transA != 0, transB != 0,
                               accumulate != 0);
}

extern "C" const char *loom_rt_bf16_matmul_implementation(void) {
  return loom::dnnl_gemm::implementation(loom::dnnl_gemm::Type::bf16,
                                         loom::dnnl_gemm::Type::f32);
}

extern "C" int64_t loom_rt_onednn_products(void) {
  return loom::dnnl_gemm::products();
}
