//===- program.h - Ahead-of-time compiled rank programs ---------*- C++ -*-===//
//
// What a rank program (loomc --emit=executable) is made of besides its
// machine code, in plain C++ with no LLVM or MLIR: the manifest that
// describes the compiled step's arguments and results (written by loomc,
// read by the program), tensors and .npy files, the block arithmetic of
// sharded tensors, and the training loop that runs the step.
//
// The step is the packed entry point MLIR's ExecutionEngine calls
// (`_mlir__mlir_ciface_<function>(void **)`): one pointer per argument and
// then per result, each to a pointer to a memref descriptor; results are
// written into buffers the caller allocated (destination passing). The
// training loop that runs it is loom/train.h.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PROGRAM_H
#define LOOM_PROGRAM_H

#include "loom/runtime.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace loom::program {

struct TrainOptions;

/// How a tensor is split over the mesh: per dimension the mesh axes
/// (indices, major first) that split it, and the axes over which it holds
/// partial values (reduced with `partialKind`).
struct Sharding {
  std::vector<std::vector<int32_t>> dims;
  std::vector<int32_t> partial;
  loom_reduction_t partialKind = LOOM_REDUCTION_SUM;

  bool splits() const;
};

/// One argument or result of the compiled step.
struct Value {
  std::string name;
  /// The loom.parameter it is bound to (arguments) or updates (results).
  std::string parameter;
  bool trainable = false;
  /// Integer data lies in [0, indexBound) (0: unknown).
  int64_t indexBound = 0;
  /// Data that micro-batches splitting the batch do not split (no batch
  /// dimension): every micro-batch reads the step's whole entry.
  bool wholeBatch = false;
  loom_dtype_t dtype = LOOM_DTYPE_F32;
  /// This rank's shape, and the whole tensor's.
  std::vector<int64_t> shape, global;
  Sharding sharding;
  /// A parameter's initial value (the global tensor): `initOffset` bytes
  /// into `initFile` (relative to the program's directory), or one element
  /// repeated (`splat`: its bytes).
  std::string initFile;
  int64_t initOffset = -1;
  std::string splat;
  /// A pipeline stage program's port: what a value is to the schedule
  /// ("recv:N", "recv_grad:N", "send:N", "send_grad:N", "stash:N",
  /// "grad:N"; empty for parameters, data, the loss and updates).
  std::string port;
};

/// One program of a pipeline stage (loom-split-stages): its forward,
/// backward_input, backward_weight or update.
struct StageProgram {
  int stage = 0;
  std::string kind;
  std::string function;
  std::vector<Value> arguments, results;
};

struct Manifest {
  std::string function = "train_step";
  /// Where the step's code runs: "host", or "cuda" (a GPU program: its
  /// kernels, cuBLAS calls and collectives take device buffers).
  std::string device = "host";
  int64_t microBatches = 1;
  /// The micro-batches split the model's batch (loom.batch_split): a step
  /// reads one data entry of the whole batch, micro-batch m being its rows
  /// [m B/M, (m+1) B/M). Otherwise (gradient accumulation) a step reads
  /// one entry per micro-batch.
  bool splitBatch = false;
  /// Data entries one step reads.
  int64_t entriesPerStep() const { return splitBatch ? 1 : microBatches; }
  /// The mesh the step is partitioned over (empty: one device).
  std::vector<std::string> axisNames;
  std::vector<int64_t> axisSizes;
  std::vector<Value> arguments, results;
  /// A pipelined step (`programs` non-empty): P pipeline ranks (the mesh's
  /// pp axis) with V stages each, every rank's schedule as action texts
  /// ("F(1,3)", "SEND_B(0,2)", "U(1)"), and every stage's programs.
  int pipelineRanks = 0, virtualStages = 1;
  std::vector<std::vector<std::string>> actions;
  std::vector<StageProgram> programs;
  bool pipelined() const { return !programs.empty(); }
  /// Files that initial values name (Value::initFile) held in memory
  /// instead of beside the program (loom-run's JIT: its dense constants);
  /// not part of the text form.
  std::map<std::string, std::string> inMemoryFiles;
};

/// The text form (one `key=value` list per line; names percent-encoded).
std::string printManifest(const Manifest &manifest);
bool parseManifest(const std::string &text, Manifest &manifest,
                   std::string &error);

