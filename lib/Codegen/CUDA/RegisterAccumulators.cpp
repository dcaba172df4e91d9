//===- RegisterAccumulators.cpp - Reduction loops accumulate in registers -===//
//
// convert-linalg-to-parallel-loops lowers a reduction as a loop that loads
// the output element, combines and stores it back on every iteration. On a
// GPU that is a load and a store per element on the critical path (LLVM
// cannot keep the value in a register: it does not know that the inputs'
// buffers do not alias the output). linalg's semantics do: the output of a
// reduction is only read and written through that element. This carries it
// in the loop instead (iter_args): one load before the loop, one store
// after. The same operations in the same order: results are bit for bit
// those of the loop it replaces.
//
//===----------------------------------------------------------------------===//

#include "loom/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMGPUREGISTERACCUMULATORS
#include "loom/Codegen/CUDA/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

/// Whether `op` (and what it holds) only reads memory, or not at all.
bool onlyReads(Operation *op) {
  if (isa<scf::ForOp, scf::YieldOp>(op) || isMemoryEffectFree(op))
    return !op->getNumRegions() ||
           !op->walk([&](Operation *inner) {
                 return inner == op || onlyReads(inner)
                            ? WalkResult::advance()
                            : WalkResult::interrupt();
               }).wasInterrupted();
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  return effects && effects.onlyHasEffect<MemoryEffects::Read>();
}

/// One element `store`d at the end of each iteration of `loop` after being
/// `load`ed in it, at indices the loop does not change, and touched by
/// nothing else in the loop (which otherwise only reads memory).
bool accumulator(scf::ForOp loop, memref::LoadOp &load,
                 memref::StoreOp &store) {
  Block *body = loop.getBody();
  store = {};
  load = {};
  for (Operation &op : *body) {
    if (auto s = dyn_cast<memref::StoreOp>(op)) {
      if (store)
        return false;
      store = s;
    } else if (!onlyReads(&op)) {
      return false;
    }
  }
  if (!store || store->getNextNode() != body->getTerminator())
    return false;
  Value memref = store.getMemRef();
  for (Value v : store.getIndices())
    if (!loop.isDefinedOutsideOfLoop(v))
      return false;
  if (!loop.isDefinedOutsideOfLoop(memref))
    return false;
  for (Operation *user : memref.getUsers()) {
    if (user == store || !loop->isAncestor(user))
      continue;
    auto l = dyn_cast<memref::LoadOp>(user);
    if (!l || load || l->getBlock() != body || l.getIndices() != store.getIndices())
      return false;
    load = l;
  }
  return bool(load);
}

struct RegisterAccumulatorsPass
    : loom::impl::LoomGpuRegisterAccumulatorsBase<RegisterAccumulatorsPass> {
  void runOnOperation() override {
    // Innermost loops first: an outer reduction loop then sees the inner
    // loop's load before it and store after it.
    SmallVector<scf::ForOp> loops;
    getOperation().walk([&](scf::ForOp loop) { loops.push_back(loop); });
    IRRewriter rewriter(&getContext());
    for (scf::ForOp loop : loops) {
      memref::LoadOp load;
      memref::StoreOp store;
      if (!accumulator(loop, load, store))
        continue;
      rewriter.setInsertionPoint(loop);
      auto first = memref::LoadOp::create(rewriter, load.getLoc(),
                                          load.getMemRef(), load.getIndices());
      Value stored = store.getValueToStore();
      FailureOr<LoopLikeOpInterface> carried =
          cast<LoopLikeOpInterface>(loop.getOperation())
              .replaceWithAdditionalYields(
                  rewriter, ValueRange{first}, /*replaceInitOperandUsesInLoop=*/false,
                  [&](OpBuilder &, Location, ArrayRef<BlockArgument>) {
                    return SmallVector<Value>{stored};
                  });
      if (failed(carried)) {
        loop.emitError("loom-gpu-register-accumulators: cannot carry the "
                       "accumulator");
        return signalPassFailure();
      }
      auto newLoop = cast<scf::ForOp>(carried->getOperation());
      BlockArgument acc = newLoop.getRegionIterArgs().back();
      rewriter.replaceOp(load, acc);
      rewriter.setInsertionPointAfter(newLoop);
      memref::StoreOp::create(rewriter, store.getLoc(),
                              newLoop.getResults().back(), store.getMemRef(),
                              store.getIndices());
      rewriter.eraseOp(store);
    }
  }
};

} // namespace
