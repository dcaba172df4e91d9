//===- Pipelines.h - Loom's named pass pipelines ----------------*- C++ -*-===//
//
// The compiler's stages as pass pipelines, registered by name so that
// loom-opt runs exactly what loomc runs (as IREE's Pipelines/ does):
//
//   --loom-training-pipeline   model -> @train_step (Training/)
//   --loom-sharding-pipeline   @train_step -> per-device program (Sharding/,
//                              Planner/)
//   --loom-cpu-pipeline        loom -> LLVM dialect (Codegen/CPU/)
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PIPELINES_PIPELINES_H
#define LOOM_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::loom {

/// Registers every Loom pass and the named pipelines above.
void registerLoomPassesAndPipelines();

} // namespace mlir::loom

#endif // LOOM_PIPELINES_PIPELINES_H
