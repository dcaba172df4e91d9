//===- Report.cpp - What the planner chose and predicts -------------------===//

#include "loom/Planner/Report.h"

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Dialect/Loom/Utils/Utils.h"
#include "loom/Planner/Candidates.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <map>

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::planner;

std::string mlir::loom::planner::formatMemory(double bytes) {
  if (bytes < 0.01 * 1024 * 1024 * 1024)
    return humanBytes(bytes);
  return llvm::formatv("{0:f2} GiB", bytes / (1024.0 * 1024 * 1024)).str();
}

std::string mlir::loom::planner::formatBreakdown(const MemoryBreakdown &m) {
  std::string s = "parameters " + formatMemory(m.parameters) +
                  ", gradients " + formatMemory(m.gradients) +
                  ", optimizer state " + formatMemory(m.optimizer) +
                  ", activations " + formatMemory(m.activations) +
                  ", inputs " + formatMemory(m.inputs);
  if (m.updates > 0)
    s += ", updated parameters and state (new buffers) " +
         formatMemory(m.updates);
  return s;
}

std::string mlir::loom::planner::formatSeconds(double s) {
  if (s >= 1)
    return llvm::formatv("{0:f3} s", s).str();
  if (s >= 1e-3)
    return llvm::formatv("{0:f3} ms", s * 1e3).str();
  return llvm::formatv("{0:f1} us", s * 1e6).str();
}

//===----------------------------------------------------------------------===//
// Rows and collectives of a choice
//===----------------------------------------------------------------------===//

namespace {

/// Every collective of the step under `choice`, priced again with a log:
/// ops' own (resolving partial results), then the edges' resharding.
std::vector<Collective> logCollectives(const Graph &g, ArrayRef<int> choice,
                                       double remat, const DeviceSpec &device,
                                       const MeshShape &mesh) {
  std::vector<Collective> log;
  Costs costs(device, mesh, &log);
  DenseMap<int, double> count;
  for (int v = 0; v < int(g.nodes.size()); ++v)
    count[g.nodes[v].rep] += g.nodes[v].same == v; // CSE keeps one copy
  for (int v = 0; v < int(g.nodes.size()); ++v) {
    const Node &n = g.nodes[v];
    if (n.kind != NodeKind::Op || n.rep != v)
      continue;
    const Strategy &s = n.strategies[choice[v]];
    auto iface = dyn_cast<ShardingRuleOpInterface>(n.op);
    if (!iface || s.factors.empty())
      continue;
    costs.where = n.name;
    costs.weight = count[v];
    opStrategy(n, iface.getShardingRule(), s.factors, s.rsDim, costs);
    // Rematerialized layers resolve their partial results again (forward
    // only: the node as if no gradient flowed).
    if (n.layer >= 0 && remat > 0 && s.partial) {
      Node forwardOnly = n;
      forwardOnly.gradOperand.assign(n.gradOperand.size(), false);
      costs.weight = count[v] * remat;
      opStrategy(forwardOnly, iface.getShardingRule(), s.factors, s.rsDim,
                 costs);
    }
  }
  costs.weight = 1;
  evaluate(g, choice, remat, costs);
  // Merged by kind, axes and bytes.
  std::map<std::tuple<std::string, std::string, int64_t>, Collective> merged;
  for (const Collective &c : log) {
    auto key = std::make_tuple(c.kind, c.axes, int64_t(c.bytes));
    auto [it, fresh] = merged.try_emplace(key, c);
    it->second.sites.push_back(c.where);
    if (!fresh) {
      it->second.count += c.count;
      it->second.seconds += c.seconds;
    }
  }
  std::vector<Collective> out;
  for (auto &[k, c] : merged)
    out.push_back(c);
  llvm::stable_sort(out, [](const Collective &a, const Collective &b) {
    return a.seconds > b.seconds;
  });
  return out;
}

} // namespace

