//===- loom-run.cpp - Compile and run a loom function or ONNX model -------===//
//
//   loom-run MODEL [--input-dir D] [--output-dir O]
//                  [--expected-dir E --rtol R --atol A]
//   loom-run ARTIFACT_DIR --steps N [--data D|synthetic]
//
// MODEL is loom IR (.mlir) or an ONNX model (.onnx). Inputs are read from
// D/input_<i>.pb or D/input_<i>.npy in graph-input order (the layout of
// ONNX's test directories), outputs written to O/output_<i>.pb (or .npy) in
// graph-output order, and compared with E/output_<i>.pb (numpy.allclose
// semantics; exit status 1 on any mismatch). Parameters are bound from
// their loom.parameter initial values.
//
// Given a training artifact directory (loomc --train), trains instead: runs
// @train_step N times, printing `step K loss L`, and writes the final
// trainable parameters to ARTIFACT_DIR/params-final/<name>.npy (see
// loom/train.h for the data contract).
//
//===----------------------------------------------------------------------===//

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Execution/Distributed.h"
#include "loom/Execution/Executable.h"
#include "loom/Execution/Executor.h"
#include "loom/Execution/TensorIO.h"
#include "Calibrate.h"
#include "Launch.h"
#include "loom/Stages/Schedule.h"
#include "loom/Support/Debug.h"
#include "loom/Support/InputLimits.h"
#include "loom/program.h"
#include "loom/train.h"
#include "loom/Target/ONNX/ImportONNX.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cstdlib>
#include <map>
#include <chrono>
#include <cmath>
#include <cstring>
#include <unistd.h>
#include <sys/resource.h>
#include <random>

using namespace mlir;
using namespace mlir::loom;
namespace cl = llvm::cl;

static cl::OptionCategory category("loom-run options");
static cl::opt<std::string> modelPath(cl::Positional, cl::desc("<model.mlir|model.onnx>"),
                                      cl::cat(category));
static cl::opt<bool> quickCalibration("calibrate-quick",
    cl::desc("With --calibrate: fewer repetitions (tests; noisier)"),
    cl::cat(category), cl::Hidden);
static cl::opt<bool> calibrate("calibrate",
    cl::desc("Measure this machine for the planner's cpu-local cluster and "
             "keep it ($LOOM_CPU_CALIBRATION, else "
             "~/.cache/loom/cpu-local.json): one core's SGEMM and memory "
             "bandwidth and, with -np N, what a collective adds to a step "
             "on N ranks (loom-calibrate under mpirun)"),
    cl::cat(category));
static cl::opt<std::string> functionName("function", cl::desc("Function to run (default: main, or the only public one)"),
                                         cl::cat(category));
static cl::opt<std::string> inputDir("input-dir", cl::desc("Directory with input_<i>.pb or input_<i>.npy"),
                                     cl::cat(category));
static cl::list<std::string> inputFiles("input", cl::desc("NAME=FILE: an input by name (repeatable)"),
                                        cl::cat(category));
static cl::opt<bool> randomInputs("random-inputs", cl::desc("Seeded random values for inputs not given"),
                                  cl::cat(category));
static cl::opt<unsigned> seed("seed", cl::desc("Seed of --random-inputs"), cl::init(0), cl::cat(category));
static cl::opt<std::string> outputDir("output-dir", cl::desc("Write output_<i>.pb (or .npy) here"),
                                      cl::cat(category));
static cl::opt<std::string> outputFormat("output-format", cl::desc("pb or npy (default: as the inputs, else pb)"),
                                         cl::cat(category));
static cl::opt<std::string> expectedDir("expected-dir", cl::desc("Compare with output_<i>.pb/.npy here"),
                                        cl::cat(category));
static cl::opt<double> relTol("rtol", cl::desc("Relative tolerance"), cl::init(1e-3), cl::cat(category));
static cl::opt<double> absTol("atol", cl::desc("Absolute tolerance"), cl::init(1e-7), cl::cat(category));
static cl::list<std::string> inputShapes("input-shape", cl::desc("ONNX: NAME=D0xD1x... binds an input's shape"),
                                         cl::cat(category));
static cl::opt<bool> specialize("specialize-inputs",
    cl::desc("ONNX: compile integer inputs given in --input-dir in as constants "
             "(needed when they are shapes, axes or bounds)"),
    cl::init(false), cl::cat(category));
static cl::opt<bool> noBlas("no-blas", cl::desc("Do not call OpenBLAS for matmuls"), cl::cat(category));
static cl::opt<bool> convLoops("conv-loops",
    cl::desc("Compile each convolution as a loop nest instead of im2col "
             "patches and a BLAS GEMM or oneDNN's convolution"),
    cl::cat(category));
static cl::opt<bool> noOnednnConv("no-onednn-conv",
    cl::desc("Compile grouped (depthwise) convolutions as loop nests instead "
             "of calls to oneDNN's convolution (ungrouped ones are im2col "
             "GEMMs either way)"),
    cl::cat(category));
static cl::opt<bool> libm("libm",
    cl::desc("Call libm for f32 exp, erf and tanh instead of the "
             "vectorizable polynomials within 4 ulp of it (docs/training.md)"),
    cl::cat(category));
