//===- Training.cpp - The CPU training loop -------------------------------===//
//
// A Trainer runs the steps: it sets up the mesh of a partitioned step,
// compiles @train_step, binds parameters (this rank's shards), opens the
// data, runs the steps feeding updated parameters back, and writes the
// final parameters and optimizer state (gathered from every rank).
//
//===----------------------------------------------------------------------===//

#include "loom/Execution/Training.h"

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Execution/Checkpoint.h"
#include "loom/Execution/DataLoader.h"
#include "loom/Execution/Distributed.h"
#include "loom/Execution/TensorIO.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <algorithm>
#include <future>
#include <map>
#include <random>
#include <set>

using namespace mlir;
using namespace mlir::loom;

namespace {
/// One data argument's source.
struct DataSource {
  unsigned arg;
  std::string name;
  RankedTensorType type;     // the argument (with the micro-batch dim)
  RankedTensorType perEntry; // one entry of the file's leading axis
  std::unique_ptr<DataFile> file;
  DataOrder order;
  /// This rank's block of one entry: where it starts, its type in the
  /// model's and in the file's element type.
  SmallVector<int64_t> offset;
  RankedTensorType block, fileBlock;
};
} // namespace

HostTensor mlir::loom::syntheticTensor(RankedTensorType type, int64_t bound,
                                      std::mt19937_64 &gen) {
  HostTensor t(type);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int64_t> ints(0, std::max<int64_t>(bound, 1) - 1);
  bool isFloat = isa<FloatType>(type.getElementType());
  for (int64_t i = 0; i < t.getNumElements(); ++i)
    t.setFromDouble(i, isFloat ? real(gen) : double(ints(gen)));
  return t;
}

std::string mlir::loom::parseFault(StringRef spec, TrainOptions &options) {
  SmallVector<StringRef> parts;
  spec.split(parts, ':');
  if (parts.size() != 3 || parts[0].getAsInteger(10, options.faultRank) ||
      parts[1].getAsInteger(10, options.faultStep) ||
      !llvm::is_contained({"kill", "stop", "exit", "save"}, parts[2]))
    return "LOOM_FAULT: expected RANK:STEP:kill|stop|exit|save, got '" +
           spec.str() + "'";
  options.faultMode = parts[2].str();
  return "";
}

namespace {

class Trainer {
public:
  Trainer(ModuleOp module, StringRef dir, const TrainOptions &options,
          TrainResult &result, std::string &error)
      : module(module), dir(dir), options(options), result(result),
        error(error) {}

  bool run() {
    return setUp() && compile() && bindArguments() && resume() &&
           checkResults() && openData() && runSteps() && gatherMemory() && gatherTrace() &&
           save(options.paramsOut, true) && save(options.stateOut, false);
  }

private:
  bool setUp();
  bool compile();
  bool bindArguments();
  bool resume();
  bool saveCheckpoint(int64_t stepsDone);
  /// Every parameter argument as this rank holds it.
  std::vector<CheckpointEntry> checkpointEntries();
  bool checkResults();
  bool openData();
  bool openFile(DataSource &source);
  /// Empty, with `dataError` set, when a value must not reach the step.
  std::vector<HostTensor> stepData(int64_t step, std::mt19937_64 &gen);
  std::string dataError;
  bool runSteps();
  /// Dynamic loss scaling's current scale (amp.loss_scale), if the step has
  /// one.
  std::optional<double> lossScale() const {
    auto it = store.find("amp.loss_scale");
    if (it == store.end())
      return std::nullopt;
    return it->second.getAsDouble(0);
  }
  /// Reports step `s` and checks its loss; saves a checkpoint when due.
  bool afterStep(int64_t s, double loss, std::optional<double> scaleBefore);
  bool gatherMemory();
  bool gatherTrace();
  bool save(StringRef outDir, bool trainable);

  HostTensor toLocal(unsigned arg, const HostTensor &global) const {
    return mesh ? mesh->localShard(global, argShardings[arg]) : global;
  }

  ModuleOp module;
  StringRef dir;
  const TrainOptions &options;
  TrainResult &result;
  std::string &error;

