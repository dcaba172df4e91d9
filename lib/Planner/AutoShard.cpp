//===- AutoShard.cpp - Cost model, layer coarsening and the sharding ILP --===//
//
// See AutoShard.h for the model. The pieces, in order:
//   PMesh, TShard, Costs   a mesh shape with links; a tensor sharding as
//                          axis bit masks; collective, resharding and
//                          roofline costs (with an optional log of the
//                          collectives for the report)
//   Graph                  forward ops, parameters and inputs of the step,
//                          their candidate strategies, edges, repeated
//                          layers
//   evaluate()             the step time and memory of one choice per node
//                          (used for reports, brute force and baselines:
//                          independent of the ILP's assembly)
//   solveIlp()             the integer program over the layer-coarsened
//                          graph, solved with CBC
//   autoShard()            every mesh shape x rematerialization level,
//                          the best plan written into the IR
//
//===----------------------------------------------------------------------===//

#include "loom/Planner/AutoShard.h"
#include "loom/Planner/CostModel.h"

#include "loom/Dialect/Loom/Utils/Utils.h"
#include "loom/Sharding/Propagation.h"
#include "loom/Sharding/FactorSharding.h"
#include "loom/Dialect/Loom/IR/LoomInterfaces.h"
#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Sharding/Strategies.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <coin/Cbc_C_Interface.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::planner;

namespace {

using Mask = uint8_t;
constexpr double kInf = std::numeric_limits<double>::infinity();

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

//===----------------------------------------------------------------------===//
// Mesh shapes, tensor shardings, costs
//===----------------------------------------------------------------------===//

struct PMesh {
  SmallVector<int64_t> sizes;
  SmallVector<std::string> names;
  SmallVector<Link> links;

  int rank() const { return sizes.size(); }
  int64_t n(Mask m) const {
    int64_t r = 1;
    for (int a = 0; a < rank(); ++a)
      if (m & (1u << a))
        r *= sizes[a];
    return r;
  }
  /// The slowest link among the axes of `m`.
  Link link(Mask m) const {
    Link l{kInf, 0, ""};
    for (int a = 0; a < rank(); ++a)
      if (m & (1u << a)) {
        if (links[a].bandwidth < l.bandwidth)
          l = links[a];
        l.latency = std::max(l.latency, links[a].latency);
      }
    return l;
  }
  std::string axes(Mask m) const {
    std::string s = "[";
    bool first = true;
    for (int a = 0; a < rank(); ++a)
      if (m & (1u << a)) {
        s += (first ? "" : ", ") + names[a];
        first = false;
      }
    return s + "]";
  }
  std::string str() const {
    std::string s;
    for (int a = 0; a < rank(); ++a)
      s += (a ? "," : "") + names[a] + "=" + std::to_string(sizes[a]);
    return s;
  }
  /// A candidate shape whose axes are not named yet: "8x4" (outer x inner).
  std::string shape() const {
    std::string s;
    for (int a = 0; a < rank(); ++a)
      s += (a ? "x" : "") + std::to_string(sizes[a]);
    return s;
  }
};

struct TShard {
  SmallVector<Mask, 4> dims;
  Mask partial = 0;
  Mask used() const {
    Mask m = 0;
    for (Mask d : dims)
      m |= d;
    return m;
  }
  bool operator==(const TShard &o) const {
    return dims == o.dims && partial == o.partial;
  }
};

std::string shardString(const TShard &t, const PMesh &mesh) {
  if (t.used() == 0 && !t.partial)
    return "replicated";
  std::string s = "[";
  for (size_t d = 0; d < t.dims.size(); ++d) {
    s += d ? ", {" : "{";
    bool first = true;
    for (int a = 0; a < mesh.rank(); ++a)
      if (t.dims[d] & (1u << a)) {
        s += (first ? "\"" : ", \"") + mesh.names[a] + "\"";
        first = false;
      }
    s += "}";
  }
  s += "]";
  if (t.partial)
    s += " partial " + mesh.axes(t.partial);
  return s;
}

double bytesOf(Type type) {
  return double(loom::tensorBytes(type));
}

bool isHalf(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  return t && (t.getElementType().isBF16() || t.getElementType().isF16());
}

struct Costs {
  const DeviceSpec &dev;
  const PMesh &mesh;
  std::vector<Collective> *log = nullptr;
  std::string where;
  double weight = 1;
  /// Gradient reductions are bucketed (loom-bucket-all-reduce): their
  /// latency is paid once per bucket, not per tensor, and is left out.
  bool bucketed = false;

  double collective(CollectiveKind kind, Mask axes, double bytes) {
    int64_t n = mesh.n(axes);
    if (n <= 1 || bytes <= 0)
      return 0;
    Link l = mesh.link(axes);
    if (bucketed)
      l.latency = 0;
    double t = collectiveTime(kind, bytes, n, l);
    if (log)
      log->push_back({collectiveName(kind).str(), mesh.axes(axes), where,
                      collectiveBytesSent(kind, bytes, n), t, weight});
    return t;
  }

  /// Moving a value of `globalBytes` from sharding `src` to `dst`: partial
  /// sums reduced (scattered where `dst` splits that axis), then splits
  /// added (free), moved between dimensions (all-to-all), removed
  /// (all-gather).
  double reshard(const TShard &src, const TShard &dst, double globalBytes) {
    if (src == dst)
      return 0;
    double local = globalBytes / mesh.n(src.used());
    SmallVector<Mask, 4> cur(src.dims);
    double t = 0;
    auto dimOf = [](ArrayRef<Mask> dims, int a) {
      for (size_t d = 0; d < dims.size(); ++d)
        if (dims[d] & (1u << a))
          return int(d);
      return -1;
    };
    if (src.partial) {
      Mask rs = 0, ar = 0;
      for (int a = 0; a < mesh.rank(); ++a) {
        if (!(src.partial & (1u << a)))
          continue;
        int d = dimOf(dst.dims, a);
        if (d >= 0 && dimOf(cur, a) < 0) {
          rs |= 1u << a;
          cur[d] |= 1u << a;
        } else {
          ar |= 1u << a;
        }
      }
      if (ar)
        t += collective(CollectiveKind::AllReduce, ar, local);
      if (rs) {
        t += collective(CollectiveKind::ReduceScatter, rs, local);
        local /= mesh.n(rs);
      }
    }
    Mask slice = 0, gather = 0, move = 0;
    for (int a = 0; a < mesh.rank(); ++a) {
      int s = dimOf(cur, a), d = dimOf(dst.dims, a);
      if (s < 0 && d >= 0)
        slice |= 1u << a;
      else if (s >= 0 && d < 0)
        gather |= 1u << a;
      else if (s >= 0 && s != d)
        move |= 1u << a;
    }
    local /= mesh.n(slice);
    if (move)
      t += collective(CollectiveKind::AllToAll, move, local);
    if (gather)
      t += collective(CollectiveKind::AllGather, gather, local * mesh.n(gather));
    return t;
  }

  double compute(double flops, double bytes, bool half) const {
    return computeTime(dev, flops, bytes, half);
  }
};

//===----------------------------------------------------------------------===//
// The graph
//===----------------------------------------------------------------------===//

struct Strategy {
  SmallVector<Mask, 4> factors;
  SmallVector<TShard, 2> operands;
  /// Op results as resolved; for tensors, [0] is the tensor's sharding.
  SmallVector<TShard, 1> results;
  SmallVector<Mask, 2> gradPartial;
  /// Forward+backward compute, forward compute alone, own collectives
  /// (resolving partial results), memory held (saved activations or the
  /// tensor itself).
  double compute = 0, fwd = 0, comm = 0, memory = 0;
  /// The result dimension a partial result is scattered into (-1: all-reduced).
  int rsDim = -1;
  /// Axes the result is partial over before that (reduction factors).
  Mask partial = 0;
};

enum class Kind { Op, Param, Data };

struct Node {
  Kind kind = Kind::Op;
  Operation *op = nullptr;
  int argIndex = -1;
  Type type; // tensors
  bool trainable = false;
  std::vector<Strategy> strategies;
  SmallVector<bool, 2> gradOperand;
  SmallVector<bool, 1> saved; // per result
  int rep = -1;
  int layer = -1; // inside the repeated region
  bool crossLayerProducer = false;
  std::string name;
};

struct Edge {
  int u, res, v, operand;
  double bytes;
  bool grad;
  bool firstUse;
  bool half;
};

struct Graph {
  func::FuncOp fn;
  SmallVector<Node> nodes;
  SmallVector<Edge> edges;
  int nStates = 2;
  int layers = 0, period = 0;
  SmallVector<int> stateOwner; // per argument: the weight argument or -1
};

/// Ops whose gradient reads their operands / their result.
bool savesOperands(Operation *op) {
  return isa<DotGeneralOp, ConvOp, MulOp, DivOp, PowOp, MaxOp, MinOp, ReluOp,
             GeluOp, ErfOp, LogOp, SqrtOp, RsqrtOp, AbsOp, LayerNormOp,
             BatchNormTrainingOp, MaxPoolOp, CrossEntropyOp, NllLossOp,
             MseLossOp, GatherOp, SelectOp, DropoutOp, ReduceMaxOp,
             ReduceMinOp, ReduceProdOp, SinOp, CosOp>(op);
}
bool savesResult(Operation *op) {
  return isa<ExpOp, TanhOp, SigmoidOp, SoftmaxOp, LogSoftmaxOp>(op);
}
bool isContraction(Operation *op) { return isa<DotGeneralOp, ConvOp>(op); }

ShardingAttr toAttr(const TShard &t, const PMesh &mesh, StringRef meshName,
                    MLIRContext *ctx) {
  SmallVector<SmallVector<StringRef>> dims;
  for (Mask m : t.dims) {
    dims.emplace_back();
    for (int a = 0; a < mesh.rank(); ++a)
      if ((m & (1u << a)) && mesh.sizes[a] > 1)
        dims.back().push_back(mesh.names[a]);
  }
  return ShardingAttr::get(ctx, meshName, dims);
}

TShard fromAttr(ShardingAttr s, const llvm::StringMap<int> &bit) {
  TShard t;
  for (int64_t d = 0; d < s.getRank(); ++d) {
    Mask m = 0;
    for (StringRef a : s.getDimAxes(d)) {
      auto it = bit.find(a);
      if (it != bit.end())
        m |= 1u << it->second;
    }
    t.dims.push_back(m);
  }
  for (StringRef a : s.getPartialAxisNames()) {
    auto it = bit.find(a);
    if (it != bit.end())
      t.partial |= 1u << it->second;
  }
  return t;
}

/// Every split of a tensor's dimensions over the mesh axes.
void enumerateTensor(RankedTensorType type, const PMesh &mesh,
                     std::vector<TShard> &out) {
  TShard t;
  t.dims.assign(type.getRank(), 0);
  std::function<void(int)> rec = [&](int a) {
    if (a == mesh.rank()) {
      out.push_back(t);
      return;
    }
    rec(a + 1);
    if (mesh.sizes[a] <= 1)
      return;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (type.getDimSize(d) % (mesh.n(t.dims[d]) * mesh.sizes[a]) != 0)
        continue;
      t.dims[d] |= 1u << a;
      rec(a + 1);
      t.dims[d] &= ~(1u << a);
    }
  };
  rec(0);
}

