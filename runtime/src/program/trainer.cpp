//===- trainer.cpp - The training loop of a rank program ------------------===//
//
// What loom-run's Trainer (lib/Execution/Training.cpp) does for a JIT-
// compiled step, for a step compiled ahead of time, with the same data
// contract and the same numbers: parameters from params.bin (this rank's
// block of each), data drawn or read as loom-run draws and reads it, the
// updated parameters fed back, the final ones gathered to rank 0.
//
//===----------------------------------------------------------------------===//

#include "loom/kernels.h"
#include "loom/program.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <memory>
#include <random>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace loom::program;

namespace {

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

bool isFloat(loom_dtype_t t) {
  return t == LOOM_DTYPE_F32 || t == LOOM_DTYPE_F64 || t == LOOM_DTYPE_F16 ||
         t == LOOM_DTYPE_BF16;
}

/// Element `i` of `t` set from `v` as loom-run's HostTensor::setFromDouble
/// does (f16/bf16 are refused before any value is set).
void setFromDouble(Tensor &t, int64_t i, double v) {
  char *p = t.bytes.data() + i * loom_dtype_size(t.dtype);
  auto store = [p](auto x) { std::memcpy(p, &x, sizeof(x)); };
  int64_t x = static_cast<int64_t>(v);
  switch (t.dtype) {
  case LOOM_DTYPE_F32:
    return store(static_cast<float>(v));
  case LOOM_DTYPE_F64:
    return store(v);
  case LOOM_DTYPE_BOOL:
    return store(static_cast<uint8_t>(v != 0));
  case LOOM_DTYPE_I8:
  case LOOM_DTYPE_U8:
    return store(static_cast<int8_t>(x));
  case LOOM_DTYPE_I16:
  case LOOM_DTYPE_U16:
    return store(static_cast<int16_t>(x));
  case LOOM_DTYPE_I32:
  case LOOM_DTYPE_U32:
    return store(static_cast<int32_t>(x));
  default:
    return store(x);
  }
}

/// A file mapped read-only.
struct Mapping {
  const char *data = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (data)
      munmap(const_cast<char *>(data), size);
  }
  bool open(const std::string &path, std::string &error) {
    int fd = ::open(path.c_str(), O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
      error = "cannot read " + path + ": " + std::strerror(errno);
      if (fd >= 0)
        ::close(fd);
      return false;
    }
    size = static_cast<size_t>(st.st_size);
    void *p = size ? mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0)
                   : nullptr;
    ::close(fd);
    if (p == MAP_FAILED) {
      error = "cannot map " + path + ": " + std::strerror(errno);
      return false;
    }
    data = static_cast<const char *>(p);
    return true;
  }
};

/// One data argument's source: drawn, or read from a mapped .npy file.
struct DataSource {
  size_t arg;
  std::vector<int64_t> perEntry, offset, block;
  std::unique_ptr<Mapping> file;
  const char *base = nullptr;
  loom_dtype_t fileType = LOOM_DTYPE_F32;
  int64_t entries = 0, entryBytes = 0;
  DataOrder order;
};

class Trainer {
public:
  Trainer(const Manifest &m, PackedEntry entry, const TrainOptions &o,
          std::string &error)
      : m(m), entry(entry), o(o), error(error) {}
  ~Trainer() {
    loom_rt_set_mesh(nullptr);
    loom_mesh_destroy(mesh);
    loom_runtime_destroy(runtime);
  }

