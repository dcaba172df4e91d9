//===- Passes.h - Planner passes --------------------------------*- C++ -*-===//

#ifndef LOOM_PLANNER_PASSES_H
#define LOOM_PLANNER_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::loom {

#define GEN_PASS_DECL
#include "loom/Planner/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "loom/Planner/Passes.h.inc"

} // namespace mlir::loom

#endif // LOOM_PLANNER_PASSES_H
