//===- Training.h - The CPU training loop -----------------------*- C++ -*-===//
//
// runTraining() JIT-compiles @train_step of a training artifact (Artifact.h)
// and runs it for a number of steps, feeding each step's updated parameters
// (results with loom.param) back as the next step's arguments; a
// partitioned step runs on its mesh, one rank per device.
//
// Data contract: a data directory holds `<name>.npy` for every data
// argument (named by loom.name: the ONNX graph input names, and `labels`),
// each with a leading step axis; step k uses entry k, or entries
// k*K ... k*K+K-1 with K micro-batches per step. `synthetic` instead draws
// seeded data: floats uniform in [-1, 1), integers uniform in
// [0, loom.index_bound).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_EXECUTION_TRAINING_H
#define LOOM_EXECUTION_TRAINING_H

#include "loom/Execution/Artifact.h"
#include "loom/Execution/Executor.h"
#include "loom/Execution/HostTensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"
#include <functional>
#include <random>
#include <string>

namespace mlir::loom {

class DistributedContext;

struct TrainOptions {
  int64_t steps = 1;
  /// A data directory, or "synthetic".
  std::string data = "synthetic";
  /// Data files: read each epoch in a permutation seeded by (seed, epoch).
  bool shuffle = false;
  uint64_t seed = 0;
  ExecutorOptions executor;
  /// Where the final trainable parameters go (<name>.npy); empty: none.
  std::string paramsOut;
  /// Where the final optimizer state goes; empty: none.
  std::string stateOut;
  /// Called on rank 0 after every step with its index, its loss and a note
  /// (empty, or what changed: the dynamic loss scale).
  std::function<void(int64_t step, double loss, llvm::StringRef note)> onStep;
  /// Partitioned steps: seconds a collective may take.
  double timeoutSeconds = 60.0;
  /// For testing failure handling: rank `faultRank`, before step
  /// `faultStep`, dies (kill: SIGKILL), stalls (stop: SIGSTOP) or exits
  /// with status 3 (exit), or dies while saving the checkpoint of step
  /// `faultStep` after writing its shard (save). Off when `faultMode` is
  /// empty.
  int64_t faultRank = -1, faultStep = -1;
  std::string faultMode;
  /// Checkpoints (Checkpoint.h): saved under `checkpointDir` every
  /// `checkpointEvery` steps and after the last step, keeping the newest
  /// `checkpointKeep` (0: all); `resume` names a checkpoint, or a root of
  /// them, to continue from (`steps` is then the total to reach).
  std::string checkpointDir, resume;
  int64_t checkpointEvery = 0, checkpointKeep = 0;
  /// Record each step's span and each collective's (loom-run --trace,
  /// --profile): TrainResult::trace.
  bool trace = false;
};

/// A span of a rank's time: a step (`op` empty, `step` its index), a
/// collective (`op`, the mesh axes `axes` of its group, `bytes` of its
/// buffer) or, in a pipelined step, a pipeline action (`stage` >= 0: `op`
/// F, B, I, W or U, the schedule's letters, of micro-batch `micro`, or
/// `wait` for a receive), in microseconds since the first step began.
struct TraceEvent {
  int rank = 0;
  int64_t step = -1;
  std::string op, axes;
  uint64_t mask = 0;
  int64_t bytes = 0;
  double start = 0, duration = 0;
  int stage = -1, micro = -1;