  func::FuncOp step;
  int64_t micro = 1;
  std::unique_ptr<DistributedContext> mesh;
  SmallVector<ShardingAttr> argShardings;
  std::unique_ptr<Executor> exec;
  ArrayRef<ValueInfo> args, results;
  /// Parameter store, keyed by symbol (this rank's shards).
  std::map<std::string, HostTensor> store;
  std::vector<DataSource> data;
  /// The first step to run (a resumed checkpoint's).
  int64_t firstStep = 0;
};

/// Finds @train_step and, for a partitioned step, starts the mesh it runs
/// on: one rank per device, each holding its shard of every argument.
bool Trainer::setUp() {
  step = module.lookupSymbol<func::FuncOp>("train_step");
  if (!step) {
    error = "the module has no @train_step (build it with loomc --train or "
            "loom-opt --loom-build-train-step)";
    return false;
  }
  if (auto attr = step->getAttrOfType<IntegerAttr>(
          LoomDialect::kMicroBatchesAttrName))
    micro = attr.getInt();
  argShardings.assign(step.getNumArguments(), nullptr);
  if (auto meshRef = step->getAttrOfType<FlatSymbolRefAttr>(
          LoomDialect::kPartitionedAttrName)) {
    DistributedOptions dopts;
    dopts.timeoutSeconds = options.timeoutSeconds;
    mesh = DistributedContext::create(
        module, module.lookupSymbol<MeshOp>(meshRef), dopts, error);
    if (!mesh || !agreeOnTrainingStart(*mesh, dir, options, error))
      return false;
    for (unsigned i = 0; i < step.getNumArguments(); ++i)
      argShardings[i] = step.getArgAttrOfType<ShardingAttr>(
          i, LoomDialect::kShardingAttrName);
  } else {
    // One device: as one of several ranks, every rank would train the
    // whole model alone and write the same files.
    loom_launch_info_t info;
    if (::loom::program::launchedRanks(info) > 1) {
      error = llvm::formatv("this artifact is for one device but loom-run was "
                            "started as rank {0} of {1} ({2}); run it without "
                            "a launcher, or compile it for a mesh (loomc "
                            "--mesh ...)",
                            info.rank, info.world_size,
                            loom_launcher_name(info.launcher))
                  .str();
      return false;
    }
  }
  result.rank = mesh ? mesh->rank() : 0;
  return true;
}

bool Trainer::compile() {
  auto start = std::chrono::steady_clock::now();
  exec = Executor::create(module, "train_step", options.executor, error);
  if (!exec)
    return false;
  result.compileSeconds = std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - start)
                              .count();
  args = exec->getArguments();
  results = exec->getResults();
  result.compileCached = exec->fromCache();
  return true;
}

/// Parameters from their initial values (this rank's shard); the other
/// arguments are data.
bool Trainer::bindArguments() {
  for (auto [i, info] : llvm::enumerate(args)) {
    RankedTensorType global =
        mesh ? mesh->globalType(info.type, argShardings[i]) : info.type;
    if (!info.parameter.empty()) {
      std::optional<HostTensor> value = readInitialValue(
          info.initialValue, global, info.parameter, dir, error);
      if (!value)
        return false;
      store[info.parameter] = toLocal(i, *value);
      continue;
    }
    DataSource source;
    source.arg = i;
    source.name = info.name;
    source.type = global;
    source.perEntry = global;
    if (micro > 1)
      source.perEntry = RankedTensorType::get(global.getShape().drop_front(),
                                              global.getElementType());
    data.push_back(std::move(source));
  }
  return true;
}

/// With TrainOptions::resume: every parameter (optimizer state and step
/// counter included) from the checkpoint, this rank's block of each.
bool Trainer::resume() {
  if (options.resume.empty())
    return true;
  std::optional<CheckpointState> state = resumeFromCheckpoint(
      options.resume, module.getContext(), checkpointEntries(), mesh.get(),
      {options.steps, options.seed, options.data, {}}, error);
  if (!state)
    return false;
  firstStep = state->step;
  return true;
}

std::vector<CheckpointEntry> Trainer::checkpointEntries() {
  std::vector<CheckpointEntry> entries;
  for (auto [i, info] : llvm::enumerate(args))
    if (!info.parameter.empty())
      entries.push_back({info.parameter, &store[info.parameter],
                         argShardings[i], info.trainable});
  return entries;
}