void mlir::loom::planner::describeChoice(Plan &plan, const Graph &g,
                                         ArrayRef<int> choice, double remat,
                                         const DeviceSpec &device,
                                         const MeshShape &mesh) {
  plan.collectives = logCollectives(g, choice, remat, device, mesh);
  Costs costs(device, mesh);
  DenseMap<int, double> count, comm, update;
  for (int v = 0; v < int(g.nodes.size()); ++v)
    count[g.nodes[v].rep] += g.nodes[v].same == v; // CSE keeps one copy
  ValueReshards reshards(remat);
  for (const Edge &e : g.edges) {
    const Strategy &a = g.nodes[e.u].strategies[choice[e.u]];
    const Strategy &b = g.nodes[e.v].strategies[choice[e.v]];
    EdgeCost c = edgeCost(g, e, a, b, costs);
    comm[g.nodes[e.v].rep] += reshards.price(g, e, a, b, costs) +
                              reshards.reduction(g, e, a, b, costs).time;
    update[g.nodes[e.v].rep] += c.update;
  }
  for (int v = 0; v < int(g.nodes.size()); ++v) {
    const Node &n = g.nodes[v];
    if (n.rep != v || n.kind != NodeKind::Op)
      continue;
    const Strategy &s = n.strategies[choice[v]];
    OpRow row;
    row.op = n.name;
    row.sharding = s.results.empty() ? "" : describe(s.results[0], mesh);
    if (s.partial)
      row.note = (s.rsDim >= 0 ? "reduce_scatter over " : "all_reduce over ") +
                 mesh.axes(s.partial);
    row.count = count[v];
    row.compute = s.compute + update[v] / count[v];
    row.comm = s.comm + comm[v] / count[v];
    plan.ops.push_back(row);
  }
}

//===----------------------------------------------------------------------===//
// Text
//===----------------------------------------------------------------------===//

