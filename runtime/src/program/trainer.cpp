//===- trainer.cpp - The training loop of an unpipelined step -------------===//
//
// Loom's training loop (loom/train.h) for a step compiled as one function
// (@train_step): rank programs and loom-run's JIT both run it. It starts
// the mesh, agrees with the other ranks on what is trained, binds this
// rank's block of every parameter on the device, resumes a checkpoint,
// opens the data, and per step: prepares the next step's data on a thread,
// uploads this step's, runs the step on the device, reads the loss back,
// makes the results the next parameters, reports dynamic loss scaling and
// saves checkpoints. At the end it gathers memory, data and trace
// statistics to rank 0 and writes the final parameters and optimizer
// state.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include "../train/mesh.h"
#include "loom/checkpoint.h"
#include "loom/kernels.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <future>
#include <map>
#include <memory>
#include <random>

using namespace loom::program;
using namespace loom::program::detail;

namespace {

/// One data argument's source: drawn, or read from a .npy file.
struct DataSource {
  size_t arg;
  /// The shape an entry is read as (the step's data: [M, b, ...] when M
  /// micro-batches split one entry; one micro-batch's when each has its
  /// own), this rank's block of it, and the entry's shape in the file.
  std::vector<int64_t> perEntry, offset, block, fileShape;
  NpyData npy;
  bool file = false;
  DataOrder order;
};

class Trainer {
public:
  Trainer(const Manifest &m, PackedEntry entry, const TrainOptions &o,
          TrainResult &result, std::string &error)
      : m(m), entry(entry), o(o), result(result), error(error) {
    if (!o.device)
      host = makeHostDevice();
    device = o.device ? o.device : host.get();
  }
  ~Trainer() {
    // Device buffers go before the runtime (and the device) they live on.
    params.clear();
    results.clear();
    inputs.clear();
    loom_rt_set_mesh(nullptr);
    loom_mesh_destroy(deviceMesh);
    loom_mesh_destroy(mesh);
    loom_runtime_destroy(runtime);
  }

  bool run() {
    return start() && bindParameters() && resume() && checkResults() &&
           openData() && ready() && runSteps() && gatherStatistics() &&
           (!o.trace || !mesh || gatherTrace(mesh, result.trace, error)) &&
           save(o.paramsOut, true) && save(o.stateOut, false);
  }

private:
  bool start();
  bool collectiveFailed(loom_status_t s, const std::string &what);
  /// Every rank has started (the first step's time is not the launcher's
  /// skew between the ranks).
  bool ready() {
    if (!mesh)
      return true;
    std::vector<int32_t> all;
    for (int32_t a = 0; a < loom_mesh_num_axes(mesh); ++a)
      all.push_back(a);
    return !collectiveFailed(
        loom_barrier(mesh, all.data(), int32_t(all.size())),
        "waiting for the ranks");
  }
  bool bindParameters();
  /// Every parameter's value on the host (for a checkpoint), or back to
  /// the device from there (after resuming).
  bool downloadParameters(std::map<size_t, Tensor> &out);
  bool uploadParameters(std::map<size_t, Tensor> &from);
  std::vector<CheckpointEntry> checkpointEntries(std::map<size_t, Tensor> &h);
  bool resume();
  bool saveCheckpoint(int64_t stepsDone);
  bool checkResults();
  bool openData();
  bool openFile(DataSource &source, const Value &v);
  /// Step `s`'s data (empty with dataError set when a value must not reach
  /// the step).
  std::vector<Tensor> stepData(int64_t s);
  void repeatFirstMicroBatch(Tensor &t) const;
  std::string dataError;
  bool runSteps();
  bool runStep(std::vector<Tensor> &values, double &loss, MemoryUse &memory);
  bool afterStep(int64_t s, double loss, double before, double after);
  void traceStep(int64_t s, double start, double end);
  bool gatherStatistics();
  bool save(const std::string &dir, bool trainable);
  double nowUs() const {
    if (runtime)
      return loom_runtime_trace_now_us(runtime);
    return std::chrono::duration<double, std::micro>(
               std::chrono::steady_clock::now() - clockStart)
        .count();
  }

