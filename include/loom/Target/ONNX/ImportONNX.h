//===- ImportONNX.h - ONNX model -> loom dialect ---------------*- C++ -*-===//
//
// The library entry point behind `loom-translate --import-onnx`, reused by
// loomc. ONNX's own C++ library loads, checks, upgrades (opset < 13 -> 13)
// and shape-infers the model first; the importer then maps every node to
// loom ops, folds static shape computations, and turns initializers into
// loom.parameter symbols bound to function arguments.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TARGET_ONNX_IMPORTONNX_H
#define LOOM_TARGET_ONNX_IMPORTONNX_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"
#include <map>
#include <string>
#include <vector>

namespace mlir::loom {

struct OnnxImportOptions {
  /// Binds graph input shapes (symbolic or not), e.g. {"x": {1, 3, 224, 224}}.
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// The shapes of the data given for graph inputs (loom-run --input-dir):
  /// they bind the symbolic or unknown dimensions of inputs inputShapes
  /// does not name; a different rank or a static dimension that differs is
  /// an error naming the input. Names that are not graph inputs are ignored.
  std::map<std::string, std::vector<int64_t>> dataShapes;
  /// Import ops Loom cannot express as `loom.opaque` instead of failing.
  bool allowUnsupported = false;
  /// Name of the generated function.
  std::string functionName = "main";
  /// Tensors with more elements than this are stored as dense_resource
  /// blobs instead of inline text.
  int64_t inlineElementLimit = 16;
  /// Models with a lower default-domain opset are upgraded to this one with
  /// ONNX's version converter before import.
  int64_t minimumOpset = 13;
  /// Values of integer graph inputs that ops need as constants (shapes,
  /// axes, slice bounds): the compiled function still takes the input, but
  /// is only valid for this value. Float inputs here are ignored.
  std::map<std::string, mlir::DenseElementsAttr> specializedInputs;
};

/// The names of the graph inputs of a serialized model that are not
/// initializers, in order; empty with `error` set on failure.
std::vector<std::string> onnxGraphInputNames(llvm::StringRef bytes,
                                             std::string &error);

/// Imports the serialized ONNX model `bytes`. `modelPath` names the model in
/// messages and locates external data files. Errors are emitted as MLIR
/// diagnostics; returns null on failure.
OwningOpRef<ModuleOp> importOnnxModel(llvm::StringRef bytes,
                                      llvm::StringRef modelPath,
                                      MLIRContext *context,
                                      const OnnxImportOptions &options = {});

/// Reads and imports the ONNX file at `path`.
OwningOpRef<ModuleOp> importOnnxFile(llvm::StringRef path,
                                     MLIRContext *context,
                                     const OnnxImportOptions &options = {});

/// Parses "name=1x3x224x224" into options.inputShapes; returns an error
/// message, or "" on success.
std::string parseOnnxInputShape(llvm::StringRef spec, OnnxImportOptions &options);

/// Registers `--import-onnx` with mlir-translate style drivers.
void registerImportOnnxTranslation();

} // namespace mlir::loom

#endif // LOOM_TARGET_ONNX_IMPORTONNX_H
