//===- common.cpp - What the rank programs' trainers share ----------------===//

#include "internal.h"

#include "../train/mesh.h"

#include "loom/kernels.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <cmath>
#include <random>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <set>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace loom::program::detail {

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

/// `v` rounded once, to nearest even, to a binary format of `expBits`
/// exponent and `mantBits` mantissa bits (f16: 5, 10; bf16: 8, 7): as
/// LLVM's APFloat converts a double (loom-run's HostTensor), not through
/// float (which could round twice).
uint16_t roundToHalfFormat(double v, int expBits, int mantBits) {
  uint16_t sign = std::signbit(v) ? uint16_t(1u << (expBits + mantBits)) : 0;
  uint16_t expMask = uint16_t(((1u << expBits) - 1) << mantBits);
  if (std::isnan(v))
    return uint16_t(expMask | (1u << (mantBits - 1)));
  double a = std::fabs(v);
  int bias = (1 << (expBits - 1)) - 1, emin = 1 - bias, emax = bias;
  if (std::isinf(a))
    return uint16_t(sign | expMask);
  if (a == 0)
    return sign;
  int e;
  std::frexp(a, &e); // a = m 2^e, m in [0.5, 1): exponent e - 1
  int exponent = std::max(e - 1, emin);
  double quantum = std::ldexp(1.0, exponent - mantBits);
  double r = std::nearbyint(a / quantum) * quantum; // ties to even
  if (r >= std::ldexp(1.0, emax + 1))
    return uint16_t(sign | expMask);
  if (r < std::ldexp(1.0, emin)) // subnormal (or rounded to zero)
    return uint16_t(sign | uint16_t(r / std::ldexp(1.0, emin - mantBits)));
  std::frexp(r, &e);
  uint32_t biased = uint32_t(e - 1 + bias);
  uint32_t mant = uint32_t(r / std::ldexp(1.0, e - 1 - mantBits)) -
                  (1u << mantBits);
  return uint16_t(sign | (biased << mantBits) | mant);
}

void setFromDouble(Tensor &t, int64_t i, double v) {
  char *p = t.bytes.data() + i * loom_dtype_size(t.dtype);
  auto store = [p](auto x) { std::memcpy(p, &x, sizeof(x)); };
  int64_t x = static_cast<int64_t>(v);
  switch (t.dtype) {
  case LOOM_DTYPE_F32:
    return store(static_cast<float>(v));
  case LOOM_DTYPE_F64:
    return store(v);
  case LOOM_DTYPE_F16:
    return store(roundToHalfFormat(v, 5, 10));
  case LOOM_DTYPE_BF16:
    return store(roundToHalfFormat(v, 8, 7));
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

std::vector<int64_t> descriptorFor(void *data,
                                   const std::vector<int64_t> &shape) {
  size_t rank = shape.size();
  std::vector<int64_t> d(3 + 2 * rank);
  d[0] = d[1] = reinterpret_cast<int64_t>(data);
  int64_t stride = 1;
  for (int64_t i = int64_t(rank) - 1; i >= 0; --i) {
    d[3 + i] = shape[i];
    d[3 + rank + i] = stride;
    stride *= shape[i];
  }
  return d;
}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    reset();
    device = other.device;
    ptr = other.ptr;
    size = other.size;
    type = other.type;
    dims = std::move(other.dims);
    other.device = nullptr;
    other.ptr = nullptr;
    other.size = 0;
  }
  return *this;
}

void DeviceBuffer::reset() {
  if (device && ptr)
    device->release(ptr);
  device = nullptr;
  ptr = nullptr;
  size = 0;
}

bool DeviceBuffer::allocate(Device &d, loom_dtype_t dtype,
                            const std::vector<int64_t> &shape,
                            const std::string &what, std::string &error) {
  reset();
  size_t n = size_t(numElements(shape)) * loom_dtype_size(dtype);
  if (!d.allocate(n, &ptr, error)) {
    error = what + " (" + shapeText(shape) + " " + loom_dtype_name(dtype) +
            ") on " + d.name() + ": " + error;
    return false;
  }
  device = &d;
  size = n;
  type = dtype;
  dims = shape;
  return true;
}

bool DeviceBuffer::upload(const Tensor &t, std::string &error) {
  if (t.bytes.size() != size) {
    error = "uploading " + std::to_string(t.bytes.size()) + " bytes into a "
            "buffer of " + std::to_string(size);
    return false;
  }
  return device->upload(ptr, t.bytes.data(), size, error);
}

