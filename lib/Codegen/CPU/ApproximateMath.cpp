//===- ApproximateMath.cpp - Vectorizable exp, log, erf and tanh ----------===//

#include "loom/Codegen/CPU/Passes.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Approximation.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMAPPROXIMATEMATH
#include "loom/Codegen/CPU/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;

namespace {

struct ApproximateMathPass
    : loom::impl::LoomApproximateMathBase<ApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    // exp, erf and tanh: within 4 ulp of libm everywhere (the unit test
    // ExecutionTest.PolynomialMathIsWithinAFewUlpsOfLibm). Not the log
    // family: MLIR's log treats subnormal inputs as normal (log(1e-40)
    // came out near log(1e-38)), and a step takes logs per row (a loss's
    // log-sum-exp), not per element. Not sin/cos: their range reduction
    // loses accuracy on large arguments.
    populateMathPolynomialApproximationPatterns(
        patterns, [](StringRef name) {
          return llvm::is_contained({math::ExpOp::getOperationName(),
                                     math::ErfOp::getOperationName(),
                                     math::TanhOp::getOperationName()},
                                    name);
        });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
