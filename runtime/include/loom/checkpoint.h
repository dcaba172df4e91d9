//===- checkpoint.h - Sharded training checkpoints --------------*- C++ -*-===//
//
// A checkpoint is a directory ROOT/step-<8 digits>/ holding one shard file
// per rank that wrote (rank-<5 digits>.bin: the raw little-endian blocks of
// the tensors it holds the first copy of) and manifest.json, written last
// and atomically by rank 0: every tensor's name, dtype, global shape,
// sharding and pieces (file, block offset and shape, byte range, CRC-32).
// A save killed before its manifest leaves an incomplete directory that
// readers skip; earlier checkpoints are never touched. Loading assembles
// each tensor's block from the pieces that overlap it, so a checkpoint
// resumes under any mesh, strategy or pipeline (docs/checkpoints.md; a
// numpy reader is python/loom/checkpoint.py). Part of the runtime's
// training loop (loom/train.h): rank programs and loom-run write and read
// the same checkpoints.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_CHECKPOINT_H
#define LOOM_CHECKPOINT_H

#include "loom/program.h"
#include "loom/runtime.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace loom::program {

/// One tensor as this rank holds it (saving reads it, resuming replaces
/// it).
struct CheckpointEntry {
  std::string name;
  Tensor *local = nullptr;
  /// How it is split over the mesh (null: whole on every rank).
  const Sharding *sharding = nullptr;
  /// The whole tensor's shape.
  std::vector<int64_t> global;
  bool trainable = false;
};

/// What a checkpoint records besides tensors: where training stands.
struct CheckpointState {
  /// Steps done (the next step's index).
  int64_t step = 0;
  /// The data's seed and source ("synthetic" or a directory) and
  /// data entries read per step (the micro-batches of gradient
  /// accumulation; 1 when micro-batches split one entry): the data
  /// position is step * microBatches.
  uint64_t seed = 0;
  std::string data;
  int64_t microBatches = 1;
};

struct CheckpointSaveOptions {
  /// Keep this many complete checkpoints, deleting older ones (0: all).
  int64_t keep = 0;
  /// Testing: this rank dies after writing its shard, before the manifest.
  bool dieBeforeManifest = false;
  /// The mesh axis whose members hold different tensors (pipeline), or -1.
  int32_t pipelineAxis = -1;
};

/// Saves `entries` as ROOT/step-<state.step>; a collective over `mesh`
/// (every rank calls it; null: one process). Returns when the manifest is
/// on disk.
bool saveCheckpoint(const std::string &root, const CheckpointState &state,
                    const std::vector<CheckpointEntry> &entries,
                    loom_mesh_t mesh, const CheckpointSaveOptions &options,
                    std::string &error);

/// What a run resuming from a checkpoint expects of it.
struct ResumeOptions {
  /// The total steps the run reaches (the checkpoint must be before).
  int64_t steps = 0;
  /// The run's data seed and source: rank 0 warns when they differ.
  uint64_t seed = 0;
  std::string data;
  /// The names of every tensor of the model (a pipeline stage's entries
  /// are only its own); empty: the entries are. The checkpoint may hold no
  /// others.
  std::set<std::string> modelTensors;
  /// Rank 0's lines for the user (where the run resumes; a warning).
  std::function<void(const std::string &)> note, warn;
};

/// Replaces every entry's tensor with its block from the checkpoint at (or
/// latest under) `path`, reading only the pieces that overlap it; the
/// ranks of `mesh` (null: one process) agree that all could, and rank 0
/// says where the run resumes. Returns the checkpoint's state.
std::optional<CheckpointState>
resumeFromCheckpoint(const std::string &path,
                     const std::vector<CheckpointEntry> &entries,
                     loom_mesh_t mesh, const ResumeOptions &options,
                     std::string &error);

/// A complete checkpoint opened for reading.
class Checkpoint {
public:
  struct Piece {
    std::string file;
    std::vector<int64_t> offset, shape;
    uint64_t byteOffset = 0, bytes = 0;
    uint32_t crc = 0;
  };
  struct Tensor {
    loom_dtype_t dtype = LOOM_DTYPE_F32;
    std::vector<int64_t> shape;
    bool trainable = false;
    std::vector<Piece> pieces;
  };

  /// `path` is a checkpoint (a directory with manifest.json) or a root of
  /// them (the latest complete one is opened).
  static std::optional<Checkpoint> open(const std::string &path,
                                        std::string &error);

  /// The block of `name` (whose whole tensor the model holds as `dtype`
  /// and `shape`) at `offset` (empty: 0s) of shape `block`: only the
  /// pieces that overlap it are read (and their CRC-32 checked), so a rank
  /// loads its shard without the whole tensor. An error names a missing
  /// tensor, a different shape or dtype, a missing, truncated or corrupt
  /// shard.
  std::optional<program::Tensor>
  readBlock(const std::string &name, loom_dtype_t dtype,
            const std::vector<int64_t> &shape,
            const std::vector<int64_t> &offset,
            const std::vector<int64_t> &block, std::string &error) const;

  /// Resuming a run of `steps` steps in total whose model has the tensors
  /// `model`: fails when the checkpoint is not before `steps` or holds
  /// tensors the model does not have.
  bool checkResume(const std::set<std::string> &model, int64_t steps,
                   std::string &error) const;

  const std::string &getDirectory() const { return dir; }
  const CheckpointState &getState() const { return state; }
  const std::map<std::string, Tensor> &getTensors() const { return tensors; }

private:
  /// The shard file `file`, opened once (read with pread, never mapped: a
  /// shard truncated under a reader is an error, not SIGBUS); null (with
  /// `error`) if missing.
  const InputFile *shardFile(const std::string &file,
                             std::string &error) const;

  std::string dir;
  /// The manifest's version (1: piece checksums over the bytes alone).
  int version = 2;
  CheckpointState state;
  std::map<std::string, Tensor> tensors;
  mutable std::map<std::string, std::unique_ptr<InputFile>> files;
};

/// "tensor<64x32xf32>": a dtype and shape as MLIR prints them (messages).
std::string tensorTypeText(loom_dtype_t dtype,
                           const std::vector<int64_t> &shape);

/// CRC-32 (IEEE, zlib's) of `size` bytes, continuing from `crc` (the CRC
/// of what precedes them, as zlib's crc32(crc, buf, len)).
uint32_t crc32(const void *data, size_t size, uint32_t crc = 0);

/// A checkpoint piece's checksum (manifest version 2): CRC-32 of the text
/// "NAME\nDTYPE\nSHAPE\nOFFSET\nBLOCK\nSTEP\n" (lists of integers joined
/// by commas) followed by the piece's bytes, so that a piece moved to
/// another tensor, offset or save fails its check.
uint32_t pieceChecksum(const std::string &name, const std::string &dtype,
                       const std::vector<int64_t> &shape,
                       const std::vector<int64_t> &offset,
                       const std::vector<int64_t> &block, int64_t step,
                       const void *bytes, size_t size);

} // namespace loom::program

#endif // LOOM_CHECKPOINT_H
