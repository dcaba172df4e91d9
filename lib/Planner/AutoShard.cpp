//===- AutoShard.cpp - The planner's search -------------------------------===//
//
// For every mesh shape: candidates, the Megatron baseline (optional), and
// the ILP without a memory limit (when its plan fits, nothing that
// rematerializes can beat it, and its bound is a lower bound for the
// shape). Shapes whose plan does not fit are searched under the limit with
// each rematerialization level, most promising first, and skipped once
// their bound cannot beat the best plan found. The fastest plan that fits
// is named, reported and written into the IR.
//
//===----------------------------------------------------------------------===//

#include "loom/Planner/AutoShard.h"

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Dialect/Loom/Utils/Utils.h"
#include "loom/Planner/ApplyPlan.h"
#include "loom/Planner/Candidates.h"
#include "loom/Sharding/Passes.h"
#include "loom/Planner/CostTable.h"
#include "loom/Planner/Megatron.h"
#include "loom/Planner/PipelineSearch.h"
#include "loom/Sharding/Strategies.h"
#include "loom/Support/Debug.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Timer.h"

#include <cmath>

#define DEBUG_TYPE "loom-auto-shard"

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::planner;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Wall-clock seconds (LLVM's timer clock).
double now() { return llvm::TimeRecord::getCurrentTime().getWallTime(); }

/// A solved plan for one mesh shape and rematerialization level.
struct Candidate {
  size_t shape = 0;
  double remat = 0;
  SolverResult ilp;
  SmallVector<int> choice;
  Totals totals;
};

} // namespace

MeshShape mlir::loom::planner::meshShapeOf(const Cluster &cluster,
                                           MeshOp mesh) {
  MeshShape m;
  auto axes = mesh.getAxes();
  SmallVector<int64_t> strides(axes.size());
  int64_t stride = 1;
  for (int a = axes.size() - 1; a >= 0; --a) {
    strides[a] = stride;
    stride *= cast<MeshAxisAttr>(axes[a]).getSize();
  }
  for (size_t a = 0; a < axes.size(); ++a) {
    auto axis = cast<MeshAxisAttr>(axes[a]);
    m.names.push_back(axis.getName().str());
    m.sizes.push_back(axis.getSize());
    Link l = cluster.link(strides[a], axis.getSize());
    if (axis.getBandwidth())
      l.bandwidth = axis.getBandwidth().getValueAsDouble();
    if (axis.getLatency())
      l.latency = axis.getLatency().getValueAsDouble();
    m.links.push_back(l);
  }
  return m;
}

