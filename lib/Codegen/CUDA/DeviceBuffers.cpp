//===- DeviceBuffers.cpp - A step's buffers in device memory --------------===//

#include "loom/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMGPUDEVICEBUFFERS
#define GEN_PASS_DEF_LOOMGPUFLATTENPARALLELLOOPS
#define GEN_PASS_DEF_LOOMGPUCHECKHOST
#define GEN_PASS_DEF_LOOMGPUORDEREDREDUCTIONS
#include "loom/Codegen/CUDA/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

struct DeviceBuffersPass
    : loom::impl::LoomGpuDeviceBuffersBase<DeviceBuffersPass> {
  using LoomGpuDeviceBuffersBase::LoomGpuDeviceBuffersBase;
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<memref::CopyOp>(op) ||
          (allocations && isa<memref::AllocOp, memref::DeallocOp>(op)))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      rewriter.setInsertionPoint(op);
      Location loc = op->getLoc();
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        if (!alloc.getSymbolOperands().empty()) {
          alloc.emitError("loom-gpu-device-buffers: an allocation with "
                          "symbol operands is not supported");
          return signalPassFailure();
        }
        auto device = gpu::AllocOp::create(
            rewriter, loc, alloc.getType(), /*asyncToken=*/Type(),
            /*asyncDependencies=*/ValueRange{}, alloc.getDynamicSizes(),
            /*symbolOperands=*/ValueRange{});
        rewriter.replaceOp(alloc, device.getMemref());
      } else if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
        gpu::DeallocOp::create(rewriter, loc, /*asyncToken=*/Type(),
                               ValueRange{}, dealloc.getMemref());
        rewriter.eraseOp(dealloc);
      } else {
        auto copy = cast<memref::CopyOp>(op);
        linalg::CopyOp::create(rewriter, loc, copy.getSource(),
                               copy.getTarget());
        rewriter.eraseOp(copy);
      }
    }
  }
};

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

struct FlattenParallelLoopsPass
    : loom::impl::LoomGpuFlattenParallelLoopsBase<FlattenParallelLoopsPass> {
  void runOnOperation() override {
    IRRewriter wrapper(&getContext());
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (!fn.isExternal())
        wrapSerialCode(fn.getBody().front(), wrapper);
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

struct OrderedReductionsPass
    : loom::impl::LoomGpuOrderedReductionsBase<OrderedReductionsPass> {
  void runOnOperation() override {
    getOperation().walk([](arith::ArithFastMathInterface op) {
      arith::FastMathFlagsAttr attr = op.getFastMathFlagsAttr();
      if (!attr)
        return;
      arith::FastMathFlags flags = attr.getValue();
      if (!arith::bitEnumContainsAny(flags, arith::FastMathFlags::reassoc))
        return;
      op->setAttr(op.getFastMathAttrName(),
                  arith::FastMathFlagsAttr::get(
                      op->getContext(), flags & ~arith::FastMathFlags::reassoc));
    });
  }
};

struct CheckHostPass : loom::impl::LoomGpuCheckHostBase<CheckHostPass> {
  void runOnOperation() override {
    bool bad = false;
    getOperation().walk([&](Operation *op) {
      if (!isa<memref::LoadOp, memref::StoreOp, memref::CopyOp>(op) ||
          op->getParentOfType<gpu::GPUModuleOp>() ||
          op->getParentOfType<gpu::LaunchOp>())
        return;
      op->emitError() << "loom-gpu-check-host: '" << op->getName()
                      << "' in host code would access device memory from "
                         "the host (no loop nest of the step may stay "
                         "outside a kernel)";
      bad = true;
    });
    if (bad)
      signalPassFailure();
  }
};

} // namespace