static cl::opt<bool> serialLoops("serial-loops",
    cl::desc("Run every loop on the calling thread instead of cutting the "
             "outermost parallel loops (elementwise ops, norms, losses, "
             "the optimizer) into chunks for the runtime's threads"),
    cl::cat(category));
static cl::opt<bool> noCache("no-cache",
    cl::desc("Training: compile the step even when ARTIFACT/cache holds its "
             "machine code (and do not write it there)"),
    cl::cat(category));
static cl::opt<bool> gpuLoopsOnCpu("gpu-loops-on-cpu",
    cl::desc("Compile with the CUDA pipeline's kernel loop nests (flattened, "
             "tiled into blocks) and run them on the CPU: checks what "
             "loomc --target=cuda generates without a GPU"),
    cl::cat(category));
static cl::opt<unsigned> optLevel("O", cl::desc("LLVM optimization level (0-3, default 2)"), cl::init(2),
                                  cl::Prefix, cl::cat(category));
static cl::opt<int> repeat("repeat", cl::desc("Run this many times and report the time per run"),
                           cl::init(1), cl::cat(category));
static cl::opt<bool> printOutputs("print", cl::desc("Print outputs (first elements)"), cl::cat(category));
static cl::opt<int64_t> steps("steps", cl::desc("Training: number of steps"), cl::init(1),
                              cl::cat(category));
static cl::opt<std::string> dataDir("data",
    cl::desc("Training: directory with <input>.npy and labels.npy (leading step axis), "
             "or 'synthetic'"),
    cl::init("synthetic"), cl::cat(category));
/// The most ranks one `loom-run -np` launch starts (processes on the
/// launching machine's mpirun).
static constexpr int kMaxRanks = 65536;
static cl::opt<int> numRanks("np",
    cl::desc("Training: launch this many ranks with mpirun (one per mesh device)"),
    cl::init(0), cl::cat(category));
static cl::opt<double> timeout("timeout",
    cl::desc("Distributed runs: seconds a collective may take before the ranks are "
             "diagnosed (default 60)"),
    cl::init(60.0), cl::cat(category));
static cl::opt<std::string> traceOut("trace",
    cl::desc("Training: write a Chrome trace (chrome://tracing, Perfetto) of every "
             "rank's steps and collectives to this file"),
    cl::value_desc("file.json"), cl::cat(category));
static cl::opt<bool> profile("profile",
    cl::desc("Training: print each step's time, its time in collectives, and "
             "totals per collective"),
    cl::cat(category));
static cl::opt<std::string> paramsOut("params-out",
    cl::desc("Training: where to write the final parameters (default "
             "ARTIFACT/params-final; none: nothing written, the optimizer "
             "state neither unless --state-out is given)"),
    cl::cat(category));
static cl::opt<std::string> stateOut("state-out",
    cl::desc("Training: where to write the final optimizer state (default "
             "ARTIFACT/optimizer-final; none: not written)"),
    cl::cat(category));

static cl::opt<std::string> checkpointDir("checkpoint-dir",
    cl::desc("Training: save checkpoints (parameters, optimizer state, step, "
             "data position; one shard per rank) under this directory"),
    cl::cat(category));
static cl::opt<int64_t> checkpointEvery("checkpoint-every",
    cl::desc("Training: save a checkpoint every K steps (and after the last)"),
    cl::init(0), cl::cat(category));
static cl::opt<int64_t> checkpointKeep("checkpoint-keep",
    cl::desc("Training: keep the newest K checkpoints (default 0: all)"),
    cl::init(0), cl::cat(category));
static cl::opt<std::string> resumeFrom("resume",
    cl::desc("Training: continue from this checkpoint (or the latest complete "
             "one under this directory), under any mesh or strategy; --steps "
             "is the total to reach"),
    cl::cat(category));

static cl::opt<int64_t> splitFunctions("split-functions",
    cl::desc("Cut long steps into functions of about this many ops before "
             "LLVM compiles them (default 300; 0: one function)"),
    cl::init(300), cl::cat(category));
static cl::opt<unsigned> compileThreads("compile-threads",
    cl::desc("Threads generating machine code (default 0: one per hardware "
             "thread)"),
    cl::init(0), cl::cat(category));
static cl::opt<bool> timePasses("compile-timing",
    cl::desc("Report the time of every MLIR and LLVM pass of the compilation "
             "(stderr)"),
    cl::cat(category));
static cl::opt<bool> useExecutable("executable",
    cl::desc("Training: run ARTIFACT/train, the step loomc --emit=executable "
             "compiled ahead of time, instead of compiling train.mlir"),
    cl::cat(category));
static cl::opt<bool> shuffle("shuffle",
    cl::desc("Training: read each epoch of the data files in a permutation "
             "seeded by --seed and the epoch"),
    cl::cat(category));
static cl::opt<double> progressEvery("progress",
    cl::desc("Training: print a progress line (steps/s, samples/s, ETA) every "
             "this many seconds (default 10; 0: never)"),
    cl::init(10.0), cl::cat(category));

