//===- DeviceConstants.cpp - Constant globals in device memory ------------===//

#include "loom/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Utils/GPUUtils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMGPUDEVICECONSTANTS
#include "loom/Codegen/CUDA/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

struct DeviceConstantsPass
    : loom::impl::LoomGpuDeviceConstantsBase<DeviceConstantsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Kernels read their constants from their own module's copy.
    SmallVector<gpu::LaunchOp> launches;
    module.walk([&](gpu::LaunchOp launch) { launches.push_back(launch); });
    for (gpu::LaunchOp launch : launches)
      if (failed(sinkOperationsIntoLaunchOp(launch, [](Operation *op) {
            return isa<memref::GetGlobalOp>(op);
          }))) {
        launch.emitError("loom-gpu-device-constants: cannot sink the "
                         "kernel's constants into it");
        return signalPassFailure();
      }
    // Host uses left (device calls): a device copy.
    SmallVector<memref::GetGlobalOp> globals;
    module.walk([&](memref::GetGlobalOp get) {
      if (!get->getParentOfType<gpu::LaunchOp>() &&
          !get->getParentOfType<gpu::GPUModuleOp>())
        globals.push_back(get);
    });
    for (memref::GetGlobalOp get : globals) {
      if (get.use_empty()) {
        get.erase();
        continue;
      }
      // The runtime uploads a host constant once and copies that copy at
      // every call (mgpuMemcpy): the global must not change.
      auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
          get, get.getNameAttr());
      if (!global || !global.getConstant()) {
        get.emitError("loom-gpu-device-constants: host code passes global ")
            << get.getNameAttr()
            << " to the GPU, but it is not a constant global";
        return signalPassFailure();
      }
      auto type = get.getType();
      auto fn = get->getParentOfType<func::FuncOp>();
      if (!type.hasStaticShape() || !type.getLayout().isIdentity() || !fn ||
          get->getParentRegion() != &fn.getBody()) {
        get.emitError("loom-gpu-device-constants: a constant host code passes "
                      "on must be a static identity-layout buffer read in "
                      "the function's body");
        return signalPassFailure();
      }
      OpBuilder b(get);
      b.setInsertionPointAfter(get);
      Location loc = get.getLoc();
      auto alloc = gpu::AllocOp::create(b, loc, type, Type(), ValueRange{},
                                        ValueRange{}, ValueRange{});
      Value device = alloc.getMemref();
      get.getResult().replaceAllUsesWith(device);
      gpu::MemcpyOp::create(b, loc, Type(), ValueRange{}, device,
                            get.getResult());
      fn.walk([&](func::ReturnOp ret) {
        OpBuilder at(ret);
        gpu::DeallocOp::create(at, ret.getLoc(), Type(), ValueRange{},
                               device);
      });
    }
  }
};

} // namespace