/// Every parameter and optimizer state, the step counter included, as
/// this rank holds it.
bool Trainer::saveCheckpoint(int64_t stepsDone) {
  CheckpointState state{stepsDone, options.seed, options.data, micro};
  CheckpointSaveOptions save;
  save.keep = options.checkpointKeep;
  save.dieBeforeManifest = options.faultMode == "save" &&
                           options.faultRank == result.rank &&
                           options.faultStep == stepsDone;
  return mlir::loom::saveCheckpoint(options.checkpointDir, state,
                              checkpointEntries(), mesh.get(), save, error);
}

bool Trainer::checkResults() {
  if (results.empty() || !results[0].parameter.empty() ||
      results[0].type.getRank() != 0) {
    error = "@train_step must return the scalar loss first";
    return false;
  }
  for (const ValueInfo &r : llvm::drop_begin(results))
    if (r.parameter.empty() || !store.count(r.parameter)) {
      error = "result '" + r.name +
              "' of @train_step updates no parameter argument (loom.param)";
      return false;
    }
  return true;
}

/// Synthetic data needs a range for integer inputs; files must exist and
/// hold enough entries of the right shape.
bool Trainer::openData() {
  bool synthetic = options.data == "synthetic";
  for (DataSource &source : data) {
    ArrayRef<int64_t> entry = source.perEntry.getShape();
    if (&source == &data.front() && !entry.empty())
      result.samplesPerStep = entry[0] * micro;
    if (!isa<FloatType>(source.type.getElementType()) && entry.size() >= 2 &&
        source.name != "labels")
      result.tokensPerStep = std::max(result.tokensPerStep,
                                      entry[0] * entry[1] * micro);
    if (!synthetic) {
      if (!openFile(source))
        return false;
      continue;
    }
    if (!isa<FloatType>(source.type.getElementType()) &&
        args[source.arg].indexBound <= 0) {
      error = "synthetic data for integer input '" + source.name +
              "' needs its range: give the argument loom.index_bound "
              "(loomc sets it for token ids and labels) or use --data";
      return false;
    }
  }
  // Inputs are read entry by entry together: their files must agree.
  for (const DataSource &source : data)
    if (source.file && data.front().file &&
        source.file->entries() != data.front().file->entries()) {
      error = llvm::formatv("{0}.npy has {1} entries but {2}.npy has {3}: "
                            "every input's file needs the same number",
                            data.front().name, data.front().file->entries(),
                            source.name, source.file->entries())
                  .str();
      return false;
    }
  return true;
}

/// Maps the input's file; this rank will copy only its block of each
/// entry, in the order of epochs (wrapping, shuffled with --shuffle).
bool Trainer::openFile(DataSource &source) {
  SmallString<256> path(options.data);
  llvm::sys::path::append(path, source.name + ".npy");
  source.file = DataFile::open(path, source.name, source.perEntry, error);
  if (!source.file)
    return false;
  int64_t n = source.file->entries(), needed = options.steps * micro;
  source.order = DataOrder(n, options.shuffle, options.seed);
  // The argument's local type; with micro-batches, less its leading axis.
  RankedTensorType local = args[source.arg].type;
  source.offset = mesh ? mesh->blockOffset(source.type.getShape(),
                                           argShardings[source.arg])
                       : SmallVector<int64_t>(source.type.getRank(), 0);
  if (micro > 1) {
    local = RankedTensorType::get(local.getShape().drop_front(),
                                  local.getElementType());
    source.offset.erase(source.offset.begin());
  }
  source.block = local;
  source.fileBlock = local.clone(source.file->getFileElementType());
  if (needed > n && result.rank == 0 && &source == &data.front())
    llvm::outs() << llvm::formatv(
        "data: {0} has {1} entries; {2} steps{3} read {4}: {5} epochs{6}\n",
        path, n, options.steps,
        micro > 1 ? llvm::formatv(" of {0} micro-batches", micro).str()
                  : std::string(),
        needed, source.order.epochs(needed),
        options.shuffle ? ", each shuffled" : " (wrapping around)");
  return true;
}

