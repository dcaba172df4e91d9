//===- Distributed.h - Running partitioned programs on a mesh ---*- C++ -*-===//
//
// The glue between a partitioned module (loom-partition) and the runtime:
// starts the runtime from the launcher environment, builds the mesh the
// module declares (checked against the number of ranks), makes it the mesh
// compiled collectives use, and converts tensors between their global form
// and this rank's shard under a #loom.sharding.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_EXECUTION_DISTRIBUTED_H
#define LOOM_EXECUTION_DISTRIBUTED_H

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Execution/HostTensor.h"
#include "loom/program.h"
#include "loom/runtime.h"
#include "mlir/IR/BuiltinOps.h"

#include <memory>
#include <optional>
#include <string>

namespace mlir::loom {

struct DistributedOptions {
  /// Seconds a collective may take (loom_runtime_options_t).
  double timeoutSeconds = 60.0;
};

class DistributedContext {
public:
  ~DistributedContext();
  /// This rank fails alone mid-run: teardown does not wait for the peers
  /// (loom_runtime_abandon).
  void abandon() const { loom_runtime_abandon(runtime); }

  /// Starts the runtime and creates the mesh `mesh` (or the module's only
  /// loom.mesh when null); fails when it has a different number of devices
  /// than the launcher started.
  static std::unique_ptr<DistributedContext>
  create(ModuleOp module, MeshOp mesh, const DistributedOptions &options,
         std::string &error);

  int rank() const;
  int size() const;
  /// Every rank's `values` (the same count on each), in rank order.
  std::optional<std::vector<int64_t>> allGather(llvm::ArrayRef<int64_t> values,
                                                std::string &error) const;
  MeshOp getMeshOp() const { return meshOp; }
  loom_runtime_t getRuntime() const { return runtime; }
  loom_mesh_t getMesh() const { return mesh; }

  /// The global type of a value of local type `local` sharded as `sharding`.
  RankedTensorType globalType(RankedTensorType local,
                              ShardingAttr sharding) const;
  /// Where this rank's block of a `global`-shaped tensor sharded as
  /// `sharding` starts, per dimension.
  SmallVector<int64_t> blockOffset(ArrayRef<int64_t> global,
                                   ShardingAttr sharding) const;
  /// Whether this rank holds the first copy of its block: its coordinate
  /// is 0 on every mesh axis `sharding` does not split (but `ignoredAxis`,
  /// e.g. a pipeline axis, whose members hold different tensors).
  bool isFirstCopy(ShardingAttr sharding, int32_t ignoredAxis = -1) const;
  /// Returns when every rank has called it; false (with `error`) when a
  /// rank failed (`ok` false on some rank) or the collective did.
  bool agree(bool ok, llvm::StringRef what, std::string &error) const;
  /// This rank's block of `global` under `sharding` (partial axes ignored).
  HostTensor localShard(const HostTensor &global,
                        ShardingAttr sharding) const;
  /// Reassembles the global tensor from every rank's `local` block (a
  /// collective: every rank calls it; every rank gets the result). Partial
  /// values are reduced first.
  std::optional<HostTensor> gatherGlobal(const HostTensor &local,
                                         ShardingAttr sharding,
                                         std::string &error) const;

private:
  DistributedContext() = default;

  loom_runtime_t runtime = nullptr;
  loom_mesh_t mesh = nullptr;
  mutable MeshOp meshOp;
};

/// Copies the block of `shape` at `srcOffset` in `src` (of `srcShape`) to
/// `dstOffset` in `dst` (of `dstShape`); elements of `bytes` bytes.
void copyBlock(const char *src, ArrayRef<int64_t> srcShape,
               ArrayRef<int64_t> srcOffset, char *dst,
               ArrayRef<int64_t> dstShape, ArrayRef<int64_t> dstOffset,
               ArrayRef<int64_t> shape, int64_t bytes);

/// Maps an element type to the runtime's loom_dtype_t.
loom_dtype_t runtimeType(Type element);
/// `sharding` with `mesh`'s axes by index, as the runtime and rank programs
/// take it.
::loom::program::Sharding toProgramSharding(ShardingAttr sharding, MeshOp mesh);
/// The element type of a runtime dtype.
Type elementTypeOf(loom_dtype_t dtype, MLIRContext *ctx);

} // namespace mlir::loom

#endif // LOOM_EXECUTION_DISTRIBUTED_H