bool DeviceBuffer::download(Tensor &t, std::string &error) const {
  t = Tensor(type, dims);
  return device->download(t.bytes.data(), ptr, size, error);
}

bool DeviceBuffer::scalar(double &out, std::string &error) const {
  char bytes[8] = {0};
  size_t width = loom_dtype_size(type);
  if (!size) {
    error = "reading a scalar of an empty buffer";
    return false;
  }
  if (!device->download(bytes, ptr, width, error))
    return false;
  out = elementAsDouble(bytes, type);
  return true;
}

/// Calls `entry` with one memref descriptor per argument and result.
static void callPacked(PackedEntry entry,
                       std::vector<std::vector<int64_t>> &descriptors) {
  std::vector<void *> pointers, packed;
  for (auto &d : descriptors)
    pointers.push_back(d.data());
  for (void *&p : pointers)
    packed.push_back(&p);
  entry(packed.data());
}

void invoke(PackedEntry entry, const std::vector<const DeviceBuffer *> &args,
            const std::vector<DeviceBuffer *> &results) {
  std::vector<std::vector<int64_t>> descriptors;
  for (const DeviceBuffer *b : args)
    descriptors.push_back(descriptorFor(b->data(), b->shape()));
  for (DeviceBuffer *b : results)
    descriptors.push_back(descriptorFor(b->data(), b->shape()));
  callPacked(entry, descriptors);
}

void invoke(PackedEntry entry, std::vector<Tensor *> args,
            std::vector<Tensor> &results) {
  std::vector<std::vector<int64_t>> descriptors;
  for (Tensor *t : args)
    descriptors.push_back(descriptorFor(*t));
  for (Tensor &t : results)
    descriptors.push_back(descriptorFor(t));
  callPacked(entry, descriptors);
}

Tensor localShard(loom_mesh_t mesh, const Tensor &global, const Value &v) {
  if (!mesh)
    return global;
  Tensor out(global.dtype, v.shape);
  copyBlock(global.bytes.data(), global.shape,
            blockOffset(mesh, global.shape, v.sharding), out.bytes.data(),
            v.shape, std::vector<int64_t>(v.shape.size(), 0), v.shape,
            loom_dtype_size(global.dtype));
  return out;
}

bool gatherGlobal(loom_mesh_t mesh, const Tensor &local, const Value &v,
                  Tensor &global, std::string &error) {
  if (!mesh || !v.sharding.splits()) {
    global = local;
    return true;
  }
  Tensor value = local;
  global = Tensor(value.dtype, v.global);
  if (loom_status_t s = loom::program::gatherGlobal(
          mesh, v.sharding, value.dtype, v.shape, v.global,
          value.bytes.data(), global.bytes.data())) {
    error = "gathering " + v.name + ": " + loom_status_message(s);
    loom_status_free(s);
    return false;
  }
  return true;
}

void note(const TrainOptions &o, const std::string &line) {
  if (o.onNote) {
    o.onNote(line);
    return;
  }
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

bool initialValue(const Manifest &m, const Value &v, const std::string &dir,
                  std::vector<std::pair<std::string, std::unique_ptr<InputFile>>>
                      &files,
                  Tensor &global, std::string &error) {
  global = Tensor(v.dtype, v.global);
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
    return true;
  }
  if (v.initFile.empty()) {
    error = "parameter '" + v.parameter + "' has no initial value";
    return false;
  }
  auto held = m.inMemoryFiles.find(v.initFile);
  if (held != m.inMemoryFiles.end()) {
    if (v.initOffset < 0 || uint64_t(v.initOffset) > held->second.size() ||
        bytes > held->second.size() - uint64_t(v.initOffset)) {
      error = "parameter '" + v.parameter + "': its initial value is out of "
              "range of " + v.initFile;
      return false;
    }
    std::memcpy(global.bytes.data(), held->second.data() + v.initOffset, bytes);
    return true;
  }
  std::string path = dir + "/" + v.initFile;
  InputFile *file = nullptr;
  for (auto &[name, mapping] : files)
    if (name == v.initFile)
      file = mapping.get();
  if (!file) {
    files.emplace_back(v.initFile, std::make_unique<InputFile>());
    file = files.back().second.get();
    if (!file->open(path, error))
      return false;
  }
  if (v.initOffset < 0 || uint64_t(v.initOffset) > file->size() ||
      bytes > file->size() - uint64_t(v.initOffset)) {
    error = path + " is too short for parameter '" + v.parameter + "' (" +
            std::to_string(bytes) + " bytes at offset " +
            std::to_string(v.initOffset) + ")";
    return false;
  }
  return file->read(uint64_t(v.initOffset), bytes, global.bytes.data(), error);
}

