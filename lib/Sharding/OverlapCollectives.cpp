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
// A weight's gather (an all_gather of a function argument: ZeRO-3's shard
// of a parameter) is prefetched, as FSDP prefetches the next unit's
// parameters: the gathers first read by one op start just before the op
// that first reads the previous such gathers, after their waits (the first
// ones at the function's start), so each runs on the lane while the
// previous weight's reader and what follows it compute. The gathers read
// first by one op are in flight together; each is waited for before the
// next ones start or before its reader, whichever comes first: a gathered
// weight is whole from one reader earlier. The gathers of weights again for
// the backward pass (loom.regather) are not prefetched (the planner prices
// them blocking).
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
      // Reductions start where their operands are ready; weights' gathers
      // one reader ahead; other gathers (of updated weights) stay where
      // partitioning put them.
      for (Operation *op : collectives)
        if (!isa<AllGatherOp>(op))
          hoist(op);
      DenseMap<Operation *, Operation *> readerOf = prefetch(collectives);
      llvm::sort(collectives, [](Operation *a, Operation *b) {
        return a->isBeforeInBlock(b);
      });
      for (auto [i, op] : llvm::enumerate(collectives)) {
        // Gathers read first by the same op are in flight together.
        Operation *reader = readerOf.lookup(op);
        size_t n = i + 1;
        while (n < collectives.size() && reader &&
               readerOf.lookup(collectives[n]) == reader)
          ++n;
        overlap(op, n < collectives.size() ? collectives[n] : nullptr);
      }
    });
  }

  /// The first reader of `op`'s results in its block (null: none).
  static Operation *firstReader(Operation *op) {
    Block *block = op->getBlock();
    Operation *at = nullptr;
    for (Operation *user : op->getUsers()) {
      Operation *u = block->findAncestorOpInBlock(*user);
      if (u && (!at || u->isBeforeInBlock(at)))
        at = u;
    }
    return at;
  }

  /// Moves each weight's gather (operands all arguments of the function)
  /// to just before the first reader of the previous weights' gathers
  /// (after their waits), or to the function's start for those read first,
  /// where that is earlier than it stands. Returns each gather's first
  /// reader.
  static DenseMap<Operation *, Operation *>
  prefetch(ArrayRef<Operation *> collectives) {
    SmallVector<std::pair<Operation *, Operation *>> gathers; // (op, reader)
    for (Operation *op : collectives) {
      // Gathers again for the backward pass (loom.regather) stay where
      // they are: the planner prices them blocking.
      if (!isa<AllGatherOp>(op) || op->hasAttr(LoomDialect::kRegatherAttrName) ||
          !llvm::all_of(op->getOperands(),
                        [](Value v) { return isa<BlockArgument>(v); }))
        continue;
      Operation *reader = firstReader(op);
      if (reader && !isa<func::ReturnOp>(reader))
        gathers.push_back({op, reader});
    }
    llvm::sort(gathers, [](auto &a, auto &b) {
      return a.second != b.second ? a.second->isBeforeInBlock(b.second)
                                  : a.first->isBeforeInBlock(b.first);
    });
    DenseMap<Operation *, Operation *> readerOf;
    Operation *previous = nullptr; // the previous gathers' first reader
    for (size_t i = 0; i < gathers.size();) {
      Operation *reader = gathers[i].second;
      Block *block = reader->getBlock();
      Operation *front = &block->front();
      for (; i < gathers.size() && gathers[i].second == reader; ++i) {
        Operation *op = gathers[i].first;
        readerOf[op] = reader;
        Operation *before = previous ? previous : front;
        if (before != op && before->isBeforeInBlock(op))
          op->moveBefore(before);
        else if (!previous && op == front)
          front = op->getNextNode(); // the next one goes after it
      }
      previous = reader;
    }
    return readerOf;
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
    Operation *at = firstReader(op);
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
