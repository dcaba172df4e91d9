//===- loom-fuzz-ir.cpp - loom-opt's parser and verifier on hostile text --===//
//
// Input: MLIR text as loom-opt reads it (loom, func and arith ops): the
// nesting check loom-opt makes first, then MLIR's parser and the verifier
// (every loom op's verifier and type inference).
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "loom/Dialect/Loom/IR/LoomDialect.h"
#include "loom/Support/InputLimits.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

using namespace mlir;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (1u << 16))
    return -1;
  // NUL-terminated, as loom-opt's file buffers are (MLIR's lexer stops at
  // the terminator).
  std::string owned(reinterpret_cast<const char *>(data), size);
  StringRef text(owned);
  if (!mlir::loom::checkIRNesting(text, "input").empty())
    return 0;
  DialectRegistry registry;
  registry.insert<mlir::loom::LoomDialect, func::FuncDialect, arith::ArithDialect>();
  MLIRContext context(registry);
  context.disableMultithreading();
  ScopedDiagnosticHandler quiet(&context, [](Diagnostic &) { return success(); });
  // Parsing verifies the module (ParserConfig's default).
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
  return 0;
}