namespace {

/// The pipeline of a plan the pipeline search chose.
void printPipeline(const Plan &p, llvm::raw_ostream &os) {
  const PipelineInfo &pi = p.pipeline;
  if (pi.stages <= 1) {
    os << llvm::formatv("pipeline: none (of {0} configurations priced); {1} "
                        "micro-batches accumulated\n",
                        p.pipelineConfigs, pi.microBatches);
    return;
  }
  os << llvm::formatv("pipeline: {0} stages, {1} micro-batches, schedule {2}, "
                      "bubble {3:f1}% (of {4} configurations priced)\n",
                      pi.stages, pi.microBatches, pi.schedule,
                      pi.bubble * 100, p.pipelineConfigs);
  for (int s = 0; s < pi.stages; ++s) {
    int end = s + 1 < pi.stages ? pi.firstLayer[s + 1] : p.layers;
    os << llvm::formatv("  stage {0}: layers {1}-{2}{3}, {4} per "
                        "micro-batch, {5} ({6} in flight)\n",
                        s, pi.firstLayer[s], end - 1,
                        s == 0                ? " and what precedes them"
                        : s + 1 == pi.stages ? " and what follows them"
                                              : "",
                        formatSeconds(pi.stageTime[s]),
                        formatMemory(pi.stageMemory[s]), pi.inFlight[s]);
    if (size_t(s) < pi.stageHeld.size()) {
      const MemoryBreakdown &h = pi.stageHeld[s];
      os << llvm::formatv("    holds parameters {0}, gradients {1}, "
                          "optimizer state {2}; activations {3} per "
                          "micro-batch",
                          formatMemory(h.parameters),
                          formatMemory(h.gradients),
                          formatMemory(h.optimizer),
                          formatMemory(pi.stageActivations[s]));
      if (size_t(s) < pi.transferBytes.size())
        os << "; sends " << formatMemory(pi.transferBytes[s])
           << (size_t(s) < pi.transferMessages.size()
                   ? llvm::formatv(" in {0} message{1}",
                                   pi.transferMessages[s],
                                   pi.transferMessages[s] == 1 ? "" : "s")
                         .str()
                   : std::string())
           << " per micro-batch";
      os << "\n";
    }
  }
  os << llvm::formatv("  stages from {0}; bubble with unit durations "
                      "(forward 1, backward 2): {1:f3}\n",
                      pi.stagesFromProgram ? "the program (loom.stage)"
                                           : "the planner's split",
                      pi.unitBubble);
  if (!pi.boundaries.empty())
    os << "  --stage-boundaries=" << pi.boundaries << "\n";
}

void printSummary(const Plan &p, llvm::raw_ostream &os) {
  if (p.preset.empty())
    os << "auto-sharding plan: mesh ";
  else
    os << "preset " << p.preset << " priced: mesh ";
  os << p.mesh << " on " << p.cluster << " (" << p.device << ")\n";
  for (size_t a = 0; a < p.axisNames.size(); ++a)
    os << "  axis " << p.axisNames[a] << "=" << p.axisSizes[a] << ": "
       << p.axisLinks[a] << "\n";
  if (p.pipelineConfigs > 0)
    os << llvm::formatv("predicted step time {0} (the schedule simulated with "
                        "the priced stages), rematerialized layers {1:f0}%\n",
                        formatSeconds(p.stepTime), p.remat * 100);
  else if (p.stepTime < (p.computeTime + p.commTime) * (1 - 1e-9))
    os << llvm::formatv("predicted step time {0} (compute {1}, communication "
                        "{2}, of which {3} overlapped with compute: started "
                        "collectives simulated), rematerialized layers "
                        "{4:f0}%\n",
                        formatSeconds(p.stepTime), formatSeconds(p.computeTime),
                        formatSeconds(p.commTime),
                        formatSeconds(p.computeTime + p.commTime - p.stepTime),
                        p.remat * 100);
  else
    os << llvm::formatv("predicted step time {0} (compute {1}, communication "
                        "{2}), rematerialized layers {3:f0}%\n",
                        formatSeconds(p.stepTime), formatSeconds(p.computeTime),
                        formatSeconds(p.commTime), p.remat * 100);
  if (p.pipelineConfigs == 0 && !p.overlap)
    os << (p.overlapPriced
               ? "collectives block: starting them early and waiting late "
                 "was priced slower on this device\n"
               : "collectives block: this device's started collectives are "
                 "not priced as overlapping (loom-run --calibrate measures "
                 "cpu-local's; a cluster file's \"overlap_slowdown\")\n");
  os << "memory per device " << formatMemory(p.memory.total()) << " of "
     << formatMemory(p.memoryLimit) << ": " << formatBreakdown(p.memory)
     << "\n";
  if (p.pipelineConfigs > 0)
    printPipeline(p, os);
  os << "graph: " << p.nodes << " nodes, " << p.distinctNodes << " distinct";
  if (p.layers >= 2)
    os << " (" << p.layers << " repeated layers of " << p.opsPerLayer
       << " ops)";
  if (!p.preset.empty()) {
    os << llvm::formatv("; the preset's plan, not searched (priced in {0:f2} "
                        "s)\n",
                        p.planningSeconds);
    return;
  }
  if (p.pipelineConfigs > 0) {
    os << llvm::formatv("; {0} ILPs, one per sub-mesh (largest {1} variables), "
                        "{2} of them stopped at the pipeline search's limit "
                        "per ILP (their best plan used); planned in {3:f2} s "
                        "(ILPs {4:f2} s)\n",
                        p.ilps, p.variables, p.ilpsStopped, p.planningSeconds,
                        p.ilpSeconds);
    return;
  }
  os << "; " << p.ilps << " ILPs (largest " << p.variables << " variables, "
     << p.constraints << " constraints), " << p.solverStatus;
  if (p.ilpsStopped && p.solverStatus != "optimal")
    os << " (stopped " << p.ilpsStopped << " of " << p.ilps
       << " ILPs before they proved optimality; raise --plan-time-limit)";
  else if (p.ilpsStopped)
    os << " (" << p.ilpsStopped << " of " << p.ilps
       << " ILPs stopped by the time limit; the bounds prove the plan "
          "optimal anyway)";
  os << llvm::formatv(", gap {0:f2}% over the whole search (bound {1}), "
                      "planned in {2:f2} s (ILPs {3:f2} s)",
                      p.gap * 100, formatSeconds(p.searchBound),
                      p.planningSeconds, p.ilpSeconds);
  if (!p.megatron.empty())
    os << llvm::formatv("; pricing the Megatron plans took {0:f2} s",
                        p.megatronSeconds);
  os << "\n";
  if (p.bruteForceTime >= 0)
    os << llvm::formatv("brute force over {0:f0} combinations: {1} "
                        "(ILP: {2}) {3}\n",
                        p.bruteForceCombinations,
                        formatSeconds(p.bruteForceTime),
                        formatSeconds(p.stepTime),
                        std::abs(p.bruteForceTime - p.stepTime) <=
                                1e-9 * p.stepTime
                            ? "equal"
                            : "DIFFERENT");
}

void printAlternatives(const Plan &p, llvm::raw_ostream &os) {
  if (!p.runnersUp.empty()) {
    os << "\nrunners-up\n";
    for (const Alternative &a : p.runnersUp)
      os << llvm::formatv("  mesh {0}, remat {1:f0}%: ", a.mesh, a.remat * 100)
         << (a.feasible
                 ? formatSeconds(a.seconds) + ", " + formatMemory(a.memory)
                 : std::string("does not fit"))
         << "\n";
  }
  if (!p.megatron.empty()) {
    os << (p.pipelineConfigs > 0
               ? "\nMegatron-style 3-D plans (tp <= 8 in a node, layers split "
                 "evenly, 1F1B, ZeRO-1; same cost model)\n"
               : "\nMegatron-style DP x TP plans (same cost model)\n");
    for (const Alternative &a : p.megatron)
      os << "  " << a.mesh << ": "
         << (a.feasible
                 ? llvm::formatv("{0}, {1}, remat {2:f0}%, {3:f3}x Loom's",
                                 formatSeconds(a.seconds),
                                 formatMemory(a.memory), a.remat * 100,
                                 a.seconds / p.stepTime)
                       .str()
                 : "does not fit (" + formatMemory(a.memory) + ")")
         << "\n";
  }
}

} // namespace

