//===- trainer.cpp - The training loop of a rank program ------------------===//
//
// What loom-run's Trainer (lib/Execution/Training.cpp) does for a JIT-
// compiled step, for a step compiled ahead of time, with the same data
// contract and the same numbers: parameters from params.bin (this rank's
// block of each), data drawn or read as loom-run draws and reads it, the
// updated parameters fed back, the final ones gathered to rank 0.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include "loom/kernels.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <sys/stat.h>
#include <unistd.h>

using namespace loom::program;
using namespace loom::program::detail;

namespace {

/// One data argument's source: drawn, or read from a .npy file.
struct DataSource {
  size_t arg;
  std::vector<int64_t> perEntry, offset, block;
  NpyData npy;
  bool file = false;
  DataOrder order;
};

class Trainer {
public:
  Trainer(const Manifest &m, PackedEntry entry, const TrainOptions &o,
          std::string &error)
      : m(m), entry(entry), o(o), error(error) {
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

  bool run(TrainStats &stats) {
    bool ok = start();
    stats.rank = rank;
    ok = ok && bindParameters() && checkResults() && openData() && ready();
    auto begin = std::chrono::steady_clock::now();
    ok = ok && runSteps(stats);
    stats.trainSeconds = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - begin)
                             .count();
    return ok && save(o.paramsOut, true) && save(o.stateOut, false);
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
        loom_barrier(mesh, all.data(), int32_t(all.size())), "waiting for the ranks");
  }
  bool bindParameters();
  bool checkResults();
  bool openData();
  bool openFile(DataSource &source, const Value &v);
  std::vector<Tensor> stepData(int64_t s, std::mt19937_64 &gen);
  bool runSteps(TrainStats &stats);
  bool runStep(std::vector<Tensor> &values, double &loss);
  bool save(const std::string &dir, bool trainable);

  const Manifest &m;
  PackedEntry entry;
  const TrainOptions &o;
  std::string &error;
  std::unique_ptr<Device> host;
  Device *device = nullptr;
  loom_runtime_t runtime = nullptr;
  loom_mesh_t mesh = nullptr, deviceMesh = nullptr;
  int rank = 0;
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
};