  const Manifest &m;
  PackedEntry entry;
  const TrainOptions &o;
  TrainResult &result;
  std::string &error;
  std::unique_ptr<Device> host;
  Device *device = nullptr;
  loom_runtime_t runtime = nullptr;
  loom_mesh_t mesh = nullptr, deviceMesh = nullptr;
  /// Parameter arguments' values (this rank's blocks), by argument index,
  /// in the device's memory.
  std::map<size_t, DeviceBuffer> params;
  /// Data arguments' buffers (by argument index) and the results' (the
  /// next parameters: swapped with params after each step).
  std::map<size_t, DeviceBuffer> inputs;
  std::vector<DeviceBuffer> results;
  /// The argument each result updates.
  std::vector<size_t> updates;
  std::vector<DataSource> data;
  int64_t firstStep = 0;
  int64_t traced = 0;
  MemoryUse peak;
  std::chrono::steady_clock::time_point clockStart =
      std::chrono::steady_clock::now();
};

bool Trainer::start() {
  if (!startMesh(m, o.timeoutSeconds, device->isHost() ? nullptr : device,
                 runtime, mesh, deviceMesh, error))
    return false;
  if (mesh) {
    result.rank = mesh::rank(mesh);
    result.ranks = mesh::size(mesh);
  }
  return agreeOnTrainingStart(m, o, mesh, error);
}

bool Trainer::collectiveFailed(loom_status_t s, const std::string &what) {
  if (!s)
    return false;
  error = what + ": " + loom_status_message(s);
  loom_status_free(s);
  return true;
}

bool Trainer::bindParameters() {
  std::vector<std::pair<std::string, std::unique_ptr<InputFile>>> files;
  for (size_t i = 0; i < m.arguments.size(); ++i) {
    const Value &v = m.arguments[i];
    if (v.parameter.empty())
      continue;
    Tensor global;
    if (o.initRandomSeed >= 0 && v.trainable && v.splat.empty()) {
      if (!randomValue(v, uint64_t(o.initRandomSeed), global, error))
        return false;
    } else if (!initialValue(m, v, o.dir, files, global, error)) {
      return false;
    }
    Tensor local = localShard(mesh, global, v);
    DeviceBuffer &buffer = params[i];
    if (!buffer.allocate(*device, v.dtype, v.shape,
                         "parameter '" + v.parameter + "'", error) ||
        !buffer.upload(local, error))
      return false;
  }
  return true;
}

bool Trainer::downloadParameters(std::map<size_t, Tensor> &out) {
  for (auto &[i, buffer] : params)
    if (!buffer.download(out[i], error))
      return false;
  return true;
}

bool Trainer::uploadParameters(std::map<size_t, Tensor> &from) {
  for (auto &[i, t] : from)
    if (!params[i].upload(t, error))
      return false;
  return true;
}

std::vector<CheckpointEntry>
Trainer::checkpointEntries(std::map<size_t, Tensor> &values) {
  std::vector<CheckpointEntry> entries;
  for (auto &[i, t] : values) {
    const Value &v = m.arguments[i];
    entries.push_back({v.parameter, &t, mesh ? &v.sharding : nullptr,
                       v.global, v.trainable});
  }
  return entries;
}

/// With TrainOptions::resume: every parameter (optimizer state and step
/// counter included) from the checkpoint, this rank's block of each.
bool Trainer::resume() {
  if (o.resume.empty())
    return true;
  std::map<size_t, Tensor> values;
  if (!downloadParameters(values))
    return false;
  std::optional<CheckpointState> state = resumeFromCheckpoint(
      o.resume, checkpointEntries(values), mesh, resumeOptions(o), error);
  if (!state || !uploadParameters(values))
    return false;
  firstStep = state->step;
  result.firstStep = firstStep;
  return true;
}

/// Every parameter and optimizer state, the step counter included, as
/// this rank holds it.
bool Trainer::saveCheckpoint(int64_t stepsDone) {
  std::map<size_t, Tensor> values;
  if (!downloadParameters(values))
    return false;
  CheckpointState state{stepsDone, o.seed, o.data, m.entriesPerStep()};
  CheckpointSaveOptions save;
  save.keep = o.checkpointKeep;
  save.dieBeforeManifest = o.faultMode == "save" &&
                           o.faultRank == result.rank &&
                           o.faultStep == stepsDone;
  return loom::program::saveCheckpoint(o.checkpointDir, state,
                                       checkpointEntries(values), mesh, save,
                                       error);
}

bool Trainer::checkResults() {
  if (m.results.empty() || !m.results[0].parameter.empty() ||
      !m.results[0].shape.empty()) {
    error = "@" + m.function + " must return the scalar loss first";
    return false;
  }
  updates.assign(1, 0);
  for (size_t r = 1; r < m.results.size(); ++r) {
    size_t found = m.arguments.size();
    for (size_t i = 0; i < m.arguments.size(); ++i)
      if (m.arguments[i].parameter == m.results[r].parameter)
        found = i;
    if (m.results[r].parameter.empty() || found == m.arguments.size()) {
      error = "result '" + m.results[r].name + "' of @" + m.function +
              " updates no parameter argument (loom.param)";
      return false;
    }
    updates.push_back(found);
  }
  results.resize(m.results.size());
  for (size_t r = 0; r < m.results.size(); ++r)
    if (!results[r].allocate(*device, m.results[r].dtype, m.results[r].shape,
                             "result '" + m.results[r].name + "'", error))
      return false;
  return true;
}

/// Synthetic data needs a range for integer inputs; files must exist and
/// hold enough entries of the right shape.
bool Trainer::openData() {
  for (size_t i = 0; i < m.arguments.size(); ++i) {
    const Value &v = m.arguments[i];
    if (!v.parameter.empty())
      continue;
    DataSource source;
    source.arg = i;
    source.perEntry = v.global;
    source.offset = blockOffset(mesh, v.global, v.sharding);
    source.block = v.shape;
    // Entries of one micro-batch (accumulation; an input every split
    // micro-batch reads whole), or of the whole step's [M, b, ...].
    bool perMicroBatch = m.microBatches > 1 && (!m.splitBatch || v.wholeBatch);
    if (perMicroBatch) {
      source.perEntry.erase(source.perEntry.begin());
      source.offset.erase(source.offset.begin());
      source.block.erase(source.block.begin());
    }
    source.fileShape = m.splitBatch && !v.wholeBatch
                           ? mergeLeading(source.perEntry)
                           : source.perEntry;
    if (data.empty() && !source.fileShape.empty())
      result.samplesPerStep = source.fileShape[0] * m.entriesPerStep();
    if (!isFloat(v.dtype) && source.fileShape.size() >= 2 && v.name != "labels")
      result.tokensPerStep =
          std::max(result.tokensPerStep, source.fileShape[0] *
                                             source.fileShape[1] *
                                             m.entriesPerStep());
    if (o.data != "synthetic") {
      if (!openFile(source, v))
        return false;
    } else if (!isFloat(v.dtype) && v.indexBound <= 0) {
      error = "synthetic data for integer input '" + v.name +
              "' needs its range: give the argument loom.index_bound "
              "(loomc sets it for token ids and labels) or use --data";
      return false;
    }
    if (!inputs[i].allocate(*device, v.dtype, v.shape,
                            "input '" + v.name + "'", error))
      return false;
    data.push_back(std::move(source));
  }
  // Inputs are read entry by entry together: their files must agree.
  for (const DataSource &s : data)
    if (s.file && data.front().file &&
        s.npy.entries != data.front().npy.entries) {
      error = m.arguments[data.front().arg].name + ".npy has " +
              std::to_string(data.front().npy.entries) + " entries but " +
              m.arguments[s.arg].name + ".npy has " +
              std::to_string(s.npy.entries) +
              ": every input's file needs the same number";
      return false;
    }
  return true;
}

/// This rank copies only its block of each entry, in the order of epochs
/// (wrapping, shuffled with --shuffle).
bool Trainer::openFile(DataSource &source, const Value &v) {
  std::string path = o.data + "/" + v.name + ".npy";
  if (!openNpyData(path, v, source.fileShape, source.npy, error))
    return false;
  source.file = true;
  source.order = DataOrder(source.npy.entries, o.shuffle, o.seed);
  int64_t n = source.npy.entries, needed = o.steps * m.entriesPerStep();
  if (needed > n && result.rank == 0 && data.empty()) {
    std::string micro = m.entriesPerStep() > 1
                            ? " of " + std::to_string(m.microBatches) +
                                  " accumulated batches"
                            : "";
    note(o, "data: " + path + " has " + std::to_string(n) + " entries; " +
                std::to_string(o.steps) + " steps" + micro + " read " +
                std::to_string(needed) + ": " +
                std::to_string(source.order.epochs(needed)) + " epochs" +
                (o.shuffle ? ", each shuffled" : " (wrapping around)"));
  }
  return true;
}

/// Micro-batch 0's block of `t` ([M, ...]) copied to every micro-batch:
/// an input the micro-batches read whole.
void Trainer::repeatFirstMicroBatch(Tensor &t) const {
  size_t block = t.bytes.size() / size_t(m.microBatches);
  for (int64_t k = 1; k < m.microBatches; ++k)
    std::memcpy(t.bytes.data() + size_t(k) * block, t.bytes.data(), block);
}

std::vector<Tensor> Trainer::stepData(int64_t s) {
  std::vector<Tensor> values(m.arguments.size());
  for (DataSource &source : data) {
    const Value &v = m.arguments[source.arg];
    if (!source.file) {
      // Every rank draws the whole batch of the step (syntheticStream, as
      // pipeline stages draw it) and keeps its block.
      std::mt19937_64 gen = syntheticStream(o.seed, s, v.name);
      if (m.splitBatch && v.wholeBatch && m.microBatches > 1) {
        // One draw of the input, as the step on the whole batch draws it,
        // read by every micro-batch.
        Value one = v;
        one.global.erase(one.global.begin());
        Tensor drawn = drawSynthetic(one, gen), whole(v.dtype, v.global);
        for (int64_t k = 0; k < m.microBatches; ++k)
          std::memcpy(whole.bytes.data() + size_t(k) * drawn.bytes.size(),
                      drawn.bytes.data(), drawn.bytes.size());
        values[source.arg] = localShard(mesh, whole, v);
        continue;
      }
      values[source.arg] = localShard(mesh, drawSynthetic(v, gen), v);
      continue;
    }
    Tensor step(v.dtype, v.shape), block(source.npy.fileType, source.block),
        converted(v.dtype, source.block);
    std::vector<int64_t> zeros(source.block.size(), 0);
    // One entry per micro-batch (gradient accumulation), or one entry
    // whose rows the micro-batches split (source.perEntry is then the
    // whole step's [M, b, ...]: the entry's rows in micro-batch order).
    for (int64_t k = 0; k < m.entriesPerStep(); ++k) {
      int64_t e = source.order.entry(s * m.entriesPerStep() + k);
      const char *bytes = readNpyEntry(source.npy, e, dataError);
      if (!bytes)
        return {};
      copyBlock(bytes, source.perEntry, source.offset, block.bytes.data(),
                source.block, zeros, source.block,
                loom_dtype_size(source.npy.fileType));
      source.npy.bytesRead += int64_t(block.bytes.size());
      const Tensor *out = &block;
      if (source.npy.fileType != v.dtype) {
        for (int64_t i = 0; i < block.numElements(); ++i)
          setFromDouble(converted, i, block.getAsDouble(i));
        out = &converted;
      }
      std::string why;
      int64_t bad = findBadValue(out->bytes.data(), v.dtype,
                                 out->numElements(), v.indexBound, why);
      if (bad >= 0) {
        dataError = o.data + "/" + v.name + ".npy: entry " +
                    std::to_string(e) + " holds " + why + " (element " +
                    std::to_string(bad) + " of this rank's block of input '" +
                    v.name + "')";
        return {};
      }
      std::memcpy(step.bytes.data() + k * out->bytes.size(),
                  out->bytes.data(), out->bytes.size());
    }
    if (m.splitBatch && v.wholeBatch)
      repeatFirstMicroBatch(step);
    values[source.arg] = std::move(step);
  }
  return values;
}

/// One step on the device: the batch uploaded, the step run on the
/// parameters, the loss read back, the results made the next parameters.
bool Trainer::runStep(std::vector<Tensor> &values, double &loss,
                      MemoryUse &memory) {
  std::vector<const DeviceBuffer *> args(m.arguments.size());
  for (auto &[i, buffer] : inputs) {
    if (!buffer.upload(values[i], error))
      return false;
    args[i] = &buffer;
    memory.inputs += int64_t(buffer.bytes());
  }
  for (auto &[i, buffer] : params) {
    args[i] = &buffer;
    (m.arguments[i].trainable ? memory.parameters : memory.optimizerState) +=
        int64_t(buffer.bytes());
  }
  std::vector<DeviceBuffer *> outs;
  for (DeviceBuffer &r : results) {
    outs.push_back(&r);
    memory.results += int64_t(r.bytes());
  }
  if (o.resetTemporaries)
    o.resetTemporaries();
  // The same buffers every other step (params and results swap): a GPU
  // replays the step where it talks to no other rank.
  std::vector<const void *> buffers;
  for (const DeviceBuffer *b : args)
    buffers.push_back(b ? b->data() : nullptr);
  for (const DeviceBuffer *b : outs)
    buffers.push_back(b->data());
  if (!device->runStep(buffers, result.ranks <= 1,
                       [&] { invoke(entry, args, outs); }, error))
    return false;
  if (o.peakTemporaries)
    memory.temporaries = o.peakTemporaries();
  if (!results[0].scalar(loss, error))
    return false;
  for (size_t r = 1; r < results.size(); ++r)
    std::swap(params[updates[r]], results[r]);
  return true;
}

void Trainer::traceStep(int64_t s, double start, double end) {
  TraceEvent step;
  step.rank = result.rank;
  step.step = s;
  step.start = start;
  step.duration = end - start;
  result.trace.push_back(step);
  // The collectives the step made (the runtime's events since).
  for (int64_t e = runtime ? loom_runtime_trace_count(runtime) : 0; traced < e;
       ++traced) {
    loom_trace_event_t ev;
    loom_runtime_trace_event(runtime, traced, &ev);
    TraceEvent c;
    c.rank = result.rank;
    c.step = s;
    c.op = ev.op;
    c.axes = mesh::axesNamed(mesh, ev.axes);
    c.mask = ev.axes;
    c.bytes = ev.bytes;
    c.start = ev.start_us;
    c.duration = ev.duration_us;
    c.started = ev.started != 0;
    result.trace.push_back(c);
  }
}

bool Trainer::runSteps() {
  // Dynamic loss scaling's scale, when the step has one.
  long scaleArg = -1;
  for (size_t i = 0; i < m.arguments.size(); ++i)
    if (m.arguments[i].parameter == "amp.loss_scale")
      scaleArg = long(i);
  auto scale = [&](double &out) {
    out = 0;
    return scaleArg < 0 || params[scaleArg].scalar(out, error);
  };
  if (o.trace && runtime)
    loom_runtime_trace_start(runtime);
  clockStart = std::chrono::steady_clock::now();
  // (Resumed: synthetic data is keyed by the step, syntheticStream.)
  // The next step's data is prepared on a thread while this step runs.
  std::future<std::vector<Tensor>> next;
  if (firstStep < o.steps)
    next = std::async(std::launch::async,
                      [this, s = firstStep] { return stepData(s); });
  auto begin = std::chrono::steady_clock::now();
  for (int64_t s = firstStep; s < o.steps; ++s) {
    std::vector<Tensor> values = next.get();
    if (values.empty() && !data.empty()) {
      // A value the step must not get (dataError says which).
      error = dataError;
      loom_runtime_abandon(runtime);
      return false;
    }
    values.resize(m.arguments.size());
    if (s + 1 < o.steps)
      next = std::async(std::launch::async,
                        [this, s] { return stepData(s + 1); });
    injectFault(o, result.rank, s);
    double before = 0, after = 0, loss = 0;
    MemoryUse memory;
    double startUs = nowUs();
    auto t0 = std::chrono::steady_clock::now();
    if (!scale(before) || !runStep(values, loss, memory) || !scale(after)) {
      loom_runtime_abandon(runtime);
      return false;
    }
    result.stepSeconds.push_back(std::chrono::duration<double>(
                                     std::chrono::steady_clock::now() - t0)
                                     .count());
    if (o.trace)
      traceStep(s, startUs, nowUs());
    // The first step loads every kernel (and cuBLAS's): per-kernel times
    // count the steps after it.
    if (s == 0 && o.steps > 1)
      device->restartProfile();
    peak.merge(memory);
    result.losses.push_back(loss);
    if (!afterStep(s, loss, before, after))
      return false;
  }
  if (!device->synchronize(error))
    return false;
  result.trainSeconds = std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - begin)
                            .count();
  if (o.trace && runtime)
    loom_runtime_trace_stop(runtime);
  return true;
}

