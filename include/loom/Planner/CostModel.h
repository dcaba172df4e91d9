//===- CostModel.h - What collectives, resharding and compute cost -*- C++ -*-===//
//
// The formulas the planner prices with (ring algorithms, as NCCL and MPI
// implement them for large messages; roofline compute), and `Costs`, which
// prices them on one mesh shape. Resharding is priced step by step as the
// resharding library plans it (Sharding/Reshard.h): the collectives the
// planner pays for are the ones loom-partition emits.
//
// Bytes are per device; `n` devices share a link of `bandwidth` bytes/s per
// direction and `latency` seconds per step.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PLANNER_COSTMODEL_H
#define LOOM_PLANNER_COSTMODEL_H

#include "loom/Dialect/Loom/IR/Collectives.h"
#include "loom/Planner/Cluster.h"
#include "loom/Sharding/Reshard.h"

#include "llvm/ADT/SmallVector.h"

#include <string>
#include <vector>

namespace mlir::loom::planner {

// The kinds and byte counts are the dialect's (Collectives.h): what the
// planner prices is what the ops report.
using ::mlir::loom::CollectiveKind;
using ::mlir::loom::collectiveBytesSent;
using ::mlir::loom::collectiveName;

/// Sent bytes over the bandwidth plus one latency per ring step
/// (collectiveSteps) plus the link's fixed cost per call. Zero for one
/// device.
double collectiveTime(CollectiveKind kind, double bytes, int64_t n,
                      const Link &link);

/// Roofline: max(flops / (peak * efficiency), bytes / memory bandwidth),
/// the peak for 16-bit floats when `half`.
double computeTime(const DeviceSpec &device, double flops, double bytes,
                   bool half);

/// A set of mesh axes: bit a stands for axis a (0 is the major axis).
using Mask = uint64_t;
Mask maskOf(ArrayRef<int> axes);
/// The axes of `m`, ascending.
AxisSharding::Axes axesOf(Mask m);

/// A mesh shape the planner prices: axis sizes (major first), names and the
/// link each axis's collectives use.
struct MeshShape {
  SmallVector<int64_t> sizes;
  SmallVector<std::string> names;
  SmallVector<Link> links;

  int rank() const { return sizes.size(); }
  /// Devices in a group over the axes of `m`.
  int64_t n(Mask m) const;
  /// The slowest link among the axes of `m` (the largest latency).
  Link link(Mask m) const;
  /// "[dp, tp]".
  std::string axes(Mask m) const;
  /// "dp=8,tp=8".
  std::string str() const;
  /// A candidate shape whose axes are not named yet: "8x4" (outer x inner).
  std::string shape() const;
};

/// "replicated", or `[{"dp"}, {}]` with the mesh's axis names.
std::string describe(const AxisSharding &s, const MeshShape &mesh);

/// A collective as the report lists it.
struct Collective {
  std::string kind; // all_reduce, all_gather, reduce_scatter, all_to_all
  std::string axes; // "[dp]", "[dp, tp]"
  std::string where;
  double bytes = 0; // per device per call
  double seconds = 0;
  double count = 1;
  /// Merged: where each call is (the ops and edges that price it).
  std::vector<std::string> sites;
};

/// Prices collectives, resharding and compute on one mesh shape. With `log`
/// set, every priced collective is recorded (at `where`, `weight` times).
struct Costs {
  const DeviceSpec &device;
  const MeshShape &mesh;
  std::vector<Collective> *log = nullptr;
  std::string where;
  double weight = 1;
  /// Gradient all-reduces are bucketed (loom-bucket-all-reduce): their
  /// latency and per-call overhead are paid once per bucket, not per
  /// tensor; each pays `bucketShare` of them (its bytes over a bucket's,
  /// or over all gradients' when they fill less than one). Only
  /// all-reduces: the program buckets no other collective (ZeRO's
  /// reduce-scatters and all-gathers pay their calls in full).
  bool bucketed = false;
  double bucketShare = 0;

  Costs(const DeviceSpec &device, const MeshShape &mesh,
        std::vector<Collective> *log = nullptr)
      : device(device), mesh(mesh), log(log) {}

  /// `order`: the group's axes in the collective's order (the report names
  /// them so; empty: ascending, as `axes`).
  double collective(CollectiveKind kind, Mask axes, double bytes,
                    ArrayRef<int> order = {});
  /// The collectives of planReshard from `from` to `to` for a value of
  /// global `shape` with `elementBytes` per element; infinite when the
  /// library cannot reshard (never for shardings the planner builds).
  double reshard(const AxisSharding &from, const AxisSharding &to,
                 ArrayRef<int64_t> shape, double elementBytes);
  /// The bytes every device sends for that resharding (the report's and
  /// the tests' measure).
  double reshardBytes(const AxisSharding &from, const AxisSharding &to,
                      ArrayRef<int64_t> shape, double elementBytes);
  double compute(double flops, double bytes, bool half) const {
    return computeTime(device, flops, bytes, half);
  }
};

} // namespace mlir::loom::planner

#endif // LOOM_PLANNER_COSTMODEL_H
