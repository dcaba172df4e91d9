//===- ConvKernelTest.cpp - loom_rt_conv_* against a direct convolution ---===//
//
// The runtime's convolution entry points (oneDNN's convolution, or its
// fallbacks) against a convolution summed here in double, over strides,
// asymmetric padding, dilations, groups (depthwise included) and 1 to 3
// spatial dimensions, f32 and bf16.
//
//===----------------------------------------------------------------------===//

#include "loom/kernels.h"

#include "gtest/gtest.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

struct Conv {
  int64_t k, groups, n, c, f;
  std::vector<int64_t> d, kernel, stride, padBegin, padEnd, dilation;

  std::vector<int64_t> out() const {
    std::vector<int64_t> o;
    for (int64_t i = 0; i < k; ++i)
      o.push_back((d[i] + padBegin[i] + padEnd[i] -
                   dilation[i] * (kernel[i] - 1) - 1) /
                      stride[i] +
                  1);
    return o;
  }
  std::vector<int64_t> params() const {
    std::vector<int64_t> p = {k, groups, n, c, f};
    const std::vector<int64_t> o = out();
    for (const std::vector<int64_t> *v :
         {&d, &kernel, &o, &stride, &padBegin, &padEnd, &dilation}) {
      int64_t unused = (v == &padBegin || v == &padEnd) ? 0 : 1;
      for (int64_t i = 0; i < 3; ++i)
        p.push_back(i < k ? (*v)[i] : unused);
    }
    return p;
  }
  std::string describe() const {
    std::string s = std::to_string(k) + "-d n" + std::to_string(n) + " c" +
                    std::to_string(c) + " f" + std::to_string(f) + " g" +
                    std::to_string(groups);
    for (int64_t i = 0; i < k; ++i)
      s += " [d" + std::to_string(d[i]) + " k" + std::to_string(kernel[i]) +
           " s" + std::to_string(stride[i]) + " p" +
           std::to_string(padBegin[i]) + "/" + std::to_string(padEnd[i]) +
           " dil" + std::to_string(dilation[i]) + "]";
    return s;
  }
};

int64_t volume(const std::vector<int64_t> &v) {
  int64_t r = 1;
  for (int64_t x : v)
    r *= x;
  return r;
}

/// The convolution summed in double; `bound` gets sum |x w| per output.
void reference(const Conv &cv, const std::vector<float> &x,
               const std::vector<float> &w, std::vector<double> &y,
               std::vector<double> &bound) {
  std::vector<int64_t> o = cv.out();
  int64_t cg = cv.c / cv.groups, fg = cv.f / cv.groups;
  int64_t taps = volume(cv.kernel), outs = volume(o), ins = volume(cv.d);
  y.assign(size_t(cv.n * cv.f * outs), 0);
  bound.assign(y.size(), 0);
  std::vector<int64_t> oi(cv.k), ki(cv.k);
  for (int64_t n = 0; n < cv.n; ++n)
    for (int64_t f = 0; f < cv.f; ++f)
      for (int64_t op = 0; op < outs; ++op) {
        for (int64_t i = cv.k - 1, r = op; i >= 0; --i) {
          oi[i] = r % o[i];
          r /= o[i];
        }
        double acc = 0, b = 0;
        for (int64_t ci = 0; ci < cg; ++ci)
          for (int64_t t = 0; t < taps; ++t) {
            for (int64_t i = cv.k - 1, r = t; i >= 0; --i) {
              ki[i] = r % cv.kernel[i];
              r /= cv.kernel[i];
            }
            int64_t at = 0;
            bool inside = true;
            for (int64_t i = 0; i < cv.k; ++i) {
              int64_t p = oi[i] * cv.stride[i] + ki[i] * cv.dilation[i] -
                          cv.padBegin[i];
              inside &= p >= 0 && p < cv.d[i];
              at = at * cv.d[i] + p;
            }
            if (!inside)
              continue;
            int64_t channel = (f / fg) * cg + ci;
            double v = double(x[size_t((n * cv.c + channel) * ins + at)]) *
                       w[size_t((f * cg + ci) * taps + t)];
            acc += v;
            b += std::abs(v);
          }
        y[size_t((n * cv.f + f) * outs + op)] = acc;
        bound[size_t((n * cv.f + f) * outs + op)] = b;
      }
}

loom_memref1 memref(void *data, int64_t size) {
  return loom_memref1{data, data, 0, size, 1};
}

