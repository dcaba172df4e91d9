//===- OnnxTensors.cpp - ONNX element types and tensors -> loom -----------===//
//
// ONNX data types as MLIR element types, TensorProto contents (raw, typed
// fields, external data) as elements attributes or dense_resource blobs,
// and TensorProto files (OnnxTensor.h).
//
//===----------------------------------------------------------------------===//

#include "OnnxImporter.h"
#include "OnnxLoader.h"
#include "loom/Target/ONNX/OnnxTensor.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <set>

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::onnx_import;

//===----------------------------------------------------------------------===//
// Types and tensors
//===----------------------------------------------------------------------===//

Type mlir::loom::onnx_import::convertElementType(MLIRContext *ctx,
                                                 int32_t dataType,
                                                 std::string *reason) {
  return onnxElementType(ctx, dataType, reason);
}

Type mlir::loom::onnxElementType(MLIRContext *ctx, int32_t dataType,
                                 std::string *reason) {
  Builder b(ctx);
  switch (dataType) {
  case onnx::TensorProto::FLOAT:
    return b.getF32Type();
  case onnx::TensorProto::DOUBLE:
    return b.getF64Type();
  case onnx::TensorProto::FLOAT16:
    return b.getF16Type();
  case onnx::TensorProto::BFLOAT16:
    return b.getBF16Type();
  case onnx::TensorProto::INT64:
    return b.getI64Type();
  case onnx::TensorProto::INT32:
    return b.getI32Type();
  case onnx::TensorProto::INT16:
    return b.getI16Type();
  case onnx::TensorProto::INT8:
    return b.getI8Type();
  case onnx::TensorProto::BOOL:
    return b.getI1Type();
  case onnx::TensorProto::UINT8:
    return IntegerType::get(ctx, 8, IntegerType::Unsigned);
  case onnx::TensorProto::UINT16:
    return IntegerType::get(ctx, 16, IntegerType::Unsigned);
  case onnx::TensorProto::UINT32:
    return IntegerType::get(ctx, 32, IntegerType::Unsigned);
  case onnx::TensorProto::UINT64:
    return IntegerType::get(ctx, 64, IntegerType::Unsigned);
  default:
    break;
  }
  if (reason) {
    const std::string &name =
        onnx::TensorProto::DataType_Name(
            static_cast<onnx::TensorProto::DataType>(dataType));
    *reason = "element type " + (name.empty() ? std::to_string(dataType) : name) +
              " is not supported by Loom (supported: float, double, float16, "
              "bfloat16, int8-64, uint8-64, bool)";
  }
  return {};
}

int32_t mlir::loom::onnxDataType(Type t) {
  if (t.isF32())
    return onnx::TensorProto::FLOAT;
  if (t.isF64())
    return onnx::TensorProto::DOUBLE;
  if (t.isF16())
    return onnx::TensorProto::FLOAT16;
  if (t.isBF16())
    return onnx::TensorProto::BFLOAT16;
  if (t.isInteger(1))
    return onnx::TensorProto::BOOL;
  if (auto i = dyn_cast<IntegerType>(t)) {
    bool u = i.isUnsigned();
    switch (i.getWidth()) {
    case 8:
      return u ? onnx::TensorProto::UINT8 : onnx::TensorProto::INT8;
    case 16:
      return u ? onnx::TensorProto::UINT16 : onnx::TensorProto::INT16;
    case 32:
      return u ? onnx::TensorProto::UINT32 : onnx::TensorProto::INT32;
    case 64:
      return u ? onnx::TensorProto::UINT64 : onnx::TensorProto::INT64;
    }
  }
  return 0;
}

/// Validates a TensorProto's dims: non-negative, and a size that fits in
/// memory (garbage, e.g. a non-tensor message parsed as one, must not make
/// us allocate exabytes).
bool mlir::loom::onnx_import::validDims(const onnx::TensorProto &tensor,
                                        SmallVectorImpl<int64_t> &shape,
                                        std::string &error) {
  constexpr int64_t kMaxElements = int64_t(1) << 40;
  int64_t n = 1;
  shape.clear();
  for (int64_t d : tensor.dims()) {
    if (d < 0 || (d != 0 && n > kMaxElements / d)) {
      error = "tensor '" + tensor.name() + "' has an invalid shape";
      return false;
    }
    n *= d;
    shape.push_back(d);
  }
  return true;
}

static int64_t byteWidth(Type elementType) {
  if (elementType.isInteger(1))
    return 1;
  return elementType.getIntOrFloatBitWidth() / 8;
}

