//===- Reshard.h - The one way Loom moves a value between shardings -*- C++ -*-===//
//
// planReshard decides which collectives take a value from one sharding to
// another; everything that reshards asks it: the partitioner turns the steps
// into ops (buildReshard), the planner prices the same steps
// (planner::Costs::reshard). So a plan's predicted communication is the
// communication the program performs, and one fix reaches both.
//
// Shardings here are plain data over a mesh whose axes are numbered (0 is
// the major axis), as upstream Shard's `MeshSharding` is: per dimension the
// axes it is split over, major to minor — their order matters: [{"tp",
// "dp"}] and [{"dp", "tp"}] hold different blocks on each device — and the
// axes over which the value is a partial result.
//
// The steps, in order (the fewest collectives the two shardings allow):
//   1. partial axes: reduce_scatter into a dimension whose next wanted
//      axes they are, all_reduce over the rest;
//   2. all_to_all for an axis leaving the end of one dimension for the
//      place right after what another dimension holds;
//   3. all_gather of each dimension's axes past the common prefix;
//   4. all_slice (no communication) of the axes that appear.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_SHARDING_RESHARD_H
#define LOOM_SHARDING_RESHARD_H

#include "loom/Dialect/Loom/IR/Collectives.h"
#include "loom/Dialect/Loom/IR/LoomOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace mlir::loom {

/// A tensor sharding with mesh axes named by index.
struct AxisSharding {
  using Axes = SmallVector<int, 2>;
  /// Per dimension, the axes it is split over, major to minor.
  SmallVector<Axes, 4> dims;
  /// Axes over which the value is a partial result, combined by `reduction`.
  Axes partial;
  ReductionKind reduction = ReductionKind::sum;

  AxisSharding() = default;
  /// Replicated, of rank `rank`.
  explicit AxisSharding(int64_t rank) : dims(rank) {}

  int64_t getRank() const { return dims.size(); }
  bool isPartial() const { return !partial.empty(); }
  /// Split over nothing and partial over nothing.
  bool isReplicated() const;
  /// Bit a is set when axis a splits some dimension.
  uint64_t usedMask() const;
  uint64_t partialMask() const;
  /// Devices holding different blocks: the product of the split axes' sizes.
  int64_t numShards(ArrayRef<int64_t> axisSizes) const;
  /// The per-device shape of a value of global `shape`.
  SmallVector<int64_t, 4> localShape(ArrayRef<int64_t> shape,
                                     ArrayRef<int64_t> axisSizes) const;

  bool operator==(const AxisSharding &o) const {
    return dims == o.dims && partial == o.partial &&
           (partial.empty() || reduction == o.reduction);
  }
  bool operator!=(const AxisSharding &o) const { return !(*this == o); }
};

/// One collective of a resharding. Shapes are per device.
struct ReshardStep {
  CollectiveKind kind;
  /// The group's axes, major to minor.
  AxisSharding::Axes axes;
  /// all_gather, all_slice, reduce_scatter: the dimension; all_to_all: the
  /// dimension that gets split (split_dim). -1 for all_reduce.
  int64_t dim = -1;
  /// all_to_all: the dimension that is gathered (concat_dim).
  int64_t concatDim = -1;
  ReductionKind reduction = ReductionKind::sum;
  SmallVector<int64_t, 4> inShape, outShape;

  /// The buffer collectiveBytesSent is stated for (as
  /// CollectiveOpInterface::getBufferBytes), in elements.
  int64_t bufferElements() const;
};

/// The collectives that move a value of global `shape` from `from` to `to`
/// on a mesh of `axisSizes` (see the file comment). Fails, with the reason
/// in `error`, when `to` makes a value partial that is not, or a dimension
/// does not divide over its axes.
FailureOr<SmallVector<ReshardStep>> planReshard(const AxisSharding &from,
                                                const AxisSharding &to,
                                                ArrayRef<int64_t> shape,
                                                ArrayRef<int64_t> axisSizes,
                                                std::string *error = nullptr);

//===----------------------------------------------------------------------===//
// IR
//===----------------------------------------------------------------------===//

/// `s` with its axes numbered as `mesh` orders them.
AxisSharding toAxisSharding(ShardingAttr s, MeshOp mesh);
ShardingAttr toShardingAttr(const AxisSharding &s, MeshOp mesh);
/// The mesh's axis sizes, major first.
SmallVector<int64_t> axisSizes(MeshOp mesh);

/// Emits the collectives of planReshard at `b`'s insertion point: `local`
/// holds this device's piece of a value of type `global` sharded as `from`;
/// the result holds its piece under `to`. Errors are emitted at `loc`.
FailureOr<Value> buildReshard(OpBuilder &b, Location loc, Value local,
                              ShardingAttr from, ShardingAttr to,
                              RankedTensorType global, MeshOp mesh);

/// The ops for `steps`, starting from `local`.
Value buildReshardSteps(OpBuilder &b, Location loc, Value local,
                        ArrayRef<ReshardStep> steps, MeshOp mesh);

/// "[{"tp", "dp"}, {}] partial sum {"x"}": for messages and remarks, with
/// the names `axisName` gives the axes.
std::string describe(const AxisSharding &s,
                     llvm::function_ref<StringRef(int)> axisName);
std::string describe(const AxisSharding &s, MeshOp mesh);
std::string describe(const ReshardStep &step, MeshOp mesh);

} // namespace mlir::loom

#endif // LOOM_SHARDING_RESHARD_H
