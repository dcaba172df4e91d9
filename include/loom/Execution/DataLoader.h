//===- DataLoader.h - Training data: files, epochs, shuffling -----*- C++ -*-===//
//
// A data input is a .npy file with a leading entry axis. Each rank reads
// only the entries a step gives it (its shard of the batch), with pread:
// not mapped, so that a file truncated while the run reads it is an error
// naming the file instead of SIGBUS on every rank. Entries are read in
// epochs that wrap around when steps need more entries than the file
// holds, each epoch in file order or, shuffled, in a permutation drawn
// from (seed, epoch) — the same on every rank, and the same when a run
// resumes at any step.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_EXECUTION_DATALOADER_H
#define LOOM_EXECUTION_DATALOADER_H

#include "loom/Execution/HostTensor.h"
#include "loom/program.h"
#include <atomic>
#include <memory>
#include <vector>

namespace mlir::loom {

class DataFile {
public:
  /// Opens `path`, which must hold [N >= 1, *entry.shape] of entry's element
  /// type or another of the same kind (float64 for float32, int32 for
  /// int64: converted as read); else an error naming the file, `input` and
  /// the shape expected.
  static std::unique_ptr<DataFile> open(llvm::StringRef path,
                                        llvm::StringRef input,
                                        RankedTensorType entry,
                                        std::string &error);
  int64_t entries() const { return count; }
  /// Bytes readBlock copied out of the file so far, and the bytes of the
  /// whole entries it read from.
  int64_t bytesRead() const { return copied; }
  int64_t entryBytesRead() const { return touched; }
  /// The element type the file stores.
  Type getFileElementType() const { return fileElement; }
  /// The block at `offset` of entry `e` into `out` (its type gives the
  /// block's shape and the model's element type); `scratch` is a tensor of
  /// the same shape in the file's element type, used when they differ.
  /// False with `error` naming the file when it no longer holds the entry.
  bool readBlock(int64_t e, llvm::ArrayRef<int64_t> offset, HostTensor &out,
                 HostTensor &scratch, std::string &error) const;

private:
  ::loom::program::InputFile file;
  uint64_t dataOffset = 0;
  Type fileElement;
  std::vector<int64_t> entryShape;
  int64_t count = 0, entryBytes = 0;
  mutable std::atomic<int64_t> copied{0}, touched{0};
};

/// Which entry the i-th read takes: epochs of `entries`, each shuffled
/// with a permutation seeded by (seed, epoch) when `shuffle`.
using DataOrder = ::loom::program::DataOrder;

} // namespace mlir::loom

#endif // LOOM_EXECUTION_DATALOADER_H