Mask partialOf(const ShardingRule &rule, ArrayRef<Mask> factors) {
  Mask partial = 0;
  for (int64_t f = 0; f < rule.getNumFactors(); ++f)
    if (rule.getFactor(f).kind == FactorKind::Reduction)
      partial |= factors[f];
  return partial;
}

struct StrategyBuilder {
  Graph &g;
  const PMesh &mesh;
  Costs &costs;

  double localBytes(Type type, const TShard &t) {
    return bytesOf(type) / mesh.n(t.used());
  }

  Strategy opStrategy(Node &node, const ShardingRule &rule,
                      ArrayRef<Mask> factors, int rsDim) {
    Operation *op = node.op;
    Strategy s;
    s.factors.assign(factors.begin(), factors.end());
    s.partial = partialOf(rule, factors);
    s.rsDim = s.partial ? rsDim : -1;
    auto shardOf = [&](const TensorFactors &tf) {
      TShard t;
      for (const DimFactors &d : tf) {
        Mask m = 0;
        for (int64_t f : d)
          m |= factors[f];
        t.dims.push_back(m);
      }
      return t;
    };
    Mask partial = 0, all = 0;
    double points = 1;
    for (int64_t f = 0; f < rule.getNumFactors(); ++f) {
      all |= factors[f];
      points *= rule.getFactor(f).size;
      if (rule.getFactor(f).kind == FactorKind::Reduction)
        partial |= factors[f];
    }
    for (unsigned k = 0; k < op->getNumOperands(); ++k) {
      s.operands.push_back(shardOf(rule.getOperands()[k]));
      Mask inOperand = 0;
      for (const DimFactors &d : rule.getOperands()[k])
        for (int64_t f : d)
          inOperand |= 1ull << f;
      Mask gp = 0;
      for (int64_t f = 0; f < rule.getNumFactors(); ++f)
        if (!(inOperand & (1ull << f)))
          gp |= factors[f];
      s.gradPartial.push_back(gp);
    }
    double bytes = 0;
    for (unsigned k = 0; k < op->getNumOperands(); ++k)
      bytes += localBytes(op->getOperand(k).getType(), s.operands[k]);
    for (unsigned r = 0; r < op->getNumResults(); ++r) {
      s.results.push_back(shardOf(rule.getResults()[r]));
      bytes += localBytes(op->getResult(r).getType(), s.results[r]);
    }
    double flops = points / mesh.n(all) * (isContraction(op) ? 2 : 1);
    bool half = op->getNumResults() && isHalf(op->getResult(0).getType());
    s.fwd = costs.compute(flops, bytes, half);
    int grads = llvm::count(node.gradOperand, true);
    s.compute = s.fwd * (1 + grads);
    if (partial) {
      for (unsigned r = 0; r < op->getNumResults(); ++r) {
        double local = localBytes(op->getResult(r).getType(), s.results[r]);
        if (rsDim >= 0) {
          s.comm += costs.collective(CollectiveKind::ReduceScatter, partial, local);
          if (grads)
            s.comm += costs.collective(CollectiveKind::AllGather, partial, local);
          s.results[r].dims[rsDim] |= partial;
        } else {
          s.comm += costs.collective(CollectiveKind::AllReduce, partial, local);
        }
      }
    }
    for (unsigned r = 0; r < op->getNumResults(); ++r)
      if (node.saved[r])
        s.memory += localBytes(op->getResult(r).getType(), s.results[r]);
    return s;
  }

  void enumerateOp(Node &node) {
    Operation *op = node.op;
    auto iface = dyn_cast<ShardingRuleOpInterface>(op);
    if (!iface) {
      // Unknown to the planner: whole on every device.
      Strategy s;
      for (Value v : op->getOperands()) {
        TShard t;
        if (auto tt = dyn_cast<RankedTensorType>(v.getType()))
          t.dims.assign(tt.getRank(), 0);
        s.operands.push_back(t);
        s.gradPartial.push_back(0);
      }
      for (Value v : op->getResults()) {
        TShard t;
        if (auto tt = dyn_cast<RankedTensorType>(v.getType()))
          t.dims.assign(tt.getRank(), 0);
        s.results.push_back(t);
      }
      node.strategies.push_back(s);
      return;
    }
    ShardingRule rule = iface.getShardingRule();
    SmallVector<Mask, 4> factors(rule.getNumFactors(), 0);
    // A minor factor of a dimension made of several may only be split
    // when the more major ones are split completely (else the local block
    // is strided; the partitioner would not do it either).
    auto expressible = [&]() {
      auto ok = [&](const TensorFactors &tf) {
        for (const DimFactors &d : tf) {
          bool blocked = false;
          for (int64_t f : d) {
            if (blocked && factors[f])
              return false;
            if (mesh.n(factors[f]) != rule.getFactor(f).size)
              blocked = true;
          }
        }
        return true;
      };
      return llvm::all_of(rule.getOperands(), ok) &&
             llvm::all_of(rule.getResults(), ok);
    };
    std::function<void(int)> rec = [&](int a) {
      if (a == mesh.rank()) {
        if (expressible())
          addVariants(node, rule, factors);
        return;
      }
      rec(a + 1);
      if (mesh.sizes[a] <= 1)
        return;
      for (int64_t f = 0; f < rule.getNumFactors(); ++f) {
        const ShardingFactor &sf = rule.getFactor(f);
        if (sf.kind == FactorKind::Replicated ||
            sf.size % (mesh.n(factors[f]) * mesh.sizes[a]) != 0)
          continue;
        factors[f] |= 1u << a;
        rec(a + 1);
        factors[f] &= ~(1u << a);
      }
    };
    rec(0);
    dedupe(node);
  }

  void addVariants(Node &node, const ShardingRule &rule,
                   ArrayRef<Mask> factors) {
    Mask partial = 0;
    for (int64_t f = 0; f < rule.getNumFactors(); ++f)
      if (rule.getFactor(f).kind == FactorKind::Reduction)
        partial |= factors[f];
    node.strategies.push_back(opStrategy(node, rule, factors, -1));
    if (!partial || node.op->getNumResults() != 1)
      return;
    // Reduce-scatter the partial result into a dimension instead.
    const TShard &base = node.strategies.back().results[0];
    auto type = cast<RankedTensorType>(node.op->getResult(0).getType());
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.getDimSize(d) % (mesh.n(base.dims[d]) * mesh.n(partial)) == 0)
        node.strategies.push_back(opStrategy(node, rule, factors, d));
  }

  /// Keeps the cheapest of strategies that look the same from outside.
  void dedupe(Node &node) {
    std::vector<Strategy> kept;
    for (Strategy &s : node.strategies) {
      auto same = llvm::find_if(kept, [&](const Strategy &k) {
        return k.operands == s.operands && k.results == s.results &&
               k.gradPartial == s.gradPartial;
      });
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

  void enumerateTensorNode(Node &node, const llvm::StringMap<int> &bit) {
    auto type = cast<RankedTensorType>(node.type);
    std::vector<TShard> shards;
    ShardingAttr fixed;
    if (node.argIndex >= 0)
      fixed = g.fn.getArgAttrOfType<ShardingAttr>(node.argIndex,
                                                  LoomDialect::kShardingAttrName);
    if (fixed)
      shards.push_back(fromAttr(fixed, bit));
    else
      enumerateTensor(type, mesh, shards);
    for (TShard &t : shards) {
      Strategy s;
      s.results.push_back(t);
      s.memory = localBytes(type, t);
      node.strategies.push_back(s);
    }
  }
};

/// Forward ops of the step (what the loss depends on), in block order.
Graph buildGraph(func::FuncOp fn, int defaultStates) {
  Graph g;
  g.fn = fn;
  Block &block = fn.getBody().front();
  DenseSet<Operation *> forward = loom::lossAncestors(fn);
  // Arguments: weights, optimizer state (owner), data.
  SmallVector<bool> trainable(fn.getNumArguments(), false);
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (ParameterOp p = loom::boundParameter(fn, i))
      trainable[i] = p.getTrainable();
  g.stateOwner = loom::optimizerStateOwners(fn);
  DenseMap<int, int> statesOf;
  for (int owner : g.stateOwner)
    if (owner >= 0)
      ++statesOf[owner];
  g.nStates = defaultStates;
  if (!statesOf.empty()) {
    g.nStates = 0;
    for (auto &[w, n] : statesOf)
      g.nStates = std::max(g.nStates, n);
  } else if (fn->hasAttr("loom.train_step") ||
             fn.getNumResults() > 1) {
    // A training step whose optimizer keeps no state (plain SGD).
    g.nStates = 0;
  }

  DenseMap<Value, std::pair<int, int>> nodeOf;
  DenseSet<Value> needsGrad;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    Value arg = fn.getArgument(i);
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || llvm::none_of(arg.getUsers(), [&](Operation *u) {
          return forward.contains(u);
        }))
      continue;
    Node n;
    n.kind = trainable[i] ? Kind::Param : Kind::Data;
    n.trainable = trainable[i];
    n.argIndex = i;
    n.type = type;
    n.name = loom::argumentName(fn, i);
    if (ParameterOp p = loom::boundParameter(fn, i)) {
      n.name = p.getSymName().str();
      if (!p.getTrainable())
        n.kind = Kind::Data;
    }
    nodeOf[arg] = {int(g.nodes.size()), 0};
    if (trainable[i])
      needsGrad.insert(arg);
    g.nodes.push_back(n);
  }
  DenseSet<Value> saved;
  for (Operation &op : block.without_terminator()) {
    if (!forward.contains(&op))
      continue;
    bool grad = false;
    for (Value o : op.getOperands())
      grad |= needsGrad.contains(o);
    if (grad)
      for (Value r : op.getResults())
        if (auto t = dyn_cast<RankedTensorType>(r.getType());
            t && isa<FloatType>(t.getElementType()))
          needsGrad.insert(r);
    if (!grad)
      continue;
    if (savesOperands(&op))
      for (Value o : op.getOperands())
        saved.insert(o);
    if (savesResult(&op))
      for (Value r : op.getResults())
        saved.insert(r);
  }
  for (Operation &op : block.without_terminator()) {
    if (!forward.contains(&op) || op.getNumOperands() == 0)
      continue; // constants: free on every device
    Node n;
    n.kind = Kind::Op;
    n.op = &op;
    std::string loc;
    llvm::raw_string_ostream os(loc);
    op.getLoc().print(os);
    n.name = op.getName().getStringRef().str() + " " + loc;
    for (Value o : op.getOperands()) {
      auto t = dyn_cast<RankedTensorType>(o.getType());
      n.gradOperand.push_back(needsGrad.contains(o) && t &&
                              isa<FloatType>(t.getElementType()));
    }
    for (Value r : op.getResults())
      n.saved.push_back(saved.contains(r));
    int id = g.nodes.size();
    for (unsigned r = 0; r < op.getNumResults(); ++r)
      nodeOf[op.getResult(r)] = {id, int(r)};
    g.nodes.push_back(n);
  }
  DenseSet<int> used;
  for (int v = 0; v < int(g.nodes.size()); ++v) {
    if (g.nodes[v].kind != Kind::Op)
      continue;
    Operation *op = g.nodes[v].op;
    for (unsigned k = 0; k < op->getNumOperands(); ++k) {
      auto it = nodeOf.find(op->getOperand(k));
      if (it == nodeOf.end() ||
          !isa<RankedTensorType>(op->getOperand(k).getType()))
        continue;
      int u = it->second.first;
      Edge e{u,
             it->second.second,
             v,
             int(k),
             bytesOf(op->getOperand(k).getType()),
             g.nodes[v].gradOperand[k],
             used.insert(u).second,
             isHalf(op->getOperand(k).getType())};
      g.edges.push_back(e);
    }
  }
  return g;
}

