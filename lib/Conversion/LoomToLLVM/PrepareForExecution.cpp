//===- PrepareForExecution.cpp - Destination-passing entry functions ------===//

#include "loom/Conversion/Passes.h"
#include "loom/Dialect/Loom/IR/LoomOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#define DEBUG_TYPE "loom-prepare-for-execution"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMPREPAREFOREXECUTION
#include "loom/Conversion/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

/// Drops attributes in the loom namespace from a dictionary.
DictionaryAttr withoutLoomAttrs(DictionaryAttr dict, MLIRContext *ctx) {
  if (!dict)
    return DictionaryAttr::get(ctx);
  SmallVector<NamedAttribute> kept;
  for (NamedAttribute a : dict)
    if (!a.getName().getValue().starts_with("loom."))
      kept.push_back(a);
  return DictionaryAttr::get(ctx, kept);
}

struct PrepareForExecutionPass
    : loom::impl::LoomPrepareForExecutionBase<PrepareForExecutionPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    // Declarations are consumed by the runtime (parameter values) and the
    // planner (meshes); they have no code.
    for (Operation &op : llvm::make_early_inc_range(*module.getBody()))
      if (isa<ParameterOp, MeshOp>(op))
        op.erase();

    for (func::FuncOp fn : module.getOps<func::FuncOp>()) {
      if (fn.isExternal() || !fn.isPublic())
        continue;
      OpBuilder b(ctx);
      Block &entry = fn.getBody().front();
      unsigned numInputs = fn.getNumArguments();
      SmallVector<DictionaryAttr> argAttrs;
      for (unsigned i = 0; i < numInputs; ++i) {
        // Inputs belong to the caller: never write them in place.
        NamedAttrList attrs(withoutLoomAttrs(fn.getArgAttrDict(i), ctx));
        attrs.set(bufferization::BufferizationDialect::kWritableAttrName,
                  b.getBoolAttr(false));
        argAttrs.push_back(attrs.getDictionary(ctx));
      }
      // Results are written into caller-provided buffers.
      SmallVector<Value> outs;
      for (Type t : fn.getResultTypes()) {
        auto tensor = cast<RankedTensorType>(t);
        outs.push_back(entry.addArgument(
            MemRefType::get(tensor.getShape(), tensor.getElementType()),
            fn.getLoc()));
        argAttrs.push_back(DictionaryAttr::get(ctx));
      }
      fn.walk([&](func::ReturnOp ret) {
        b.setInsertionPoint(ret);
        for (auto [value, out] : llvm::zip(ret.getOperands(), outs))
          bufferization::MaterializeInDestinationOp::create(
              b, ret.getLoc(), TypeRange{}, value, out, /*restrict=*/true,
              /*writable=*/true);
        ret->setOperands({});
      });
      fn.setFunctionType(
          FunctionType::get(ctx, entry.getArgumentTypes(), TypeRange{}));
      fn.setAllArgAttrs(argAttrs);
      fn.removeResAttrsAttr();
      fn->setAttr("llvm.emit_c_interface", UnitAttr::get(ctx));
    }
  }
};
} // namespace
