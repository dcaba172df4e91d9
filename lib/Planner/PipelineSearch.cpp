//===- PipelineSearch.cpp - Stages, sub-meshes and schedules --------------===//

#include "loom/Planner/PipelineSearch.h"

#include "loom/Planner/Candidates.h"
#include "loom/Planner/CostTable.h"
#include "loom/Planner/ApplyPlan.h"
#include "loom/Planner/Megatron.h"
#include "loom/Dialect/Loom/Utils/Utils.h"
#include "loom/Stages/Schedule.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Timer.h"

#include "llvm/Support/Debug.h"

#include <cmath>
#include <map>
#include <set>

#define DEBUG_TYPE "loom-pipeline-search"

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::planner;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Wall-clock seconds (LLVM's timer clock).
double now() { return llvm::TimeRecord::getCurrentTime().getWallTime(); }

/// The layer each node is counted with: its own for ops of the repeated
/// layers, the first for ops before them, the last for ops after them;
/// parameters and inputs with their first user.
std::vector<int> layerOfNodes(const Graph &g) {
  int last = std::max(1, g.layers) - 1;
  std::vector<int> seg(g.nodes.size(), -1);
  bool seen = false;
  for (auto [v, n] : llvm::enumerate(g.nodes)) {
    if (n.kind != NodeKind::Op)
      continue;
    if (n.layer >= 0 && g.layers > 0) {
      seg[v] = n.layer;
      seen = true;
    } else {
      seg[v] = seen ? last : 0;
    }
  }
  for (const Edge &e : g.edges)
    if (g.nodes[e.u].kind != NodeKind::Op && seg[e.v] >= 0)
      seg[e.u] = seg[e.u] < 0 ? seg[e.v] : std::min(seg[e.u], seg[e.v]);
  for (int &s : seg)
    s = std::max(s, 0);
  return seg;
}

/// Where loom-assign-stages cuts before `layer`: the name of its first op
/// (in program order) that reads activations; "?" when it has no name.
std::string boundaryName(const Graph &g, int layer) {
  DenseMap<Operation *, int> layerOf;
  for (const Node &n : g.nodes)
    if (n.kind == NodeKind::Op)
      layerOf[n.op] = n.layer;
  func::FuncOp fn = g.fn;
  Block &body = fn.getBody().front();
  llvm::DenseSet<Value> varying;
  for (BlockArgument a : body.getArguments())
    if (!fn.getArgAttr(a.getArgNumber(), LoomDialect::kParamAttrName))
      varying.insert(a);
  for (Operation &op : body.without_terminator()) {
    if (llvm::none_of(op.getOperands(),
                      [&](Value v) { return varying.contains(v); }))
      continue;
    varying.insert(op.getResults().begin(), op.getResults().end());
    auto it = layerOf.find(&op);
    if (it != layerOf.end() && it->second == layer) {
      std::string name = opName(&op);
      return name.empty() ? "?" : name;
    }
  }
  return "?";
}

/// The program's stages (loom.stage on the forward ops) as each stage's
/// first layer; empty when the ops carry none. Stages must be whole
/// repeated layers: what precedes the layers on the first stage, what
/// follows them on the last.
FailureOr<std::vector<int>> programSplit(const Graph &g, int pp,
                                         std::string &error) {
  int layers = std::max(1, g.layers);
  std::vector<int> stageOf(layers, -1);
  bool seen = false, any = false;
  for (const Node &n : g.nodes) {
    // A constant is computed on every stage that reads it.
    if (n.kind != NodeKind::Op || n.constant)
      continue;
    auto attr = n.op->getAttrOfType<IntegerAttr>(LoomDialect::kStageAttrName);
    if (!attr)
      continue;
    any = true;
    int s = int(attr.getInt());
    std::string where = "'" + opName(n.op) + "' (" +
                        n.op->getName().getStringRef().str() + ")";
    if (n.layer >= 0 && g.layers > 0) {
      seen = true;
      if (stageOf[n.layer] >= 0 && stageOf[n.layer] != s) {
        error = llvm::formatv(
            "the stage boundary at {0} cuts repeated layer {1} (stages {2} "
            "and {3}): the planner prices stages of whole layers; put the "
            "boundary at a layer's first op (--plan-only names them)",
            where, n.layer, stageOf[n.layer], s);
        return failure();
      }
      stageOf[n.layer] = s;
    } else if (s != (seen ? pp - 1 : 0)) {
      error = llvm::formatv(
          "{0} is outside the repeated layers and on stage {1}: the planner "
          "prices what precedes the layers on the first stage and what "
          "follows them on the last (stages of whole layers)",
          where, s);
      return failure();
    }
  }
  if (!any)
    return std::vector<int>();
  std::vector<int> first(pp, -1);
  for (int k = layers - 1; k >= 0; --k)
    if (stageOf[k] >= 0 && stageOf[k] < pp)
      first[stageOf[k]] = k;
  for (int s = 0; s < pp; ++s)
    if (first[s] < 0 || (s > 0 && first[s] <= first[s - 1])) {
      error = llvm::formatv("pipeline stage {0} holds none of the model's {1} "
                            "repeated layers: the planner prices stages of "
                            "whole layers",
                            s, layers);
      return failure();
    }
  return first;
}

} // namespace

