//===- CostTable.cpp - A whole step priced, per choice --------------------===//

#include "loom/Planner/CostTable.h"
#include "loom/Sharding/Buckets.h"
#include "loom/Sharding/TopKExchange.h"
#include "loom/Planner/Candidates.h"

#include <map>

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::planner;

NodeCost mlir::loom::planner::nodeCost(const Node &node, const Strategy &s,
                                       double remat, int layers,
                                       const MeshShape &mesh) {
  NodeCost c;
  c.memory = s.memory;
  if (node.kind != NodeKind::Op)
    return c;
  c.compute = s.compute;
  c.comm = s.comm;
  if (node.layer >= 0) {
    // Rematerialized layers run their forward again in the backward pass
    // and keep only the layer's input (the previous layer's output); while
    // one of them is recomputed for its backward pass, its activations are
    // live again (one layer's worth: the node's share of it).
    // The recomputed forward pass performs the layer's forward collectives
    // again (loom-rematerialize clones the partitioned ops, collectives
    // included): the op's own here, resharding on edges in ValueReshards.
    c.compute += remat * s.fwd;
    c.comm += remat * s.fwdComm;
    double again = remat > 0 && layers > 0 ? 1.0 / layers : 0.0;
    c.memory *= 1 - remat + again;
    if (node.crossLayerProducer)
      c.memory += remat * bytesOf(node.op->getResult(0).getType()) /
                  mesh.n(s.results[0].usedMask());
  }
  return c;
}

Mask mlir::loom::planner::zeroExtra(const AxisSharding &storage,
                                    Mask gradPartial, RankedTensorType type,
                                    const MeshShape &mesh, int *dimOut) {
  Mask extra = gradPartial & ~storage.usedMask();
  if (!extra)
    return 0;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (type.getDimSize(d) %
            (mesh.n(maskOf(storage.dims[d])) * mesh.n(extra)) ==
        0) {
      if (dimOut)
        *dimOut = d;
      return extra;
    }
  return 0;
}

Mask mlir::loom::planner::stateExtra(const Graph &g, const Node &u,
                                     const AxisSharding &storage,
                                     Mask gradPartial, const MeshShape &mesh,
                                     int *dimOut) {
  if (dimOut)
    *dimOut = -1;
  if (u.kind != NodeKind::Param || !u.trainable)
    return 0;
  if (auto it = g.stateSplit.find(u.argIndex); it != g.stateSplit.end()) {
    if (dimOut)
      *dimOut = it->second.second;
    return it->second.first;
  }
  if (!g.shardState)
    return 0;
  return zeroExtra(storage, gradPartial, u.type, mesh, dimOut);
}

/// Top-k with error feedback over the axes `grad` is partial over, as
/// loom-compress-gradients emits it (TopKExchange.h): two all-gathers
/// (positions, values) and the selection and scatters around them.
/// Returns the time; the residual (n elements per device) is
/// optimizer-state memory.
static double topKExchange(const Graph &g, const AxisSharding &grad,
                           ArrayRef<int64_t> shape, double element,
                           Costs &costs, double &residual) {
  SmallVector<int64_t, 4> local = grad.localShape(shape, costs.mesh.sizes);
  int64_t n = 1;
  for (int64_t d : local)
    n *= d;
  Mask axes = maskOf(grad.partial);
  TopKExchange x = TopKExchange::of(
      n, static_cast<int64_t>(costs.mesh.n(axes)), g.topKRatio);
  double t = costs.collective(CollectiveKind::AllGather, axes,
                              x.positionBytes());
  t += costs.collective(CollectiveKind::AllGather, axes,
                        x.valueBytes(element));
  residual = static_cast<double>(n) * element;
  t += costs.compute(x.flops(), x.bytesTouched(element), false);
  return t;
}

/// How many bucketed all-reduces the gradients make: the buckets
/// loom-bucket-all-reduce fills (BucketFiller) with the weights' gradients
/// in the backward pass's order (the last weights first).
static double bucketCalls(const Graph &g) {
  std::vector<double> sizes;
  for (const Node &n : llvm::reverse(g.nodes))
    if (n.kind == NodeKind::Param && n.trainable)
      sizes.push_back(bytesOf(n.type));
  return std::max(1, BucketFiller::count(sizes, g.bucketBytes,
                                         g.firstBucketBytes));
}

