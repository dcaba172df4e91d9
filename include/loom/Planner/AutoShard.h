//===- AutoShard.h - Choosing shardings with a cost model and an ILP -*- C++ -*-===//
//
// The planner's entry point: plans a training step (or a forward function
// whose first result is the loss) for a cluster and writes the plan into
// the IR. The pieces, each in its own file:
//
//   Cluster.h      what the hardware is (presets, JSON files)
//   CostModel.h    collective/roofline formulas; pricing on one mesh shape,
//                  resharding by the resharding library's steps
//   Graph.h        forward ops, parameters, inputs; repeated layers
//   Candidates.h   the strategies of each node, from its sharding rule
//   CostTable.h    a whole step per choice; the solver's numbers
//   Solver.h       the ILP on numbers only (CBC)
//   Megatron.h     the DP x TP baseline under the same cost model
//   Report.h       the plan as users read it
//   ApplyPlan.h    the plan as shardings in the IR
//
// autoShard searches every 2-D shape of the cluster's devices (and 3-D
// ones when the cluster has three link levels or it is asked to; or the
// module's mesh) and rematerialization of none, half or all repeated
// layers, and keeps the fastest plan that fits in memory.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PLANNER_AUTOSHARD_H
#define LOOM_PLANNER_AUTOSHARD_H

#include "loom/Planner/Report.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mlir::loom::planner {

struct PlannerOptions {
  /// Preset or file (see Cluster.h).
  std::string cluster = "cpu-local";
  /// Plan for the module's mesh as it is (else: choose a 2- or 3-D shape of the
  /// cluster's devices). Set automatically when the function already has
  /// shardings on a mesh (they are kept as hard constraints).
  bool fixedMesh = false;
  /// Per-device memory limit in bytes; 0: the device's capacity times
  /// `memoryFraction`.
  double memoryLimit = 0;
  double memoryFraction = 0.9;
  /// Seconds CBC may spend on one ILP; the best plan found is used and its
  /// optimality gap reported.
  double timeLimit = 20;
  /// Optimizer state tensors per parameter when the function is not a
  /// training step (2: Adam).
  int optimizerStates = 2;
  /// Rematerialization of the repeated layers: < 0 searches none, half and
  /// all of them; otherwise this fraction (0: none, 1: every layer).
  double remat = -1;
  /// Most axes of a mesh the planner chooses (2 or 3); 0: 3 when the
  /// cluster has 3 or more link levels (one axis per level can then use
  /// each level's links), else 2.
  int meshAxes = 0;
  /// Also price the Megatron-style DP x TP plan of every mesh shape (the
  /// `dp-tp` preset) under the same cost model.
  bool compareMegatron = false;
  /// Check the ILP against exhaustive search (small graphs only).
  bool bruteForce = false;
  /// A preset to price and write instead of searching (dp, tp, dp-tp,
  /// zero1, zero2, zero3, replicated) on the module's mesh, with these
  /// axis names. `remat` is then the fraction of layers already marked.
  std::string preset;
  std::string dpAxis = "dp", tpAxis = "tp";
  /// Pipeline search (PipelineSearch.h): 1 searches no pipeline; 0 every
  /// stage count that divides the devices and is at most the layers; N > 1
  /// exactly N stages. The model's batch is one micro-batch; a step runs
  /// `microBatches` of them.
  int pipelineStages = 1;
  int microBatches = 1;
  /// loom-bucket-all-reduce's bucket size (0: gradients not bucketed).
  double bucketBytes = 25.0 * 1024 * 1024;
  /// Whether collectives are started early and waited for late
  /// (loom-overlap-collectives runs after partitioning), as priced.
  bool overlap = true;
  /// The schedule to price (gpipe, 1f1b, zb-h1); empty: each of them.
  std::string schedule;
  /// Seconds each sub-mesh's ILP may take in the pipeline search.
  double pipelineTimeLimit = 1;
};

/// `mesh` as the planner prices it: its axes, outermost first, each on the
/// innermost link level of `cluster` that holds its groups (or the
/// bandwidth and latency the axis declares).
MeshShape meshShapeOf(const Cluster &cluster, MeshOp mesh);

/// Names a chosen mesh's axes by role (tp, dp, sp, rep) and returns the
/// axes to keep (size-1 axes split nothing, unless the mesh is `fixed`).
SmallVector<int> nameAxes(MeshShape &mesh, const Graph &g, ArrayRef<int> choice,
                          bool fixed);

/// Plans `fn` (in `module`) and writes the shardings into the IR
/// (ApplyPlan.h). On failure (nothing fits, bad cluster) returns a message
/// in `error`.
FailureOr<Plan> autoShard(ModuleOp module, func::FuncOp fn,
                          const PlannerOptions &options, std::string &error);

} // namespace mlir::loom::planner

#endif // LOOM_PLANNER_AUTOSHARD_H
