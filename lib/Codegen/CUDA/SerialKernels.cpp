//===- SerialKernels.cpp - Serial host code as one-thread loops -----------===//

#include "loom/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMGPUSERIALKERNELS
#include "loom/Codegen/CUDA/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

/// Host code that computes on buffers: loads, stores, serial loops (a
/// reduction over every dimension has no parallel loop) and the scalar
/// arithmetic between them.
bool isSerialCompute(Operation &op) {
  if (isa<scf::ForOp, scf::IfOp>(op)) {
    // Only what a kernel can run: no host calls (runtime, cuBLAS), no
    // device allocation or free (a conditional dealloc stays on the host).
    WalkResult host = op.walk([](Operation *inner) {
      return isa<func::CallOp, gpu::AllocOp, gpu::DeallocOp, memref::AllocOp,
                 memref::DeallocOp>(inner) ||
                     inner->getDialect() ==
                         inner->getContext()->getLoadedDialect<gpu::GPUDialect>()
                 ? WalkResult::interrupt()
                 : WalkResult::advance();
    });
    return !host.wasInterrupted();
  }
  if (isa<memref::LoadOp, memref::StoreOp>(op))
    return true;
  if (op.getNumRegions() || op.hasTrait<OpTrait::ConstantLike>() ||
      !isMemoryEffectFree(&op))
    return false;
  return llvm::all_of(op.getResultTypes(),
                      [](Type t) { return t.isIntOrIndexOrFloat(); });
}

/// Wraps each run of serial compute in a host block into a one-iteration
/// scf.parallel (a one-thread kernel). Pure scalar ops whose results are
/// used after the run are cloned in front of it for those uses.
void wrapSerialCode(Block &block, IRRewriter &rewriter) {
  SmallVector<SmallVector<Operation *>> runs(1);
  for (Operation &op : block) {
    if (isSerialCompute(op)) {
      runs.back().push_back(&op);
    } else if (!runs.back().empty()) {
      runs.emplace_back();
    }
  }
  for (ArrayRef<Operation *> run : runs) {
    if (run.empty() || llvm::none_of(run, [](Operation *op) {
          return isa<memref::LoadOp, memref::StoreOp, scf::ForOp, scf::IfOp>(
              op);
        }))
      continue;
    DenseSet<Operation *> inRun(run.begin(), run.end());
    Operation *first = run.front();
    // Values used after the run: pure ones are recomputed on the host.
    auto outside = [&](OpOperand &use) {
      return !inRun.contains(block.findAncestorOpInBlock(*use.getOwner()));
    };
    for (Operation *op : run) {
      if (!isMemoryEffectFree(op) || op->getNumRegions() ||
          llvm::none_of(op->getUses(), outside))
        continue;
      // One that depends on the run stays: loom-gpu-check-host reports
      // the load it reads.
      if (llvm::any_of(op->getOperands(), [&](Value v) {
            Operation *def = v.getDefiningOp();
            return def && inRun.contains(def);
          }))
        continue;
      rewriter.setInsertionPoint(first);
      Operation *copy = rewriter.clone(*op);
      for (auto [r, c] : llvm::zip(op->getResults(), copy->getResults()))
        r.replaceUsesWithIf(c, outside);
    }
    rewriter.setInsertionPoint(first);
    Location loc = first->getLoc();
    Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    auto loop = scf::ParallelOp::create(rewriter, loc, ValueRange{zero},
                                        ValueRange{one}, ValueRange{one});
    Block *body = loop.getBody();
    for (Operation *op : run)
      op->moveBefore(body->getTerminator());
  }
}

struct SerialKernelsPass
    : loom::impl::LoomGpuSerialKernelsBase<SerialKernelsPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (!fn.isExternal())
        wrapSerialCode(fn.getBody().front(), rewriter);
  }
};

} // namespace
