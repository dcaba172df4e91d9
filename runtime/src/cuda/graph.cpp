//===- graph.cpp - A step recorded once as a CUDA graph, then replayed ----===//

#include "graph.h"

using namespace loom::cuda;

StepGraphs::StepGraphs(Gpu &gpu)
    : gpu(gpu), warmup(gpu.options().profile ? 2 : 1) {
  if (!gpu.options().graphs)
    off = "LOOM_CUDA_GRAPHS=0";
  else if (gpu.options().syncEveryLaunch)
    off = "LOOM_GPU_SYNC=1 checks after every launch";
}

StepGraphs::~StepGraphs() {
  for (auto &[buffers, exec] : graphs)
    gpu.driver().cuGraphExecDestroy(exec);
}

bool StepGraphs::run(const std::vector<const void *> &buffers,
                     bool replayable, const std::function<void()> &call,
                     std::string &error) {
  auto directly = [&] {
    ++direct;
    call();
    return true;
  };
  if (!off.empty() || !replayable || direct < warmup)
    return directly();
  auto it = graphs.find(buffers);
  if (it == graphs.end()) {
    if (graphs.size() >= kMaxGraphs)
      return directly();
    CUgraphExec exec = nullptr;
    if (!capture(call, exec, error))
      return false;
    if (!exec)
      return directly();
    it = graphs.emplace(buffers, exec).first;
  }
  ++replays;
  gpu.beginWork("the step's CUDA graph");
  if (!gpu.check(gpu.driver().cuGraphLaunch(it->second, gpu.stream()),
                 "replaying the step's CUDA graph", error))
    return false;
  gpu.endWork();
  return true;
}

bool StepGraphs::capture(const std::function<void()> &call,
                         CUgraphExec &exec, std::string &error) {
  const Driver &d = gpu.driver();
  if (!trimmed) {
    // The direct calls' temporaries are free in the pool, which keeps
    // them (gpu.h): give them back before the graphs take their own.
    if (!gpu.trimPool(error))
      return false;
    trimmed = true;
  }
  // Relaxed: the host code may call what a stricter mode refuses (it
  // allocates nothing outside the stream; module loads happened before).
  if (!gpu.check(d.cuStreamBeginCapture(gpu.stream(),
                                        CU_STREAM_CAPTURE_MODE_RELAXED),
                 "starting to capture the step", error))
    return false;
  gpu.setCapturing(true);
  call();
  gpu.setCapturing(false);
  CUgraph graph = nullptr;
  CUresult r = d.cuStreamEndCapture(gpu.stream(), &graph);
  std::string problem = gpu.captureProblem();
  if (problem.empty() && r != CUDA_SUCCESS)
    problem = "ending the capture: " + errorText(r);
  if (problem.empty()) {
    // Auto-free: a temporary the step does not free (none should) is
    // freed before the next replay instead of failing it.
    r = d.cuGraphInstantiateWithFlags(
        &exec, graph, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH);
    if (r != CUDA_SUCCESS) {
      exec = nullptr;
      problem = "instantiating the graph: " + errorText(r);
    }
  }
  if (graph)
    d.cuGraphDestroy(graph);
  if (!problem.empty())
    off = problem;
  return true;
}

std::string StepGraphs::note() const {
  if (!direct && !replays)
    return "";
  std::string calls = std::to_string(direct) + " step" +
                      (direct == 1 ? "" : "s") + " run directly";
  if (replays)
    return "steps replayed as CUDA graphs: " + std::to_string(replays) +
           " replays of " + std::to_string(graphs.size()) + " graph" +
           (graphs.size() == 1 ? "" : "s") + ", " + calls;
  if (!off.empty())
    return "no CUDA graph (" + off + "): " + calls;
  return calls;
}