namespace {

/// The compiler's options from the flags.
ExecutorOptions executorOptions() {
  ExecutorOptions options;
  options.useBlas = !noBlas;
  options.approximateMath = !libm;
  options.convAsGemm = !convLoops;
  options.convLibrary = !convLoops && !noOnednnConv;
  options.parallelLoops = !serialLoops;
  options.optLevel = optLevel;
  options.splitFunctions = splitFunctions;
  options.timePasses = timePasses;
  options.compileThreads = compileThreads;
  options.gpuLoopsOnCpu = gpuLoopsOnCpu;
  return options;
}

int fail(const std::string &message) {
  // One write: errs() is unbuffered and mpirun splices the ranks' output
  // together, so a line written in pieces can be cut by another rank's.
  llvm::errs() << "loom-run: error: " + message + "\n";
  loom_keep_rank_error(message.c_str()); // repeated by launchRanks
  return 2;
}

/// The file for input or output `index` in `dir`: .pb or .npy.
std::string findIndexed(StringRef dir, StringRef stem, unsigned index) {
  for (StringRef ext : {".pb", ".npy"}) {
    SmallString<256> path(dir);
    llvm::sys::path::append(path, stem + "_" + std::to_string(index) + ext);
    if (llvm::sys::fs::exists(path))
      return std::string(path);
  }
  return "";
}

HostTensor randomTensor(RankedTensorType type, std::mt19937_64 &gen) {
  HostTensor t(type);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int64_t> small(0, 3);
  for (int64_t i = 0; i < t.getNumElements(); ++i)
    t.setFromDouble(i, isa<FloatType>(type.getElementType()) ? real(gen)
                                                             : double(small(gen)));
  return t;
}

void printTensor(StringRef name, const HostTensor &t) {
  llvm::outs() << name << ": " << t.getType() << " [";
  int64_t n = std::min<int64_t>(t.getNumElements(), 8);
  for (int64_t i = 0; i < n; ++i)
    llvm::outs() << (i ? ", " : "") << t.getAsDouble(i);
  if (t.getNumElements() > n)
    llvm::outs() << ", ...";
  llvm::outs() << "]\n";
}

/// `mpirun -np N` and the flags every launch here needs.
std::vector<std::string> mpirunCommand() {
  std::vector<std::string> command = {"mpirun", "-np", std::to_string(numRanks)};
  if (geteuid() == 0)
    command.push_back("--allow-run-as-root");
  // More ranks than cores is fine for CPU tests; MPI must not refuse it.
  command.push_back("--oversubscribe");
  return command;
}

/// Runs `command`: under mpirun (-np N) as loom-run's child (Launch.h,
/// which repeats the ranks' errors after the job), else in place of this
/// process.
int execute(std::vector<std::string> &command) {
  if (numRanks > 0) {
    std::string error;
    int status = launchRanks(command, numRanks, error);
    return status < 0 ? fail(error) : status;
  }
  std::vector<char *> cargv;
  for (std::string &c : command)
    cargv.push_back(c.data());
  cargv.push_back(nullptr);
  execvp(cargv[0], cargv.data());
  return fail("cannot run " + command[0] + ": " + std::strerror(errno));
}

/// `loom-run --calibrate [-np N]` (Calibrate.cpp).
int runCalibration() {
  if (!modelPath.empty())
    return fail("--calibrate measures the machine and takes no model ('" +
                modelPath + "')");
  std::string error;
  if (!calibrateMachine(numRanks > 1 ? mpirunCommand()
                                     : std::vector<std::string>(),
                        numRanks, quickCalibration, error))
    return fail(error);
  return 0;
}

/// `loom-run --executable ARTIFACT`: runs ARTIFACT/train (loomc
/// --emit=executable) with the training flags it takes, under mpirun with
/// -np.
int runExecutable() {
  SmallString<256> program(modelPath);
  llvm::sys::path::append(program, "train");
  if (!llvm::sys::fs::can_execute(program))
    return fail(modelPath + " has no executable program " +
                std::string(program) +
                " (compile it with loomc --emit=executable)");
  for (const auto *opt :
       std::initializer_list<const cl::Option *>{
           &noBlas, &libm, &convLoops, &noOnednnConv, &serialLoops, &optLevel, &gpuLoopsOnCpu, &noCache,
           &splitFunctions, &timePasses, &compileThreads})
    if (opt->getNumOccurrences())
      return fail("--executable runs the program loomc compiled, which does "
                  "not take --" + opt->ArgStr.str() +
                  "; drop --executable to compile train.mlir instead");
  std::vector<std::string> command;
  if (numRanks > 0)
    command = mpirunCommand();
  command.push_back(std::string(program));
  for (std::string flag :
       {"--steps=" + std::to_string(steps), "--data=" + dataDir,
        "--seed=" + std::to_string(seed), "--timeout=" + std::to_string(timeout)})
    command.push_back(flag);
  if (shuffle)
    command.push_back("--shuffle");
  if (!paramsOut.empty())
    command.push_back("--params-out=" + paramsOut);
  if (!stateOut.empty())
    command.push_back("--state-out=" + stateOut);
  // The rank program takes loom-run's checkpoint, trace and profile flags.
  if (!checkpointDir.empty())
    command.push_back("--checkpoint-dir=" + checkpointDir);
  if (checkpointEvery.getNumOccurrences())
    command.push_back("--checkpoint-every=" + std::to_string(checkpointEvery));
  if (checkpointKeep.getNumOccurrences())
    command.push_back("--checkpoint-keep=" + std::to_string(checkpointKeep));
  if (!resumeFrom.empty())
    command.push_back("--resume=" + resumeFrom);
  if (!traceOut.empty())
    command.push_back("--trace=" + traceOut);
  if (profile)
    command.push_back("--profile");
  return execute(command);
}

/// `loom-run -np N ARTIFACT ...`: re-runs this command under mpirun with N
/// ranks (without -np), so that every rank runs the same loom-run.
int launch(int argc, char **argv) {
  std::vector<std::string> command = mpirunCommand();
  std::string self = llvm::sys::fs::getMainExecutable(argv[0], (void *)&launch);
  command.push_back(self.empty() ? argv[0] : self);
  for (int i = 1; i < argc; ++i) {
    StringRef a = argv[i];
    if (a == "-np" || a == "--np") {
      ++i; // skip the value
      continue;
    }
    if (a.starts_with("-np=") || a.starts_with("--np="))
      continue;
    command.push_back(argv[i]);
  }
  return execute(command);
}

/// A pipelined artifact's schedule (module attribute loom.pipeline),
/// checked by simulating it, with its bubble fraction for unit action
/// times and, after a traced run, for the measured ones.
struct PipelineSchedule {
  stages::PipelineShape shape;
  stages::Schedule schedule;
  double unitBubble = -1;

