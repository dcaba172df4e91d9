//===- RuntimeKernelsTest.cpp - The runtime's bfloat16 conversions ---------===//
//
// __truncdfbf2 and __truncsfbf2 (the library calls LLVM emits for fptrunc
// to bf16) against a reference that picks the nearest bfloat16 of the two
// that bracket the value exactly in double arithmetic (bf16 values and
// their midpoints are exact in double), ties to even.
//
//===----------------------------------------------------------------------===//

#include "loom/kernels.h"

#include "gtest/gtest.h"
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

namespace {

uint16_t bits(__bf16 b) {
  uint16_t u;
  std::memcpy(&u, &b, 2);
  return u;
}

double value(uint16_t b) {
  uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// The correctly rounded bfloat16 of a finite `d` (inf beyond the range).
uint16_t reference(double d) {
  // Start from the float truncation's top half and walk to the bracket.
  float f = static_cast<float>(d);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  uint16_t b = uint16_t(u >> 16);
  auto next = [](uint16_t x, bool up) -> uint16_t {
    // One bf16 step toward +inf (`up`) or -inf, in sign-magnitude bits.
    bool neg = x & 0x8000;
    if ((x & 0x7fff) == 0)
      return up ? 0x0001 : 0x8001;
    return (up != neg) ? uint16_t(x + 1) : uint16_t(x - 1);
  };
  while (std::isfinite(value(b)) && value(b) > d)
    b = next(b, false);
  while (std::isfinite(value(next(b, true))) && value(next(b, true)) <= d)
    b = next(b, true);
  uint16_t hi = next(b, true);
  if (value(b) == d)
    return b;
  double lo = value(b), up = value(hi);
  if (!std::isfinite(up)) {
    // Above the largest finite bf16: inf from its midpoint with the next
    // (non-existent) value on, as IEEE rounding does.
    double ulp = lo - value(next(b, false));
    return d - lo >= ulp / 2 ? hi : b;
  }
  if (d - lo < up - d)
    return b;
  if (d - lo > up - d)
    return hi;
  return (b & 1) ? hi : b;
}

TEST(RuntimeKernels, TruncDoubleToBF16RoundsCorrectly) {
  std::mt19937_64 gen(7);
  std::uniform_int_distribution<uint64_t> any;
  int checked = 0;
  for (int i = 0; i < 200000; ++i) {
    uint64_t raw = any(gen);
    double d;
    std::memcpy(&d, &raw, 8);
    // Magnitudes bf16 represents or rounds to finite values or 0; overflow
    // to inf is checked below.
    int e = std::ilogb(d);
    if (!std::isfinite(d) || e < -140 || e > 126)
      continue;
    ASSERT_EQ(bits(__truncdfbf2(d)), reference(d)) << "d = " << d;
    ++checked;
  }
  EXPECT_GT(checked, 1000);
  // Ties: exactly between two bf16 values, to even; just above, up. The
  // second is where rounding through float first would round twice.
  double one = 1.0, ulp = std::ldexp(1.0, -7);
  EXPECT_EQ(bits(__truncdfbf2(one + ulp / 2)), 0x3f80);
  EXPECT_EQ(bits(__truncdfbf2(one + ulp / 2 + std::ldexp(1.0, -40))), 0x3f81);
  EXPECT_EQ(bits(__truncdfbf2(-0.0)), 0x8000);
  EXPECT_EQ(bits(__truncdfbf2(std::numeric_limits<double>::infinity())), 0x7f80);
  EXPECT_TRUE(std::isnan(value(bits(__truncdfbf2(std::nan(""))))));
  EXPECT_EQ(bits(__truncdfbf2(1e300)), 0x7f80);
}

TEST(RuntimeKernels, TruncFloatToBF16RoundsToNearestEven) {
  EXPECT_EQ(bits(__truncsfbf2(1.0f)), 0x3f80);
  EXPECT_EQ(bits(__truncsfbf2(1.0f + std::ldexp(1.0f, -8))), 0x3f80); // tie, even
  EXPECT_EQ(bits(__truncsfbf2(1.0f + 3 * std::ldexp(1.0f, -8))), 0x3f82);
  EXPECT_EQ(bits(__truncsfbf2(-2.5f)), 0xc020);
}

} // namespace
