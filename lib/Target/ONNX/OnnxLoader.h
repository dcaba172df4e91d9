//===- OnnxLoader.h - Load, check, upgrade, infer an ONNX model -*- C++ -*-===//
//
// The only part of the importer that calls into ONNX's C++ library, which
// reports errors with exceptions; it is compiled with -fexceptions and turns
// every exception into an error message.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_LIB_TARGET_ONNX_ONNXLOADER_H
#define LOOM_LIB_TARGET_ONNX_ONNXLOADER_H

#include "loom/Target/ONNX/ImportONNX.h"
#include "onnx/onnx_pb.h"

#include <string>

namespace mlir::loom::onnx_import {

/// The domain of ONNX's training ops (Gradient, Adam, Adagrad, Momentum).
inline constexpr const char *kTrainingDomain = "ai.onnx.preview.training";

/// The default-domain ("" or "ai.onnx") opset the model imports, or -1.
int64_t defaultOpset(const onnx::ModelProto &model);

/// Parses `bytes`, binds input shapes, runs ONNX's checker and strict shape
/// inference, and upgrades old opsets. On failure returns false with a
/// message in `error`.
bool loadOnnxModel(llvm::StringRef bytes, llvm::StringRef modelPath,
                   const OnnxImportOptions &options, onnx::ModelProto &model,
                   std::string &error);

} // namespace mlir::loom::onnx_import

#endif // LOOM_LIB_TARGET_ONNX_ONNXLOADER_H