namespace {

/// The module's mesh (`fixed`), or every 2-D shape of the cluster (1-D
/// ones included, as a size-1 axis) and, with `maxAxes` 3, every 3-D shape
/// whose axes all have more than one device. Axes go from the outermost
/// (largest stride) in; each is priced on the innermost link level that
/// holds its groups.
FailureOr<SmallVector<MeshShape>> meshShapes(const Cluster &cluster,
                                             MeshOp fixed, int maxAxes,
                                             std::string &error) {
  SmallVector<MeshShape> shapes;
  if (fixed) {
    MeshShape m = meshShapeOf(cluster, fixed);
    if (m.rank() > 16) {
      error = "meshes of more than 16 axes are not supported by the planner";
      return failure();
    }
    shapes.push_back(m);
    return shapes;
  }
  int64_t n = cluster.numDevices();
  for (int64_t inner = 1; inner <= n; ++inner) {
    if (n % inner)
      continue;
    MeshShape m;
    m.names = {"x", "y"};
    m.sizes = {n / inner, inner};
    m.links = {cluster.link(inner, n / inner), cluster.link(1, inner)};
    shapes.push_back(m);
  }
  if (maxAxes < 3)
    return shapes;
  for (int64_t inner = 2; inner <= n; ++inner) {
    if (n % inner)
      continue;
    for (int64_t middle = 2; middle * inner < n; ++middle) {
      if ((n / inner) % middle)
        continue;
      int64_t outer = n / inner / middle;
      MeshShape m;
      m.names = {"x", "y", "z"};
      m.sizes = {outer, middle, inner};
      m.links = {cluster.link(inner * middle, outer),
                 cluster.link(inner, middle), cluster.link(1, inner)};
      shapes.push_back(m);
    }
  }
  return shapes;
}

/// A plan of a 2-D shape as a plan of the 3-D shape that splits one of its
/// axes in two (`split` 0: the 2-D x is the 3-D x,y; 1: the 2-D y is the
/// 3-D y,z): every 2-D plan of (ab, c) and (a, bc) is a plan of (a, b, c)
/// with the same devices in the same groups. Its price there is the same
/// but for resharding, which moves a dimension split over two axes one
/// axis at a time (a latency more; measured 0.14% on a GPT block). Empty
/// when some node has no such strategy.
SmallVector<int> liftChoice(const Graph &from, ArrayRef<int> choice,
                            const Graph &to, int split) {
  auto axes = [&](int a) -> SmallVector<int, 2> {
    if (a == split)
      return {a, a + 1};
    return {a < split ? a : a + 1};
  };
  auto lift = [&](const AxisSharding &t) {
    AxisSharding out = t;
    for (auto [d, dimAxes] : llvm::enumerate(t.dims)) {
      out.dims[d].clear();
      for (int a : dimAxes)
        out.dims[d].append(axes(a));
    }
    out.partial.clear();
    for (int a : t.partial)
      out.partial.append(axes(a));
    return out;
  };
  auto liftMask = [&](Mask m) {
    Mask out = 0;
    for (int a = 0; a < 64; ++a)
      if (m >> a & 1)
        for (int b : axes(a))
          out |= Mask(1) << b;
    return out;
  };
  SmallVector<int> lifted;
  for (auto [v, node] : llvm::enumerate(from.nodes)) {
    const Strategy &s = node.strategies[choice[v]];
    Strategy want;
    for (const AxisSharding &t : s.operands)
      want.operands.push_back(lift(t));
    for (const AxisSharding &t : s.results)
      want.results.push_back(lift(t));
    for (Mask m : s.gradPartial)
      want.gradPartial.push_back(liftMask(m));
    const std::vector<Strategy> &cands = to.nodes[v].strategies;
    auto it = llvm::find_if(
        cands, [&](const Strategy &c) { return c.sameOutside(want); });
    if (it == cands.end())
      return {};
    lifted.push_back(it - cands.begin());
  }
  return lifted;
}

/// The search over shapes and rematerialization levels.
class Search {
public:
  Search(ModuleOp module, const Cluster &cluster, const PlannerOptions &options,
         Plan &plan, double limit, bool hasShardings)
      : module(module), cluster(cluster), options(options), plan(plan),
        limit(limit), hasShardings(hasShardings) {}

  LogicalResult run(const Graph &base, ArrayRef<MeshShape> shapeList,
                    std::string &error) {
    shapes.assign(shapeList.begin(), shapeList.end());
    graphs.assign(shapes.size(), base);
    rematLevels = {0};
    // Whole layers only: what loom-rematerialize can recompute.
    if (options.remat < 0 && base.layers >= 2)
      rematLevels = {0, std::round(0.5 * base.layers) / base.layers, 1};
    else if (options.remat > 0 && base.layers >= 1)
      rematLevels = {options.remat};
    shapeBound.assign(shapes.size(), kInf);
    freePlan.assign(shapes.size(), Candidate());
    for (size_t si = 0; si < shapes.size(); ++si)
      if (failed(planShape(si, error)))
        return failure();
    searchUnderLimit();
    plan.searchBound = *llvm::min_element(shapeBound);
    plan.ilpSeconds = ilpSeconds;
    plan.megatronSeconds = megatronSeconds;
    return success();
  }

  const Candidate *best() const {
    const Candidate *b = nullptr;
    for (const Candidate &c : all)
      if (fits(c) && (!b || c.totals.time < b->totals.time - 1e-15))
        b = &c;
    return b;
  }
  Graph &graphOf(const Candidate &c) { return graphs[c.shape]; }
  const MeshShape &shapeOf(const Candidate &c) const { return shapes[c.shape]; }