float fromBf16(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
uint16_t toBf16(float f) { // truncation: the test's inputs are bf16 values
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return uint16_t(bits >> 16);
}

std::vector<Conv> cases() {
  return {
      {2, 1, 2, 3, 4, {9, 9}, {2, 2}, {2, 2}, {1, 1}, {2, 2}, {3, 3}},
      {2, 1, 4, 16, 8, {12, 10}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {2, 1, 2, 8, 16, {8, 8}, {1, 1}, {2, 2}, {0, 0}, {0, 0}, {1, 1}},
      {2, 4, 2, 8, 12, {7, 9}, {3, 2}, {1, 2}, {0, 1}, {2, 0}, {1, 2}},
      {2, 16, 3, 16, 16, {10, 10}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {2, 16, 2, 16, 32, {9, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},
      {1, 1, 3, 5, 6, {20}, {5}, {2}, {2}, {1}, {1}},
      {1, 5, 2, 5, 5, {17}, {3}, {1}, {1}, {1}, {2}},
      {3, 1, 2, 3, 4, {5, 6, 7}, {2, 3, 3}, {1, 2, 1}, {0, 1, 1}, {1, 1, 0}, {1, 1, 2}},
      {2, 1, 64, 32, 32, {16, 16}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {2, 1, 4, 3, 64, {64, 64}, {7, 7}, {2, 2}, {3, 3}, {3, 3}, {1, 1}},
      {2, 1, 4, 64, 64, {16, 16}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
  };
}

bool onednnOff() {
  const char *e = std::getenv("LOOM_ONEDNN");
  return e && std::strcmp(e, "0") == 0;
}

TEST(ConvKernel, F32EqualsTheDirectConvolution) {
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  int64_t before = loom_rt_onednn_convolutions();
  for (const Conv &cv : cases()) {
    std::vector<float> x(size_t(cv.n * cv.c * volume(cv.d))),
        w(size_t(cv.f * (cv.c / cv.groups) * volume(cv.kernel))),
        y(size_t(cv.n * cv.f * volume(cv.out())), NAN);
    for (float &v : x)
      v = dist(gen);
    for (float &v : w)
      v = dist(gen);
    std::vector<int64_t> p = cv.params();
    loom_memref1 mp = memref(p.data(), 26), mx = memref(x.data(), x.size()),
                 mw = memref(w.data(), w.size()), my = memref(y.data(), y.size());
    _mlir_ciface_loom_rt_conv_f32(&mp, &mx, &mw, &my);
    std::vector<double> want, bound;
    reference(cv, x, w, want, bound);
    double worst = 0;
    for (size_t i = 0; i < y.size(); ++i)
      worst = std::max(worst, std::abs(double(y[i]) - want[i]) / (bound[i] + 1e-30));
    std::printf("%s: worst error / sum|xw| %.2e\n", cv.describe().c_str(), worst);
    for (size_t i = 0; i < y.size(); ++i)
      ASSERT_LE(std::abs(double(y[i]) - want[i]), 1e-6 * (bound[i] + 1e-30))
          << cv.describe() << ": element " << i << " " << y[i] << " vs "
          << want[i];
  }
  int64_t onednn = loom_rt_onednn_convolutions() - before;
  // oneDNN computes every f32 case unless turned off.
  EXPECT_EQ(onednn, onednnOff() ? 0 : int64_t(cases().size()));
}

TEST(ConvKernel, Bf16IsTheF32ConvolutionRoundedOnce) {
  std::mt19937 gen(11);
  std::uniform_real_distribution<float> dist(-1, 1);
  size_t inexact = 0;
  for (const Conv &cv : cases()) {
    std::vector<uint16_t> x(size_t(cv.n * cv.c * volume(cv.d))),
        w(size_t(cv.f * (cv.c / cv.groups) * volume(cv.kernel))),
        y(size_t(cv.n * cv.f * volume(cv.out())), 0xffff);
    std::vector<float> xf(x.size()), wf(w.size());
    for (size_t i = 0; i < x.size(); ++i)
      xf[i] = fromBf16(x[i] = toBf16(dist(gen)));
    for (size_t i = 0; i < w.size(); ++i)
      wf[i] = fromBf16(w[i] = toBf16(dist(gen)));
    std::vector<int64_t> p = cv.params();
    loom_memref1 mp = memref(p.data(), 26), mx = memref(x.data(), x.size()),
                 mw = memref(w.data(), w.size()), my = memref(y.data(), y.size());
    _mlir_ciface_loom_rt_conv_bf16(&mp, &mx, &mw, &my);
    std::vector<double> want, bound;
    reference(cv, xf, wf, want, bound);
    for (size_t i = 0; i < y.size(); ++i) {
      // One rounding to bf16 (relative 2^-8) after an f32 sum.
      double got = fromBf16(y[i]);
      ASSERT_LE(std::abs(got - want[i]),
                std::ldexp(std::abs(want[i]), -8) + 1e-6 * bound[i])
          << cv.describe() << ": element " << i << " " << got << " vs "
          << want[i];
      inexact += got != want[i];
    }
  }
  EXPECT_GT(inexact, 100u); // the results were rounded
}

} // namespace
