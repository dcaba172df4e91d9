//===- Candidates.cpp - The ways each node may be sharded -----------------===//

#include "loom/Planner/Candidates.h"

#include "loom/Dialect/Loom/IR/LoomOps.h"

#include <functional>

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::planner;

bool mlir::loom::planner::clearInexpressibleSplits(
    const ShardingRule &rule, MutableArrayRef<Mask> factors,
    const MeshShape &mesh) {
  bool cleared = false;
  auto clear = [&](const TensorFactors &tf) {
    for (const DimFactors &d : tf) {
      bool blocked = false;
      for (int64_t f : d) {
        if (blocked && factors[f]) {
          factors[f] = 0;
          cleared = true;
        }
        if (mesh.n(factors[f]) != rule.getFactor(f).size)
          blocked = true;
      }
    }
  };
  for (const TensorFactors &tf : rule.getOperands())
    clear(tf);
  for (const TensorFactors &tf : rule.getResults())
    clear(tf);
  return cleared;
}

AxisSharding
mlir::loom::planner::toAxisSharding(ShardingAttr s,
                                    const llvm::StringMap<int> &axisIndex) {
  AxisSharding t(s.getRank());
  for (int64_t d = 0; d < s.getRank(); ++d)
    for (StringRef a : s.getDimAxes(d))
      if (auto it = axisIndex.find(a); it != axisIndex.end())
        t.dims[d].push_back(it->second);
  for (StringRef a : s.getPartialAxisNames())
    if (auto it = axisIndex.find(a); it != axisIndex.end())
      t.partial.push_back(it->second);
  return t;
}

void mlir::loom::planner::appendAxes(AxisSharding &s, int64_t d, Mask partial) {
  llvm::append_range(s.dims[d], axesOf(partial));
}

namespace {

Mask partialOf(const ShardingRule &rule, ArrayRef<Mask> factors) {
  Mask partial = 0;
  for (int64_t f = 0; f < rule.getNumFactors(); ++f)
    if (rule.getFactor(f).kind == FactorKind::Reduction)
      partial |= factors[f];
  return partial;
}

/// A tensor's sharding under a factor assignment: each dimension's axes
/// are its factors' axes, major factor first.
AxisSharding shardOf(const TensorFactors &tf, ArrayRef<Mask> factors) {
  AxisSharding t(tf.size());
  for (auto [d, dimFactors] : llvm::enumerate(tf))
    for (int64_t f : dimFactors)
      llvm::append_range(t.dims[d], axesOf(factors[f]));
  return t;
}

double localBytes(Type type, const AxisSharding &s, const MeshShape &mesh) {
  return bytesOf(type) / mesh.n(s.usedMask());
}

/// The collectives that resolve a partial result and, when gradients flow
/// back, undo that for the result's gradient: all-reduce (its backward is
/// free) or reduce-scatter (its backward is an all-gather). Returns both
/// directions' time and adds the forward direction's to `fwd`.
double resolvePartial(const Node &node, unsigned r, const AxisSharding &natural,
                      Mask partial, const AxisSharding &resolved, bool grads,
                      Costs &costs, double &fwd) {
  auto type = cast<RankedTensorType>(node.op->getResult(r).getType());
  double element = bytesOf(type) / std::max<int64_t>(1, type.getNumElements());
  AxisSharding partialResult = natural;
  partialResult.partial = axesOf(partial);
  double t = costs.reshard(partialResult, resolved, type.getShape(), element);
  fwd += t;
  if (grads && resolved != natural)
    t += costs.reshard(resolved, natural, type.getShape(), element);
  return t;
}

} // namespace

