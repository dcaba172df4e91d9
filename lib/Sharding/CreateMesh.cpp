//===- CreateMesh.cpp - loom-create-mesh ----------------------------------===//

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Sharding/Passes.h"
#include "loom/Support/Debug.h"

#include "mlir/IR/Verifier.h"

#define DEBUG_TYPE "loom-create-mesh"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMCREATEMESH
#include "loom/Sharding/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {
struct CreateMeshPass : loom::impl::LoomCreateMeshBase<CreateMeshPass> {
  using LoomCreateMeshBase::LoomCreateMeshBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    if (!module.getOps<MeshOp>().empty()) {
      module.emitError() << getArgument()
                         << ": the model already declares a mesh; drop "
                            "--mesh to use it (and its shardings)";
      return signalPassFailure();
    }
    SmallVector<Attribute> axes;
    SmallVector<StringRef> specs;
    StringRef(mesh).split(specs, ',');
    for (StringRef spec : specs) {
      auto [axisName, size] = spec.split('=');
      int64_t n = 0;
      if (axisName.trim().empty() || size.trim().getAsInteger(10, n) || n < 1) {
        module.emitError() << getArgument()
                           << ": expected NAME=SIZE[,NAME=SIZE...], got '"
                           << mesh << "'";
        return signalPassFailure();
      }
      axes.push_back(MeshAxisAttr::get(
          ctx, StringAttr::get(ctx, axisName.trim()), n, nullptr, nullptr));
    }
    OpBuilder b(ctx);
    b.setInsertionPointToStart(module.getBody());
    auto op = MeshOp::create(b, module.getLoc(), name, b.getArrayAttr(axes));
    LLVM_DEBUG(llvm::dbgs() << "created " << op << "\n");
    if (failed(mlir::verify(op)))
      return signalPassFailure();
  }
};
} // namespace
