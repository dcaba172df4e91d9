//===- Megatron.h - Presets as plans ----------------------------*- C++ -*-===//
//
// A preset (loom-apply-strategy: dp, tp, dp-tp as Megatron-LM plans it,
// zero1/2/3) applied to a copy of the step, propagated, and read back as one
// strategy per node of the planner's graph. So the planner prices a preset
// with the same cost model as its own plans, and `--strategy dp` etc. are
// written into the IR and partitioned exactly as a searched plan is: what
// is priced is what the program does. The `dp-tp` plan of every mesh shape
// is also the ILP's start and the report's baseline.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PLANNER_MEGATRON_H
#define LOOM_PLANNER_MEGATRON_H

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Planner/Graph.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir::loom {
struct StrategyOptions;
} // namespace mlir::loom

namespace mlir::loom::planner {

/// A strategy per node of `g` for `preset` on `mesh` (whose axes are those
/// of `costs.mesh`, in order), adding to a node's candidates the strategy
/// the preset needs when it is not one. Sets `g.shardState` as the preset
/// does. Fails, with the preset's error, when it does not apply.
FailureOr<SmallVector<int>> presetChoice(Graph &g, Costs &costs, MeshOp mesh,
                                         const StrategyOptions &preset);

/// A strategy per node of `g` (on a 2-D mesh whose axes are dp, tp), adding
/// to a node's candidates the strategy the preset needs when it is not one.
/// Fails when the preset does not apply (no batch to split, ...).
FailureOr<SmallVector<int>> megatronChoice(ModuleOp module, Graph &g,
                                           Costs &costs);

} // namespace mlir::loom::planner

#endif // LOOM_PLANNER_MEGATRON_H
