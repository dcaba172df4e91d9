//===- InterOp.cpp - Layers to pipeline stages, by dynamic programming ----===//

#include "loom/Planner/InterOp.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir::loom::planner;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kTol = 1e-9;

/// Prefix sums over the layers, so a stage's numbers cost O(1).
struct Sums {
  std::vector<double> time, step, weights, activations;

  explicit Sums(const std::vector<LayerCost> &layers) {
    size_t n = layers.size();
    time.assign(n + 1, 0);
    step = weights = activations = time;
    for (size_t k = 0; k < n; ++k) {
      time[k + 1] = time[k] + layers[k].fwd + layers[k].bwd;
      step[k + 1] = step[k] + layers[k].step;
      weights[k + 1] = weights[k] + layers[k].weights;
      activations[k + 1] = activations[k] + layers[k].activations;
    }
  }
};

/// Stage `s` holding layers [i, j).
struct Stage {
  const StageProblem &pb;
  const Sums &sums;

  double time(int i, int j, int s) const {
    double t = sums.time[j] - sums.time[i];
    if (s + 1 < pb.stages)
      t += 2 * pb.transfer(j - 1, s);
    return t;
  }
  double memory(int i, int j, int s) const {
    return sums.weights[j] - sums.weights[i] +
           pb.inFlight[s] * (sums.activations[j] - sums.activations[i] +
                             pb.received(i));
  }
  bool fits(int i, int j, int s) const {
    return pb.memoryLimit <= 0 ||
           memory(i, j, s) <= pb.memoryLimit * (1 + kTol);
  }
  /// What the stage adds to T's sum: its time, and the update for stage 0.
  double sumTerm(int i, int j, int s) const {
    return time(i, j, s) + (s == 0 ? sums.step[j] - sums.step[i] : 0);
  }
};

bool validProblem(const StageProblem &pb) {
  int n = pb.layers.size();
  return pb.stages >= 1 && pb.stages <= n && pb.microBatches >= 1 &&
         int(pb.inFlight.size()) == pb.stages;
}

/// The least sum of `sumTerm` over splits whose stage times stay under
/// `cap` and fit; fills `first`. kInf when there is none.
double minSum(const Stage &st, int n, int p, double cap,
              std::vector<int> &first) {
  std::vector<std::vector<double>> best(p + 1,
                                        std::vector<double>(n + 1, kInf));
  std::vector<std::vector<int>> from(p + 1, std::vector<int>(n + 1, -1));
  best[0][0] = 0;
  for (int s = 0; s < p; ++s)
    // Stage s ends at j; the stages after it need a layer each.
    for (int j = s + 1; j <= n - (p - 1 - s); ++j)
      for (int i = s; i < j; ++i) {
        if (best[s][i] == kInf)
          continue;
        if (st.time(i, j, s) > cap * (1 + kTol) || !st.fits(i, j, s))
          continue;
        double v = best[s][i] + st.sumTerm(i, j, s);
        if (v < best[s + 1][j]) {
          best[s + 1][j] = v;
          from[s + 1][j] = i;
        }
      }
  if (best[p][n] == kInf)
    return kInf;
  first.assign(p, 0);
  for (int s = p, j = n; s > 0; --s) {
    first[s - 1] = from[s][j];
    j = from[s][j];
  }
  return best[p][n];
}

} // namespace

StageSplit mlir::loom::planner::priceSplit(const StageProblem &pb,
                                           std::vector<int> first) {
  StageSplit out;
  if (!validProblem(pb) || int(first.size()) != pb.stages || first[0] != 0)
    return out;
  Sums sums(pb.layers);
  Stage st{pb, sums};
  int n = pb.layers.size(), p = pb.stages;
  double sum = 0, slowest = 0;
  bool fits = true;
  for (int s = 0; s < p; ++s) {
    int i = first[s], j = s + 1 < p ? first[s + 1] : n;
    if (j <= i)
      return out;
    out.stageTime.push_back(st.time(i, j, s));
    out.memory.push_back(st.memory(i, j, s));
    sum += st.sumTerm(i, j, s);
    slowest = std::max(slowest, st.time(i, j, s));
    fits &= st.fits(i, j, s);
  }
  out.first = std::move(first);
  out.objective = sum + (pb.microBatches - 1) * slowest;
  out.feasible = fits;
  return out;
}

StageSplit mlir::loom::planner::splitStages(const StageProblem &pb) {
  StageSplit none;
  if (!validProblem(pb))
    return none;
  Sums sums(pb.layers);
  Stage st{pb, sums};
  int n = pb.layers.size(), p = pb.stages, m = pb.microBatches;
  // Without a cap: whether any split fits, and a first plan whose price
  // bounds the caps worth trying.
  std::vector<int> first0;
  if (minSum(st, n, p, kInf, first0) == kInf)
    return none;
  StageSplit start = priceSplit(pb, first0);
  if (m == 1)
    return start;
  // Every stage time a split can have is a candidate cap on the slowest
  // stage: those between the mean (the slowest is at least that) and the
  // most that can still beat the start (sum_i t_i is at least the layers'
  // own time).
  double work = sums.time[n];
  double low = work / p * (1 - kTol),
         high = (start.objective - work) / (m - 1) * (1 + kTol);
  std::vector<double> caps;
  {
    for (int s = 0; s < p; ++s)
      for (int i = s; i < n; ++i)
        for (int j = i + 1; j <= n; ++j) {
          double t = st.time(i, j, s);
          if (t >= low && t <= high)
            caps.push_back(t);
        }
    std::sort(caps.begin(), caps.end());
    caps.erase(std::unique(caps.begin(), caps.end(),
                           [](double a, double b) {
                             return b <= a * (1 + kTol);
                           }),
               caps.end());
  }
  double bestT = start.objective;
  std::vector<int> bestFirst = first0;
  for (double cap : caps) {
    if (work + (m - 1) * cap >= bestT * (1 + kTol))
      break;
    std::vector<int> first;
    double sum = minSum(st, n, p, cap, first);
    if (sum == kInf)
      continue;
    double t = sum + (m - 1) * cap;
    if (t < bestT) {
      bestT = t;
      bestFirst = std::move(first);
    }
  }
  // Priced again: the split's own slowest stage may be under the cap.
  return priceSplit(pb, bestFirst);
}

StageSplit mlir::loom::planner::bruteForceSplit(const StageProblem &pb) {
  StageSplit best;
  if (!validProblem(pb))
    return best;
  int n = pb.layers.size(), p = pb.stages;
  // The first layers of stages 1..p-1: p - 1 increasing cuts in [1, n).
  std::vector<int> first(p);
  for (int s = 0; s < p; ++s)
    first[s] = s;
  while (true) {
    StageSplit s = priceSplit(pb, first);
    if (s.feasible && (!best.feasible || s.objective < best.objective))
      best = s;
    // Next combination.
    int k = p - 1;
    while (k >= 1 && first[k] == n - (p - k))
      --k;
    if (k < 1)
      break;
    ++first[k];
    for (int r = k + 1; r < p; ++r)
      first[r] = first[r - 1] + 1;
  }
  return best;
}