bool mlir::loom::planner::weightGradient(const Graph &g, const Edge &e) {
  return e.grad && g.nodes[e.u].kind == NodeKind::Param;
}

WeightReduction mlir::loom::planner::reduceWeightGradient(
    const Graph &g, const Edge &e, const Strategy &a, const Strategy &b,
    Costs &costs) {
  WeightReduction r;
  double residual = 0;
  const AxisSharding &src = a.results[e.res];
  ArrayRef<int64_t> shape = e.type.getShape();
  double element = e.elementBytes();
  const Node &u = g.nodes[e.u];
  // The gradient comes back partial over the axes the consumer's operand
  // lacks, and is reduced into how the value is stored.
  AxisSharding grad = gradientLayout(e, b);
  costs.bucketed = g.bucketBytes > 0;
  costs.bucketShare =
      e.bytes() * bucketCalls(g) / std::max(1.0, g.gradientBytes);
  // Compressed gradients (loom-compress-gradients) are reduced in 16 bits;
  // the updated weight is gathered in its own type.
  double gradElement = element;
  if (g.gradElementBytes > 0)
    gradElement = std::min(element, g.gradElementBytes);
  int dim = -1;
  Mask extra = stateExtra(g, u, src, b.gradPartial[e.operand], costs.mesh,
                          &dim);
  if (g.topKRatio > 0 && grad.isPartial()) {
    // Top-k compression (loom-compress-gradients): the sum reduction
    // becomes each device's top-k exchange; what follows (a reduce-
    // scatter's slice, a state split's gather) is priced as before.
    costs.bucketed = false;
    r.time += topKExchange(g, grad, shape, element, costs, residual);
    grad.partial.clear();
  }
  if (extra && dim >= 0) {
    AxisSharding state = src;
    appendAxes(state, dim, extra);
    r.time += costs.reshard(grad, state, shape, gradElement);
    r.gather = costs.reshard(state, src, shape, element);
    r.time += r.gather;
  } else {
    r.time += costs.reshard(grad, src, shape, gradElement);
  }
  costs.bucketed = false;
  // loom-bucket-all-reduce fuses the all-reduces (not ZeRO's scatters).
  r.bucketed = r.gather == 0 && g.bucketBytes > 0;
  return r;
}

EdgeCost mlir::loom::planner::edgeCost(const Graph &g, const Edge &e,
                                       const Strategy &a, const Strategy &b,
                                       Costs &costs) {
  EdgeCost c;
  const AxisSharding &src = a.results[e.res];
  double element = e.elementBytes();
  const Node &u = g.nodes[e.u];
  if (u.kind != NodeKind::Param || !u.trainable || !e.firstUse)
    return c;
  Mask extra = stateExtra(g, u, src, b.gradPartial[e.operand], costs.mesh);
  double local = e.bytes() / costs.mesh.n(src.usedMask() | extra);
  c.gradients = local;
  c.optimizer = g.nStates * local;
  // Mixed precision as Megatron-LM and DeepSpeed hold it: an fp32 master
  // copy of a 16-bit weight and fp32 optimizer state (Adam: 2 + 2 + 4 + 4 +
  // 4 = 16 bytes per parameter).
  if (g.masterWeights && e.half())
    c.optimizer = (g.nStates + 1) * 2 * local;
  double elems = local / std::max(1.0, element);
  c.update = costs.compute(10 * elems, (3 + 2 * g.nStates) * local,
                           e.half()) +
             costs.device.opOverhead;
  if (costs.device.newUpdateBuffers)
    c.updates = e.bytes() / costs.mesh.n(src.usedMask()) + c.optimizer;
  // A top-k residual (the gradient's local elements in its layout, as
  // topKExchange sends them) is state of its own, carried and returned
  // each step.
  if (g.topKRatio > 0 && e.grad) {
    AxisSharding grad = gradientLayout(e, b);
    if (grad.isPartial()) {
      double residual = element;
      for (int64_t d : grad.localShape(e.type.getShape(), costs.mesh.sizes))
        residual *= static_cast<double>(d);
      c.optimizer += residual;
      if (costs.device.newUpdateBuffers)
        c.updates += residual;
    }
  }
  return c;
}

