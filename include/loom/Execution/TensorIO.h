//===- TensorIO.h - .npy and ONNX .pb tensor files --------------*- C++ -*-===//

#ifndef LOOM_EXECUTION_TENSORIO_H
#define LOOM_EXECUTION_TENSORIO_H

#include "loom/Execution/HostTensor.h"
#include "loom/program.h"

namespace mlir::loom {

/// Reads a .npy (NumPy v1/v2/v3, little-endian, C order) or a serialized
/// ONNX TensorProto (.pb), chosen by extension.
std::optional<HostTensor> readTensorFile(llvm::StringRef path, MLIRContext *ctx,
                                         std::string &error);
/// Writes .npy or .pb by extension. bf16 is written to .npy as float32
/// (NumPy has no bfloat16).
/// A .npy file's type and where its data starts.
struct NpyHeader {
  RankedTensorType type;
  size_t dataOffset = 0;
};
std::optional<NpyHeader> parseNpyHeader(llvm::StringRef bytes,
                                        llvm::StringRef path, MLIRContext *ctx,
                                        std::string &error);
/// The header of the open .npy file `file` (::loom::program::readNpyHeader).
std::optional<NpyHeader> readNpyHeader(const ::loom::program::InputFile &file,
                                       MLIRContext *ctx, std::string &error);

bool writeTensorFile(llvm::StringRef path, const HostTensor &tensor,
                     std::string &error, llvm::StringRef name = "");

/// `tensor` as `element` when only the labels differ: ONNX test data stores
/// bfloat16 values as uint16 bit patterns. Returns `tensor` unchanged
/// otherwise.
HostTensor reinterpretBits(const HostTensor &tensor, Type element);

/// Elementwise comparison with numpy.allclose semantics
/// (|a - e| <= atol + rtol * |e|, NaN equal to NaN, exact for integers).
struct Comparison {
  bool match = true;
  std::string reason; // shape or type mismatch
  double maxAbsError = 0, maxRelError = 0;
  int64_t mismatches = 0, firstMismatch = -1;
};
Comparison compareTensors(const HostTensor &actual, const HostTensor &expected,
                          double rtol, double atol);

} // namespace mlir::loom

#endif // LOOM_EXECUTION_TENSORIO_H