void mlir::loom::planner::printPlan(const Plan &p, llvm::raw_ostream &os) {
  printSummary(p, os);
  if (!p.pipelineDecision.empty())
    os << p.pipelineDecision << "\n";
  os << "\nops (forward; time per op for forward+backward)\n";
  for (const OpRow &r : p.ops) {
    os << "  " << r.op;
    if (r.count > 1)
      os << llvm::formatv(" (x{0:f0})", r.count);
    os << ": " << r.sharding;
    if (!r.note.empty())
      os << ", " << r.note;
    os << "  compute " << formatSeconds(r.compute) << ", comm "
       << formatSeconds(r.comm) << "\n";
  }
  os << "\ncollectives per step (bytes sent per device per call)\n";
  for (const Collective &c : p.collectives)
    os << llvm::formatv("  {0} over {1}: {2:f0} x {3}, {4} total\n", c.kind,
                        c.axes, c.count, humanBytes(c.bytes),
                        formatSeconds(c.seconds));
  printAlternatives(p, os);
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

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
                                       {"seconds", c.seconds},
                                       {"sites", llvm::json::Array(c.sites)}});
  auto alt = [](const Alternative &a) {
    return llvm::json::Object{{"mesh", a.mesh},
                              {"remat", a.remat},
                              {"feasible", a.feasible},
                              {"step_s", a.seconds},
                              {"memory_bytes", a.memory},
                              {"micro_batches", a.microBatches},
                              {"schedule", a.schedule}};
  };
  for (const Alternative &a : p.runnersUp)
    runners.push_back(alt(a));
  for (const Alternative &a : p.megatron)
    megatron.push_back(alt(a));
  llvm::json::Object memory{{"limit", p.memoryLimit},
                            {"total", p.memory.total()},
                            {"parameters", p.memory.parameters},
                            {"gradients", p.memory.gradients},
                            {"optimizer", p.memory.optimizer},
                            {"activations", p.memory.activations},
                            {"inputs", p.memory.inputs},
                            {"updates", p.memory.updates}};
  llvm::json::Object solver{{"status", p.solverStatus},
                            {"gap", p.gap},
                            {"bound_s", p.searchBound},
                            {"ilps", p.ilps},
                            {"ilps_stopped", p.ilpsStopped},
                            {"variables", p.variables},
                            {"constraints", p.constraints},
                            {"planning_s", p.planningSeconds},
                            {"ilp_s", p.ilpSeconds},
                            {"megatron_pricing_s", p.megatronSeconds}};
  llvm::json::Object graph{{"nodes", p.nodes},
                           {"distinct", p.distinctNodes},
                           {"layers", p.layers},
                           {"ops_per_layer", p.opsPerLayer}};
  llvm::json::Object o{{"preset", p.preset.empty() ? llvm::json::Value(nullptr)
                                                   : llvm::json::Value(p.preset)},
                       {"cluster", p.cluster},
                       {"device", p.device},
                       {"mesh", p.mesh},
                       {"axes", std::move(axes)},
                       {"step_s", p.stepTime},
                       {"compute_s", p.computeTime},
                       {"comm_s", p.commTime},
                       {"overlap", p.overlap},
                       {"remat", p.remat},
                       {"memory", std::move(memory)},
                       {"solver", std::move(solver)},
                       {"graph", std::move(graph)},
                       {"ops", std::move(ops)},
                       {"collectives", std::move(colls)},
                       {"runners_up", std::move(runners)},
                       {"megatron", std::move(megatron)}};
  if (p.bruteForceTime >= 0)
    o["brute_force_s"] = p.bruteForceTime;
  if (!p.pipelineDecision.empty())
    o["pipeline_decision"] = p.pipelineDecision;
  if (p.pipelineConfigs > 0) {
    const PipelineInfo &pi = p.pipeline;
    o["pipeline"] = llvm::json::Object{
        {"stages", pi.stages},
        {"micro_batches", pi.microBatches},
        {"schedule", pi.schedule},
        {"first_layer", llvm::json::Array(pi.firstLayer)},
        {"stage_s", llvm::json::Array(pi.stageTime)},
        {"stage_memory_bytes", llvm::json::Array(pi.stageMemory)},
        {"in_flight", llvm::json::Array(pi.inFlight)},
        {"bubble", pi.bubble},
        {"objective_s", pi.objective},
        {"boundaries", pi.boundaries},
        {"unit_bubble", pi.unitBubble},
        {"stages_from_program", pi.stagesFromProgram},
        {"configs_priced", p.pipelineConfigs}};
    llvm::json::Array held, acts(pi.stageActivations),
        sends(pi.transferBytes);
    for (const MemoryBreakdown &h : pi.stageHeld)
      held.push_back(llvm::json::Object{{"parameters", h.parameters},
                                        {"gradients", h.gradients},
                                        {"optimizer", h.optimizer},
                                        {"updates", h.updates}});
    llvm::json::Object &pj = *o.getObject("pipeline");
    pj["stage_held_bytes"] = std::move(held);
    pj["stage_activation_bytes"] = std::move(acts);
    pj["transfer_bytes"] = std::move(sends);
    llvm::json::Array messages;
    for (int m : pi.transferMessages)
      messages.push_back(m);
    pj["transfer_messages"] = std::move(messages);
  }
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(o))) << "\n";
}
