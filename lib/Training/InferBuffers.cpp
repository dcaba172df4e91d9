//===- InferBuffers.cpp - Parameters no gradient reaches are buffers ------===//

#include "loom/Dialect/Loom/Utils/Utils.h"
#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Training/Autodiff.h"
#include "loom/Training/Passes.h"
#include "loom/Support/Debug.h"

#define DEBUG_TYPE "loom-infer-buffers"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMINFERBUFFERS
#include "loom/Training/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {
struct InferBuffersPass : loom::impl::LoomInferBuffersBase<InferBuffersPass> {
  using LoomInferBuffersBase::LoomInferBuffersBase;

  void runOnOperation() override {
    FailureOr<func::FuncOp> fn =
        loom::lookupFunction(getOperation(), function, getArgument());
    if (failed(fn))
      return signalPassFailure();
    if (fn->isExternal() || !fn->getBody().hasOneBlock())
      return;
    SmallVector<Value> params;
    SmallVector<ParameterOp> decls;
    for (unsigned i = 0, e = fn->getNumArguments(); i < e; ++i) {
      ParameterOp decl = loom::boundParameter(*fn, i);
      if (decl && decl.getTrainable()) {
        params.push_back(fn->getArgument(i));
        decls.push_back(decl);
      }
    }
    Block &body = fn->getBody().front();
    Dependence dep = analyzeDependence(body, params,
                                       body.getTerminator()->getOperands());
    for (auto [i, decl] : llvm::enumerate(decls)) {
      LLVM_DEBUG(llvm::dbgs() << "@" << decl.getSymName() << ": reached "
                              << dep.reached.test(i) << ", differentiable "
                              << dep.differentiable.test(i) << "\n");
      if (!dep.reached.test(i) || dep.differentiable.test(i))
        continue;
      decl.setTrainable(false);
      decl.emitRemark() << "@" << decl.getSymName()
                        << " is a buffer, not a weight: the results depend on "
                           "it only through values no gradient passes "
                           "(comparisons, integers)";
    }
  }
};
} // namespace
