//===- Report.h - What the planner chose and predicts -----------*- C++ -*-===//
//
// A plan as users read it (`--plan-report`, text or JSON): the mesh and its
// links, the predicted step time and per-device memory, the solver's
// status, per-op shardings with their collectives and costs, the
// collectives of a step, runners-up and the Megatron baselines.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PLANNER_REPORT_H
#define LOOM_PLANNER_REPORT_H

#include "loom/Planner/CostTable.h"

#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace mlir::loom::planner {

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
  /// Pipelined plans: micro-batches and schedule (empty otherwise).
  int microBatches = 0;
  std::string schedule;
};

/// A pipelined plan (PipelineSearch.h): stages of consecutive layers, each
/// on its own sub-mesh, running `schedule` over `microBatches`.
struct PipelineInfo {
  int stages = 1, microBatches = 1;
  std::string schedule;
  /// Per stage: its first repeated layer (the first stage also holds what
  /// comes before the layers, the last what comes after).
  std::vector<int> firstLayer;
  /// Per stage: forward+backward of one micro-batch with its transfers,
  /// and the memory held (weights and in-flight activations).
  std::vector<double> stageTime, stageMemory;
  std::vector<int> inFlight;
  /// Idle share of the simulated schedule, and the DP's objective.
  double bubble = 0, objective = 0;
  /// Stage boundaries as loomc takes them (--stage-boundaries).
  std::string boundaries;
  /// Per stage, bytes per device: what it holds all step (parameters,
  /// gradients, optimizer state, update buffers) and, per micro-batch, its
  /// activations and inputs (held `inFlight` times); and per boundary the
  /// bytes each device sends forward per micro-batch (its gradient comes
  /// back the same size).
  std::vector<MemoryBreakdown> stageHeld;
  std::vector<double> stageActivations, transferBytes;
  /// Per boundary: the messages each direction sends per micro-batch.
  std::vector<int> transferMessages;
  /// The bubble of the schedule with unit durations (forward 1, backward
  /// 2), as loom-schedule-pipeline prints it for the emitted program.
  double unitBubble = 0;
  /// The stages were the program's (loom.stage) rather than the search's.
  bool stagesFromProgram = false;
};

struct Plan {
  std::string cluster, device;
  /// The preset priced (--strategy dp, ...), or empty for a searched plan.
  std::string preset;
  /// Chosen mesh, as "dp=8,tp=8", and its axes.
  std::string mesh;
  std::vector<std::string> axisNames;
  std::vector<int64_t> axisSizes;
  std::vector<std::string> axisLinks;
  double stepTime = 0, computeTime = 0, commTime = 0;
  /// Collectives started early and waited for late (loom.overlap on the
  /// module): the overlapped schedule priced faster than the blocking one.
  bool overlap = false;
  /// Whether the device overlaps started collectives at all
  /// (DeviceSpec::overlapSlowdown >= 0) and the program may (--overlap).
  bool overlapPriced = false;
  double remat = 0; // fraction of repeated layers recomputed
  MemoryBreakdown memory;
  double memoryLimit = 0;
  // Solver.
  /// "optimal" when every ILP of the search was solved to optimality (or
  /// proven infeasible), else "time limit".
  std::string solverStatus;
  /// (stepTime - searchBound) / stepTime: how much faster than the chosen
  /// plan any plan of the whole search (every mesh shape, every remat
  /// level) could be.
  double gap = 0;
  /// The lower bound over the whole search: the least, over mesh shapes,
  /// of the best bound proven for that shape (its ILPs', or the unlimited
  /// ILP's for a shape skipped because that bound was already too slow).
  double searchBound = 0;
  int variables = 0, constraints = 0, ilps = 0;
  /// ILPs the time limit stopped before they proved optimality.
  int ilpsStopped = 0;
  /// Planning (graph, strategies, ILPs), and pricing the Megatron plans
  /// (not part of planning).
  double planningSeconds = 0, ilpSeconds = 0, megatronSeconds = 0;
  /// loom-plan-pipeline's comparison of the best pipelined plan with the
  /// best plan without a pipeline (the model's loom.pipeline_plan), as one
  /// sentence; empty when it did not compare.
  std::string pipelineDecision;
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
  /// With a pipeline search: the chosen pipeline (stages == 1: none).
  PipelineInfo pipeline;
  /// Plans the search priced: every (stages, sub-mesh, micro-batch) config.
  int pipelineConfigs = 0;
  /// The pipeline search's own time (ILPs included).
  double pipelineSeconds = 0;
};

/// Fills `plan.ops` and `plan.collectives` for `choice` on `mesh` (whose
/// axes carry their final names).
void describeChoice(Plan &plan, const Graph &g, ArrayRef<int> choice,
                    double remat, const DeviceSpec &device,
                    const MeshShape &mesh);

void printPlan(const Plan &plan, llvm::raw_ostream &os);
void printPlanJson(const Plan &plan, llvm::raw_ostream &os);

/// Memory as "12.34 GiB" from 0.01 GiB up, smaller units below.
std::string formatMemory(double bytes);
/// A memory breakdown as "parameters 1.3 MiB, gradients ..., inputs ..."
/// (and the updated copies, when there are any).
std::string formatBreakdown(const MemoryBreakdown &m);
/// Seconds as "1.234 s", "12.345 ms" or "5.0 us".
std::string formatSeconds(double seconds);

} // namespace mlir::loom::planner

#endif // LOOM_PLANNER_REPORT_H