double mlir::loom::planner::forwardReshard(const Edge &e, const Strategy &a,
                                           const Strategy &b, Costs &costs) {
  return costs.reshard(a.results[e.res], b.operands[e.operand],
                       e.type.getShape(), e.elementBytes());
}

bool mlir::loom::planner::recomputedReshard(const Graph &g, const Edge &e) {
  const Node &u = g.nodes[e.u];
  return u.kind == NodeKind::Op && u.layer >= 0;
}

bool mlir::loom::planner::regatheredReshard(const Graph &g, const Edge &e) {
  const Node &u = g.nodes[e.u];
  return u.kind == NodeKind::Param && u.readBackward;
}

bool mlir::loom::planner::summedGradient(const Graph &g, const Edge &e) {
  return e.grad && g.nodes[e.u].kind == NodeKind::Op;
}

AxisSharding mlir::loom::planner::gradientLayout(const Edge &e,
                                                 const Strategy &b) {
  AxisSharding grad = b.operands[e.operand];
  grad.partial = axesOf(b.gradPartial[e.operand]);
  return grad;
}

double mlir::loom::planner::backwardReshard(const Edge &e, const Strategy &a,
                                            const Strategy &b, Costs &costs) {
  return costs.reshard(gradientLayout(e, b), a.results[e.res],
                       e.type.getShape(), e.elementBytes());
}

std::vector<int> mlir::loom::planner::layoutKey(const AxisSharding &s) {
  std::vector<int> key;
  for (const AxisSharding::Axes &d : s.dims) {
    key.insert(key.end(), d.begin(), d.end());
    key.push_back(-1);
  }
  key.push_back(-2);
  key.insert(key.end(), s.partial.begin(), s.partial.end());
  key.push_back(int(s.reduction));
  return key;
}

void ValueReshards::priceParts(const Graph &g, const Edge &e,
                               const Strategy &a, const Strategy &b,
                               Costs &costs, double &fwd, double &bwd) {
  if (forward
          .insert({g.nodes[e.u].same, e.res, layoutKey(b.operands[e.operand])})
          .second) {
    fwd += forwardReshard(e, a, b, costs);
    if (regatheredReshard(g, e))
      bwd += forwardReshard(e, a, b, costs);
    if (recomputedReshard(g, e) && remat > 0) {
      double weight = costs.weight;
      costs.weight *= remat;
      bwd += remat * forwardReshard(e, a, b, costs);
      costs.weight = weight;
    }
  }
  if (summedGradient(g, e) &&
      backward.insert({e.u, e.res, layoutKey(gradientLayout(e, b))}).second)
    bwd += backwardReshard(e, a, b, costs);
}

WeightReduction ValueReshards::reduction(const Graph &g, const Edge &e,
                                         const Strategy &a, const Strategy &b,
                                         Costs &costs) {
  if (!weightGradient(g, e) ||
      !reduced.insert({e.u, e.res, layoutKey(gradientLayout(e, b))}).second)
    return {};
  return reduceWeightGradient(g, e, a, b, costs);
}

