//===- PrepareForExecution.cpp - Destination-passing entry functions ------===//

#include "loom/Codegen/CPU/Passes.h"
#include "loom/Dialect/Loom/IR/LoomOps.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "loom/Support/Debug.h"

#define DEBUG_TYPE "loom-prepare-for-execution"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMPREPAREFOREXECUTION
#include "loom/Codegen/CPU/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {
/// Gives every use of a `tensor.empty` or of a `linalg.fill` of one its own
/// copy, just before the op that uses it. CSE merges identical initial
/// values of different ops; empty-tensor elimination would then rewrite the
/// shared value into one result's output buffer while another op still
/// reads it as zeros. And the buffer is allocated where the value is
/// defined: a zero-filled 512 MiB product of the backward whose fill CSE
/// had merged into the forward's would be allocated and filled in the
/// forward and held through the step.
static void unshareDestinations(func::FuncOp fn) {
  OpBuilder b(fn.getContext());
  auto unshare = [&](Operation *op) {
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : op->getResult(0).getUses())
      uses.push_back(&use);
    for (OpOperand *use : uses) {
      b.setInsertionPoint(use->getOwner());
      Operation *copy = b.clone(*op);
      if (auto fill = dyn_cast<linalg::FillOp>(copy))
        if (Operation *init = fill.getOutputs()[0].getDefiningOp();
            init && isa<tensor::EmptyOp>(init)) {
          b.setInsertionPoint(copy);
          copy->setOperand(1, b.clone(*init)->getResult(0));
        }
      use->set(copy->getResult(0));
    }
    if (op->use_empty())
      op->erase();
  };
  SmallVector<Operation *> fills, empties;
  fn.walk([&](Operation *op) {
    if (auto fill = dyn_cast<linalg::FillOp>(op);
        fill && fill.hasPureTensorSemantics())
      fills.push_back(op);
    else if (isa<tensor::EmptyOp>(op))
      empties.push_back(op);
  });
  for (Operation *op : fills)
    unshare(op);
  for (Operation *op : empties)
    unshare(op);
}


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
      // CSE is behind us: barriers (rematerialization) have done their job.
      fn.walk([](OptimizationBarrierOp barrier) {
        barrier->replaceAllUsesWith(barrier.getInputs());
        barrier.erase();
      });
      unshareDestinations(fn);
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
        auto tensor = dyn_cast<RankedTensorType>(t);
        if (!tensor) {
          fn.emitError() << "a step's results must be ranked tensors; result "
                         << outs.size() << " is " << t;
          return signalPassFailure();
        }
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
      LLVM_DEBUG(llvm::dbgs() << "entry @" << fn.getSymName() << ": "
                              << fn.getFunctionType() << "\n");
      // Loom function attributes (loom.partitioned names the erased mesh).
      for (NamedAttribute attr : llvm::to_vector(fn->getDiscardableAttrs()))
        if (attr.getName().getValue().starts_with("loom."))
          fn->removeAttr(attr.getName());
    }
  }
};
} // namespace
