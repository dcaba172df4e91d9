//===- PassUtils.cpp - Helpers shared by the loom training passes ---------===//

#include "loom/Dialect/Loom/Utils/Utils.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::loom;

FailureOr<func::FuncOp> loom::lookupFunction(ModuleOp module, StringRef name,
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

ParameterOp loom::boundParameter(func::FuncOp fn, unsigned index) {
  auto ref = fn.getArgAttrOfType<FlatSymbolRefAttr>(
      index, LoomDialect::kParamAttrName);
  if (!ref)
    return nullptr;
  return SymbolTable::lookupNearestSymbolFrom<ParameterOp>(fn, ref);
}

std::string loom::argumentName(func::FuncOp fn, unsigned index) {
  if (auto name =
          fn.getArgAttrOfType<StringAttr>(index, LoomDialect::kNameAttrName))
    return name.str();
  if (ParameterOp param = boundParameter(fn, index))
    return param.getSymName().str();
  return "arg" + std::to_string(index);
}

LogicalResult loom::verifyLossFunction(func::FuncOp fn, StringRef pass) {
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

LogicalResult loom::verifySingleBlock(func::FuncOp fn, StringRef pass) {
  if (fn.isExternal() || !fn.getBody().hasOneBlock())
    return fn.emitError() << pass << ": @" << fn.getSymName()
                          << " must have a body of one block";
  return success();
}

llvm::DenseSet<Operation *> loom::lossAncestors(func::FuncOp fn) {
  llvm::DenseSet<Operation *> ops;
  auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
  SmallVector<Value> work = {ret.getOperand(0)};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    Operation *def = v.getDefiningOp();
    if (!def || !ops.insert(def).second)
      continue;
    llvm::append_range(work, def->getOperands());
  }
  return ops;
}

SmallVector<int> loom::optimizerStateOwners(func::FuncOp fn) {
  llvm::DenseMap<StringAttr, int> weightArg;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    ParameterOp p = boundParameter(fn, i);
    if (p && p.getTrainable())
      weightArg[p.getSymNameAttr()] = i;
  }
  SmallVector<int> owner(fn.getNumArguments(), -1);
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (ParameterOp p = boundParameter(fn, i))
      if (FlatSymbolRefAttr w = p.getStateOfAttr())
        owner[i] = weightArg.lookup_or(w.getAttr(), -1);
  return owner;
}

void loom::dropShardingHints(func::FuncOp fn) {
  fn.walk([](Operation *op) {
    if (!isa<ShardingConstraintOp>(op))
      op->removeAttr(LoomDialect::kShardingAttrName);
  });
}

std::string loom::humanBytes(double bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  return llvm::formatv("{0:f1} {1}", bytes, units[u]).str();
}

std::string loom::opName(Operation *op) {
  Location loc = op->getLoc();
  if (auto n = dyn_cast<NameLoc>(loc))
    return n.getName().str();
  if (auto f = dyn_cast<FusedLoc>(loc))
    for (Location l : f.getLocations())
      if (auto n = dyn_cast<NameLoc>(l))
        return n.getName().str();
  return "";
}

int64_t loom::tensorBytes(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  if (!t)
    return 0;
  Type e = t.getElementType();
  int64_t bits =
      e.isIntOrFloat() ? std::max<int64_t>(8, e.getIntOrFloatBitWidth()) : 32;
  return t.getNumElements() * bits / 8;
}

LogicalResult loom::resolvePlannedMicroBatches(ModuleOp module,
                                               int64_t &count, StringRef pass,
                                               StringRef option) {
  if (count != 0)
    return success();
  auto plan = module->getAttrOfType<DictionaryAttr>(
      LoomDialect::kPipelinePlanAttrName);
  if (!plan)
    return module.emitError()
           << pass << ": " << option
           << "=0 takes the micro-batches the planner chose "
              "(loom.pipeline_plan, written by loom-plan-pipeline), and the "
              "module has no such plan";
  count = plan.getAs<IntegerAttr>("micro_batches").getInt();
  return success();
}

std::string loom::describePipelineDecision(DictionaryAttr plan) {
  if (!plan)
    return "";
  auto seconds = [](DictionaryAttr d) {
    auto t = d ? d.getAs<FloatAttr>("step_s") : nullptr;
    return t ? t.getValueAsDouble() : -1.0;
  };
  auto str = [](DictionaryAttr d, StringRef key) {
    auto s = d ? d.getAs<StringAttr>(key) : nullptr;
    return s ? s.getValue().str() : std::string("?");
  };
  auto integer = [](DictionaryAttr d, StringRef key) {
    auto i = d ? d.getAs<IntegerAttr>(key) : nullptr;
    return i ? i.getInt() : int64_t(0);
  };
  double chosen = seconds(plan);
  if (auto without = plan.getAs<DictionaryAttr>("without_pipeline")) {
    double other = seconds(without);
    return llvm::formatv("pipeline chosen (loom-plan-pipeline): {0:f3} ms "
                         "predicted against {1:f3} ms for the best plan "
                         "without a pipeline (mesh {2}): {3:f2}x faster",
                         chosen * 1e3, other * 1e3, str(without, "mesh"),
                         chosen > 0 ? other / chosen : 0.0)
        .str();
  }
  if (auto why = plan.getAs<StringAttr>("without_pipeline"))
    return ("pipeline chosen (loom-plan-pipeline): without a pipeline " +
            why.getValue())
        .str();
  if (auto piped = plan.getAs<DictionaryAttr>("pipelined")) {
    double other = seconds(piped);
    int64_t m = integer(piped, "micro_batches");
    return llvm::formatv("no pipeline (loom-plan-pipeline): the best "
                         "pipelined plan (mesh {0}, {1} micro-batch{2}, "
                         "schedule {3}) is predicted at {4:f3} ms against "
                         "{5:f3} ms without one",
                         str(piped, "mesh"), m, m == 1 ? "" : "es",
                         str(piped, "schedule"), other * 1e3, chosen * 1e3)
        .str();
  }
  if (auto why = plan.getAs<StringAttr>("pipelined"))
    return ("no pipeline (loom-plan-pipeline): " + why.getValue()).str();
  return "";
}
