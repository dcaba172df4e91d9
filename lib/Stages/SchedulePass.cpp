//===- SchedulePass.cpp - loom-schedule-pipeline --------------------------===//

#include "loom/Stages/Passes.h"
#include "loom/Stages/Schedule.h"

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMSCHEDULEPIPELINE
#include "loom/Stages/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::stages;

namespace {

struct SchedulePipelinePass
    : loom::impl::LoomSchedulePipelineBase<SchedulePipelinePass> {
  using LoomSchedulePipelineBase::LoomSchedulePipelineBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto pipe =
        module->getAttrOfType<DictionaryAttr>(LoomDialect::kPipelineAttrName);
    auto get = [&](StringRef key) -> int64_t {
      auto a = pipe ? pipe.getAs<IntegerAttr>(key) : IntegerAttr();
      return a ? a.getInt() : -1;
    };
    PipelineShape shape{int(get("ranks")), int(get("virtual_stages")),
                        int(get("micro_batches"))};
    if (shape.ranks < 1 || shape.virtualStages < 1 || shape.microBatches < 1) {
      module.emitError() << getArgument()
                         << ": the module is not split into stages (run "
                            "loom-split-stages first)";
      return signalPassFailure();
    }
    // Stages loom-plan-pipeline chose run the schedule it priced with them;
    // a schedule asked for besides it must be that one.
    std::string name = schedule.empty() ? "1f1b" : schedule.getValue();
    if (auto chosen = module->getAttrOfType<DictionaryAttr>(
            LoomDialect::kPipelinePlanAttrName)) {
      StringRef planned = chosen.getAs<StringAttr>("schedule").getValue();
      if (!schedule.empty() && planned != schedule) {
        module.emitError() << getArgument() << ": schedule=" << schedule
                           << ", but the planner chose these stages for the "
                           << planned << " schedule (loom.pipeline_plan)";
        return signalPassFailure();
      }
      name = planned.str();
    }
    std::string error;
    std::optional<Schedule> s = buildSchedule(name, shape, error);
    std::optional<Timeline> t;
    if (s)
      t = simulate(*s, shape, Durations::uniform(shape.stages()), error);
    if (!t) {
      module.emitError() << getArgument() << ": " << error;
      return signalPassFailure();
    }
    Builder b(&getContext());
    SmallVector<Attribute> ranks;
    for (const std::vector<Action> &list : *s) {
      SmallVector<Attribute> actions;
      for (const Action &a : list)
        actions.push_back(b.getStringAttr(toString(a)));
      ranks.push_back(b.getArrayAttr(actions));
    }
    NamedAttrList attrs(pipe);
    attrs.set("schedule", b.getStringAttr(name));
    attrs.set("actions", b.getArrayAttr(ranks));
    attrs.set("bubble", b.getF64FloatAttr(t->bubble));
    module->setAttr(LoomDialect::kPipelineAttrName,
                    attrs.getDictionary(&getContext()));
    if (report) {
      llvm::outs() << "pipeline schedule " << name << " (forward 1, "
                   << "backward 2 time units per stage):\n";
      printTimeline(*t, shape, llvm::outs());
      for (auto [r, list] : llvm::enumerate(*s)) {
        llvm::outs() << "  rank " << r << ":";
        for (const Action &a : list)
          llvm::outs() << " " << toString(a);
        llvm::outs() << "\n";
      }
    }
    if (!svg.empty()) {
      std::error_code ec;
      llvm::raw_fd_ostream os(svg, ec, llvm::sys::fs::OF_Text);
      if (ec) {
        module.emitError() << getArgument() << ": cannot write " << svg
                           << ": " << ec.message();
        return signalPassFailure();
      }
      writeSvg(*t, shape, os);
    }
  }
};

} // namespace
