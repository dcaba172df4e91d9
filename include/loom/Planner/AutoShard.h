//===- AutoShard.h - Choosing shardings with a cost model and an ILP -*- C++ -*-===//
//
// The planner reads a training step (or a forward function whose first
// result is the loss), builds a graph of its forward ops, parameters and
// inputs, and gives every node a set of candidate shardings on a device
// mesh: for ops, every assignment of mesh axes to the factors of the op's
// sharding rule (with all-reduce or reduce-scatter of partial results); for
// tensors, every split of their dimensions. The cost model prices each
// choice for a whole training step (forward, backward, optimizer update):
// compute by roofline, collectives by ring formulas on the mesh axis's link,
// resharding between producer and consumer in both directions (values
// forward, gradients backward), and per-device memory (parameters,
// gradients and optimizer state under ZeRO-style splits, activations saved
// for the backward pass). An integer program (CBC) picks one candidate per
// node minimizing the step time under the memory limit. Repeated layers are
// found structurally and share variables, so a 96-layer model costs one
// layer's ILP. Without a fixed mesh, every 2-D shape of the cluster's
// devices is planned and the fastest kept; activation rematerialization of
// none, half or all repeated layers is part of the search.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PLANNER_AUTOSHARD_H
#define LOOM_PLANNER_AUTOSHARD_H

#include "loom/Planner/Cluster.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mlir::loom::planner {

struct PlannerOptions {
  /// Preset or file (see Cluster.h).
  std::string cluster = "cpu-local";
  /// Plan for the module's mesh as it is (else: choose a 2-D shape of the
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
  bool remat = true;
  /// Also price the Megatron-style DP x TP plan of every mesh shape (the
  /// `dp-tp` preset) under the same cost model.
  bool compareMegatron = false;
  /// Check the ILP against exhaustive search (small graphs only).
  bool bruteForce = false;
};

struct Collective {
  std::string kind; // all_reduce, all_gather, reduce_scatter, all_to_all
  std::string axes; // "[dp]", "[dp, tp]"
  std::string where;
  double bytes = 0; // per device per call
  double seconds = 0;
  double count = 1;
};

struct OpRow {
  std::string op;       // op name and location
  std::string sharding; // result sharding
  std::string note;     // e.g. "all_reduce over [tp]"
  double count = 1;     // ops sharing this row (repeated layers)
  double compute = 0;   // seconds per op, forward+backward
  double comm = 0;      // seconds per op (its own collectives and resharding)
};

struct Alternative {
  std::string mesh;
  double remat = 0;
  bool feasible = false;
  double seconds = 0;
  double memory = 0;
};

struct MemoryBreakdown {
  double parameters = 0, gradients = 0, optimizer = 0, activations = 0,
         inputs = 0;
  double total() const {
    return parameters + gradients + optimizer + activations + inputs;
  }
};

struct Plan {
  std::string cluster, device;
  /// Chosen mesh, as "dp=8,tp=8", and its axes.
  std::string mesh;
  std::vector<std::string> axisNames;
  std::vector<int64_t> axisSizes;
  std::vector<std::string> axisLinks;
  double stepTime = 0, computeTime = 0, commTime = 0;
  double remat = 0; // fraction of repeated layers recomputed
  MemoryBreakdown memory;
  double memoryLimit = 0;
  // Solver.
  std::string solverStatus;
  double gap = 0;
  int variables = 0, constraints = 0, ilps = 0;
  /// Planning (graph, strategies, ILPs), and pricing the Megatron plans
  /// (not part of planning).
  double planningSeconds = 0, ilpSeconds = 0, megatronSeconds = 0;
  // Graph.
  int nodes = 0, distinctNodes = 0, layers = 0, opsPerLayer = 0;
  std::vector<OpRow> ops;
  std::vector<Collective> collectives;
  std::vector<Alternative> runnersUp;
  /// With compareMegatron: every DP x TP factorization's Megatron plan.
  std::vector<Alternative> megatron;
  /// With bruteForce: the exhaustive search's best step time (-1: too big).
  double bruteForceTime = -1;
  double bruteForceCombinations = 0;
};

/// Plans `fn` (in `module`) and writes the shardings into the IR: a mesh
/// op (created when the mesh is chosen), argument shardings (optimizer
/// state split as the plan says) and result shardings on forward ops. On
/// failure (nothing fits, bad cluster) returns a message.
FailureOr<Plan> autoShard(ModuleOp module, func::FuncOp fn,
                          const PlannerOptions &options, std::string &error);

void printPlan(const Plan &plan, llvm::raw_ostream &os);
void printPlanJson(const Plan &plan, llvm::raw_ostream &os);

} // namespace mlir::loom::planner

#endif // LOOM_PLANNER_AUTOSHARD_H
