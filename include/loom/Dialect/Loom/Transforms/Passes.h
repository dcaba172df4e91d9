//===- Passes.h - Loom transformation passes --------------------*- C++ -*-===//

#ifndef LOOM_DIALECT_LOOM_TRANSFORMS_PASSES_H
#define LOOM_DIALECT_LOOM_TRANSFORMS_PASSES_H

#include "loom/Dialect/Loom/IR/LoomDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::loom {

#define GEN_PASS_DECL
#include "loom/Dialect/Loom/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "loom/Dialect/Loom/Transforms/Passes.h.inc"

} // namespace mlir::loom

#endif // LOOM_DIALECT_LOOM_TRANSFORMS_PASSES_H
