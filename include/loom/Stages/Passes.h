//===- Passes.h - Pipeline-stage passes -------------------------*- C++ -*-===//

#ifndef LOOM_STAGES_PASSES_H
#define LOOM_STAGES_PASSES_H

#include "loom/Dialect/Loom/IR/LoomDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::loom {

#define GEN_PASS_DECL
#include "loom/Stages/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "loom/Stages/Passes.h.inc"

} // namespace mlir::loom

#endif // LOOM_STAGES_PASSES_H