std::vector<LayerCost>
mlir::loom::planner::layerCosts(const Graph &g, ArrayRef<int> choice,
                                double remat, Costs &costs, const Link &p2p,
                                std::vector<MemoryBreakdown> *breakdown) {
  int layers = std::max(1, g.layers);
  std::vector<LayerCost> out(layers);
  std::vector<MemoryBreakdown> mem(layers);
  std::vector<int> seg = layerOfNodes(g);
  const MeshShape &mesh = costs.mesh;
  for (auto [v, n] : llvm::enumerate(g.nodes)) {
    const Strategy &s = n.strategies[choice[v]];
    NodeCost c = nodeCost(n, s, remat, g.layers, mesh);
    LayerCost &l = out[seg[v]];
    if (n.kind == NodeKind::Op) {
      double fwd = s.fwd + s.fwdComm;
      l.fwd += fwd;
      l.bwd += c.compute + c.comm - fwd;
      l.activations += c.memory;
      mem[seg[v]].activations += c.memory;
    } else if (n.kind == NodeKind::Param || n.buffer) {
      l.weights += c.memory;
      mem[seg[v]].parameters += c.memory;
    } else {
      l.activations += c.memory;
      mem[seg[v]].inputs += c.memory;
    }
  }
  // What the next layer reads crosses a stage boundary after a layer: one
  // message per value, as the pipeline sends them (Transfers.h).
  std::vector<stages::BoundaryTransfer> sent(layers);
  std::set<std::pair<int, int>> counted;
  for (const Edge &e : g.edges) {
    const Node &u = g.nodes[e.u];
    if (u.kind != NodeKind::Op || u.layer < 0 || u.layer + 1 >= g.layers ||
        !stages::sentToStage(u.layer, g.nodes[e.v].layer) ||
        !counted.insert({e.u, e.res}).second)
      continue;
    const Strategy &a = u.strategies[choice[e.u]];
    sent[u.layer].add(e.bytes() / mesh.n(a.results[e.res].usedMask()));
  }
  for (auto [l, t] : llvm::zip(out, sent)) {
    l.transfer = t.seconds(p2p.latency + p2p.overhead,
                           p2p.bandwidth > 0 ? 1 / p2p.bandwidth : 0);
    l.transferBytes = t.bytes;
    l.transferMessages = t.messages;
  }
  ValueReshards reshards(remat);
  for (const Edge &e : g.edges) {
    const Strategy &a = g.nodes[e.u].strategies[choice[e.u]];
    const Strategy &b = g.nodes[e.v].strategies[choice[e.v]];
    double fwd = 0, bwd = 0;
    reshards.priceParts(g, e, a, b, costs, fwd, bwd);
    out[seg[e.v]].fwd += fwd;
    out[seg[e.v]].bwd += bwd;
    // A weight (or buffer) resharded for a user whose gradient rule saves
    // it (FSDP's gathered weight) is held again per micro-batch in flight.
    const Node &u = g.nodes[e.u];
    if (u.kind != NodeKind::Op && e.res < int(u.saved.size()) &&
        u.saved[e.res] && e.operand < int(b.operands.size()) &&
        !(b.operands[e.operand] == a.results[e.res])) {
      double copy = e.bytes() / mesh.n(b.operands[e.operand].usedMask());
      out[seg[e.v]].activations += copy;
      mem[seg[e.v]].activations += copy;
    }
    // A weight's gradient reduction and update run once per step, on the
    // stage that holds the weight.
    WeightReduction r = reshards.reduction(g, e, a, b, costs);
    EdgeCost c = edgeCost(g, e, a, b, costs);
    LayerCost &w = out[seg[e.u]];
    w.step += r.time + c.update;
    w.weights += c.gradients + c.optimizer + c.updates;
    mem[seg[e.u]].gradients += c.gradients;
    mem[seg[e.u]].optimizer += c.optimizer;
    mem[seg[e.u]].updates += c.updates;
  }
  if (breakdown)
    *breakdown = std::move(mem);
  return out;
}

