//===- Megatron.h - The DP x TP baseline under the same cost model -*- C++ -*-===//
//
// The `dp-tp` preset (Megatron-LM's plan: batch over dp, weight pairs
// column/row split over tp) applied to a copy of the step on a 2-D mesh of
// the planner's shape, propagated, and read back as one strategy per node,
// so that the planner can price it (a baseline for the report) and start
// the ILP from it.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PLANNER_MEGATRON_H
#define LOOM_PLANNER_MEGATRON_H

#include "loom/Planner/Graph.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir::loom::planner {

/// A strategy per node of `g` (on a 2-D mesh whose axes are dp, tp), adding
/// to a node's candidates the strategy the preset needs when it is not one.
/// Fails when the preset does not apply (no batch to split, ...).
FailureOr<SmallVector<int>> megatronChoice(ModuleOp module, Graph &g,
                                           Costs &costs);

} // namespace mlir::loom::planner

#endif // LOOM_PLANNER_MEGATRON_H
