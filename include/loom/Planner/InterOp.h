//===- InterOp.h - Layers to pipeline stages, by dynamic programming -*- C++ -*-===//
//
// The inter-op half of the planner (Alpa's, on numbers only, beside the
// intra-op ILP of Solver.h): given what each layer costs on one stage's
// sub-mesh for one micro-batch (priced by the intra-op plan through the
// same cost model: PipelineSearch.h), choose the contiguous layers of each
// of `p` stages so that the pipelined step is fastest and every stage fits
// its memory.
//
// The objective, for stage times t_i = F_i + B_i (+ the transfer of what
// stage i sends, both directions) and stage 0's update u_0:
//
//     T = sum_i t_i + (m - 1) max_i t_i + u_0
//
// the 1F1B/GPipe step with m micro-batches: one pass through every stage
// plus m - 1 periods of the slowest (Narayanan et al. SC21, Alpa eq. 2);
// stage 0 finishes last and then updates. Stage i's memory is its weights
// (parameters, gradients, optimizer state, held all step) plus `inFlight[i]`
// micro-batches of its activations (1F1B: p - i; the schedule simulator
// counts them). The DP enumerates the cap on max_i t_i and, for each,
// minimizes sum_i t_i over splits whose stages all stay under the cap and
// fit: exact for T (bruteForceSplit checks it). The schedule's simulated
// time (stages::simulate with these durations) is what the planner then
// compares across stage counts, meshes and schedules.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PLANNER_INTEROP_H
#define LOOM_PLANNER_INTEROP_H

#include "loom/Stages/Transfers.h"

#include <vector>

namespace mlir::loom::planner {

/// One layer on one stage's sub-mesh (the first layer carries what comes
/// before the repeated layers, e.g. the embedding; the last what comes
/// after, e.g. the head and the loss).
struct LayerCost {
  /// Seconds per micro-batch: forward, backward (compute and the layer's
  /// own collectives, resharding and rematerialization included).
  double fwd = 0, bwd = 0;
  /// Seconds per step: gradient reductions and the optimizer's update.
  double step = 0;
  /// Bytes per device held all step (parameters, gradients, optimizer
  /// state) and per micro-batch in flight (saved activations, inputs).
  double weights = 0, activations = 0;
  /// Seconds to send what the next layer reads to the next stage (0 for
  /// the last layer): paid forward and again for its gradient, when a
  /// stage ends here.
  double transfer = 0;
  /// Bytes per device that transfer sends, in how many messages (one per
  /// value, as the pipeline sends them: stages::BoundaryTransfer).
  double transferBytes = 0;
  int transferMessages = 0;
};

struct StageProblem {
  std::vector<LayerCost> layers;
  int stages = 1;       // p
  int microBatches = 1; // m
  /// Per stage: micro-batches whose activations are held at once.
  std::vector<int> inFlight;
  /// Bytes per device.
  double memoryLimit = 0;
  /// Per stage boundary s (stage s sends to stage s + 1), when given: the
  /// link of that hop as seconds = fixed * messages + bytes * perByte
  /// (stages of one node send over its links, a pipeline that crosses
  /// nodes over theirs); empty: every layer's `transfer`.
  std::vector<double> hopFixed, hopPerByte;

  /// Bytes per device a stage that begins with layer `first` receives per
  /// micro-batch (what the layer before it sends), held until the
  /// micro-batch's backward: the producer's layer prices them on the
  /// sending stage, and the receiving stage keeps its own copy.
  double received(int first) const {
    return first > 0 ? layers[first - 1].transferBytes : 0;
  }
  /// Seconds stage `s`, ending with `layer`, sends its output in.
  double transfer(int layer, int s) const {
    if (static_cast<std::size_t>(s) >= hopFixed.size())
      return layers[layer].transfer;
    const LayerCost &l = layers[layer];
    return stages::BoundaryTransfer{l.transferMessages, l.transferBytes}
        .seconds(hopFixed[s], hopPerByte[s]);
  }
};

struct StageSplit {
  bool feasible = false;
  /// Per stage: its first layer (stage i holds [first[i], first[i+1])).
  std::vector<int> first;
  /// T above, and per stage t_i and memory.
  double objective = 0;
  std::vector<double> stageTime, memory;
};

/// T and memory of one split (first[0] == 0, increasing; infeasible when a
/// stage does not fit).
StageSplit priceSplit(const StageProblem &problem, std::vector<int> first);

/// The split minimizing T among those that fit (dynamic programming).
StageSplit splitStages(const StageProblem &problem);

/// The same by trying every split (tests; C(L-1, p-1) of them).
StageSplit bruteForceSplit(const StageProblem &problem);

} // namespace mlir::loom::planner

#endif // LOOM_PLANNER_INTEROP_H
