//===- PlanMessages.h - loomc's report of the planner's pipeline -*- C++ -*-===//
//
// What loomc prints about loom-plan-pipeline's decision, and when it asks
// for one by default. Helpers without loomc's flags.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOOLS_LOOMC_PLANMESSAGES_H
#define LOOM_TOOLS_LOOMC_PLANMESSAGES_H

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/raw_ostream.h"

namespace loomc {

/// Whether the cluster (a preset or a file) has several nodes: a link
/// level above the innermost. A cluster that does not load has none (the
/// planner names its error).
bool clusterHasSeveralNodes(llvm::StringRef spec);

/// loom.pipeline_plan as loomc's lines: the micro-batch counts tried (if
/// searched), the pipeline (mesh `mesh`, schedule, stage boundaries,
/// predicted step time) and the comparison with the plan without one.
void printPipelinePlan(mlir::DictionaryAttr plan, llvm::StringRef mesh,
                       llvm::raw_ostream &os);

} // namespace loomc

#endif // LOOM_TOOLS_LOOMC_PLANMESSAGES_H
