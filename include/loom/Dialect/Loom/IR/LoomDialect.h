//===- LoomDialect.h - Loom dialect -----------------------------*- C++ -*-===//

#ifndef LOOM_DIALECT_LOOM_IR_LOOMDIALECT_H
#define LOOM_DIALECT_LOOM_IR_LOOMDIALECT_H

#include "mlir/IR/BuiltinTypeInterfaces.h"
#include "mlir/IR/Dialect.h"

#include "loom/Dialect/Loom/IR/LoomDialect.h.inc"

namespace mlir::loom {

/// The sizes Loom compiles, from IR text as from ONNX files: every dimension
/// at most 2^31 - 1 and at most 2^46 elements, so that element and byte
/// counts fit in 64 bits with room to spare.
constexpr int64_t kMaxDimSize = (int64_t(1) << 31) - 1;
constexpr int64_t kMaxElements = int64_t(1) << 46;

/// Whether a statically shaped `type` is within those sizes (a dynamic
/// shape is: its own constraint rejects it).
bool isWithinSizeLimits(ShapedType type);

/// Checks every value under `root` (block arguments, such as a function's
/// inputs, and results of any op) against those sizes; emits an error at
/// the first one beyond them. Loom's ops check their own operands and
/// results; the tools call this on IR input before any pass runs.
LogicalResult verifySizeLimits(Operation *root);

} // namespace mlir::loom

#endif // LOOM_DIALECT_LOOM_IR_LOOMDIALECT_H
