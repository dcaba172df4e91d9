//===- Megatron.cpp - Presets as plans: DP, TP, DP x TP, ZeRO ------------===//

#include "loom/Planner/Megatron.h"

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Planner/Candidates.h"
#include "loom/Sharding/Propagation.h"
#include "loom/Sharding/Strategies.h"

#include "llvm/ADT/ScopeExit.h"

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::planner;

namespace {

/// The index of each of `mesh`'s axes, by name (the planner's mesh shape has
/// the same axes in the same order).
llvm::StringMap<int> axisBits(MeshOp mesh) {
  llvm::StringMap<int> bit;
  for (auto [a, axis] : llvm::enumerate(mesh.getAxes()))
    bit[cast<MeshAxisAttr>(axis).getName().getValue()] = a;
  return bit;
}

/// Reads propagated shardings (by value of the original function) back as
/// strategies of the planner's graph.
class Matcher {
public:
  Matcher(Graph &g, Costs &costs, const DenseMap<Value, ShardingAttr> &shardings,
          MeshOp mesh)
      : g(g), costs(costs), shardings(shardings), bit(axisBits(mesh)) {}

  /// The strategy of node `v` matching the shardings of its values (added
  /// to the candidates if missing).
  int match(int v) {
    Node &n = g.nodes[v];
    if (n.kind != NodeKind::Op)
      return matchTensor(n);
    auto iface = dyn_cast<ShardingRuleOpInterface>(n.op);
    if (!iface)
      return 0;
    ShardingRule rule = iface.getShardingRule();
    SmallVector<Mask, 4> factors = factorsOf(n, rule);
    Strategy s = strategyFor(n, rule, factors);
    for (size_t i = 0; i < n.strategies.size(); ++i)
      if (n.strategies[i].sameOutside(s))
        return i;
    n.strategies.push_back(s);
    return n.strategies.size() - 1;
  }

private:
  std::optional<AxisSharding> lookup(Value x) {
    ShardingAttr s = shardings.lookup(x);
    if (!s)
      return std::nullopt;
    return toAxisSharding(s, bit);
  }

  int matchTensor(Node &n) {
    std::optional<AxisSharding> t = lookup(g.fn.getArgument(n.argIndex));
    AxisSharding want = t ? *t : AxisSharding(n.type.getRank());
    want.partial.clear();
    for (size_t i = 0; i < n.strategies.size(); ++i)
      if (n.strategies[i].results[0] == want)
        return i;
    n.strategies.push_back(tensorStrategy(n, want, costs.mesh));
    return n.strategies.size() - 1;
  }

  /// Axes per factor, taken from the operands' shardings (activations
  /// first, parameters last, as the partitioner does) and the result's.
  SmallVector<Mask, 4> factorsOf(Node &n, const ShardingRule &rule) {
    SmallVector<Mask, 4> factors(rule.getNumFactors(), 0);
    Mask usedAxes = 0;
    auto absorb = [&](const TensorFactors &tf, const AxisSharding &t,
                      bool result) {
      for (size_t d = 0; d < tf.size() && d < t.dims.size(); ++d) {
        if (tf[d].empty())
          continue;
        int64_t f = tf[d].front();
        const ShardingFactor &sf = rule.getFactor(f);
        if (sf.kind == FactorKind::Replicated ||
            (result && sf.kind == FactorKind::Reduction))
          continue;
        for (int a : t.dims[d]) {
          Mask bitA = Mask(1) << a;
          if ((usedAxes & bitA) || costs.mesh.sizes[a] <= 1 ||
              sf.size % (costs.mesh.n(factors[f]) * costs.mesh.sizes[a]) != 0)
            continue;
          factors[f] |= bitA;
          usedAxes |= bitA;
        }
      }
    };
    SmallVector<unsigned> order;
    for (unsigned k = 0; k < n.op->getNumOperands(); ++k)
      if (!isa<BlockArgument>(n.op->getOperand(k)))
        order.push_back(k);
    for (unsigned k = 0; k < n.op->getNumOperands(); ++k)
      if (isa<BlockArgument>(n.op->getOperand(k)))
        order.push_back(k);
    for (unsigned k : order)
      if (std::optional<AxisSharding> t = lookup(n.op->getOperand(k)))
        absorb(rule.getOperands()[k], *t, false);
    if (n.op->getNumResults())
      if (std::optional<AxisSharding> t = lookup(n.op->getResult(0)))
        absorb(rule.getResults()[0], *t, true);
    // A split a block layout cannot hold stays whole; the op's cost then
    // includes gathering its operand.
    clearInexpressibleSplits(rule, factors, costs.mesh);
    return factors;
  }

  /// The strategy of `factors`, its partial result scattered into the
  /// dimension propagation split by those axes, if any.
  Strategy strategyFor(Node &n, const ShardingRule &rule,
                       ArrayRef<Mask> factors) {
    Strategy s = opStrategy(n, rule, factors, -1, costs);
    std::optional<AxisSharding> res;
    if (n.op->getNumResults())
      res = lookup(n.op->getResult(0));
    if (!s.partial || !res)
      return s;
    for (size_t d = 0; d < res->dims.size(); ++d)
      if ((maskOf(res->dims[d]) & s.partial) &&
          !(maskOf(s.results[0].dims[d]) & s.partial))
        return opStrategy(n, rule, factors, d, costs);
    return s;
  }

