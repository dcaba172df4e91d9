//===- ShardingUtils.cpp - Factor shardings -------------------------------===//

#include "loom/Sharding/FactorSharding.h"

#include "loom/Dialect/Loom/Utils/Utils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::loom;

bool FactorSharding::absorb(const TensorFactors &tensor, ShardingAttr sharding,
                            ArrayRef<FactorKind> kinds) {
  if (!sharding || sharding.getRank() != static_cast<int64_t>(tensor.size()))
    return false;
  bool any = false;
  for (auto [d, factors] : llvm::enumerate(tensor)) {
    SmallVector<StringRef> dimAxes = sharding.getDimAxes(d);
    size_t next = 0;
    for (int64_t f : factors) {
      if (next == dimAxes.size())
        break;
      const ShardingFactor &factor = rule.getFactor(f);
      bool kindOk = llvm::is_contained(kinds, factor.kind);
      if (!axes[f].empty() || !kindOk) {
        // The factor is decided (or may not be split): the dimension's
        // remaining axes cannot be mapped past it consistently.
        if (!axes[f].empty()) {
          // Skip the axes this factor already holds, if they match.
          for (StringRef a : axes[f])
            if (next < dimAxes.size() && dimAxes[next] == a)
              ++next;
          // Minor factors only follow a fully split major one.
          if (shards(f) != factor.size)
            break;
          continue;
        }
        break;
      }
      int64_t left = factor.size;
      while (next < dimAxes.size()) {
        StringRef a = dimAxes[next];
        int64_t n = axisSize(a);
        if (used.contains(a) || n <= 0 || left % n != 0)
          break;
        axes[f].push_back(a);
        used.insert(a);
        left /= n;
        ++next;
        any = true;
      }
      // Minor factors only get axes once the major one is fully split.
      if (left != 1)
        break;
    }
  }
  return any;
}

bool FactorSharding::legalize() {
  bool changed = false;
  auto fix = [&](const TensorFactors &tensor) {
    for (const DimFactors &factors : tensor) {
      bool blocked = false;
      for (int64_t f : factors) {
        if (blocked && !axes[f].empty()) {
          for (StringRef a : axes[f])
            used.erase(a);
          axes[f].clear();
          changed = true;
        }
        if (shards(f) != rule.getFactor(f).size)
          blocked = true;
      }
    }
  };
  // Dropping axes never makes another dimension invalid, so one sweep
  // over every tensor suffices.
  for (const TensorFactors &t : rule.getOperands())
    fix(t);
  for (const TensorFactors &t : rule.getResults())
    fix(t);
  return changed;
}

ShardingAttr FactorSharding::project(const TensorFactors &tensor, bool isResult,
                                     MLIRContext *ctx) {
  SmallVector<SmallVector<StringRef>> dims;
  for (const DimFactors &factors : tensor) {
    SmallVector<StringRef> d;
    for (int64_t f : factors)
      llvm::append_range(d, axes[f]);
    dims.push_back(d);
  }
  SmallVector<StringRef> partial;
  ReductionKind kind = ReductionKind::sum;
  if (isResult)
    for (int64_t f = 0, e = rule.getNumFactors(); f < e; ++f)
      if (rule.getFactor(f).kind == FactorKind::Reduction && !axes[f].empty()) {
        if (partial.empty())
          kind = rule.getFactor(f).reduction;
        llvm::append_range(partial, axes[f]);
      }
  return ShardingAttr::get(ctx, mesh.getSymName(), dims, partial, kind);
}

ShardingAttr mlir::loom::replicated(MeshOp mesh, int64_t rank) {
  SmallVector<SmallVector<StringRef>> dims(rank);
  return ShardingAttr::get(mesh.getContext(), mesh.getSymName(), dims);
}

ShardingAttr mlir::loom::opResultSharding(Operation *op, unsigned i) {
  Attribute attr = op->getAttr(LoomDialect::kShardingAttrName);
  if (!attr)
    return nullptr;
  if (auto s = dyn_cast<ShardingAttr>(attr))
    return op->getNumResults() == 1 ? s : nullptr;
  if (auto array = dyn_cast<ArrayAttr>(attr))
    return i < array.size() ? dyn_cast<ShardingAttr>(array[i]) : nullptr;
  return nullptr;
}

void mlir::loom::setOpResultShardings(
    Operation *op, ArrayRef<ShardingAttr> shardings) {
  if (shardings.size() == 1) {
    op->setAttr(LoomDialect::kShardingAttrName, shardings.front());
    return;
  }
  SmallVector<Attribute> attrs(shardings.begin(), shardings.end());
  op->setAttr(LoomDialect::kShardingAttrName,
              ArrayAttr::get(op->getContext(), attrs));
}

ShardingAttr mlir::loom::recordedSharding(Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    auto fn = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
    if (!fn)
      return nullptr;
    return fn.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(),
                                             LoomDialect::kShardingAttrName);
  }
  auto result = cast<OpResult>(value);
  if (auto c = dyn_cast<ShardingConstraintOp>(result.getOwner()))
    return c.getSharding();
  return opResultSharding(result.getOwner(), result.getResultNumber());
}