/// Reports step `s` and checks its loss; saves a checkpoint when due.
bool Trainer::afterStep(int64_t s, double loss, double before, double after) {
  bool scaled = false;
  for (const Value &v : m.arguments)
    scaled |= v.parameter == "amp.loss_scale";
  bool skipped = scaled && after < before;
  std::string note;
  if (skipped)
    result.skippedSteps.push_back(s);
  // As loom-run reports dynamic loss scaling.
  if (scaled && after != before) {
    char text[160];
    std::snprintf(text, sizeof(text), "loss scale %g -> %g%s", before, after,
                  skipped ? ": inf/nan gradients, step skipped" : "");
    note = text;
  }
  if (o.onStep && result.rank == 0)
    o.onStep(s, loss, note);
  // A skipped step may have a non-finite loss; the weights did not move.
  if (!std::isfinite(loss) && !skipped) {
    char text[64];
    std::snprintf(text, sizeof(text), "%g", loss);
    error = std::string("the loss is ") + text + " at step " +
            std::to_string(s) + "; stopping";
    return false;
  }
  // As DeepSpeed's min_loss_scale: below 1 the gradients overflow even
  // unscaled, and every further step would be skipped.
  if (skipped && after < 1.0) {
    char text[64];
    std::snprintf(text, sizeof(text), "%g", before);
    error = std::string("the gradients are inf/nan even at loss scale ") +
            text + " (step " + std::to_string(s) +
            "); the model diverged, stopping";
    return false;
  }
  if (!o.checkpointDir.empty() &&
      ((o.checkpointEvery > 0 && (s + 1) % o.checkpointEvery == 0) ||
       s + 1 == o.steps) &&
      !saveCheckpoint(s + 1))
    return false;
  return true;
}