  static std::optional<PipelineSchedule> of(ModuleOp module,
                                            std::string &error) {
    auto pipe =
        module->getAttrOfType<DictionaryAttr>(LoomDialect::kPipelineAttrName);
    auto get = [&](StringRef k) {
      auto a = pipe.getAs<IntegerAttr>(k);
      return a ? int(a.getInt()) : -1;
    };
    PipelineSchedule p;
    p.shape = {get("ranks"), get("virtual_stages"), get("micro_batches")};
    auto lists = pipe.getAs<ArrayAttr>("actions");
    if (p.shape.ranks < 1 || p.shape.virtualStages < 1 ||
        p.shape.microBatches < 1 || !lists ||
        int(lists.size()) != p.shape.ranks) {
      error = "the module's loom.pipeline has no schedule (build it with "
              "loomc and a pp mesh axis, or run loom-split-stages and "
              "loom-schedule-pipeline)";
      return std::nullopt;
    }
    p.schedule.assign(p.shape.ranks, {});
    for (int r = 0; r < p.shape.ranks; ++r)
      for (Attribute a : cast<ArrayAttr>(lists[r])) {
        std::optional<stages::Action> act =
            stages::parseAction(cast<StringAttr>(a).getValue());
        if (!act) {
          error = "unreadable pipeline action " + cast<StringAttr>(a).str();
          return std::nullopt;
        }
        p.schedule[r].push_back(*act);
      }
    std::optional<stages::Timeline> unit = stages::simulate(
        p.schedule, p.shape, stages::Durations::uniform(p.shape.stages()),
        error);
    if (!unit) {
      error = "the artifact's pipeline schedule is invalid: " + error;
      return std::nullopt;
    }
    p.unitBubble = unit->bubble;
    return p;
  }

