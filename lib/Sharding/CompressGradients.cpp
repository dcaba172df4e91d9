//===- CompressGradients.cpp - Reduce weight gradients in 16 bits ---------===//
//
// Horovod's Compression.fp16 compresses a gradient before its all-reduce
// and decompresses it after. loom-build-train-step writes the compression as
// a cast of each weight gradient to the 16-bit type and back, and marks the
// narrowing cast; the partitioner reduces a gradient where it is made, so
// the reduction sits above the casts, in 32 bits. Casting first and
// reducing the 16-bit values is the compression itself: each device's
// partial sum rounds to 16 bits, and the sum is taken in 16 bits.
//
//===----------------------------------------------------------------------===//

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Sharding/Passes.h"
#include "loom/Support/Debug.h"

#define DEBUG_TYPE "loom-compress-gradients"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMCOMPRESSGRADIENTS
#include "loom/Sharding/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

bool isSumReduction(Operation *op) {
  if (auto ar = dyn_cast<AllReduceOp>(op))
    return ar.getInputs().size() == 1 &&
           ar.getReduction() == ReductionKind::sum;
  if (auto rs = dyn_cast<ReduceScatterOp>(op))
    return rs.getReduction() == ReductionKind::sum;
  return false;
}

/// The sum reduction `narrow` can move before: the reduction of one value
/// whose result reaches `narrow` only through single-use relayouts.
/// Appends the relayouts (nearest the collective first).
Operation *reductionAbove(CastOp narrow, SmallVectorImpl<Operation *> &path) {
  Value v = narrow.getInput();
  SmallVector<Operation *> up;
  while (Operation *def = v.getDefiningOp()) {
    if (!v.hasOneUse())
      return nullptr;
    if (isSumReduction(def)) {
      path.assign(up.rbegin(), up.rend());
      return def;
    }
    if (!isa<TransposeOp, ReshapeOp>(def))
      return nullptr;
    up.push_back(def);
    v = def->getOperand(0);
  }
  return nullptr;
}

/// The sum reduction below the decompressing cast `widen`: the partial sum
/// passed through both casts (they are linear) and the partitioner reduced
/// it after them, in the wide type. Appends the single-use relayouts
/// between `widen` and the reduction.
Operation *reductionBelow(CastOp widen, SmallVectorImpl<Operation *> &path) {
  Value v = widen.getResult();
  while (v.hasOneUse()) {
    Operation *user = *v.getUsers().begin();
    if (isSumReduction(user) && user->getOperand(0) == v)
      return user;
    if (!isa<TransposeOp, ReshapeOp>(user))
      return nullptr;
    path.push_back(user);
    v = user->getResult(0);
  }
  return nullptr;
}

void retype(Value v, Type element) {
  v.setType(cast<RankedTensorType>(v.getType()).clone(element));
}

/// cast(relayouts(reduce(x))) -> relayouts(reduce(cast(x))).
void moveAbove(CastOp narrow, Operation *reduction,
               ArrayRef<Operation *> path) {
  Type low = narrow.getType().getElementType();
  OpBuilder b(reduction);
  Value input = reduction->getOperand(0);
  auto early = CastOp::create(
      b, narrow.getLoc(), cast<RankedTensorType>(input.getType()).clone(low),
      input);
  // Only the marker: the cast now reads the partial sum, so a layout
  // recorded for the reduced value would not describe it.
  early->setAttr(LoomDialect::kGradCompressionAttrName,
                 narrow->getAttr(LoomDialect::kGradCompressionAttrName));
  reduction->setOperand(0, early);
  retype(reduction->getResult(0), low);
  for (Operation *op : path)
    retype(op->getResult(0), low);
  narrow.getResult().replaceAllUsesWith(narrow.getInput());
  narrow.erase();
}

/// reduce(relayouts(widen(n))) -> widen(reduce(relayouts(n))).
void moveWidenBelow(CastOp widen, Operation *reduction,
                    ArrayRef<Operation *> path) {
  Value narrow = widen.getInput();
  Type low = cast<RankedTensorType>(narrow.getType()).getElementType();
  Type wide = widen.getType().getElementType();
  widen.getResult().replaceAllUsesWith(narrow);
  for (Operation *op : path)
    retype(op->getResult(0), low);
  Value reduced = reduction->getResult(0);
  retype(reduced, low);
  OpBuilder b(reduction->getContext());
  b.setInsertionPointAfter(reduction);
  auto late = CastOp::create(
      b, widen.getLoc(), cast<RankedTensorType>(reduced.getType()).clone(wide),
      reduced);
  reduced.replaceAllUsesExcept(late, late);
  widen.erase();
}

struct CompressGradientsPass
    : loom::impl::LoomCompressGradientsBase<CompressGradientsPass> {
  void runOnOperation() override {
    unsigned moved = 0, left = 0;
    // Collected first: rewriting erases casts the walk has not reached.
    SmallVector<CastOp> marked;
    getOperation().walk([&](CastOp narrow) {
      if (narrow->hasAttr(LoomDialect::kGradCompressionAttrName))
        marked.push_back(narrow);
    });
    for (CastOp narrow : marked) {
      SmallVector<Operation *> path;
      if (Operation *reduction = reductionAbove(narrow, path)) {
        moveAbove(narrow, reduction, path);
        ++moved;
        continue;
      }
      path.clear();
      auto widen = narrow->hasOneUse()
                       ? dyn_cast<CastOp>(*narrow->getUsers().begin())
                       : CastOp();
      if (widen) {
        if (Operation *reduction = reductionBelow(widen, path)) {
          moveWidenBelow(widen, reduction, path);
          ++moved;
          continue;
        }
      }
      ++left;
    }
    LLVM_DEBUG(llvm::dbgs() << "loom-compress-gradients: " << moved
                            << " reductions in 16 bits, " << left
                            << " compressed gradients without one\n");
  }
};

} // namespace