  bool isPipelineAction() const { return stage >= 0; }
};

/// The start-up handshake of loom-run's ranks (loom::program::agreeOnStart):
/// loom-run's executable, the artifact's train.mlir and params.bin under
/// `dir`, the flags that must agree and the .npy files of the data
/// directory. A collective over `mesh`; false with `error` naming what
/// differs on which ranks.
bool agreeOnTrainingStart(const DistributedContext &mesh, llvm::StringRef dir,
                          const TrainOptions &options, std::string &error);

/// Rank 0 learns every rank's `events` (a collective: every rank calls
/// it), in rank and time order; other ranks keep their own.
bool gatherTrace(const DistributedContext &mesh,
                 std::vector<TraceEvent> &events, std::string &error);

/// Synthetic data: floats uniform in [-1, 1), integers uniform in
/// [0, bound).
HostTensor syntheticTensor(RankedTensorType type, int64_t bound,
                           std::mt19937_64 &gen);

/// Parses RANK:STEP:kill|stop|exit|save into `options`' fault fields; returns an
/// error message or "".
std::string parseFault(llvm::StringRef spec, TrainOptions &options);
/// LOOM_FAULT's kill, stop or exit: `rank` fails before step `step` when
/// the options name both (save faults happen while saving).
void injectFault(const TrainOptions &options, int rank, int64_t step);

struct TrainResult {
  /// This process's rank (0 when not distributed).
  int rank = 0;
  std::vector<double> losses;
  /// Dynamic loss scaling: the steps skipped for inf/NaN gradients.
  std::vector<int64_t> skippedSteps;
  double compileSeconds = 0, trainSeconds = 0;
  /// Whether this rank's machine code came from the compile cache.
  bool compileCached = false;
  /// Samples (the data's leading batch size times micro-batches) and, for
  /// integer inputs of rank >= 2 (token ids), tokens per step; set before
  /// the first step.
  int64_t samplesPerStep = 0, tokensPerStep = 0;
  /// Bytes of data files each rank copied (its blocks) and the bytes those
  /// entries hold in the files (whole batches); on rank 0 every rank's.
  std::vector<int64_t> dataBytesRead;
  int64_t dataBytesInFiles = 0;
  /// Each rank's memory, the most any step held (MemoryUse::merge); on
  /// rank 0 every rank's, in rank order, else this rank's only.
  std::vector<MemoryUse> memory;
  /// With TrainOptions::trace: rank 0 holds every rank's events, in rank
  /// and time order; other ranks their own.
  std::vector<TraceEvent> trace;
  /// A pipelined artifact's bubble fraction in simulation of its schedule:
  /// with unit action times (F 1, B 2, I and W 1; what loomc prints), and,
  /// with TrainOptions::trace on rank 0, with each stage's mean measured
  /// action times and no transfer time. -1 where not known.
  double unitBubble = -1, simulatedBubble = -1;
};

/// Chrome trace format (chrome://tracing, Perfetto): a process per rank,
/// steps on one track, collectives on another, pipeline actions on a
/// third.
void writeChromeTrace(llvm::ArrayRef<TraceEvent> events, llvm::raw_ostream &os);
/// Per step: the slowest rank's step time, its time in collectives and
/// their count; then totals per collective kind and axes; for a pipelined
/// step, each rank's time in pipeline actions and the measured bubble
/// (pipelineBubble).
void printProfile(llvm::ArrayRef<TraceEvent> events, int ranks,
                  llvm::raw_ostream &os);

/// The measured bubble fraction of pipelined steps: per step, the time
/// from the first action's start to the last's end on any rank, less the
/// rank's time in F/B/I/W actions, over that span, averaged over ranks and
/// steps (steps before `skip` left out: the first runs cold). -1 without
/// pipeline actions.
double pipelineBubble(llvm::ArrayRef<TraceEvent> events, int64_t skip = 1);

/// Trains a pipelined artifact (module attribute loom.pipeline): each rank
/// runs its pipeline rank's stage programs on the schedule.
bool runPipelineTraining(ModuleOp module, llvm::StringRef dir,
                         const TrainOptions &options, TrainResult &result,
                         std::string &error);

/// Trains with @train_step of `module` (from `dir`/train.mlir).
bool runTraining(ModuleOp module, llvm::StringRef dir,
                 const TrainOptions &options, TrainResult &result,
                 std::string &error);

} // namespace mlir::loom

#endif // LOOM_EXECUTION_TRAINING_H
