//===- Propagation.h - Completing shardings over a function -----*- C++ -*-===//

#ifndef LOOM_LIB_DIALECT_LOOM_TRANSFORMS_PROPAGATION_H
#define LOOM_LIB_DIALECT_LOOM_TRANSFORMS_PROPAGATION_H

#include "loom/Sharding/FactorSharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

#include <string>

namespace mlir::loom {

struct PropagationResult {
  /// Every tensor value of the function (arguments and op results).
  DenseMap<Value, ShardingAttr> shardings;
  /// Ops whose operands disagreed on a factor (the first kept its way).
  SmallVector<std::pair<Operation *, std::string>> conflicts;
};

/// Completes the shardings of `fn` from the ones recorded in the IR and
/// `seeds` (which take precedence), through the ops' sharding rules:
/// forward and backward sweeps until nothing changes; arguments without a
/// sharding are replicated; split factors of a result come before
/// reduction factors, so that a batch split survives a contraction over a
/// split weight (the weight is gathered instead). Values nothing decides
/// are replicated.
///
/// With `freeArguments`, arguments without a sharding are decided by
/// propagation too (used to explore where a seed sharding flows).
PropagationResult propagate(func::FuncOp fn, MeshOp mesh,
                            const DenseMap<Value, ShardingAttr> &seeds,
                            bool freeArguments = false);
inline PropagationResult propagate(func::FuncOp fn, MeshOp mesh) {
  return propagate(fn, mesh, DenseMap<Value, ShardingAttr>());
}

/// loom-partition's rewrite of `fn` under `plan` on `mesh`: `fn` is
/// replaced by a function of the same name with local types and
/// collectives (and erased); an error on `fn` otherwise. With
/// `dropoutOnRows`, a dropout whose input is split along its first
/// dimension only runs on its rows, tagged loom.micro_batch_rows (its mask
/// is not the whole tensor's: the caller offsets it per block).
LogicalResult partitionFunction(func::FuncOp fn, MeshOp mesh,
                                const PropagationResult &plan,
                                bool dropoutOnRows = false);

} // namespace mlir::loom

#endif // LOOM_LIB_DIALECT_LOOM_TRANSFORMS_PROPAGATION_H
