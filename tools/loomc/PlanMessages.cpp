//===- PlanMessages.cpp - loomc's report of the planner's pipeline --------===//

#include "PlanMessages.h"

#include "loom/Dialect/Loom/Utils/Utils.h"
#include "loom/Planner/Cluster.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

bool loomc::clusterHasSeveralNodes(StringRef spec) {
  auto cluster = loom::planner::getCluster(spec);
  if (!cluster) {
    llvm::consumeError(cluster.takeError());
    return false;
  }
  return cluster->levels.size() >= 2 &&
         cluster->levels.front().size < cluster->numDevices();
}

void loomc::printPipelinePlan(DictionaryAttr plan, StringRef mesh,
                              llvm::raw_ostream &os) {
  int64_t microBatches = plan.getAs<IntegerAttr>("micro_batches").getInt();
  if (auto tried = plan.getAs<ArrayAttr>("tried")) {
    os << "loomc: micro-batches the planner tried (predicted step time):";
    for (Attribute t : tried) {
      auto entry = cast<ArrayAttr>(t);
      int64_t m = cast<IntegerAttr>(entry[0]).getInt();
      double s = cast<FloatAttr>(entry[1]).getValueAsDouble();
      if (s < 0)
        os << " " << m << ": no plan;";
      else
        os << llvm::formatv(" {0}: {1:f3} ms;", m, s * 1e3);
    }
    os << " chose " << microBatches << "\n";
  }
  std::string decision = loom::describePipelineDecision(plan);
  if (plan.getAs<IntegerAttr>("stages").getInt() > 1) {
    os << "loomc: the planner's pipeline: mesh " << mesh << ", schedule "
       << plan.getAs<StringAttr>("schedule").getValue() << ", "
       << microBatches << " micro-batches";
    for (auto [i, n] : llvm::enumerate(plan.getAs<ArrayAttr>("boundaries")))
      os << (i ? "," : ", --stage-boundaries=")
         << cast<StringAttr>(n).getValue();
    // The compiled step is priced again; the two must agree.
    os << llvm::formatv(
        "; predicted step time {0:f3} ms\n",
        plan.getAs<FloatAttr>("step_s").getValueAsDouble() * 1e3);
  }
  if (!decision.empty())
    os << "loomc: " << decision << "\n";
}
