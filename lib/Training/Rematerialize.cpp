//===- Rematerialize.cpp - Recompute marked forward segments --------------===//
//
// Gradient checkpointing as a rewrite of the training step: the values the
// backward pass reads from a marked segment are recomputed from the
// segment's inputs just before the backward pass first needs them, so the
// forward values die at the end of the forward pass.
//
//===----------------------------------------------------------------------===//

#include "loom/Training/Passes.h"

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Dialect/Loom/Utils/Utils.h"
#include "loom/Support/Debug.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#define DEBUG_TYPE "loom-rematerialize"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMREMATERIALIZE
#include "loom/Training/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

/// Segments of the forward ops of `body`, in block order: marked ops, and
/// unmarked ops (collectives, reshapes a partitioner inserted) whose
/// operands all come from one segment (constants aside).
llvm::MapVector<int64_t, SmallVector<Operation *>>
collectSegments(Block &body, const llvm::DenseSet<Operation *> &forward) {
  llvm::DenseMap<Operation *, int64_t> segmentOf;
  llvm::MapVector<int64_t, SmallVector<Operation *>> segments;
  for (Operation &op : body) {
    if (!forward.contains(&op))
      continue;
    std::optional<int64_t> segment;
    if (auto mark = op.getAttrOfType<IntegerAttr>(LoomDialect::kRematAttrName)) {
      segment = mark.getInt();
    } else if (op.getNumRegions() == 0 && op.getNumOperands() > 0) {
      bool joins = true;
      for (Value v : op.getOperands()) {
        Operation *def = v.getDefiningOp();
        if (def && def->hasTrait<OpTrait::ConstantLike>())
          continue;
        auto it = def ? segmentOf.find(def) : segmentOf.end();
        if (it == segmentOf.end() || (segment && *segment != it->second)) {
          joins = false;
          break;
        }
        segment = it->second;
      }
      if (!joins)
        segment.reset();
    }
    if (!segment)
      continue;
    segmentOf[&op] = *segment;
    segments[*segment].push_back(&op);
  }
  return segments;
}

class Rematerializer {
public:
  Rematerializer(Block &body, const llvm::DenseSet<Operation *> &forward)
      : body(body), forward(forward) {}

  /// Recomputes segment `id` (its ops in block order) for the backward
  /// pass. Returns the number of ops cloned.
  FailureOr<int> rematerialize(int64_t id, ArrayRef<Operation *> ops);

private:
  /// A use the recomputation should serve: by an op of the backward pass
  /// (not the forward pass, not the terminator, not this pass's own ops).
  Operation *backwardUser(OpOperand &use) const {
    Operation *owner = body.findAncestorOpInBlock(*use.getOwner());
    if (!owner || forward.contains(owner) || created.contains(owner) ||
        owner->hasTrait<OpTrait::IsTerminator>())
      return nullptr;
    return owner;
  }

  Block &body;
  const llvm::DenseSet<Operation *> &forward;
  llvm::DenseSet<Operation *> created;
};

FailureOr<int> Rematerializer::rematerialize(int64_t id,
                                             ArrayRef<Operation *> ops) {
  llvm::DenseSet<Operation *> inSegment(ops.begin(), ops.end());
  // What the backward pass reads, and where it first does.
  llvm::SetVector<Value> read;
  Operation *first = nullptr;
  for (Operation *op : ops)
    for (Value r : op->getResults())
      for (OpOperand &use : r.getUses())
        if (Operation *user = backwardUser(use)) {
          read.insert(r);
          if (!first || user->isBeforeInBlock(first))
            first = user;
        }
  if (read.empty())
    return 0;
  // The ops those values need, within the segment.
  llvm::SetVector<Operation *> needed;
  SmallVector<Operation *> work;
  for (Value v : read)
    work.push_back(v.getDefiningOp());
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (!needed.insert(op))
      continue;
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp(); def && inSegment.contains(def))
        work.push_back(def);
  }
  SmallVector<Operation *> order(needed.begin(), needed.end());
  llvm::sort(order, [](Operation *a, Operation *b) {
    return a->isBeforeInBlock(b);
  });
  // The segment's inputs, kept from the forward pass.
  llvm::SetVector<Value> inputs;
  for (Operation *op : order)
    for (Value v : op->getOperands()) {
      Operation *def = v.getDefiningOp();
      if (def && (needed.contains(def) || def->hasTrait<OpTrait::ConstantLike>()))
        continue;
      if (def && !def->isBeforeInBlock(first))
        return first->emitError("loom-rematerialize: segment ")
               << id << " reads a value defined after the backward pass "
               << "first needs the segment";
      inputs.insert(v);
    }

  OpBuilder b(first);
  IRMapping map;
  if (!inputs.empty()) {
    auto barrier =
        OptimizationBarrierOp::create(b, first->getLoc(), inputs.getArrayRef());
    created.insert(barrier);
    map.map(inputs.getArrayRef(), barrier.getResults());
  }
  auto mark = b.getI64IntegerAttr(id);
  for (Operation *op : order) {
    Operation *copy = b.clone(*op, map);
    copy->removeAttr(LoomDialect::kRematAttrName);
    copy->setAttr(LoomDialect::kRecomputedAttrName, mark);
    created.insert(copy);
  }
  for (Value v : read)
    v.replaceUsesWithIf(map.lookup(v), [&](OpOperand &use) {
      return backwardUser(use) != nullptr;
    });
  LLVM_DEBUG(llvm::dbgs() << "segment " << id << ": " << read.size()
                          << " values read by the backward pass, "
                          << order.size() << " ops recomputed from "
                          << inputs.size() << " inputs\n");
  return static_cast<int>(order.size());
}

struct LoomRematerializePass
    : public loom::impl::LoomRematerializeBase<LoomRematerializePass> {
  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      if (fn.isExternal())
        continue;
      bool marked = false, nested = false;
      fn.walk([&](Operation *op) {
        if (!op->hasAttr(LoomDialect::kRematAttrName))
          return;
        marked = true;
        nested |= op->getBlock() != &fn.getBody().front();
      });
      if (!marked)
        continue;
      if (nested)
        fn.emitWarning("loom-rematerialize: ops marked loom.remat inside "
                       "nested regions are not recomputed");
      if (failed(verifyLossFunction(fn, "loom-rematerialize")))
        return signalPassFailure();
      Block &body = fn.getBody().front();
      llvm::DenseSet<Operation *> forward = lossAncestors(fn);
      Rematerializer remat(body, forward);
      auto segments = collectSegments(body, forward);
      for (auto &[id, ops] : segments)
        if (failed(remat.rematerialize(id, ops)))
          return signalPassFailure();
    }
  }
};

} // namespace
