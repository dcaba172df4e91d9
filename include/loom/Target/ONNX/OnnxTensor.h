//===- OnnxTensor.h - ONNX TensorProto files --------------------*- C++ -*-===//
//
// Reading and writing serialized ONNX TensorProto (.pb) files, the format of
// the ONNX test data that loom-run consumes and produces.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TARGET_ONNX_ONNXTENSOR_H
#define LOOM_TARGET_ONNX_ONNXTENSOR_H

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringRef.h"
#include <string>
#include <vector>

namespace mlir::loom {

/// A tensor's type and its elements, little-endian, one byte per i1.
struct OnnxTensorData {
  std::string name;
  RankedTensorType type;
  std::vector<char> bytes;
};

/// Element type of an ONNX data type code (TensorProto.DataType), or null
/// with a reason when Loom does not support it.
Type onnxElementType(MLIRContext *ctx, int32_t dataType,
                     std::string *reason = nullptr);
/// The ONNX data type code of a Loom element type, or 0.
int32_t onnxDataType(Type element);

/// Reads a serialized TensorProto. `baseDir` resolves external data.
bool readTensorProtoFile(llvm::StringRef path, MLIRContext *ctx,
                         OnnxTensorData &out, std::string &error);
bool writeTensorProtoFile(llvm::StringRef path, const OnnxTensorData &tensor,
                          std::string &error);

} // namespace mlir::loom

#endif // LOOM_TARGET_ONNX_ONNXTENSOR_H