  bool run(TrainStats &stats) {
    bool ok = start();
    stats.rank = rank;
    ok = ok && bindParameters() && checkResults() && openData() && ready();
    auto begin = std::chrono::steady_clock::now();
    ok = ok && runSteps();
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
  Tensor localShard(const Tensor &global, const Value &v) const;
  bool gatherGlobal(const Tensor &local, const Value &v, Tensor &global);
  bool bindParameters();
  bool checkResults();
  bool openData();
  bool openFile(DataSource &source, const Value &v);
  std::vector<Tensor> stepData(int64_t s, std::mt19937_64 &gen);
  bool runSteps();
  bool save(const std::string &dir, bool trainable);

  const Manifest &m;
  PackedEntry entry;
  const TrainOptions &o;
  std::string &error;
  loom_runtime_t runtime = nullptr;
  loom_mesh_t mesh = nullptr;
  int rank = 0;
  /// Parameter arguments' values (this rank's blocks), by argument index.
  std::map<size_t, Tensor> params;
  /// The argument each result updates.
  std::vector<size_t> updates;
  std::vector<DataSource> data;
};

bool Trainer::start() {
  if (m.axisNames.empty())
    return true;
  loom_runtime_options_t opts;
  loom_runtime_options_init(&opts);
  opts.timeout_seconds = o.timeoutSeconds;
  if (loom_status_t s = loom_runtime_create(&opts, &runtime)) {
    error = std::string("cannot start the runtime: ") + loom_status_message(s);
    loom_status_free(s);
    return false;
  }
  std::vector<const char *> names;
  std::string spec;
  for (size_t a = 0; a < m.axisNames.size(); ++a) {
    names.push_back(m.axisNames[a].c_str());
    spec += (a ? "," : "") + m.axisNames[a] + "=" +
            std::to_string(m.axisSizes[a]);
  }
  if (loom_status_t s = loom_mesh_create(
          runtime, static_cast<int32_t>(names.size()), m.axisSizes.data(),
          names.data(), &mesh)) {
    error = "mesh " + spec + ": " + loom_status_message(s) +
            " (launch as many ranks as the mesh has devices: mpirun -np " +
            std::to_string(numElements(m.axisSizes)) + " ...)";
    loom_status_free(s);
    return false;
  }
  loom_rt_set_mesh(mesh);
  rank = loom_runtime_rank(runtime);
  return true;
}

bool Trainer::collectiveFailed(loom_status_t s, const std::string &what) {
  if (!s)
    return false;
  error = what + ": " + loom_status_message(s);
  loom_status_free(s);
  return true;
}

Tensor Trainer::localShard(const Tensor &global, const Value &v) const {
  if (!mesh)
    return global;
  Tensor out(global.dtype, v.shape);
  copyBlock(global.bytes.data(), global.shape,
            blockOffset(mesh, global.shape, v.sharding), out.bytes.data(),
            v.shape, std::vector<int64_t>(v.shape.size(), 0), v.shape,
            loom_dtype_size(global.dtype));
  return out;
}

/// The whole tensor from every rank's block (a collective).
bool Trainer::gatherGlobal(const Tensor &local, const Value &v,
                           Tensor &global) {
  if (!mesh || !v.sharding.splits()) {
    global = local;
    return true;
  }
  Tensor value = local;
  global = Tensor(value.dtype, v.global);
  return !collectiveFailed(
      loom::program::gatherGlobal(mesh, v.sharding, value.dtype, v.shape, v.global,
                            value.bytes.data(), global.bytes.data()),
      "gathering " + v.name);
}

bool Trainer::bindParameters() {
  std::map<std::string, std::unique_ptr<Mapping>> files;
  for (size_t i = 0; i < m.arguments.size(); ++i) {
    const Value &v = m.arguments[i];
    if (v.parameter.empty())
      continue;
    Tensor global(v.dtype, v.global);
    size_t bytes = global.bytes.size(), width = loom_dtype_size(v.dtype);
    if (!v.splat.empty()) {
      if (v.splat.size() != width) {
        error = "parameter '" + v.parameter + "': its splat value has " +
                std::to_string(v.splat.size()) + " bytes, not " +
                std::to_string(width);
        return false;
      }
      for (size_t at = 0; at < bytes; at += width)
        std::memcpy(global.bytes.data() + at, v.splat.data(), width);
    } else if (!v.initFile.empty()) {
      std::unique_ptr<Mapping> &file = files[v.initFile];
      std::string path = o.dir + "/" + v.initFile;
      if (!file) {
        file = std::make_unique<Mapping>();
        if (!file->open(path, error))
          return false;
      }
      if (v.initOffset < 0 || size_t(v.initOffset) + bytes > file->size) {
        error = path + " is too short for parameter '" + v.parameter +
                "' (" + std::to_string(bytes) + " bytes at offset " +
                std::to_string(v.initOffset) + ")";
        return false;
      }
      std::memcpy(global.bytes.data(), file->data + v.initOffset, bytes);
    } else {
      error = "parameter '" + v.parameter + "' has no initial value";
      return false;
    }
    params[i] = localShard(global, v);
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
    if (v.dtype == LOOM_DTYPE_F16 || v.dtype == LOOM_DTYPE_BF16) {
      error = "input '" + v.name + "' is " + loom_dtype_name(v.dtype) +
              ": executables read f32/f64 and integer inputs only (loom-run "
              "ARTIFACT reads it)";
      return false;
    }
    if (o.data != "synthetic") {
      if (!openFile(source, v))
        return false;
    } else if (!isFloat(v.dtype) && v.indexBound <= 0) {
      error = "synthetic data for integer input '" + v.name +
              "' needs its range (loom.index_bound); use --data";
      return false;
    }
    data.push_back(std::move(source));
  }
  for (const DataSource &s : data)
    if (s.file && s.entries != data.front().entries) {
      error = "the inputs' files hold different numbers of entries (" +
              std::to_string(data.front().entries) + " and " +
              std::to_string(s.entries) + "): every input's file needs the same";
      return false;
    }
  return true;
}

bool Trainer::openFile(DataSource &source, const Value &v) {
  std::string path = o.data + "/" + v.name + ".npy";
  source.file = std::make_unique<Mapping>();
  if (!source.file->open(path, error)) {
    error = "no data for input '" + v.name + "': " + error +
            " (the data directory needs one .npy per input, shaped [entries, " +
            shapeText(source.perEntry) + "])";
    return false;
  }
  NpyInfo info;
  if (!parseNpyHeader(source.file->data, source.file->size, path, info, error))
    return false;
  if (!dtypeOfNpyDescr(info.descr, source.fileType)) {
    error = path + ": unsupported .npy dtype '" + info.descr + "'";
    return false;
  }
  std::vector<int64_t> rest(info.shape.begin() + (info.shape.empty() ? 0 : 1),
                            info.shape.end());
  if (info.shape.empty() || info.shape[0] < 1 || rest != source.perEntry) {
    error = path + " has shape [" + shapeText(info.shape) + "] but input '" +
            v.name + "' needs [entries x " + shapeText(source.perEntry) + "]";
    return false;
  }
  bool fileFloat = isFloat(source.fileType), wantFloat = isFloat(v.dtype);
  if (source.fileType != v.dtype &&
      (fileFloat != wantFloat || source.fileType == LOOM_DTYPE_BOOL ||
       v.dtype == LOOM_DTYPE_BOOL)) {
    error = path + " holds " + loom_dtype_name(source.fileType) +
            " values but the model expects " + loom_dtype_name(v.dtype);
    return false;
  }
  source.entries = info.shape[0];
  source.entryBytes =
      numElements(source.perEntry) * int64_t(loom_dtype_size(source.fileType));
  source.base = source.file->data + info.dataOffset;
  if (info.dataOffset + uint64_t(source.entries * source.entryBytes) >
      source.file->size) {
    error = path + " is truncated: its header says [" + shapeText(info.shape) +
            "]";
    return false;
  }
  source.order = DataOrder(source.entries, o.shuffle, o.seed);
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
      values[source.arg] = localShard(global, v);
      continue;
    }
    Tensor step(v.dtype, v.shape), block(source.fileType, source.block),
        converted(v.dtype, source.block);
    std::vector<int64_t> zeros(source.block.size(), 0);
    for (int64_t k = 0; k < m.microBatches; ++k) {
      int64_t e = source.order.entry(s * m.microBatches + k);
      copyBlock(source.base + e * source.entryBytes, source.perEntry,
                source.offset, block.bytes.data(), source.block, zeros,
                source.block, loom_dtype_size(source.fileType));
      const Tensor *out = &block;
      if (source.fileType != v.dtype) {
        for (int64_t i = 0; i < block.numElements(); ++i)
          setFromDouble(converted, i, block.getAsDouble(i));
        out = &converted;
      }
      std::memcpy(step.bytes.data() + k * out->bytes.size(),
                  out->bytes.data(), out->bytes.size());
    }
    values[source.arg] = std::move(step);
  }
  return values;
}

