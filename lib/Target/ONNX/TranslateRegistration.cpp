//===- TranslateRegistration.cpp - --import-onnx for loom-translate -------===//

#include "loom/Dialect/Loom/IR/LoomDialect.h"
#include "loom/Target/ONNX/ImportONNX.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace mlir::loom;

namespace {
llvm::cl::OptionCategory importCategory("ONNX import options");

llvm::cl::list<std::string> inputShapes(
    "input-shape",
    llvm::cl::desc("Bind a graph input's shape, e.g. --input-shape "
                   "x=1x3x224x224 (repeatable)"),
    llvm::cl::cat(importCategory));

llvm::cl::opt<bool> allowUnsupported(
    "allow-unsupported",
    llvm::cl::desc("Keep ops Loom cannot express as loom.opaque instead of "
                   "failing"),
    llvm::cl::init(false), llvm::cl::cat(importCategory));

llvm::cl::opt<std::string> functionName(
    "function-name", llvm::cl::desc("Name of the imported function"),
    llvm::cl::init("main"), llvm::cl::cat(importCategory));
} // namespace

void mlir::loom::registerImportOnnxTranslation() {
  TranslateToMLIRRegistration registration(
      "import-onnx", "Import an ONNX model (.onnx) into the loom dialect",
      [](llvm::SourceMgr &sourceMgr,
         MLIRContext *context) -> OwningOpRef<Operation *> {
        const llvm::MemoryBuffer *buffer =
            sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
        OnnxImportOptions options;
        options.allowUnsupported = allowUnsupported;
        options.functionName = functionName;
        for (const std::string &spec : inputShapes) {
          std::string error = parseOnnxInputShape(spec, options);
          if (!error.empty()) {
            emitError(UnknownLoc::get(context)) << error;
            return nullptr;
          }
        }
        OwningOpRef<ModuleOp> module = importOnnxModel(
            buffer->getBuffer(), buffer->getBufferIdentifier(), context,
            options);
        return OwningOpRef<Operation *>(module.release());
      },
      [](DialectRegistry &registry) {
        registry.insert<LoomDialect, func::FuncDialect>();
      });
}
