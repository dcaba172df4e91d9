//===- PassUtils.h - Helpers shared by the loom training passes -*- C++ -*-===//

#ifndef LOOM_LIB_DIALECT_LOOM_TRANSFORMS_PASSUTILS_H
#define LOOM_LIB_DIALECT_LOOM_TRANSFORMS_PASSUTILS_H

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::loom::detail {

/// The function a pass works on: `name`, or the module's only function.
FailureOr<func::FuncOp> lookupFunction(ModuleOp module, StringRef name,
                                       StringRef pass);

/// The loom.parameter argument `index` of `fn` is bound to, if any.
ParameterOp boundParameter(func::FuncOp fn, unsigned index);

/// `loom.name` of argument `index`, or "arg<index>".
std::string argumentName(func::FuncOp fn, unsigned index);

/// Checks that `fn` has a body of one block.
LogicalResult verifySingleBlock(func::FuncOp fn, StringRef pass);

/// Checks that `fn` has one block ending in func.return and a first result
/// that is a scalar float tensor (the loss).
LogicalResult verifyLossFunction(func::FuncOp fn, StringRef pass);

} // namespace mlir::loom::detail

#endif // LOOM_LIB_DIALECT_LOOM_TRANSFORMS_PASSUTILS_H
