//===- PipelineSearch.h - Stages, sub-meshes and schedules ------*- C++ -*-===//
//
// The planner's search with pipeline stages (PlannerOptions::
// pipelineStages != 1): for each stage count p that divides the devices,
// each 2-D shape of a stage's p-th of them (pp is the outermost axis, so
// stage-to-stage transfers use the link that holds p groups of D/p
// ranks), the intra-op ILP of that sub-mesh (Solver.h, one micro-batch,
// repeated layers sharing a choice) and the Megatron plan of the shape
// give per-layer costs (layerCosts: the same nodeCost/edgeCost/resharding
// as every other plan); for each rematerialization level and schedule the
// inter-op DP (InterOp.h) splits the layers into stages under the
// schedule's in-flight activations, and the schedule is simulated with the
// priced durations (stages::simulate). The fastest simulated step that
// fits is the plan. The Megatron-style 3-D baselines (tp <= 8 inside a
// node, p dividing the layers, layers split evenly, 1F1B, ZeRO-1) are
// priced on the same numbers.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PLANNER_PIPELINESEARCH_H
#define LOOM_PLANNER_PIPELINESEARCH_H

#include "loom/Planner/AutoShard.h"
#include "loom/Planner/Cluster.h"
#include "loom/Planner/InterOp.h"

namespace mlir::loom::planner {

/// Per repeated layer of `g` under `choice` on `costs.mesh` (what precedes
/// the layers counted with the first, what follows with the last): one
/// micro-batch's forward and backward, the step's gradient reductions and
/// updates, weights and activations held, and the transfer of its output
/// over `p2p`. `breakdown` (if given) gets each layer's memory by kind.
std::vector<LayerCost> layerCosts(const Graph &g, ArrayRef<int> choice,
                                  double remat, Costs &costs, const Link &p2p,
                                  std::vector<MemoryBreakdown> *breakdown =
                                      nullptr);

/// The search above; fills `plan` (mesh "pp=..,..", the pipeline, the
/// Megatron 3-D baselines with options.compareMegatron). Writes nothing
/// into the IR.
LogicalResult planPipeline(ModuleOp module, const Graph &base,
                           const Cluster &cluster,
                           const PlannerOptions &options, double limit,
                           Plan &plan, std::string &error);

/// The module's `mesh` has a pp axis: plans the stages' sub-mesh (the
/// other axes, at most two) by the same ILP, prices the program's stages
/// (loom.stage on the forward ops, whole repeated layers) or, when the ops
/// carry none, the DP's split, under options.schedule (or the best of
/// gpipe, 1f1b and zb-h1) and options.microBatches, without
/// rematerialization; fills `plan` and writes the shardings into the IR.
LogicalResult planFixedPipeline(ModuleOp module, const Graph &base,
                                const Cluster &cluster,
                                const PlannerOptions &options, double limit,
                                MeshOp mesh, Plan &plan, std::string &error);

} // namespace mlir::loom::planner

#endif // LOOM_PLANNER_PIPELINESEARCH_H
