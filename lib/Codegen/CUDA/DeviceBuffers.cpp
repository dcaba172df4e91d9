//===- DeviceBuffers.cpp - A step's buffers in device memory --------------===//

#include "loom/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMGPUDEVICEBUFFERS
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

} // namespace
