//===- OnnxShapeInference.h - ONNX shape inference, isolated ----*- C++ -*-===//
//
// ONNX 1.12's shape inference dereferences null on some malformed models
// (loom-fuzz-onnx found one: a Gemm whose operand shapes it cannot merge),
// so the importer runs it in another process: the `loom-onnx-infer` helper
// next to the running executable (spawned, so that even a large or
// sanitized process starts it in a millisecond), or a fork of this process
// where there is none. The other process sends back what inference adds to
// the model (the graph's value_info and outputs), and a crash there is an
// error naming the model, not a crash of Loom. ONNX's version converter
// runs there too. Plain C++ and ONNX: the helper links no LLVM or MLIR.
//
// ONNX's inference also hangs or exhausts memory on some (an Expand whose
// target shape, derived through Reshape and Concat, is 2^30 long: an output
// of that rank), so the other process is bounded: the importer waits at
// most LOOM_ONNX_INFER_TIMEOUT seconds (default 60) for its reply and kills
// it after that, and the process limits its own address space
// (applyMemoryLimit, LOOM_ONNX_INFER_MEMORY_GIB, default 8 GiB more than it
// holds) where no sanitizer runs.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_LIB_TARGET_ONNX_ONNXSHAPEINFERENCE_H
#define LOOM_LIB_TARGET_ONNX_ONNXSHAPEINFERENCE_H

#include "onnx/onnx_pb.h"

#include <string>

namespace mlir::loom::onnx_import {

/// ONNX's strict shape inference (with data propagation) on `model`, in
/// this process; exceptions become `error`.
bool inferShapesInProcess(onnx::ModelProto &model, std::string &error);

/// The reply of the process that inferred: "1" and a GraphProto holding
/// the inferred value_info and outputs, or "0" and the error.
std::string encodeInference(const onnx::ModelProto &inferred, bool ok,
                            const std::string &error);

/// Shape inference in another process (see above), its results merged into
/// `model`.
bool inferShapes(onnx::ModelProto &model, std::string &error);

/// ONNX's version converter (to opset `target` of the default domain) on
/// `model`, in this process; exceptions become `error`.
bool convertVersionInProcess(onnx::ModelProto &model, int target,
                             std::string &error);

/// The reply of the process that converted: "1" and the converted
/// ModelProto, or "0" and the error.
std::string encodeConversion(const onnx::ModelProto &converted, bool ok,
                             const std::string &error);

/// The version converter in another process, as shape inference: its
/// adapters assume valid models too (Gemm 6 -> 7 indexed the shape of an
/// operand of unknown rank: loom-fuzz-onnx). `model` is replaced by the
/// converted model.
bool convertVersion(onnx::ModelProto &model, int target, std::string &error);

/// Requests to the helper: 'I' and a ModelProto (shape inference), or 'C',
/// the target opset in decimal, '\n' and a ModelProto (version conversion).
constexpr char kInferRequest = 'I', kConvertRequest = 'C';

/// Limits the address space of this process (the helper's, or a fork's)
/// for a request of `requestBytes`: what it uses now plus
/// inferenceMemoryGiB() plus 4 times the request. None
/// in sanitizer builds (ASan reserves terabytes of address space). Running
/// out is a std::bad_alloc inside ONNX, reported as such, or the process's
/// death, reported as a crash: never the machine's memory.
void applyMemoryLimit(size_t requestBytes);

/// LOOM_ONNX_INFER_MEMORY_GIB (whole GiB, > 0), else 8.
int inferenceMemoryGiB();

/// How long the importer waits for the other process: LOOM_ONNX_INFER_TIMEOUT
/// (whole seconds, > 0), else 60.
int inferenceTimeoutSeconds();

} // namespace mlir::loom::onnx_import

#endif // LOOM_LIB_TARGET_ONNX_ONNXSHAPEINFERENCE_H