namespace {

/// One priced pipeline configuration.
struct Config {
  bool feasible = false;
  int pp = 1;
  size_t shape = 0;
  bool megatron = false;
  double remat = 0;
  std::string schedule;
  StageSplit split;
  std::vector<int> inFlight;
  double time = kInf, bubble = 0, unitBubble = 0;
  /// The most memory any stage holds.
  double memory = 0;
};

class PipelineSearch {
public:
  PipelineSearch(ModuleOp module, const Graph &base, const Cluster &cluster,
                 const PlannerOptions &options, double limit, Plan &plan)
      : module(module), base(base), cluster(cluster), options(options),
        limit(limit), plan(plan) {}

  LogicalResult run(std::string &error);
  /// The module's mesh with a pp axis: one sub-mesh (the other axes), the
  /// program's stages (loom.stage on the forward ops) or else the DP's.
  LogicalResult runFixed(MeshOp mesh, std::string &error);
  /// Writes the chosen plan's shardings into the IR on `mesh`.
  void apply(MeshOp mesh);

private:
  struct Shape {
    int pp;
    MeshShape mesh;
    Link p2p;
    Graph graph;
    SmallVector<int> ilp, megatron;
    /// Ranks between a device of one stage and its peer in the next (the
    /// devices of the pp axis's later axes).
    int64_t stride = 1;
  };

  LogicalResult planShape(Shape &sh, std::string &error);
  /// The candidates of `g` that shard as `want` does (empty when one is
  /// missing).
  static SmallVector<int> sameStrategies(const Graph &g,
                                         const std::vector<Strategy> &want) {
    SmallVector<int> choice;
    if (want.size() != g.nodes.size())
      return {};
    for (auto [v, n] : llvm::enumerate(g.nodes)) {
      const Strategy &w = want[v];
      auto it = llvm::find_if(
          n.strategies, [&](const Strategy &s) { return s.sameOutside(w); });
      if (it == n.strategies.end())
        return {};
      choice.push_back(it - n.strategies.begin());
    }
    return choice;
  }
  /// Prices `costs` (per layer) for `pp` stages under `schedule`: the DP's
  /// split, or Megatron's even one.
  Config price(const std::vector<LayerCost> &costs, int pp, int64_t stride,
               StringRef schedule, const std::vector<int> *split);
  /// Prices the ILP's and the Megatron plan of `shapes[si]` under every
  /// schedule (the DP's split, or `split`); keeps the best.
  void priceShape(size_t si, const std::vector<int> *split);
  /// The batch, the node size and the rematerialization levels.
  void setUp();
  void describe(const Config &best, bool fixedNames);

