//===- TensorIO.cpp - .npy and ONNX .pb tensor files ----------------------===//

#include "loom/Execution/TensorIO.h"
#include "loom/Execution/Distributed.h"
#include "loom/Target/ONNX/OnnxTensor.h"
#include "loom/program.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>

using namespace mlir;
using namespace mlir::loom;

namespace {

std::optional<NpyHeader> headerOf(const ::loom::program::NpyInfo &info,
                                  StringRef path, MLIRContext *ctx,
                                  std::string &error) {
  loom_dtype_t dtype;
  if (!::loom::program::dtypeOfNpyDescr(info.descr, dtype)) {
    error = path.str() + ": unsupported .npy dtype '" + info.descr + "'";
    return std::nullopt;
  }
  NpyHeader h;
  h.type = RankedTensorType::get(info.shape, elementTypeOf(dtype, ctx));
  h.dataOffset = info.dataOffset;
  return h;
}

std::optional<NpyHeader> parseHeader(StringRef data, StringRef path,
                                     MLIRContext *ctx, std::string &error) {
  ::loom::program::NpyInfo info;
  if (!::loom::program::parseNpyHeader(data.data(), data.size(), path.str(),
                                       info, error))
    return std::nullopt;
  return headerOf(info, path, ctx, error);
}

std::optional<HostTensor> readNpy(StringRef path, MLIRContext *ctx,
                                  std::string &error) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    error = "cannot read " + path.str() + ": " + buffer.getError().message();
    return std::nullopt;
  }
  StringRef data = (*buffer)->getBuffer();
  std::optional<NpyHeader> h = parseHeader(data, path, ctx, error);
  if (!h)
    return std::nullopt;
  return HostTensor::fromBytes(
      h->type,
      ArrayRef<char>(data.data() + h->dataOffset, data.size() - h->dataOffset),
      error);
}

bool writeNpy(StringRef path, const HostTensor &input, std::string &error) {
  HostTensor tensor = input;
  if (tensor.getElementType().isBF16())
    tensor = input.convertTo(Builder(input.getType().getContext()).getF32Type());
  std::string descr =
      ::loom::program::npyDescr(runtimeType(tensor.getElementType()));
  if (descr.empty()) {
    error = "cannot write this element type to .npy";
    return false;
  }
  std::string bytes =
      ::loom::program::npyHeader(descr, tensor.getShape().vec());
  bytes.append(tensor.data(), tensor.byteSize());
  return ::loom::program::writeFileAtomically(path.str(), bytes.data(),
                                              bytes.size(), error);
}

} // namespace

std::optional<HostTensor> mlir::loom::readTensorFile(StringRef path,
                                                     MLIRContext *ctx,
                                                     std::string &error) {
  if (path.ends_with(".npy"))
    return readNpy(path, ctx, error);
  OnnxTensorData data;
  if (!readTensorProtoFile(path, ctx, data, error))
    return std::nullopt;
  return HostTensor::fromBytes(data.type, data.bytes, error);
}

bool mlir::loom::writeTensorFile(StringRef path, const HostTensor &tensor,
                                 std::string &error, StringRef name) {
  if (path.ends_with(".npy"))
    return writeNpy(path, tensor, error);
  OnnxTensorData data;
  data.name = name.str();
  data.type = tensor.getType();
  data.bytes.assign(tensor.data(), tensor.data() + tensor.byteSize());
  return writeTensorProtoFile(path, data, error);
}

HostTensor mlir::loom::reinterpretBits(const HostTensor &tensor, Type element) {
  Type from = tensor.getElementType();
  if (from == element || !element.isBF16() || !from.isInteger(16))
    return tensor;
  std::string error;
  return *HostTensor::fromBytes(RankedTensorType::get(tensor.getShape(), element),
                                ArrayRef<char>(tensor.data(), tensor.byteSize()),
                                error);
}

Comparison mlir::loom::compareTensors(const HostTensor &actual,
                                      const HostTensor &expected, double rtol,
                                      double atol) {
  Comparison c;
  if (actual.getShape() != expected.getShape()) {
    c.match = false;
    c.reason = llvm::formatv("shape {0} differs from the expected {1}",
                             actual.getType(), expected.getType())
                   .str();
    return c;
  }
  bool isFloat = isa<FloatType>(actual.getElementType()) ||
                 isa<FloatType>(expected.getElementType());
  for (int64_t i = 0, n = actual.getNumElements(); i < n; ++i) {
    if (!isFloat) {
      if (actual.getAsInt(i) != expected.getAsInt(i)) {
        double d = std::fabs(double(actual.getAsInt(i)) - double(expected.getAsInt(i)));
        c.maxAbsError = std::max(c.maxAbsError, d);
        if (c.firstMismatch < 0)
          c.firstMismatch = i;
        ++c.mismatches;
      }
      continue;
    }
    double a = actual.getAsDouble(i), e = expected.getAsDouble(i);
    if (std::isnan(a) && std::isnan(e))
      continue;
    if (std::isinf(a) || std::isinf(e)) {
      if (a != e) {
        if (c.firstMismatch < 0)
          c.firstMismatch = i;
        ++c.mismatches;
        c.maxAbsError = INFINITY;
      }
      continue;
    }
    double d = std::fabs(a - e);
    if (std::isnan(d)) {
      if (c.firstMismatch < 0)
        c.firstMismatch = i;
      ++c.mismatches;
      c.maxAbsError = NAN;
      continue;
    }
    c.maxAbsError = std::max(c.maxAbsError, d);
    if (e != 0)
      c.maxRelError = std::max(c.maxRelError, d / std::fabs(e));
    if (d > atol + rtol * std::fabs(e)) {
      if (c.firstMismatch < 0)
        c.firstMismatch = i;
      ++c.mismatches;
    }
  }
  c.match = c.mismatches == 0;
  return c;
}

std::optional<NpyHeader> mlir::loom::parseNpyHeader(StringRef bytes,
                                                    StringRef path,
                                                    MLIRContext *ctx,
                                                    std::string &error) {
  return parseHeader(bytes, path, ctx, error);
}

std::optional<NpyHeader>
mlir::loom::readNpyHeader(const ::loom::program::InputFile &file,
                          MLIRContext *ctx, std::string &error) {
  ::loom::program::NpyInfo info;
  if (!::loom::program::readNpyHeader(file, info, error))
    return std::nullopt;
  return headerOf(info, file.path(), ctx, error);
}
