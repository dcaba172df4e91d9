//===- PassUtils.cpp - Helpers shared by the loom training passes ---------===//

#include "PassUtils.h"

using namespace mlir;
using namespace mlir::loom;

FailureOr<func::FuncOp> loom::detail::lookupFunction(ModuleOp module, StringRef name,
                                               StringRef pass) {
  if (!name.empty()) {
    auto fn = module.lookupSymbol<func::FuncOp>(name);
    if (!fn)
      return module.emitError() << pass << ": no function named @" << name;
    return fn;
  }
  auto fns = llvm::to_vector(module.getOps<func::FuncOp>());
  if (fns.size() != 1)
    return module.emitError()
           << pass << ": the module has " << fns.size()
           << " functions; say which one with function=<name>";
  return fns.front();
}

ParameterOp loom::detail::boundParameter(func::FuncOp fn, unsigned index) {
  auto ref = fn.getArgAttrOfType<FlatSymbolRefAttr>(
      index, LoomDialect::kParamAttrName);
  if (!ref)
    return nullptr;
  return SymbolTable::lookupNearestSymbolFrom<ParameterOp>(fn, ref);
}

std::string loom::detail::argumentName(func::FuncOp fn, unsigned index) {
  if (auto name =
          fn.getArgAttrOfType<StringAttr>(index, LoomDialect::kNameAttrName))
    return name.str();
  if (ParameterOp param = boundParameter(fn, index))
    return param.getSymName().str();
  return "arg" + std::to_string(index);
}

LogicalResult loom::detail::verifyLossFunction(func::FuncOp fn, StringRef pass) {
  if (fn.isExternal() || !fn.getBody().hasOneBlock())
    return fn.emitError() << pass << ": @" << fn.getSymName()
                          << " must have a body of one block";
  if (fn.getNumResults() == 0)
    return fn.emitError() << pass << ": @" << fn.getSymName()
                          << " returns nothing; its first result must be the "
                             "loss (run loom-add-loss first)";
  auto type = dyn_cast<RankedTensorType>(fn.getResultTypes()[0]);
  if (!type || type.getRank() != 0 || !isa<FloatType>(type.getElementType()))
    return fn.emitError() << pass << ": the first result of @"
                          << fn.getSymName() << " is "
                          << fn.getResultTypes()[0]
                          << ", not a scalar float loss (run loom-add-loss "
                             "first)";
  return success();
}

LogicalResult loom::detail::verifySingleBlock(func::FuncOp fn, StringRef pass) {
  if (fn.isExternal() || !fn.getBody().hasOneBlock())
    return fn.emitError() << pass << ": @" << fn.getSymName()
                          << " must have a body of one block";
  return success();
}
