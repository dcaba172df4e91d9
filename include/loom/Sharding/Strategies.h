//===- Strategies.h - Parallelism presets as argument shardings -*- C++ -*-===//
//
// dp, tp (Megatron), dp-tp, zero1/2/3: annotations of a training step's
// arguments (data, weights, optimizer state) that loom-partition turns into
// the program users know from DeepSpeed and Megatron-LM.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECT_LOOM_TRANSFORMS_STRATEGIES_H
#define LOOM_DIALECT_LOOM_TRANSFORMS_STRATEGIES_H

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>

namespace mlir::loom {

struct StrategyOptions {
  /// dp, tp, dp-tp, zero1, zero2, zero3 or replicated.
  std::string strategy = "dp";
  std::string dpAxis = "dp";
  std::string tpAxis = "tp";
};

/// The presets loomc and loom-sharding-pipeline hand to the planner, which
/// prices them and writes them as plans (the program does what is priced):
/// all of them (dp, tp, dp-tp, zero1, zero2, zero3, replicated).
bool isPlannedPreset(StringRef strategy);

/// Sets `loom.sharding` on every argument of the training step `fn`.
LogicalResult applyStrategy(func::FuncOp fn, MeshOp mesh,
                            const StrategyOptions &options);

} // namespace mlir::loom

#endif // LOOM_DIALECT_LOOM_TRANSFORMS_STRATEGIES_H
