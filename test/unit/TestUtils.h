//===- TestUtils.h - Helpers for Loom unit tests ----------------*- C++ -*-===//

#ifndef LOOM_TEST_UNIT_TESTUTILS_H
#define LOOM_TEST_UNIT_TESTUTILS_H

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "gtest/gtest.h"

namespace loom_test {

/// Owns a context with the loom and func dialects and parses IR into it.
class LoomTest : public ::testing::Test {
protected:
  LoomTest() {
    context.loadDialect<mlir::loom::LoomDialect, mlir::func::FuncDialect>();
  }

  /// Parses `ir` (a module body); fails the test on error.
  mlir::ModuleOp parse(llvm::StringRef ir) {
    module = mlir::parseSourceString<mlir::ModuleOp>(ir, &context);
    EXPECT_TRUE(module) << "failed to parse:\n" << ir.str();
    return module.get();
  }

  /// The first op of type OpTy in the parsed module.
  template <typename OpTy>
  OpTy first() {
    OpTy found;
    module->walk([&](OpTy op) {
      if (!found)
        found = op;
    });
    EXPECT_TRUE(found) << "no " << OpTy::getOperationName().str();
    return found;
  }

  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

} // namespace loom_test

#endif // LOOM_TEST_UNIT_TESTUTILS_H
