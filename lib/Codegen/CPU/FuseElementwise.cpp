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

/// A producer that other ops read too, fused into an elementwise consumer
/// as one more result of it: computed once, written once, and the consumer
/// does not read it back (an optimizer's moment, stored and used by the
/// weight update, becomes one op with the update). Upstream's pattern
/// would compute it twice (it keeps the producer for its other users);
/// here those users read the fused op's result instead, which needs them
/// after the consumer. Into a reduction it would be recomputed per use
/// (its extra result could not be indexed by the reduction): not fused.
struct FuseSharedProducer : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(linalg::GenericOp consumer,
                                PatternRewriter &rewriter) const override {
    if (!allParallel(consumer) || !consumer.hasPureTensorSemantics())
      return failure();
    for (OpOperand *operand : consumer.getDpsInputOperands()) {
      auto producer = operand->get().getDefiningOp<linalg::GenericOp>();
      if (!producer || producer->getNumResults() != 1 ||
          producer->getResult(0).hasOneUse() || !allParallel(producer) ||
          !linalg::areElementwiseOpsFusable(operand))
        continue;
      Value shared = producer->getResult(0);
      bool later = llvm::all_of(shared.getUsers(), [&](Operation *user) {
        return user == consumer ||
               (user->getBlock() == consumer->getBlock() &&
                consumer->isBeforeInBlock(user));
      });
      // Read twice by the consumer itself: fused once, the other read stays.
      if (!later || llvm::count_if(consumer->getOperands(),
                                   [&](Value v) { return v == shared; }) != 1)
        continue;
      FailureOr<linalg::ElementwiseOpFusionResult> fused =
          linalg::fuseElementwiseOps(rewriter, operand);
      if (failed(fused) || !fused->replacements.count(shared))
        return failure();
      for (auto [from, to] : fused->replacements)
        rewriter.replaceUsesWithIf(from, to, [&](OpOperand &use) {
          return use.getOwner() != fused->fusedOp;
        });
      rewriter.eraseOp(consumer);
      rewriter.eraseOp(producer);
      return success();
    }
    return failure();
  }
};

struct FuseElementwisePass
    : loom::impl::LoomFuseElementwiseBase<FuseElementwisePass> {
  using Base::Base;
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
    if (sharedProducers)
      patterns.add<FuseSharedProducer>(&getContext());
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