  /// The best of every other shape and remat level, fastest first.
  std::vector<Alternative> runnersUp(const Candidate *best, bool fixed) const;
  /// When no plan the time-minimizing ILPs found fits: the plan of least
  /// memory of every shape (most remat), kept as a candidate when it fits —
  /// a short --plan-time-limit then gives a slower plan, not none. Returns
  /// whether one fits.
  bool searchLeastMemory();
  /// Why nothing fits: the least memory any plan needs and what to change.
  std::string explainInfeasible(func::FuncOp fn, bool fixed);

private:
  bool fits(const Candidate &c) const {
    return c.ilp.feasible && c.totals.memory.total() <= limit * (1 + 1e-9);
  }
  Candidate solveShape(size_t si, double remat, double lim,
                       ArrayRef<int> start);
  LogicalResult planShape(size_t si, std::string &error);
  /// For a 3-D shape: the fastest unlimited plan of the 2-D shapes it
  /// refines, lifted into it (empty if none).
  SmallVector<int> liftedStart(size_t si);
  Alternative priceMegatron(size_t si, ArrayRef<int> choice, Costs &costs);
  void searchUnderLimit();

  struct Pending {
    double bound;
    size_t shape;
    SmallVector<int> start;
  };

  ModuleOp module;
  const Cluster &cluster;
  const PlannerOptions &options;
  Plan &plan;
  double limit;
  bool hasShardings;
  SmallVector<MeshShape> shapes;
  std::vector<Graph> graphs;
  SmallVector<double> rematLevels;
  std::vector<Candidate> all;
  SmallVector<Pending> pending;
  /// Per shape: the best lower bound proven for any of its plans.
  SmallVector<double> shapeBound;
  /// Per shape: its plan without a memory limit (empty if none found).
  std::vector<Candidate> freePlan;
  /// searchLeastMemory's plans: the smallest, and whether an ILP stopped
  /// before finding any.
  Candidate leastMemory;
  bool leastMemoryTimedOut = false;
  double ilpSeconds = 0, megatronSeconds = 0;
};

Candidate Search::solveShape(size_t si, double remat, double lim,
                             ArrayRef<int> start) {
  double s0 = now();
  Graph &g = graphs[si];
  Costs costs(cluster.device, shapes[si]);
  CostTable table = buildCostTable(g, costs, remat);
  table.request.memoryLimit = lim;
  table.request.timeLimit = options.timeLimit;
  if (!start.empty())
    table.request.start = table.startOf(start);
  Candidate c;
  c.shape = si;
  c.remat = remat;
  double s1 = now();
  c.ilp = solve(table.request);
  ilpSeconds += now() - s0;
  LLVM_DEBUG(llvm::dbgs() << llvm::formatv(
                 "ilp mesh {0} remat {1} limit {2}: table {3:f2} s, solve "
                 "{4:f2} s, {5} vars, feasible {6} optimal {7} obj {8} bound "
                 "{9}\n",
                 shapes[si].str(), remat, lim, s1 - s0, now() - s1,
                 c.ilp.variables, c.ilp.feasible, c.ilp.optimal,
                 c.ilp.objective, c.ilp.bound));
  ++plan.ilps;
  if (!c.ilp.optimal && !c.ilp.provenInfeasible)
    ++plan.ilpsStopped;
  plan.variables = std::max(plan.variables, c.ilp.variables);
  plan.constraints = std::max(plan.constraints, c.ilp.constraints);
  if (c.ilp.feasible) {
    c.choice = table.choiceOf(c.ilp.choice);
    c.totals = evaluate(g, c.choice, remat, costs);
    LLVM_DEBUG(llvm::dbgs() << llvm::formatv(
                   "  evaluated {0} (ILP objective {1})\n", c.totals.time,
                   c.ilp.objective));
  } else if (!start.empty() && !c.ilp.provenInfeasible) {
    // Stopped before any solution: the start (the Megatron plan of the
    // shape) is still a plan, when it fits.
    Totals t = evaluate(g, start, remat, costs);
    if (t.memory.total() <= lim) {
      c.choice.assign(start.begin(), start.end());
      c.totals = t;
      c.ilp.feasible = true;
      c.ilp.objective = t.time;
      c.ilp.bound = std::min(c.ilp.bound, t.time);
    }
  }
  return c;
}

Alternative Search::priceMegatron(size_t si, ArrayRef<int> choice,
                                  Costs &costs) {
  const MeshShape &mesh = shapes[si];
  Alternative best;
  best.mesh = "dp=" + std::to_string(mesh.sizes[0]) +
              ",tp=" + std::to_string(mesh.sizes[1]);
  for (double r : rematLevels) {
    Totals t = evaluate(graphs[si], choice, r, costs);
    bool fitsLimit = t.memory.total() <= limit;
    if ((fitsLimit && (!best.feasible || t.time < best.seconds)) ||
        (!best.feasible && !fitsLimit &&
         (best.memory == 0 || t.memory.total() < best.memory))) {
      best.feasible = fitsLimit;
      best.seconds = t.time;
      best.memory = t.memory.total();
      best.remat = r;
    }
  }
  return best;
}

LogicalResult Search::planShape(size_t si, std::string &error) {
  const MeshShape &mesh = shapes[si];
  Graph &g = graphs[si];
  Costs costs(cluster.device, mesh);
  if (failed(enumerateCandidates(g, costs, error)))
    return failure();
  // The Megatron plan of this shape, as a baseline and a start.
  SmallVector<int> start;
  if (options.compareMegatron && mesh.rank() == 2 && !hasShardings) {
    double m0 = now();
    FailureOr<SmallVector<int>> mc = megatronChoice(module, g, costs);
    if (succeeded(mc)) {
      plan.megatron.push_back(priceMegatron(si, *mc, costs));
      start = *mc;
    }
    megatronSeconds += now() - m0;
  }
  // A 3-D shape starts from the best 2-D plan it refines, so its larger
  // ILP has a plan from the start (the plan kept is the fastest of every
  // shape, so a 3-D search never makes the result worse).
  if (mesh.rank() == 3 && start.empty())
    start = liftedStart(si);
  // Without a memory limit, at the least remat level searched (remat only
  // adds time): its bound holds for every plan of the shape.
  Candidate free = solveShape(si, rematLevels.front(), kInf, start);
  shapeBound[si] = free.ilp.bound;
  if (free.ilp.feasible)
    freePlan[si] = free;
  if (free.ilp.feasible && free.totals.memory.total() <= limit)
    all.push_back(std::move(free));
  else
    pending.push_back({free.ilp.bound, si, std::move(start)});
  return success();
}

SmallVector<int> Search::liftedStart(size_t si) {
  const MeshShape &m = shapes[si];
  int64_t a = m.sizes[0], b = m.sizes[1], c = m.sizes[2];
  const Candidate *best = nullptr;
  SmallVector<int> start;
  for (size_t sj = 0; sj < si; ++sj) {
    const MeshShape &s = shapes[sj];
    if (s.rank() != 2 || !freePlan[sj].ilp.feasible)
      continue;
    int split = s.sizes[0] == a * b && s.sizes[1] == c   ? 0
                : s.sizes[0] == a && s.sizes[1] == b * c ? 1
                                                         : -1;
    if (split < 0 ||
        (best && best->totals.time <= freePlan[sj].totals.time))
      continue;
    SmallVector<int> lifted =
        liftChoice(graphs[sj], freePlan[sj].choice, graphs[si], split);
    if (lifted.empty())
      continue;
    best = &freePlan[sj];
    start = std::move(lifted);
  }
  LLVM_DEBUG({
    if (best) {
      Costs costs(cluster.device, shapes[si]);
      llvm::dbgs() << llvm::formatv(
          "lifted {0} into {1}: {2:e} s there, {3:e} s here\n",
          shapes[best->shape].str(), shapes[si].str(), best->totals.time,
          evaluate(graphs[si], start, rematLevels.front(), costs).time);
    }
  });
  return start;
}

void Search::searchUnderLimit() {
  llvm::stable_sort(pending, [](const Pending &a, const Pending &b) {
    return a.bound < b.bound;
  });
  for (Pending &p : pending) {
    double bestSoFar = kInf;
    for (const Candidate &c : all)
      if (fits(c))
        bestSoFar = std::min(bestSoFar, c.totals.time);
    if (p.bound >= bestSoFar)
      continue;
    Costs costs(cluster.device, shapes[p.shape]);
    double levelsBound = kInf;
    for (double r : rematLevels) {
      bool useStart =
          !p.start.empty() &&
          evaluate(graphs[p.shape], p.start, r, costs).memory.total() <= limit;
      all.push_back(solveShape(p.shape, r, limit,
                               useStart ? ArrayRef<int>(p.start)
                                        : ArrayRef<int>()));
      levelsBound = std::min(levelsBound, all.back().ilp.bound);
    }
    shapeBound[p.shape] = std::max(p.bound, levelsBound);
  }
}

std::vector<Alternative> Search::runnersUp(const Candidate *best,
                                           bool fixed) const {
  std::vector<Alternative> out;
  for (const Candidate &c : all) {
    if (&c == best || !fits(c))
      continue;
    Alternative a;
    a.mesh = fixed ? shapes[c.shape].str() : shapes[c.shape].shape();
    a.remat = c.remat;
    a.feasible = true;
    a.seconds = c.totals.time;
    a.memory = c.totals.memory.total();
    out.push_back(a);
  }
  llvm::stable_sort(out, [](const Alternative &a, const Alternative &b) {
    return a.seconds < b.seconds;
  });
  if (out.size() > 5)
    out.resize(5);
  return out;
}

bool Search::searchLeastMemory() {
  double r = rematLevels.back();
  for (size_t si = 0; si < shapes.size(); ++si) {
    Costs costs(cluster.device, shapes[si]);
    CostTable table = buildCostTable(graphs[si], costs, r);
    table.request.minimizeMemory = true;
    table.request.timeLimit = options.timeLimit;
    Candidate c;
    c.shape = si;
    c.remat = r;
    c.ilp = solve(table.request);
    ++plan.ilps;
    if (!c.ilp.optimal && !c.ilp.provenInfeasible)
      ++plan.ilpsStopped;
    leastMemoryTimedOut |= !c.ilp.feasible && !c.ilp.provenInfeasible;
    if (!c.ilp.feasible)
      continue;
    c.choice = table.choiceOf(c.ilp.choice);
    c.totals = evaluate(graphs[si], c.choice, r, costs);
    if (!leastMemory.ilp.feasible ||
        c.totals.memory.total() < leastMemory.totals.memory.total())
      leastMemory = c;
    if (fits(c))
      all.push_back(std::move(c));
  }
  return best() != nullptr;
}

std::string Search::explainInfeasible(func::FuncOp fn, bool fixed) {
  // The least memory any plan needs, to say what would make it fit.
  double bestMem = leastMemory.ilp.feasible
                       ? leastMemory.totals.memory.total()
                       : kInf;
  bool timedOut = leastMemoryTimedOut;
  const Totals &bestTotals = leastMemory.totals;
  std::string bestMesh;
  if (leastMemory.ilp.feasible)
    bestMesh = fixed ? shapes[leastMemory.shape].str()
                     : shapes[leastMemory.shape].shape();
  std::string s;
  llvm::raw_string_ostream os(s);
  int64_t devices = 1;
  for (int64_t x : shapes.front().sizes)
    devices *= x;
  os << "no sharding of @" << fn.getSymName() << " fits in "
     << formatMemory(limit) << " per device on " << cluster.name << " ("
     << devices << " devices of " << cluster.device.name << ")";
  if (bestMem == kInf) {
    if (timedOut)
      os << ": the ILP found no plan at all within its "
         << llvm::format("%g", options.timeLimit)
         << " s limit (not a proof that none fits). Give it more time "
            "(--plan-time-limit), fewer micro-batches in one step (each is "
            "planned as its own copy of the model), or a preset strategy";
    return s;
  }
  const MemoryBreakdown &m = bestTotals.memory;
  os << ": the smallest per-device memory found is " << formatMemory(bestMem)
     << " (mesh " << bestMesh << ": " << formatBreakdown(m) << ")";
  double weights = m.parameters + m.gradients + m.optimizer;
  os << "; "
     << (weights >= m.activations
             ? "parameters, gradients and optimizer state dominate"
             : "activations dominate");
  bool layers = graphs.front().layers >= 2;
  os << ". Already searched: ZeRO-style splits of parameters, gradients "
        "and optimizer state over every axis"
     << (options.remat != 0 && layers
             ? ", rematerialization of every repeated layer"
             : "");
  os << ". To fit: ";
  SmallVector<std::string> fixes;
  double ratio = bestMem / limit;
  fixes.push_back(llvm::formatv("about {0}x the devices (~{1})",
                                llvm::formatv("{0:f1}", ratio).str(),
                                int64_t(std::ceil(ratio * devices)))
                      .str());
  if (options.remat == 0 && layers)
    fixes.push_back("allow rematerialization");
  if (m.activations > weights)
    fixes.push_back("a smaller batch or micro-batches (--micro-batches)");
  fixes.push_back("devices with more memory");
  llvm::interleave(fixes, os, ", or ");
  return s;
}

} // namespace