  /// The schedule simulated with each stage's mean measured action times
  /// (rank 0's trace of every rank) and no transfer time.
  std::optional<double>
  simulatedBubble(const std::vector<::loom::program::TraceEvent> &trace,
                  std::string &error) const {
    stages::Durations d;
    for (int s = 0; s < shape.stages(); ++s) {
      auto mean = [&](const char *op) {
        return ::loom::program::meanActionTime(trace, op, s);
      };
      double i = mean("I"), w = mean("W");
      if (i == 0 && w == 0) // B unsplit: its halves are not measured apart
        i = mean("B");
      d.forward.push_back(mean("F"));
      d.backwardInput.push_back(i);
      d.backwardWeight.push_back(w);
      d.updates.push_back(mean("U"));
      d.transfers.push_back(0);
    }
    std::optional<stages::Timeline> t =
        stages::simulate(schedule, shape, d, error);
    if (!t)
      return std::nullopt;
    return t->bubble;
  }
};

/// Rank 0's summary of a run: time, memory, data read, the profile (and
/// a pipeline's bubble in simulation) and the trace file.
int report(const ::loom::program::TrainResult &result, const CompiledStep &step,
           const ::loom::program::TrainOptions &options,
           const PipelineSchedule *schedule) {
  namespace program = ::loom::program;
  std::string error;
  llvm::outs() << llvm::formatv(
      "trained {0} steps in {1:f3} s ({2:f4} s/step, compile {3:f3} s{5}); "
      "parameters in {4}\n",
      steps, result.trainSeconds, result.trainSeconds / steps,
      step.compileSeconds,
      options.paramsOut.empty() ? std::string("none (--params-out none)")
                                : options.paramsOut,
      step.cached ? ", machine code from the cache" : "");
  // Each rank's peak: the caller's buffers plus the temporaries' high-water
  // mark, the most any step held. (A pipeline's stages are not measured.)
  auto mib = [](int64_t bytes) { return double(bytes) / (1 << 20); };
  if (!step.manifest.pipelined())
    for (auto [rank, m] : llvm::enumerate(result.memory))
      llvm::outs() << llvm::formatv(
          "peak memory rank {0}: {1:f3} MiB = parameters {2:f3} + optimizer "
          "state {3:f3} + inputs {4:f3} + results {5:f3} + temporaries "
          "{6:f3}\n",
          rank, mib(m.peak()), mib(m.parameters), mib(m.optimizerState),
          mib(m.inputs), mib(m.results), mib(m.temporaries));
  if (result.dataBytesInFiles > 0) {
    int64_t most = *llvm::max_element(result.dataBytesRead);
    llvm::outs() << llvm::formatv(
        "data read: at most {0} B ({1:f1} MiB) per rank (its blocks) of the "
        "{2} B ({3:f1} MiB) the steps' entries hold (files mapped, not read "
        "whole)\n",
        most, mib(most), result.dataBytesInFiles,
        mib(result.dataBytesInFiles));
  }
  if (profile) {
    llvm::outs() << program::profileText(result.trace, result.ranks);
    if (schedule) {
      std::optional<double> simulated =
          schedule->simulatedBubble(result.trace, error);
      if (!simulated)
        return fail(error);
      llvm::outs() << llvm::formatv(
          "  the schedule's bubble fraction in simulation: {0:f3} with each "
          "stage's measured action times, {1:f3} with unit times (F 1, B 2)\n",
          *simulated, schedule->unitBubble);
    }
  }
  if (!traceOut.empty()) {
    std::string text = program::chromeTrace(result.trace);
    if (!program::writeFileAtomically(traceOut, text.data(), text.size(),
                                      error))
      return fail(error);
    llvm::outs() << "wrote trace " << traceOut << "\n";
  }
  return 0;
}

int train(MLIRContext &ctx, llvm::SourceMgr &sourceMgr) {
  SmallString<256> irPath(modelPath);
  llvm::sys::path::append(irPath, "train.mlir");
  auto buffer = llvm::MemoryBuffer::getFile(irPath);
  if (!buffer)
    return fail(modelPath + " is not a training artifact: cannot read " +
                std::string(irPath) + " (create one with loomc --train)");
  std::string nesting = checkIRNesting((*buffer)->getBuffer(), irPath);
  if (!nesting.empty())
    return fail(nesting);
  sourceMgr.AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &ctx);
  if (!module || failed(verifySizeLimits(*module)))
    return 2;
  if (steps < 1 || steps > int64_t(1e15))
    return fail("--steps must be from 1 to 1e15, not " + std::to_string(steps));
  namespace program = ::loom::program;
  ExecutorOptions executor = executorOptions();
  if (!noCache) {
    SmallString<256> cache(modelPath);
    llvm::sys::path::append(cache, "cache");
    executor.cacheDir = std::string(cache);
  }
  program::TrainOptions options;
  options.steps = steps;
  options.data = dataDir;
  options.seed = seed;
  options.dir = modelPath;
  options.writer = "loom-run";
  std::string outputError;
  if (!program::resolveOutputs(options, paramsOut, stateOut, outputError))
    return fail(outputError);
  program::TrainResult result;
  auto started = std::chrono::steady_clock::now();
  auto lastProgress = started;
  int64_t firstStep = -1;
  options.onStep = [&](int64_t step, double loss, const std::string &note) {
    llvm::outs() << llvm::formatv("step {0} loss {1:e8}", step, loss);
    if (!note.empty())
      llvm::outs() << "  [" << note << "]";
    llvm::outs() << "\n";
    auto now = std::chrono::steady_clock::now();
    if (firstStep < 0) {
      // Rates count from the end of the first step run (compilation and
      // the first step's warm-up excluded).
      firstStep = step;
      started = lastProgress = now;
    }
    double since = std::chrono::duration<double>(now - lastProgress).count();
    if (progressEvery > 0 && since >= progressEvery && step + 1 < steps) {
      double elapsed = std::chrono::duration<double>(now - started).count();
      double rate = double(step - firstStep) / elapsed;
      std::string extra;
      if (result.tokensPerStep > 0)
        extra = llvm::formatv(", {0:f0} tokens/s", rate * result.tokensPerStep);
      else if (result.samplesPerStep > 0)
        extra = llvm::formatv(", {0:f1} samples/s", rate * result.samplesPerStep);
      llvm::outs() << llvm::formatv(
          "progress: step {0}/{1} ({2:f0}%), {3:f2} steps/s{4}, ETA {5:f0} s\n",
          step + 1, int64_t(steps), 100.0 * (step + 1) / steps, rate, extra,
          double(steps - step - 1) / rate);
      lastProgress = now;
    }
    llvm::outs().flush();
  };
  options.onNote = [](const std::string &line) {
    llvm::outs() << line << "\n";
    llvm::outs().flush();
  };
  options.shuffle = shuffle;
  options.timeoutSeconds = timeout;
  options.checkpointDir = checkpointDir;
  options.checkpointEvery = checkpointEvery;
  options.checkpointKeep = checkpointKeep;
  options.resume = resumeFrom;
  if (checkpointEvery < 0 || checkpointKeep < 0)
    return fail("--checkpoint-every and --checkpoint-keep must not be negative");
  if (checkpointEvery > 0 && checkpointDir.empty())
    return fail("--checkpoint-every needs --checkpoint-dir");
  options.trace = profile || !traceOut.empty();
  // Fault injection for the failure tests (docs/distributed.md).
  if (const char *fault = std::getenv("LOOM_FAULT"))
    if (std::string err = program::parseFault(fault, options); !err.empty())
      return fail(err);
  // The start-up handshake: every rank runs this loom-run on this artifact.
  SmallString<256> ir(modelPath);
  llvm::sys::path::append(ir, "train.mlir");
  options.fingerprintFiles = {{"loom-run (its executable file)", "/proc/self/exe"},
                              {"the artifact (train.mlir)", std::string(ir)}};
  // The JIT's allocator measures each step's temporaries.
  options.resetTemporaries = [] { Executor::beginMeasuringTemporaries(); };
  options.peakTemporaries = [] { return Executor::measuredTemporaries(); };
  // A pipeline's schedule must be one that finishes (loomc checked it; an
  // edited artifact is checked again); its bubble with unit action times.
  std::optional<PipelineSchedule> schedule;
  std::string error;
  if ((*module)->hasAttr(LoomDialect::kPipelineAttrName)) {
    schedule = PipelineSchedule::of(*module, error);
    if (!schedule)
      return fail(error);
  }
  CompiledStep step;
  if (!compileStep(*module, executor, step, error))
    return fail(error);
  bool ok;
  if (step.manifest.pipelined()) {
    auto lookup = [&](const std::string &name) -> program::PackedEntry {
      auto it = step.entries.find(name);
      return it == step.entries.end() ? nullptr : it->second;
    };
    ok = program::trainPipeline(step.manifest, lookup, options, result, error);
  } else {
    ok = program::train(step.manifest, step.entries["train_step"], options,
                        result, error);
  }
  if (!ok)
    return fail(error);
  if (result.rank != 0)
    return 0;
  return report(result, step, options, schedule ? &*schedule : nullptr);
}

