//===- NameKernels.cpp - Unique kernel names for the runtime --------------===//

#include "loom/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMGPUNAMEKERNELS
#include "loom/Codegen/CUDA/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

struct NameKernelsPass : loom::impl::LoomGpuNameKernelsBase<NameKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Old symbol reference -> new one, per module.
    llvm::DenseMap<Attribute, Attribute> renamed;
    for (auto gpuModule : module.getOps<gpu::GPUModuleOp>()) {
      SmallVector<gpu::GPUFuncOp> kernels;
      for (auto fn : gpuModule.getOps<gpu::GPUFuncOp>())
        if (fn.isKernel())
          kernels.push_back(fn);
      for (auto [i, fn] : llvm::enumerate(kernels)) {
        std::string name = gpuModule.getName().str();
        if (kernels.size() > 1)
          name += "_" + std::to_string(i);
        if (fn.getName() == name)
          continue;
        if (SymbolTable::lookupSymbolIn(gpuModule, name)) {
          fn.emitError() << "loom-gpu-name-kernels: '" << name
                         << "' is taken in its module";
          return signalPassFailure();
        }
        auto from = SymbolRefAttr::get(
            gpuModule.getNameAttr(),
            {FlatSymbolRefAttr::get(fn.getNameAttr())});
        auto to = SymbolRefAttr::get(
            gpuModule.getNameAttr(),
            {FlatSymbolRefAttr::get(&getContext(), name)});
        renamed[from] = to;
        SymbolTable::setSymbolName(fn, name);
      }
    }
    if (renamed.empty())
      return;
    module.walk([&](gpu::LaunchFuncOp launch) {
      auto it = renamed.find(launch.getKernel());
      if (it != renamed.end())
        launch.setKernelAttr(cast<SymbolRefAttr>(it->second));
    });
  }
};

} // namespace