/// Names a chosen mesh's axes by role — "tp" when contractions read weights
/// split over it (directly or through a relayout), else "dp" when it splits
/// the batch (of an input, as stored or as its consumers read it), else
/// "sp" (something else) or "rep" (nothing) — and returns the axes to keep
/// (size-1 axes split nothing).
SmallVector<int> mlir::loom::planner::nameAxes(MeshShape &mesh, const Graph &g,
                                               ArrayRef<int> choice,
                                               bool fixed) {
  SmallVector<int> keep;
  for (int a = 0; a < mesh.rank(); ++a)
    if (mesh.sizes[a] > 1 || fixed)
      keep.push_back(a);
  if (keep.empty())
    keep.push_back(mesh.rank() - 1);
  if (fixed)
    return keep;
  Mask batch = 0, weights = 0, any = 0;
  for (int v = 0; v < int(g.nodes.size()); ++v) {
    const Strategy &st = g.nodes[v].strategies[choice[v]];
    for (const AxisSharding &t : st.results)
      any |= t.usedMask();
    if (g.nodes[v].kind == NodeKind::Data && !st.results[0].dims.empty())
      batch |= maskOf(st.results[0].dims[0]);
  }
  for (const Edge &e : g.edges) {
    const AxisSharding &read =
        g.nodes[e.v].strategies[choice[e.v]].operands[e.operand];
    // The batch as ops read it (inputs may be stored whole and sliced).
    if (g.nodes[e.u].kind == NodeKind::Data && !read.dims.empty())
      batch |= maskOf(read.dims[0]);
    if (g.nodes[e.u].kind != NodeKind::Param)
      continue;
    Operation *op = g.nodes[e.v].op;
    auto iface = dyn_cast<ShardingRuleOpInterface>(op);
    bool readsWeights = op->hasTrait<OpTrait::loom::Relayout>() ||
                        (iface && iface.getShardingRule().isContraction());
    if (readsWeights)
      weights |= read.usedMask();
  }
  llvm::StringMap<int> uses;
  for (int a = 0; a < mesh.rank(); ++a) {
    Mask bit = Mask(1) << a;
    std::string role = (weights & bit) ? "tp"
                       : (batch & bit) ? "dp"
                       : (any & bit)   ? "sp"
                                       : "rep";
    int n = uses[role]++;
    mesh.names[a] = n ? role + std::to_string(n + 1) : role;
  }
  return keep;
}

