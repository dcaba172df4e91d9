//===- AutodiffPass.cpp - Build a function's gradient function ------------===//

#include "loom/Dialect/Loom/Utils/Utils.h"
#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Training/Autodiff.h"
#include "loom/Training/Passes.h"
#include "loom/Support/Debug.h"

#define DEBUG_TYPE "loom-autodiff"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMAUTODIFF
#include "loom/Training/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {
struct AutodiffPass : loom::impl::LoomAutodiffBase<AutodiffPass> {
  using LoomAutodiffBase::LoomAutodiffBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<func::FuncOp> found =
        loom::lookupFunction(module, function, getArgument());
    if (failed(found) || failed(differentiate(module, *found)))
      signalPassFailure();
  }

  LogicalResult differentiate(ModuleOp module, func::FuncOp fn) {
    if (wrt != "params" && wrt != "all")
      return fn.emitError() << "loom-autodiff: wrt must be 'params' or 'all', "
                               "not '"
                            << wrt << "'";
    if (failed(loom::verifyLossFunction(fn, getArgument())))
      return failure();
    SmallVector<unsigned> selected;
    for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i) {
      if (wrt == "params") {
        ParameterOp param = loom::boundParameter(fn, i);
        if (param && param.getTrainable())
          selected.push_back(i);
      } else if (auto type =
                     dyn_cast<RankedTensorType>(fn.getArgumentTypes()[i]);
                 type && isa<FloatType>(type.getElementType())) {
        selected.push_back(i);
      }
    }
    if (selected.empty())
      return fn.emitError() << "loom-autodiff: @" << fn.getSymName()
                            << " has no "
                            << (wrt == "params" ? "trainable parameters"
                                                : "float arguments")
                            << " to differentiate with respect to";

    MLIRContext *ctx = &getContext();
    OpBuilder moduleBuilder(ctx);
    moduleBuilder.setInsertionPointAfter(fn);
    auto gradFn = cast<func::FuncOp>(moduleBuilder.clone(*fn));
    std::string name = (fn.getSymName() + "_grad").str();
    if (module.lookupSymbol(name))
      return fn.emitError() << "loom-autodiff: @" << name << " already exists";
    gradFn.setSymName(name);

    auto ret = cast<func::ReturnOp>(gradFn.getBody().front().getTerminator());
    Value loss = ret.getOperand(0);
    SmallVector<Value> wrtValues;
    for (unsigned i : selected)
      wrtValues.push_back(gradFn.getArgument(i));
    auto describe = [&](unsigned k) {
      unsigned i = selected[k];
      if (ParameterOp param = loom::boundParameter(fn, i))
        return "parameter @" + param.getSymName().str();
      return "argument '" + loom::argumentName(fn, i) + "'";
    };
    OpBuilder b(ret);
    GradientOptions options;
    options.describe = describe;
    FailureOr<SmallVector<Value>> grads =
        buildGradients(b, loss, wrtValues, options);
    if (failed(grads)) {
      gradFn.erase();
      return failure();
    }

    SmallVector<Value> results = {loss};
    SmallVector<DictionaryAttr> resultAttrs = {gradFn.getResultAttrDict(0)};
    for (auto [k, g] : llvm::enumerate(*grads)) {
      if (!g) {
        auto type = cast<RankedTensorType>(wrtValues[k].getType());
        emitWarning(fn.getLoc())
            << "the loss does not depend on " << describe(k)
            << "; its gradient is zero";
        g = ConstantOp::create(
            b, ret.getLoc(),
            DenseElementsAttr::get(
                type, FloatAttr::get(type.getElementType(), 0.0)));
      }
      results.push_back(g);
      NamedAttrList attrs;
      attrs.set(LoomDialect::kNameAttrName,
                StringAttr::get(ctx, "grad(" +
                                         loom::argumentName(fn, selected[k]) +
                                         ")"));
      resultAttrs.push_back(attrs.getDictionary(ctx));
    }
    LLVM_DEBUG(llvm::dbgs() << "@" << gradFn.getSymName() << ": "
                            << results.size() - 1 << " gradients\n");
    func::ReturnOp::create(b, ret.getLoc(), results);
    ret.erase();
    gradFn.setFunctionType(FunctionType::get(
        ctx, gradFn.getArgumentTypes(), ValueRange(results).getTypes()));
    gradFn.setAllResultAttrs(resultAttrs);
    return success();
  }
};
} // namespace
