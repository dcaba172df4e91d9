//===- kernels.cpp - Kernels compiled Loom code calls (no BLAS) -----------===//
//
// The BLAS-backed batch matmuls are in blas_kernels.cpp (libloom_blas.so),
// which CPU programs link and GPU programs do not: OpenBLAS is 36 MiB.
//

#include "loom/kernels.h"
#include "loom/runtime.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

/// One dimension of a strided copy (strides in elements).
struct CopyDim {
  int64_t size, src, dst;
};

/// Copies `n` elements of `size` bytes `srcStride`/`dstStride` elements
/// apart: one memcpy when both runs are contiguous, else a typed loop.
void copyRun(char *dst, const char *src, int64_t n, int64_t size,
             int64_t dstStride, int64_t srcStride) {
  if (dstStride == 1 && srcStride == 1) {
    std::memcpy(dst, src, n * size);
    return;
  }
  auto typed = [&](auto zero) {
    using T = decltype(zero);
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(dst + i * dstStride * size, src + i * srcStride * size,
                  sizeof(T));
  };
  switch (size) {
  case 1:
    return typed(uint8_t());
  case 2:
    return typed(uint16_t());
  case 4:
    return typed(uint32_t());
  case 8:
    return typed(uint64_t());
  default:
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(dst + i * dstStride * size, src + i * srcStride * size,
                  size);
  }
}

/// The dimensions of a copy without those of size 1, and with each pair
/// of neighbours that is contiguous in both buffers merged into one.
std::vector<CopyDim> copyDims(int64_t rank, const int64_t *sizes,
                              const int64_t *srcStrides,
                              const int64_t *dstStrides) {
  std::vector<CopyDim> dims;
  for (int64_t i = 0; i < rank; ++i) {
    if (sizes[i] == 1)
      continue;
    dims.push_back({sizes[i], srcStrides[i], dstStrides[i]});
  }
  // Merge from the innermost outwards: outer (i) and inner (i + 1) merge
  // when stepping the outer one is stepping past the whole inner one.
  std::vector<CopyDim> merged;
  for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
    if (!merged.empty()) {
      CopyDim &inner = merged.back();
      if (it->src == inner.src * inner.size &&
          it->dst == inner.dst * inner.size) {
        inner.size *= it->size;
        continue;
      }
    }
    merged.push_back(*it);
  }
  std::reverse(merged.begin(), merged.end());
  return merged;
}

} // namespace

/// Contiguous runs of the innermost dimension copied with memcpy (or a
/// typed loop when strided), the outer dimensions stepped as an odometer.
extern "C" void memrefCopy(int64_t elementSize, loom_unranked_memref *src,
                           loom_unranked_memref *dst) {
  // Ranked descriptor: allocated, aligned, offset, sizes[rank], strides[rank].
  auto fields = [](loom_unranked_memref *m) {
    return static_cast<int64_t *>(m->descriptor);
  };
  int64_t rank = src->rank;
  int64_t *s = fields(src), *d = fields(dst);
  const char *srcBase = reinterpret_cast<char *>(s[1]) + s[2] * elementSize;
  char *dstBase = reinterpret_cast<char *>(d[1]) + d[2] * elementSize;
  const int64_t *sizes = s + 3;
  for (int64_t i = 0; i < rank; ++i)
    if (sizes[i] == 0)
      return;
  std::vector<CopyDim> dims =
      copyDims(rank, sizes, s + 3 + rank, d + 3 + rank);
  if (dims.empty()) { // rank 0, or every size 1
    std::memcpy(dstBase, srcBase, elementSize);
    return;
  }
  const CopyDim inner = dims.back();
  dims.pop_back();
  std::vector<int64_t> index(dims.size(), 0);
  int64_t so = 0, doff = 0;
  for (;;) {
    copyRun(dstBase + doff * elementSize, srcBase + so * elementSize,
            inner.size, elementSize, inner.dst, inner.src);
    int64_t i = static_cast<int64_t>(dims.size()) - 1;
    for (; i >= 0; --i) {
      so += dims[i].src;
      doff += dims[i].dst;
      if (++index[i] < dims[i].size)
        break;
      so -= dims[i].src * dims[i].size;
      doff -= dims[i].dst * dims[i].size;
      index[i] = 0;
    }
    if (i < 0)
      return;
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