/// Step `s`'s data, this rank's shards: read from the files, or
/// drawn (synthetic: every rank draws the whole batch, keeping its shard).
std::vector<HostTensor> Trainer::stepData(int64_t s, std::mt19937_64 &gen) {
  std::vector<HostTensor> values(args.size());
  for (DataSource &source : data) {
    if (!source.file) {
      values[source.arg] = toLocal(
          source.arg,
          syntheticTensor(source.type, args[source.arg].indexBound, gen));
      continue;
    }
    HostTensor step(args[source.arg].type), block(source.block),
        scratch(source.fileBlock);
    for (int64_t k = 0; k < micro; ++k) {
      int64_t entry = source.order.entry(s * micro + k);
      std::string why;
      if (!source.file->readBlock(entry, source.offset, block, scratch,
                                  why)) {
        dataError = why; // reported by runSteps, as below
        return {};
      }
      int64_t bad = ::loom::program::findBadValue(
          block.data(), runtimeType(block.getElementType()),
          block.getType().getNumElements(), args[source.arg].indexBound, why);
      if (bad >= 0) {
        // Read on the prefetch thread: runSteps reports it.
        dataError = llvm::formatv("{0}/{1}.npy: entry {2} holds {3} (element "
                                  "{4} of this rank's block of input '{1}')",
                                  options.data, source.name, entry, why, bad)
                        .str();
        return {};
      }
      std::memcpy(step.data() + k * block.byteSize(), block.data(),
                  block.byteSize());
    }
    values[source.arg] = std::move(step);
  }
  return values;
}

} // namespace

void mlir::loom::injectFault(const TrainOptions &options, int rank,
                             int64_t s) {
  if (options.faultMode.empty() || options.faultMode == "save" ||
      rank != options.faultRank || s != options.faultStep)
    return;
  // One write (errs() is unbuffered): mpirun interleaves the ranks' output
  // and a line written in pieces can be split by another rank's.
  llvm::errs() << llvm::formatv("loom: LOOM_FAULT: rank {0} {1} before "
                                "step {2}\n",
                                options.faultRank, options.faultMode, s)
                      .str();
  llvm::errs().flush();
  if (options.faultMode == "kill")
    std::raise(SIGKILL);
  else if (options.faultMode == "stop")
    std::raise(SIGSTOP);
  else
    _exit(3);
}

namespace {

/// "[dp, tp]": the axes of `mesh` whose bits `mask` sets.
std::string axesNamed(MeshOp mesh, uint64_t mask) {
  std::string axes;
  for (auto [a, axis] : llvm::enumerate(mesh.getAxes()))
    if (mask >> a & 1)
      axes += (axes.empty() ? "" : ", ") +
              cast<MeshAxisAttr>(axis).getName().getValue().str();
  return "[" + axes + "]";
}

bool Trainer::runSteps() {
  std::mt19937_64 gen(options.seed);
  auto start = std::chrono::steady_clock::now();
  SmallVector<HostTensor> outs;
  MemoryUse peak;
  loom_runtime_t runtime = mesh ? mesh->getRuntime() : nullptr;
  if (options.trace && runtime)
    loom_runtime_trace_start(runtime);
  auto now = [&]() {
    return runtime ? loom_runtime_trace_now_us(runtime)
                   : std::chrono::duration<double, std::micro>(
                         std::chrono::steady_clock::now() - start)
                         .count();
  };
  int64_t traced = 0;
  // Resumed: the synthetic stream continues where it stopped.
  for (int64_t s = 0; s < firstStep; ++s)
    for (DataSource &source : data)
      if (!source.file)
        syntheticTensor(source.type, args[source.arg].indexBound, gen);
  // The next step's data is prepared on a thread while this step runs.
  std::future<std::vector<HostTensor>> next;
  if (firstStep < options.steps)
    next = std::async(std::launch::async, [this, &gen, s = firstStep] {
      return stepData(s, gen);
    });
  for (int64_t s = firstStep; s < options.steps; ++s) {
    std::vector<HostTensor> dataValues = next.get();
    if (dataValues.empty()) {
      error = dataError;
      if (mesh)
        mesh->abandon();
      return false;
    }
    if (s + 1 < options.steps)
      next = std::async(std::launch::async, [this, &gen, s] {
        return stepData(s + 1, gen);
      });
    injectFault(options, result.rank, s);
    std::vector<const HostTensor *> argPtrs;
    for (auto [i, info] : llvm::enumerate(args))
      argPtrs.push_back(info.parameter.empty() ? &dataValues[i]
                                               : &store[info.parameter]);
    MemoryUse memory;
    double stepStart = now();
    if (!exec->run(argPtrs, outs, error, &memory))
      return false;
    if (options.trace) {
      result.trace.push_back(
          {result.rank, s, "", "", 0, 0, stepStart, now() - stepStart});
      // The collectives the step made (the runtime's events since).
      for (int64_t e = runtime ? loom_runtime_trace_count(runtime) : 0;
           traced < e; ++traced) {
        loom_trace_event_t ev;
        loom_runtime_trace_event(runtime, traced, &ev);
        result.trace.push_back({result.rank, s, ev.op,
                                axesNamed(mesh->getMeshOp(), ev.axes), ev.axes,
                                ev.bytes, ev.start_us, ev.duration_us});
      }
    }
    peak.merge(memory);
    double loss = outs[0].getAsDouble(0);
    result.losses.push_back(loss);
    std::optional<double> scaleBefore = lossScale();
    for (auto [i, r] : llvm::enumerate(results))
      if (i > 0)
        store[r.parameter] = std::move(outs[i]);
    if (!afterStep(s, loss, scaleBefore))
      return false;
  }
  result.trainSeconds = std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - start)
                            .count();
  result.memory = {peak};
  if (options.trace && runtime)
    loom_runtime_trace_stop(runtime);
  return true;
}