/// A dense row-major tensor in host memory.
struct Tensor {
  loom_dtype_t dtype = LOOM_DTYPE_F32;
  std::vector<int64_t> shape;
  std::vector<char> bytes;

  Tensor() = default;
  Tensor(loom_dtype_t dtype, std::vector<int64_t> shape);
  int64_t numElements() const;
  double getAsDouble(int64_t i) const;
};

int64_t numElements(const std::vector<int64_t> &shape);

/// The element at `p` of type `dtype`, widened to double.
double elementAsDouble(const char *p, loom_dtype_t dtype);

/// The first of `count` elements of `dtype` at `data` that a training step
/// must not get: a NaN or infinite float, or (indexBound > 0) an integer
/// outside [0, indexBound), such as a label of a class the model does not
/// have (it would index past a row, or silently change the loss). Returns
/// its index with `why` set, or -1.
int64_t findBadValue(const char *data, loom_dtype_t dtype, int64_t count,
                     int64_t indexBound, std::string &why);

/// Copies the `shape` block at `srcOffset` of a row-major `srcShape` tensor
/// to `dstOffset` of a `dstShape` one; `bytes` per element.
void copyBlock(const char *src, const std::vector<int64_t> &srcShape,
               const std::vector<int64_t> &srcOffset, char *dst,
               const std::vector<int64_t> &dstShape,
               const std::vector<int64_t> &dstOffset,
               const std::vector<int64_t> &shape, int64_t bytes);

/// Where this rank's block of a `shape`d tensor split as `sharding` starts,
/// per dimension (zeros without a mesh).
std::vector<int64_t> blockOffset(loom_mesh_t mesh,
                                 const std::vector<int64_t> &shape,
                                 const Sharding &sharding);
/// The `global`-shaped tensor from every rank's `local`-shaped block `data`
/// (a collective: every rank calls it): partial values are reduced first,
/// in place in `data`; the whole tensor is written to `out`.
loom_status_t gatherGlobal(loom_mesh_t mesh, const Sharding &sharding,
                           loom_dtype_t dtype,
                           const std::vector<int64_t> &local,
                           const std::vector<int64_t> &global, char *data,
                           char *out);

/// The .npy dtype of `dtype` ("<f4"; bf16 has none: "").
std::string npyDescr(loom_dtype_t dtype);
/// The dtype of an .npy descr, or false.
bool dtypeOfNpyDescr(const std::string &descr, loom_dtype_t &dtype);
/// The header of a version 1.0 .npy file (magic to newline).
std::string npyHeader(const std::string &descr,
                      const std::vector<int64_t> &shape);
struct NpyInfo {
  std::string descr;
  std::vector<int64_t> shape;
  size_t dataOffset = 0;
};
/// Parses the header of the .npy file `data` (all `size` bytes of it; `path`
/// names it in errors) and checks that the data it describes follows it: a
/// shape whose bytes overflow or exceed the file is an error.
bool parseNpyHeader(const char *data, size_t size, const std::string &path,
                    NpyInfo &info, std::string &error);

/// Which entry of a data file a position in the stream of entries reads:
/// epoch after epoch, in order or (`shuffle`) in a permutation seeded by
/// (seed, epoch), the same from any standard library.
class DataOrder {
public:
  DataOrder(int64_t entries = 1, bool shuffle = false, uint64_t seed = 0)
      : entries(entries), shuffle(shuffle), seed(seed) {}
  int64_t entry(int64_t position);
  int64_t epochs(int64_t positions) const {
    return (positions + entries - 1) / entries;
  }

private:
  int64_t entries;
  bool shuffle;
  uint64_t seed;
  int64_t cachedEpoch = -1;
  std::vector<int64_t> permutation;
};

/// A file read with pread, never mapped: when it is truncated while a run
/// reads it (a data set rewritten under a running job), `read` fails with
/// an error naming the file, where a mapping would kill the process with
/// SIGBUS.
class InputFile {
public:
  InputFile() = default;
  InputFile(const InputFile &) = delete;
  InputFile &operator=(const InputFile &) = delete;
  ~InputFile();
  /// False with `error` ("cannot read <path>: <why>").
  bool open(const std::string &path, std::string &error);
  /// Its size when opened.
  uint64_t size() const { return bytes; }
  const std::string &path() const { return name; }
  /// `n` bytes at `offset` into `out`; false with an error naming the file
  /// when it does not hold them (any more).
  bool read(uint64_t offset, size_t n, void *out, std::string &error) const;

private:
  int fd = -1;
  uint64_t bytes = 0;
  std::string name;
};

