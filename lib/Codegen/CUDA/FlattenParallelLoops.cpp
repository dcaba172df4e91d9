//===- FlattenParallelLoops.cpp - One-dimensional parallel loops ----------===//

#include "loom/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMGPUFLATTENPARALLELLOOPS
#include "loom/Codegen/CUDA/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

struct FlattenParallelLoopsPass
    : loom::impl::LoomGpuFlattenParallelLoopsBase<FlattenParallelLoopsPass> {
  void runOnOperation() override {
    SmallVector<scf::ParallelOp> outermost;
    getOperation().walk([&](scf::ParallelOp loop) {
      if (!loop->getParentOfType<scf::ParallelOp>() &&
          loop.getNumLoops() > 1)
        outermost.push_back(loop);
    });
    IRRewriter rewriter(&getContext());
    for (scf::ParallelOp loop : outermost) {
      std::vector<unsigned> all;
      for (unsigned d = 0; d < loop.getNumLoops(); ++d)
        all.push_back(d);
      rewriter.setInsertionPoint(loop);
      collapseParallelLoops(rewriter, loop, {all});
    }
  }
};

} // namespace
