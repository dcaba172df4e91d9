//===- GemmMappingTest.cpp - Row-major batch matmuls as cuBLAS GEMMs ------===//
//
// loom::gemm::mapBatchMatmul is what the CUDA library hands cuBLAS. Without
// a GPU, the same column-major strided batched GEMM runs here through
// OpenBLAS's column-major interface (cblas_*gemm with CblasColMajor, batch
// by batch) and must equal the CPU kernel compiled code calls
// (_mlir_ciface_loom_rt_batch_matmul_*) on the same descriptors: every
// transpose, padded rows, offsets, a broadcast batch on either side, size-1
// dimensions, k = 0, accumulation. Equal bit for bit where OpenBLAS is
// handed the same product both ways (plain layouts); elsewhere within f32's
// rounding. The mapping's refusals (no unit stride) are named.
//
//===----------------------------------------------------------------------===//

#include "loom/gemm.h"
#include "loom/kernels.h"

#include "gtest/gtest.h"

#include <cblas.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using loom::gemm::ColumnMajorGemm;
using loom::gemm::Memref3;

namespace {

/// Runs a mapped GEMM the way cuBLAS would: column-major, batch by batch.
template <typename T>
void runColumnMajor(const ColumnMajorGemm &g) {
  if (g.empty())
    return;
  for (int64_t i = 0; i < g.batch; ++i) {
    const T *a = reinterpret_cast<const T *>(g.a) + i * g.strideA;
    const T *b = reinterpret_cast<const T *>(g.b) + i * g.strideB;
    T *c = reinterpret_cast<T *>(g.c) + i * g.strideC;
    if (g.k == 0) { // as the CUDA library does it: C = 0 unless accumulating
      if (!g.accumulate)
        for (int64_t col = 0; col < g.n; ++col)
          for (int64_t row = 0; row < g.m; ++row)
            c[row + col * g.ldc] = T(0);
      continue;
    }
    auto ta = g.transA ? CblasTrans : CblasNoTrans;
    auto tb = g.transB ? CblasTrans : CblasNoTrans;
    if constexpr (sizeof(T) == 4)
      cblas_sgemm(CblasColMajor, ta, tb, int(g.m), int(g.n), int(g.k), 1.0f, a,
                  int(g.lda), b, int(g.ldb), g.accumulate ? 1.0f : 0.0f, c,
                  int(g.ldc));
    else
      cblas_dgemm(CblasColMajor, ta, tb, int(g.m), int(g.n), int(g.k), 1.0, a,
                  int(g.lda), b, int(g.ldb), g.accumulate ? 1.0 : 0.0, c,
                  int(g.ldc));
  }
}

struct Case {
  int64_t batch, m, n, k;
  bool transA, transB, accumulate;
  bool broadcastA = false, broadcastB = false;
  int64_t pad = 0, offset = 0;
  /// Broadcast as a batch of `batch` with stride 0 (not a batch of 1).
  bool zeroStride = false;
};

std::string describe(const Case &c) {
  return std::to_string(c.batch) + "x" + std::to_string(c.m) + "x" +
         std::to_string(c.n) + "x" + std::to_string(c.k) +
         (c.transA ? " tA" : "") + (c.transB ? " tB" : "") +
         (c.accumulate ? " acc" : "") + (c.broadcastA ? " bcastA" : "") +
         (c.broadcastB ? " bcastB" : "") +
         (c.zeroStride ? " stride0" : "") +
         (c.pad ? " pad" + std::to_string(c.pad) : "") +
         (c.offset ? " off" + std::to_string(c.offset) : "");
}

/// A row-major [sizes] operand with rows `pad` longer, `offset` in.
struct Buffer {
  int64_t sizes[3], strides[3], offset;
  std::vector<double> data;
  Buffer(int64_t b, int64_t r, int64_t c, int64_t pad, int64_t off,
         std::mt19937 &gen)
      : sizes{b, r, c}, offset(off) {
    strides[2] = 1;
    strides[1] = c + pad;
    strides[0] = r * strides[1];
    std::uniform_int_distribution<int> d(-8, 8);
    data.resize(size_t(off + b * strides[0] + 8));
    for (double &x : data)
      x = d(gen) * 0.125;
  }
  template <typename T>
  Memref3 memref(std::vector<T> &storage) const {
    storage.assign(data.begin(), data.end());
    Memref3 m;
    m.allocated = m.aligned = storage.data();
    m.offset = offset;
    for (int i = 0; i < 3; ++i) {
      m.sizes[i] = sizes[i];
      m.strides[i] = strides[i];
    }
    return m;
  }
};

/// A case's A, B and C, drawn from `seed` in that order; a broadcast
/// operand is a batch of 1, or with zeroStride the whole batch at stride 0.
struct Operands {
  std::mt19937 gen;
  Buffer a, b, out;
  Operands(const Case &c, uint32_t seed)
      : gen(seed),
        a(c.broadcastA ? 1 : c.batch, c.transA ? c.k : c.m,
          c.transA ? c.m : c.k, c.pad, c.offset, gen),
        b(c.broadcastB ? 1 : c.batch, c.transB ? c.n : c.k,
          c.transB ? c.k : c.n, c.pad, c.offset, gen),
        out(c.batch, c.m, c.n, c.pad, c.offset, gen) {
    for (Buffer *x : {&a, &b})
      if (c.zeroStride && x->sizes[0] == 1) {
        x->sizes[0] = c.batch;
        x->strides[0] = 0;
      }
  }
};

template <typename T>
void check(const Case &c, uint32_t seed) {
  Operands ops(c, seed);
  Buffer &a = ops.a, &b = ops.b, &out = ops.out;
  std::vector<T> a1, b1, c1, a2, b2, c2;
  Memref3 ma1 = a.memref(a1), mb1 = b.memref(b1), mc1 = out.memref(c1);
  Memref3 ma2 = a.memref(a2), mb2 = b.memref(b2), mc2 = out.memref(c2);
  ColumnMajorGemm g;
  std::string error;
  ASSERT_TRUE(loom::gemm::mapBatchMatmul(ma2, mb2, mc2, c.transA, c.transB,
                                         c.accumulate, sizeof(T), g, error))
      << describe(c) << ": " << error;
  runColumnMajor<T>(g);
  if constexpr (sizeof(T) == 4)
    _mlir_ciface_loom_rt_batch_matmul_f32(
        reinterpret_cast<loom_memref3_f32 *>(&ma1),
        reinterpret_cast<loom_memref3_f32 *>(&mb1),
        reinterpret_cast<loom_memref3_f32 *>(&mc1), c.transA, c.transB,
        c.accumulate);
  else
    _mlir_ciface_loom_rt_batch_matmul_f64(
        reinterpret_cast<loom_memref3_f64 *>(&ma1),
        reinterpret_cast<loom_memref3_f64 *>(&mb1),
        reinterpret_cast<loom_memref3_f64 *>(&mc1), c.transA, c.transB,
        c.accumulate);
  // Inputs are multiples of 1/8 in [-1, 1]: every product and sum is exact
  // in f32 for these sizes, so any order of summation gives the same bits.
  for (size_t i = 0; i < c1.size(); ++i)
    ASSERT_EQ(c1[i], c2[i]) << describe(c) << ": element " << i;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (bool acc : {false, true}) {
        out.push_back({3, 7, 5, 4, ta, tb, acc});
        out.push_back({4, 6, 9, 3, ta, tb, acc, true, false});
        out.push_back({4, 6, 9, 3, ta, tb, acc, false, true});
        // The lowering's broadcast: the whole batch, stride 0.
        out.push_back({4, 6, 9, 3, ta, tb, acc, true, false, 0, 0, true});
        out.push_back({4, 6, 9, 3, ta, tb, acc, false, true, 0, 0, true});
        out.push_back({2, 5, 4, 6, ta, tb, acc, false, false, 3, 5});
        out.push_back({1, 1, 8, 5, ta, tb, acc});
        out.push_back({2, 8, 1, 5, ta, tb, acc});
        out.push_back({2, 6, 5, 1, ta, tb, acc});
        out.push_back({2, 6, 5, 0, ta, tb, acc});
        out.push_back({1, 33, 17, 29, ta, tb, acc, false, false, 2, 1});
      }
  return out;
}

TEST(GemmMapping, F32MatchesTheCpuKernelInEveryLayout) {
  uint32_t seed = 1;
  for (const Case &c : cases())
    check<float>(c, seed++);
}

TEST(GemmMapping, F64MatchesTheCpuKernelInEveryLayout) {
  uint32_t seed = 100;
  for (const Case &c : cases())
    check<double>(c, seed++);
}

/// 16-bit bits of `x` (exact for the test's values: multiples of 1/8).
uint16_t toBf16(double x) {
  float f = float(x);
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return uint16_t(bits >> 16);
}
uint16_t toF16(double x) {
  _Float16 h = _Float16(x);
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof bits);
  return bits;
}
float fromBf16(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
float fromF16(uint16_t b) {
  _Float16 h;
  std::memcpy(&h, &b, sizeof h);
  return float(h);
}

/// A mapped GEMM of 16-bit operands into f32, column-major, by loops (what
/// cuBLAS computes with Atype/Btype 16-bit, Ctype f32).
void runColumnMajorMixed(const ColumnMajorGemm &g, float (*widen)(uint16_t)) {
  for (int64_t i = 0; i < g.batch; ++i) {
    auto a = reinterpret_cast<const uint16_t *>(g.a) + i * g.strideA;
    auto b = reinterpret_cast<const uint16_t *>(g.b) + i * g.strideB;
    float *c = reinterpret_cast<float *>(g.c) + i * g.strideC;
    for (int64_t col = 0; col < g.n; ++col)
      for (int64_t row = 0; row < g.m; ++row) {
        float acc = g.accumulate ? c[row + col * g.ldc] : 0.0f;
        for (int64_t x = 0; x < g.k; ++x)
          acc += widen(g.transA ? a[x + row * g.lda] : a[row + x * g.lda]) *
                 widen(g.transB ? b[col + x * g.ldb] : b[x + col * g.ldb]);
        c[row + col * g.ldc] = acc;
      }
  }
}

/// bf16/f16 operands into an f32 result: the mapping (operands 2 bytes,
/// result 4) run as cuBLAS would, the CPU entry point and the f32 product
/// of the same values agree bit for bit.
void checkMixed(const Case &c, uint32_t seed, bool bf16) {
  Operands ops(c, seed);
  Buffer &a = ops.a, &b = ops.b, &out = ops.out;
  auto narrow = [&](const Buffer &x, std::vector<uint16_t> &storage) {
    storage.clear();
    for (double v : x.data)
      storage.push_back(bf16 ? toBf16(v) : toF16(v));
    std::vector<float> unused;
    Memref3 m = x.memref(unused);
    m.allocated = m.aligned = storage.data();
    return m;
  };
  std::vector<uint16_t> a16, b16;
  std::vector<float> af, bf, c1, c2, c3;
  Memref3 ma16 = narrow(a, a16), mb16 = narrow(b, b16);
  Memref3 mc1 = out.memref(c1), mc2 = out.memref(c2), mc3 = out.memref(c3);
  Memref3 maf = a.memref(af), mbf = b.memref(bf);
  ColumnMajorGemm g;
  std::string error;
  ASSERT_TRUE(loom::gemm::mapBatchMatmul(ma16, mb16, mc2, c.transA, c.transB,
                                         c.accumulate, 2, 4, g, error))
      << describe(c) << ": " << error;
  runColumnMajorMixed(g, bf16 ? fromBf16 : fromF16);
  auto fn = bf16 ? _mlir_ciface_loom_rt_batch_matmul_bf16_f32
                 : _mlir_ciface_loom_rt_batch_matmul_f16_f32;
  fn(reinterpret_cast<loom_memref3_16 *>(&ma16),
     reinterpret_cast<loom_memref3_16 *>(&mb16),
     reinterpret_cast<loom_memref3_f32 *>(&mc1), c.transA, c.transB,
     c.accumulate);
  _mlir_ciface_loom_rt_batch_matmul_f32(
      reinterpret_cast<loom_memref3_f32 *>(&maf),
      reinterpret_cast<loom_memref3_f32 *>(&mbf),
      reinterpret_cast<loom_memref3_f32 *>(&mc3), c.transA, c.transB,
      c.accumulate);
  for (size_t i = 0; i < c1.size(); ++i) {
    ASSERT_EQ(c1[i], c3[i]) << describe(c) << ": element " << i;
    ASSERT_EQ(c2[i], c3[i]) << describe(c) << ": element " << i;
  }
}

/// Whether this machine's bf16 products run on oneDNN (AVX512-BF16/AMX).
bool bf16OnOneDnn() { return *loom_rt_bf16_matmul_implementation() != 0; }

TEST(GemmMapping, Bf16IntoF32MatchesTheCpuKernelInEveryLayout) {
  uint32_t seed = 300;
  int64_t before = loom_rt_onednn_products();
  for (const Case &c : cases())
    checkMixed(c, seed++, /*bf16=*/true);
  int64_t onednn = loom_rt_onednn_products() - before;
  // Where the CPU has bf16 instructions, oneDNN computes the layouts it
  // has kernels for (all but the padded, non-unit-stride ones); elsewhere
  // none, and the widening path was what the cases compared.
  if (bf16OnOneDnn())
    EXPECT_GE(onednn, int64_t(cases().size()) / 2)
        << loom_rt_bf16_matmul_implementation();
  else
    EXPECT_EQ(onednn, 0);
  std::printf("bf16 products on oneDNN (%s): %lld of %zu\n",
              loom_rt_bf16_matmul_implementation(), (long long)onednn,
              cases().size());
}

/// Products of random bf16 values (sums not exact): oneDNN's result is the
/// same bits run after run, and within f32 rounding of sgemm on the
/// widened operands (another summation order). Large enough to use every
/// thread BLAS would.
TEST(GemmMapping, Bf16ProductsAreDeterministicAndNearTheF32Product) {
  const int64_t m = 256, n = 192, k = 160;
  std::mt19937 gen(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<uint16_t> a16(m * k), b16(k * n);
  std::vector<float> af(m * k), bf(k * n), c1(m * n), c2(m * n), c3(m * n);
  for (size_t i = 0; i < a16.size(); ++i)
    af[i] = fromBf16(a16[i] = toBf16(dist(gen)));
  for (size_t i = 0; i < b16.size(); ++i)
    bf[i] = fromBf16(b16[i] = toBf16(dist(gen)));
  Memref3 ma{a16.data(), a16.data(), 0, {1, m, k}, {m * k, k, 1}};
  Memref3 mb{b16.data(), b16.data(), 0, {1, k, n}, {k * n, n, 1}};
  auto run = [&](std::vector<float> &c) {
    Memref3 mc{c.data(), c.data(), 0, {1, m, n}, {m * n, n, 1}};
    _mlir_ciface_loom_rt_batch_matmul_bf16_f32(
        reinterpret_cast<loom_memref3_16 *>(&ma),
        reinterpret_cast<loom_memref3_16 *>(&mb),
        reinterpret_cast<loom_memref3_f32 *>(&mc), 0, 0, 0);
  };
  int64_t before = loom_rt_onednn_products();
  run(c1);
  run(c2);
  EXPECT_EQ(loom_rt_onednn_products() - before, bf16OnOneDnn() ? 2 : 0);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(m), int(n),
              int(k), 1.0f, af.data(), int(k), bf.data(), int(n), 0.0f,
              c3.data(), int(n));
  size_t differ = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      size_t at = size_t(i * n + j);
      ASSERT_EQ(c1[at], c2[at]) << "element " << at;
      double bound = 0;
      for (int64_t x = 0; x < k; ++x)
        bound += std::abs(double(af[i * k + x]) * bf[x * n + j]);
      ASSERT_LE(std::abs(double(c1[at]) - c3[at]), 2 * k * 6e-8 * bound)
          << "element " << at;
      differ += c1[at] != c3[at];
    }
  std::printf("bf16 product of %lldx%lldx%lld: %zu of %lld elements differ "
              "from sgemm's in the last bits\n",
              (long long)m, (long long)n, (long long)k, differ,
              (long long)(m * n));
}