  Graph &g;
  Costs &costs;
  const DenseMap<Value, ShardingAttr> &shardings;
  llvm::StringMap<int> bit;
};

/// The preset's shardings of every value of `fn` on `mesh`, by value of
/// `fn`. `quiet`: the preset's errors are not reported.
FailureOr<DenseMap<Value, ShardingAttr>>
presetShardings(func::FuncOp fn, MeshOp mesh, const StrategyOptions &options,
                bool quiet) {
  MLIRContext *ctx = fn.getContext();
  OpBuilder ob(ctx);
  ob.setInsertionPoint(fn);
  auto clone = cast<func::FuncOp>(ob.clone(*fn));
  clone.setSymName("__loom_preset_step");
  auto cleanup = llvm::make_scope_exit([&] { clone.erase(); });
  // Hints of the model and earlier plans do not belong to the preset.
  for (unsigned i = 0; i < clone.getNumArguments(); ++i)
    clone.removeArgAttr(i, LoomDialect::kShardingAttrName);
  {
    std::optional<ScopedDiagnosticHandler> silence;
    if (quiet)
      silence.emplace(ctx, [](Diagnostic &) { return success(); });
    if (failed(applyStrategy(clone, mesh, options)))
      return failure();
  }
  PropagationResult r = propagate(clone, mesh);
  // The clone's values in the original's order.
  DenseMap<Value, Value> toClone;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    toClone[fn.getArgument(i)] = clone.getArgument(i);
  for (auto [x, y] : llvm::zip(fn.getBody().front(), clone.getBody().front()))
    for (auto [rx, ry] : llvm::zip(x.getResults(), y.getResults()))
      toClone[rx] = ry;
  DenseMap<Value, ShardingAttr> byOriginal;
  for (auto &[orig, c] : toClone)
    if (ShardingAttr s = r.shardings.lookup(c))
      byOriginal[orig] = s;
  return byOriginal;
}

/// The choice per node reading `shardings`.
SmallVector<int> match(Graph &g, Costs &costs,
                       const DenseMap<Value, ShardingAttr> &shardings,
                       MeshOp mesh) {
  Matcher matcher(g, costs, shardings, mesh);
  SmallVector<int> choice(g.nodes.size(), 0);
  for (int v = 0; v < int(g.nodes.size()); ++v)
    if (g.nodes[v].rep == v)
      choice[v] = matcher.match(v);
  for (int v = 0; v < int(g.nodes.size()); ++v) {
    choice[v] = choice[g.nodes[v].rep];
    if (g.nodes[v].rep != v)
      g.nodes[v].strategies = g.nodes[g.nodes[v].rep].strategies;
  }
  return choice;
}

} // namespace

FailureOr<SmallVector<int>>
mlir::loom::planner::presetChoice(Graph &g, Costs &costs, MeshOp mesh,
                                  const StrategyOptions &preset) {
  FailureOr<DenseMap<Value, ShardingAttr>> shardings =
      presetShardings(g.fn, mesh, preset, /*quiet=*/false);
  if (failed(shardings))
    return failure();
  // The optimizer state as the preset splits it (ZeRO-1/2/3: over dp;
  // ZeRO-3 splits the weights too, which their shardings carry): beyond
  // its weight's split, in one dimension. Other presets keep it whole.
  g.shardState = false;
  g.stateSplit.clear();
  llvm::StringMap<int> bit = axisBits(mesh);
  for (unsigned i = 0; i < g.fn.getNumArguments(); ++i) {
    int w = g.stateOwner[i];
    ShardingAttr state = shardings->lookup(g.fn.getArgument(i));
    ShardingAttr weight =
        w >= 0 ? shardings->lookup(g.fn.getArgument(w)) : ShardingAttr();
    if (!state || !weight || g.stateSplit.count(w))
      continue;
    for (int64_t d = 0; d < state.getRank(); ++d) {
      Mask extra = 0;
      for (StringRef axis : state.getDimAxes(d))
        if (!llvm::is_contained(weight.getDimAxes(d), axis))
          extra |= Mask(1) << bit.lookup(axis);
      if (extra) {
        g.stateSplit[w] = {extra, int(d)};
        break;
      }
    }
  }
  return match(g, costs, *shardings, mesh);
}

FailureOr<SmallVector<int>>
mlir::loom::planner::megatronChoice(ModuleOp module, Graph &g, Costs &costs) {
  MLIRContext *ctx = module.getContext();
  OpBuilder ob(ctx);
  ob.setInsertionPointToStart(module.getBody());
  SmallVector<Attribute> axes;
  for (int a = 0; a < 2; ++a)
    axes.push_back(MeshAxisAttr::get(ctx, StringAttr::get(ctx, a ? "tp" : "dp"),
                                     costs.mesh.sizes[a], nullptr, nullptr));
  auto mesh = MeshOp::create(ob, module.getLoc(), "__loom_megatron",
                             ob.getArrayAttr(axes));
  auto cleanup = llvm::make_scope_exit([&] { mesh.erase(); });
  StrategyOptions options;
  options.strategy = costs.mesh.sizes[1] == 1   ? "dp"
                     : costs.mesh.sizes[0] == 1 ? "tp"
                                                : "dp-tp";
  FailureOr<DenseMap<Value, ShardingAttr>> shardings =
      presetShardings(g.fn, mesh, options, /*quiet=*/true);
  if (failed(shardings))
    return failure();
  return match(g, costs, *shardings, mesh);
}