Strategy mlir::loom::planner::opStrategy(const Node &node,
                                         const ShardingRule &rule,
                                         ArrayRef<Mask> factors, int rsDim,
                                         Costs &costs) {
  const MeshShape &mesh = costs.mesh;
  Operation *op = node.op;
  Strategy s;
  s.factors.assign(factors.begin(), factors.end());
  s.partial = partialOf(rule, factors);
  s.rsDim = s.partial ? rsDim : -1;
  Mask all = 0;
  for (Mask m : factors)
    all |= m;
  double bytes = 0;
  for (unsigned k = 0; k < op->getNumOperands(); ++k) {
    s.operands.push_back(shardOf(rule.getOperands()[k], factors));
    bytes += localBytes(op->getOperand(k).getType(), s.operands[k], mesh);
    // The gradient of an operand is partial over the factors it lacks.
    Mask inOperand = 0;
    for (const DimFactors &d : rule.getOperands()[k])
      for (int64_t f : d)
        inOperand |= Mask(1) << f;
    Mask gp = 0;
    for (int64_t f = 0; f < rule.getNumFactors(); ++f)
      if (!(inOperand >> f & 1))
        gp |= factors[f];
    s.gradPartial.push_back(gp);
  }
  for (unsigned r = 0; r < op->getNumResults(); ++r) {
    s.results.push_back(shardOf(rule.getResults()[r], factors));
    bytes += localBytes(op->getResult(r).getType(), s.results[r], mesh);
  }
  bool half = op->getNumResults() && isHalf(op->getResult(0).getType());
  s.fwd = costs.compute(rule.getFlops() / mesh.n(all), bytes, half) +
          costs.device.opOverhead;
  int grads = llvm::count(node.gradOperand, true);
  s.compute = s.fwd * (1 + grads);
  if (s.partial)
    for (unsigned r = 0; r < op->getNumResults(); ++r) {
      AxisSharding natural = s.results[r];
      if (s.rsDim >= 0)
        appendAxes(s.results[r], s.rsDim, s.partial);
      s.comm += resolvePartial(node, r, natural, s.partial, s.results[r],
                               grads > 0, costs, s.fwdComm);
    }
  for (unsigned r = 0; r < op->getNumResults(); ++r)
    if (node.saved[r])
      s.memory += localBytes(op->getResult(r).getType(), s.results[r], mesh);
  return s;
}

Strategy mlir::loom::planner::tensorStrategy(const Node &node,
                                             const AxisSharding &t,
                                             const MeshShape &mesh) {
  Strategy s;
  s.results.push_back(t);
  s.memory = localBytes(node.type, t, mesh);
  return s;
}

namespace {

/// Every split of a tensor's dimensions over the mesh axes (each axis on at
/// most one dimension, sizes dividing).
void enumerateTensor(RankedTensorType type, const MeshShape &mesh,
                     std::vector<AxisSharding> &out) {
  SmallVector<Mask, 4> dims(type.getRank(), 0);
  std::function<void(int)> rec = [&](int a) {
    if (a == mesh.rank()) {
      AxisSharding t(type.getRank());
      for (auto [d, m] : llvm::enumerate(dims))
        t.dims[d] = axesOf(m);
      out.push_back(t);
      return;
    }
    rec(a + 1);
    if (mesh.sizes[a] <= 1)
      return;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (type.getDimSize(d) % (mesh.n(dims[d]) * mesh.sizes[a]) != 0)
        continue;
      dims[d] |= Mask(1) << a;
      rec(a + 1);
      dims[d] &= ~(Mask(1) << a);
    }
  };
  rec(0);
}

/// Builds the candidates of one op node.
class OpCandidates {
public:
  OpCandidates(Node &node, Costs &costs) : node(node), costs(costs) {}

  void enumerate() {
    auto iface = dyn_cast<ShardingRuleOpInterface>(node.op);
    if (!iface) {
      unsplit(nullptr);
      return;
    }
    ShardingRule rule = iface.getShardingRule();
    if (rule.needsWholeTensors()) {
      unsplit(&rule);
      return;
    }
    factors.assign(rule.getNumFactors(), 0);
    assign(rule, 0);
    dedupe();
  }

private:
  /// Whole on every device: unknown to the planner, or the rule's choice.
  void unsplit(const ShardingRule *rule) {
    if (rule) {
      SmallVector<Mask, 4> none(rule->getNumFactors(), 0);
      node.strategies.push_back(opStrategy(node, *rule, none, -1, costs));
      return;
    }
    Strategy s;
    for (Value v : node.op->getOperands()) {
      auto t = dyn_cast<RankedTensorType>(v.getType());
      s.operands.push_back(AxisSharding(t ? t.getRank() : 0));
      s.gradPartial.push_back(0);
    }
    for (Value v : node.op->getResults()) {
      auto t = dyn_cast<RankedTensorType>(v.getType());
      s.results.push_back(AxisSharding(t ? t.getRank() : 0));
    }
    node.strategies.push_back(s);
  }

  /// A minor factor of a dimension made of several may only be split when
  /// the more major ones are split completely (else the local block is
  /// strided; the partitioner would not do it either).
  bool expressible(const ShardingRule &rule) const {
    SmallVector<Mask, 8> copy(factors.begin(), factors.end());
    return !clearInexpressibleSplits(rule, copy, costs.mesh);
  }

