//===- PlanPipeline.cpp - loom-plan-pipeline ------------------------------===//
//
// The planner's pipeline decision, taken on the model before its training
// step is built. Stages are cut in the forward model (loom-assign-stages)
// and the step is built from those stages, but the planner prices a built
// step; so this pass builds one micro-batch's step without stages on a copy
// (the training pipeline), plans it with the pipeline search
// (loom-auto-shard, no partitioning), and writes what the planner chose
// into the model itself:
//
//   - the mesh (loom.mesh, when neither the model nor the options give one),
//   - the stages (loom.stage on every forward op, through loom-assign-stages
//     with the planner's boundaries),
//   - loom.pipeline_plan = {mesh, stages, schedule, micro_batches,
//     boundaries, step_s}: the schedule loom-schedule-pipeline emits and
//     the planner prices again on the staged step.
//
// The training and sharding pipelines then run on the model as usual, in
// the same process: loomc is this pass followed by those pipelines, and
// loom-opt reproduces it with the same three steps.
//
//===----------------------------------------------------------------------===//

#include "loom/Pipelines/Pipelines.h"

#include "loom/Dialect/Loom/IR/LoomDialect.h"
#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Sharding/Passes.h"
#include "loom/Stages/Passes.h"
#include "loom/Training/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::loom;

namespace {

/// Options as text without the braces PassOptions::print puts around them.
template <typename T>
std::string optionsText(const T &options) {
  std::string text;
  llvm::raw_string_ostream os(text);
  options.print(os);
  StringRef s = StringRef(text).trim();
  if (s.consume_front("{"))
    s.consume_back("}");
  return s.trim().str();
}

/// NAME=SIZE,... without the axes of size 1.
std::string dropUnitAxes(StringRef mesh) {
  SmallVector<StringRef> axes;
  mesh.split(axes, ',', -1, false);
  std::string out;
  for (StringRef a : axes)
    if (a.split('=').second.trim() != "1")
      out += (out.empty() ? "" : ",") + a.trim().str();
  return out;
}

struct PlanPipelinePass
    : PassWrapper<PlanPipelinePass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(PlanPipelinePass)

  PlanPipelinePass() = default;
  PlanPipelinePass(const PlanPipelinePass &other) : PassWrapper(other) {}
  PlanPipelinePass(const TrainingPipelineOptions &t,
                   const ShardingPipelineOptions &s) {
    training = optionsText(t);
    sharding = optionsText(s);
    trainingOptions = std::make_shared<TrainingPipelineOptions>();
    trainingOptions->copyOptionValuesFrom(t);
    shardingOptions = std::make_shared<ShardingPipelineOptions>();
    shardingOptions->copyOptionValuesFrom(s);
  }

  StringRef getArgument() const final { return "loom-plan-pipeline"; }
  StringRef getDescription() const final {
    return "Plan pipeline stages on a copy of the model (its step built "
           "by the training pipeline, planned by the sharding pipeline's "
           "planner) and write the planner's mesh, stages (loom.stage) and "
           "schedule (loom.pipeline_plan) into the model";
  }

  void getDependentDialects(DialectRegistry &registry) const final {
    // The copy's pipelines load what they need before they run; loading
    // it here keeps that out of this pass's execution.
    OpPassManager pm(ModuleOp::getOperationName());
    TrainingPipelineOptions t;
    ShardingPipelineOptions s;
    s.strategy = "auto";
    buildLoomTrainingPipeline(pm, t);
    buildLoomShardingPipeline(pm, s);
    pm.getDependentDialects(registry);
  }

  void runOnOperation() final;

  Option<std::string> training{
      *this, "training",
      llvm::cl::desc("--loom-training-pipeline's options (in braces)"),
      llvm::cl::init("")};
  Option<std::string> sharding{
      *this, "sharding",
      llvm::cl::desc("--loom-sharding-pipeline's options (in braces): "
                     "strategy=auto and the planner's (cluster, "
                     "plan-stages, plan-micro-batches, plan-schedule, ...)"),
      llvm::cl::init("")};

private:
  LogicalResult plan(ModuleOp copy, int64_t microBatches,
                     std::string *firstError);
  DictionaryAttr search(ModuleOp module);

