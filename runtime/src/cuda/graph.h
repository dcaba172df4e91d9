//===- graph.h - A step recorded once as a CUDA graph, then replayed -*- C++ -*-===//
//
// The step's host code enqueues some 300 kernels, GEMMs and copies per
// call, and the GPU idles while it does (1.4 ms of a 15.4 ms bf16 GPT step
// on an H200). StepGraphs records one call on the rank's stream (stream
// capture) and replays the recording with one cuGraphLaunch:
//
// * The first call runs directly: it loads every kernel's module and
//   creates cuBLAS's handle and workspace, which a capture must not do.
//   With --profile the first two do: the profile's kernel times are the
//   second's (the first loads), later steps show as the graph's time.
// * A graph belongs to the buffers the step ran on (their addresses): the
//   trainer swaps parameters and results after each step, so a step has
//   two. At most kMaxGraphs; a call on other buffers runs directly.
// * The captured step's temporaries (mgpuMemAlloc/mgpuMemFree) become the
//   graph's memory. Before the first capture the pool gives back what the
//   direct calls' temporaries left in it, so the GPU does not hold both.
// * A capture that meets a problem (a wait for the GPU, as a staged
//   collective does; any error) is abandoned: that call and every later
//   one run directly, and note() says why.
// * Only replayable steps (Device::runStep) are captured: the trainer
//   asks for one where the step talks to no other process.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CUDA_GRAPH_H
#define LOOM_RUNTIME_CUDA_GRAPH_H

#include "gpu.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace loom::cuda {

class StepGraphs {
public:
  explicit StepGraphs(Gpu &gpu);
  ~StepGraphs();
  StepGraphs(const StepGraphs &) = delete;
  StepGraphs &operator=(const StepGraphs &) = delete;

  /// One call of the step on `buffers`: directly, captured and replayed,
  /// or replayed. False with an error (a replay that failed to start).
  bool run(const std::vector<const void *> &buffers, bool replayable,
           const std::function<void()> &call, std::string &error);
  /// How the calls ran ("" before any did).
  std::string note() const;

  static constexpr size_t kMaxGraphs = 4;

private:
  /// Records `call`: `exec` is null when the capture was abandoned (`off`
  /// says why).
  bool capture(const std::function<void()> &call, CUgraphExec &exec,
               std::string &error);

  Gpu &gpu;
  int warmup;
  int64_t direct = 0, replays = 0;
  /// Why no graph is captured (empty: they are).
  std::string off;
  bool trimmed = false;
  std::map<std::vector<const void *>, CUgraphExec> graphs;
};

} // namespace loom::cuda

#endif // LOOM_RUNTIME_CUDA_GRAPH_H
