//===- internal.h - What the rank programs' trainers share ------*- C++ -*-===//
//
// The unpipelined trainer (trainer.cpp) and the pipeline trainer
// (pipeline.cpp): files read, element stores as loom-run makes them,
// memref descriptors, the mesh, and .npy data sources.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PROGRAM_INTERNAL_H
#define LOOM_PROGRAM_INTERNAL_H

#include "loom/device.h"
#include "loom/program.h"
#include "loom/train.h"

#include "loom/checkpoint.h"

#include <memory>
#include <random>
#include <string>
#include <vector>

namespace loom::program::detail {

std::string shapeText(const std::vector<int64_t> &shape);

bool isFloat(loom_dtype_t t);

/// Element `i` of `t` set from `v` as loom-run's HostTensor::setFromDouble
/// does (f16/bf16 rounded once, to nearest even).
void setFromDouble(Tensor &t, int64_t i, double v);

/// A memref descriptor {allocated, aligned, offset, sizes, strides} of a
/// row-major buffer of `shape`.
std::vector<int64_t> descriptorFor(void *data, const std::vector<int64_t> &shape);
inline std::vector<int64_t> descriptorFor(Tensor &t) {
  return descriptorFor(t.bytes.data(), t.shape);
}

/// A tensor in a device's memory (host or GPU), freed with it.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  DeviceBuffer(DeviceBuffer &&other) noexcept { *this = std::move(other); }
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  ~DeviceBuffer() { reset(); }

  /// A `shape`d buffer of `dtype` on `device` (contents undefined); false
  /// with `error` naming `what` when the device has no room.
  bool allocate(Device &device, loom_dtype_t dtype,
                const std::vector<int64_t> &shape, const std::string &what,
                std::string &error);
  /// Its contents from / to a host tensor of the same size.
  bool upload(const Tensor &t, std::string &error);
  bool download(Tensor &t, std::string &error) const;
  /// Element 0, widened to double (the loss, the loss scale).
  bool scalar(double &out, std::string &error) const;
  void reset();

  void *data() const { return ptr; }
  size_t bytes() const { return size; }
  loom_dtype_t dtype() const { return type; }
  const std::vector<int64_t> &shape() const { return dims; }

private:
  Device *device = nullptr;
  void *ptr = nullptr;
  size_t size = 0;
  loom_dtype_t type = LOOM_DTYPE_F32;
  std::vector<int64_t> dims;
};

/// Calls a packed entry on buffers: `args` then `results` (destination
/// passing), each a pointer and a shape.
void invoke(PackedEntry entry, const std::vector<const DeviceBuffer *> &args,
            const std::vector<DeviceBuffer *> &results);

/// Calls a packed entry with `args` then `results` (destination passing:
/// the results' buffers are allocated by the caller).
void invoke(PackedEntry entry, std::vector<Tensor *> args,
            std::vector<Tensor> &results);

/// A `global`-shaped tensor's block on this rank, as `v` is split.
Tensor localShard(loom_mesh_t mesh, const Tensor &global, const Value &v);

/// The whole tensor from every rank's block (a collective); false with
/// `error` naming `v`.
bool gatherGlobal(loom_mesh_t mesh, const Tensor &local, const Value &v,
                  Tensor &global, std::string &error);

/// A parameter argument's initial value (the global tensor) from its splat,
/// its bytes in one of the manifest's in-memory files, or its bytes in a
/// file under `dir` (opened once per file in `files`).
bool initialValue(const Manifest &m, const Value &v, const std::string &dir,
                  std::vector<std::pair<std::string, std::unique_ptr<InputFile>>>
                      &files,
                  Tensor &global, std::string &error);

/// A parameter's value drawn from N(0, 0.02^2) (--init-random): Box-Muller
/// on a 64-bit Mersenne Twister seeded by `seed` and the parameter's name,
/// the same on every rank and with any standard library.
bool randomValue(const Value &v, uint64_t seed, Tensor &global,
                 std::string &error);