bool mlir::loom::onnx_import::resolveExternalData(
    const onnx::TensorProto &tensor, StringRef modelDir, uint64_t bytes,
    ExternalData &out, std::string &error) {
  std::string where = "external data of '" + tensor.name() + "'";
  std::string location;
  for (const auto &entry : tensor.external_data()) {
    int64_t *field = entry.key() == "offset"   ? &out.offset
                     : entry.key() == "length" ? &out.length
                                               : nullptr;
    if (entry.key() == "location") {
      location = entry.value();
    } else if (field && (StringRef(entry.value()).getAsInteger(10, *field) ||
                         *field < 0)) {
      error = where + ": " + entry.key() + " '" + entry.value() +
              "' is not a non-negative integer";
      return false;
    }
  }
  if (location.empty() || llvm::sys::path::is_absolute(location)) {
    error = where + ": location '" + location +
            "' must be a file name relative to the model's directory";
    return false;
  }
  SmallString<256> dir(modelDir.empty() ? "." : modelDir), path(dir);
  llvm::sys::path::append(path, location);
  SmallString<256> realDir, realPath;
  if (llvm::sys::fs::real_path(path, realPath)) {
    error = "cannot read " + where + ": " + std::string(path) +
            " does not exist";
    return false;
  }
  // Confined to the model's directory (ONNX 1.12's checker is not: the
  // CVE-2022-25882 fix came in 1.13), symbolic links resolved.
  if (llvm::sys::fs::real_path(dir, realDir) ||
      !StringRef(realPath).starts_with(realDir.str().str() + "/")) {
    error = where + ": location '" + location +
            "' is outside the model's directory " + std::string(dir);
    return false;
  }
  uint64_t size = 0;
  if (llvm::sys::fs::file_size(realPath, size) ||
      !llvm::sys::fs::is_regular_file(realPath)) {
    error = "cannot read " + where + ": " + std::string(realPath) +
            " is not a regular file";
    return false;
  }
  out.path = realPath.str().str();
  if (bytes == kUnknownBytes)
    return true;
  if (out.length >= 0 && uint64_t(out.length) != bytes) {
    error = where + ": length " + std::to_string(out.length) +
            " differs from the " + std::to_string(bytes) +
            " bytes its type needs";
    return false;
  }
  if (uint64_t(out.offset) > size || size - uint64_t(out.offset) < bytes) {
    error = where + " in " + std::string(realPath) + ": " +
            std::to_string(bytes) + " bytes at offset " +
            std::to_string(out.offset) + " do not fit in the file's " +
            std::to_string(size) + " bytes (truncated?)";
    return false;
  }
  return true;
}

/// Little-endian bytes of a tensor's elements, wherever the proto keeps
/// them (raw_data, typed fields, or an external file).
FailureOr<std::vector<char>>
mlir::loom::onnx_import::tensorBytes(const onnx::TensorProto &tensor,
                                     Type elementType, int64_t numElements,
                                     StringRef modelDir, std::string &error) {
  int64_t width = byteWidth(elementType);
  size_t expected = static_cast<size_t>(numElements * width);
  std::vector<char> bytes;
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    ExternalData external;
    if (!resolveExternalData(tensor, modelDir, expected, external, error))
      return failure();
    auto buffer = llvm::MemoryBuffer::getFileSlice(external.path, expected,
                                                   external.offset);
    if (!buffer) {
      error = "cannot read external data of '" + tensor.name() + "' from " +
              external.path + ": " + buffer.getError().message();
      return failure();
    }
    bytes.assign((*buffer)->getBufferStart(), (*buffer)->getBufferEnd());
    return bytes;
  }
  if (tensor.has_raw_data()) {
    const std::string &raw = tensor.raw_data();
    if (raw.size() != expected) {
      error = "tensor '" + tensor.name() + "' has " +
              std::to_string(raw.size()) + " bytes of raw data, expected " +
              std::to_string(expected);
      return failure();
    }
    bytes.assign(raw.begin(), raw.end());
    return bytes;
  }
  auto count = [&](int64_t n) {
    if (n == numElements) {
      bytes.resize(expected);
      return true;
    }
    error = "tensor '" + tensor.name() + "' has " + std::to_string(n) +
            " values, expected " + std::to_string(numElements);
    return false;
  };
  // An empty repeated field's data() may be null: no memcpy from it.
  auto copyIn = [&](const void *src, size_t size) {
    if (size)
      std::memcpy(bytes.data(), src, size);
  };
  switch (tensor.data_type()) {
  case onnx::TensorProto::FLOAT:
    if (!count(tensor.float_data_size()))
      return failure();
    copyIn(tensor.float_data().data(), expected);
    break;
  case onnx::TensorProto::DOUBLE:
    if (!count(tensor.double_data_size()))
      return failure();
    copyIn(tensor.double_data().data(), expected);
    break;
  case onnx::TensorProto::INT64:
    if (!count(tensor.int64_data_size()))
      return failure();
    copyIn(tensor.int64_data().data(), expected);
    break;
  case onnx::TensorProto::UINT64:
  case onnx::TensorProto::UINT32:
    if (!count(tensor.uint64_data_size()))
      return failure();
    for (int64_t i = 0; i < numElements; ++i) {
      uint64_t v = tensor.uint64_data(i);
      std::memcpy(bytes.data() + i * width, &v, width);
    }
    break;
  default:
    // int32_data carries int32, int16, int8, uint16, uint8, bool, float16
    // and bfloat16 (as bit patterns), one per entry.
    if (!count(tensor.int32_data_size()))
      return failure();
    for (int64_t i = 0; i < numElements; ++i) {
      int32_t v = tensor.int32_data(i);
      std::memcpy(bytes.data() + i * width, &v, width);
    }
  }
  return bytes;
}