namespace {

/// The plan's summary fields for `best` on `mesh` (named).
void summarize(Plan &plan, const Candidate &best, const MeshShape &mesh,
               ArrayRef<int> keep) {
  for (int a : keep) {
    plan.mesh += (plan.mesh.empty() ? "" : ",") + mesh.names[a] + "=" +
                 std::to_string(mesh.sizes[a]);
    plan.axisNames.push_back(mesh.names[a]);
    plan.axisSizes.push_back(mesh.sizes[a]);
    plan.axisLinks.push_back(describeLink(mesh.links[a]));
  }
  plan.remat = best.remat;
  plan.stepTime = best.totals.time;
  plan.overlap = best.totals.overlapped;
  plan.computeTime = best.totals.compute;
  plan.commTime = best.totals.comm;
  plan.memory = best.totals.memory;
  plan.gap = best.totals.time > 0
                 ? std::max(0.0, (best.totals.time - plan.searchBound) /
                                     best.totals.time)
                 : 0;
  plan.solverStatus = plan.gap <= 1e-4 ? "optimal" : "time limit";
}

/// A preset, priced and written into the IR as a plan: no search.
FailureOr<Plan> planPreset(ModuleOp module, Graph &g, const Cluster &cluster,
                           MeshShape mesh, MeshOp fixed,
                           const PlannerOptions &options, double limit,
                           Plan plan, double t0, std::string &error) {
  Costs costs(cluster.device, mesh);
  if (failed(enumerateCandidates(g, costs, error)))
    return failure();
  StrategyOptions preset;
  preset.strategy = options.preset;
  preset.dpAxis = options.dpAxis;
  preset.tpAxis = options.tpAxis;
  FailureOr<SmallVector<int>> choice = presetChoice(g, costs, fixed, preset);
  if (failed(choice)) {
    error = "the " + options.preset + " preset does not apply to @" +
            g.fn.getSymName().str();
    return failure();
  }
  Candidate c;
  c.remat = options.remat > 0 && g.layers >= 1 ? options.remat : 0;
  c.ilp.feasible = true;
  c.choice = std::move(*choice);
  c.totals = evaluate(g, c.choice, c.remat, costs);
  if (c.totals.memory.total() > limit * (1 + 1e-9)) {
    const MemoryBreakdown &m = c.totals.memory;
    error = llvm::formatv(
        "the {0} preset on mesh {1} needs {2} per device, more than the "
        "{3} limit on {4} ({5}): {6}. To fit: another preset or mesh, "
        "--strategy auto, rematerialization (--remat=layers), or a higher "
        "--memory-limit-gib",
        options.preset, mesh.str(), formatMemory(m.total()),
        formatMemory(limit), cluster.name, cluster.device.name,
        formatBreakdown(m));
    return failure();
  }
  plan.preset = options.preset;
  plan.searchBound = c.totals.time;
  SmallVector<int> keep = nameAxes(mesh, g, c.choice, /*fixed=*/true);
  summarize(plan, c, mesh, keep);
  plan.solverStatus = "preset";
  describeChoice(plan, g, c.choice, c.remat, cluster.device, mesh);
  applyPlan(module, g, c.choice, mesh, fixed, keep);
  plan.planningSeconds = now() - t0;
  return plan;
}

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
  if (failed(verifyLossFunction(fn, "loom-auto-shard"))) {
    error = "cannot plan @" + fn.getSymName().str();
    return failure();
  }
  double limit = options.memoryLimit > 0
                     ? options.memoryLimit
                     : cluster->device.memory * options.memoryFraction;
  // A fixed mesh: the module's, when asked or when the function already
  // has shardings (kept as constraints).
  bool hasShardings = false;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    hasShardings |= bool(fn.getArgAttr(i, LoomDialect::kShardingAttrName));
  fn.walk([&](ShardingConstraintOp) { hasShardings = true; });
  MeshOp fixed;
  auto meshes = llvm::to_vector(module.getOps<MeshOp>());
  if (options.fixedMesh || hasShardings || !options.preset.empty()) {
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
  dropShardingHints(fn);
  int maxAxes = options.meshAxes ? options.meshAxes
                                 : cluster->levels.size() >= 3 ? 3
                                                               : 2;
  FailureOr<SmallVector<MeshShape>> shapes =
      meshShapes(*cluster, fixed, maxAxes, error);
  if (failed(shapes))
    return failure();

  Graph base = buildGraph(fn, options.optimizerStates);
  base.bucketBytes = options.bucketBytes;
  base.overlap = options.overlap;
  if (options.overlap && options.bucketBytes > 0)
    base.firstBucketBytes =
        std::min(options.bucketBytes, double(kFirstBucketBytes));
  coarsen(base);
  Plan plan;
  plan.cluster = cluster->name;
  plan.device = cluster->device.name;
  plan.overlapPriced =
      options.overlap && cluster->device.overlapSlowdown >= 0;
  plan.memoryLimit = limit;
  plan.layers = base.layers;
  plan.opsPerLayer = base.period;
  plan.nodes = base.nodes.size();
  for (int v = 0; v < int(base.nodes.size()); ++v)
    plan.distinctNodes += base.nodes[v].rep == v;

  if (options.pipelineStages != 1) {
    if (fixed) {
      error = "the pipeline search chooses the mesh: leave out --mesh (and "
              "the model's own mesh and shardings)";
      return failure();
    }
    if (failed(planPipeline(module, base, *cluster, options, limit, plan,
                            error)))
      return failure();
    plan.planningSeconds = now() - t0;
    return plan;
  }
  // A pp axis on the module's mesh: stages over the other axes.
  if (fixed && options.preset.empty())
    if (MeshAxisAttr pp = fixed.getAxis("pp"); pp && pp.getSize() > 1) {
      if (failed(planFixedPipeline(module, base, *cluster, options, limit,
                                   fixed, plan, error)))
        return failure();
      plan.planningSeconds = now() - t0;
      return plan;
    }
  if (!options.preset.empty())
    return planPreset(module, base, *cluster, shapes->front(), fixed, options,
                      limit, plan, t0, error);

  Search search(module, *cluster, options, plan, limit, hasShardings);
  if (failed(search.run(base, *shapes, error)))
    return failure();
  const Candidate *best = search.best();
  if (!best && search.searchLeastMemory())
    best = search.best();
  if (!best) {
    error = search.explainInfeasible(fn, bool(fixed));
    return failure();
  }
  plan.runnersUp = search.runnersUp(best, bool(fixed));
  // The ILP splits a weight's optimizer state over the axes its gradient
  // is partial over (ZeRO: reduce-scatter, update a shard, all-gather)
  // whenever it can; keeping the state whole (bucketed all-reduces, as
  // plain data parallelism) is not one of its choices. The winner's mesh
  // is planned again with the state whole, and the faster plan that fits
  // is kept: on 2 CPU ranks the split plan measured 1.3-1.6x plain dp.
  Plan scratch = plan;
  Search whole(module, *cluster, options, scratch, limit, hasShardings);
  Search *from = &search;
  if (base.shardState) {
    Graph wholeBase = base;
    wholeBase.shardState = false;
    std::string ignored;
    MeshShape winner = search.shapeOf(*best);
    if (succeeded(whole.run(wholeBase, {winner}, ignored)))
      if (const Candidate *alt = whole.best();
          alt && alt->totals.time < best->totals.time * (1 - 1e-9)) {
        best = alt;
        from = &whole;
      }
    plan.ilpSeconds += scratch.ilpSeconds;
    // What was searched now includes the whole-state plans of that mesh.
    plan.searchBound = std::min(plan.searchBound, scratch.searchBound);
  }
  MeshShape mesh = from->shapeOf(*best);
  Graph &g = from->graphOf(*best);
  SmallVector<int> keep = nameAxes(mesh, g, best->choice, bool(fixed));
  summarize(plan, *best, mesh, keep);
  describeChoice(plan, g, best->choice, best->remat, cluster->device, mesh);
  if (options.bruteForce) {
    Costs costs(cluster->device, mesh);
    plan.bruteForceTime = bruteForce(g, best->remat, limit, costs, 5e6,
                                     plan.bruteForceCombinations);
  }
  applyPlan(module, g, best->choice, mesh, fixed, keep);
  markRematerializedLayers(g, best->remat);
  plan.planningSeconds = now() - t0 - plan.megatronSeconds;
  return plan;
}
