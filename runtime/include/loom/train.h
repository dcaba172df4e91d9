//===- train.h - Loom's training loop ---------------------------*- C++ -*-===//
//
// The one training loop of Loom, for every way a step is compiled and every
// device: rank programs (loomc --emit=executable, CPU or GPU) and loom-run's
// JIT both describe their step with a Manifest (loom/program.h) and hand
// over its entry points; train() and trainPipeline() do the rest, with no
// LLVM or MLIR:
//
//   start-up   the mesh from the launcher's environment (mpirun, srun,
//              torchrun-style), the start-up handshake (every rank runs the
//              same program on the same files with the same flags),
//              parameters bound (this rank's block of each), a checkpoint
//              resumed (any mesh's: resharded on load)
//   steps      data drawn or read (sharded, epochs, shuffling; prepared on
//              a thread while the step runs), the step run on the device
//              (host or GPU, loom/device.h), the loss read back, the
//              updated parameters fed back, dynamic loss scaling reported,
//              checkpoints saved every K steps (atomic, sharded)
//   end        final parameters and optimizer state gathered to rank 0,
//              memory and data statistics and the trace gathered
//
// Data contract: a data directory holds `<name>.npy` for every data input
// (named by loom.name: the ONNX graph input names, and `labels`), each with
// a leading entry axis; step k uses entry k, or entries k*M ... k*M+M-1
// with M micro-batches per step. `synthetic` draws seeded data instead:
// floats uniform in [-1, 1), integers uniform in [0, loom.index_bound).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TRAIN_H
#define LOOM_TRAIN_H

#include "loom/program.h"

#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace loom::program {

class Device;

/// The packed entry point of a compiled function
/// (`_mlir__mlir_ciface_<function>(void **)`).
using PackedEntry = void (*)(void **);

/// The memory one step held, in bytes, by what it was for (the most any
/// step held: merge).
struct MemoryUse {
  /// Arguments bound to trainable parameters, to other parameters
  /// (optimizer state, counters), data arguments, result buffers.
  int64_t parameters = 0, optimizerState = 0, inputs = 0, results = 0;
  /// The high-water mark of the step's temporaries (activations,
  /// gradients, collectives' buffers), where the caller can measure it.
  int64_t temporaries = 0;

  int64_t peak() const {
    return parameters + optimizerState + inputs + results + temporaries;
  }
  void merge(const MemoryUse &other);
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
  /// A collective started without blocking (run on the lane while the
  /// program computed); op "collective_wait" is the program's wait for one.
  bool started = false;

  bool isPipelineAction() const { return stage >= 0; }
  bool isWait() const { return op == "collective_wait"; }
};

struct TrainOptions {
  /// Where the step runs and its tensors live (null: the host).
  Device *device = nullptr;
  int64_t steps = 1;
  /// A directory of <input>.npy files (leading entry axis), or "synthetic".
  std::string data = "synthetic";
  uint64_t seed = 0;
  /// Data files: read each epoch in a permutation seeded by (seed, epoch).
  bool shuffle = false;
  /// >= 0: trainable parameters that have a file value are drawn from
  /// N(0, 0.02^2) with this seed instead (the same on every rank), so that
  /// a benchmark's program need not carry its weights.
  int64_t initRandomSeed = -1;
  /// Where initial values' files are (Value::initFile is relative to it).
  std::string dir;
  /// Where the final trainable parameters and the optimizer state go
  /// (<name>.npy); empty: not written.
  std::string paramsOut, stateOut;
  /// Seconds a collective may take before the ranks are diagnosed.
  double timeoutSeconds = 60.0;
  /// Checkpoints (loom/checkpoint.h): saved under `checkpointDir` every
  /// `checkpointEvery` steps and after the last step, keeping the newest
  /// `checkpointKeep` (0: all); `resume` names a checkpoint, or a root of
  /// them, to continue from (`steps` is then the total to reach).
  std::string checkpointDir, resume;
  int64_t checkpointEvery = 0, checkpointKeep = 0;
  /// Record each step's span, each collective's and each pipeline
  /// action's (TrainResult::trace).
  bool trace = false;
  /// For testing failure handling (LOOM_FAULT, parseFault): rank
  /// `faultRank`, before step `faultStep`, dies (kill: SIGKILL), stalls
  /// (stop: SIGSTOP) or exits with status 3 (exit), or dies while saving
  /// the checkpoint of step `faultStep` after writing its shard (save).
  int64_t faultRank = -1, faultStep = -1;
  std::string faultMode;
  /// The start-up handshake's items besides the manifest, the initial
  /// parameters, the flags and the data: named files whose contents every
  /// rank must share (a rank program: its executable; loom-run: itself and
  /// the artifact's train.mlir).
  std::vector<std::pair<std::string, std::string>> fingerprintFiles;
  /// Who writes the outputs, for their completion markers ("a rank
  /// program", "loom-run").
  std::string writer = "a rank program";
  /// Measuring the step's temporaries (loom-run: the JIT's counting
  /// allocator): called before each step, and after it for the bytes its
  /// temporaries held at most. Unset: temporaries are not counted.
  std::function<void()> resetTemporaries;
  std::function<int64_t()> peakTemporaries;
  /// Called on rank 0 after each step, with a note when dynamic loss
  /// scaling changed its scale.
  std::function<void(int64_t step, double loss, const std::string &note)>
      onStep;
  /// Called with the error on a rank that fails, before the runtime is torn
  /// down: the message is out before this rank's exit lets the launcher
  /// stop the others.
  std::function<void(const std::string &error)> onError;
  /// Lines for the user (where a run resumes, how the data wraps into
  /// epochs); rank 0 only. Unset: stdout.
  std::function<void(const std::string &line)> onNote;
};