/// Inputs given as files: by name (--input), and by graph-input index
/// (--input-dir, under a launcher D/rank<R>/ when it exists).
struct Inputs {
  std::map<std::string, HostTensor> byName;
  std::vector<HostTensor> byIndex;
  bool arePb = true;
  /// "rank<R>" under a launcher with several ranks.
  std::string rankDir;
};

int loadInputs(MLIRContext &ctx, ArrayRef<std::string> onnxInputs,
               Inputs &in) {
  std::string error;
  for (const std::string &spec : inputFiles) {
    auto [name, file] = StringRef(spec).split('=');
    std::optional<HostTensor> t = readTensorFile(file, &ctx, error);
    if (!t)
      return fail(error);
    in.byName[name.str()] = *t;
  }
  loom_launch_info_t launch;
  if (loom_status_t s = loom_launch_info_from_env(&launch))
    return fail(loom_status_message(s));
  if (launch.world_size > 1)
    in.rankDir = "rank" + std::to_string(launch.rank);
  std::string dir = inputDir;
  if (dir.empty())
    return 0;
  if (!in.rankDir.empty()) {
    SmallString<256> perRank(dir);
    llvm::sys::path::append(perRank, in.rankDir);
    if (llvm::sys::fs::is_directory(perRank))
      dir = std::string(perRank);
  }
  for (unsigned i = 0;; ++i) {
    std::string path = findIndexed(dir, "input", i);
    if (path.empty())
      break;
    in.arePb &= StringRef(path).ends_with(".pb");
    std::optional<HostTensor> t = readTensorFile(path, &ctx, error);
    if (!t)
      return fail(error);
    in.byIndex.push_back(*t);
  }
  for (size_t i = 0; i < in.byIndex.size() && i < onnxInputs.size(); ++i)
    in.byName.emplace(onnxInputs[i], in.byIndex[i]);
  return 0;
}

/// Imports the ONNX model (integer inputs given as files compiled in with
/// --specialize-inputs) or parses loom IR.
OwningOpRef<ModuleOp> loadModel(MLIRContext &ctx, llvm::SourceMgr &sourceMgr,
                                std::unique_ptr<llvm::MemoryBuffer> buffer,
                                bool isOnnx, const Inputs &in,
                                std::string &error) {
  if (!isOnnx) {
    error = checkIRNesting(buffer->getBuffer(), buffer->getBufferIdentifier());
    if (!error.empty())
      return nullptr;
    sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
    OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &ctx);
    if (module && failed(verifySizeLimits(*module)))
      return nullptr;
    return module;
  }
  OnnxImportOptions options;
  for (const std::string &spec : inputShapes) {
    error = parseOnnxInputShape(spec, options);
    if (!error.empty())
      return nullptr;
  }
  // The data's shapes bind the dimensions the model leaves symbolic.
  for (auto &[name, tensor] : in.byName)
    options.dataShapes[name] = std::vector<int64_t>(
        tensor.getType().getShape().begin(), tensor.getType().getShape().end());
  if (specialize)
    for (auto &[name, tensor] : in.byName) {
      if (isa<FloatType>(tensor.getElementType()))
        continue;
      // i1 raw buffers are bit-packed in MLIR: rebuild those from bools.
      if (tensor.getElementType().isInteger(1)) {
        SmallVector<bool> bits;
        for (int64_t i = 0; i < tensor.getNumElements(); ++i)
          bits.push_back(tensor.getAsInt(i) != 0);
        options.specializedInputs[name] =
            DenseElementsAttr::get(tensor.getType(), bits);
        continue;
      }
      options.specializedInputs[name] = DenseElementsAttr::getFromRawBuffer(
          tensor.getType(),
          ArrayRef<char>(tensor.data(), tensor.byteSize()));
    }
  return importOnnxModel(buffer->getBuffer(), modelPath, &ctx, options);
}