Tensor drawSynthetic(const Value &v, std::mt19937_64 &gen) {
  Tensor global(v.dtype, v.global);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int64_t> ints(
      0, std::max<int64_t>(v.indexBound, 1) - 1);
  int64_t n = global.numElements();
  // Stored by type, not through setFromDouble's per-element switch: each
  // rank draws the whole tensor every step (on the data thread, which
  // shares the cores with the step where ranks fill them); same values.
  if (v.dtype == LOOM_DTYPE_F32) {
    float *p = reinterpret_cast<float *>(global.bytes.data());
    for (int64_t i = 0; i < n; ++i)
      p[i] = static_cast<float>(real(gen));
    return global;
  }
  if (v.dtype == LOOM_DTYPE_I64) {
    int64_t *p = reinterpret_cast<int64_t *>(global.bytes.data());
    for (int64_t i = 0; i < n; ++i)
      p[i] = static_cast<int64_t>(double(ints(gen)));
    return global;
  }
  bool f = isFloat(v.dtype);
  for (int64_t i = 0; i < n; ++i)
    setFromDouble(global, i, f ? real(gen) : double(ints(gen)));
  return global;
}

uint64_t fnv1a(const std::string &s) {
  uint64_t h = 1469598103934665603ull;
  for (char c : s)
    h = (h ^ uint8_t(c)) * 1099511628211ull;
  return h;
}

std::mt19937_64 syntheticStream(int64_t seed, int64_t step,
                                const std::string &name) {
  // seed_seq keeps 32 bits of each value: 64-bit keys go in halves.
  uint64_t h = fnv1a(name), a = uint64_t(seed), b = uint64_t(step);
  std::seed_seq seq{uint32_t(a), uint32_t(a >> 32), uint32_t(b),
                    uint32_t(b >> 32), uint32_t(h), uint32_t(h >> 32)};
  return std::mt19937_64(seq);
}

ResumeOptions resumeOptions(const TrainOptions &o) {
  ResumeOptions ro;
  ro.steps = o.steps;
  ro.seed = o.seed;
  ro.data = o.data;
  ro.note = [&o](const std::string &line) { note(o, line); };
  ro.warn = [](const std::string &line) {
    std::fprintf(stderr, "loom: %s\n", line.c_str());
  };
  return ro;
}

bool randomValue(const Value &v, uint64_t seed, Tensor &global,
                 std::string &error) {
  global = Tensor(v.dtype, v.global);
  if (!isFloat(v.dtype)) {
    error = "--init-random: parameter '" + v.parameter + "' is " +
            loom_dtype_name(v.dtype) + ", not a float";
    return false;
  }
  // Chunks of 2^20 values, each from its own generator (the parameter's
  // name, the seed and the chunk's index), drawn by every core: the same
  // values whatever the number of threads, and a GPT of 1.6 billion
  // parameters drawn in seconds rather than the minutes one thread took
  // (which the lent GPU machines' time paid for).
  uint64_t base = fingerprintBytes(v.parameter.data(), v.parameter.size(),
                                   seed ^ 0x9e3779b97f4a7c15ull);
  const int64_t kChunk = int64_t(1) << 20;
  int64_t n = global.numElements();
  int64_t chunks = (n + kChunk - 1) / kChunk;
  auto draw = [&](int64_t chunk) {
    std::mt19937_64 gen(base + 0x9e3779b97f4a7c15ull * uint64_t(chunk + 1));
    auto uniform = [&] { // (0, 1]
      return (double(gen() >> 11) + 1.0) * (1.0 / 9007199254740992.0);
    };
    const double kPi = 3.14159265358979323846;
    int64_t end = std::min(n, (chunk + 1) * kChunk);
    for (int64_t i = chunk * kChunk; i < end; i += 2) {
      // Box-Muller: two independent normals per pair of uniforms.
      double r = 0.02 * std::sqrt(-2.0 * std::log(uniform()));
      double t = 2.0 * kPi * uniform();
      setFromDouble(global, i, r * std::cos(t));
      if (i + 1 < end)
        setFromDouble(global, i + 1, r * std::sin(t));
    }
  };
  int64_t threads = std::min<int64_t>(
      chunks, std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, 32));
  std::atomic<int64_t> next{0};
  auto worker = [&] {
    for (int64_t c; (c = next++) < chunks;)
      draw(c);
  };
  std::vector<std::thread> pool;
  for (int64_t t = 1; t < threads; ++t)
    pool.emplace_back(worker);
  worker();
  for (std::thread &t : pool)
    t.join();
  return true;
}

