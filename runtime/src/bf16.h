//===- bf16.h - bf16 conversions for the CPU kernels ------------*- C++ -*-===//
//
// bf16 <-> f32 as the compiled code does them (arith.extf exact,
// arith.truncf rounding to nearest even, NaN kept a quiet NaN). Internal to
// libloom_blas.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_BF16_H
#define LOOM_RUNTIME_BF16_H

#include <cstdint>
#include <cstring>

namespace loom::bf16 {

inline float toFloat(uint16_t bits) {
  uint32_t wide = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &wide, sizeof f);
  return f;
}

inline uint16_t fromFloat(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((bits >> 16) | 0x40);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}

} // namespace loom::bf16

#endif // LOOM_RUNTIME_BF16_H