bool Trainer::start() {
  if (!startMesh(m, o.timeoutSeconds, device->isHost() ? nullptr : device,
                 runtime, mesh, deviceMesh, error))
    return false;
  if (mesh)
    rank = loom_runtime_rank(runtime);
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
    } else if (!initialValue(v, o.dir, files, global, error)) {
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

bool Trainer::checkResults() {
  if (m.results.empty() || !m.results[0].parameter.empty() ||
      !m.results[0].shape.empty()) {
    error = "the step must return the scalar loss first";
    return false;
  }
  updates.assign(1, 0);
  for (size_t r = 1; r < m.results.size(); ++r) {
    size_t found = m.arguments.size();
    for (size_t i = 0; i < m.arguments.size(); ++i)
      if (m.arguments[i].parameter == m.results[r].parameter)
        found = i;
    if (m.results[r].parameter.empty() || found == m.arguments.size()) {
      error = "result '" + m.results[r].name + "' updates no parameter";
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
    if (m.microBatches > 1) {
      source.perEntry.erase(source.perEntry.begin());
      source.offset.erase(source.offset.begin());
      source.block.erase(source.block.begin());
    }
    if (o.data != "synthetic") {
      if (!openFile(source, v))
        return false;
    } else if (!isFloat(v.dtype) && v.indexBound <= 0) {
      error = "synthetic data for integer input '" + v.name +
              "' needs its range (loom.index_bound); use --data";
      return false;
    }
    if (!inputs[i].allocate(*device, v.dtype, v.shape,
                            "input '" + v.name + "'", error))
      return false;
    data.push_back(std::move(source));
  }
  for (const DataSource &s : data)
    if (s.file && s.npy.entries != data.front().npy.entries) {
      error = "the inputs' files hold different numbers of entries (" +
              std::to_string(data.front().npy.entries) + " and " +
              std::to_string(s.npy.entries) +
              "): every input's file needs the same";
      return false;
    }
  return true;
}

bool Trainer::openFile(DataSource &source, const Value &v) {
  if (!openNpyData(o.data + "/" + v.name + ".npy", v, source.perEntry,
                   source.npy, error))
    return false;
  source.file = true;
  source.order = DataOrder(source.npy.entries, o.shuffle, o.seed);
  return true;
}

/// Step `s`'s data (this rank's blocks): synthetic data is drawn whole by
/// every rank, in argument order, as loom-run draws it.
std::vector<Tensor> Trainer::stepData(int64_t s, std::mt19937_64 &gen) {
  std::vector<Tensor> values(m.arguments.size());
  for (DataSource &source : data) {
    const Value &v = m.arguments[source.arg];
    if (!source.file) {
      Tensor global(v.dtype, v.global);
      std::uniform_real_distribution<double> real(-1.0, 1.0);
      std::uniform_int_distribution<int64_t> ints(
          0, std::max<int64_t>(v.indexBound, 1) - 1);
      bool f = isFloat(v.dtype);
      for (int64_t i = 0; i < global.numElements(); ++i)
        setFromDouble(global, i, f ? real(gen) : double(ints(gen)));
      values[source.arg] = localShard(mesh, global, v);
      continue;
    }
    Tensor step(v.dtype, v.shape), block(source.npy.fileType, source.block),
        converted(v.dtype, source.block);
    std::vector<int64_t> zeros(source.block.size(), 0);
    for (int64_t k = 0; k < m.microBatches; ++k) {
      int64_t e = source.order.entry(s * m.microBatches + k);
      const char *bytes = readNpyEntry(source.npy, e, error);
      if (!bytes)
        return {};
      copyBlock(bytes, source.perEntry,
                source.offset, block.bytes.data(), source.block, zeros,
                source.block, loom_dtype_size(source.npy.fileType));
      const Tensor *out = &block;
      if (source.npy.fileType != v.dtype) {
        for (int64_t i = 0; i < block.numElements(); ++i)
          setFromDouble(converted, i, block.getAsDouble(i));
        out = &converted;
      }
      std::string why;
      int64_t bad = findBadValue(out->bytes.data(), v.dtype, out->numElements(),
                                 v.indexBound, why);
      if (bad >= 0) {
        error = o.data + "/" + v.name + ".npy: entry " + std::to_string(e) +
                " holds " + why + " (element " + std::to_string(bad) +
                " of this rank's block of input '" + v.name + "')";
        return {};
      }
      std::memcpy(step.bytes.data() + k * out->bytes.size(),
                  out->bytes.data(), out->bytes.size());
    }
    values[source.arg] = std::move(step);
  }
  return values;
}

/// One step on the device: this step's data uploaded, the step run on the
/// parameters, the loss read back, the results made the next parameters.
bool Trainer::runStep(std::vector<Tensor> &values, double &loss) {
  std::vector<const DeviceBuffer *> args(m.arguments.size());
  for (auto &[i, buffer] : inputs) {
    if (!buffer.upload(values[i], error))
      return false;
    args[i] = &buffer;
  }
  for (auto &[i, buffer] : params)
    args[i] = &buffer;
  std::vector<DeviceBuffer *> outs;
  for (DeviceBuffer &r : results)
    outs.push_back(&r);
  invoke(entry, args, outs);
  if (!results[0].scalar(loss, error))
    return false;
  for (size_t r = 1; r < results.size(); ++r)
    std::swap(params[updates[r]], results[r]);
  return true;
}

bool Trainer::runSteps(TrainStats &stats) {
  std::mt19937_64 gen(o.seed);
  // Dynamic loss scaling's scale, when the step has one.
  long scaleArg = -1;
  for (size_t i = 0; i < m.arguments.size(); ++i)
    if (m.arguments[i].parameter == "amp.loss_scale")
      scaleArg = long(i);
  auto scale = [&](double &out) {
    out = 0;
    return scaleArg < 0 || params[scaleArg].scalar(out, error);
  };
  for (int64_t s = 0; s < o.steps; ++s) {
    std::vector<Tensor> values = stepData(s, gen);
    if (values.empty()) { // a value the step must not get (error says which)
      loom_runtime_abandon(runtime);
      return false;
    }
    double before = 0, after = 0, loss = 0;
    auto begin = std::chrono::steady_clock::now();
    if (!scale(before) || !runStep(values, loss) || !scale(after)) {
      loom_runtime_abandon(runtime);
      return false;
    }
    stats.stepSeconds.push_back(std::chrono::duration<double>(
                                    std::chrono::steady_clock::now() - begin)
                                    .count());
    bool skipped = scaleArg >= 0 && after < before;
    // As loom-run reports dynamic loss scaling.
    std::string note;
    if (scaleArg >= 0 && after != before) {
      char text[160];
      std::snprintf(text, sizeof(text), "loss scale %g -> %g%s", before, after,
                    skipped ? ": inf/nan gradients, step skipped" : "");
      note = text;
    }
    if (o.onStep && rank == 0)
      o.onStep(s, loss, note);
    if (!std::isfinite(loss) && !skipped) {
      char text[64];
      std::snprintf(text, sizeof(text), "%g", loss);
      error = std::string("the loss is ") + text + " at step " +
              std::to_string(s) + "; stopping";
      return false;
    }
    // As DeepSpeed's min_loss_scale (and loom-run): below 1 the gradients
    // overflow even unscaled.
    if (skipped && after < 1.0) {
      char text[64];
      std::snprintf(text, sizeof(text), "%g", before);
      error = std::string("the gradients are inf/nan even at loss scale ") +
              text + " (step " + std::to_string(s) +
              "); the model diverged, stopping";
      return false;
    }
  }
  return device->synchronize(error);
}

/// Trainable parameters (or the other state) as <dir>/<name>.npy: every
/// rank takes part in gathering, rank 0 writes (bf16 widened to f32, as
/// loom-run writes it).
bool Trainer::save(const std::string &dir, bool trainable) {
  if (dir.empty())
    return true;
  if (rank == 0 && !beginOutputDir(dir, error))
    return false;
  std::vector<std::string> written;
  for (auto &[i, buffer] : params) {
    const Value &v = m.arguments[i];
    if (v.trainable != trainable)
      continue;
    Tensor local, global;
    if (!buffer.download(local, error))
      return false;
    if (!gatherGlobal(mesh, local, v, global, error))
      return false;
    written.push_back(v.parameter + ".npy");
    if (rank == 0 && !writeNpy(dir + "/" + written.back(), global, error))
      return false;
  }
  return rank != 0 ||
         finishOutputDir(dir, written,
                         "a rank program after " + std::to_string(o.steps) +
                             " steps",
                         error);
}

} // namespace

bool loom::program::train(const Manifest &manifest, PackedEntry entry,
                          const TrainOptions &options, TrainStats &stats,
                          std::string &error) {
  Trainer trainer(manifest, entry, options, error);
  bool ok = trainer.run(stats);
  if (!ok && options.onError)
    options.onError(error); // before ~Trainer tears the runtime down
  return ok;
}