TEST(GemmMapping, F16IntoF32MatchesTheCpuKernelInEveryLayout) {
  uint32_t seed = 500;
  for (const Case &c : cases())
    checkMixed(c, seed++, /*bf16=*/false);
}

/// The f32 value `f` rounded to the nearest bf16 (ties to even), found by
/// comparing the two neighbours in double (not by the kernel's bit trick).
uint16_t nearestBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  uint16_t lo = uint16_t(bits >> 16), hi = uint16_t(lo + 1);
  double dl = std::abs(double(fromBf16(lo)) - f),
         dh = std::abs(double(fromBf16(hi)) - f);
  return dl < dh ? lo : dh < dl ? hi : (lo % 2 == 0 ? lo : hi);
}

/// The rounded entry points (`_bf16`, `_f16`: 16-bit result, what a 16-bit
/// product whose f32 result is only rounded becomes) give, element for
/// element, the f32 entry point's result rounded to nearest even.
void checkRounded(const Case &c, uint32_t seed, bool bf16, size_t &inexact) {
  Operands ops(c, seed);
  std::vector<uint16_t> a16, b16, c16;
  std::vector<float> unused, c32;
  auto narrow = [&](const Buffer &x, std::vector<uint16_t> &storage) {
    storage.clear();
    for (double v : x.data)
      storage.push_back(bf16 ? toBf16(v) : toF16(v));
    Memref3 m = x.memref(unused);
    m.allocated = m.aligned = storage.data();
    return m;
  };
  Memref3 ma = narrow(ops.a, a16), mb = narrow(ops.b, b16),
          mc16 = narrow(ops.out, c16), mc32 = ops.out.memref(c32);
  auto wide = bf16 ? _mlir_ciface_loom_rt_batch_matmul_bf16_f32
                   : _mlir_ciface_loom_rt_batch_matmul_f16_f32;
  auto rounded = bf16 ? _mlir_ciface_loom_rt_batch_matmul_bf16
                      : _mlir_ciface_loom_rt_batch_matmul_f16;
  // Scaled so that the sums need rounding to 16 bits.
  for (uint16_t &v : a16)
    v = bf16 ? toBf16(fromBf16(v) * 1.0078125) : toF16(fromF16(v) * 1.0078125);
  wide(reinterpret_cast<loom_memref3_16 *>(&ma),
       reinterpret_cast<loom_memref3_16 *>(&mb),
       reinterpret_cast<loom_memref3_f32 *>(&mc32), c.transA, c.transB, 0);
  rounded(reinterpret_cast<loom_memref3_16 *>(&ma),
          reinterpret_cast<loom_memref3_16 *>(&mb),
          reinterpret_cast<loom_memref3_16 *>(&mc16), c.transA, c.transB, 0);
  for (size_t i = 0; i < c32.size(); ++i) {
    uint16_t want = bf16 ? nearestBf16(c32[i]) : toF16(c32[i]);
    inexact += (bf16 ? fromBf16(want) : fromF16(want)) != c32[i];
    ASSERT_EQ(c16[i], want) << describe(c) << ": element " << i << " ("
                            << c32[i] << ")";
  }
}

