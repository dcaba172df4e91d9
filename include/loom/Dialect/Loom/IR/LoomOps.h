//===- LoomOps.h - Loom operations ------------------------------*- C++ -*-===//

#ifndef LOOM_DIALECT_LOOM_IR_LOOMOPS_H
#define LOOM_DIALECT_LOOM_IR_LOOMOPS_H

#include "loom/Dialect/Loom/IR/LoomAttrs.h"
#include "loom/Dialect/Loom/IR/LoomDialect.h"
#include "loom/Dialect/Loom/IR/LoomInterfaces.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "loom/Dialect/Loom/IR/LoomOps.h.inc"

namespace mlir::loom {

/// `value` as an attribute of `element`: a float, or an integer (truncated
/// toward zero).
TypedAttr scalarAttr(Type element, double value);

/// A splat `loom.constant` of `type` holding `value`.
Value createSplat(OpBuilder &b, Location loc, RankedTensorType type,
                  double value);

} // namespace mlir::loom

#endif // LOOM_DIALECT_LOOM_IR_LOOMOPS_H
