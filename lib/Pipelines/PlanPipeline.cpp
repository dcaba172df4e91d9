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
#include "loom/Dialect/Loom/Utils/Utils.h"
#include "loom/Sharding/Passes.h"
#include "loom/Stages/Passes.h"
#include "loom/Training/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include <limits>
#include <map>

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

/// The planner names stage boundaries by op names (NameLoc: ONNX node
/// names, PyTorch's); a model written without them gets one per unnamed op
/// of its function, "<op>_<position>", so that every cut can be named and
/// applied. Names are locations: the program computes the same.
void nameUnnamedOps(ModuleOp module) {
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isExternal())
      continue;
    int position = 0;
    for (Operation &op : fn.getBody().front().without_terminator()) {
      ++position;
      if (!opName(&op).empty())
        continue;
      std::string name = (op.getName().stripDialect() + "_" +
                          Twine(position))
                             .str();
      op.setLoc(NameLoc::get(StringAttr::get(module.getContext(), name),
                             op.getLoc()));
    }
  }
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
                     std::string *firstError, bool pipelined = true);
  DictionaryAttr search(ModuleOp module, bool quiet, bool local);
  DictionaryAttr planPipelined(ModuleOp module, bool searching, bool quiet,
                               std::string &why);
  DictionaryAttr compare(ModuleOp module, bool searching);

  std::shared_ptr<TrainingPipelineOptions> trainingOptions;
  std::shared_ptr<ShardingPipelineOptions> shardingOptions;
};