  std::shared_ptr<TrainingPipelineOptions> trainingOptions;
  std::shared_ptr<ShardingPipelineOptions> shardingOptions;
};

/// Builds one micro-batch's step without stages on `copy` and plans it;
/// the planner leaves its decision on `copy` (loom.pipeline_plan).
/// `microBatches` > 0 overrides the options' count. With `firstError`,
/// every diagnostic is kept from the user and the first error's message
/// goes there (a count the search tries and the model cannot split).
LogicalResult PlanPipelinePass::plan(ModuleOp copy, int64_t microBatches,
                                     std::string *firstError) {
  MLIRContext *ctx = &getContext();
  TrainingPipelineOptions t;
  t.copyOptionValuesFrom(*trainingOptions);
  t.stages = 1;
  t.stageBoundaries.clear();
  t.microBatches = 1;
  t.numberGradientRules = true;
  ShardingPipelineOptions s;
  s.copyOptionValuesFrom(*shardingOptions);
  s.partition = false;
  s.pipeline = false;
  s.planReport = "none";
  if (microBatches > 0) {
    t.splitMicroBatches = static_cast<unsigned>(microBatches);
    s.planMicroBatches = static_cast<int>(microBatches);
  }
  PassManager pm(ctx);
  buildLoomTrainingPipeline(pm, t);
  buildLoomShardingPipeline(pm, s);
  // The model's remarks (inferred buffers, ...) come once, from the step
  // that is compiled; errors go on (or, searching, to `firstError`).
  ScopedDiagnosticHandler quiet(ctx, [&](Diagnostic &d) {
    if (!firstError)
      return success(d.getSeverity() == DiagnosticSeverity::Remark);
    if (d.getSeverity() == DiagnosticSeverity::Error && firstError->empty())
      *firstError = d.str();
    return success();
  });
  return pm.run(copy);
}

/// The micro-batch counts a search tries: the batch split in 1, 2, 4, ...
/// 64 (a count that does not divide it fails to split and is skipped).
static constexpr int64_t kSearchedMicroBatches[] = {1, 2, 4, 8, 16, 32, 64};

/// Plans every count of kSearchedMicroBatches and keeps the fastest
/// predicted step (the fewer micro-batches on a tie); its plan gets
/// `tried`: [[count, predicted seconds or -1 with the reason], ...].
DictionaryAttr PlanPipelinePass::search(ModuleOp module) {
  Builder b(&getContext());
  DictionaryAttr best;
  double bestTime = 0;
  SmallVector<Attribute> tried;
  std::string reasons;
  for (int64_t m : kSearchedMicroBatches) {
    OwningOpRef<ModuleOp> copy = module.clone();
    std::string error;
    DictionaryAttr chosen;
    if (succeeded(plan(*copy, m, &error)))
      chosen = (*copy)->getAttrOfType<DictionaryAttr>(
          LoomDialect::kPipelinePlanAttrName);
    if (!chosen) {
      tried.push_back(b.getArrayAttr({b.getI64IntegerAttr(m),
                                      b.getF64FloatAttr(-1),
                                      b.getStringAttr(error)}));
      reasons += "\n  " + std::to_string(m) + ": " + error;
      continue;
    }
    double time = chosen.getAs<FloatAttr>("step_s").getValueAsDouble();
    tried.push_back(b.getArrayAttr(
        {b.getI64IntegerAttr(m), b.getF64FloatAttr(time)}));
    if (!best || time < bestTime) {
      best = chosen;
      bestTime = time;
    }
  }
  if (!best) {
    module.emitError() << getArgument()
                       << ": no micro-batch count the search tries plans:"
                       << reasons;
    return nullptr;
  }
  NamedAttrList attrs(best);
  attrs.set("tried", b.getArrayAttr(tried));
  return attrs.getDictionary(&getContext());
}

