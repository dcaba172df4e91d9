//===- Training.h - Training artifacts and the CPU training loop -*- C++ -*-===//
//
// A training artifact is a directory written by loomc:
//
//   train.mlir   the module with @train_step (loom-build-train-step) and its
//                loom.parameter declarations (weights, optimizer state, step)
//   params.bin   initial values, referenced by #loom.external<"params.bin">
//
// runTraining() JIT-compiles @train_step and runs it for a number of steps,
// feeding each step's updated parameters (results with loom.param) back as
// the next step's arguments.
//
// Data contract: a data directory holds `<name>.npy` for every data
// argument (named by loom.name: the ONNX graph input names, and `labels`),
// each with a leading step axis; step k uses entry k, or entries
// k*K ... k*K+K-1 with K micro-batches per step. `synthetic` instead draws
// seeded data: floats uniform in [-1, 1), integers uniform in
// [0, loom.index_bound).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_EXECUTION_TRAINING_H
#define LOOM_EXECUTION_TRAINING_H

#include "loom/Execution/Executor.h"
#include "loom/Execution/HostTensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"
#include <functional>
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
};

/// Writes `dir`/train.mlir and `dir`/params.bin. Non-splat initial values
/// move to params.bin; parameters without one are initialised. Modifies
/// `module` (its parameter declarations).
bool writeTrainingArtifact(ModuleOp module, llvm::StringRef dir,
                           const ArtifactOptions &options, std::string &error);

struct TrainOptions {
  int64_t steps = 1;
  /// A data directory, or "synthetic".
  std::string data = "synthetic";
  uint64_t seed = 0;
  ExecutorOptions executor;
  /// Where the final trainable parameters go (<name>.npy); empty: none.
  std::string paramsOut;
  /// Where the final optimizer state goes; empty: none.
  std::string stateOut;
  /// Called on rank 0 after every step with its index and loss.
  std::function<void(int64_t step, double loss)> onStep;
  /// Partitioned steps: seconds a collective may take.
  double timeoutSeconds = 60.0;
};

struct TrainResult {
  /// This process's rank (0 when not distributed).
  int rank = 0;
  std::vector<double> losses;
  double compileSeconds = 0, trainSeconds = 0;
};

/// Trains with @train_step of `module` (from `dir`/train.mlir).
bool runTraining(ModuleOp module, llvm::StringRef dir,
                 const TrainOptions &options, TrainResult &result,
                 std::string &error);

} // namespace mlir::loom

#endif // LOOM_EXECUTION_TRAINING_H