namespace {
/// What the overlapped step's simulation needs (evaluate): per node its
/// forward and backward compute and blocking communication and the time of
/// gathering the weights it reads first (ZeRO-3); the weights' gradient
/// reductions (ready after the backward pass of their use) and updates with
/// ZeRO's gathers, in program order.
struct StepParts {
  struct Reduction {
    int v;
    double time, bytes;
    bool bucketed;
  };
  std::vector<double> forward, backward, backwardComm, gathers;
  std::vector<Reduction> reductions;
  std::vector<std::pair<double, double>> updates; // (update, gather)
  double blocking = 0;
};

/// The step as loom-overlap-collectives and the runtime's lane run it:
/// the forward pass, the weights' gathers prefetched (those a node reads
/// first started before the node that reads the previous ones, the first
/// at the start; each waited for before the next start or its reader); the
/// backward pass in reverse node order, each
/// gradient reduction started when its gradient is made (all-reduces in
/// buckets of g.bucketBytes in that order, as loom-bucket-all-reduce
/// fuses them), one in flight (the program waits for the previous one
/// before it starts the next), a blocking collective waiting for the lane
/// first; then the updates, each ZeRO gather started after its weight's
/// update; the step ends when the lane is done. The lane's time delays
/// the step by `slowdown` of it (it shares the cores).
double overlappedTime(const Graph &g, const StepParts &p, double slowdown) {
  double t = 0, lane = 0, laneBusy = 0;
  auto post = [&](double seconds) {
    lane = std::max(lane, t) + seconds;
    laneBusy += seconds;
  };
  std::vector<int> readers;
  for (int v = 0; v < int(p.gathers.size()); ++v)
    if (p.gathers[v] > 0)
      readers.push_back(v);
  size_t posted = 0;
  if (!readers.empty())
    post(p.gathers[readers[posted++]]);
  t += p.blocking;
  for (int v = 0; v < int(p.forward.size()); ++v) {
    if (p.gathers[v] > 0) {
      t = std::max(t, lane); // its weights' waits
      if (posted < readers.size())
        post(p.gathers[readers[posted++]]);
    }
    t += p.forward[v];
  }
  auto start = [&](double seconds) {
    t = std::max(t, lane);
    lane = t + seconds;
    laneBusy += seconds;
  };
  // Reductions by the node whose backward makes their gradient.
  std::vector<std::vector<const StepParts::Reduction *>> at(p.forward.size());
  for (const StepParts::Reduction &r : p.reductions)
    at[r.v].push_back(&r);
  double bucketTime = 0;
  BucketFiller filler(g.bucketBytes, g.firstBucketBytes);
  for (int v = int(p.forward.size()) - 1; v >= 0; --v) {
    t += p.backward[v];
    if (p.backwardComm[v] > 0)
      t = std::max(t, lane) + p.backwardComm[v];
    for (const StepParts::Reduction *r : at[v]) {
      if (!r->bucketed) {
        start(r->time);
        continue;
      }
      // The buckets loom-bucket-all-reduce fills (BucketFiller).
      if (filler.closesBefore(r->bytes)) {
        start(bucketTime);
        bucketTime = 0;
        filler.close();
      }
      bucketTime += r->time;
      if (filler.add(r->bytes)) {
        start(bucketTime);
        bucketTime = 0;
        filler.close();
      }
    }
  }
  if (bucketTime > 0)
    start(bucketTime);
  for (auto [update, gather] : p.updates) {
    t += update;
    if (gather > 0)
      start(gather);
  }
  return std::max(t, lane) + slowdown * laneBusy;
}
} // namespace

Totals mlir::loom::planner::evaluate(const Graph &g, ArrayRef<int> choice,
                                     double remat, Costs &costs) {
  Totals t;
  StepParts parts;
  bool overlapped = g.overlap && costs.device.overlapSlowdown >= 0;
  if (overlapped) {
    parts.forward.assign(g.nodes.size(), 0);
    parts.backward.assign(g.nodes.size(), 0);
    parts.backwardComm.assign(g.nodes.size(), 0);
    parts.gathers.assign(g.nodes.size(), 0);
  }
  for (int v = 0; v < int(g.nodes.size()); ++v) {
    const Node &n = g.nodes[v];
    costs.where = n.name;
    const Strategy &s = n.strategies[choice[v]];
    NodeCost c = nodeCost(n, s, remat, g.layers, costs.mesh);
    if (n.same != v)
      continue; // CSE keeps copy 0's
    t.compute += c.compute;
    t.comm += c.comm;
    if (overlapped && n.kind == NodeKind::Op) {
      parts.forward[v] = s.fwd + s.fwdComm;
      parts.backward[v] = c.compute - s.fwd;
      parts.backwardComm[v] = c.comm - s.fwdComm;
    }
    // Micro-batches run one after the other: one copy's activations.
    if (n.kind == NodeKind::Op)
      t.memory.activations += n.microBatch == 0 ? c.memory : 0;
    else if (n.kind == NodeKind::Param)
      t.memory.parameters += c.memory;
    else
      t.memory.inputs += c.memory;
  }
  // A value resharded alike for several users is resharded once, and
  // gradients that come back alike are summed before they are resharded
  // (as the partitioned program does).
  ValueReshards reshards(remat);
  for (const Edge &e : g.edges) {
    costs.where = g.nodes[e.v].name;
    const Strategy &a = g.nodes[e.u].strategies[choice[e.u]];
    const Strategy &b = g.nodes[e.v].strategies[choice[e.v]];
    double fwd = 0, bwd = 0;
    reshards.priceParts(g, e, a, b, costs, fwd, bwd);
    t.comm += fwd + bwd;
    WeightReduction r = reshards.reduction(g, e, a, b, costs);
    EdgeCost c = edgeCost(g, e, a, b, costs);
    t.comm += r.time;
    t.compute += c.update;
    t.memory.gradients += c.gradients;
    t.memory.optimizer += c.optimizer;
    t.memory.updates += c.updates;
    if (!overlapped)
      continue;
    // A weight's gather is prefetched (loom-overlap-collectives).
    (g.nodes[e.u].kind == NodeKind::Param ? parts.gathers[e.v]
                                          : parts.blocking) += fwd;
    parts.backwardComm[e.v] += bwd;
    // A weight's gradients summed over its uses (micro-batches) are
    // reduced once the backward pass has made them all: at the use the
    // backward pass reaches last, the first (edges are in program order).
    if (r.time - r.gather > 0)
      parts.reductions.push_back(
          {e.v, r.time - r.gather,
           e.bytes() / costs.mesh.n(a.results[e.res].usedMask()),
           r.bucketed});
    if (c.update > 0 || r.gather > 0)
      parts.updates.push_back({c.update, r.gather});
  }
  t.time = t.compute + t.comm;
  // The program overlaps where that is priced faster (the planner's
  // decision: loom.overlap on the module).
  if (overlapped) {
    double o = overlappedTime(g, parts, costs.device.overlapSlowdown);
    t.overlapped = o < t.time;
    t.time = std::min(t.time, o);
  }
  return t;
}

