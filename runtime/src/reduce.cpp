//===- reduce.cpp - Element reductions on host buffers --------------------===//
//
// What the local backend and MPI's user-defined operations for 16-bit
// floats combine with (backend.h, reduceInto).
//
//===----------------------------------------------------------------------===//

#include "backend.h"

#include <cstdint>
#include <cstring>

using namespace loom::rt;

namespace {
float halfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else { // subnormal
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) {
        mant <<= 1;
        --exp;
      }
      bits = sign | (exp << 23) | ((mant & 0x3ff) << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (((x >> 23) & 0xff) == 0xff)
    return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));
  if (exp >= 0x1f)
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10)
      return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1)))
      ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1)))
    ++half;
  return static_cast<uint16_t>(sign | half);
}

float bf16ToFloat(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40); // quiet NaN
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

template <typename T>
T combine(loom_reduction_t r, T a, T b) {
  switch (r) {
  case LOOM_REDUCTION_SUM:
    return static_cast<T>(a + b);
  case LOOM_REDUCTION_MAX:
    return a > b ? a : b;
  case LOOM_REDUCTION_MIN:
    return a < b ? a : b;
  case LOOM_REDUCTION_PROD:
    return static_cast<T>(a * b);
  }
  return a;
}

template <typename T>
void reduceTyped(loom_reduction_t r, const void *in, void *inout, int64_t n) {
  const T *a = static_cast<const T *>(in);
  T *b = static_cast<T *>(inout);
  for (int64_t i = 0; i < n; ++i)
    b[i] = combine<T>(r, a[i], b[i]);
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void reduce16(loom_reduction_t r, const void *in, void *inout, int64_t n) {
  const uint16_t *a = static_cast<const uint16_t *>(in);
  uint16_t *b = static_cast<uint16_t *>(inout);
  for (int64_t i = 0; i < n; ++i)
    b[i] = FromFloat(combine<float>(r, ToFloat(a[i]), ToFloat(b[i])));
}
} // namespace

void loom::rt::reduceInto(loom_dtype_t dtype, loom_reduction_t r,
                          const void *in, void *inout, int64_t n) {
  switch (dtype) {
  case LOOM_DTYPE_F32:
    return reduceTyped<float>(r, in, inout, n);
  case LOOM_DTYPE_F64:
    return reduceTyped<double>(r, in, inout, n);
  case LOOM_DTYPE_F16:
    return reduce16<halfToFloat, floatToHalf>(r, in, inout, n);
  case LOOM_DTYPE_BF16:
    return reduce16<bf16ToFloat, floatToBf16>(r, in, inout, n);
  case LOOM_DTYPE_I8:
    return reduceTyped<int8_t>(r, in, inout, n);
  case LOOM_DTYPE_I16:
    return reduceTyped<int16_t>(r, in, inout, n);
  case LOOM_DTYPE_I32:
    return reduceTyped<int32_t>(r, in, inout, n);
  case LOOM_DTYPE_I64:
    return reduceTyped<int64_t>(r, in, inout, n);
  case LOOM_DTYPE_U8:
  case LOOM_DTYPE_BOOL:
    return reduceTyped<uint8_t>(r, in, inout, n);
  case LOOM_DTYPE_U16:
    return reduceTyped<uint16_t>(r, in, inout, n);
  case LOOM_DTYPE_U32:
    return reduceTyped<uint32_t>(r, in, inout, n);
  case LOOM_DTYPE_U64:
    return reduceTyped<uint64_t>(r, in, inout, n);
  }
}
