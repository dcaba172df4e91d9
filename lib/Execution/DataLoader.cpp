//===- DataLoader.cpp - Training data: files, epochs, shuffling -----------===//

#include "loom/Execution/DataLoader.h"

#include "loom/Execution/Distributed.h"
#include "loom/Execution/TensorIO.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::loom;

static std::string shapeText(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleave(shape, os, "x");
  return s;
}

std::unique_ptr<DataFile> DataFile::open(StringRef path, StringRef input,
                                         RankedTensorType entry,
                                         std::string &error) {
  auto f = std::unique_ptr<DataFile>(new DataFile);
  if (!f->file.open(path.str(), error)) {
    std::string why = llvm::sys::fs::exists(path) ? ": " + error
                                                  : " does not exist";
    error = llvm::formatv("no data for input '{0}': {1}{2} (the data "
                          "directory needs one .npy per input, with a "
                          "leading entry axis, shaped [entries, {3}])",
                          input, path, why, shapeText(entry.getShape()))
                .str();
    return nullptr;
  }
  std::optional<NpyHeader> header =
      readNpyHeader(f->file, entry.getContext(), error);
  if (!header)
    return nullptr;
  ArrayRef<int64_t> shape = header->type.getShape();
  if (shape.size() != size_t(entry.getRank()) + 1 ||
      shape.drop_front() != entry.getShape() || shape[0] < 1) {
    error = llvm::formatv("{0} has shape [{1}] but input '{2}' needs "
                          "[entries x {3}] (a leading entry axis of at least "
                          "one, then the input's shape)",
                          path, shapeText(shape), input,
                          shapeText(entry.getShape()))
                .str();
    return nullptr;
  }
  Type file = header->type.getElementType(), want = entry.getElementType();
  bool fileFloat = isa<FloatType>(file), wantFloat = isa<FloatType>(want);
  if (file != want && (fileFloat != wantFloat || file.isInteger(1) ||
                       want.isInteger(1))) {
    error = llvm::formatv("{0} holds {1} values but the model expects {2}",
                          path, file, want)
                .str();
    return nullptr;
  }
  f->fileElement = file;
  f->entryShape.assign(entry.getShape().begin(), entry.getShape().end());
  f->count = shape[0];
  f->entryBytes = entry.getNumElements() * HostTensor::elementBytes(file);
  f->dataOffset = header->dataOffset;
  uint64_t size = f->file.size();
  if (f->dataOffset > size || f->entryBytes < 1 ||
      uint64_t(f->count) > (size - f->dataOffset) / uint64_t(f->entryBytes)) {
    error = llvm::formatv("{0} is truncated: its header says [{1}]", path,
                          shapeText(shape))
                .str();
    return nullptr;
  }
  return f;
}

bool DataFile::readBlock(int64_t e, ArrayRef<int64_t> offset, HostTensor &out,
                         HostTensor &scratch, std::string &error) const {
  bool same = out.getElementType() == fileElement;
  HostTensor &dst = same ? out : scratch;
  uint64_t at = dataOffset + uint64_t(e) * uint64_t(entryBytes);
  if (dst.getShape() == ArrayRef<int64_t>(entryShape)) {
    // The whole entry: read straight into the block.
    if (!file.read(at, size_t(entryBytes), dst.data(), error))
      return false;
  } else {
    std::vector<char> whole(static_cast<size_t>(entryBytes));
    if (!file.read(at, whole.size(), whole.data(), error))
      return false;
    SmallVector<int64_t> zeros(entryShape.size(), 0);
    copyBlock(whole.data(), entryShape, offset, dst.data(), dst.getShape(),
              zeros, dst.getShape(), HostTensor::elementBytes(fileElement));
  }
  copied += int64_t(dst.byteSize());
  touched += entryBytes;
  if (same)
    return true;
  bool isFloat = isa<FloatType>(fileElement);
  for (int64_t i = 0, n = out.getNumElements(); i < n; ++i)
    out.setFromDouble(i, isFloat ? scratch.getAsDouble(i)
                                 : double(scratch.getAsInt(i)));
  return true;
}
