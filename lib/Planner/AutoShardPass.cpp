//===- AutoShardPass.cpp - loom-auto-shard --------------------------------===//

#include "loom/Planner/AutoShard.h"
#include "loom/Planner/Passes.h"

#include "loom/Dialect/Loom/Utils/Utils.h"
#include "loom/Dialect/Loom/IR/LoomDialect.h"

#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/ToolOutputFile.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMAUTOSHARD
#include "loom/Planner/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {
/// The pipeline the planner chose for a step without stages (its search, or
/// the stages of a pp mesh), for loom-plan-pipeline to apply: the stage
/// boundaries as op names (what loom-assign-stages takes) besides
/// loom.pipeline_plan's keys.
void writePipelinePlan(ModuleOp module, const planner::Plan &plan) {
  Builder b(module.getContext());
  const planner::PipelineInfo &pi = plan.pipeline;
  SmallVector<StringRef> cuts;
  StringRef(pi.boundaries).split(cuts, ',', -1, false);
  SmallVector<Attribute> names;
  for (StringRef c : cuts)
    names.push_back(b.getStringAttr(c));
  NamedAttrList attrs;
  attrs.set("mesh", b.getStringAttr(plan.mesh));
  attrs.set("stages", b.getI64IntegerAttr(pi.stages));
  attrs.set("schedule", b.getStringAttr(pi.stages > 1 ? pi.schedule : "none"));
  attrs.set("micro_batches", b.getI64IntegerAttr(std::max(1, pi.microBatches)));
  attrs.set("boundaries", b.getArrayAttr(names));
  attrs.set("step_s", b.getF64FloatAttr(plan.stepTime));
  attrs.set("layers", b.getI64IntegerAttr(plan.layers));
  module->setAttr(LoomDialect::kPipelinePlanAttrName,
                  attrs.getDictionary(module.getContext()));
}

struct AutoShardPass : loom::impl::LoomAutoShardBase<AutoShardPass> {
  using LoomAutoShardBase::LoomAutoShardBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<func::FuncOp> fn =
        loom::lookupFunction(module, function, getArgument());
    if (failed(fn))
      return signalPassFailure();
    std::string mode = report;
    if (mode != "none" && mode != "text" && mode != "json") {
      module.emitError() << "loom-auto-shard: report must be none, text or "
                            "json, not '"
                         << mode << "'";
      return signalPassFailure();
    }
    planner::PlannerOptions options;
    options.cluster = cluster;
    options.fixedMesh = fixedMesh;
    options.memoryLimit = memoryLimitGiB * 1024.0 * 1024 * 1024;
    options.timeLimit = timeLimit;
    if (remat == "search")
      options.remat = -1;
    else if (remat == "none")
      options.remat = 0;
    else if (remat == "layers")
      options.remat = 1;
    else {
      module.emitError() << "loom-auto-shard: remat must be search, none or "
                            "layers, not '" << remat << "'";
      return signalPassFailure();
    }
    options.optimizerStates = optimizerStates;
    options.compareMegatron = compareMegatron;
    if (meshAxes != 0 && meshAxes != 2 && meshAxes != 3) {
      module.emitError() << "loom-auto-shard: mesh-axes must be 0 (by the "
                            "cluster's link levels), 2 or 3, not "
                         << int(meshAxes);
      return signalPassFailure();
    }
    options.meshAxes = meshAxes;
    options.bruteForce = bruteForce;
    options.preset = preset;
    options.dpAxis = dpAxis;
    options.tpAxis = tpAxis;
    options.pipelineStages = pipelineStages;
    int64_t planned = microBatches;
    if (failed(resolvePlannedMicroBatches(module, planned, getArgument(),
                                          "micro-batches")))
      return signalPassFailure();
    options.microBatches = static_cast<int>(planned);
    options.bucketBytes = std::max(0.0, double(bucketMb)) * 1024.0 * 1024;
    options.overlap = overlap;
    options.schedule = schedule;
    // A step whose stages loom-plan-pipeline chose runs the schedule it
    // chose with them.
    if (auto chosen = module->getAttrOfType<DictionaryAttr>(
            LoomDialect::kPipelinePlanAttrName);
        chosen && options.schedule.empty() &&
        chosen.getAs<IntegerAttr>("stages").getInt() > 1)
      options.schedule = chosen.getAs<StringAttr>("schedule").str();
    std::string error;
    FailureOr<planner::Plan> plan =
        planner::autoShard(module, *fn, options, error);
    if (failed(plan)) {
      fn->emitError() << "loom-auto-shard: " << error;
      return signalPassFailure();
    }
    // The planner's decision, for loom-overlap-collectives.
    if (overlap)
      module->setAttr(LoomDialect::kOverlapAttrName,
                      BoolAttr::get(module.getContext(), plan->overlap));
    if ((plan->pipelineConfigs > 0 && !plan->pipeline.stagesFromProgram) ||
        (recordPlan && plan->pipelineConfigs == 0))
      writePipelinePlan(module, *plan);
    // loom-plan-pipeline's comparison, for the report.
    plan->pipelineDecision = describePipelineDecision(
        module->getAttrOfType<DictionaryAttr>(
            LoomDialect::kPipelinePlanAttrName));
    if (mode == "none")
      return;
    std::string err;
    auto out = openOutputFile(reportFile, &err);
    if (!out) {
      module.emitError() << "loom-auto-shard: " << err;
      return signalPassFailure();
    }
    if (mode == "json")
      planner::printPlanJson(*plan, out->os());
    else
      planner::printPlan(*plan, out->os());
    out->keep();
  }
};
} // namespace
