//===- Schedule.h - Pipeline schedules as action lists ----------*- C++ -*-===//
//
// A pipeline of P ranks holds S = P x V stages (V virtual stages each:
// rank r holds stages r, r + P, ...). A schedule is, per rank, the list of
// actions it runs in order for one training step of M micro-batches:
// compute (F forward, B backward, or B split into I input gradient and W
// weight gradient, U update) and boundary transfers (SEND_F / RECV_F of
// activations, SEND_B / RECV_B of their gradients). A send is posted and
// not waited for; a receive waits for its data (its buffer was posted at
// the start of the step), so a schedule can only stall on a receive whose
// send comes later on another rank: simulate() finds that.
//
// This is the artifact loom-schedule-pipeline writes, the runtime runs and
// the planner prices (as PyTorch's pipelining schedules and Shardy's
// MPMD schedules are lists of per-rank actions).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_STAGES_SCHEDULE_H
#define LOOM_STAGES_SCHEDULE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"
#include <optional>
#include <string>
#include <vector>

namespace mlir::loom::stages {

enum class ActionKind {
  Forward,
  Backward,
  BackwardInput,
  BackwardWeight,
  SendForward,
  RecvForward,
  SendBackward,
  RecvBackward,
  Update
};

struct Action {
  ActionKind kind;
  int stage = 0;
  int micro = 0; // unused for Update
  bool operator==(const Action &o) const {
    return kind == o.kind && stage == o.stage && micro == o.micro;
  }
};

/// "F(1,3)", "SEND_B(0,2)", "U(1)".
std::string toString(const Action &action);
std::optional<Action> parseAction(llvm::StringRef text);

struct PipelineShape {
  int ranks = 1;         // P: pipeline ranks (the pp axis)
  int virtualStages = 1; // V: stages per rank
  int microBatches = 1;  // M
  int stages() const { return ranks * virtualStages; }
  int rankOf(int stage) const { return stage % ranks; }
};

using Schedule = std::vector<std::vector<Action>>; // per rank

/// The names buildSchedule knows.
llvm::ArrayRef<llvm::StringRef> scheduleNames();

/// Builds `name`'s schedule for `shape`, transfers included; on a shape
/// the schedule cannot run, returns nothing and says why in `error`.
std::optional<Schedule> buildSchedule(llvm::StringRef name,
                                      const PipelineShape &shape,
                                      std::string &error);

/// Time units of each action (per stage: a stage's F, I and W take
/// forward[s], backwardInput[s], backwardWeight[s]); B takes I + W.
struct Durations {
  std::vector<double> forward, backwardInput, backwardWeight;
  double transfer = 0;  // from a send's start to its receive's data
  double update = 0;
  /// Per stage, when given: the transfer of what the stage sends (its
  /// activations forward, the gradient of its input back) and its update;
  /// they replace `transfer` and `update`.
  std::vector<double> transfers, updates;
  static Durations uniform(int stages, double f = 1, double b = 2);
};

struct Span {
  Action action;
  double start = 0, end = 0;
};

struct Timeline {
  std::vector<std::vector<Span>> ranks; // compute spans per rank
  double makespan = 0;
  /// When the last rank finishes (updates included): the step's time.
  double end = 0;
  /// Idle share of the ranks' time up to the makespan (the update and the
  /// transfers excluded): the pipeline bubble.
  double bubble = 0;
  /// Per rank: the most micro-batches whose forward ran and whose backward
  /// (or weight half) did not yet, i.e. activations held.
  std::vector<int> inFlight;
};

/// Runs `schedule` in simulation: each rank runs its actions in order; a
/// receive waits for its send (plus the transfer time). Checks that every
/// stage runs F and B (or I and W) once per micro-batch on its rank in a
/// possible order; on a schedule that cannot finish, returns nothing and
/// names each rank's blocked action in `error`.
std::optional<Timeline> simulate(const Schedule &schedule,
                                 const PipelineShape &shape,
                                 const Durations &durations,
                                 std::string &error);

/// Text picture: a row per rank, one column per time unit, the micro-batch
/// number in each action's cells (F upper row, B/I/W marked), '.' idle.
void printTimeline(const Timeline &timeline, const PipelineShape &shape,
                   llvm::raw_ostream &os);
void writeSvg(const Timeline &timeline, const PipelineShape &shape,
              llvm::raw_ostream &os);

} // namespace mlir::loom::stages

#endif // LOOM_STAGES_SCHEDULE_H