  ModuleOp module;
  const Graph &base;
  const Cluster &cluster;
  const PlannerOptions &options;
  double limit;
  Plan &plan;
  std::vector<Shape> shapes;
  /// The Megatron plan's strategy per node, per (tp, 0 when dp divides
  /// the batch, else dp).
  std::map<std::pair<int64_t, int64_t>, std::vector<Strategy>>
      megatronShardings;
  /// The batch: the first dimension of the first input.
  int64_t batch = 1;
  /// Devices of the innermost link level.
  int64_t nodeSize = 1;
  SmallVector<double> rematLevels;
  Config best;
  /// The configuration needing the least memory (for the error).
  double leastMemory = kInf;
  std::string leastMemoryMesh;
  bool allOptimal = true;
  double ilpSeconds = 0;

public:
  double ilpTime() const { return ilpSeconds; }
};

/// The link stage `s` sends to stage s + 1 over, `stride` ranks apart:
/// the innermost level whose blocks hold both stages' devices.
static Link hopLink(const Cluster &cluster, int64_t stride, int s) {
  int64_t first = s * stride, last = (s + 2) * stride - 1, block = 1;
  for (const LinkLevel &l : cluster.levels) {
    block *= l.size;
    if (first / block == last / block)
      return {l.bandwidth, l.latency, l.name, l.overhead};
  }
  const LinkLevel &top = cluster.levels.back();
  return {top.bandwidth, top.latency, top.name, top.overhead};
}

Config PipelineSearch::price(const std::vector<LayerCost> &costs, int pp,
                             int64_t stride, StringRef schedule,
                             const std::vector<int> *split) {
  Config c;
  c.pp = pp;
  c.schedule = schedule.str();
  int m = options.microBatches, layers = costs.size();
  stages::PipelineShape ps{pp, 1, m};
  std::string err;
  std::optional<stages::Schedule> sched =
      stages::buildSchedule(schedule, ps, err);
  if (!sched)
    return c;
  std::optional<stages::Timeline> order = stages::simulate(
      *sched, ps, stages::Durations::uniform(pp), err);
  if (!order)
    return c;
  StageProblem pb;
  pb.layers = costs;
  pb.stages = pp;
  pb.microBatches = m;
  pb.inFlight = order->inFlight;
  pb.memoryLimit = limit;
  // Each hop over its own link (the layers' transfer priced none).
  if (!cluster.levels.empty())
    for (int s = 0; s + 1 < pp; ++s) {
      Link l = hopLink(cluster, stride, s);
      pb.hopFixed.push_back(l.latency + l.overhead);
      pb.hopPerByte.push_back(l.bandwidth > 0 ? 1 / l.bandwidth : 0);
    }
  c.unitBubble = order->bubble;
  if (split) {
    c.split = priceSplit(pb, *split);
  } else {
    c.split = splitStages(pb);
    if (!c.split.feasible) {
      // Nothing fits: the DP's split without a limit, for the error.
      pb.memoryLimit = 0;
      c.split = splitStages(pb);
      c.split.feasible = false;
    }
  }
  if (c.split.first.empty())
    return c;
  c.inFlight = pb.inFlight;
  c.memory = *llvm::max_element(c.split.memory);
  stages::Durations d;
  for (int s = 0; s < pp; ++s) {
    int i = c.split.first[s], j = s + 1 < pp ? c.split.first[s + 1] : layers;
    double f = 0, b = 0, u = 0;
    for (int k = i; k < j; ++k) {
      f += costs[k].fwd;
      b += costs[k].bwd;
      u += costs[k].step;
    }
    d.forward.push_back(f);
    // Input and weight gradients: half each (as for a contraction).
    d.backwardInput.push_back(b / 2);
    d.backwardWeight.push_back(b / 2);
    d.transfers.push_back(s + 1 < pp ? pb.transfer(j - 1, s) : 0);
    d.updates.push_back(u);
  }
  std::optional<stages::Timeline> t = stages::simulate(*sched, ps, d, err);
  if (!t)
    return c;
  c.time = t->end;
  c.bubble = t->bubble;
  c.feasible = c.split.feasible;
  return c;
}

LogicalResult PipelineSearch::planShape(Shape &sh, std::string &error) {
  Costs costs(cluster.device, sh.mesh);
  if (failed(enumerateCandidates(sh.graph, costs, error)))
    return failure();
  // The Megatron plan of the shape (outer axis dp, inner tp): a baseline
  // and the ILP's start. ZeRO-1 (Megatron's distributed optimizer) is how
  // the planner prices optimizer state anyway: split over the axes the
  // gradient is reduced over.
  // The preset is applied and propagated once per kind of shape (seconds
  // on a 96-layer model): what it splits depends on the tp size and on
  // whether dp divides the batch; shapes alike find the same shardings
  // among their candidates (else the preset is applied again).
  int64_t dp = sh.mesh.sizes[0], tp = sh.mesh.sizes[1];
  std::pair<int64_t, int64_t> kind = {tp, batch % dp == 0 ? 0 : dp};
  // Megatron keeps tensor parallelism inside a node (tp <= 8) and splits
  // the batch over dp; other shapes are searched without it.
  auto known = megatronShardings.find(kind);
  if (known != megatronShardings.end() && !known->second.empty())
    sh.megatron = sameStrategies(sh.graph, known->second);
  bool megatronShape = tp <= 8 && tp <= nodeSize && batch % dp == 0;
  if (sh.megatron.empty() && megatronShape &&
      (known == megatronShardings.end() || !known->second.empty())) {
    FailureOr<SmallVector<int>> mc = megatronChoice(module, sh.graph, costs);
    std::vector<Strategy> &t = megatronShardings[kind];
    t.clear(); // empty: the preset does not apply to shapes of this kind
    if (succeeded(mc)) {
      sh.megatron = *mc;
      for (auto [v, n] : llvm::enumerate(sh.graph.nodes))
        t.push_back(n.strategies[sh.megatron[v]]);
    }
  }
  sh.graph.shardState = true;
  sh.graph.stateSplit.clear();
  CostTable table = buildCostTable(sh.graph, costs, 0);
  // Many sub-meshes, each an ILP: each gets a short limit (the Megatron
  // start is a plan from the first second; the report says when one
  // stopped before it proved optimality).
  table.request.timeLimit =
      std::min(options.timeLimit, options.pipelineTimeLimit);
  if (!sh.megatron.empty())
    table.request.start = table.startOf(sh.megatron);
  double t0 = now();
  SolverResult r = solve(table.request);
  LLVM_DEBUG(llvm::dbgs() << llvm::formatv(
                 "pp {0} shape {1}: {2} variables, {3:f2} s, optimal {4}\n",
                 sh.pp, sh.mesh.shape(), r.variables, now() - t0, r.optimal));
  ++plan.ilps;
  allOptimal &= r.optimal;
  plan.ilpsStopped += !r.optimal;
  ilpSeconds += now() - t0;
  plan.variables = std::max(plan.variables, r.variables);
  plan.constraints = std::max(plan.constraints, r.constraints);
  if (r.feasible)
    sh.ilp = table.choiceOf(r.choice);
  return success();
}

void PipelineSearch::setUp() {
  for (const Node &n : base.nodes)
    if (n.kind == NodeKind::Data && n.type && n.type.getRank() > 0) {
      batch = n.type.getDimSize(0);
      break;
    }
  rematLevels = {0};
  if (options.remat < 0 && base.layers >= 2)
    rematLevels = {0, std::round(0.5 * base.layers) / base.layers, 1};
  else if (options.remat > 0 && base.layers >= 1)
    rematLevels = {options.remat};
  int64_t devices = cluster.numDevices();
  nodeSize = cluster.levels.empty() ? devices : cluster.levels[0].size;
}

void PipelineSearch::priceShape(size_t si, const std::vector<int> *split) {
  Shape &sh = shapes[si];
  SmallVector<StringRef> schedules = {"1f1b", "zb-h1", "gpipe"};
  if (!options.schedule.empty())
    schedules = {options.schedule};
  int layers = std::max(1, base.layers);
  Costs costs(cluster.device, sh.mesh);
  Alternative meg;
  int64_t tp = sh.mesh.sizes[1];
  bool megatronShape = !sh.megatron.empty() && layers % sh.pp == 0;
  std::vector<int> even;
  for (int s = 0; s < sh.pp; ++s)
    even.push_back(s * layers / sh.pp);
  for (double remat : rematLevels) {
    for (int which = 0; which < 2; ++which) {
      ArrayRef<int> choice = which == 0 ? ArrayRef<int>(sh.ilp)
                                        : ArrayRef<int>(sh.megatron);
      if (choice.empty())
        continue;
      std::vector<LayerCost> lc =
          layerCosts(sh.graph, choice, remat, costs, sh.p2p);
      for (StringRef schedule : schedules) {
        Config c = price(lc, sh.pp, sh.stride, schedule, split);
        ++plan.pipelineConfigs;
        c.shape = si;
        c.megatron = which == 1;
        c.remat = remat;
        if (!c.split.first.empty() && c.memory < leastMemory) {
          leastMemory = c.memory;
          leastMemoryMesh = llvm::formatv("pp={0},{1}x{2} {3}", sh.pp,
                                          sh.mesh.sizes[0], tp, schedule);
        }
        if (c.feasible && c.time < best.time)
          best = c;
      }
      // Megatron-LM's 3-D plan: its shardings, layers split evenly,
      // 1F1B; the best rematerialization level.
      if (which == 1 && megatronShape && options.compareMegatron) {
        Config c = price(lc, sh.pp, sh.stride, "1f1b", &even);
        bool better = c.feasible ? (!meg.feasible || c.time < meg.seconds)
                                 : (!meg.feasible && !c.split.first.empty() &&
                                    (meg.memory == 0 || c.memory < meg.memory));
        if (better) {
          meg.feasible = c.feasible;
          meg.seconds = c.time;
          meg.memory = c.memory;
          meg.remat = remat;
        }
      }
    }
  }
  if (megatronShape && options.compareMegatron && meg.memory > 0) {
    meg.mesh = llvm::formatv("pp={0},dp={1},tp={2}", sh.pp, sh.mesh.sizes[0],
                             tp);
    meg.microBatches = options.microBatches;
    meg.schedule = "1f1b";
    plan.megatron.push_back(meg);
  }
}

LogicalResult PipelineSearch::run(std::string &error) {
  int64_t devices = cluster.numDevices();
  int layers = std::max(1, base.layers);
  setUp();
  int fixed = options.pipelineStages;
  if (fixed > 1 && (devices % fixed || fixed > layers)) {
    error = llvm::formatv("{0} pipeline stages do not fit: the cluster has {1} "
                          "devices and the model {2} layers (stages must "
                          "divide the devices and be at most the layers)",
                          fixed, devices, base.layers);
    return failure();
  }
  for (int pp = 1; pp <= std::min<int64_t>(devices, layers); ++pp) {
    // -1: every stage count but 1 (loom-plan-pipeline compares the best
    // of them with the plan without a pipeline).
    if (devices % pp || (fixed > 1 && pp != fixed) || (fixed < 0 && pp == 1))
      continue;
    int64_t n = devices / pp;
    Link p2p = pp > 1 ? cluster.link(n, 2) : Link{};
    for (int64_t inner = 1; inner <= n; ++inner) {
      if (n % inner)
        continue;
      Shape sh{pp, MeshShape(), p2p, base, {}, {}, n};
      sh.mesh.names = {"x", "y"};
      sh.mesh.sizes = {n / inner, inner};
      sh.mesh.links = {cluster.link(inner, n / inner), cluster.link(1, inner)};
      if (failed(planShape(sh, error)))
        return failure();
      shapes.push_back(std::move(sh));
    }
  }
  if (shapes.empty()) {
    error = llvm::formatv("no stage count above 1 divides the cluster's {0} "
                          "devices and is at most the model's {1} layers",
                          devices, base.layers);
    return failure();
  }
  for (size_t si = 0; si < shapes.size(); ++si)
    priceShape(si, nullptr);
  if (!best.feasible) {
    error = llvm::formatv("no pipelined plan fits in {0} per device (the "
                          "least any needs is {1}, {2}); use a smaller "
                          "micro-batch (the model's batch), more devices or a "
                          "larger limit",
                          formatMemory(limit), formatMemory(leastMemory),
                          leastMemoryMesh);
    return failure();
  }
  describe(best, /*fixedNames=*/false);
  return success();
}

LogicalResult PipelineSearch::runFixed(MeshOp meshOp, std::string &error) {
  MeshShape whole = meshShapeOf(cluster, meshOp);
  Shape sh{1, MeshShape(), Link{}, base, {}, {}};
  for (int a = 0; a < whole.rank(); ++a) {
    if (whole.names[a] == "pp") {
      sh.pp = int(whole.sizes[a]);
      sh.p2p = whole.links[a];
      sh.stride = 1;
      for (int b = a + 1; b < whole.rank(); ++b)
        sh.stride *= whole.sizes[b];
      continue;
    }
    sh.mesh.names.push_back(whole.names[a]);
    sh.mesh.sizes.push_back(whole.sizes[a]);
    sh.mesh.links.push_back(whole.links[a]);
  }
  if (sh.mesh.rank() > 2) {
    error = "the planner plans a pipeline stage's sub-mesh of at most 2 axes "
            "besides pp; mesh @" + meshOp.getSymName().str() + " has " +
            std::to_string(sh.mesh.rank());
    return failure();
  }
  // As the search's shapes: two axes, the missing one of size 1.
  while (sh.mesh.rank() < 2) {
    sh.mesh.names.push_back("_" + std::to_string(sh.mesh.rank()));
    sh.mesh.sizes.push_back(1);
    sh.mesh.links.push_back(cluster.link(1, 1));
  }
  if (base.layers < sh.pp) {
    error = llvm::formatv(
        "pp={0} stages, but @{1} has {2} repeated layers: the planner "
        "prices stages of whole layers (use at most {2} stages, or a "
        "preset strategy with --stage-boundaries)",
        sh.pp, func::FuncOp(base.fn).getSymName(), std::max(0, base.layers));
    return failure();
  }
  FailureOr<std::vector<int>> first = programSplit(base, sh.pp, error);
  if (failed(first))
    return failure();
  setUp();
  // The program recomputes no layer of a pipeline the planner chose.
  rematLevels = {0};
  if (failed(planShape(sh, error)))
    return failure();
  shapes.push_back(std::move(sh));
  bool given = !first->empty();
  priceShape(0, given ? &*first : nullptr);
  if (!best.feasible) {
    error = llvm::formatv(
        "{0} on {1} (pp={2} with {3} micro-batches) needs {4} on its "
        "fullest stage, more than the {5} limit per device; use more "
        "stages, a smaller micro-batch (the model's batch) or a larger limit",
        given ? "the program's stages" : "no split into stages fits",
        meshOp.getSymName(), shapes[0].pp, options.microBatches,
        formatMemory(leastMemory), formatMemory(limit));
    return failure();
  }
  describe(best, /*fixedNames=*/true);
  plan.pipeline.stagesFromProgram = given;
  return success();
}

void PipelineSearch::apply(MeshOp mesh) {
  Shape &sh = shapes[best.shape];
  ArrayRef<int> choice = best.megatron ? sh.megatron : sh.ilp;
  applyPlan(module, sh.graph, choice, sh.mesh, mesh, {});
}

void PipelineSearch::describe(const Config &c, bool fixedNames) {
  Shape &sh = shapes[c.shape];
  ArrayRef<int> choice = c.megatron ? sh.megatron : sh.ilp;
  MeshShape &mesh = sh.mesh;
  SmallVector<int> keep;
  if (fixedNames) {
    for (int a = 0; a < mesh.rank(); ++a)
      if (mesh.sizes[a] > 1)
        keep.push_back(a);
  } else {
    keep = nameAxes(mesh, sh.graph, choice, false);
  }
  plan.mesh = "pp=" + std::to_string(c.pp);
  plan.axisNames = {"pp"};
  plan.axisSizes = {c.pp};
  plan.axisLinks = {describeLink(sh.p2p)};
  for (int a : keep) {
    plan.mesh += "," + mesh.names[a] + "=" + std::to_string(mesh.sizes[a]);
    plan.axisNames.push_back(mesh.names[a]);
    plan.axisSizes.push_back(mesh.sizes[a]);
    plan.axisLinks.push_back(describeLink(mesh.links[a]));
  }
  plan.stepTime = c.time;
  plan.remat = c.remat;
  plan.solverStatus = allOptimal ? "optimal" : "time limit";
  // The memory of the stage that holds the most, by kind.
  Costs costs(cluster.device, sh.mesh);
  std::vector<MemoryBreakdown> mem;
  std::vector<LayerCost> lc =
      layerCosts(sh.graph, choice, c.remat, costs, sh.p2p, &mem);
  int worst = llvm::max_element(c.split.memory) - c.split.memory.begin();
  int layers = lc.size();
  int i = c.split.first[worst],
      j = worst + 1 < c.pp ? c.split.first[worst + 1] : layers;
  PipelineInfo &pi = plan.pipeline;
  for (int s = 0; s < c.pp; ++s) {
    int from = c.split.first[s], to = s + 1 < c.pp ? c.split.first[s + 1]
                                                    : layers;
    MemoryBreakdown held;
    double acts = 0;
    for (int k = from; k < to; ++k) {
      held.parameters += mem[k].parameters;
      held.gradients += mem[k].gradients;
      held.optimizer += mem[k].optimizer;
      held.updates += mem[k].updates;
      acts += mem[k].activations + mem[k].inputs;
    }
    // What it receives from the stage before (StageProblem::received).
    if (from > 0)
      acts += lc[from - 1].transferBytes;
    pi.stageHeld.push_back(held);
    pi.stageActivations.push_back(acts);
    if (s + 1 < c.pp) {
      pi.transferBytes.push_back(lc[to - 1].transferBytes);
      pi.transferMessages.push_back(lc[to - 1].transferMessages);
    }
  }
  plan.memory = pi.stageHeld[worst];
  for (int k = i; k < j; ++k) {
    plan.memory.activations += c.inFlight[worst] * mem[k].activations;
    plan.memory.inputs += c.inFlight[worst] * mem[k].inputs;
  }
  if (i > 0)
    plan.memory.activations += c.inFlight[worst] * lc[i - 1].transferBytes;
  pi.stages = c.pp;
  pi.microBatches = options.microBatches;
  pi.schedule = c.schedule;
  pi.firstLayer = c.split.first;
  pi.stageTime = c.split.stageTime;
  pi.stageMemory = c.split.memory;
  pi.inFlight = c.inFlight;
  pi.bubble = c.bubble;
  pi.unitBubble = c.unitBubble;
  pi.objective = c.split.objective;
  // Boundaries by the name of each later stage's first op.
  for (int s = 1; s < c.pp; ++s)
    pi.boundaries += (s > 1 ? "," : "") + boundaryName(sh.graph,
                                                       c.split.first[s]);
  describeChoice(plan, sh.graph, choice, c.remat, cluster.device, sh.mesh);
}

} // namespace

