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
#include "loom/Support/InputLimits.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::loom::test {
void registerTestReshardPass();
} // namespace mlir::loom::test

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
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
  auto [inputFile, outputFile] = mlir::registerAndParseCLIOptions(
      argc, argv, "Loom optimizer driver\n", registry);
  mlir::MlirOptMainConfig config = mlir::MlirOptMainConfig::createFromCLOptions();
  if (config.shouldShowDialects() || config.shouldListPasses())
    return mlir::asMainReturnCode(
        mlir::MlirOptMain(argc, argv, inputFile, outputFile, registry));

  // The input is read here (as MlirOptMain would) so that text nested too
  // deeply for the parser's stack is refused first.
  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputFile, &error);
  if (!input) {
    llvm::errs() << "loom-opt: " << error << "\n";
    return 1;
  }
  error = mlir::loom::checkIRNesting(input->getBuffer(),
                                     inputFile == "-" ? "<stdin>" : inputFile);
  if (!error.empty()) {
    llvm::errs() << "loom-opt: error: " << error << "\n";
    return 1;
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFile, &error);
  if (!output) {
    llvm::errs() << "loom-opt: " << error << "\n";
    return 1;
  }
  if (mlir::failed(mlir::MlirOptMain(output->os(), std::move(input), registry,
                                     config)))
    return 1;
  output->keep();
  return 0;
}