/// The function to run: --function, else @main, else the only public one.
std::string entryFunction(ModuleOp module) {
  if (!functionName.empty())
    return functionName;
  if (module.lookupSymbol<func::FuncOp>("main"))
    return "main";
  SmallVector<func::FuncOp> publics;
  for (auto fn : module.getOps<func::FuncOp>())
    if (fn.isPublic() && !fn.isExternal())
      publics.push_back(fn);
  return publics.size() == 1 ? publics.front().getName().str() : "main";
}

/// Parameters from their initial values; inputs by name or, for .mlir
/// models, by position among the non-parameter arguments; random ones
/// with --random-inputs.
int bindArguments(Executor &executor, const Inputs &in, bool isOnnx,
                  int rank, std::vector<HostTensor> &values) {
  std::string error;
  std::string baseDir = llvm::sys::path::parent_path(modelPath).str();
  // Distributed runs draw different random inputs on every rank.
  std::mt19937_64 gen(seed + rank);
  unsigned inputIndex = 0;
  for (auto [i, info] : llvm::enumerate(executor.getArguments())) {
    if (!info.parameter.empty()) {
      std::optional<HostTensor> value =
          executor.parameterValue(i, baseDir, error);
      if (!value)
        return fail(error);
      values.push_back(*value);
      continue;
    }
    std::optional<HostTensor> value;
    if (auto it = in.byName.find(info.name); it != in.byName.end())
      value = it->second;
    else if (!isOnnx && inputIndex < in.byIndex.size())
      value = in.byIndex[inputIndex];
    ++inputIndex;
    if (!value && randomInputs)
      value = randomTensor(info.type, gen);
    if (!value)
      return fail("no value for input '" + info.name + "' (" +
                  llvm::formatv("{0}", info.type).str() +
                  "): give --input-dir, --input " + info.name +
                  "=FILE or --random-inputs");
    value = reinterpretBits(*value, info.type.getElementType());
    if (value->getType() != info.type) {
      if (value->getShape() != info.type.getShape() ||
          !isa<FloatType>(value->getElementType()) ||
          !isa<FloatType>(info.type.getElementType()))
        return fail("input '" + info.name + "' is " +
                    llvm::formatv("{0}", value->getType()).str() +
                    ", expected " + llvm::formatv("{0}", info.type).str());
      value = value->convertTo(info.type.getElementType());
    }
    values.push_back(*value);
  }
  return 0;
}