bool Trainer::afterStep(int64_t s, double loss,
                        std::optional<double> scaleBefore) {
  std::optional<double> scale = lossScale();
  bool skipped = scale && scaleBefore && *scale < *scaleBefore;
  std::string note;
  if (skipped)
    result.skippedSteps.push_back(s);
  if (scale && scaleBefore && *scale != *scaleBefore)
    note = llvm::formatv("loss scale {0} -> {1}{2}",
                         llvm::format("%g", *scaleBefore),
                         llvm::format("%g", *scale),
                         skipped ? ": inf/nan gradients, step skipped" : "");
  if (options.onStep && result.rank == 0)
    options.onStep(s, loss, note);
  // A skipped step may have a non-finite loss; the weights did not move.
  if (!std::isfinite(loss) && !skipped) {
    error = llvm::formatv("the loss is {0} at step {1}; stopping", loss, s);
    return false;
  }
  // As DeepSpeed's min_loss_scale: below 1 the gradients overflow even
  // unscaled, and every further step would be skipped.
  if (skipped && *scale < 1.0) {
    error = llvm::formatv(
        "the gradients are inf/nan even at loss scale {0} (step {1}); the "
        "model diverged, stopping",
        llvm::format("%g", *scaleBefore), s);
    return false;
  }
  if (!options.checkpointDir.empty() &&
      ((options.checkpointEvery > 0 && (s + 1) % options.checkpointEvery == 0) ||
       s + 1 == options.steps) &&
      !saveCheckpoint(s + 1))
    return false;
  return true;
}

bool Trainer::gatherTrace() {
  return !mesh || !options.trace || mlir::loom::gatherTrace(*mesh, result.trace, error);
}

/// Rank 0 learns every rank's memory.
bool Trainer::gatherMemory() {
  int64_t read = 0, inFiles = 0;
  for (const DataSource &source : data)
    if (source.file) {
      read += source.file->bytesRead();
      inFiles += source.file->entryBytesRead();
    }
  result.dataBytesInFiles = inFiles;
  result.dataBytesRead = {read};
  if (!mesh)
    return true;
  const MemoryUse &m = result.memory.front();
  std::optional<std::vector<int64_t>> all =
      mesh->allGather({m.parameters, m.optimizerState, m.inputs, m.results,
                       m.temporaries, read},
                      error);
  if (!all)
    return false;
  result.memory.clear();
  result.dataBytesRead.clear();
  for (size_t r = 0; r + 6 <= all->size(); r += 6) {
    result.memory.push_back(MemoryUse{(*all)[r], (*all)[r + 1], (*all)[r + 2],
                                      (*all)[r + 3], (*all)[r + 4]});
    result.dataBytesRead.push_back((*all)[r + 5]);
  }
  return true;
}