struct TrainResult {
  /// This process's rank (0 without a mesh) and the number of ranks.
  int rank = 0, ranks = 1;
  std::vector<double> losses;
  /// Dynamic loss scaling: the steps skipped for inf/NaN gradients.
  std::vector<int64_t> skippedSteps;
  /// Seconds in the steps (from the first step's start), and each step's
  /// from its data on the host to its loss on the host.
  double trainSeconds = 0;
  std::vector<double> stepSeconds;
  /// The first step run (a resumed checkpoint's step).
  int64_t firstStep = 0;
  /// Samples per step (the data's leading batch size times micro-batches)
  /// and, for integer inputs of rank >= 2 (token ids), tokens per step.
  int64_t samplesPerStep = 0, tokensPerStep = 0;
  /// Bytes of data files each rank copied (its blocks) and the bytes those
  /// entries hold in the files (whole batches); on rank 0 every rank's.
  std::vector<int64_t> dataBytesRead;
  int64_t dataBytesInFiles = 0;
  /// Each rank's memory (on rank 0 every rank's, in rank order; elsewhere
  /// this rank's).
  std::vector<MemoryUse> memory;
  /// With TrainOptions::trace: rank 0 holds every rank's events, in rank
  /// and time order; other ranks their own.
  std::vector<TraceEvent> trace;
};

/// Runs `options.steps` steps of `entry`, described by `manifest`: one
/// rank per device of its mesh (started from the launcher's environment).
/// Returns false with `error`.
bool train(const Manifest &manifest, PackedEntry entry,
           const TrainOptions &options, TrainResult &result,
           std::string &error);

/// A pipelined manifest's training: each rank runs its schedule's actions
/// with its stages' programs, found by function name through `lookup`
/// (null: not in the program).
bool trainPipeline(const Manifest &manifest,
                   const std::function<PackedEntry(const std::string &)> &lookup,
                   const TrainOptions &options, TrainResult &result,
                   std::string &error);

/// Parses LOOM_FAULT's RANK:STEP:kill|stop|exit|save into `options`;
/// returns an error message or "".
std::string parseFault(const std::string &spec, TrainOptions &options);

/// Chrome trace format (chrome://tracing, Perfetto): a process per rank,
/// steps on one track, collectives on another, pipeline actions on a
/// third.
std::string chromeTrace(const std::vector<TraceEvent> &events);
/// Per step: the slowest rank's step time, its time in collectives and
/// their count; then totals per collective kind and axes; for a pipelined
/// step, each rank's time in pipeline actions and the measured bubble.
std::string profileText(const std::vector<TraceEvent> &events, int ranks);
/// The measured bubble fraction of pipelined steps: per step, the time
/// from the first action's start to the last's end on any rank, less the
/// rank's time in F/B/I/W actions, over that span, averaged over ranks and
/// steps (steps before `skip` left out: the first runs cold). -1 without
/// pipeline actions.
double pipelineBubble(const std::vector<TraceEvent> &events, int64_t skip = 1);
/// Each stage's mean measured time of action `op` (F, B, I, W, U) over
/// ranks and the steps after the first (all steps when there is one);
/// 0 where not measured.
double meanActionTime(const std::vector<TraceEvent> &events,
                      const std::string &op, int stage);

} // namespace loom::program

#endif // LOOM_TRAIN_H
