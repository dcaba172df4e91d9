//===- SplitDeallocations.cpp - One memref.dealloc per distinct allocation ===//
//
// Ownership-based deallocation ends a training step with a single
// bufferization.dealloc of every buffer the step touched; upstream's
// simplification separates them with pairwise alias queries (quadratic in
// the buffers of a step: 9.3 of 16 s of lowering at 96 GPT layers). When
// every buffer to free is a different memref.alloc, they are distinct by
// construction and each can be freed on its own.
//
//===----------------------------------------------------------------------===//

#include "loom/Codegen/CPU/Passes.h"
#include "loom/Codegen/CPU/Buffers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseSet.h"
#include "loom/Support/Debug.h"

#define DEBUG_TYPE "loom-split-deallocations"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMSPLITDEALLOCATIONS
#include "loom/Codegen/CPU/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

/// The allocations `dealloc` frees, when it can be split: it retains
/// nothing, its conditions are constants and the buffers with a true one
/// are distinct allocations. std::nullopt otherwise.
std::optional<SmallVector<memref::AllocOp>>
distinctAllocations(bufferization::DeallocOp dealloc) {
  if (!dealloc.getRetained().empty())
    return std::nullopt;
  SmallVector<memref::AllocOp> freed;
  llvm::DenseSet<Operation *> seen;
  for (auto [buffer, condition] :
       llvm::zip_equal(dealloc.getMemrefs(), dealloc.getConditions())) {
    APInt value;
    if (!matchPattern(condition, m_ConstantInt(&value)))
      return std::nullopt;
    if (value.isZero())
      continue;
    auto alloc = viewedBuffer(buffer).getDefiningOp<memref::AllocOp>();
    if (!alloc || !seen.insert(alloc).second)
      return std::nullopt;
    freed.push_back(alloc);
  }
  return freed;
}

struct SplitDeallocationsPass
    : public mlir::loom::impl::LoomSplitDeallocationsBase<
          SplitDeallocationsPass> {
  void runOnOperation() override {
    SmallVector<bufferization::DeallocOp> deallocs;
    getOperation()->walk(
        [&](bufferization::DeallocOp op) { deallocs.push_back(op); });
    unsigned split = 0;
    for (bufferization::DeallocOp dealloc : deallocs) {
      std::optional<SmallVector<memref::AllocOp>> freed =
          distinctAllocations(dealloc);
      if (!freed)
        continue;
      OpBuilder builder(dealloc);
      for (memref::AllocOp alloc : *freed)
        memref::DeallocOp::create(builder, dealloc.getLoc(), alloc);
      dealloc.erase();
      ++split;
    }
    LLVM_DEBUG(llvm::dbgs() << "split " << split << " of " << deallocs.size()
                            << " bufferization.dealloc ops\n");
  }
};

} // namespace
