//===- Pipelines.cpp - Loom's named pass pipelines ------------------------===//

#include "loom/Pipelines/Pipelines.h"

#include "loom/Codegen/CPU/Passes.h"
#include "loom/Codegen/CUDA/Passes.h"
#include "loom/Conversion/Passes.h"
#include "loom/Execution/Passes.h"
#include "loom/Planner/Passes.h"
#include "loom/Sharding/Passes.h"
#include "loom/Sharding/Strategies.h"
#include "loom/Stages/Passes.h"
#include "loom/Training/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::loom;

namespace {

void addStrategy(OpPassManager &pm, const ShardingPipelineOptions &options) {
  StringRef strategy = options.strategy;
  if (strategy == "annotated")
    return; // the model's own shardings
  if (strategy == "file") {
    LoomApplyShardFileOptions file;
    file.file = options.shardFile;
    file.function = options.function;
    pm.addPass(createLoomApplyShardFile(file));
    return;
  }
  // The planner plans (auto) or prices a preset and writes it as a plan,
  // so that the program does what the report prices.
  if (strategy == "auto" || isPlannedPreset(strategy)) {
    bool preset = strategy != "auto";
    LoomAutoShardOptions plan;
    plan.function = options.function;
    plan.cluster = options.cluster;
    plan.fixedMesh = options.fixedMesh || preset;
    plan.memoryLimitGiB = options.memoryLimitGiB;
    plan.timeLimit = options.planTimeLimit;
    plan.compareMegatron = options.compareMegatron;
    plan.meshAxes = options.planMeshAxes;
    plan.report = options.planReport;
    plan.reportFile = options.planReportFile;
    plan.remat = options.remat == "auto" ? "search" : options.remat.getValue();
    plan.pipelineStages = options.planStages;
    plan.microBatches = options.planMicroBatches;
    plan.schedule = options.planSchedule;
    plan.recordPlan = options.recordPlan;
    plan.bucketMb = options.bucketMb;
    plan.overlap = options.overlap;
    if (preset) {
      // loom-mark-remat marked the layers (and with full the ops around
      // them); the preset is priced with every layer recomputed.
      plan.preset = strategy.str();
      plan.dpAxis = options.dpAxis;
      plan.tpAxis = options.tpAxis;
      plan.remat = options.remat == "layers" || options.remat == "full"
                       ? "layers"
                       : "none";
    }
    pm.addPass(createLoomAutoShard(plan));
    return;
  }
  LoomApplyStrategyOptions preset;
  preset.function = options.function;
  preset.strategy = options.strategy;
  preset.dpAxis = options.dpAxis;
  preset.tpAxis = options.tpAxis;
  pm.addPass(createLoomApplyStrategy(preset));
}

} // namespace

void mlir::loom::buildLoomShardingPipeline(
    OpPassManager &pm, const ShardingPipelineOptions &options) {
  if (!options.mesh.empty()) {
    LoomCreateMeshOptions mesh;
    mesh.mesh = options.mesh;
    pm.addPass(createLoomCreateMesh(mesh));
  }
  // Rematerialization the user asks for is marked on the global step; the
  // planner marks what it prices.
  bool planned = options.strategy == "auto";
  if (!planned && (options.remat == "layers" || options.remat == "full")) {
    LoomMarkRematOptions mark;
    mark.function = options.function;
    mark.mode = options.remat;
    pm.addPass(createLoomMarkRemat(mark));
  }
  if (options.strategy != "none") {
    addStrategy(pm, options);
    if (!options.partition)
      return;
    LoomPartitionOptions partition;
    partition.function = options.function;
    pm.addPass(createLoomPartition(partition));
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
    pm.addPass(createLoomCompressGradients());
    if (options.pipeline) {
      LoomSplitStagesOptions split;
      split.function = options.function;
      split.virtualStages = options.virtualStages;
      pm.addPass(createLoomSplitStages(split));
      LoomSchedulePipelineOptions sched;
      sched.schedule = options.schedule;
      sched.report = options.scheduleReport;
      sched.svg = options.scheduleSvg;
      pm.addPass(createLoomSchedulePipeline(sched));
      pm.addPass(createCanonicalizerPass());
      pm.addPass(createCSEPass());
    }
    if (options.bucketMb > 0) {
      LoomBucketAllReduceOptions bucket;
      bucket.bucketBytes =
          static_cast<uint64_t>(options.bucketMb * 1024 * 1024);
      // Overlapped: a small first bucket starts reducing while the
      // backward pass goes on (as priced: Graph::firstBucketBytes).
      if (options.overlap)
        bucket.firstBucketBytes =
            std::min<uint64_t>(bucket.bucketBytes, kFirstBucketBytes);
      pm.addPass(createLoomBucketAllReduce(bucket));
    }
  }
  pm.addPass(createLoomRematerialize());
  if (options.strategy != "none" && options.partition && options.overlap)
    pm.addPass(createLoomOverlapCollectives());
}

void mlir::loom::registerLoomPassesAndPipelines() {
  registerLoomTrainingPasses();
  registerLoomPlanPipelinePass();
  registerLoomShardingPasses();
  registerLoomStagesPasses();
  registerLoomPlannerPasses();
  registerLoomConversionPasses();
  registerLoomCodegenCPUPasses();
  registerLoomCodegenCUDAPasses();
  registerLoomExecutionPasses();
  PassPipelineRegistration<TrainingPipelineOptions>(
      "loom-training-pipeline",
      "Build the training step from a model function (what loomc --train "
      "does first)",
      buildLoomTrainingPipeline);
  PassPipelineRegistration<ShardingPipelineOptions>(
      "loom-sharding-pipeline",
      "Shard and partition the training step for a mesh (loomc --mesh/"
      "--strategy)",
      buildLoomShardingPipeline);
  PassPipelineRegistration<CpuPipelineOptions>(
      "loom-cpu-pipeline",
      "Lower loom to the LLVM dialect for CPU execution (what loom-run "
      "compiles)",
      buildLoomCpuPipeline);
  PassPipelineRegistration<CudaPipelineOptions>(
      "loom-cuda-pipeline",
      "Lower a (partitioned) step to CUDA kernels in a gpu.binary, cuBLAS "
      "calls and host code in the LLVM dialect (loomc --target=cuda)",
      buildLoomCudaPipeline);
  PassPipelineRegistration<>(
      "loom-cuda-loops-on-cpu-pipeline",
      "The CUDA pipeline's kernel loop nests lowered for the CPU (what "
      "loom-run --gpu-loops-on-cpu compiles)",
      buildLoomCudaLoopsOnCpuPipeline);
}