/// Runs --repeat times, reporting the time per call when repeated.
int execute(Executor &executor, ArrayRef<HostTensor> argValues,
            double compileSeconds, SmallVectorImpl<HostTensor> &results) {
  std::vector<const HostTensor *> args;
  for (const HostTensor &t : argValues)
    args.push_back(&t);
  auto cpuSeconds = [] {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
           1e-6 * (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
  };
  int runs = std::max(1, static_cast<int>(repeat));
  double cpuStart = cpuSeconds();
  auto start = std::chrono::steady_clock::now();
  std::string error;
  for (int r = 0; r < runs; ++r)
    if (!executor.run(args, results, error))
      return fail(error);
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count() /
                   runs;
  if (repeat > 1)
    llvm::outs() << llvm::formatv(
        "compile {0:f3} s, run {1:f6} s per call ({2} calls), cpu {3:f6} s "
        "per call\n",
        compileSeconds, seconds, runs, (cpuSeconds() - cpuStart) / runs);
  return 0;
}

int writeOutputs(const Executor &executor, ArrayRef<HostTensor> results,
                 const Inputs &in) {
  SmallString<256> outDir(outputDir);
  if (!in.rankDir.empty())
    llvm::sys::path::append(outDir, in.rankDir);
  (void)llvm::sys::fs::create_directories(outDir);
  std::string ext = outputFormat.empty() ? (in.arePb ? ".pb" : ".npy")
                                         : "." + outputFormat;
  std::string error;
  for (auto [i, t] : llvm::enumerate(results)) {
    SmallString<256> path(outDir);
    llvm::sys::path::append(path, "output_" + std::to_string(i) + ext);
    if (!writeTensorFile(path, t, error, executor.getResults()[i].name))
      return fail(error);
  }
  return 0;
}

/// Compares with --expected-dir (numpy.allclose); 1 on any mismatch.
int compareOutputs(MLIRContext &ctx, const Executor &executor,
                   ArrayRef<HostTensor> results) {
  int status = 0;
  std::string error;
  for (auto [i, t] : llvm::enumerate(results)) {
    std::string path = findIndexed(expectedDir, "output", i);
    if (path.empty())
      return fail("no expected output_" + std::to_string(i) + " in " +
                  expectedDir);
    std::optional<HostTensor> expected = readTensorFile(path, &ctx, error);
    if (!expected)
      return fail(error);
    expected = reinterpretBits(*expected, t.getElementType());
    Comparison c = compareTensors(t, *expected, relTol, absTol);
    StringRef name = executor.getResults()[i].name;
    if (!c.reason.empty()) {
      llvm::outs() << "output " << i << " '" << name
                   << "': MISMATCH: " << c.reason << "\n";
      status = 1;
      continue;
    }
    llvm::outs() << llvm::formatv(
        "output {0} '{1}': max abs error {2:e2}, max rel error {3:e2}: {4}", i,
        name, c.maxAbsError, c.maxRelError, c.match ? "ok" : "MISMATCH");
    if (!c.match) {
      llvm::outs() << llvm::formatv(
          " ({0} of {1} elements, first at {2}: {3} vs expected {4})",
          c.mismatches, t.getNumElements(), c.firstMismatch,
          t.getAsDouble(c.firstMismatch),
          expected->getAsDouble(c.firstMismatch));
      status = 1;
    }
    llvm::outs() << "\n";
  }
  return status;
}

/// Runs one function of a model on given, random or parameter inputs.
int runModel(MLIRContext &ctx, llvm::SourceMgr &sourceMgr) {
  bool isOnnx = StringRef(modelPath).ends_with(".onnx");
  std::string error;
  auto buffer = llvm::MemoryBuffer::getFile(modelPath, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/!isOnnx);
  if (!buffer)
    return fail("cannot read " + modelPath + ": " +
                buffer.getError().message());
  std::vector<std::string> onnxInputs;
  if (isOnnx) {
    onnxInputs = onnxGraphInputNames((*buffer)->getBuffer(), error);
    if (!error.empty())
      return fail(modelPath + ": " + error);
  }
  Inputs in;
  if (int status = loadInputs(ctx, onnxInputs, in))
    return status;
  OwningOpRef<ModuleOp> module =
      loadModel(ctx, sourceMgr, std::move(*buffer), isOnnx, in, error);
  if (!module)
    return error.empty() ? 2 : fail(error);
  std::string function = entryFunction(*module);

  // A partitioned program (collectives in it) runs on the mesh it declares,
  // one process per device, under mpirun/srun.
  std::unique_ptr<DistributedContext> distributed;
  if (auto fn = module->lookupSymbol<func::FuncOp>(function)) {
    bool collectives = false;
    fn.walk([&](CollectiveOpInterface) { collectives = true; });
    if (collectives) {
      DistributedOptions dopts;
      dopts.timeoutSeconds = timeout;
      distributed = DistributedContext::create(*module, nullptr, dopts, error);
      if (!distributed)
        return fail(error);
    }
  }
  ExecutorOptions options = executorOptions();
  auto compileStart = std::chrono::steady_clock::now();
  std::unique_ptr<Executor> executor =
      Executor::create(*module, function, options, error);
  if (!executor)
    return fail(error);
  double compileSeconds = std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - compileStart)
                              .count();
  std::vector<HostTensor> argValues;
  int rank = distributed ? distributed->rank() : 0;
  if (int status = bindArguments(*executor, in, isOnnx, rank, argValues))
    return status;
  SmallVector<HostTensor> results;
  if (int status = execute(*executor, argValues, compileSeconds, results))
    return status;
  if (!outputDir.empty())
    if (int status = writeOutputs(*executor, results, in))
      return status;
  if (printOutputs) {
    std::string prefix = distributed && distributed->size() > 1
                             ? "rank " + std::to_string(rank) + ": "
                             : "";
    for (auto [i, t] : llvm::enumerate(results))
      printTensor(prefix + executor->getResults()[i].name, t);
  }
  return expectedDir.empty() ? 0 : compareOutputs(ctx, *executor, results);
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerDebugOptions();
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "Loom: compile and run a model on the CPU\n");

  DialectRegistry registry;
  registry.insert<LoomDialect, func::FuncDialect>();
  registerAllDialects(registry);
  registerAllExtensions(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &ctx);

  // Numbers are finite and in range: --timeout nan would switch the
  // collectives' deadline off, and a stalled rank would hang the job.
  if (!std::isfinite(timeout) || timeout <= 0)
    return fail("--timeout must be a positive number of seconds, not " +
                std::to_string(timeout));
  if (!std::isfinite(relTol) || relTol < 0 || !std::isfinite(absTol) ||
      absTol < 0)
    return fail("--rtol and --atol must be numbers >= 0");
  if (!std::isfinite(progressEvery) || progressEvery < 0)
    return fail("--progress must be a number of seconds >= 0");
  // -np 0 used to run one rank silently, and -np 1000000000 had mpirun
  // start processes until the machine hung.
  if (numRanks.getNumOccurrences() && (numRanks < 1 || numRanks > kMaxRanks))
    return fail("-np " + std::to_string(numRanks) +
                ": give a number of ranks from 1 to " +
                std::to_string(kMaxRanks) + " (one per device of the mesh)");
  if (stateOut.getNumOccurrences() && stateOut.empty())
    return fail("--state-out needs a directory (or none to write no "
                "optimizer state), not an empty value");
  if (paramsOut.getNumOccurrences() && paramsOut.empty())
    return fail("--params-out needs a directory (or none to write no "
                "parameters), not an empty value");

  if (calibrate)
    return runCalibration();
  if (modelPath.empty())
    return fail("give a model (model.mlir, model.onnx or a loomc artifact "
                "directory), or --calibrate");
  if (useExecutable)
    return runExecutable();
  if (numRanks > 0) {
    loom_launch_info_t info;
    loom_status_t st = loom_launch_info_from_env(&info);
    loom_status_free(st);
    if (info.world_size <= 1)
      return launch(argc, argv);
  }
  if (llvm::sys::fs::is_directory(modelPath))
    return train(ctx, sourceMgr);
  return runModel(ctx, sourceMgr);
}
