//===- loom-fuzz-tensor.cpp - .npy and .pb tensor files, data files -------===//
//
// Input: one byte choosing the reader, then the file's bytes:
//   0  a .npy file through readTensorFile (loom-run --input-dir, references)
//   1  an ONNX TensorProto .pb file through readTensorFile
//   2  a training data file through the training loop's reader
//      (openNpyData: loom-run and rank programs --data): the entry type is
//      the file's shape without its leading axis; the first entry is read
//      and a block of it copied out, as a rank of a mesh does
//   3  the same file, its last entry read
// A tensor that loads must hold exactly the bytes its type says.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

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

static void readRankData(const std::string &path, bool last) {
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
  const char *bytes =
      p::detail::readNpyEntry(data, last ? data.entries - 1 : 0, error);
  if (!bytes || last || perEntry.empty())
    return;
  // The second half of the leading dimension, as rank 1 of 2 holds it.
  std::vector<int64_t> block = perEntry, offset(perEntry.size(), 0);
  block[0] = perEntry[0] / 2;
  offset[0] = perEntry[0] - block[0];
  p::Tensor out(data.fileType, block);
  p::copyBlock(bytes, perEntry, offset, out.bytes.data(), block,
               std::vector<int64_t>(block.size(), 0), block,
               int64_t(loom_dtype_size(data.fileType)));
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
  default:
    readRankData(path, kind == 3);
    break;
  }
  return 0;
}