namespace {

/// Runs `step` on a search over `base`; times it into `plan`.
LogicalResult runSearch(
    ModuleOp module, const Graph &base, const Cluster &cluster,
    const PlannerOptions &options, double limit, Plan &plan,
    std::string &error,
    function_ref<LogicalResult(PipelineSearch &, std::string &)> step) {
  if (options.microBatches < 1) {
    error = "micro-batches must be at least 1";
    return failure();
  }
  double t0 = now();
  PipelineSearch search(module, base, cluster, options, limit, plan);
  if (failed(step(search, error)))
    return failure();
  plan.ilpSeconds = search.ilpTime();
  plan.pipelineSeconds = now() - t0;
  return success();
}

} // namespace

LogicalResult mlir::loom::planner::planPipeline(
    ModuleOp module, const Graph &base, const Cluster &cluster,
    const PlannerOptions &options, double limit, Plan &plan,
    std::string &error) {
  return runSearch(module, base, cluster, options, limit, plan, error,
                   [](PipelineSearch &s, std::string &err) {
                     return s.run(err);
                   });
}

LogicalResult mlir::loom::planner::planFixedPipeline(
    ModuleOp module, const Graph &base, const Cluster &cluster,
    const PlannerOptions &options, double limit, MeshOp mesh, Plan &plan,
    std::string &error) {
  return runSearch(module, base, cluster, options, limit, plan, error,
                   [&](PipelineSearch &s, std::string &err) {
                     if (failed(s.runFixed(mesh, err)))
                       return failure();
                     s.apply(mesh);
                     return success();
                   });
}
