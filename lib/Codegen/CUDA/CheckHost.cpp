//===- CheckHost.cpp - No host access to device memory --------------------===//

#include "loom/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMGPUCHECKHOST
#include "loom/Codegen/CUDA/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

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