/// The header of the .npy file `file`: its first 64 KiB through
/// `parseNpyHeader`, the data it promises checked against the whole file.
bool readNpyHeader(const InputFile &file, NpyInfo &info, std::string &error);

/// Writes `size` bytes to `path` whole or not at all: to a temporary name
/// beside it, flushed to disk, then renamed over `path` (a kill or a full
/// disk leaves the old file or none, never a torn one). False with `error`
/// naming the file.
bool writeFileAtomically(const std::string &path, const void *data,
                         size_t size, std::string &error);

/// A directory of .npy results one run writes (params-final/, the
/// optimizer state): `beginOutputDir` creates it and removes what an
/// earlier run left there (its marker and its .npy files: no stale tensor
/// of another model survives, and a run that fails leaves no marker);
/// `finishOutputDir` writes the marker `<dir>.done` last (beside the
/// directory, which holds only .npy files), naming `what` wrote it and its
/// `files`. A directory without the marker is incomplete.
bool beginOutputDir(const std::string &dir, std::string &error);
/// Sets `o.paramsOut` and `o.stateOut` from the --params-out and
/// --state-out flags (empty: `o.dir`/params-final and `o.dir`/optimizer-final;
/// "none": not written; --params-out none alone writes neither), refuses
/// one directory for both, and clears both markers. False with `error`.
bool resolveOutputs(TrainOptions &o, const std::string &paramsFlag,
                    const std::string &stateFlag, std::string &error);
/// Whether `dir` (created if missing) and its parent take new files: a
/// read-only artifact is reported before training, not after it. `what`
/// names the output and the flag that moves it. `tree`: `dir` is made
/// with its parents (mkdir -p) and only it must take files (checkpoints).
bool checkOutputDir(const std::string &dir, const std::string &what,
                    std::string &error, bool tree = false);
/// Locks `dir` (created with its parents if missing) for one writer: an exclusive flock on
/// `dir`/.loom-lock, held until the returned descriptor is closed (or the
/// process ends, a kill included). -1 with `error` when another process
/// holds it (naming `who` wrote the note, e.g. "loomc pid 123") or the
/// directory cannot be written.
int lockOutputDir(const std::string &dir, const std::string &who,
                  std::string &error);

/// Removes `<dir>.done` (a run calls it when it starts, so that one that
/// fails before saving leaves the earlier results unmarked).
void clearOutputMarker(const std::string &dir);
bool finishOutputDir(const std::string &dir,
                     const std::vector<std::string> &files,
                     const std::string &what, std::string &error);

/// How many ranks the launcher started this process among, for telling a
/// one-device program run under `mpirun -np 4` (or torchrun, srun -n 4):
/// the launcher's world size; under Slurm the job step's task count, so
/// that a batch script's own shell (SLURM_NTASKS of the allocation, no
/// step) counts as one. `info` describes the launcher (NONE: 1 rank).
int launchedRanks(loom_launch_info_t &info);

/// What the ranks of a job compare before they train (the start-up
/// handshake): named 64-bit fingerprints of the program, its inputs and its
/// flags, at most kMaxStartItems, added in the same order on every rank.
struct StartFingerprint {
  static constexpr size_t kMaxStartItems = 16;
  std::vector<std::string> names;
  std::vector<uint64_t> values;
  void add(const std::string &name, uint64_t value) {
    names.push_back(name);
    values.push_back(value);
  }
};
/// 64-bit FNV-1a of `size` bytes, continuing from `seed`.
uint64_t fingerprintBytes(const void *data, size_t size,
                          uint64_t seed = 14695981039346656037ull);
/// A file's fingerprint: its size and a sample of its bytes (the first and
/// last 64 KiB and 64 blocks of 4 KiB spread between), so that start-up
/// reads at most 384 KiB of a file of any size; a file that differs only
/// between the samples is not told apart. 0 when it cannot be read.
uint64_t fingerprintFile(const std::string &path);
/// Every rank of `mesh` (all its axes) exchanges `fingerprint`; on any
/// difference every rank fails with an error naming the first item that
/// differs and the ranks that disagree. A collective: every rank calls it.
bool agreeOnStart(loom_mesh_t mesh, const StartFingerprint &fingerprint,
                  std::string &error);

} // namespace loom::program

#endif // LOOM_PROGRAM_H
