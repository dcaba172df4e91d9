//===- MarkRemat.cpp - loom-mark-remat ------------------------------------===//
//
// Rematerialization on request (loomc --remat=layers|full): the planner's
// repeated-layer detection marks the segments loom-rematerialize recomputes.
//
//===----------------------------------------------------------------------===//

#include "loom/Planner/ApplyPlan.h"
#include "loom/Planner/Graph.h"
#include "loom/Planner/Passes.h"

#include "loom/Dialect/Loom/IR/LoomDialect.h"
#include "loom/Dialect/Loom/Utils/Utils.h"
#include "loom/Support/Debug.h"

#define DEBUG_TYPE "loom-mark-remat"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMMARKREMAT
#include "loom/Planner/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {
struct MarkRematPass : loom::impl::LoomMarkRematBase<MarkRematPass> {
  using LoomMarkRematBase::LoomMarkRematBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (mode != "layers" && mode != "full") {
      module.emitError() << "loom-mark-remat: mode must be layers or full, "
                            "not '" << mode << "'";
      return signalPassFailure();
    }
    FailureOr<func::FuncOp> fn =
        loom::lookupFunction(module, function, getArgument());
    if (failed(fn) || failed(verifyLossFunction(*fn, getArgument())))
      return signalPassFailure();
    planner::Graph g = planner::buildGraph(*fn, /*defaultStates=*/2);
    planner::coarsen(g);
    if (g.layers < 1 && mode == "layers") {
      fn->emitWarning() << "loom-mark-remat: no repeated layers in @"
                        << fn->getSymName()
                        << ": nothing to rematerialize (mode=full recomputes "
                           "the whole forward pass)";
      return;
    }
    int marked =
        planner::markRematerializedLayers(g, 1.0, /*others=*/mode == "full");
    LLVM_DEBUG(llvm::dbgs() << "marked " << marked << " of " << g.layers
                            << " repeated layers (" << g.period
                            << " ops each)\n");
  }
};
} // namespace