/// Finds repeated layers: the longest run of forward ops that repeats with
/// one period (by op kind, attributes and types), checked against the data
/// flow (each layer reads its own ops, the previous layer's, or values
/// outside the run that every layer shares).
void coarsen(Graph &g) {
  for (int v = 0; v < int(g.nodes.size()); ++v)
    g.nodes[v].rep = v;
  SmallVector<int> ops;
  DenseMap<int, int> pos;
  for (int v = 0; v < int(g.nodes.size()); ++v)
    if (g.nodes[v].kind == Kind::Op) {
      pos[v] = ops.size();
      ops.push_back(v);
    }
  int n = ops.size();
  SmallVector<llvm::hash_code> sig;
  for (int v : ops) {
    Operation *op = g.nodes[v].op;
    llvm::hash_code h = llvm::hash_value(op->getName().getStringRef());
    for (NamedAttribute a : op->getAttrs())
      if (a.getName() != LoomDialect::kShardingAttrName)
        h = llvm::hash_combine(h, a.getName(), a.getValue());
    for (Type t : op->getOperandTypes())
      h = llvm::hash_combine(h, t.getAsOpaquePointer());
    for (Type t : op->getResultTypes())
      h = llvm::hash_combine(h, t.getAsOpaquePointer());
    sig.push_back(h);
  }
  int bestStart = 0, bestPeriod = 0, bestRepeats = 0;
  int64_t bestCover = 0;
  for (int p = 1; p <= n / 2; ++p) {
    int run = 0;
    for (int i = 0; i + p < n; ++i) {
      run = sig[i] == sig[i + p] ? run + 1 : 0;
      // The run [i - run + 1, i] matches one period later.
      if (run >= p && (i + 1 == n - p || sig[i + 1] != sig[i + 1 + p])) {
        int repeats = (run + p) / p;
        int64_t cover = int64_t(repeats) * p;
        if (cover > bestCover) {
          bestCover = cover;
          bestStart = i - run + 1;
          bestPeriod = p;
          bestRepeats = repeats;
        }
      }
    }
  }
  if (getenv("LOOM_PLANNER_DEBUG"))
    llvm::errs() << "coarsen: " << n << " ops, period " << bestPeriod
                 << " x " << bestRepeats << " from op " << bestStart << "\n";
  if (bestRepeats < 2)
    return;
  // Operand sources of op `v`, as (node, result).
  DenseMap<int, SmallVector<std::pair<int, int>, 4>> sources;
  for (const Edge &e : g.edges)
    sources[e.v].resize(std::max<size_t>(sources[e.v].size(), e.operand + 1),
                        {-1, -1});
  for (const Edge &e : g.edges)
    sources[e.v][e.operand] = {e.u, e.res};
  auto layerOf = [&](int node) -> int {
    auto it = pos.find(node);
    if (it == pos.end())
      return -1;
    int i = it->second - bestStart;
    if (i < 0 || i >= bestRepeats * bestPeriod)
      return -1;
    return i / bestPeriod;
  };
  int p = bestPeriod;
  DenseMap<int, int> uses;
  for (const Edge &e : g.edges)
    ++uses[e.u];
  // Position inside its layer.
  auto posIn = [&](int node, int layer) {
    return pos[node] - bestStart - layer * p;
  };
  int layers = 1;
  for (int k = 1; k < bestRepeats; ++k) {
    bool ok = true;
    for (int j = 0; j < p && ok; ++j) {
      int v = ops[bestStart + k * p + j], r = ops[bestStart + j];
      auto &sv = sources[v], &sr = sources[r];
      if (sv.size() != sr.size()) {
        ok = false;
        break;
      }
      for (size_t o = 0; o < sv.size() && ok; ++o) {
        auto [u, ures] = sv[o];
        auto [w, wres] = sr[o];
        if ((u < 0) != (w < 0) || ures != wres) {
          ok = false;
          break;
        }
        if (u < 0)
          continue;
        int lu = layerOf(u), lw = layerOf(w);
        if (lu == k) {
          // This layer's own op: where layer 0's reads.
          ok = lw == 0 && posIn(u, k) == posIn(w, 0);
        } else if (lu == k - 1) {
          // The previous layer: layer 0 reads from before the run, and
          // every later layer from the same position.
          ok = lw < 0;
          if (ok && k >= 2) {
            int x = sources[ops[bestStart + p + j]][o].first;
            ok = x >= 0 && layerOf(x) == 0 && posIn(x, 0) == posIn(u, k - 1);
          }
        } else if (lu < 0) {
          // Outside the run: shared by every layer (a mask), or each
          // layer's own parameter or input.
          const Node &a = g.nodes[u], &b = g.nodes[w];
          ok = lw < 0 && (u == w || (a.kind != Kind::Op && a.kind == b.kind &&
                                     a.type == b.type && uses[u] == 1 &&
                                     uses[w] == 1));
        } else {
          ok = false;
        }
      }
    }
    if (!ok) {
      if (getenv("LOOM_PLANNER_DEBUG"))
        llvm::errs() << "coarsen: layer " << k << " reads differently\n";
      break;
    }
    layers = k + 1;
  }
  if (layers < 2)
    return;
  g.layers = layers;
  g.period = p;
  for (int k = 0; k < layers; ++k)
    for (int j = 0; j < p; ++j) {
      int v = ops[bestStart + k * p + j];
      g.nodes[v].rep = ops[bestStart + j];
      g.nodes[v].layer = k;
    }
  // Parameters follow their consumer; producers read by the next layer
  // hold the layer input under rematerialization.
  for (const Edge &e : g.edges) {
    Node &u = g.nodes[e.u], &v = g.nodes[e.v];
    if (v.layer >= 1 && u.kind != Kind::Op && u.rep == e.u) {
      auto &sr = sources[v.rep];
      int w = sr[e.operand].first;
      if (w >= 0 && w != e.u && g.nodes[w].kind == u.kind)
        u.rep = w;
    }
    if (u.layer >= 0 && v.layer == u.layer + 1)
      u.crossLayerProducer = true;
  }
}

//===----------------------------------------------------------------------===//
// Evaluation of a choice
//===----------------------------------------------------------------------===//

struct Totals {
  double time = 0, compute = 0, comm = 0;
  MemoryBreakdown memory;
};

/// The state split of a parameter stored as `storage` whose gradient is
/// partial over `gradPartial`: further split over those axes where a
/// dimension allows it (ZeRO-1/2 at no extra communication).
Mask zeroExtra(const TShard &storage, Mask gradPartial, RankedTensorType type,
               const PMesh &mesh, int *dimOut = nullptr) {
  Mask extra = gradPartial & ~storage.used();
  if (!extra)
    return 0;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.getDimSize(d) % (mesh.n(storage.dims[d]) * mesh.n(extra)) == 0) {
      if (dimOut)
        *dimOut = d;
      return extra;
    }
  return 0;
}

struct EdgeCost {
  double time = 0, gradients = 0, optimizer = 0;
};

EdgeCost edgeCost(const Graph &g, const Edge &e, const Strategy &a,
                  const Strategy &b, Costs &costs, const PMesh &mesh) {
  EdgeCost c;
  const TShard &src = a.results[e.res];
  c.time = costs.reshard(src, b.operands[e.operand], e.bytes);
  const Node &u = g.nodes[e.u];
  if (e.grad) {
    TShard gr = b.operands[e.operand];
    gr.partial = b.gradPartial[e.operand];
    costs.bucketed = u.kind == Kind::Param;
    c.time += costs.reshard(gr, src, e.bytes);
    costs.bucketed = false;
  }
  if (u.kind == Kind::Param && u.trainable && e.firstUse) {
    auto type = cast<RankedTensorType>(u.type);
    Mask extra = zeroExtra(src, b.gradPartial[e.operand], type, mesh);
    double local = e.bytes / mesh.n(src.used() | extra);
    c.gradients = local;
    c.optimizer = g.nStates * local;
    double elems = local / std::max(1.0, e.bytes / type.getNumElements());
    c.time += costs.compute(10 * elems, (3 + 2 * g.nStates) * local, e.half);
  }
  return c;
}