bool openNpyData(const std::string &path, const Value &v,
                 const std::vector<int64_t> &perEntry, NpyData &data,
                 std::string &error) {
  data.file = std::make_unique<InputFile>();
  if (!data.file->open(path, error)) {
    struct stat st;
    std::string why = ::stat(path.c_str(), &st) == 0 ? ": " + error
                                                     : " does not exist";
    error = "no data for input '" + v.name + "': " + path + why +
            " (the data directory needs one .npy per input, with a leading "
            "entry axis, shaped [entries, " +
            shapeText(perEntry) + "])";
    return false;
  }
  NpyInfo info;
  if (!readNpyHeader(*data.file, info, error))
    return false;
  if (!dtypeOfNpyDescr(info.descr, data.fileType)) {
    error = path + ": unsupported .npy dtype '" + info.descr + "'";
    return false;
  }
  std::vector<int64_t> rest(info.shape.begin() + (info.shape.empty() ? 0 : 1),
                            info.shape.end());
  if (info.shape.empty() || info.shape[0] < 1 || rest != perEntry) {
    error = path + " has shape [" + shapeText(info.shape) + "] but input '" +
            v.name + "' needs [entries x " + shapeText(perEntry) +
            "] (a leading entry axis of at least one, then the input's shape)";
    return false;
  }
  bool fileFloat = isFloat(data.fileType), wantFloat = isFloat(v.dtype);
  if (data.fileType != v.dtype &&
      (fileFloat != wantFloat || data.fileType == LOOM_DTYPE_BOOL ||
       v.dtype == LOOM_DTYPE_BOOL)) {
    error = path + " holds " + loom_dtype_name(data.fileType) +
            " values but the model expects " + loom_dtype_name(v.dtype);
    return false;
  }
  data.entries = info.shape[0];
  data.entryBytes =
      numElements(perEntry) * int64_t(loom_dtype_size(data.fileType));
  data.dataOffset = info.dataOffset;
  uint64_t size = data.file->size();
  if (info.dataOffset > size || data.entryBytes < 1 ||
      uint64_t(data.entries) > (size - info.dataOffset) /
                                   uint64_t(data.entryBytes)) {
    error = path + " is truncated: its header says [" + shapeText(info.shape) +
            "]";
    return false;
  }
  return true;
}

const char *readNpyEntry(NpyData &data, int64_t e, std::string &error) {
  data.entry.resize(size_t(data.entryBytes));
  if (!data.file->read(data.dataOffset + uint64_t(e) * data.entryBytes,
                       data.entry.size(), data.entry.data(), error))
    return nullptr;
  data.entryBytesRead += data.entryBytes;
  return data.entry.data();
}

bool writeNpy(const std::string &path, const Tensor &t, std::string &error) {
  const Tensor *out = &t;
  Tensor wide;
  if (t.dtype == LOOM_DTYPE_BF16) {
    wide = Tensor(LOOM_DTYPE_F32, t.shape);
    for (int64_t e = 0; e < t.numElements(); ++e)
      setFromDouble(wide, e, t.getAsDouble(e));
    out = &wide;
  }
  std::string bytes = npyHeader(npyDescr(out->dtype), out->shape);
  bytes.append(out->bytes.data(), out->bytes.size());
  return writeFileAtomically(path, bytes.data(), bytes.size(), error);
}

bool startMesh(const Manifest &m, double timeoutSeconds, Device *device,
               loom_runtime_t &runtime, loom_mesh_t &mesh,
               loom_mesh_t &deviceMesh, std::string &error) {
  if (m.axisNames.empty()) {
    // One device: started as one of several ranks, every rank would train
    // the whole model alone and write the same files.
    loom_launch_info_t info;
    if (launchedRanks(info) > 1) {
      error = "this step was compiled for one device but was started as "
              "rank " + std::to_string(info.rank) + " of " +
              std::to_string(info.world_size) + " (" +
              loom_launcher_name(info.launcher) +
              "); run it without a launcher, or compile it for a mesh "
              "(loomc --mesh ...)";
      return false;
    }
    return true;
  }
  loom_runtime_options_t opts;
  loom_runtime_options_init(&opts);
  opts.timeout_seconds = timeoutSeconds;
  opts.device = device ? device->collectiveDevice() : nullptr;
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
  if (opts.device) {
    if (loom_status_t s = loom_mesh_on_device(mesh, &deviceMesh)) {
      error = std::string("mesh on ") + opts.device->name + ": " +
              loom_status_message(s);
      loom_status_free(s);
      return false;
    }
    loom_rt_set_mesh(deviceMesh);
  }
  return true;
}

} // namespace loom::program::detail