/// Rank 0 learns every rank's memory and data read.
bool Trainer::gatherStatistics() {
  int64_t read = 0, inFiles = 0;
  for (const DataSource &source : data)
    if (source.file) {
      read += source.npy.bytesRead;
      inFiles += source.npy.entryBytesRead;
    }
  result.dataBytesInFiles = inFiles;
  result.dataBytesRead = {read};
  result.memory = {peak};
  if (!mesh)
    return true;
  std::vector<int64_t> all;
  if (!mesh::allGather(mesh,
                       {peak.parameters, peak.optimizerState, peak.inputs,
                        peak.results, peak.temporaries, read},
                       all, error))
    return false;
  result.memory.clear();
  result.dataBytesRead.clear();
  for (size_t r = 0; r + 6 <= all.size(); r += 6) {
    result.memory.push_back(
        MemoryUse{all[r], all[r + 1], all[r + 2], all[r + 3], all[r + 4]});
    result.dataBytesRead.push_back(all[r + 5]);
  }
  return true;
}

/// Trainable parameters (or the other state) as <dir>/<name>.npy: every
/// rank takes part in gathering, rank 0 writes (bf16 widened to f32).
bool Trainer::save(const std::string &dir, bool trainable) {
  if (dir.empty())
    return true;
  // Rank 0 writes; a write that fails (a full disk) does not leave the
  // gathers below: every rank finishes them and then stops with rank 0's
  // error, which rank 0 prints (the others used to wait out --timeout and
  // blame a dead rank 0).
  std::string mine;
  bool ok = result.rank != 0 || beginOutputDir(dir, mine);
  std::vector<std::string> written;
  for (auto &[i, buffer] : params) {
    const Value &v = m.arguments[i];
    if (v.trainable != trainable)
      continue;
    Tensor local, global;
    if (!buffer.download(local, error) ||
        !gatherGlobal(mesh, local, v, global, error))
      return false;
    written.push_back(v.parameter + ".npy");
    if (ok && result.rank == 0)
      ok = writeNpy(dir + "/" + written.back(), global, mine);
  }
  if (ok && result.rank == 0)
    ok = finishOutputDir(dir, written,
                         o.writer + " after " + std::to_string(o.steps) +
                             " steps",
                         mine);
  error = mine;
  return mesh ? mesh::agree(mesh, ok, "write " + dir, error) : ok;
}

} // namespace

bool loom::program::train(const Manifest &manifest, PackedEntry entry,
                          const TrainOptions &options, TrainResult &result,
                          std::string &error) {
  Trainer trainer(manifest, entry, options, result, error);
  bool ok = trainer.run();
  if (!ok && options.onError)
    options.onError(error); // before ~Trainer tears the runtime down
  return ok;
}