Totals evaluate(const Graph &g, ArrayRef<int> choice, double remat,
                Costs &costs, const PMesh &mesh) {
  Totals t;
  for (int v = 0; v < int(g.nodes.size()); ++v) {
    const Node &n = g.nodes[v];
    const Strategy &s = n.strategies[choice[v]];
    costs.where = n.name;
    if (n.kind == Kind::Op) {
      double compute = s.compute;
      double act = s.memory;
      if (n.layer >= 0) {
        compute += remat * s.fwd;
        act *= 1 - remat;
        if (n.crossLayerProducer)
          act += remat * bytesOf(n.op->getResult(0).getType()) /
                 mesh.n(s.results[0].used());
      }
      t.compute += compute;
      t.comm += s.comm;
      t.memory.activations += act;
    } else if (n.kind == Kind::Param) {
      t.memory.parameters += s.memory;
    } else {
      t.memory.inputs += s.memory;
    }
  }
  for (const Edge &e : g.edges) {
    costs.where = g.nodes[e.v].name;
    EdgeCost c = edgeCost(g, e, g.nodes[e.u].strategies[choice[e.u]],
                          g.nodes[e.v].strategies[choice[e.v]], costs, mesh);
    t.comm += c.time;
    t.memory.gradients += c.gradients;
    t.memory.optimizer += c.optimizer;
  }
  t.time = t.compute + t.comm;
  return t;
}

//===----------------------------------------------------------------------===//
// The ILP
//===----------------------------------------------------------------------===//

struct IlpResult {
  bool feasible = false;
  bool optimal = false;
  double objective = kInf;
  double bound = 0;
  SmallVector<int> choice; // per node (through reps)
  int variables = 0, constraints = 0;
};

/// Minimizes step time (or, with `minimizeMemory`, memory) over one
/// strategy per distinct node, memory at most `limit`.
IlpResult solveIlp(const Graph &g, Costs &costs, const PMesh &mesh,
                   double remat, double limit, double timeLimit,
                   bool minimizeMemory, ArrayRef<int> start) {
  IlpResult res;
  int nn = g.nodes.size();
  SmallVector<double> count(nn, 0), crossCount(nn, 0);
  for (int v = 0; v < nn; ++v) {
    count[g.nodes[v].rep] += 1;
    if (g.nodes[v].crossLayerProducer)
      crossCount[g.nodes[v].rep] += 1;
  }
  // Per distinct node and strategy: objective and memory.
  std::vector<std::vector<double>> obj(nn), mem(nn);
  for (int v = 0; v < nn; ++v) {
    const Node &n = g.nodes[v];
    if (n.rep != v)
      continue;
    for (const Strategy &s : n.strategies) {
      double time = 0, m = 0;
      if (n.kind == Kind::Op) {
        time = count[v] * (s.compute + s.comm);
        m = count[v] * s.memory;
        if (n.layer >= 0) {
          time += remat * count[v] * s.fwd;
          m *= 1 - remat;
          m += remat * crossCount[v] *
               bytesOf(n.op->getResult(0).getType()) /
               mesh.n(s.results[0].used());
        }
      } else {
        m = count[v] * s.memory;
      }
      obj[v].push_back(time);
      mem[v].push_back(m);
    }
  }
  // Edges between distinct nodes, merged per pair.
  std::map<std::pair<int, int>, std::pair<std::vector<double>,
                                          std::vector<double>>> blocks;
  double constObj = 0, constMem = 0;
  // Edges of repeated layers price alike: one per kind, times its count.
  std::map<std::tuple<int, int, int, int, bool, bool>, std::pair<Edge, double>>
      groups;
  for (const Edge &e : g.edges) {
    auto key = std::make_tuple(g.nodes[e.u].rep, g.nodes[e.v].rep, e.res,
                               e.operand, e.firstUse, e.grad);
    auto it = groups.try_emplace(key, e, 0.0).first;
    it->second.second += 1;
  }
  for (auto &[key, group] : groups) {
    const Edge &e = group.first;
    double weight = group.second;
    int ru = g.nodes[e.u].rep, rv = g.nodes[e.v].rep;
    const auto &su = g.nodes[ru].strategies, &sv = g.nodes[rv].strategies;
    auto cost = [&](int i, int j, double &t, double &m) {
      EdgeCost c = edgeCost(g, e, su[i], sv[j], costs, mesh);
      t = weight * c.time;
      m = weight * (c.gradients + c.optimizer);
    };
    double t, m;
    if (ru == rv) {
      for (size_t i = 0; i < su.size(); ++i) {
        cost(i, i, t, m);
        obj[ru][i] += t;
        mem[ru][i] += m;
      }
      continue;
    }
    if (su.size() == 1 || sv.size() == 1) {
      for (size_t i = 0; i < su.size(); ++i)
        for (size_t j = 0; j < sv.size(); ++j) {
          cost(i, j, t, m);
          if (su.size() == 1 && sv.size() == 1) {
            constObj += t;
            constMem += m;
          } else if (su.size() == 1) {
            obj[rv][j] += t;
            mem[rv][j] += m;
          } else {
            obj[ru][i] += t;
            mem[ru][i] += m;
          }
        }
      continue;
    }
    auto &blk = blocks[{ru, rv}];
    if (blk.first.empty()) {
      blk.first.assign(su.size() * sv.size(), 0);
      blk.second.assign(su.size() * sv.size(), 0);
    }
    for (size_t i = 0; i < su.size(); ++i)
      for (size_t j = 0; j < sv.size(); ++j) {
        cost(i, j, t, m);
        blk.first[i * sv.size() + j] += t;
        blk.second[i * sv.size() + j] += m;
      }
  }
  // Separable blocks (a_i + b_j) fold into the nodes.
  for (auto it = blocks.begin(); it != blocks.end();) {
    auto [ru, rv] = it->first;
    size_t nu = g.nodes[ru].strategies.size(), nv = g.nodes[rv].strategies.size();
    auto &[bt, bm] = it->second;
    bool separable = true;
    for (size_t i = 0; i < nu && separable; ++i)
      for (size_t j = 0; j < nv && separable; ++j) {
        auto at = [&](std::vector<double> &x, size_t a, size_t b) {
          return x[a * nv + b];
        };
        double dt = at(bt, i, j) - at(bt, i, 0) - at(bt, 0, j) + at(bt, 0, 0);
        double dm = at(bm, i, j) - at(bm, i, 0) - at(bm, 0, j) + at(bm, 0, 0);
        double scale = std::abs(at(bt, i, j)) + 1e-12;
        double mscale = std::abs(at(bm, i, j)) + 1;
        separable = std::abs(dt) <= 1e-9 * scale && std::abs(dm) <= 1e-9 * mscale;
      }
    if (!separable) {
      ++it;
      continue;
    }
    for (size_t i = 0; i < nu; ++i) {
      obj[ru][i] += bt[i * nv];
      mem[ru][i] += bm[i * nv];
    }
    for (size_t j = 1; j < nv; ++j) {
      obj[rv][j] += bt[j] - bt[0];
      mem[rv][j] += bm[j] - bm[0];
    }
    // (b_0 is in every a_i already.)
    it = blocks.erase(it);
  }
  // Columns.
  const double kTimeScale = 1e6, kMemScale = 1e-9;
  SmallVector<int> firstCol(nn, -1);
  std::vector<double> colObj, colUb;
  std::vector<char> colInt;
  std::vector<std::vector<std::pair<int, double>>> cols;
  int rows = 0;
  int memRow = -1;
  auto addCol = [&](double o, bool integer) {
    colObj.push_back(o);
    colInt.push_back(integer);
    cols.emplace_back();
    return int(cols.size()) - 1;
  };
  SmallVector<int> fixedChoice(nn, 0);
  for (int v = 0; v < nn; ++v) {
    if (g.nodes[v].rep != v)
      continue;
    size_t ns = obj[v].size();
    if (ns == 1) {
      constObj += obj[v][0];
      constMem += mem[v][0];
      continue;
    }
    int row = rows++;
    firstCol[v] = cols.size();
    for (size_t i = 0; i < ns; ++i) {
      int c = addCol(minimizeMemory ? mem[v][i] * kMemScale
                                    : obj[v][i] * kTimeScale,
                     true);
      cols[c].push_back({row, 1.0});
    }
  }
  std::vector<double> rowLb(rows, 1.0), rowUb(rows, 1.0);
  for (auto &[key, blk] : blocks) {
    auto [ru, rv] = key;
    size_t nu = g.nodes[ru].strategies.size(), nv = g.nodes[rv].strategies.size();
    int rowU = rows, rowV = rows + nu;
    rows += nu + nv;
    for (size_t i = 0; i < nu; ++i)
      cols[firstCol[ru] + i].push_back({rowU + int(i), -1.0});
    for (size_t j = 0; j < nv; ++j)
      cols[firstCol[rv] + j].push_back({rowV + int(j), -1.0});
    for (size_t i = 0; i < nu; ++i)
      for (size_t j = 0; j < nv; ++j) {
        double t = blk.first[i * nv + j], m = blk.second[i * nv + j];
        int c = addCol(minimizeMemory ? m * kMemScale : t * kTimeScale, false);
        cols[c].push_back({rowU + int(i), 1.0});
        cols[c].push_back({rowV + int(j), 1.0});
        if (m != 0 && !minimizeMemory)
          cols[c].push_back({-1, m * kMemScale}); // memory row, patched below
      }
    rowLb.resize(rows, 0.0);
    rowUb.resize(rows, 0.0);
  }
  if (!minimizeMemory && !std::isfinite(limit)) {
    // No limit: no memory row.
    for (auto &c : cols)
      llvm::erase_if(c, [](const std::pair<int, double> &x) {
        return x.first == -1;
      });
  } else if (!minimizeMemory) {
    memRow = rows++;
    rowLb.push_back(-kInf);
    rowUb.push_back((limit - constMem) * kMemScale);
    for (int v = 0; v < nn; ++v)
      if (firstCol[v] >= 0)
        for (size_t i = 0; i < mem[v].size(); ++i)
          if (mem[v][i] != 0)
            cols[firstCol[v] + i].push_back({memRow, mem[v][i] * kMemScale});
    for (auto &c : cols)
      for (auto &[r, val] : c)
        if (r == -1)
          r = memRow;
  }
  res.variables = cols.size();
  res.constraints = rows;
  SmallVector<int> choiceRep(nn, 0);
  if (cols.empty()) {
    res.feasible = minimizeMemory || constMem <= limit;
    res.optimal = true;
    res.objective = minimizeMemory ? constMem : constObj;
    res.bound = res.objective;
  } else {
    std::vector<int> start_(cols.size() + 1), index;
    std::vector<double> value;
    for (size_t c = 0; c < cols.size(); ++c) {
      start_[c] = index.size();
      for (auto &[r, val] : cols[c]) {
        index.push_back(r);
        value.push_back(val);
      }
    }
    start_[cols.size()] = index.size();
    std::vector<double> colLb(cols.size(), 0.0);
    colUb.assign(cols.size(), 1.0);
    for (double &x : rowLb)
      if (x == -kInf)
        x = -std::numeric_limits<double>::max();
    Cbc_Model *model = Cbc_newModel();
    auto release = llvm::make_scope_exit([&] { Cbc_deleteModel(model); });
    Cbc_loadProblem(model, cols.size(), rows, start_.data(), index.data(),
                    value.data(), colLb.data(), colUb.data(), colObj.data(),
                    rowLb.data(), rowUb.data());
    for (size_t c = 0; c < cols.size(); ++c)
      if (colInt[c])
        Cbc_setInteger(model, c);
    Cbc_setLogLevel(model, 0);
    Cbc_setMaximumSeconds(model, timeLimit);
    Cbc_setParameter(model, "threads", "1");
    // Plans within 0.01% of the optimum are as good as the model is.
    Cbc_setAllowableFractionGap(model, 1e-4);
    // A start from the caller (the Megatron plan), when it is feasible.
    if (!start.empty()) {
      std::vector<int> idx;
      std::vector<double> val;
      for (int v = 0; v < nn; ++v)
        if (firstCol[v] >= 0)
          for (size_t i = 0; i < obj[v].size(); ++i) {
            idx.push_back(firstCol[v] + i);
            val.push_back(int(i) == start[v] ? 1.0 : 0.0);
          }
      Cbc_setMIPStartI(model, idx.size(), idx.data(), val.data());
    }
    Cbc_solve(model);
    const double *x = Cbc_bestSolution(model);
    if (!x || Cbc_isProvenInfeasible(model)) {
      res.feasible = false;
      return res;
    }
    res.feasible = true;
    res.optimal = Cbc_isProvenOptimal(model);
    double scale = minimizeMemory ? kMemScale : kTimeScale;
    res.objective = Cbc_getObjValue(model) / scale +
                    (minimizeMemory ? constMem : constObj);
    res.bound = Cbc_getBestPossibleObjValue(model) / scale +
                (minimizeMemory ? constMem : constObj);
    for (int v = 0; v < nn; ++v) {
      if (firstCol[v] < 0)
        continue;
      int best = 0;
      for (size_t i = 1; i < obj[v].size(); ++i)
        if (x[firstCol[v] + i] > x[firstCol[v] + best])
          best = i;
      choiceRep[v] = best;
    }
  }
  res.choice.assign(nn, 0);
  for (int v = 0; v < nn; ++v)
    res.choice[v] = choiceRep[g.nodes[v].rep];
  return res;
}