//===----------------------------------------------------------------------===//
// The start-up handshake
//===----------------------------------------------------------------------===//

int loom::program::launchedRanks(loom_launch_info_t &info) {
  if (loom_status_t s = loom_launch_info_from_env(&info)) {
    loom_status_free(s);
    info.launcher = LOOM_LAUNCHER_NONE;
    return 1;
  }
  if (info.launcher == LOOM_LAUNCHER_SLURM) {
    const char *step = std::getenv("SLURM_STEP_NUM_TASKS");
    return step ? std::max(1, std::atoi(step)) : 1;
  }
  return info.world_size;
}

uint64_t loom::program::fingerprintBytes(const void *data, size_t size,
                                         uint64_t seed) {
  const unsigned char *p = static_cast<const unsigned char *>(data);
  uint64_t h = seed;
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

uint64_t loom::program::fingerprintFile(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0) {
    if (fd >= 0)
      ::close(fd);
    return 0;
  }
  uint64_t size = uint64_t(st.st_size);
  uint64_t h = fingerprintBytes(&size, sizeof(size));
  std::vector<char> buffer;
  auto sample = [&](uint64_t offset, uint64_t bytes) {
    buffer.resize(size_t(bytes));
    ssize_t n = ::pread(fd, buffer.data(), buffer.size(), off_t(offset));
    if (n > 0)
      h = fingerprintBytes(buffer.data(), size_t(n), h);
  };
  const uint64_t kEnd = 64 << 10, kBlock = 4 << 10, kBlocks = 64;
  if (size <= 2 * kEnd + kBlocks * kBlock) {
    sample(0, size);
  } else {
    sample(0, kEnd);
    uint64_t span = size - 2 * kEnd - kBlock;
    for (uint64_t b = 0; b < kBlocks; ++b)
      sample(kEnd + span * b / (kBlocks - 1), kBlock);
    sample(size - kEnd, kEnd);
  }
  ::close(fd);
  return h;
}

bool loom::program::agreeOnStart(loom_mesh_t mesh,
                                 const StartFingerprint &fingerprint,
                                 std::string &error) {
  if (!mesh)
    return true;
  const size_t n = StartFingerprint::kMaxStartItems;
  if (fingerprint.values.size() > n) {
    error = "the start-up handshake has more than " + std::to_string(n) +
            " items";
    return false;
  }
  // A fixed count, so that ranks running different programs still match.
  std::vector<int64_t> mine(n, 0);
  for (size_t i = 0; i < fingerprint.values.size(); ++i)
    mine[i] = int64_t(fingerprint.values[i]);
  std::vector<int32_t> axes;
  for (int32_t a = 0; a < loom_mesh_num_axes(mesh); ++a)
    axes.push_back(a);
  int64_t ranks = 1;
  for (int32_t a : axes)
    ranks *= loom_mesh_axis_size(mesh, a);
  std::vector<int64_t> all(size_t(ranks) * n);
  if (loom_status_t s =
          loom_all_gather(mesh, axes.data(), int32_t(axes.size()),
                          LOOM_DTYPE_I64, mine.data(), all.data(), int64_t(n))) {
    error = std::string("start-up handshake: ") + loom_status_message(s);
    loom_status_free(s);
    return false;
  }
  for (size_t i = 0; i < n; ++i) {
    std::vector<int64_t> differ;
    for (int64_t r = 1; r < ranks; ++r)
      if (all[size_t(r) * n + i] != all[i])
        differ.push_back(r);
    if (differ.empty())
      continue;
    std::string what = i < fingerprint.names.size()
                           ? fingerprint.names[i]
                           : "handshake item " + std::to_string(i);
    std::string list;
    for (size_t k = 0; k < differ.size() && k < 8; ++k)
      list += (k ? ", " : "") + std::to_string(differ[k]);
    if (differ.size() > 8)
      list += ", ... (" + std::to_string(differ.size()) + " ranks)";
    char values[64];
    std::snprintf(values, sizeof(values), "%016llx vs %016llx",
                  (unsigned long long)all[i],
                  (unsigned long long)all[size_t(differ[0]) * n + i]);
    error = "the ranks disagree before training: rank" +
            std::string(differ.size() > 1 ? "s " : " ") + list +
            (differ.size() > 1 ? " differ" : " differs") + " from rank 0 in " +
            what + " (fingerprints " + values +
            "); every rank must run the same program with the same flags "
            "and inputs";
    return false;
  }
  return true;
}

