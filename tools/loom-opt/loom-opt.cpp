//===- loom-opt.cpp - Loom optimizer driver -------------------------------===//
//
// Registers the loom dialect and passes plus the upstream dialects and passes
// Loom lowers through, then hands over to MlirOptMain.
//
//===----------------------------------------------------------------------===//

#include "loom/Dialect/Loom/IR/LoomDialect.h"
#include "loom/Pipelines/Pipelines.h"
#include "loom/Planner/Passes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#include <vector>

int main(int argc, char **argv) {
  // --plan-report[=json]: loom-auto-shard prints its plan (text or JSON)
  // to stdout, as loomc's flag of the same name does.
  std::vector<char *> args;
  for (int i = 0; i < argc; ++i) {
    llvm::StringRef arg(argv[i]);
    if (i > 0 && (arg == "--plan-report" || arg == "-plan-report")) {
      mlir::loom::planner::setDefaultReport("text");
      continue;
    }
    if (i > 0 && (arg.consume_front("--plan-report=") ||
                  arg.consume_front("-plan-report="))) {
      mlir::loom::planner::setDefaultReport(arg);
      continue;
    }
    args.push_back(argv[i]);
  }
  argc = args.size();
  argv = args.data();

  mlir::registerAllPasses();
  mlir::loom::registerLoomPassesAndPipelines();

  mlir::DialectRegistry registry;
  registry.insert<mlir::loom::LoomDialect>();
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);

  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv,
                        "Loom optimizer driver\n\n"
                        "  --plan-report[=json]  loom-auto-shard prints its plan "
                        "(text by default)\n",
                        registry));
}
