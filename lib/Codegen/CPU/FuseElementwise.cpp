//===- FuseElementwise.cpp - Elementwise fusion that spares contractions --===//

#include "loom/Codegen/CPU/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "loom/Support/Debug.h"

#define DEBUG_TYPE "loom-fuse-elementwise"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMFUSEELEMENTWISE
#include "loom/Codegen/CPU/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;

namespace {

bool allParallel(linalg::GenericOp op) {
  return llvm::all_of(op.getIteratorTypesArray(), [](utils::IteratorType t) {
    return t == utils::IteratorType::parallel;
  });
}

struct FuseElementwisePass
    : loom::impl::LoomFuseElementwiseBase<FuseElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::ControlFusionFn control = [](OpOperand *operand) {
      auto producer = operand->get().getDefiningOp<linalg::GenericOp>();
      auto consumer = dyn_cast<linalg::GenericOp>(operand->getOwner());
      if (!producer || !consumer || !allParallel(producer))
        return false;
      // A producer used elsewhere too would be computed twice.
      return producer->getResult(0).hasOneUse();
    };
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    auto countGenerics = [&] {
      int n = 0;
      getOperation().walk([&](linalg::GenericOp) { ++n; });
      return n;
    };
    LLVM_DEBUG(llvm::dbgs() << "fuse-elementwise: " << countGenerics()
                            << " linalg.generic before\n");
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
    LLVM_DEBUG(llvm::dbgs() << "fuse-elementwise: " << countGenerics()
                            << " after\n");
  }
};

} // namespace