TEST(GemmMapping, RoundedBf16AndF16AreTheF32ResultRoundedToNearestEven) {
  uint32_t seed = 700;
  size_t inexact[2] = {0, 0};
  for (const Case &c : cases()) {
    checkRounded(c, seed++, /*bf16=*/true, inexact[0]);
    checkRounded(c, seed++, /*bf16=*/false, inexact[1]);
  }
  // The check is not vacuous: many sums were not 16-bit numbers.
  EXPECT_GT(inexact[0], 100u);
  EXPECT_GT(inexact[1], 100u);
}

TEST(GemmMapping, RowMajorOperandsBecomeTheTransposedProduct) {
  // C[2x3] = A[2x4] B[4x3], row-major and contiguous: cuBLAS computes
  // C^T (3x2) = B^T (3x4) A^T (4x2), B first, no transposes, leading
  // dimensions the row lengths.
  float a[8], b[12], c[6];
  Memref3 ma{a, a, 0, {1, 2, 4}, {8, 4, 1}};
  Memref3 mb{b, b, 0, {1, 4, 3}, {12, 3, 1}};
  Memref3 mc{c, c, 0, {1, 2, 3}, {6, 3, 1}};
  ColumnMajorGemm g;
  std::string error;
  ASSERT_TRUE(
      loom::gemm::mapBatchMatmul(ma, mb, mc, false, false, false, 4, g, error));
  EXPECT_EQ(g.m, 3);
  EXPECT_EQ(g.n, 2);
  EXPECT_EQ(g.k, 4);
  EXPECT_FALSE(g.transA);
  EXPECT_FALSE(g.transB);
  EXPECT_EQ(g.a, reinterpret_cast<char *>(b));
  EXPECT_EQ(g.b, reinterpret_cast<char *>(a));
  EXPECT_EQ(g.lda, 3);
  EXPECT_EQ(g.ldb, 4);
  EXPECT_EQ(g.ldc, 3);
  EXPECT_EQ(loom::gemm::describe(g), "1 x 2x3x4");
}