FailureOr<MeshOp> mlir::loom::findMesh(func::FuncOp fn) {
  auto module = fn->getParentOfType<ModuleOp>();
  FlatSymbolRefAttr name;
  bool conflict = false;
  auto note = [&](Attribute a) {
    a.walk([&](ShardingAttr s) {
      if (!name)
        name = s.getMesh();
      else if (name != s.getMesh())
        conflict = true;
    });
  };
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (Attribute a = fn.getArgAttr(i, LoomDialect::kShardingAttrName))
      note(a);
  for (unsigned i = 0; i < fn.getNumResults(); ++i)
    if (Attribute a = fn.getResultAttr(i, LoomDialect::kShardingAttrName))
      note(a);
  fn.walk([&](Operation *op) {
    if (Attribute a = op->getAttr(LoomDialect::kShardingAttrName))
      note(a);
    if (auto c = dyn_cast<ShardingConstraintOp>(op))
      note(c.getSharding());
  });
  if (conflict)
    return fn.emitError("shardings in @")
           << fn.getSymName() << " name more than one mesh";
  if (name) {
    auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(fn, name);
    if (!mesh)
      return fn.emitError() << name << " is not a loom.mesh";
    return mesh;
  }
  auto meshes = llvm::to_vector(module.getOps<MeshOp>());
  if (meshes.size() != 1)
    return fn.emitError("@") << fn.getSymName()
                             << " has no shardings and the module declares "
                             << meshes.size()
                             << " meshes; name one in a sharding";
  return meshes.front();
}

FailureOr<ShardedFunction>
mlir::loom::lookupShardedFunction(ModuleOp module, StringRef name,
                                  StringRef pass) {
  FailureOr<func::FuncOp> fn = lookupFunction(module, name, pass);
  if (failed(fn))
    return failure();
  FailureOr<MeshOp> mesh = findMesh(*fn);
  if (failed(mesh))
    return failure();
  return ShardedFunction{*fn, *mesh};
}

FailureOr<RankedTensorType>
mlir::loom::localType(RankedTensorType global, ShardingAttr sharding,
                              MeshOp mesh, Location loc, const Twine &what) {
  if (!sharding)
    return global;
  SmallVector<int64_t> shape(global.getShape());
  for (int64_t d = 0, e = shape.size(); d < e; ++d) {
    int64_t n = 1;
    for (StringRef a : sharding.getDimAxes(d))
      n *= mesh.getAxis(a).getSize();
    if (shape[d] % n != 0)
      return emitError(loc) << what << ": dimension " << d << " (size "
                            << shape[d] << ") does not divide over " << n
                            << " devices of sharding " << sharding;
    shape[d] /= n;
  }
  return global.clone(shape);
}

SmallVector<StringRef>
mlir::loom::linearPartial(Operation *op, ArrayRef<ShardingAttr> shardings) {
  auto iface = dyn_cast<ShardingRuleOpInterface>(op);
  if (!iface || shardings.empty())
    return {};
  return linearPartial(iface.getShardingRule(), shardings);
}

SmallVector<StringRef>
mlir::loom::linearPartial(const ShardingRule &rule,
                          ArrayRef<ShardingAttr> shardings) {
  if (shardings.empty())
    return {};
  auto partialSum = [](ShardingAttr s) {
    return s && s.isPartial() && s.getPartialKind() == ReductionKind::sum;
  };
  switch (rule.getLinearity()) {
  case Linearity::None:
    return {};
  case Linearity::Joint:
    // Every operand partial alike.
    for (ShardingAttr s : shardings)
      if (!partialSum(s) ||
          s.getPartialAxes() != shardings.front().getPartialAxes())
        return {};
    return shardings.front().getPartialAxisNames();
  case Linearity::PerOperand:
    // One linear operand partial, every other operand known and whole.
    for (unsigned k : rule.getLinearOperands()) {
      if (k >= shardings.size() || !partialSum(shardings[k]))
        continue;
      bool othersWhole = true;
      for (auto [i, s] : llvm::enumerate(shardings))
        if (i != k && (!s || s.isPartial()))
          othersWhole = false;
      if (othersWhole)
        return shardings[k].getPartialAxisNames();
    }
    return {};
  }
  return {};
}

ShardingAttr mlir::loom::withPartial(ShardingAttr s,
                                             ArrayRef<StringRef> partial) {
  Builder b(s.getContext());
  return ShardingAttr::get(s.getContext(), s.getMesh(), s.getDims(),
                           b.getStrArrayAttr(partial), ReductionKind::sum);
}

/// Results of the train step that are the next value of a parameter keep
/// that parameter's sharding, so that the next step can take them as is.
void mlir::loom::shardUpdatesLikeParameters(func::FuncOp fn) {
  DenseMap<Attribute, ShardingAttr> byParam;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (auto p = fn.getArgAttr(i, LoomDialect::kParamAttrName))
      if (auto s = fn.getArgAttrOfType<ShardingAttr>(
              i, LoomDialect::kShardingAttrName))
        byParam[p] = s;
  for (unsigned i = 0; i < fn.getNumResults(); ++i)
    if (auto p = fn.getResultAttr(i, LoomDialect::kParamAttrName))
      if (!fn.getResultAttr(i, LoomDialect::kShardingAttrName))
        if (ShardingAttr s = byParam.lookup(p))
          fn.setResultAttr(i, LoomDialect::kShardingAttrName, s);
}
