//===- loom-opt.cpp - Loom optimizer driver -------------------------------===//
//
// Registers the loom dialect, Loom's passes and named pipelines (the ones
// loomc runs), the test passes, and the upstream dialects and passes Loom
// lowers through, then hands over to MlirOptMain.
//
//===----------------------------------------------------------------------===//

#include "loom/Codegen/CUDA/Toolkit.h"
#include "loom/Dialect/Loom/IR/LoomDialect.h"
#include "loom/Pipelines/Pipelines.h"
#include "loom/Support/Debug.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

namespace mlir::loom::test {
void registerTestReshardPass();
} // namespace mlir::loom::test

int main(int argc, char **argv) {
  // --loom-cuda-pipeline: ptxas and libdevice from the toolkit Loom was
  // configured with unless the environment names one.
  mlir::loom::useCudaToolkit();
  mlir::loom::registerDebugOptions();
  mlir::registerAllPasses();
  mlir::loom::registerLoomPassesAndPipelines();
  mlir::loom::test::registerTestReshardPass();

  mlir::DialectRegistry registry;
  registry.insert<mlir::loom::LoomDialect>();
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  // gpu-module-to-binary (the CUDA pipeline) translates kernels to LLVM IR.
  mlir::registerAllToLLVMIRTranslations(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Loom optimizer driver\n", registry));
}