TEST(GemmMapping, LayoutsNoGemmReadsAreNamed) {
  float buf[256];
  // A result whose columns are not contiguous.
  Memref3 a{buf, buf, 0, {1, 4, 4}, {16, 4, 1}};
  Memref3 b{buf, buf, 0, {1, 4, 4}, {16, 4, 1}};
  Memref3 c{buf, buf, 0, {1, 4, 4}, {16, 1, 4}};
  ColumnMajorGemm g;
  std::string error;
  EXPECT_FALSE(
      loom::gemm::mapBatchMatmul(a, b, c, false, false, false, 4, g, error));
  EXPECT_NE(error.find("the result"), std::string::npos) << error;
  // An operand with no unit stride.
  Memref3 strided{buf, buf, 0, {1, 4, 4}, {64, 8, 2}};
  c = Memref3{buf, buf, 0, {1, 4, 4}, {16, 4, 1}};
  EXPECT_FALSE(loom::gemm::mapBatchMatmul(strided, b, c, false, false, false,
                                          4, g, error));
  EXPECT_NE(error.find("the left operand"), std::string::npos) << error;
  // Batches that do not fit.
  Memref3 three{buf, buf, 0, {3, 4, 4}, {16, 4, 1}};
  Memref3 two{buf, buf, 0, {2, 4, 4}, {16, 4, 1}};
  EXPECT_FALSE(
      loom::gemm::mapBatchMatmul(three, b, two, false, false, false, 4, g, error));
  EXPECT_NE(error.find("do not fit"), std::string::npos) << error;
}

} // namespace
