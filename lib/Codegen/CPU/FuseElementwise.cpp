//===- FuseElementwise.cpp - Elementwise fusion that spares contractions --===//

#include "loom/Codegen/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"
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

/// Whether `operand` reads its producer broadcast (fewer loops than the
/// consumer's: a scalar or a row) and the producer's body is costly
/// (transcendental math or f64 arithmetic: Adam's bias corrections, a
/// normalization's rsqrt). Fused, it would be recomputed for every
/// element of the consumer (52 million powf in f64 for an embedding's
/// update); kept, it is one small loop whose result the consumer reads.
bool costlyBroadcast(OpOperand *operand, linalg::GenericOp producer) {
  auto consumer = cast<linalg::GenericOp>(operand->getOwner());
  if (consumer.getMatchingIndexingMap(operand).isPermutation())
    return false;
  return producer.getBody()
      ->walk([](Operation *op) {
        bool f64 = llvm::any_of(op->getResultTypes(),
                                [](Type t) { return t.isF64(); });
        if (isa<math::MathDialect>(op->getDialect()) ||
            (f64 && isa<arith::DivFOp, arith::RemFOp, arith::MulFOp,
                        arith::AddFOp, arith::SubFOp>(op)))
          return WalkResult::interrupt();
        return WalkResult::advance();
      })
      .wasInterrupted();
}

/// A producer that other ops read too, fused into an elementwise consumer
/// as one more result of it: computed once, written once, and the consumer
/// does not read it back (an optimizer's moment, stored and used by the
/// weight update, becomes one op with the update). Upstream's pattern
/// would compute it twice (it keeps the producer for its other users);
/// here those users read the fused op's result instead, which needs them
/// after the consumer. Only where the consumer reads all of it (a
/// broadcast producer would be computed per element of the consumer, and
/// every thread would store its one result). Into a reduction it would be recomputed per use
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
          !consumer.getMatchingIndexingMap(operand).isPermutation() ||
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

/// An input that is a constant 0, 1, ..., n-1 read along one loop (the
/// class ids a one-hot compares labels with) is that loop's index: read as
/// a constant, a cross-entropy's gradient over 51,200 classes loaded 8
/// bytes per element of a 64-bit table. The input is then unused (and
/// canonicalization drops it).
void iotaInputsAsIndices(Operation *root) {
  root->walk([](linalg::GenericOp op) {
    for (OpOperand *operand : op.getDpsInputOperands()) {
      DenseIntElementsAttr values;
      AffineMap map = op.getMatchingIndexingMap(operand);
      if (!matchPattern(operand->get(), m_Constant(&values)) ||
          values.getType().getRank() != 1 || map.getNumResults() != 1 ||
          !isa<AffineDimExpr>(map.getResult(0)))
        continue;
      bool iota = true;
      int64_t i = 0;
      for (const APInt &v : values.getValues<APInt>())
        if (v.getSExtValue() != i++) {
          iota = false;
          break;
        }
      BlockArgument arg = op.getMatchingBlockArgument(operand);
      if (!iota || arg.use_empty())
        continue;
      OpBuilder b = OpBuilder::atBlockBegin(op.getBody());
      Value index = linalg::IndexOp::create(
          b, op.getLoc(), cast<AffineDimExpr>(map.getResult(0)).getPosition());
      if (!arg.getType().isIndex())
        index = arith::IndexCastOp::create(b, op.getLoc(), arg.getType(), index);
      arg.replaceAllUsesWith(index);
    }
  });
}

struct FuseElementwisePass
    : loom::impl::LoomFuseElementwiseBase<FuseElementwisePass> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::ControlFusionFn control = [](OpOperand *operand) {
      auto producer = operand->get().getDefiningOp<linalg::GenericOp>();
      auto consumer = dyn_cast<linalg::GenericOp>(operand->getOwner());
      if (!producer || !consumer || !allParallel(producer) ||
          costlyBroadcast(operand, producer))
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
    iotaInputsAsIndices(getOperation());
    LLVM_DEBUG(llvm::dbgs() << "fuse-elementwise: " << countGenerics()
                            << " after\n");
  }
};

} // namespace
