//===- AddLoss.cpp - Turn a model output into a scalar loss ---------------===//

#include "loom/Dialect/Loom/Utils/Utils.h"
#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Training/Passes.h"
#include "loom/Support/Debug.h"

#define DEBUG_TYPE "loom-add-loss"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMADDLOSS
#include "loom/Training/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {
struct AddLossPass : loom::impl::LoomAddLossBase<AddLossPass> {
  using LoomAddLossBase::LoomAddLossBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<func::FuncOp> found =
        loom::lookupFunction(module, function, getArgument());
    if (failed(found))
      return signalPassFailure();
    func::FuncOp fn = *found;
    if (failed(addLoss(fn)))
      return signalPassFailure();
  }

  LogicalResult addLoss(func::FuncOp fn) {
    if (loss != "cross_entropy" && loss != "nll" && loss != "mse")
      return fn.emitError() << "loom-add-loss: unknown loss '" << loss
                            << "' (expected cross_entropy, nll or mse)";
    if (fn.isExternal() || !fn.getBody().hasOneBlock())
      return fn.emitError("loom-add-loss: the function needs a body");
    auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
    if (output >= ret.getNumOperands())
      return fn.emitError() << "loom-add-loss: @" << fn.getSymName()
                            << " has " << ret.getNumOperands()
                            << " outputs; there is no output #"
                            << static_cast<unsigned>(output);
    for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i)
      if (auto name = fn.getArgAttrOfType<StringAttr>(
              i, LoomDialect::kNameAttrName);
          name && name.getValue() == "labels")
        return fn.emitError() << "loom-add-loss: argument #" << i
                              << " is already named 'labels'";
    Value out = ret.getOperand(output);
    auto outType = dyn_cast<RankedTensorType>(out.getType());
    std::string outName = "output #" + std::to_string(output);
    if (auto name = fn.getResultAttrOfType<StringAttr>(
            output, LoomDialect::kNameAttrName))
      outName += " ('" + name.str() + "')";
    if (!outType || !isa<FloatType>(outType.getElementType()))
      return fn.emitError() << "loom-add-loss: " << outName << " has type "
                            << out.getType()
                            << "; a loss needs a float tensor";

    MLIRContext *ctx = &getContext();
    OpBuilder b(ret);
    Location loc = ret.getLoc();
    Type labelsType;
    Value lossValue;
    NamedAttrList labelAttrs;
    labelAttrs.set(LoomDialect::kNameAttrName, StringAttr::get(ctx, "labels"));
    BlockArgument labels;
    auto addLabels = [&](Type type) {
      unsigned index = fn.getNumArguments();
      (void)fn.insertArgument(index, type,
                              DictionaryAttr::get(ctx, labelAttrs), loc);
      labels = fn.getArgument(index);
    };

    if (loss == "mse") {
      labelsType = outType;
      addLabels(labelsType);
      lossValue = MseLossOp::create(b, loc, out, labels, LossReduction::mean);
    } else {
      int64_t rank = outType.getRank();
      if (rank < 2)
        return fn.emitError()
               << "loom-add-loss: " << outName << " has type " << outType
               << "; " << loss
               << " needs logits with a batch and a class dimension";
      int64_t axis = classAxis < 0 ? classAxis + rank : classAxis;
      if (axis < 0 || axis >= rank || axis == 0)
        return fn.emitError()
               << "loom-add-loss: class-axis " << static_cast<int64_t>(classAxis)
               << " is not a class dimension of " << outType
               << " (dimension 0 is the batch)";
      int64_t classes = outType.getDimSize(axis);
      SmallVector<int64_t> labelShape;
      for (int64_t d = 0; d < rank; ++d)
        if (d != axis)
          labelShape.push_back(outType.getDimSize(d));
      labelsType = RankedTensorType::get(labelShape, b.getI64Type());
      labelAttrs.set(LoomDialect::kIndexBoundAttrName,
                     b.getI64IntegerAttr(classes));
      addLabels(labelsType);
      Value logits = out, target = labels;
      if (axis == rank - 1 && rank > 2) {
        // [..., C] -> [M, C] and labels [...] -> [M].
        int64_t m = outType.getNumElements() / classes;
        logits = ReshapeOp::create(b, loc, outType.clone({m, classes}), out);
        target = ReshapeOp::create(
            b, loc, RankedTensorType::get({m}, b.getI64Type()), labels);
      } else if (axis != 1) {
        SmallVector<int64_t> perm = {0, axis};
        for (int64_t d = 1; d < rank; ++d)
          if (d != axis)
            perm.push_back(d);
        logits = TransposeOp::create(b, loc, out, perm);
      }
      if (loss == "cross_entropy")
        lossValue = CrossEntropyOp::create(b, loc, logits, target, Value(),
                                           LossReduction::mean, nullptr);
      else
        lossValue = NllLossOp::create(b, loc, logits, target, Value(),
                                      LossReduction::mean, nullptr);
    }

    LLVM_DEBUG(llvm::dbgs() << "loss " << loss << " of output #" << output
                            << " (" << outType << "): " << lossValue << "\n");
    func::ReturnOp::create(b, loc, lossValue);
    ret.erase();
    fn.setFunctionType(FunctionType::get(ctx, fn.getArgumentTypes(),
                                         {lossValue.getType()}));
    NamedAttrList resultAttrs;
    resultAttrs.set(LoomDialect::kNameAttrName, StringAttr::get(ctx, "loss"));
    fn.setAllResultAttrs(
        ArrayRef<DictionaryAttr>{resultAttrs.getDictionary(ctx)});
    return success();
  }
};
} // namespace