namespace loom::program::detail {

/// Rank 0 writes the final parameters and optimizer state, every rank its
/// checkpoint shards: whether they can is known before the first step (a
/// read-only artifact failed after the whole run), and every rank stops
/// with the first that cannot (which prints why).
static bool checkOutputsWritable(const TrainOptions &o, loom_mesh_t mesh,
                                 std::string &error) {
  std::string mine;
  // Every rank writes its checkpoint shard.
  if (!o.checkpointDir.empty())
    checkOutputDir(o.checkpointDir, "checkpoints (--checkpoint-dir)", mine,
                   /*tree=*/true);
  if (mine.empty() && (!mesh || mesh::rank(mesh) == 0)) {
    if (!o.paramsOut.empty())
      checkOutputDir(o.paramsOut,
                     "the final parameters (--params-out DIR|none)", mine);
    if (mine.empty() && !o.stateOut.empty())
      checkOutputDir(o.stateOut,
                     "the optimizer state (--state-out DIR|none)", mine);
  }
  error = mine;
  return mesh ? mesh::agree(mesh, mine.empty(),
                            "check that it can write its outputs", error)
              : mine.empty();
}

bool agreeOnTrainingStart(const Manifest &m, const TrainOptions &o,
                          loom_mesh_t mesh, std::string &error) {
  if (!checkOutputsWritable(o, mesh, error))
    return false;
  if (!mesh)
    return true;
  std::set<std::string> initFiles, inputs;
  auto collect = [&](const std::vector<Value> &values) {
    for (const Value &v : values) {
      if (!v.initFile.empty())
        initFiles.insert(v.initFile);
      if (v.parameter.empty() && v.port.empty())
        inputs.insert(v.name);
    }
  };
  collect(m.arguments);
  for (const StageProgram &p : m.programs)
    collect(p.arguments);
  StartFingerprint fp;
  for (const auto &[what, path] : o.fingerprintFiles)
    fp.add(what, fingerprintFile(path));
  std::string manifest = printManifest(m);
  fp.add("the step's description (its manifest)",
         fingerprintBytes(manifest.data(), manifest.size()));
  uint64_t params = fingerprintBytes("", 0);
  for (const std::string &f : initFiles) {
    auto held = m.inMemoryFiles.find(f);
    uint64_t h = held != m.inMemoryFiles.end()
                     ? fingerprintBytes(held->second.data(), held->second.size())
                     : fingerprintFile(o.dir + "/" + f);
    params = fingerprintBytes(&h, sizeof(h), params);
  }
  fp.add("the initial parameters (params.bin)", params);
  std::string flags = "steps=" + std::to_string(o.steps) +
                      " seed=" + std::to_string(o.seed) +
                      " shuffle=" + std::to_string(o.shuffle) +
                      " synthetic=" + std::to_string(o.data == "synthetic") +
                      " timeout=" + std::to_string(o.timeoutSeconds) +
                      " every=" + std::to_string(o.checkpointEvery) +
                      " keep=" + std::to_string(o.checkpointKeep) +
                      " resume=" + std::to_string(!o.resume.empty()) +
                      " init-random=" + std::to_string(o.initRandomSeed);
  fp.add("the flags (--steps, --seed, --shuffle, --data, --timeout, "
         "--checkpoint-every, --checkpoint-keep, --resume, --init-random)",
         fingerprintBytes(flags.data(), flags.size()));
  // The files the run reads, by input name.
  uint64_t data = fingerprintBytes("", 0);
  if (o.data != "synthetic")
    for (const std::string &name : inputs) {
      data = fingerprintBytes(name.data(), name.size(), data);
      uint64_t h = fingerprintFile(o.data + "/" + name + ".npy");
      data = fingerprintBytes(&h, sizeof(h), data);
    }
  fp.add("the data files (--data " + o.data + ")", data);
  return agreeOnStart(mesh, fp, error);
}

} // namespace loom::program::detail
