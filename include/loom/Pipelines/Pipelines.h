//===- Pipelines.h - Loom's named pass pipelines ----------------*- C++ -*-===//
//
// The compiler's stages as pass pipelines registered by name, so that
// loom-opt runs exactly what loomc runs (as IREE's Pipelines/ does; loomc
// only parses flags and builds these):
//
//   [--loom-plan-pipeline]     model -> model with the planner's stages,
//                              mesh and schedule (PlanPipeline.cpp)
//   --loom-training-pipeline   model -> @train_step (Training/Passes.h)
//   --loom-sharding-pipeline   @train_step -> the per-device program:
//                              mesh, strategy or planner, partition,
//                              bucketing (below)
//   --loom-cpu-pipeline        loom -> LLVM dialect (Codegen/CPU/Passes.h)
//
// followed, for an artifact, by --loom-export-parameters=dir=DIR.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PIPELINES_PIPELINES_H
#define LOOM_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <string>

namespace mlir::loom {

/// Options of `--loom-sharding-pipeline` (and of loomc's flags).
struct ShardingPipelineOptions
    : public PassPipelineOptions<ShardingPipelineOptions> {
  Option<std::string> function{
      *this, "function", llvm::cl::desc("The training step"),
      llvm::cl::init("train_step")};
  Option<std::string> mesh{
      *this, "mesh",
      llvm::cl::desc("Create this mesh, NAME=SIZE[,NAME=SIZE...] (empty: "
                     "the module's)"),
      llvm::cl::init("")};
  Option<std::string> strategy{
      *this, "strategy",
      llvm::cl::desc("none, annotated (the model's shardings), file "
                     "(shard-file), auto (the planner), or a preset: dp, "
                     "tp, dp-tp, zero1, zero2, zero3, replicated"),
      llvm::cl::init("none")};
  Option<std::string> shardFile{*this, "shard-file",
                                llvm::cl::desc("strategy=file: the file"),
                                llvm::cl::init("")};
  Option<std::string> dpAxis{*this, "dp-axis",
                             llvm::cl::desc("Data-parallel mesh axis"),
                             llvm::cl::init("dp")};
  Option<std::string> tpAxis{*this, "tp-axis",
                             llvm::cl::desc("Tensor-parallel mesh axis"),
                             llvm::cl::init("tp")};
  // The planner (strategy=auto).
  Option<std::string> cluster{*this, "cluster",
                              llvm::cl::desc("Cluster preset or JSON file"),
                              llvm::cl::init("cpu-local")};
  Option<bool> fixedMesh{
      *this, "fixed-mesh",
      llvm::cl::desc("Plan for the module's mesh instead of choosing one"),
      llvm::cl::init(false)};
  Option<double> memoryLimitGiB{
      *this, "memory-limit-gib",
      llvm::cl::desc("Per-device memory limit (default: 90% of the device's)"),
      llvm::cl::init(0)};
  Option<double> planTimeLimit{*this, "plan-time-limit",
                               llvm::cl::desc("Seconds per ILP"),
                               llvm::cl::init(20)};
  Option<int> planMeshAxes{
      *this, "plan-mesh-axes",
      llvm::cl::desc("Most axes of a mesh the planner chooses: 2 or 3 (0: 3 "
                     "when the cluster has 3 or more link levels, else 2)"),
      llvm::cl::init(0)};
  Option<bool> compareMegatron{
      *this, "compare-megatron",
      llvm::cl::desc("Also price every DP x TP Megatron plan"),
      llvm::cl::init(false)};
  Option<std::string> planReport{*this, "plan-report",
                                 llvm::cl::desc("none, text or json"),
                                 llvm::cl::init("none")};
  Option<std::string> planReportFile{
      *this, "plan-report-file",
      llvm::cl::desc("Where the planner's report goes (- for stdout)"),
      llvm::cl::init("-")};
  // Rematerialization.
  Option<std::string> remat{
      *this, "remat",
      llvm::cl::desc("Recompute activations in the backward pass: auto (the "
                     "planner's choice under strategy=auto, else none), "
                     "none, layers (every repeated layer keeps only its "
                     "input), full (also the ops around the layers)"),
      llvm::cl::init("auto")};
  // The program.
  Option<bool> partition{
      *this, "partition",
      llvm::cl::desc("Partition (false: stop with the shardings chosen)"),
      llvm::cl::init(true)};
  // Pipeline stages (a step built from a model with loom.stage).
  Option<bool> pipeline{
      *this, "pipeline",
      llvm::cl::desc("Split the step into per-stage programs and schedule "
                     "them (loom-split-stages, loom-schedule-pipeline)"),
      llvm::cl::init(false)};
  Option<unsigned> virtualStages{
      *this, "virtual-stages",
      llvm::cl::desc("Stages per pipeline rank (interleaved)"),
      llvm::cl::init(1)};
  Option<std::string> schedule{
      *this, "schedule",
      llvm::cl::desc("gpipe, 1f1b, interleaved or zb-h1 (default: the "
                     "module's loom.pipeline_plan, else 1f1b)"),
      llvm::cl::init("")};
  // The planner's pipeline search (loom-auto-shard pipeline-stages).
  Option<int> planStages{
      *this, "plan-stages",
      llvm::cl::desc("With strategy=auto: 1 no pipeline search; 0 every stage "
                     "count; N exactly N (reported, not written); -1 "
                     "(loom-plan-pipeline only) every stage count, kept only "
                     "when faster than the best plan without a pipeline"),
      llvm::cl::init(1)};
  Option<bool> recordPlan{
      *this, "record-plan",
      llvm::cl::desc("loom-auto-shard writes loom.pipeline_plan for a plan "
                     "without a pipeline too (loom-plan-pipeline's "
                     "comparison)"),
      llvm::cl::init(false)};
  Option<int> planMicroBatches{
      *this, "plan-micro-batches",
      llvm::cl::desc("With plan-stages: micro-batches per step (0: "
                     "loom-plan-pipeline searches 1, 2, 4, ... 64; after it, "
                     "the count of loom.pipeline_plan)"),
      llvm::cl::init(1)};
  Option<std::string> planSchedule{
      *this, "plan-schedule",
      llvm::cl::desc("With plan-stages: the schedule to price (default: "
                     "gpipe, 1f1b and zb-h1)"),
      llvm::cl::init("")};
  Option<bool> scheduleReport{
      *this, "schedule-report",
      llvm::cl::desc("Print the schedule's timeline and bubble"),
      llvm::cl::init(false)};
  Option<std::string> scheduleSvg{
      *this, "schedule-svg",
      llvm::cl::desc("Draw the schedule's timeline into this SVG file"),
      llvm::cl::init("")};
  Option<double> bucketMb{
      *this, "bucket-mb",
      llvm::cl::desc("Fuse all-reduces into buckets of this many MiB (0: off)"),
      llvm::cl::init(25.0)};
  Option<bool> overlap{
      *this, "overlap",
      llvm::cl::desc("Start gradient reductions and weight gathers early and "
                     "wait where their results are read "
                     "(loom-overlap-collectives)"),
      llvm::cl::init(true)};
};

/// @train_step with shardings (or a mesh to plan for) -> the per-device
/// program: [loom-create-mesh], one of loom-apply-strategy /
/// loom-apply-shard-file / loom-auto-shard, then loom-partition,
/// canonicalize, cse and loom-bucket-all-reduce; then loom-rematerialize
/// and loom-overlap-collectives
/// (with loom-mark-remat first where rematerialization is asked for
/// outside the planner).
void buildLoomShardingPipeline(OpPassManager &pm,
                               const ShardingPipelineOptions &options);

struct TrainingPipelineOptions;

/// loom-plan-pipeline (PlanPipeline.cpp): on the model, before the training
/// pipeline, the planner's pipeline search on a copy (the training pipeline
/// without stages, then the sharding pipeline's planner), its decision
/// written into the model: the mesh, loom.stage on the forward ops and
/// loom.pipeline_plan (the schedule). loom-opt takes the two pipelines'
/// options as `training={...} sharding={...}`.
std::unique_ptr<Pass>
createLoomPlanPipeline(const TrainingPipelineOptions &training,
                       const ShardingPipelineOptions &sharding);
void registerLoomPlanPipelinePass();

/// Registers every Loom pass and the named pipelines above.
void registerLoomPassesAndPipelines();

} // namespace mlir::loom

#endif // LOOM_PIPELINES_PIPELINES_H
