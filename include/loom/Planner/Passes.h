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

namespace planner {
/// The report loom-auto-shard prints when its `report` option is left at
/// "none": set by drivers from a `--plan-report[=json]` flag.
void setDefaultReport(llvm::StringRef mode);
} // namespace planner

} // namespace mlir::loom

#endif // LOOM_PLANNER_PASSES_H