//===----------------------------------------------------------------------===//
// Megatron-style baseline
//===----------------------------------------------------------------------===//

/// The strategy of node `v` matching the shardings propagation gave its
/// values (added to the candidates if missing).
int matchStrategy(Graph &g, int v, StrategyBuilder &b,
                  const DenseMap<Value, ShardingAttr> &shardings,
                  ArrayRef<Value> values, const llvm::StringMap<int> &bit) {
  Node &n = g.nodes[v];
  auto lookup = [&](Value x) -> std::optional<TShard> {
    ShardingAttr s = shardings.lookup(x);
    if (!s)
      return std::nullopt;
    return fromAttr(s, bit);
  };
  if (n.kind != Kind::Op) {
    std::optional<TShard> t = lookup(values[0]);
    TShard want = t ? *t : TShard{};
    if (!t)
      want.dims.assign(cast<RankedTensorType>(n.type).getRank(), 0);
    want.partial = 0;
    for (size_t i = 0; i < n.strategies.size(); ++i)
      if (n.strategies[i].results[0] == want)
        return i;
    Strategy s;
    s.results.push_back(want);
    s.memory = bytesOf(n.type) / b.mesh.n(want.used());
    n.strategies.push_back(s);
    return n.strategies.size() - 1;
  }
  auto iface = dyn_cast<ShardingRuleOpInterface>(n.op);
  if (!iface)
    return 0;
  ShardingRule rule = iface.getShardingRule();
  SmallVector<Mask, 4> factors(rule.getNumFactors(), 0);
  Mask usedAxes = 0;
  auto absorb = [&](const TensorFactors &tf, const TShard &t, bool result) {
    for (size_t d = 0; d < tf.size() && d < t.dims.size(); ++d) {
      if (tf[d].empty())
        continue;
      int64_t f = tf[d].front();
      const ShardingFactor &sf = rule.getFactor(f);
      if (sf.kind == FactorKind::Replicated ||
          (result && sf.kind == FactorKind::Reduction))
        continue;
      for (int a = 0; a < b.mesh.rank(); ++a) {
        Mask bitA = 1u << a;
        if (!(t.dims[d] & bitA) || (usedAxes & bitA) || b.mesh.sizes[a] <= 1 ||
            sf.size % (b.mesh.n(factors[f]) * b.mesh.sizes[a]) != 0)
          continue;
        factors[f] |= bitA;
        usedAxes |= bitA;
      }
    }
  };
  // Activations first, parameters last (as the partitioner does).
  SmallVector<unsigned> order;
  for (unsigned k = 0; k < n.op->getNumOperands(); ++k)
    if (!isa<BlockArgument>(n.op->getOperand(k)))
      order.push_back(k);
  for (unsigned k = 0; k < n.op->getNumOperands(); ++k)
    if (isa<BlockArgument>(n.op->getOperand(k)))
      order.push_back(k);
  for (unsigned k : order)
    if (std::optional<TShard> t = lookup(n.op->getOperand(k)))
      absorb(rule.getOperands()[k], *t, false);
  std::optional<TShard> res;
  if (n.op->getNumResults())
    res = lookup(n.op->getResult(0));
  if (res)
    absorb(rule.getResults()[0], *res, true);
  // A partial result scattered into a dimension by propagation?
  int rsDim = -1;
  Mask partial = 0;
  for (int64_t f = 0; f < rule.getNumFactors(); ++f)
    if (rule.getFactor(f).kind == FactorKind::Reduction)
      partial |= factors[f];
  Strategy s = b.opStrategy(n, rule, factors, -1);
  if (partial && res)
    for (size_t d = 0; d < res->dims.size(); ++d)
      if ((res->dims[d] & partial) && !(s.results[0].dims[d] & partial))
        rsDim = d;
  if (rsDim >= 0)
    s = b.opStrategy(n, rule, factors, rsDim);
  for (size_t i = 0; i < n.strategies.size(); ++i) {
    const Strategy &k = n.strategies[i];
    if (k.operands == s.operands && k.results == s.results &&
        k.gradPartial == s.gradPartial)
      return i;
  }
  n.strategies.push_back(s);
  return n.strategies.size() - 1;
}

/// The `dp-tp` preset's plan on a mesh of axes "dp" (bit 0) and "tp" (bit
/// 1), propagated through the step and read back as one strategy per node.
FailureOr<SmallVector<int>> megatronChoice(ModuleOp module, Graph &g,
                                           StrategyBuilder &b) {
  func::FuncOp fn = g.fn;
  OpBuilder ob(module.getContext());
  ob.setInsertionPointToStart(module.getBody());
  MLIRContext *ctx = module.getContext();
  SmallVector<Attribute> axes;
  for (int a = 0; a < 2; ++a)
    axes.push_back(MeshAxisAttr::get(ctx, StringAttr::get(ctx, a ? "tp" : "dp"),
                                     b.mesh.sizes[a], nullptr, nullptr));
  auto mesh = MeshOp::create(ob, module.getLoc(), "__loom_megatron",
                             ob.getArrayAttr(axes));
  ob.setInsertionPoint(fn);
  auto clone = cast<func::FuncOp>(ob.clone(*fn));
  clone.setSymName("__loom_megatron_step");
  auto cleanup = llvm::make_scope_exit([&] {
    clone.erase();
    mesh.erase();
  });
  // Hints of the model and earlier plans do not belong to the preset.
  for (unsigned i = 0; i < clone.getNumArguments(); ++i)
    clone.removeArgAttr(i, LoomDialect::kShardingAttrName);
  StrategyOptions options;
  options.strategy = b.mesh.sizes[1] == 1   ? "dp"
                     : b.mesh.sizes[0] == 1 ? "tp"
                                            : "dp-tp";
  {
    ScopedDiagnosticHandler quiet(ctx, [](Diagnostic &) { return success(); });
    if (failed(applyStrategy(clone, mesh, options)))
      return failure();
  }
  loom::PropagationResult r = loom::propagate(clone, mesh);
  // Clone values in the original's order.
  DenseMap<Value, Value> toClone;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    toClone[fn.getArgument(i)] = clone.getArgument(i);
  auto &ob1 = fn.getBody().front(), &ob2 = clone.getBody().front();
  for (auto [x, y] : llvm::zip(ob1, ob2))
    for (auto [rx, ry] : llvm::zip(x.getResults(), y.getResults()))
      toClone[rx] = ry;
  DenseMap<Value, ShardingAttr> byOriginal;
  for (auto &[orig, c] : toClone)
    if (ShardingAttr s = r.shardings.lookup(c))
      byOriginal[orig] = s;
  llvm::StringMap<int> bit{{"dp", 0}, {"tp", 1}};
  SmallVector<int> choice(g.nodes.size(), 0);
  for (int v = 0; v < int(g.nodes.size()); ++v) {
    Node &n = g.nodes[v];
    if (n.rep != v)
      continue;
    SmallVector<Value> values;
    if (n.kind != Kind::Op)
      values.push_back(fn.getArgument(n.argIndex));
    choice[v] = matchStrategy(g, v, b, byOriginal, values, bit);
  }
  for (int v = 0; v < int(g.nodes.size()); ++v)
    choice[v] = choice[g.nodes[v].rep];
  return choice;
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

/// Memory sizes: GiB with two decimals from 0.01 GiB up, else smaller units.
std::string gib(double bytes) {
  if (bytes < 0.01 * 1024 * 1024 * 1024)
    return loom::humanBytes(bytes);
  return llvm::formatv("{0:f2} GiB", bytes / (1024.0 * 1024 * 1024)).str();
}
std::string secs(double s) {
  if (s >= 1)
    return llvm::formatv("{0:f3} s", s).str();
  if (s >= 1e-3)
    return llvm::formatv("{0:f3} ms", s * 1e3).str();
  return llvm::formatv("{0:f1} us", s * 1e6).str();
}

struct Candidate {
  PMesh mesh;
  double remat = 0;
  IlpResult ilp;
  Totals totals;
  Graph *graph = nullptr;
};

} // namespace