//===----------------------------------------------------------------------===//
// The solver's table
//===----------------------------------------------------------------------===//

SmallVector<int> CostTable::choiceOf(ArrayRef<int> variableChoice) const {
  SmallVector<int> choice;
  for (int var : variableOf)
    choice.push_back(variableChoice[var]);
  return choice;
}

std::vector<int> CostTable::startOf(ArrayRef<int> nodeChoice) const {
  std::vector<int> start;
  for (int v : nodeOf)
    start.push_back(nodeChoice[v]);
  return start;
}

namespace {

/// Adds node costs: every member of a rep group, under each strategy.
void addNodeCosts(const Graph &g, double remat, const MeshShape &mesh,
                  CostTable &t) {
  SolverRequest &r = t.request;
  for (int v = 0; v < int(g.nodes.size()); ++v) {
    const Node &n = g.nodes[v];
    int var = t.variableOf[v];
    const auto &strategies = g.nodes[n.rep].strategies;
    for (size_t i = 0; i < strategies.size(); ++i) {
      NodeCost c = nodeCost(n, strategies[i], remat, g.layers, mesh);
      if (n.same != v)
        continue; // CSE keeps copy 0's
      r.cost[var][i] += c.compute + c.comm;
      // Micro-batches run one after the other: one copy's activations.
      if (n.microBatch == 0)
        r.memory[var][i] += c.memory;
    }
  }
}

/// What a value's uses reshard, once per layout they need: its forward
/// resharding to what each user reads, or (backward) each user's gradient
/// to the value's layout, gradients that come back alike summed first.
struct Direction {
  /// Whether the edge takes part.
  bool (*uses)(const Graph &, const Edge &);
  /// The layout the edge's use needs under the user's strategy.
  AxisSharding (*layout)(const Edge &, const Strategy &);
  double (*price)(const Graph &, const Edge &, const Strategy &,
                  const Strategy &, Costs &);
  /// Whether rematerialized layers perform it again (recomputedReshard).
  bool recomputed;
  /// Whether the copies of one value (Node::same) are resharded as one.
  bool sameValues;
};

const Direction kForward{
    [](const Graph &, const Edge &) { return true; },
    [](const Edge &e, const Strategy &b) { return b.operands[e.operand]; },
    [](const Graph &, const Edge &e, const Strategy &a, const Strategy &b,
       Costs &costs) { return forwardReshard(e, a, b, costs); },
    /*recomputed=*/true, /*sameValues=*/true};
const Direction kBackward{
    summedGradient, gradientLayout,
    [](const Graph &, const Edge &e, const Strategy &a, const Strategy &b,
       Costs &costs) { return backwardReshard(e, a, b, costs); },
    /*recomputed=*/false, /*sameValues=*/false};
/// A weight's gradients, reduced once per layout they come back in.
const Direction kWeightGradients{
    weightGradient, gradientLayout,
    [](const Graph &g, const Edge &e, const Strategy &a, const Strategy &b,
       Costs &costs) { return reduceWeightGradient(g, e, a, b, costs).time; },
    /*recomputed=*/false, /*sameValues=*/false};

/// Adds the resharding of every value in direction `dir`: once per layout
/// its users need (SolverRequest::Shared; a pair when one user reads it).
/// Values of repeated layers with alike users price once, times their
/// count.
void addValueReshards(const Graph &g, Costs &costs, CostTable &t,
                      const Direction &dir, double remat) {
  SolverRequest &r = t.request;
  std::map<std::pair<int, int>, std::vector<const Edge *>> usesOf;
  for (const Edge &e : g.edges)
    if (dir.uses(g, e))
      usesOf[{dir.sameValues ? g.nodes[e.u].same : e.u, e.res}].push_back(&e);
  // (rep of the value's op, result), then (rep of each user, operand).
  using Signature = std::vector<std::pair<int, int>>;
  std::map<Signature, std::pair<std::vector<const Edge *>, double>> groups;
  for (auto &[value, uses] : usesOf) {
    Signature sig{{g.nodes[value.first].rep, value.second}};
    for (const Edge *e : uses)
      sig.push_back({g.nodes[e->v].rep, e->operand});
    llvm::sort(sig.begin() + 1, sig.end());
    groups.try_emplace(sig, uses, 0.0).first->second.second += 1;
  }
  for (auto &[sig, group] : groups) {
    const std::vector<const Edge *> &uses = group.first;
    const Edge &first = *uses.front();
    // Layers' values: the recomputed share reshards them again.
    double weight = group.second;
    if (dir.recomputed && recomputedReshard(g, first))
      weight *= 1 + remat;
    if (dir.recomputed && regatheredReshard(g, first))
      weight *= 2;
    int ru = g.nodes[first.u].rep, vu = t.variableOf[first.u];
    const auto &su = g.nodes[ru].strategies;
    // Users that can never need the same layout price apart, as pairs
    // (which the solver may fold into node costs).
    std::map<std::vector<int>, int> usersOf;
    for (const Edge *e : uses) {
      std::set<std::vector<int>> layouts;
      for (const Strategy &b : g.nodes[g.nodes[e->v].rep].strategies)
        layouts.insert(layoutKey(dir.layout(*e, b)));
      for (const std::vector<int> &k : layouts)
        ++usersOf[k];
    }
    bool sharable =
        llvm::any_of(usersOf, [](auto &kv) { return kv.second > 1; });
    if (!sharable) {
      for (const Edge *e : uses) {
        int rv = g.nodes[e->v].rep, vv = t.variableOf[e->v];
        const auto &sv = g.nodes[rv].strategies;
        if (ru == rv) {
          for (size_t i = 0; i < su.size(); ++i)
            r.cost[vu][i] += weight * dir.price(g, *e, su[i], sv[i], costs);
          continue;
        }
        SolverRequest::Pair p{vu, vv, {}, {}};
        for (size_t i = 0; i < su.size(); ++i)
          for (size_t j = 0; j < sv.size(); ++j)
            p.cost.push_back(weight * dir.price(g, *e, su[i], sv[j], costs));
        r.pairs.push_back(std::move(p));
      }
      continue;
    }
    // Users that may need the same layout: number the layouts.
    SolverRequest::Shared sh;
    sh.u = vu;
    std::map<std::vector<int>, int> targetOf;
    std::vector<std::pair<const Edge *, const Strategy *>> targets;
    for (const Edge *e : uses) {
      const Node &v = g.nodes[g.nodes[e->v].rep];
      SolverRequest::Shared::Use use{t.variableOf[e->v], {}};
      for (const Strategy &b : v.strategies) {
        auto [it, fresh] = targetOf.try_emplace(layoutKey(dir.layout(*e, b)),
                                                int(targets.size()));
        if (fresh)
          targets.push_back({e, &b});
        use.target.push_back(it->second);
      }
      sh.uses.push_back(std::move(use));
    }
    sh.targets = targets.size();
    for (size_t i = 0; i < su.size(); ++i)
      for (auto [e, b] : targets)
        sh.cost.push_back(weight * dir.price(g, *e, su[i], *b, costs));
    r.shared.push_back(std::move(sh));
  }
}

/// Adds edge costs. Edges of repeated layers price alike: one per kind
/// (ends, result, operand, first use, gradient), times its count.
void addEdgeCosts(const Graph &g, Costs &costs, CostTable &t, double remat) {
  addValueReshards(g, costs, t, kForward, remat);
  addValueReshards(g, costs, t, kBackward, remat);
  addValueReshards(g, costs, t, kWeightGradients, remat);
  SolverRequest &r = t.request;
  std::map<std::tuple<int, int, int, int, bool, bool>, std::pair<Edge, double>>
      groups;
  for (const Edge &e : g.edges) {
    auto key = std::make_tuple(g.nodes[e.u].rep, g.nodes[e.v].rep, e.res,
                               e.operand, e.firstUse, e.grad);
    groups.try_emplace(key, e, 0.0).first->second.second += 1;
  }
  for (auto &[key, group] : groups) {
    const Edge &e = group.first;
    double weight = group.second;
    int ru = g.nodes[e.u].rep, rv = g.nodes[e.v].rep;
    const auto &su = g.nodes[ru].strategies, &sv = g.nodes[rv].strategies;
    int vu = t.variableOf[e.u], vv = t.variableOf[e.v];
    auto price = [&](size_t i, size_t j) {
      EdgeCost c = edgeCost(g, e, su[i], sv[j], costs);
      return std::make_pair(weight * c.update,
                            weight * (c.gradients + c.optimizer + c.updates));
    };
    if (ru == rv) {
      // Both ends share one variable: only equal choices happen.
      for (size_t i = 0; i < su.size(); ++i) {
        auto [time, mem] = price(i, i);
        r.cost[vu][i] += time;
        r.memory[vu][i] += mem;
      }
      continue;
    }
    SolverRequest::Pair p{vu, vv, {}, {}};
    for (size_t i = 0; i < su.size(); ++i)
      for (size_t j = 0; j < sv.size(); ++j) {
        auto [time, mem] = price(i, j);
        p.cost.push_back(time);
        p.memory.push_back(mem);
      }
    r.pairs.push_back(std::move(p));
  }
}

} // namespace

