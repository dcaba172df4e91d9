//===- Artifact.h - What loomc writes ---------------------------*- C++ -*-===//
//
// A training artifact is a directory:
//
//   train.mlir   the module with @train_step (loom-build-train-step) and its
//                loom.parameter declarations (weights, optimizer state, step)
//   params.bin   initial values, referenced by #loom.external<"params.bin">
//   plan.txt     (partitioned steps) the plan: what each device holds and
//                the collectives of a step
//
// loom-export-parameters (Passes.td) writes params.bin; loomc prints the
// module to train.mlir.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_EXECUTION_ARTIFACT_H
#define LOOM_EXECUTION_ARTIFACT_H

#include "loom/Execution/HostTensor.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mlir::loom {

/// A deterministic initial value for a parameter without one, chosen as
/// PyTorch initialises layers: biases (`*bias`, `*beta`) zero, 1-d scales
/// (`*weight`, `*gamma`, `*scale`) one, other tensors uniform in
/// [-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = prod(shape[1:]) (the
/// [out, in, ...] layout of torch.nn). Values depend only on `seed` and
/// `name`, not on the order of parameters.
HostTensor initialParameterValue(llvm::StringRef name, RankedTensorType type,
                                 uint64_t seed);

struct ArtifactOptions {
  /// Keep initial values the model has (ONNX initializers); otherwise every
  /// trainable parameter is initialised with initialParameterValue.
  bool initFromModel = true;
  uint64_t seed = 0;
  /// Where relative #loom.external paths of the input are read from.
  std::string sourceDir;
};

/// Writes `dir`/params.bin and points the parameters' initial values at it
/// (splat values stay). Parameters without a value are initialised.
bool exportParameters(ModuleOp module, llvm::StringRef dir,
                      const ArtifactOptions &options, std::string &error);

/// Writes `module` as `dir`/`name` (no debug locations), as loom-opt -o
/// prints it.
bool writeModule(ModuleOp module, llvm::StringRef dir, llvm::StringRef name,
                 std::string &error);

} // namespace mlir::loom

#endif // LOOM_EXECUTION_ARTIFACT_H