/// Writes trainable parameters (or the other state) as <name>.npy; every
/// rank takes part in gathering, rank 0 writes.
bool Trainer::save(StringRef outDir, bool trainable) {
  if (outDir.empty())
    return true;
  bool writer = !mesh || mesh->rank() == 0;
  if (std::error_code ec = llvm::sys::fs::create_directories(outDir);
      ec && writer) {
    error = "cannot create " + outDir.str() + ": " + ec.message();
    return false;
  }
  if (writer && !::loom::program::beginOutputDir(outDir.str(), error))
    return false;
  std::vector<std::string> written;
  for (auto [i, info] : llvm::enumerate(args)) {
    if (info.parameter.empty() || info.trainable != trainable)
      continue;
    HostTensor value = store[info.parameter];
    if (mesh) {
      std::optional<HostTensor> global =
          mesh->gatherGlobal(value, argShardings[i], error);
      if (!global)
        return false;
      value = *global;
      if (mesh->rank() != 0)
        continue;
    }
    SmallString<256> path(outDir);
    llvm::sys::path::append(path, info.parameter + ".npy");
    written.push_back(info.parameter + ".npy");
    if (!writeTensorFile(path, value, error))
      return false;
  }
  return !writer || ::loom::program::finishOutputDir(
                        outDir.str(), written,
                        llvm::formatv("loom-run after {0} steps", options.steps)
                            .str(),
                        error);
}

} // namespace

/// Events travel as fixed-size records (kind, axes, bytes, step, start and
/// duration in nanoseconds, stage, micro-batch), padded to the longest
/// rank's count.
bool mlir::loom::agreeOnTrainingStart(const DistributedContext &mesh,
                                      StringRef dir,
                                      const TrainOptions &options,
                                      std::string &error) {
  namespace p = ::loom::program;
  auto file = [&](StringRef name) {
    SmallString<256> path(dir);
    llvm::sys::path::append(path, name);
    return p::fingerprintFile(path.str().str());
  };
  p::StartFingerprint fp;
  fp.add("loom-run (its executable file)", p::fingerprintFile("/proc/self/exe"));
  fp.add("the artifact (train.mlir)", file("train.mlir"));
  fp.add("the initial parameters (params.bin)", file("params.bin"));
  std::string flags = llvm::formatv(
      "steps={0} seed={1} shuffle={2} synthetic={3} timeout={4} every={5} "
      "keep={6} resume={7}",
      options.steps, options.seed, options.shuffle,
      options.data == "synthetic", options.timeoutSeconds,
      options.checkpointEvery, options.checkpointKeep, !options.resume.empty());
  fp.add("the flags (--steps, --seed, --shuffle, --data, --timeout, "
         "--checkpoint-every, --checkpoint-keep, --resume)",
         p::fingerprintBytes(flags.data(), flags.size()));
  uint64_t data = p::fingerprintBytes("", 0);
  if (options.data != "synthetic") {
    std::vector<std::string> files;
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(options.data, ec), end;
         it != end && !ec; it.increment(ec))
      if (StringRef(it->path()).ends_with(".npy"))
        files.push_back(it->path());
    llvm::sort(files);
    for (const std::string &f : files) {
      StringRef name = llvm::sys::path::filename(f);
      data = p::fingerprintBytes(name.data(), name.size(), data);
      uint64_t h = p::fingerprintFile(f);
      data = p::fingerprintBytes(&h, sizeof(h), data);
    }
  }
  fp.add("the data files (--data " + options.data + ")", data);
  return p::agreeOnStart(mesh.getMesh(), fp, error);
}