/// Builds the step without stages on `copy` (pipelined: one micro-batch's;
/// else every micro-batch's, as compiled) and plans it;
/// the planner leaves its decision on `copy` (loom.pipeline_plan).
/// `microBatches` > 0 overrides the options' count. With `firstError`,
/// every diagnostic is kept from the user and the first error's message
/// goes there (a count the search tries and the model cannot split).
LogicalResult PlanPipelinePass::plan(ModuleOp copy, int64_t microBatches,
                                     std::string *firstError, bool pipelined) {
  MLIRContext *ctx = &getContext();
  TrainingPipelineOptions t;
  t.copyOptionValuesFrom(*trainingOptions);
  t.stages = 1;
  t.stageBoundaries.clear();
  // A pipeline's template is one micro-batch's step; a step without a
  // pipeline holds a copy per micro-batch (the program compiled when it
  // wins: one copy's price would leave out the other copies' passes).
  t.microBatches = pipelined ? 1 : std::max<int64_t>(1, microBatches);
  t.numberGradientRules = true;
  ShardingPipelineOptions s;
  s.copyOptionValuesFrom(*shardingOptions);
  s.partition = false;
  s.pipeline = false;
  s.planReport = "none";
  // plan-stages=-1 compares: the pipelines of every stage count above 1
  // (the planner's pipeline-stages=-1), and the best plan without a
  // pipeline (recorded in loom.pipeline_plan too).
  if (s.planStages < 0)
    s.planStages = pipelined ? -1 : 1;
  s.recordPlan = !pipelined;
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

/// Plans every count of kSearchedMicroBatches (`local`: from 8, toward
/// the faster neighbour while the step gets faster) and keeps the fastest
/// predicted step (the fewer micro-batches on a tie); its plan gets
/// `tried`: [[count, predicted seconds or -1 with the reason], ...].
DictionaryAttr PlanPipelinePass::search(ModuleOp module, bool quiet,
                                        bool local) {
  Builder b(&getContext());
  constexpr double kNone = std::numeric_limits<double>::infinity();
  // Count -> its plan (null: none) and predicted time; in count order.
  std::map<int64_t, std::pair<DictionaryAttr, double>> plans;
  SmallVector<Attribute> tried;
  std::string reasons;
  auto tryCount = [&](int64_t m) {
    OwningOpRef<ModuleOp> copy = module.clone();
    std::string error;
    DictionaryAttr chosen;
    if (succeeded(plan(*copy, m, &error)))
      chosen = (*copy)->getAttrOfType<DictionaryAttr>(
          LoomDialect::kPipelinePlanAttrName);
    double time =
        chosen ? chosen.getAs<FloatAttr>("step_s").getValueAsDouble() : kNone;
    if (!chosen)
      reasons += "\n  " + std::to_string(m) + ": " + error;
    tried.push_back(
        chosen ? b.getArrayAttr(
                     {b.getI64IntegerAttr(m), b.getF64FloatAttr(time)})
               : b.getArrayAttr({b.getI64IntegerAttr(m),
                                 b.getF64FloatAttr(-1),
                                 b.getStringAttr(error)}));
    plans[m] = {chosen, time};
    return time;
  };
  constexpr int n = std::size(kSearchedMicroBatches);
  if (!local) {
    for (int64_t m : kSearchedMicroBatches)
      tryCount(m);
  } else {
    // From 8 along the ladder, toward the faster neighbour, while the
    // step gets faster (the predicted time is, in practice, unimodal in
    // the count: fewer micro-batches leave a larger bubble, more run each
    // at a smaller, less efficient size).
    // Counts without a plan (they do not divide the batch, or the model
    // cannot split it) are walked through; with none found toward the
    // first direction, the other is walked from the start.
    auto walk = [&](int at, int dir, double t) {
      while (at + dir >= 0 && at + dir < n) {
        double next = tryCount(kSearchedMicroBatches[at + dir]);
        if (t != kNone && !(next < t))
          break;
        at += dir;
        t = next;
      }
      return t;
    };
    double t8 = tryCount(8), t16 = tryCount(16);
    bool upward = t16 < t8;
    double found = upward ? walk(4, 1, t16) : walk(3, -1, t8);
    if (found == kNone)
      upward ? walk(3, -1, t8) : walk(4, 1, t16);
  }
  // The fastest; the fewer micro-batches on a tie.
  DictionaryAttr best;
  double bestTime = kNone;
  for (auto &[m, entry] : plans)
    if (entry.first && entry.second < bestTime) {
      best = entry.first;
      bestTime = entry.second;
    }
  if (!best) {
    if (!quiet)
      module.emitError() << getArgument()
                         << ": no micro-batch count the search tries plans:"
                         << reasons;
    return nullptr;
  }
  llvm::sort(tried, [](Attribute x, Attribute y) {
    return cast<IntegerAttr>(cast<ArrayAttr>(x)[0]).getInt() <
           cast<IntegerAttr>(cast<ArrayAttr>(y)[0]).getInt();
  });
  NamedAttrList attrs(best);
  attrs.set("tried", b.getArrayAttr(tried));
  return attrs.getDictionary(&getContext());
}

/// The planner's pipelined plan of `module` (with `searching`, the best
/// micro-batch count's). Quiet: errors go to `why`, not to the user.
DictionaryAttr PlanPipelinePass::planPipelined(ModuleOp module,
                                               bool searching, bool quiet,
                                               std::string &why) {
  if (searching) {
    // Comparing (plan-stages=-1, loomc's default on several nodes): the
    // count searched locally; asked for (micro-batches=0): every count.
    DictionaryAttr chosen =
        search(module, quiet, /*local=*/shardingOptions->planStages < 0);
    if (!chosen)
      why = "no micro-batch count of 1, 2, 4, ... 64 has a pipelined plan";
    return chosen;
  }
  OwningOpRef<ModuleOp> copy = module.clone();
  if (failed(plan(*copy, 0, quiet ? &why : nullptr)))
    return nullptr;
  DictionaryAttr chosen = (*copy)->getAttrOfType<DictionaryAttr>(
      LoomDialect::kPipelinePlanAttrName);
  if (!chosen && !quiet)
    module.emitError() << getArgument()
                       << ": the planner chose no pipeline (give "
                          "plan-stages=0 or N, or a mesh with a pp axis)";
  return chosen;
}

/// plan-stages=-1: the best plan without a pipeline (one micro-batch, the
/// planner's search of meshes as without this pass) against the best
/// pipelined plan; the faster is returned, with the other's mesh and time
/// (`without_pipeline` or `pipelined`: a dictionary, or why there is no
/// such plan) for the report. A model without repeated layers (nothing to
/// cut into stages) has no pipelined plan.
DictionaryAttr PlanPipelinePass::compare(ModuleOp module, bool searching) {
  Builder b(&getContext());
  OwningOpRef<ModuleOp> copy = module.clone();
  std::string flatError;
  DictionaryAttr flat;
  // The micro-batches given (they bound activation memory), else one.
  int64_t count =
      searching ? 1 : std::max(1, int(shardingOptions->planMicroBatches));
  if (succeeded(plan(*copy, count, &flatError, /*pipelined=*/false)))
    flat = (*copy)->getAttrOfType<DictionaryAttr>(
        LoomDialect::kPipelinePlanAttrName);
  if (flat) {
    NamedAttrList counted(flat);
    counted.set("micro_batches", b.getI64IntegerAttr(count));
    flat = counted.getDictionary(&getContext());
  }
  auto layers = flat ? flat.getAs<IntegerAttr>("layers") : nullptr;
  if (flat && (!layers || layers.getInt() < 2)) {
    NamedAttrList result(flat);
    result.set("pipelined",
               b.getStringAttr("the model has no repeated layers to cut "
                               "into stages"));
    return result.getDictionary(&getContext());
  }
  std::string why;
  // pipeline-stages=-1: a plan found has at least 2 stages.
  DictionaryAttr piped = planPipelined(module, searching, /*quiet=*/true, why);
  if (!flat) {
    if (!piped) {
      // Neither plans: the error of the plan without a pipeline, as
      // without this pass.
      module.emitError() << (flatError.empty() ? "the planner found no plan"
                                               : flatError);
      return nullptr;
    }
    NamedAttrList won(piped);
    won.set("without_pipeline", b.getStringAttr(flatError));
    return won.getDictionary(&getContext());
  }
  double flatTime = flat.getAs<FloatAttr>("step_s").getValueAsDouble();
  if (piped && piped.getAs<FloatAttr>("step_s").getValueAsDouble() <
                    flatTime) {
    NamedAttrList won(piped);
    won.set("without_pipeline",
            b.getDictionaryAttr(
                {b.getNamedAttr("mesh", flat.get("mesh")),
                 b.getNamedAttr("step_s", flat.get("step_s"))}));
    return won.getDictionary(&getContext());
  }
  NamedAttrList result(flat);
  if (!piped) {
    result.set("pipelined", b.getStringAttr(why.empty() ? "no pipelined plan"
                                                        : why));
  } else {
    NamedAttrList other;
    for (StringRef key : {"mesh", "stages", "schedule", "micro_batches",
                          "step_s"})
      other.set(key, piped.get(key));
    result.set("pipelined", other.getDictionary(&getContext()));
  }
  return result.getDictionary(&getContext());
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
  nameUnnamedOps(module);
  // Micro-batches 0: the planner chooses their count too.
  bool searching = shardingOptions->planMicroBatches == 0 ||
                   trainingOptions->splitMicroBatches == 0;
  DictionaryAttr chosen;
  if (shardingOptions->planStages < 0) {
    chosen = compare(module, searching);
    if (!chosen)
      return signalPassFailure();
    // No pipeline: the plan is recorded; the sharding pipeline plans the
    // step as it plans any step without stages.
    if (chosen.getAs<IntegerAttr>("stages").getInt() == 1) {
      module->setAttr(LoomDialect::kPipelinePlanAttrName, chosen);
      return;
    }
  } else {
    std::string why;
    chosen = planPipelined(module, searching, /*quiet=*/false, why);
    if (!chosen)
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