CostTable mlir::loom::planner::buildCostTable(const Graph &g, Costs &costs,
                                              double remat) {
  CostTable t;
  t.variableOf.assign(g.nodes.size(), -1);
  for (int v = 0; v < int(g.nodes.size()); ++v)
    if (g.nodes[v].rep == v) {
      t.variableOf[v] = t.nodeOf.size();
      t.nodeOf.push_back(v);
      size_t n = g.nodes[v].strategies.size();
      t.request.cost.emplace_back(n, 0.0);
      t.request.memory.emplace_back(n, 0.0);
    }
  for (int v = 0; v < int(g.nodes.size()); ++v)
    t.variableOf[v] = t.variableOf[g.nodes[v].rep];
  addNodeCosts(g, remat, costs.mesh, t);
  addEdgeCosts(g, costs, t, remat);
  return t;
}

double mlir::loom::planner::bruteForce(const Graph &g, double remat,
                                       double limit, Costs &costs,
                                       double maxCombinations,
                                       double &combinations) {
  SmallVector<int> reps;
  combinations = 1;
  for (int v = 0; v < int(g.nodes.size()); ++v)
    if (g.nodes[v].rep == v) {
      reps.push_back(v);
      combinations *= g.nodes[v].strategies.size();
    }
  if (combinations > maxCombinations)
    return -1;
  SmallVector<int> choice(g.nodes.size(), 0), idx(reps.size(), 0);
  double best = std::numeric_limits<double>::infinity();
  while (true) {
    for (size_t k = 0; k < reps.size(); ++k)
      choice[reps[k]] = idx[k];
    for (int v = 0; v < int(g.nodes.size()); ++v)
      choice[v] = choice[g.nodes[v].rep];
    Totals t = evaluate(g, choice, remat, costs);
    if (t.memory.total() <= limit && t.time < best)
      best = t.time;
    size_t k = 0;
    while (k < reps.size() &&
           ++idx[k] == int(g.nodes[reps[k]].strategies.size()))
      idx[k++] = 0;
    if (k == reps.size())
      break;
  }
  return best;
}
