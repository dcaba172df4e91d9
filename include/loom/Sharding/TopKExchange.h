//===- TopKExchange.h - One gradient's top-k exchange, emitted and priced -===//
//
// What loom-compress-gradients writes in place of a gradient's sum
// reduction under --compress-gradients=topk:RATIO, as numbers: the pass
// builds its ops from these (k, the positions' width, the gathered
// lengths) and the planner prices the same two all-gathers and the same
// elementwise work (CostTable.cpp), so the price cannot drift from the
// emitter (issue 42 item 5, as Buckets.h does for gradient buckets).
//
//   acc      = partial + residual              n entries
//   idx      = top_k_indices(acc, k)           k = ceil(ratio * n), >= 1
//   sent     = acc[idx]
//   all      = scatter_add(all_gather(sent), all_gather(idx))
//   residual = acc - scatter_add(sent, idx)
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_SHARDING_TOPKEXCHANGE_H
#define LOOM_SHARDING_TOPKEXCHANGE_H

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace mlir::loom {

struct TopKExchange {
  /// This device's entries of the gradient (and of its residual).
  int64_t n = 0;
  /// Entries each device sends.
  int64_t k = 0;
  /// Devices exchanging (the product of the reduction's axes).
  int64_t group = 1;
  /// Bytes of a position: 4 below 2^31 entries (as Deep Gradient
  /// Compression sends them), else 8.
  unsigned indexBytes = 4;

  static TopKExchange of(int64_t n, int64_t group, double ratio) {
    TopKExchange x;
    x.n = n;
    x.group = group;
    x.k = std::min<int64_t>(
        n, std::max<int64_t>(1, static_cast<int64_t>(std::ceil(ratio * n))));
    x.indexBytes = n <= INT32_MAX ? 4 : 8;
    return x;
  }

  /// Entries of each all-gather's result (positions, then values).
  int64_t gathered() const { return group * k; }
  /// Bytes of the positions' and of the values' all-gather results.
  double positionBytes() const { return double(gathered()) * indexBytes; }
  double valueBytes(double elementBytes) const {
    return double(gathered()) * elementBytes;
  }
  /// The elementwise work around the gathers: the selection (a partial
  /// sort of n entries for k), the two scatter-adds and the adds.
  double flops() const {
    return double(n) * std::log2(std::max(2.0, double(k))) +
           double(gathered());
  }
  double bytesTouched(double elementBytes) const {
    return (3.0 * double(n) + 2.0 * double(gathered())) * elementBytes;
  }
};

} // namespace mlir::loom

#endif // LOOM_SHARDING_TOPKEXCHANGE_H
