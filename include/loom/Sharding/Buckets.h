//===- Buckets.h - How gradient all-reduces are grouped into buckets ------===//
//
// The one rule for gradient buckets, used by the pass that emits them
// (loom-bucket-all-reduce) and by the planner that prices them (the cost
// table's per-call share and the overlapped step's simulation), so that
// the price cannot drift from the emitter: tensors join the open bucket in
// the order the backward pass makes them; a bucket holds at most
// `bucketBytes` (a larger tensor gets one of its own); the first bucket
// closes as soon as it holds `firstBucketBytes` (PyTorch DDP's rule for
// its first bucket; 0: like the others).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_SHARDING_BUCKETS_H
#define LOOM_SHARDING_BUCKETS_H

#include <cstdint>
#include <vector>

namespace mlir::loom {

class BucketFiller {
public:
  BucketFiller(double bucketBytes, double firstBucketBytes)
      : limit(bucketBytes), first(firstBucketBytes) {}

  /// Whether the open bucket must close before a tensor of `bytes` joins.
  bool closesBefore(double bytes) const {
    return held > 0 && held + bytes > limit;
  }
  /// Adds a tensor of `bytes` to the open bucket; true when the bucket
  /// must close after it (the first bucket, once full).
  bool add(double bytes) {
    held += bytes;
    return !firstClosed && first > 0 && held >= first;
  }
  /// The open bucket closed (it was emitted). It was the first bucket if
  /// it held firstBucketBytes; one closed earlier (a result read before the
  /// next member, such as the loss's) was not.
  void close() {
    if (first > 0 && held >= first)
      firstClosed = true;
    held = 0;
  }
  double bytesHeld() const { return held; }

  /// The number of buckets `sizes` (in the backward pass's order) make.
  static int count(const std::vector<double> &sizes, double bucketBytes,
                   double firstBucketBytes) {
    BucketFiller f(bucketBytes, firstBucketBytes);
    int n = 0;
    for (double b : sizes) {
      if (f.closesBefore(b)) {
        ++n;
        f.close();
      }
      if (f.add(b)) {
        ++n;
        f.close();
      }
    }
    return n + (f.bytesHeld() > 0 ? 1 : 0);
  }

private:
  double limit, first;
  double held = 0;
  bool firstClosed = false;
};

} // namespace mlir::loom

#endif // LOOM_SHARDING_BUCKETS_H
