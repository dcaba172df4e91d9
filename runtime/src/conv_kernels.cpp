//===- conv_kernels.cpp - Convolutions compiled code calls ----------------===//
//
// loom.conv lowered to a call (loom-convert-to-linalg conv-library, the
// CPU pipeline's default for forward-like convolutions): oneDNN where it
// computes the type (dnnl_conv.cpp); bf16 without native bf16 as the f32
// convolution of the widened operands, rounded once; loops where oneDNN is
// off (LOOM_ONEDNN=0) or refuses.
//
//===----------------------------------------------------------------------===//

#include "loom/kernels.h"

#include "bf16.h"
#include "dnnl_gemm.h"

#include <cstring>
#include <vector>

using loom::dnnl_gemm::ConvShape;
using loom::dnnl_gemm::threadsFor;
using loom::dnnl_gemm::Type;

namespace {

ConvShape shapeOf(const loom_memref1 *params) {
  const int64_t *p = static_cast<const int64_t *>(params->aligned) + params->offset;
  ConvShape s;
  std::memcpy(&s, p, sizeof s);
  return s;
}

template <typename T> T *dataOf(const loom_memref1 *m) {
  return static_cast<T *>(m->aligned) + m->offset;
}

int64_t product(const int64_t *v, int64_t k) {
  int64_t r = 1;
  for (int64_t i = 0; i < k; ++i)
    r *= v[i];
  return r;
}

/// The convolution by loops, summed in f32 in (channel, tap) order.
void loops(const ConvShape &s, const float *x, const float *w, float *y) {
  int64_t g = s.groups, cg = s.c / g, fg = s.f / g;
  int64_t d[3] = {1, 1, 1}, kk[3] = {1, 1, 1}, o[3] = {1, 1, 1};
  int64_t st[3] = {1, 1, 1}, pb[3] = {0, 0, 0}, dl[3] = {1, 1, 1};
  // Spatial dimensions right-aligned: missing leading ones have size 1.
  for (int64_t i = 0; i < s.k; ++i) {
    int64_t j = 3 - s.k + i;
    d[j] = s.d[i];
    kk[j] = s.kernel[i];
    o[j] = s.out[i];
    st[j] = s.stride[i];
    pb[j] = s.padBegin[i];
    dl[j] = s.dilation[i];
  }
  int64_t inSize = d[0] * d[1] * d[2], taps = kk[0] * kk[1] * kk[2];
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t f = 0; f < s.f; ++f) {
      int64_t group = f / fg;
      float *out = y + (n * s.f + f) * o[0] * o[1] * o[2];
      for (int64_t a = 0; a < o[0]; ++a)
        for (int64_t b = 0; b < o[1]; ++b)
          for (int64_t c2 = 0; c2 < o[2]; ++c2) {
            float acc = 0;
            for (int64_t ci = 0; ci < cg; ++ci) {
              const float *in = x + (n * s.c + group * cg + ci) * inSize;
              const float *wt = w + (f * cg + ci) * taps;
              for (int64_t i = 0; i < kk[0]; ++i) {
                int64_t p = a * st[0] + i * dl[0] - pb[0];
                if (p < 0 || p >= d[0])
                  continue;
                for (int64_t j = 0; j < kk[1]; ++j) {
                  int64_t q = b * st[1] + j * dl[1] - pb[1];
                  if (q < 0 || q >= d[1])
                    continue;
                  for (int64_t l = 0; l < kk[2]; ++l) {
                    int64_t r = c2 * st[2] + l * dl[2] - pb[2];
                    if (r < 0 || r >= d[2])
                      continue;
                    acc += in[(p * d[1] + q) * d[2] + r] *
                           wt[(i * kk[1] + j) * kk[2] + l];
                  }
                }
              }
            }
            out[(a * o[1] + b) * o[2] + c2] = acc;
          }
    }
}

void convF32(const ConvShape &s, const float *x, const float *w, float *y) {
  if (!loom::dnnl_gemm::conv(s, Type::f32, x, w, y, threadsFor(s.work())))
    loops(s, x, w, y);
}

} // namespace

extern "C" void _mlir_ciface_loom_rt_conv_f32(loom_memref1 *params,
                                              loom_memref1 *x, loom_memref1 *w,
                                              loom_memref1 *y) {
  convF32(shapeOf(params), dataOf<float>(x), dataOf<float>(w),
          dataOf<float>(y));
}

extern "C" void _mlir_ciface_loom_rt_conv_bf16(loom_memref1 *params,
                                               loom_memref1 *x, loom_memref1 *w,
                                               loom_memref1 *y) {
  ConvShape s = shapeOf(params);
  const uint16_t *xb = dataOf<uint16_t>(x), *wb = dataOf<uint16_t>(w);
  uint16_t *yb = dataOf<uint16_t>(y);
  if (loom::dnnl_gemm::conv(s, Type::bf16, xb, wb, yb, threadsFor(s.work())))
    return;
  // Widened exactly, convolved in f32, rounded once to nearest even.
  int64_t nx = s.n * s.c * product(s.d, s.k),
          nw = s.f * (s.c / s.groups) * product(s.kernel, s.k),
          ny = s.n * s.f * product(s.out, s.k);
  thread_local std::vector<float> fx, fw, fy;
  fx.resize(size_t(nx));
  fw.resize(size_t(nw));
  fy.resize(size_t(ny));
  for (int64_t i = 0; i < nx; ++i)
    fx[i] = loom::bf16::toFloat(xb[i]);
  for (int64_t i = 0; i < nw; ++i)
    fw[i] = loom::bf16::toFloat(wb[i]);
  convF32(s, fx.data(), fw.data(), fy.data());
  for (int64_t i = 0; i < ny; ++i)
    yb[i] = loom::bf16::fromFloat(fy[i]);
}

extern "C" int64_t loom_rt_onednn_convolutions(void) {
  return loom::dnnl_gemm::convolutions();
}