/// A memref descriptor {allocated, aligned, offset, sizes, strides}.
std::vector<int64_t> descriptorFor(Tensor &t) {
  size_t rank = t.shape.size();
  std::vector<int64_t> d(3 + 2 * rank);
  d[0] = d[1] = reinterpret_cast<int64_t>(t.bytes.data());
  int64_t stride = 1;
  for (int64_t i = int64_t(rank) - 1; i >= 0; --i) {
    d[3 + i] = t.shape[i];
    d[3 + rank + i] = stride;
    stride *= t.shape[i];
  }
  return d;
}

bool Trainer::runSteps() {
  std::mt19937_64 gen(o.seed);
  // Dynamic loss scaling's scale, when the step has one.
  long scaleArg = -1;
  for (size_t i = 0; i < m.arguments.size(); ++i)
    if (m.arguments[i].parameter == "amp.loss_scale")
      scaleArg = long(i);
  auto scale = [&]() { return scaleArg < 0 ? 0.0 : params[scaleArg].getAsDouble(0); };
  std::vector<Tensor> outs(m.results.size());
  for (int64_t s = 0; s < o.steps; ++s) {
    std::vector<Tensor> values = stepData(s, gen);
    for (auto &[i, t] : params)
      values[i] = t;
    for (size_t r = 0; r < m.results.size(); ++r)
      outs[r] = Tensor(m.results[r].dtype, m.results[r].shape);
    std::vector<std::vector<int64_t>> descriptors;
    for (Tensor &t : values)
      descriptors.push_back(descriptorFor(t));
    for (Tensor &t : outs)
      descriptors.push_back(descriptorFor(t));
    std::vector<void *> pointers, packed;
    for (auto &d : descriptors)
      pointers.push_back(d.data());
    for (void *&p : pointers)
      packed.push_back(&p);
    double before = scale();
    entry(packed.data());
    double loss = outs[0].getAsDouble(0);
    for (size_t r = 1; r < outs.size(); ++r)
      params[updates[r]] = std::move(outs[r]);
    double after = scale();
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
  return true;
}

/// Trainable parameters (or the other state) as <dir>/<name>.npy: every
/// rank takes part in gathering, rank 0 writes (bf16 widened to f32, as
/// loom-run writes it).
bool Trainer::save(const std::string &dir, bool trainable) {
  if (dir.empty())
    return true;
  if (rank == 0 && ::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST) {
    error = "cannot create " + dir + ": " + std::strerror(errno);
    return false;
  }
  for (auto &[i, local] : params) {
    const Value &v = m.arguments[i];
    if (v.trainable != trainable)
      continue;
    Tensor global;
    if (!gatherGlobal(local, v, global))
      return false;
    if (rank != 0)
      continue;
    if (global.dtype == LOOM_DTYPE_BF16) {
      Tensor wide(LOOM_DTYPE_F32, global.shape);
      for (int64_t e = 0; e < global.numElements(); ++e)
        setFromDouble(wide, e, global.getAsDouble(e));
      global = std::move(wide);
    }
    std::string path = dir + "/" + v.parameter + ".npy";
    std::string header = npyHeader(npyDescr(global.dtype), global.shape);
    FILE *f = std::fopen(path.c_str(), "wb");
    bool ok = f && std::fwrite(header.data(), 1, header.size(), f) ==
                       header.size() &&
              std::fwrite(global.bytes.data(), 1, global.bytes.size(), f) ==
                  global.bytes.size();
    if (f)
      ok = std::fclose(f) == 0 && ok;
    if (!ok) {
      error = "cannot write " + path + ": " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

} // namespace

bool loom::program::train(const Manifest &manifest, PackedEntry entry,
                          const TrainOptions &options, TrainStats &stats,
                          std::string &error) {
  Trainer trainer(manifest, entry, options, error);
  return trainer.run(stats);
}
