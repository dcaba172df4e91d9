//===- loom-opt.cpp - Loom optimizer driver -------------------------------===//
//
// Registers the loom dialect and passes plus the upstream dialects and passes
// Loom lowers through, then hands over to MlirOptMain.
//
//===----------------------------------------------------------------------===//

#include "loom/Conversion/Passes.h"
#include "loom/Dialect/Loom/IR/LoomDialect.h"
#include "loom/Dialect/Loom/Transforms/Passes.h"
#include "loom/Planner/Passes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::loom::registerLoomPasses();
  mlir::loom::registerLoomPlannerPasses();
  mlir::loom::registerLoomConversionPasses();
  mlir::loom::registerLoomPipelines();

  mlir::DialectRegistry registry;
  registry.insert<mlir::loom::LoomDialect>();
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Loom optimizer driver\n", registry));
}
