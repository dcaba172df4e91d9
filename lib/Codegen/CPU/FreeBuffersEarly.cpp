//===- FreeBuffersEarly.cpp - Deallocate buffers after their last use -----===//
//
// The buffer deallocation pipeline frees every temporary of a block at its
// end. For a training step that is the whole forward and backward pass: the
// step's peak memory is the sum of all its temporaries. Freeing each buffer
// after its last use makes the peak the largest set of buffers live at one
// point, which is what the planner prices (and what rematerialization
// lowers).
//
//===----------------------------------------------------------------------===//

#include "loom/Codegen/CPU/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "loom/Support/Debug.h"

#define DEBUG_TYPE "loom-free-buffers-early"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMFREEBUFFERSEARLY
#include "loom/Codegen/CPU/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

/// The last op of `block` that uses `buffer` or an alias of it, or the op
/// defining it (or nullptr at the start of the block) when nothing in the
/// block uses it. std::nullopt when an alias escapes the block or is used
/// where `block` does not see it.
/// The block's ops in order, numbered once: Operation::isBeforeInBlock
/// renumbers the whole block after every move, which made the pass
/// quadratic in a long step's ops.
using Positions = llvm::DenseMap<Operation *, size_t>;

std::optional<Operation *> lastUseInBlock(Value buffer,
                                          memref::DeallocOp dealloc,
                                          Block &block,
                                          const Positions &position) {
  auto before = [&](Operation *a, Operation *b) {
    return position.lookup(a) < position.lookup(b);
  };
  Operation *last = nullptr;
  if (Operation *def = buffer.getDefiningOp()) {
    Operation *ancestor = block.findAncestorOpInBlock(*def);
    if (ancestor != def)
      return std::nullopt; // defined elsewhere: leave it alone
    last = def;
  } else if (cast<BlockArgument>(buffer).getOwner() != &block) {
    return std::nullopt;
  }
  SmallVector<Value> aliases{buffer};
  llvm::SmallPtrSet<Value, 8> seen{buffer};
  while (!aliases.empty()) {
    Value value = aliases.pop_back_val();
    for (Operation *user : value.getUsers()) {
      if (user == dealloc.getOperation())
        continue;
      if (user->hasTrait<OpTrait::IsTerminator>())
        return std::nullopt; // the buffer (or a view of it) leaves the block
      Operation *ancestor = block.findAncestorOpInBlock(*user);
      if (!ancestor || !before(ancestor, dealloc))
        return std::nullopt;
      if (!last || before(last, ancestor))
        last = ancestor;
      // Anything made from the buffer that is itself a buffer may alias it.
      for (Value result : user->getResults())
        if (isa<BaseMemRefType>(result.getType()) && seen.insert(result).second)
          aliases.push_back(result);
    }
  }
  return last;
}

struct FreeBuffersEarlyPass
    : public mlir::loom::impl::LoomFreeBuffersEarlyBase<FreeBuffersEarlyPass> {
  void runOnOperation() override {
    unsigned moved = 0;
    getOperation()->walk([&](Block *block) {
      SmallVector<memref::DeallocOp> deallocs(
          block->getOps<memref::DeallocOp>());
      Positions position;
      for (Operation &op : *block)
        position.try_emplace(&op, position.size());
      // Every target is found on the original order, then the moves are
      // made (moving a dealloc changes no other op's last use).
      SmallVector<std::pair<memref::DeallocOp, Operation *>> moves;
      for (memref::DeallocOp dealloc : deallocs)
        if (std::optional<Operation *> last = lastUseInBlock(
                dealloc.getMemref(), dealloc, *block, position))
          moves.push_back({dealloc, *last});
      for (auto [dealloc, last] : moves) {
        if (last)
          dealloc->moveAfter(last);
        else
          dealloc->moveBefore(block, block->begin());
        ++moved;
      }
    });
    LLVM_DEBUG(llvm::dbgs() << "placed " << moved
                            << " deallocations after their last use\n");
  }
};

} // namespace
