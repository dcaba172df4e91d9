//===- AnnotateIndexBounds.cpp - Integer inputs used as indices -----------===//

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Dialect/Loom/Utils/Utils.h"
#include "loom/Support/Debug.h"
#include "loom/Training/Passes.h"

#define DEBUG_TYPE "loom-annotate-index-bounds"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMANNOTATEINDEXBOUNDS
#define GEN_PASS_DEF_LOOMFREEZEPARAMETERS
#include "loom/Training/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

/// The range of an integer argument used as an index: the size of what it
/// indexes (smallest over its uses), 0 when no use says.
int64_t indexBound(BlockArgument arg) {
  int64_t bound = 0;
  auto limit = [&](int64_t size) {
    bound = bound ? std::min(bound, size) : size;
  };
  for (Operation *user : arg.getUsers()) {
    if (auto gather = dyn_cast<GatherOp>(user);
        gather && gather.getIndices() == arg)
      limit(gather.getInput().getType().getDimSize(gather.getAxis()));
    if (auto ce = dyn_cast<CrossEntropyOp>(user); ce && ce.getLabels() == arg)
      limit(ce.getInput().getType().getDimSize(1));
    if (auto nll = dyn_cast<NllLossOp>(user); nll && nll.getLabels() == arg)
      limit(nll.getInput().getType().getDimSize(1));
  }
  return bound;
}

struct AnnotateIndexBoundsPass
    : loom::impl::LoomAnnotateIndexBoundsBase<AnnotateIndexBoundsPass> {
  using LoomAnnotateIndexBoundsBase::LoomAnnotateIndexBoundsBase;

  void runOnOperation() override {
    FailureOr<func::FuncOp> fn =
        lookupFunction(getOperation(), function, getArgument());
    if (failed(fn))
      return signalPassFailure();
    for (BlockArgument arg : fn->getArguments()) {
      if (fn->getArgAttr(arg.getArgNumber(), LoomDialect::kIndexBoundAttrName))
        continue;
      int64_t bound = indexBound(arg);
      if (bound <= 0)
        continue;
      LLVM_DEBUG(llvm::dbgs() << "index bound " << bound << " for '"
                              << argumentName(*fn, arg.getArgNumber())
                              << "'\n");
      fn->setArgAttr(arg.getArgNumber(), LoomDialect::kIndexBoundAttrName,
                     IntegerAttr::get(IntegerType::get(&getContext(), 64),
                                      bound));
    }
  }
};

struct FreezeParametersPass
    : loom::impl::LoomFreezeParametersBase<FreezeParametersPass> {
  using LoomFreezeParametersBase::LoomFreezeParametersBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (const std::string &name : names) {
      auto param = module.lookupSymbol<ParameterOp>(name);
      if (!param) {
        module.emitError() << getArgument() << ": '" << name
                           << "' is not a parameter of the module";
        return signalPassFailure();
      }
      param.setTrainable(false);
    }
  }
};

} // namespace