bool mlir::loom::gatherTrace(const DistributedContext &mesh,
                             std::vector<TraceEvent> &events,
                             std::string &error) {
  static const char *const kinds[] = {
      "",  "all_reduce", "all_gather", "reduce_scatter", "all_to_all",
      "send_recv", "barrier", "F", "B", "I", "W", "U", "wait"};
  constexpr int kKinds = std::size(kinds), kFields = 8;
  std::optional<std::vector<int64_t>> counts =
      mesh.allGather({int64_t(events.size())}, error);
  if (!counts)
    return false;
  int64_t most = *std::max_element(counts->begin(), counts->end());
  std::vector<int64_t> mine(most * kFields, -1);
  for (auto [i, e] : llvm::enumerate(events)) {
    int64_t kind = 0;
    for (int k = 1; k < kKinds; ++k)
      if (e.op == kinds[k])
        kind = k;
    int64_t *r = &mine[i * kFields];
    r[0] = kind;
    r[1] = static_cast<int64_t>(e.mask);
    r[2] = e.bytes;
    r[3] = e.step;
    r[4] = int64_t(e.start * 1e3);
    r[5] = int64_t(e.duration * 1e3);
    r[6] = e.stage;
    r[7] = e.micro;
  }
  std::optional<std::vector<int64_t>> all = mesh.allGather(mine, error);
  if (!all)
    return false;
  if (mesh.rank() != 0)
    return true;
  events.clear();
  for (int rank = 0; rank < mesh.size(); ++rank)
    for (int64_t i = 0; i < most; ++i) {
      const int64_t *r = &(*all)[(rank * most + i) * kFields];
      if (r[0] < 0)
        continue;
      bool collective = r[0] > 0 && r[6] < 0;
      events.push_back(
          {rank, r[3], kinds[r[0]],
           collective ? axesNamed(mesh.getMeshOp(), r[1]) : std::string(),
           uint64_t(r[1]), r[2], r[4] * 1e-3, r[5] * 1e-3, int(r[6]),
           int(r[7])});
    }
  return true;
}

void mlir::loom::writeChromeTrace(ArrayRef<TraceEvent> events,
                                  raw_ostream &os) {
  llvm::json::Array out;
  std::set<int> ranks;
  for (const TraceEvent &e : events)
    ranks.insert(e.rank);
  for (int r : ranks) {
    out.push_back(llvm::json::Object{
        {"name", "process_name"}, {"ph", "M"}, {"pid", r}, {"tid", 0},
        {"args", llvm::json::Object{{"name", "rank " + std::to_string(r)}}}});
    out.push_back(llvm::json::Object{
        {"name", "thread_name"}, {"ph", "M"}, {"pid", r}, {"tid", 0},
        {"args", llvm::json::Object{{"name", "steps"}}}});
    out.push_back(llvm::json::Object{
        {"name", "thread_name"}, {"ph", "M"}, {"pid", r}, {"tid", 1},
        {"args", llvm::json::Object{{"name", "collectives"}}}});
    out.push_back(llvm::json::Object{
        {"name", "thread_name"}, {"ph", "M"}, {"pid", r}, {"tid", 2},
        {"args", llvm::json::Object{{"name", "pipeline"}}}});
  }
  for (const TraceEvent &e : events) {
    bool step = e.op.empty(), action = e.isPipelineAction();
    llvm::json::Object args{{"step", e.step}};
    std::string name = step ? "step " + std::to_string(e.step)
                            : e.op + " " + e.axes;
    if (action) {
      args["stage"] = e.stage;
      args["micro_batch"] = e.micro;
      name = llvm::formatv("{0} s{1} m{2}", e.op, e.stage, e.micro).str();
    } else if (!step) {
      args["bytes"] = e.bytes;
    }
    out.push_back(llvm::json::Object{
        {"name", name},
        {"cat", step ? "step" : action ? "pipeline" : "collective"},
        {"ph", "X"},
        {"pid", e.rank},
        {"tid", step ? 0 : action ? 2 : 1},
        {"ts", e.start},
        {"dur", e.duration},
        {"args", std::move(args)}});
  }
  os << llvm::formatv("{0:2}", llvm::json::Value(llvm::json::Object{
                                   {"traceEvents", std::move(out)},
                                   {"displayTimeUnit", "ms"}}))
     << "\n";
}