FailureOr<Plan> mlir::loom::planner::autoShard(ModuleOp module,
                                               func::FuncOp fn,
                                               const PlannerOptions &options,
                                               std::string &error) {
  double t0 = now();
  llvm::Expected<Cluster> cluster = getCluster(options.cluster);
  if (!cluster) {
    error = llvm::toString(cluster.takeError());
    return failure();
  }
  if (failed(loom::verifyLossFunction(fn, "loom-auto-shard"))) {
    error = "cannot plan @" + fn.getSymName().str();
    return failure();
  }
  double limit = options.memoryLimit > 0
                     ? options.memoryLimit
                     : cluster->device.memory * options.memoryFraction;

  // A fixed mesh: the module's, when asked or when the function already
  // has shardings (kept as constraints).
  MeshOp fixed;
  bool hasShardings = false;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    hasShardings |= bool(fn.getArgAttr(i, LoomDialect::kShardingAttrName));
  fn.walk([&](ShardingConstraintOp) { hasShardings = true; });
  auto meshes = llvm::to_vector(module.getOps<MeshOp>());
  if (options.fixedMesh || hasShardings) {
    if (meshes.size() != 1) {
      error = meshes.empty() ? "no mesh to plan for: give one (--mesh) or let "
                               "the planner choose"
                             : "the module declares several meshes; the "
                               "planner needs one";
      return failure();
    }
    fixed = meshes.front();
  }
  // Op hints of the model are replaced by the plan.
  loom::dropShardingHints(fn);

  SmallVector<PMesh> shapes;
  if (fixed) {
    PMesh m;
    auto axes = fixed.getAxes();
    int64_t stride = 1;
    SmallVector<int64_t> strides(axes.size());
    for (int a = axes.size() - 1; a >= 0; --a) {
      strides[a] = stride;
      stride *= cast<MeshAxisAttr>(axes[a]).getSize();
    }
    for (size_t a = 0; a < axes.size(); ++a) {
      auto axis = cast<MeshAxisAttr>(axes[a]);
      m.names.push_back(axis.getName().str());
      m.sizes.push_back(axis.getSize());
      Link l = cluster->link(strides[a], axis.getSize());
      if (axis.getBandwidth())
        l.bandwidth = axis.getBandwidth().getValueAsDouble();
      if (axis.getLatency())
        l.latency = axis.getLatency().getValueAsDouble();
      m.links.push_back(l);
    }
    if (m.rank() > 8) {
      error = "meshes of more than 8 axes are not supported by the planner";
      return failure();
    }
    shapes.push_back(m);
  } else {
    int64_t n = cluster->numDevices();
    for (int64_t inner = 1; inner <= n; ++inner) {
      if (n % inner)
        continue;
      PMesh m;
      m.names = {"x", "y"};
      m.sizes = {n / inner, inner};
      m.links = {cluster->link(inner, n / inner), cluster->link(1, inner)};
      shapes.push_back(m);
    }
  }

  Graph base = buildGraph(fn, options.optimizerStates);
  coarsen(base);
  Plan plan;
  plan.cluster = cluster->name;
  plan.device = cluster->device.name;
  plan.memoryLimit = limit;
  plan.layers = base.layers;
  plan.opsPerLayer = base.period;
  plan.nodes = base.nodes.size();
  for (int v = 0; v < int(base.nodes.size()); ++v)
    plan.distinctNodes += base.nodes[v].rep == v;

  std::vector<Graph> graphs(shapes.size(), base);
  std::vector<Candidate> all;
  SmallVector<double> rematLevels = {0};
  if (options.remat && base.layers >= 2)
    rematLevels = {0, 0.5, 1};
  double ilpSeconds = 0, megatronSeconds = 0;
  struct Pending {
    double bound;
    size_t shape;
    SmallVector<int> start;
  };
  SmallVector<Pending> pending;
  auto solveShape = [&](Graph &g, const PMesh &mesh, Costs &costs, double r,
                      double lim, ArrayRef<int> st) {
    double s0 = now();
    Candidate c;
    c.mesh = mesh;
    c.remat = r;
    c.graph = &g;
    c.ilp = solveIlp(g, costs, mesh, r, lim, options.timeLimit, false, st);
    ilpSeconds += now() - s0;
    if (getenv("LOOM_PLANNER_DEBUG"))
      llvm::errs() << llvm::formatv(
          "ilp mesh {0} remat {1} limit {2}: {3:f2} s, {4} vars, "
          "feasible {5} optimal {6} obj {7} bound {8}\n",
          mesh.str(), r, lim, now() - s0, c.ilp.variables, c.ilp.feasible,
          c.ilp.optimal, c.ilp.objective, c.ilp.bound);
    ++plan.ilps;
    plan.variables = std::max(plan.variables, c.ilp.variables);
    plan.constraints = std::max(plan.constraints, c.ilp.constraints);
    if (c.ilp.feasible) {
      c.totals = evaluate(g, c.ilp.choice, r, costs, mesh);
      if (getenv("LOOM_PLANNER_DEBUG"))
        llvm::errs() << llvm::formatv("  evaluated {0} (ILP objective {1})\n",
                                      c.totals.time, c.ilp.objective);
    }
    return c;
  };
  for (size_t si = 0; si < shapes.size(); ++si) {
    const PMesh &mesh = shapes[si];
    Graph &g = graphs[si];
    Costs costs{cluster->device, mesh};
    StrategyBuilder b{g, mesh, costs};
    llvm::StringMap<int> bit;
    for (int a = 0; a < mesh.rank(); ++a)
      bit[mesh.names[a]] = a;
    for (int v = 0; v < int(g.nodes.size()); ++v) {
      Node &n = g.nodes[v];
      if (n.rep != v)
        continue;
      if (n.kind == Kind::Op)
        b.enumerateOp(n);
      else
        b.enumerateTensorNode(n, bit);
      if (auto c = dyn_cast_or_null<ShardingConstraintOp>(n.op)) {
        TShard want = fromAttr(c.getSharding(), bit);
        llvm::erase_if(n.strategies, [&](const Strategy &s) {
          return !(s.results[0] == want);
        });
        if (n.strategies.empty()) {
          error = "sharding constraint at " + n.name +
                  " cannot be met on mesh " + mesh.str();
          return failure();
        }
      }
    }
    for (int v = 0; v < int(g.nodes.size()); ++v)
      if (g.nodes[v].rep != v)
        g.nodes[v].strategies = g.nodes[g.nodes[v].rep].strategies;
    // The Megatron plan of this shape, as a baseline and a start.
    SmallVector<int> start;
    if (options.compareMegatron && mesh.rank() == 2 && !hasShardings) {
      double m0 = now();
      FailureOr<SmallVector<int>> mc = megatronChoice(module, g, b);
      for (int v = 0; v < int(g.nodes.size()); ++v)
        if (g.nodes[v].rep != v)
          g.nodes[v].strategies = g.nodes[g.nodes[v].rep].strategies;
      megatronSeconds += now() - m0;
      if (succeeded(mc)) {
        Alternative best;
        best.mesh = "dp=" + std::to_string(mesh.sizes[0]) +
                    ",tp=" + std::to_string(mesh.sizes[1]);
        for (double r : rematLevels) {
          Totals t = evaluate(g, *mc, r, costs, mesh);
          bool fits = t.memory.total() <= limit;
          if ((fits && (!best.feasible || t.time < best.seconds)) ||
              (!best.feasible && !fits &&
               (best.memory == 0 || t.memory.total() < best.memory))) {
            best.feasible = fits;
            best.seconds = t.time;
            best.memory = t.memory.total();
            best.remat = r;
          }
        }
        plan.megatron.push_back(best);
        start = *mc;
      }
    }
    auto solve = [&](double r, double lim, ArrayRef<int> st) {
      return solveShape(g, mesh, costs, r, lim, st);
    };
    // Without the memory limit first: when that plan fits, nothing that
    // rematerializes (slower for every choice) can beat it; and its bound
    // is a lower bound for the shape.
    Candidate free = solve(0, kInf, start);
    if (free.ilp.feasible && free.totals.memory.total() <= limit)
      all.push_back(std::move(free));
    else
      pending.push_back({free.ilp.feasible ? free.ilp.bound : 0.0, si,
                         std::move(start)});
  }
  // Shapes whose plan without a limit does not fit, most promising first;
  // skipped once their bound cannot beat the best plan found.
  llvm::stable_sort(pending, [](const Pending &a, const Pending &b) {
    return a.bound < b.bound;
  });
  for (Pending &p : pending) {
    double bestSoFar = kInf;
    for (const Candidate &c : all)
      if (c.ilp.feasible && c.totals.memory.total() <= limit)
        bestSoFar = std::min(bestSoFar, c.totals.time);
    if (p.bound >= bestSoFar)
      continue;
    const PMesh &mesh = shapes[p.shape];
    Graph &g = graphs[p.shape];
    Costs costs{cluster->device, mesh};
    for (double r : rematLevels) {
      bool useStart = false;
      if (!p.start.empty())
        useStart = evaluate(g, p.start, r, costs, mesh).memory.total() <= limit;
      all.push_back(solveShape(g, mesh, costs, r, limit,
                               useStart ? ArrayRef<int>(p.start)
                                        : ArrayRef<int>()));
    }
  }
  plan.ilpSeconds = ilpSeconds;
  plan.megatronSeconds = megatronSeconds;

  const Candidate *best = nullptr;
  for (const Candidate &c : all)
    if (c.ilp.feasible && c.totals.memory.total() <= limit * (1 + 1e-9) &&
        (!best || c.totals.time < best->totals.time - 1e-15))
      best = &c;
  if (!best) {
    // The least memory any plan needs, to say what would make it fit.
    double bestMem = kInf;
    Totals bestTotals;
    std::string bestMesh;
    for (size_t si = 0; si < shapes.size(); ++si) {
      Costs costs{cluster->device, shapes[si]};
      double r = rematLevels.back();
      IlpResult m = solveIlp(graphs[si], costs, shapes[si], r, kInf,
                             options.timeLimit, true, {});
      if (!m.feasible)
        continue;
      Totals t = evaluate(graphs[si], m.choice, r, costs, shapes[si]);
      if (t.memory.total() < bestMem) {
        bestMem = t.memory.total();
        bestTotals = t;
        bestMesh = fixed ? shapes[si].str() : shapes[si].shape();
      }
    }
    std::string s;
    llvm::raw_string_ostream os(s);
    int64_t devices = 1;
    for (int64_t x : shapes.front().sizes)
      devices *= x;
    os << "no sharding of @" << fn.getSymName() << " fits in " << gib(limit)
       << " per device on " << cluster->name << " (" << devices
       << " devices of " << cluster->device.name << ")";
    if (bestMem < kInf) {
      const MemoryBreakdown &m = bestTotals.memory;
      os << ": the smallest per-device memory found is " << gib(bestMem)
         << " (mesh " << bestMesh << ": parameters " << gib(m.parameters)
         << ", gradients " << gib(m.gradients) << ", optimizer state "
         << gib(m.optimizer) << ", activations " << gib(m.activations)
         << ", inputs " << gib(m.inputs) << ")";
      double weights = m.parameters + m.gradients + m.optimizer;
      os << "; " << (weights >= m.activations ? "parameters, gradients and "
                                                  "optimizer state dominate"
                                                : "activations dominate");
      os << ". Already searched: ZeRO-style splits of parameters, gradients "
            "and optimizer state over every axis"
         << (options.remat && base.layers >= 2
                 ? ", rematerialization of every repeated layer"
                 : "");
      os << ". To fit: ";
      SmallVector<std::string> fixes;
      double ratio = bestMem / limit;
      fixes.push_back(llvm::formatv("about {0}x the devices (~{1})",
                                    llvm::formatv("{0:f1}", ratio).str(),
                                    int64_t(std::ceil(ratio * devices)))
                          .str());
      if (!options.remat && base.layers >= 2)
        fixes.push_back("allow rematerialization");
      if (m.activations > weights)
        fixes.push_back("a smaller batch or micro-batches "
                        "(--micro-batches)");
      fixes.push_back("devices with more memory");
      llvm::interleave(fixes, os, ", or ");
    }
    error = os.str();
    return failure();
  }

  // Runners-up: the best of every other mesh shape and remat level.
  for (const Candidate &c : all) {
    if (&c == best || !c.ilp.feasible ||
        c.totals.memory.total() > limit * (1 + 1e-9))
      continue;
    Alternative a;
    a.mesh = fixed ? c.mesh.str() : c.mesh.shape();
    a.remat = c.remat;
    a.feasible = c.ilp.feasible;
    a.seconds = c.totals.time;
    a.memory = c.totals.memory.total();
    plan.runnersUp.push_back(a);
  }
  llvm::stable_sort(plan.runnersUp, [](const Alternative &a,
                                       const Alternative &b) {
    if (a.feasible != b.feasible)
      return a.feasible;
    return a.seconds < b.seconds;
  });
  if (plan.runnersUp.size() > 5)
    plan.runnersUp.resize(5);

  // Name the chosen axes by role: one that splits the batch is "dp".
  PMesh mesh = best->mesh;
  Graph &g = *best->graph;
  // Axes of size 1 split nothing: a chosen mesh leaves them out.
  SmallVector<int> keep;
  for (int a = 0; a < mesh.rank(); ++a)
    if (mesh.sizes[a] > 1 || fixed)
      keep.push_back(a);
  if (keep.empty())
    keep.push_back(mesh.rank() - 1);
  if (!fixed) {
    // Roles: an axis the computation splits weights over is tensor
    // parallel ("tp"), else one that splits the batch is data parallel
    // ("dp"), else it splits something else ("sp") or nothing ("rep").
    Mask batch = 0, weights = 0, any = 0;
    for (int v = 0; v < int(g.nodes.size()); ++v) {
      const Strategy &st = g.nodes[v].strategies[best->ilp.choice[v]];
      for (const TShard &t : st.results)
        any |= t.used();
      if (g.nodes[v].kind == Kind::Data && !st.results[0].dims.empty())
        batch |= st.results[0].dims[0];
    }
    // Weights as contractions read them (directly or through a layout op).
    for (const Edge &e : g.edges)
      if (g.nodes[e.u].kind == Kind::Param &&
          isa<DotGeneralOp, ConvOp, TransposeOp, ReshapeOp, CastOp>(
              g.nodes[e.v].op))
        weights |= g.nodes[e.v].strategies[best->ilp.choice[e.v]]
                       .operands[e.operand]
                       .used();
    llvm::StringMap<int> uses;
    for (int a = 0; a < mesh.rank(); ++a) {
      Mask bit = 1u << a;
      std::string role = (weights & bit) ? "tp"
                         : (batch & bit) ? "dp"
                         : (any & bit)   ? "sp"
                                         : "rep";
      int n = uses[role]++;
      mesh.names[a] = n ? role + std::to_string(n + 1) : role;
    }
  }
  for (int a : keep)
    plan.mesh += (plan.mesh.empty() ? "" : ",") + mesh.names[a] + "=" +
                 std::to_string(mesh.sizes[a]);
  for (int a : keep) {
    plan.axisNames.push_back(mesh.names[a]);
    plan.axisSizes.push_back(mesh.sizes[a]);
    plan.axisLinks.push_back(
        llvm::formatv("{0} {1:f0} GB/s {2:f1} us", mesh.links[a].level,
                      mesh.links[a].bandwidth / 1e9,
                      mesh.links[a].latency * 1e6)
            .str());
  }
  plan.remat = best->remat;
  plan.stepTime = best->totals.time;
  plan.computeTime = best->totals.compute;
  plan.commTime = best->totals.comm;
  plan.memory = best->totals.memory;
  plan.solverStatus = best->ilp.optimal ? "optimal" : "time limit";
  plan.gap = best->ilp.objective > 0
                 ? std::max(0.0, (best->ilp.objective - best->ilp.bound) /
                                     best->ilp.objective)
                 : 0;

  // Per-op rows and collectives, logged by a second evaluation.
  {
    std::vector<Collective> log;
    Costs costs{cluster->device, mesh, &log};
    // Ops' own collectives (resolving partial results), priced again
    // with the log on.
    StrategyBuilder b{g, mesh, costs};
    DenseMap<int, double> count;
    for (int v = 0; v < int(g.nodes.size()); ++v)
      count[g.nodes[v].rep] += 1;
    for (int v = 0; v < int(g.nodes.size()); ++v) {
      Node &n = g.nodes[v];
      if (n.kind != Kind::Op || n.rep != v)
        continue;
      const Strategy &s = n.strategies[best->ilp.choice[v]];
      auto iface = dyn_cast<ShardingRuleOpInterface>(n.op);
      if (!iface || s.factors.empty())
        continue;
      costs.where = n.name;
      costs.weight = count[v];
      b.opStrategy(n, iface.getShardingRule(), s.factors, s.rsDim);
    }
    costs.weight = 1;
    // Edges' resharding, logged.
    evaluate(g, best->ilp.choice, best->remat, costs, mesh);
    // Merge by kind, axes and bytes.
    std::map<std::tuple<std::string, std::string, int64_t>, Collective> merged;
    for (const Collective &c : log) {
      auto key = std::make_tuple(c.kind, c.axes, int64_t(c.bytes));
      auto it = merged.find(key);
      if (it == merged.end()) {
        merged[key] = c;
      } else {
        it->second.count += c.count;
        it->second.seconds += c.seconds;
      }
    }
    for (auto &[k, c] : merged)
      plan.collectives.push_back(c);
    llvm::stable_sort(plan.collectives, [](const Collective &a,
                                           const Collective &b) {
      return a.seconds > b.seconds;
    });
  }
  {
    Costs costs{cluster->device, mesh};
    DenseMap<int, double> count, comm;
    for (int v = 0; v < int(g.nodes.size()); ++v)
      count[g.nodes[v].rep] += 1;
    for (const Edge &e : g.edges) {
      EdgeCost c = edgeCost(g, e, g.nodes[e.u].strategies[best->ilp.choice[e.u]],
                            g.nodes[e.v].strategies[best->ilp.choice[e.v]],
                            costs, mesh);
      comm[g.nodes[e.v].rep] += c.time;
    }
    for (int v = 0; v < int(g.nodes.size()); ++v) {
      const Node &n = g.nodes[v];
      if (n.rep != v || n.kind != Kind::Op)
        continue;
      const Strategy &s = n.strategies[best->ilp.choice[v]];
      OpRow row;
      row.op = n.name;
      row.sharding = s.results.empty() ? "" : shardString(s.results[0], mesh);
      if (s.partial)
        row.note = (s.rsDim >= 0 ? "reduce_scatter over " : "all_reduce over ") +
                   mesh.axes(s.partial);
      row.count = count[v];
      row.compute = s.compute;
      row.comm = s.comm + comm[v] / count[v];
      plan.ops.push_back(row);
    }
  }

  // Brute force over the distinct nodes (small graphs).
  if (options.bruteForce) {
    Costs costs{cluster->device, best->mesh};
    SmallVector<int> reps;
    double combos = 1;
    for (int v = 0; v < int(g.nodes.size()); ++v)
      if (g.nodes[v].rep == v) {
        reps.push_back(v);
        combos *= g.nodes[v].strategies.size();
      }
    plan.bruteForceCombinations = combos;
    if (combos <= 5e6) {
      SmallVector<int> choice(g.nodes.size(), 0), idx(reps.size(), 0);
      double bestTime = kInf;
      while (true) {
        for (size_t k = 0; k < reps.size(); ++k)
          choice[reps[k]] = idx[k];
        for (int v = 0; v < int(g.nodes.size()); ++v)
          choice[v] = choice[g.nodes[v].rep];
        Totals t = evaluate(g, choice, best->remat, costs, best->mesh);
        if (t.memory.total() <= limit && t.time < bestTime)
          bestTime = t.time;
        size_t k = 0;
        while (k < reps.size() &&
               ++idx[k] == int(g.nodes[reps[k]].strategies.size()))
          idx[k++] = 0;
        if (k == reps.size())
          break;
      }
      plan.bruteForceTime = bestTime;
    }
  }

  // Write the plan into the IR.
  MLIRContext *ctx = module.getContext();
  std::string meshName;
  if (fixed) {
    meshName = fixed.getSymName().str();
  } else {
    OpBuilder ob(ctx);
    ob.setInsertionPointToStart(module.getBody());
    SmallVector<Attribute> axes;
    mlir::Builder bb(ctx);
    for (int a : keep)
      axes.push_back(MeshAxisAttr::get(
          ctx, StringAttr::get(ctx, mesh.names[a]), mesh.sizes[a],
          bb.getF64FloatAttr(mesh.links[a].bandwidth),
          bb.getF64FloatAttr(mesh.links[a].latency)));
    meshName = "mesh";
    SymbolTable table(module);
    for (int i = 1; table.lookup(meshName); ++i)
      meshName = "mesh" + std::to_string(i);
    MeshOp::create(ob, module.getLoc(), meshName, ob.getArrayAttr(axes));
  }
  SmallVector<TShard> argShard(fn.getNumArguments());
  SmallVector<bool> argSet(fn.getNumArguments(), false);
  SmallVector<Mask> stateExtra(fn.getNumArguments(), 0);
  for (const Edge &e : g.edges) {
    const Node &u = g.nodes[e.u];
    if (u.kind == Kind::Param && u.trainable && e.firstUse) {
      const TShard &st = u.strategies[best->ilp.choice[e.u]].results[0];
      const Strategy &bv = g.nodes[e.v].strategies[best->ilp.choice[e.v]];
      stateExtra[u.argIndex] = zeroExtra(st, bv.gradPartial[e.operand],
                                         cast<RankedTensorType>(u.type), mesh);
    }
  }
  for (int v = 0; v < int(g.nodes.size()); ++v) {
    const Node &n = g.nodes[v];
    const Strategy &s = n.strategies[best->ilp.choice[v]];
    if (n.kind != Kind::Op) {
      argShard[n.argIndex] = s.results[0];
      argSet[n.argIndex] = true;
      continue;
    }
    if (isa<ShardingConstraintOp>(n.op))
      continue;
    SmallVector<ShardingAttr> rs;
    bool ok = true;
    for (unsigned r = 0; r < n.op->getNumResults(); ++r) {
      if (!isa<RankedTensorType>(n.op->getResult(r).getType()) ||
          r >= s.results.size()) {
        ok = false;
        break;
      }
      rs.push_back(toAttr(s.results[r], mesh, meshName, ctx));
    }
    if (ok && !rs.empty())
      loom::setOpResultShardings(n.op, rs);
  }
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    auto type = dyn_cast<RankedTensorType>(fn.getArgumentTypes()[i]);
    if (!type)
      continue;
    TShard t;
    t.dims.assign(type.getRank(), 0);
    if (argSet[i]) {
      t = argShard[i];
    } else if (int w = g.stateOwner[i]; w >= 0 && argSet[w]) {
      t = argShard[w];
      int d = -1;
      zeroExtra(t, stateExtra[w], type, mesh, &d);
      if (d >= 0)
        t.dims[d] |= stateExtra[w];
    }
    t.partial = 0;
    fn.setArgAttr(i, LoomDialect::kShardingAttrName,
                  toAttr(t, mesh, meshName, ctx));
  }
  plan.planningSeconds = now() - t0 - plan.megatronSeconds;
  return plan;
}

