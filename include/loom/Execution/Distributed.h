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
  /// Mesh axis indices of `names`.
  SmallVector<int32_t> axisIndices(ArrayRef<StringRef> names) const;

  loom_runtime_t runtime = nullptr;
  loom_mesh_t mesh = nullptr;
  mutable MeshOp meshOp;
};

/// Maps an element type to the runtime's loom_dtype_t.
loom_dtype_t runtimeType(Type element);

} // namespace mlir::loom

#endif // LOOM_EXECUTION_DISTRIBUTED_H