  /// Axis `a` and the following go to factors (or to none).
  void assign(const ShardingRule &rule, int a) {
    const MeshShape &mesh = costs.mesh;
    if (a == mesh.rank()) {
      if (expressible(rule))
        addVariants(rule);
      return;
    }
    assign(rule, a + 1);
    if (mesh.sizes[a] <= 1)
      return;
    for (int64_t f = 0; f < rule.getNumFactors(); ++f) {
      const ShardingFactor &sf = rule.getFactor(f);
      if (sf.kind == FactorKind::Replicated ||
          sf.size % (mesh.n(factors[f]) * mesh.sizes[a]) != 0)
        continue;
      factors[f] |= Mask(1) << a;
      assign(rule, a + 1);
      factors[f] &= ~(Mask(1) << a);
    }
  }

  /// The assignment with its partial result all-reduced, and reduce-
  /// scattered into each dimension that divides.
  void addVariants(const ShardingRule &rule) {
    Mask partial = partialOf(rule, factors);
    node.strategies.push_back(opStrategy(node, rule, factors, -1, costs));
    if (!partial || node.op->getNumResults() != 1)
      return;
    // A copy: the push_backs below may move the strategies.
    AxisSharding base = node.strategies.back().results[0];
    auto type = cast<RankedTensorType>(node.op->getResult(0).getType());
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.getDimSize(d) %
              (costs.mesh.n(maskOf(base.dims[d])) * costs.mesh.n(partial)) ==
          0)
        node.strategies.push_back(opStrategy(node, rule, factors, d, costs));
  }

  /// Keeps the cheapest of strategies that look the same from outside.
  void dedupe() {
    std::vector<Strategy> kept;
    for (Strategy &s : node.strategies) {
      auto same = llvm::find_if(
          kept, [&](const Strategy &k) { return k.sameOutside(s); });
      if (same == kept.end()) {
        kept.push_back(std::move(s));
        continue;
      }
      double a = same->compute + same->comm, b = s.compute + s.comm;
      if (b < a || (b == a && s.memory < same->memory))
        *same = std::move(s);
    }
    node.strategies = std::move(kept);
  }

  Node &node;
  Costs &costs;
  SmallVector<Mask, 4> factors;
};

void enumerateTensorNode(const Graph &g, Node &node, const MeshShape &mesh,
                         const llvm::StringMap<int> &axisIndex) {
  std::vector<AxisSharding> shards;
  ShardingAttr fixed;
  func::FuncOp fn = g.fn;
  if (node.argIndex >= 0)
    fixed = fn.getArgAttrOfType<ShardingAttr>(node.argIndex,
                                              LoomDialect::kShardingAttrName);
  if (fixed)
    shards.push_back(toAxisSharding(fixed, axisIndex));
  else
    enumerateTensor(node.type, mesh, shards);
  for (AxisSharding &t : shards)
    node.strategies.push_back(tensorStrategy(node, t, mesh));
}

} // namespace

LogicalResult
mlir::loom::planner::enumerateCandidates(Graph &g, Costs &costs,
                                         std::string &error) {
  llvm::StringMap<int> axisIndex;
  for (int a = 0; a < costs.mesh.rank(); ++a)
    axisIndex[costs.mesh.names[a]] = a;
  for (int v = 0; v < int(g.nodes.size()); ++v) {
    Node &n = g.nodes[v];
    if (n.rep != v)
      continue;
    if (n.kind == NodeKind::Op)
      OpCandidates(n, costs).enumerate();
    else
      enumerateTensorNode(g, n, costs.mesh, axisIndex);
    if (auto c = dyn_cast_or_null<ShardingConstraintOp>(n.op)) {
      AxisSharding want = toAxisSharding(c.getSharding(), axisIndex);
      llvm::erase_if(n.strategies, [&](const Strategy &s) {
        return s.results[0] != want;
      });
      if (n.strategies.empty()) {
        error = "sharding constraint at " + n.name +
                " cannot be met on mesh " + costs.mesh.str();
        return failure();
      }
    }
  }
  for (int v = 0; v < int(g.nodes.size()); ++v)
    if (g.nodes[v].rep != v)
      g.nodes[v].strategies = g.nodes[g.nodes[v].rep].strategies;
  return success();
}
