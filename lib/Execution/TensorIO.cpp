//===- TensorIO.cpp - .npy and ONNX .pb tensor files ----------------------===//

#include "loom/Execution/TensorIO.h"
#include "loom/Target/ONNX/OnnxTensor.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>

using namespace mlir;
using namespace mlir::loom;

namespace {

Type npyElementType(MLIRContext *ctx, StringRef descr) {
  Builder b(ctx);
  if (descr.size() < 3)
    return {};
  char order = descr[0];
  if (order != '<' && order != '|' && order != '=')
    return {};
  StringRef code = descr.drop_front();
  if (code == "f4") return b.getF32Type();
  if (code == "f8") return b.getF64Type();
  if (code == "f2") return b.getF16Type();
  if (code == "i8") return b.getI64Type();
  if (code == "i4") return b.getI32Type();
  if (code == "i2") return b.getI16Type();
  if (code == "i1") return b.getI8Type();
  if (code == "b1") return b.getI1Type();
  if (code == "u1") return IntegerType::get(ctx, 8, IntegerType::Unsigned);
  if (code == "u2") return IntegerType::get(ctx, 16, IntegerType::Unsigned);
  if (code == "u4") return IntegerType::get(ctx, 32, IntegerType::Unsigned);
  if (code == "u8") return IntegerType::get(ctx, 64, IntegerType::Unsigned);
  return {};
}

std::string npyDescr(Type t) {
  if (t.isF32()) return "<f4";
  if (t.isF64()) return "<f8";
  if (t.isF16()) return "<f2";
  if (t.isInteger(1)) return "|b1";
  if (auto i = dyn_cast<IntegerType>(t)) {
    bool u = i.isUnsigned();
    switch (i.getWidth()) {
    case 8: return u ? "|u1" : "|i1";
    case 16: return u ? "<u2" : "<i2";
    case 32: return u ? "<u4" : "<i4";
    case 64: return u ? "<u8" : "<i8";
    }
  }
  return "";
}

std::optional<NpyHeader> parseHeader(StringRef data, StringRef path,
                                     MLIRContext *ctx, std::string &error) {
  if (!data.starts_with("\x93NUMPY") || data.size() < 10) {
    error = path.str() + " is not a .npy file";
    return std::nullopt;
  }
  uint8_t major = data[6];
  size_t headerLen, start;
  if (major == 1) {
    headerLen = uint8_t(data[8]) | (uint8_t(data[9]) << 8);
    start = 10;
  } else {
    headerLen = uint8_t(data[8]) | (uint8_t(data[9]) << 8) |
                (uint8_t(data[10]) << 16) | (size_t(uint8_t(data[11])) << 24);
    start = 12;
  }
  if (start + headerLen > data.size()) {
    error = path.str() + ": truncated .npy header";
    return std::nullopt;
  }
  StringRef header = data.substr(start, headerLen);
  auto field = [&](StringRef key) -> StringRef {
    size_t at = header.find("'" + key.str() + "'");
    if (at == StringRef::npos)
      return {};
    StringRef rest = header.drop_front(at + key.size() + 2).ltrim(" :");
    return rest;
  };
  StringRef descr = field("descr");
  if (descr.empty() || (descr[0] != '\'' && descr[0] != '"')) {
    error = path.str() + ": .npy header has no descr";
    return std::nullopt;
  }
  descr = descr.drop_front().take_until([](char c) { return c == '\'' || c == '"'; });
  Type element = npyElementType(ctx, descr);
  if (!element) {
    error = path.str() + ": unsupported .npy dtype '" + descr.str() + "'";
    return std::nullopt;
  }
  if (field("fortran_order").starts_with("True")) {
    error = path.str() + ": Fortran-order .npy files are not supported";
    return std::nullopt;
  }
  StringRef shapeText = field("shape");
  if (!shapeText.starts_with("(")) {
    error = path.str() + ": .npy header has no shape";
    return std::nullopt;
  }
  shapeText = shapeText.drop_front().take_until([](char c) { return c == ')'; });
  SmallVector<int64_t> shape;
  SmallVector<StringRef> parts;
  shapeText.split(parts, ',');
  for (StringRef p : parts) {
    p = p.trim();
    if (p.empty())
      continue;
    int64_t d;
    if (p.getAsInteger(10, d)) {
      error = path.str() + ": bad .npy shape";
      return std::nullopt;
    }
    shape.push_back(d);
  }
  NpyHeader h;
  h.type = RankedTensorType::get(shape, element);
  h.dataOffset = start + headerLen;
  return h;
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
  std::string descr = npyDescr(tensor.getElementType());
  if (descr.empty()) {
    error = "cannot write this element type to .npy";
    return false;
  }
  std::string shape = "(";
  for (int64_t d : tensor.getShape())
    shape += std::to_string(d) + ", ";
  if (tensor.getShape().size() > 1)
    shape.resize(shape.size() - 2);
  else if (tensor.getShape().size() == 1)
    shape.resize(shape.size() - 1);
  shape += ")";
  std::string header = "{'descr': '" + descr +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec) {
    error = "cannot write " + path.str() + ": " + ec.message();
    return false;
  }
  os << "\x93NUMPY" << char(1) << char(0) << char(header.size() & 0xff)
     << char(header.size() >> 8) << header;
  os.write(tensor.data(), tensor.byteSize());
  return true;
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
