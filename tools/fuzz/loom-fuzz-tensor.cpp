//===- loom-fuzz-tensor.cpp - .npy and .pb tensor files, data files -------===//
//
// Input: one byte choosing the reader, then the file's bytes:
//   0  a .npy file through readTensorFile (loom-run --input-dir, references)
//   1  an ONNX TensorProto .pb file through readTensorFile
//   2  a training data file through DataFile (loom-run --data): the entry
//      type is the file's shape without its leading axis; the first and
//      last entries are read
//   3  the same file through a rank program's reader (openNpyData), and
//      its last entry copied out
// A tensor that loads must hold exactly the bytes its type says.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "loom/Execution/DataLoader.h"
#include "loom/Execution/TensorIO.h"
#include "../../runtime/src/program/internal.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cstring>

using namespace mlir;

static void readWhole(StringRef path) {
  MLIRContext context;
  std::string error;
  std::optional<mlir::loom::HostTensor> t = mlir::loom::readTensorFile(path, &context, error);
  if (!t) {
    if (error.empty())
      loomfuzz::fail("a tensor file was refused without a reason");
    return;
  }
  if (int64_t(t->byteSize()) !=
      t->getType().getNumElements() *
          mlir::loom::HostTensor::elementBytes(t->getElementType()))
    loomfuzz::fail("a loaded tensor's bytes differ from its type's size");
}

static void readDataFile(StringRef path) {
  MLIRContext context;
  std::string error;
  std::optional<mlir::loom::NpyHeader> header;
  {
    auto buffer = llvm::MemoryBuffer::getFile(path, false, false);
    if (!buffer)
      return;
    header = mlir::loom::parseNpyHeader((*buffer)->getBuffer(), path, &context, error);
  }
  if (!header || header->type.getRank() < 1)
    return;
  auto entry = RankedTensorType::get(header->type.getShape().drop_front(),
                                     header->type.getElementType());
  std::unique_ptr<mlir::loom::DataFile> file =
      mlir::loom::DataFile::open(path, "x", entry, error);
  if (!file)
    return;
  mlir::loom::HostTensor out(entry), scratch(entry);
  SmallVector<int64_t> zeros(entry.getRank(), 0);
  (void)file->readBlock(0, zeros, out, scratch, error);
  (void)file->readBlock(file->entries() - 1, zeros, out, scratch, error);
}

static void readRankData(const std::string &path) {
  namespace p = ::loom::program;
  std::string error;
  p::InputFile file;
  if (!file.open(path, error))
    return;
  p::NpyInfo info;
  if (!p::readNpyHeader(file, info, error) || info.shape.empty())
    return;
  p::Value v;
  v.name = "x";
  if (!p::dtypeOfNpyDescr(info.descr, v.dtype))
    return;
  std::vector<int64_t> perEntry(info.shape.begin() + 1, info.shape.end());
  p::detail::NpyData data;
  if (!p::detail::openNpyData(path, v, perEntry, data, error))
    return;
  (void)p::detail::readNpyEntry(data, data.entries - 1, error);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > (1u << 20))
    return -1;
  unsigned kind = data[0] % 4;
  std::string path = loomfuzz::writeScratchFile(
      kind == 1 ? "tensor.pb" : "tensor.npy", data + 1, size - 1);
  switch (kind) {
  case 0:
  case 1:
    readWhole(path);
    break;
  case 2:
    readDataFile(path);
    break;
  default:
    readRankData(path);
    break;
  }
  return 0;
}
