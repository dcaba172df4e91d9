//===- OverlapCollectives.cpp - Start collectives early, wait late --------===//
//
// A collective's results are usually read much later than its operands are
// ready: a weight's gradient is reduced as soon as the backward pass has
// made it, and read only by the optimizer after the whole backward pass. The
// pass makes that span explicit in the IR: a reduction moves up to just
// after its operands are defined and is marked `loom.async` (started there);
// a `loom.wait` of its results is placed just before their first reader or
// the next collective, whichever comes first (one in flight, as the lane
// runs them in order anyway, so that memory holds one bucket's operand and
// result at once, not every gradient twice). The
// runtime runs the started collective on its communication lane while the
// ops in between compute (runtime/src/lane.h). Where nothing computes in
// between, the collective stays blocking: a wait right after its start would
// only add the hand-over to the lane.
//
//===----------------------------------------------------------------------===//

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Sharding/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "loom/Support/Debug.h"

#define DEBUG_TYPE "loom-overlap-collectives"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMOVERLAPCOLLECTIVES
#include "loom/Sharding/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

/// Whether `op` computes (as opposed to naming or moving a value: constants,
/// reshapes, other collectives, waits).
bool computes(Operation &op) {
  if (isa<ConstantOp, ReshapeOp, WaitOp, OptimizationBarrierOp>(op) ||
      isa<CollectiveOpInterface>(op))
    return false;
  return op.getNumResults() > 0 && !op.hasTrait<OpTrait::ConstantLike>();
}

struct OverlapCollectivesPass
    : loom::impl::LoomOverlapCollectivesBase<OverlapCollectivesPass> {
  void runOnOperation() override {
    // The planner priced the blocking schedule faster.
    if (auto planned = getOperation()->getAttrOfType<BoolAttr>(
            LoomDialect::kOverlapAttrName);
        planned && !planned.getValue())
      return;
    getOperation().walk([&](func::FuncOp fn) {
      if (fn.isExternal() || !fn.getBody().hasOneBlock() ||
          !fn->hasAttr(LoomDialect::kPartitionedAttrName))
        return;
      SmallVector<Operation *> collectives;
      for (Operation &op : fn.getBody().front())
        if (isa<AllReduceOp, ReduceScatterOp, AllGatherOp>(op) &&
            !op.hasAttr(LoomDialect::kAsyncAttrName) &&
            cast<CollectiveOpInterface>(op).getGroupSize() > 1)
          collectives.push_back(&op);
      // Reductions start where their operands are ready. Gathers stay
      // where partitioning put them: a ZeRO-3 weight gathered early would
      // be whole for longer than the planner's memory bound says.
      for (Operation *op : collectives)
        if (!isa<AllGatherOp>(op))
          hoist(op);
      llvm::sort(collectives, [](Operation *a, Operation *b) {
        return a->isBeforeInBlock(b);
      });
      for (auto [i, op] : llvm::enumerate(collectives))
        overlap(op, i + 1 < collectives.size() ? collectives[i + 1] : nullptr);
    });
  }

  /// Just after the last of `op`'s operands' definitions in its block.
  static void hoist(Operation *op) {
    Block *block = op->getBlock();
    Operation *after = nullptr;
    for (Value v : op->getOperands()) {
      Operation *def = v.getDefiningOp();
      if (!def) // a block argument: defined at the start
        continue;
      def = block->findAncestorOpInBlock(*def);
      if (def && (!after || after->isBeforeInBlock(def)))
        after = def;
    }
    if (after && after->isBeforeInBlock(op))
      op->moveAfter(after);
    else if (!after && op != &block->front())
      op->moveBefore(&block->front());
  }

  /// Starts `op` and waits just before its first reader, or before `next`
  /// (the next collective that may start) when that comes first: one
  /// started collective at a time, so that a reduction's operand and result
  /// are both alive for one bucket, not for the whole backward pass (the
  /// lane runs them one after another anyway).
  static void overlap(Operation *op, Operation *next) {
    Block *block = op->getBlock();
    Operation *at = nullptr;
    for (Operation *user : op->getUsers()) {
      Operation *u = block->findAncestorOpInBlock(*user);
      if (u && (!at || u->isBeforeInBlock(at)))
        at = u;
    }
    if (!at)
      return;
    if (next && next->isBeforeInBlock(at))
      at = next;
    int computing = 0;
    for (Operation *it = op->getNextNode(); it && it != at;
         it = it->getNextNode())
      computing += computes(*it);
    LLVM_DEBUG(llvm::dbgs() << "overlap " << op->getName() << ": "
                            << computing << " ops until its wait\n");
    if (!computing)
      return;
    OpBuilder b(at);
    auto wait = WaitOp::create(b, op->getLoc(), op->getResults());
    for (auto [r, w] : llvm::zip(op->getResults(), wait.getResults()))
      r.replaceAllUsesExcept(w, wait);
    op->setAttr(LoomDialect::kAsyncAttrName, b.getUnitAttr());
  }
};

} // namespace