//===----------------------------------------------------------------------===//
// Reports
//===----------------------------------------------------------------------===//

void mlir::loom::planner::printPlan(const Plan &p, llvm::raw_ostream &os) {
  os << "auto-sharding plan: mesh " << p.mesh << " on " << p.cluster << " ("
     << p.device << ")\n";
  for (size_t a = 0; a < p.axisNames.size(); ++a)
    os << "  axis " << p.axisNames[a] << "=" << p.axisSizes[a] << ": "
       << p.axisLinks[a] << "\n";
  os << llvm::formatv("predicted step time {0} (compute {1}, communication "
                      "{2}), rematerialized layers {3:f0}%\n",
                      secs(p.stepTime), secs(p.computeTime), secs(p.commTime),
                      p.remat * 100);
  os << "memory per device " << gib(p.memory.total()) << " of "
     << gib(p.memoryLimit) << ": parameters " << gib(p.memory.parameters)
     << ", gradients " << gib(p.memory.gradients) << ", optimizer state "
     << gib(p.memory.optimizer) << ", activations "
     << gib(p.memory.activations) << ", inputs " << gib(p.memory.inputs)
     << "\n";
  os << "graph: " << p.nodes << " nodes, " << p.distinctNodes << " distinct";
  if (p.layers >= 2)
    os << " (" << p.layers << " repeated layers of " << p.opsPerLayer
       << " ops)";
  os << "; " << p.ilps << " ILPs (largest " << p.variables << " variables, "
     << p.constraints << " constraints), " << p.solverStatus;
  os << llvm::formatv(", gap {0:f2}%, planned in {1:f2} s (ILPs {2:f2} s)",
                      p.gap * 100, p.planningSeconds, p.ilpSeconds);
  if (!p.megatron.empty())
    os << llvm::formatv("; pricing the Megatron plans took {0:f2} s",
                        p.megatronSeconds);
  os << "\n";
  if (p.bruteForceTime >= 0)
    os << llvm::formatv("brute force over {0:f0} combinations: {1} "
                        "(ILP: {2}) {3}\n",
                        p.bruteForceCombinations, secs(p.bruteForceTime),
                        secs(p.stepTime),
                        std::abs(p.bruteForceTime - p.stepTime) <=
                                1e-9 * p.stepTime
                            ? "equal"
                            : "DIFFERENT");
  os << "\nops (forward; time per op for forward+backward)\n";
  for (const OpRow &r : p.ops) {
    os << "  " << r.op;
    if (r.count > 1)
      os << llvm::formatv(" (x{0:f0})", r.count);
    os << ": " << r.sharding;
    if (!r.note.empty())
      os << ", " << r.note;
    os << "  compute " << secs(r.compute) << ", comm " << secs(r.comm) << "\n";
  }
  os << "\ncollectives per step (bytes sent per device per call)\n";
  for (const Collective &c : p.collectives)
    os << llvm::formatv("  {0} over {1}: {2:f0} x {3}, {4} total\n", c.kind,
                        c.axes, c.count, loom::humanBytes(c.bytes), secs(c.seconds));
  if (!p.runnersUp.empty()) {
    os << "\nrunners-up\n";
    for (const Alternative &a : p.runnersUp)
      os << llvm::formatv("  mesh {0}, remat {1:f0}%: ", a.mesh, a.remat * 100)
         << (a.feasible ? secs(a.seconds) + ", " + gib(a.memory)
                        : std::string("does not fit"))
         << "\n";
  }
  if (!p.megatron.empty()) {
    os << "\nMegatron-style DP x TP plans (same cost model)\n";
    for (const Alternative &a : p.megatron)
      os << "  " << a.mesh << ": "
         << (a.feasible
                 ? llvm::formatv("{0}, {1}, remat {2:f0}%, {3:f3}x Loom's",
                                 secs(a.seconds), gib(a.memory), a.remat * 100,
                                 a.seconds / p.stepTime)
                       .str()
                 : "does not fit (" + gib(a.memory) + ")")
         << "\n";
  }
}

