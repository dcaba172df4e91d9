//===- Passes.h - Artifact passes -------------------------------*- C++ -*-===//

#ifndef LOOM_EXECUTION_PASSES_H
#define LOOM_EXECUTION_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::loom {

#define GEN_PASS_DECL
#include "loom/Execution/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "loom/Execution/Passes.h.inc"

} // namespace mlir::loom

#endif // LOOM_EXECUTION_PASSES_H