/// Synthetic data for `v`: its whole (global) tensor drawn from `gen`,
/// floats uniform in [-1, 1), integers uniform in [0, loom.index_bound).
Tensor drawSynthetic(const Value &v, std::mt19937_64 &gen);

/// FNV-1a: a string's hash, the same in every process.
uint64_t fnv1a(const std::string &s);

/// The generator of input `name`'s synthetic data at `step`: keyed by
/// (seed, step, name), so that every program that reads the input draws
/// the same values for a step: the unpipelined step (its whole batch), each
/// pipeline stage (its micro-batch's block of that batch) and a resumed run
/// (without replaying the steps before).
std::mt19937_64 syntheticStream(int64_t seed, int64_t step,
                                const std::string &name);

/// What resuming a checkpoint expects for these options (rank 0's notes
/// through `note`, warnings on stderr).
ResumeOptions resumeOptions(const TrainOptions &o);

/// One data argument's .npy file, opened and checked: entries of
/// `perEntry` shape in an element type convertible to `v`'s.
struct NpyData {
  std::unique_ptr<InputFile> file;
  uint64_t dataOffset = 0;
  loom_dtype_t fileType = LOOM_DTYPE_F32;
  int64_t entries = 0, entryBytes = 0;
  std::vector<char> entry; // the last entry read
  /// Bytes of this rank's blocks copied out of the entries read, and of
  /// the whole entries read.
  int64_t bytesRead = 0, entryBytesRead = 0;
};
/// `shape` with its first two dimensions merged ([M, b, ...] -> [M b,
/// ...]): the model's batch of a step whose M micro-batches split it.
inline std::vector<int64_t> mergeLeading(const std::vector<int64_t> &shape) {
  if (shape.size() < 2)
    return shape;
  std::vector<int64_t> out = {shape[0] * shape[1]};
  out.insert(out.end(), shape.begin() + 2, shape.end());
  return out;
}

bool openNpyData(const std::string &path, const Value &v,
                 const std::vector<int64_t> &perEntry, NpyData &data,
                 std::string &error);
/// Entry `e`'s bytes (in data.entry), read from the file; null with an
/// error naming the file when it no longer holds them (truncated while
/// the run reads it).
const char *readNpyEntry(NpyData &data, int64_t e, std::string &error);

/// Writes `t` (bf16 widened to f32, as loom-run writes it) to `path`.
bool writeNpy(const std::string &path, const Tensor &t, std::string &error);

/// Starts the runtime and the manifest's mesh (nothing without one); with
/// a device other than the host, the runtime reaches its memory and
/// compiled code's collectives run on `deviceMesh` (device buffers).
bool startMesh(const Manifest &m, double timeoutSeconds, Device *device,
               loom_runtime_t &runtime, loom_mesh_t &mesh,
               loom_mesh_t &deviceMesh, std::string &error);

/// The start-up handshake (agreeOnStart), the same for rank programs and
/// loom-run: the caller's files (TrainOptions::fingerprintFiles: the
/// program, loom-run's artifact), the manifest, the initial parameters'
/// files, the flags that must agree and the inputs' data files. A
/// collective over `mesh` (null: nothing).
bool agreeOnTrainingStart(const Manifest &m, const TrainOptions &o,
                          loom_mesh_t mesh, std::string &error);

/// LOOM_FAULT's kill, stop or exit: `rank` fails before `step` when the
/// options name both (save faults happen while saving).
void injectFault(const TrainOptions &options, int rank, int64_t step);

/// Rank 0 learns every rank's `events` (a collective), in rank and time
/// order; other ranks keep their own.
bool gatherTrace(loom_mesh_t mesh, std::vector<TraceEvent> &events,
                 std::string &error);

/// Rank 0's line for the user (TrainOptions::onNote, else stdout).
void note(const TrainOptions &o, const std::string &line);

} // namespace loom::program::detail

#endif // LOOM_PROGRAM_INTERNAL_H
