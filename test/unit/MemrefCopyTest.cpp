//===- MemrefCopyTest.cpp - The runtime's strided memref.copy -------------===//
//
// memrefCopy (what MLIR's memref.copy lowering calls for buffers that are
// not both contiguous) against an element-by-element copy: transposed and
// sliced layouts, offsets, dimensions of size 1 and 0, rank 0, element
// sizes 1 to 12 bytes.
//
//===----------------------------------------------------------------------===//

#include "loom/kernels.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

namespace {

/// A strided view of `buffer`: its descriptor in MLIR's ranked layout.
struct View {
  std::vector<int64_t> fields;
  loom_unranked_memref memref;

  View(char *buffer, int64_t offset, const std::vector<int64_t> &sizes,
       const std::vector<int64_t> &strides) {
    fields = {reinterpret_cast<int64_t>(buffer),
              reinterpret_cast<int64_t>(buffer), offset};
    fields.insert(fields.end(), sizes.begin(), sizes.end());
    fields.insert(fields.end(), strides.begin(), strides.end());
    memref.rank = static_cast<int64_t>(sizes.size());
    memref.descriptor = fields.data();
  }
};

/// Strides of a buffer holding `sizes` in the order `perm` (outermost
/// first), each dimension padded by `pad` elements: a transposed, sliced
/// view.
std::vector<int64_t> strides(const std::vector<int64_t> &sizes,
                             const std::vector<int> &perm, int64_t pad,
                             int64_t &span) {
  std::vector<int64_t> out(sizes.size());
  int64_t stride = 1;
  for (auto it = perm.rbegin(); it != perm.rend(); ++it) {
    out[*it] = stride;
    stride *= sizes[*it] + pad;
  }
  span = stride;
  return out;
}

void checkCopy(const std::vector<int64_t> &sizes, int64_t elementSize,
               std::mt19937 &rng) {
  int rank = static_cast<int>(sizes.size());
  std::vector<int> srcPerm(rank), dstPerm(rank);
  std::iota(srcPerm.begin(), srcPerm.end(), 0);
  std::iota(dstPerm.begin(), dstPerm.end(), 0);
  std::shuffle(srcPerm.begin(), srcPerm.end(), rng);
  if (rng() % 2)
    std::shuffle(dstPerm.begin(), dstPerm.end(), rng);
  int64_t srcPad = rng() % 3, dstPad = rng() % 2;
  int64_t srcSpan, dstSpan;
  std::vector<int64_t> srcStrides = strides(sizes, srcPerm, srcPad, srcSpan);
  std::vector<int64_t> dstStrides = strides(sizes, dstPerm, dstPad, dstSpan);
  int64_t srcOffset = rng() % 5, dstOffset = rng() % 5;
  std::vector<char> src((srcSpan + srcOffset) * elementSize);
  for (char &c : src)
    c = static_cast<char>(rng());
  std::vector<char> dst((dstSpan + dstOffset) * elementSize, 0x5a);
  std::vector<char> expected = dst;

  int64_t total = 1;
  for (int64_t s : sizes)
    total *= s;
  std::vector<int64_t> index(rank, 0);
  for (int64_t n = 0; n < total; ++n) {
    int64_t so = srcOffset, doff = dstOffset;
    for (int i = 0; i < rank; ++i) {
      so += index[i] * srcStrides[i];
      doff += index[i] * dstStrides[i];
    }
    std::memcpy(&expected[doff * elementSize], &src[so * elementSize],
                elementSize);
    for (int i = rank - 1; i >= 0; --i) {
      if (++index[i] < sizes[i])
        break;
      index[i] = 0;
    }
  }

  View s(src.data(), srcOffset, sizes, srcStrides);
  View d(dst.data(), dstOffset, sizes, dstStrides);
  memrefCopy(elementSize, &s.memref, &d.memref);
  std::string shape;
  for (int64_t v : sizes)
    shape += std::to_string(v) + " ";
  ASSERT_EQ(dst, expected) << "sizes " << shape << "element " << elementSize
                           << " bytes, pads " << srcPad << "/" << dstPad;
}

TEST(MemrefCopy, EqualsAnElementByElementCopy) {
  std::mt19937 rng(7);
  const std::vector<std::vector<int64_t>> shapes = {
      {},           {1},          {7},          {5, 3},   {1, 9},
      {4, 1, 6},    {3, 4, 5},    {2, 3, 4, 5}, {8, 1, 1}, {1, 1, 1},
      {2, 64, 3},   {32, 16},     {0, 4},       {3, 0, 2}};
  for (int trial = 0; trial < 8; ++trial)
    for (const auto &shape : shapes)
      for (int64_t element : {1, 2, 4, 8, 12})
        checkCopy(shape, element, rng);
}

} // namespace
