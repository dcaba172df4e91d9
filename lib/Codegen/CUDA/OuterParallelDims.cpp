//===- OuterParallelDims.cpp - Parallel dimensions as the outer loops -----===//

#include "loom/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMGPUOUTERPARALLELDIMS
#include "loom/Codegen/CUDA/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

struct OuterParallelDimsPass
    : loom::impl::LoomGpuOuterParallelDimsBase<OuterParallelDimsPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> ops;
    getOperation().walk([&](linalg::GenericOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op : ops) {
      SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
      // The old loop index of each new loop: parallel ones, then the rest,
      // each in its order.
      SmallVector<unsigned> order;
      for (auto [i, t] : llvm::enumerate(iterators))
        if (t == utils::IteratorType::parallel)
          order.push_back(unsigned(i));
      for (auto [i, t] : llvm::enumerate(iterators))
        if (t != utils::IteratorType::parallel)
          order.push_back(unsigned(i));
      bool identity = true;
      for (auto [i, o] : llvm::enumerate(order))
        identity &= o == i;
      if (identity)
        continue;
      rewriter.setInsertionPoint(op);
      if (failed(linalg::interchangeGenericOp(rewriter, op, order))) {
        op.emitError("loom-gpu-outer-parallel-dims: cannot interchange the "
                     "loops");
        return signalPassFailure();
      }
    }
  }
};

} // namespace