void mlir::loom::printProfile(ArrayRef<TraceEvent> events, int ranks,
                              raw_ostream &os) {
  // Per step and rank: the step's time and its time in collectives.
  std::map<int64_t, std::map<int, std::pair<double, double>>> steps;
  std::map<int64_t, std::map<int, int>> calls;
  std::map<std::string, std::tuple<double, int64_t, double>> kinds;
  std::map<std::pair<int, std::string>, double> actions;
  for (const TraceEvent &e : events) {
    if (e.op.empty()) {
      steps[e.step][e.rank].first = e.duration;
      continue;
    }
    if (e.isPipelineAction()) {
      if (e.op != "U")
        actions[{e.rank, e.op}] += e.duration;
      continue;
    }
    if (e.step >= 0) {
      steps[e.step][e.rank].second += e.duration;
      ++calls[e.step][e.rank];
    }
    auto &[count, bytes, time] = kinds[e.op + " over " + e.axes];
    count += 1;
    bytes += e.bytes;
    time += e.duration;
  }
  os << llvm::formatv("profile: {0} rank(s); per step, the slowest rank\n",
                      ranks);
  double total = 0, comm = 0;
  for (auto &[s, perRank] : steps) {
    int slowest = perRank.begin()->first;
    for (auto &[r, t] : perRank)
      if (t.first > perRank[slowest].first)
        slowest = r;
    auto [step, coll] = perRank[slowest];
    total += step;
    comm += coll;
    os << llvm::formatv("  step {0}: {1:f3} ms (rank {2}), collectives "
                        "{3:f3} ms in {4} calls ({5:f1}%), other {6:f3} ms\n",
                        s, step * 1e-3, slowest, coll * 1e-3,
                        calls[s][slowest],
                        step > 0 ? 100 * coll / step : 0.0,
                        (step - coll) * 1e-3);
  }
  if (!steps.empty())
    os << llvm::formatv("  mean: {0:f3} ms per step, {1:f3} ms in "
                        "collectives\n",
                        total / steps.size() * 1e-3,
                        comm / steps.size() * 1e-3);
  if (!kinds.empty()) {
    os << "  collectives, all ranks and steps (calls, buffer bytes, time):\n";
    for (auto &[name, k] : kinds)
      os << llvm::formatv("    {0,-36} {1,6:f0} calls {2,12} B {3,10:f3} ms\n",
                          name, std::get<0>(k), std::get<1>(k),
                          std::get<2>(k) * 1e-3);
  }
  if (actions.empty())
    return;
  os << "  pipeline actions, all steps (F forward, B backward, I/W its "
        "input/weight halves, wait: receives):\n";
  int rank = -1;
  for (auto &[key, time] : actions) {
    if (key.first != rank) {
      os << llvm::formatv("{0}    rank {1}:", rank < 0 ? "" : "\n",
                          key.first);
      rank = key.first;
    }
    os << llvm::formatv(" {0} {1:f3} ms", key.second, time * 1e-3);
  }
  os << "\n";
  double bubble = pipelineBubble(events, steps.size() > 1 ? 1 : 0);
  os << llvm::formatv("  measured bubble fraction {0:f3} (steps {1}..{2})\n",
                      bubble, steps.size() > 1 ? 1 : 0,
                      int64_t(steps.size()) - 1);
}

double mlir::loom::pipelineBubble(ArrayRef<TraceEvent> events,
                                  int64_t skip) {
  // Per step: the span of every rank's actions, each rank's busy time.
  std::map<int64_t, std::pair<double, double>> span;
  std::map<int64_t, std::map<int, double>> busy;
  for (const TraceEvent &e : events) {
    if (!e.isPipelineAction() || e.step < skip || e.op == "wait" ||
        e.op == "U")
      continue;
    auto [it, fresh] = span.try_emplace(e.step, e.start, e.start + e.duration);
    if (!fresh) {
      it->second.first = std::min(it->second.first, e.start);
      it->second.second = std::max(it->second.second, e.start + e.duration);
    }
    busy[e.step][e.rank] += e.duration;
  }
  double sum = 0;
  int n = 0;
  for (auto &[step, perRank] : busy) {
    double length = span[step].second - span[step].first;
    for (auto &[rank, time] : perRank) {
      sum += length > 0 ? 1 - time / length : 0;
      ++n;
    }
  }
  return n ? sum / n : -1;
}

bool mlir::loom::runTraining(ModuleOp module, StringRef dir,
                             const TrainOptions &options, TrainResult &result,
                             std::string &error) {
  if (module->hasAttr(LoomDialect::kPipelineAttrName) &&
      !module.lookupSymbol("train_step"))
    return runPipelineTraining(module, dir, options, result, error);
  return Trainer(module, dir, options, result, error).run();
}
