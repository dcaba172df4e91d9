//===- Pipelines.cpp - Loom's named pass pipelines ------------------------===//

#include "loom/Pipelines/Pipelines.h"

#include "loom/Codegen/CPU/Passes.h"
#include "loom/Conversion/Passes.h"
#include "loom/Planner/Passes.h"
#include "loom/Sharding/Passes.h"
#include "loom/Training/Passes.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::loom;

void mlir::loom::registerLoomPassesAndPipelines() {
  registerLoomTrainingPasses();
  registerLoomShardingPasses();
  registerLoomPlannerPasses();
  registerLoomConversionPasses();
  registerLoomCodegenCPUPasses();
  PassPipelineRegistration<CpuPipelineOptions>(
      "loom-cpu-pipeline",
      "Lower loom to the LLVM dialect for CPU execution (what loom-run "
      "compiles)",
      buildLoomCpuPipeline);
}