void mlir::loom::planner::printPlanJson(const Plan &p, llvm::raw_ostream &os) {
  llvm::json::Array ops, colls, runners, megatron, axes;
  for (size_t a = 0; a < p.axisNames.size(); ++a)
    axes.push_back(llvm::json::Object{{"name", p.axisNames[a]},
                                      {"size", p.axisSizes[a]},
                                      {"link", p.axisLinks[a]}});
  for (const OpRow &r : p.ops)
    ops.push_back(llvm::json::Object{{"op", r.op},
                                     {"sharding", r.sharding},
                                     {"collective", r.note},
                                     {"count", r.count},
                                     {"compute_s", r.compute},
                                     {"comm_s", r.comm}});
  for (const Collective &c : p.collectives)
    colls.push_back(llvm::json::Object{{"kind", c.kind},
                                       {"axes", c.axes},
                                       {"count", c.count},
                                       {"bytes", c.bytes},
                                       {"seconds", c.seconds}});
  auto alt = [](const Alternative &a) {
    return llvm::json::Object{{"mesh", a.mesh},
                              {"remat", a.remat},
                              {"feasible", a.feasible},
                              {"step_s", a.seconds},
                              {"memory_bytes", a.memory}};
  };
  for (const Alternative &a : p.runnersUp)
    runners.push_back(alt(a));
  for (const Alternative &a : p.megatron)
    megatron.push_back(alt(a));
  llvm::json::Object o{
      {"cluster", p.cluster},
      {"device", p.device},
      {"mesh", p.mesh},
      {"axes", std::move(axes)},
      {"step_s", p.stepTime},
      {"compute_s", p.computeTime},
      {"comm_s", p.commTime},
      {"remat", p.remat},
      {"memory",
       llvm::json::Object{{"limit", p.memoryLimit},
                          {"total", p.memory.total()},
                          {"parameters", p.memory.parameters},
                          {"gradients", p.memory.gradients},
                          {"optimizer", p.memory.optimizer},
                          {"activations", p.memory.activations},
                          {"inputs", p.memory.inputs}}},
      {"solver",
       llvm::json::Object{{"status", p.solverStatus},
                          {"gap", p.gap},
                          {"ilps", p.ilps},
                          {"variables", p.variables},
                          {"constraints", p.constraints},
                          {"planning_s", p.planningSeconds},
                          {"ilp_s", p.ilpSeconds},
                          {"megatron_pricing_s", p.megatronSeconds}}},
      {"graph", llvm::json::Object{{"nodes", p.nodes},
                                   {"distinct", p.distinctNodes},
                                   {"layers", p.layers},
                                   {"ops_per_layer", p.opsPerLayer}}},
      {"ops", std::move(ops)},
      {"collectives", std::move(colls)},
      {"runners_up", std::move(runners)},
      {"megatron", std::move(megatron)},
  };
  if (p.bruteForceTime >= 0)
    o["brute_force_s"] = p.bruteForceTime;
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(o))) << "\n";
}