void PlanPipelinePass::runOnOperation() {
  ModuleOp module = getOperation();
  if (!trainingOptions) {
    trainingOptions = TrainingPipelineOptions::createFromString(training);
    shardingOptions = ShardingPipelineOptions::createFromString(sharding);
    if (!trainingOptions || !shardingOptions) {
      module.emitError() << getArgument() << ": cannot parse its "
                         << (trainingOptions ? "sharding" : "training")
                         << " options";
      return signalPassFailure();
    }
  }
  if (shardingOptions->strategy != "auto") {
    module.emitError() << getArgument() << ": the planner chooses the stages "
                       << "(sharding={strategy=auto ...}), not strategy="
                       << shardingOptions->strategy;
    return signalPassFailure();
  }
  bool annotated = false;
  module->walk([&](Operation *op) {
    annotated |= op->hasAttr(LoomDialect::kStageAttrName);
  });
  if (annotated) {
    module.emitError() << getArgument()
                       << ": the model's loom.stage annotations fix its "
                          "stages; the planner plans stages for a model "
                          "without them";
    return signalPassFailure();
  }
  // Micro-batches 0: the planner chooses their count too.
  bool searching = shardingOptions->planMicroBatches == 0 ||
                   trainingOptions->splitMicroBatches == 0;
  DictionaryAttr chosen;
  if (searching) {
    chosen = search(module);
    if (!chosen)
      return signalPassFailure();
  } else {
    OwningOpRef<ModuleOp> copy = module.clone();
    if (failed(plan(*copy, 0, nullptr)))
      return signalPassFailure();
    chosen = (*copy)->getAttrOfType<DictionaryAttr>(
        LoomDialect::kPipelinePlanAttrName);
  }
  if (!chosen) {
    module.emitError() << getArgument()
                       << ": the planner chose no pipeline (give "
                          "plan-stages=0 or N, or a mesh with a pp axis)";
    return signalPassFailure();
  }
  std::string mesh =
      dropUnitAxes(chosen.getAs<StringAttr>("mesh").getValue());
  int64_t stages = chosen.getAs<IntegerAttr>("stages").getInt();
  OpPassManager apply(ModuleOp::getOperationName());
  if (module.getOps<MeshOp>().empty() && shardingOptions->mesh.empty()) {
    LoomCreateMeshOptions m;
    m.mesh = mesh;
    apply.addPass(createLoomCreateMesh(m));
  }
  if (stages > 1) {
    LoomAssignStagesOptions a;
    a.stages = static_cast<unsigned>(stages);
    for (Attribute name : chosen.getAs<ArrayAttr>("boundaries"))
      a.boundaries.push_back(cast<StringAttr>(name).str());
    if (a.boundaries.size() + 1 != size_t(stages) ||
        llvm::is_contained(a.boundaries, "?")) {
      module.emitError() << getArgument() << ": the planner's stage "
                         << "boundaries do not all name an op of the model; "
                            "give the stages (stage-boundaries)";
      return signalPassFailure();
    }
    apply.addPass(createLoomAssignStages(a));
  }
  if (failed(runPipeline(apply, module)))
    return signalPassFailure();
  NamedAttrList attrs(chosen);
  attrs.set("mesh", StringAttr::get(&getContext(), mesh));
  module->setAttr(LoomDialect::kPipelinePlanAttrName,
                  attrs.getDictionary(&getContext()));
}

} // namespace

std::unique_ptr<Pass>
mlir::loom::createLoomPlanPipeline(const TrainingPipelineOptions &training,
                                   const ShardingPipelineOptions &sharding) {
  return std::make_unique<PlanPipelinePass>(training, sharding);
}

void mlir::loom::registerLoomPlanPipelinePass() {
  PassRegistration<PlanPipelinePass>();
}