static DenseElementsAttr denseFromBytes(RankedTensorType type,
                                 ArrayRef<char> bytes) {
  if (type.getElementType().isInteger(1)) {
    SmallVector<bool> bits;
    for (char c : bytes)
      bits.push_back(c != 0);
    return DenseElementsAttr::get(type, bits);
  }
  return DenseElementsAttr::getFromRawBuffer(type, bytes);
}

std::string mlir::loom::onnx_import::sanitizeBlobName(StringRef name) {
  std::string out;
  for (char c : name)
    out.push_back(llvm::isAlnum(c) || c == '_' || c == '.' ? c : '_');
  if (out.empty() || llvm::isDigit(out[0]))
    out.insert(out.begin(), '_');
  return out;
}

FailureOr<ElementsAttr> Importer::tensorAttr(const onnx::TensorProto &tensor,
                                             bool allowResource) {
  std::string reason;
  Type element = convertElementType(ctx, tensor.data_type(), &reason);
  if (!element) {
    emitError(currentLoc) << "tensor '" << tensor.name() << "': " << reason;
    return failure();
  }
  SmallVector<int64_t> shape;
  if (!validDims(tensor, shape, reason)) {
    emitError(currentLoc) << reason;
    return failure();
  }
  auto type = RankedTensorType::get(shape, element);
  FailureOr<std::vector<char>> bytes =
      tensorBytes(tensor, element, type.getNumElements(), modelDir, reason);
  if (failed(bytes)) {
    emitError(currentLoc) << reason;
    return failure();
  }
  if (allowResource && type.getNumElements() > options.inlineElementLimit &&
      !element.isInteger(1)) {
    // A splat stays inline: it is one value however large the tensor.
    DenseElementsAttr dense = denseFromBytes(type, *bytes);
    if (dense.isSplat())
      return ElementsAttr(dense);
    AsmResourceBlob blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
        ArrayRef<char>(*bytes), alignof(uint64_t));
    return ElementsAttr(DenseResourceElementsAttr::get(
        type, sanitizeBlobName(tensor.name()), std::move(blob)));
  }
  return ElementsAttr(denseFromBytes(type, *bytes));
}

bool mlir::loom::readTensorProtoFile(StringRef path, MLIRContext *ctx,
                                     OnnxTensorData &out, std::string &error) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    error = "cannot read " + path.str() + ": " + buffer.getError().message();
    return false;
  }
  onnx::TensorProto tensor;
  if (!tensor.ParseFromArray((*buffer)->getBufferStart(),
                             static_cast<int>((*buffer)->getBufferSize()))) {
    error = path.str() + " is not a serialized ONNX TensorProto";
    return false;
  }
  std::string reason;
  Type element = onnxElementType(ctx, tensor.data_type(), &reason);
  if (!element) {
    error = path.str() + ": " + reason;
    return false;
  }
  SmallVector<int64_t> shape;
  if (!validDims(tensor, shape, reason)) {
    error = path.str() + ": " + reason;
    return false;
  }
  out.name = tensor.name();
  out.type = RankedTensorType::get(shape, element);
  FailureOr<std::vector<char>> bytes =
      tensorBytes(tensor, element, out.type.getNumElements(),
                  llvm::sys::path::parent_path(path), reason);
  if (failed(bytes)) {
    error = path.str() + ": " + reason;
    return false;
  }
  out.bytes = std::move(*bytes);
  return true;
}

bool mlir::loom::writeTensorProtoFile(StringRef path,
                                      const OnnxTensorData &data,
                                      std::string &error) {
  onnx::TensorProto tensor;
  tensor.set_name(data.name);
  int32_t type = onnxDataType(data.type.getElementType());
  if (!type) {
    error = "cannot write elements of type " +
            llvm::formatv("{0}", data.type.getElementType()).str();
    return false;
  }
  tensor.set_data_type(type);
  for (int64_t d : data.type.getShape())
    tensor.add_dims(d);
  tensor.set_raw_data(data.bytes.data(), data.bytes.size());
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec) {
    error = "cannot write " + path.str() + ": " + ec.message();
    return false;
  }
  std::string serialized;
  tensor.SerializeToString(&serialized);
  os << serialized;
  return true;
}

