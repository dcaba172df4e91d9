//===- SolverTest.cpp - The sharding ILP on hand-made tables ---------------===//
//
// The solver sees numbers only (Solver.h), so it is checked here against
// exhaustive search on tables written by hand and drawn at random: with and
// without a memory limit, with pairs that fold (separable, one-choice) and
// pairs that do not, infeasible limits, memory minimization and a start.
//
//===----------------------------------------------------------------------===//

#include "loom/Planner/Solver.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <set>

using namespace mlir::loom::planner;

namespace {

/// Shared costs of a choice: once per target some use needs.
double sharedCost(const SolverRequest &r, const std::vector<int> &c) {
  double sum = 0;
  for (const SolverRequest::Shared &sh : r.shared) {
    std::set<int> need;
    for (const SolverRequest::Shared::Use &use : sh.uses) {
      int t = use.target[c[use.v]];
      if (t >= 0)
        need.insert(t);
    }
    for (int t : need)
      sum += sh.cost[c[sh.u] * sh.targets + t];
  }
  return sum;
}

/// Appends `n` variables of 1 to `maxChoices` choices with random costs
/// (0-10) and memory (0-5).
void addRandomVariables(SolverRequest &r, std::mt19937 &rng, int n,
                        int maxChoices) {
  std::uniform_real_distribution<double> cost(0.0, 10.0), mem(0.0, 5.0);
  std::uniform_int_distribution<int> choices(1, maxChoices);
  for (int v = 0; v < n; ++v) {
    int k = choices(rng);
    r.cost.emplace_back();
    r.memory.emplace_back();
    for (int i = 0; i < k; ++i) {
      r.cost.back().push_back(cost(rng));
      r.memory.back().push_back(mem(rng));
    }
  }
}

/// The best choice by enumeration: (objective, memory) of the optimum.
std::pair<double, std::vector<int>> bruteForce(const SolverRequest &r) {
  size_t n = r.cost.size();
  std::vector<int> idx(n, 0), best;
  double bestObj = INFINITY;
  while (true) {
    double cost = r.constantCost, mem = r.constantMemory;
    for (size_t v = 0; v < n; ++v) {
      cost += r.cost[v][idx[v]];
      mem += r.memory[v][idx[v]];
    }
    for (const SolverRequest::Pair &p : r.pairs) {
      size_t k = idx[p.u] * r.cost[p.v].size() + idx[p.v];
      cost += p.cost[k];
      mem += p.memory[k];
    }
    cost += sharedCost(r, idx);
    double obj = r.minimizeMemory ? mem : cost;
    if ((r.minimizeMemory || mem <= r.memoryLimit) && obj < bestObj) {
      bestObj = obj;
      best = idx;
    }
    size_t k = 0;
    while (k < n && ++idx[k] == int(r.cost[k].size()))
      idx[k++] = 0;
    if (k == n)
      break;
  }
  return {bestObj, best};
}

double objectiveOf(const SolverRequest &r, const std::vector<int> &choice,
                   double *memory = nullptr) {
  double cost = r.constantCost, mem = r.constantMemory;
  for (size_t v = 0; v < r.cost.size(); ++v) {
    cost += r.cost[v][choice[v]];
    mem += r.memory[v][choice[v]];
  }
  for (const SolverRequest::Pair &p : r.pairs) {
    size_t k = choice[p.u] * r.cost[p.v].size() + choice[p.v];
    cost += p.cost[k];
    mem += p.memory[k];
  }
  cost += sharedCost(r, choice);
  if (memory)
    *memory = mem;
  return r.minimizeMemory ? mem : cost;
}

SolverRequest twoNodes() {
  // u: fast but big, or slow and small; v: anything; resharding between
  // different choices costs 5.
  SolverRequest r;
  r.cost = {{1, 3}, {2, 2}};
  r.memory = {{10, 2}, {1, 1}};
  r.pairs.push_back({0, 1, {0, 5, 5, 0}, {0, 0, 0, 0}});
  return r;
}

TEST(Solver, PicksTheCheapestCombination) {
  SolverRequest r = twoNodes();
  SolverResult s = solve(r);
  ASSERT_TRUE(s.feasible);
  EXPECT_TRUE(s.optimal);
  EXPECT_EQ(s.choice, (std::vector<int>{0, 0}));
  EXPECT_NEAR(s.objective, 3, 1e-9);
}

TEST(Solver, MemoryLimitForcesTheSmallerChoice) {
  SolverRequest r = twoNodes();
  r.memoryLimit = 5;
  SolverResult s = solve(r);
  ASSERT_TRUE(s.feasible);
  EXPECT_EQ(s.choice[0], 1);
  EXPECT_NEAR(s.objective, 3 + 2, 1e-9); // u's 3, v's 2, no resharding
  double mem = 0;
  objectiveOf(r, s.choice, &mem);
  EXPECT_LE(mem, 5);
}

TEST(Solver, ImpossibleLimitIsInfeasible) {
  SolverRequest r = twoNodes();
  r.memoryLimit = 1.5;
  EXPECT_FALSE(solve(r).feasible);
}

TEST(Solver, MinimizesMemoryWhenAsked) {
  SolverRequest r = twoNodes();
  r.minimizeMemory = true;
  SolverResult s = solve(r);
  ASSERT_TRUE(s.feasible);
  EXPECT_EQ(s.choice[0], 1);
  EXPECT_NEAR(s.objective, 3, 1e-9);
}

TEST(Solver, OneChoiceEverywhereIsConstant) {
  SolverRequest r;
  r.cost = {{4}, {6}};
  r.memory = {{1}, {2}};
  r.pairs.push_back({0, 1, {1}, {3}});
  r.constantCost = 0.5;
  SolverResult s = solve(r);
  ASSERT_TRUE(s.feasible);
  EXPECT_NEAR(s.objective, 11.5, 1e-9);
  EXPECT_EQ(s.variables, 0);
  r.memoryLimit = 5;
  EXPECT_FALSE(solve(r).feasible); // 6 bytes
}

// Random tables: the solver's optimum is the enumeration's, with and
// without a memory limit, with and without a start.
TEST(Solver, MatchesExhaustiveSearchOnRandomTables) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> cost(0.0, 10.0), mem(0.0, 5.0);
  const int maxChoices = 4;
  int checked = 0;
  for (int trial = 0; trial < 60; ++trial) {
    SolverRequest r;
    int n = 2 + trial % 5;
    addRandomVariables(r, rng, n, maxChoices);
    for (int v = 1; v < n; ++v) {
      int u = rng() % v;
      size_t cells = r.cost[u].size() * r.cost[v].size();
      SolverRequest::Pair p{u, v, {}, {}};
      bool separable = trial % 3 == 0;
      for (size_t c = 0; c < cells; ++c) {
        size_t i = c / r.cost[v].size(), j = c % r.cost[v].size();
        p.cost.push_back(separable ? double(i) + 2.0 * j : cost(rng));
        p.memory.push_back(separable ? 0.5 * i : mem(rng) * (c % 2));
      }
      r.pairs.push_back(p);
    }
    if (trial % 2)
      r.memoryLimit = 2.0 * n;
    if (trial % 4 == 1)
      r.start.assign(n, 0);
    auto [expected, expectedChoice] = bruteForce(r);
    SolverResult s = solve(r);
    ASSERT_EQ(s.feasible, std::isfinite(expected)) << "trial " << trial;
    if (!s.feasible)
      continue;
    ++checked;
    EXPECT_TRUE(s.optimal) << "trial " << trial;
    double mem = 0;
    double got = objectiveOf(r, s.choice, &mem);
    EXPECT_NEAR(got, expected, 1e-3 * std::max(1.0, expected))
        << "trial " << trial;
    EXPECT_NEAR(s.objective, got, 1e-3 * std::max(1.0, got));
    EXPECT_LE(mem, r.memoryLimit * (1 + 1e-9)) << "trial " << trial;
  }
  EXPECT_GT(checked, 30); // most trials are feasible: they test something
}

TEST(Solver, SharedCostIsPaidOncePerTarget) {
  // u: layout 0 or 1. Two users v, w: each reads u as layout 0 or 1 (their
  // choice); turning u from 0 into 1 (or back) costs 4, once however many
  // users need it. v and w prefer 1 (cost 0 vs 3), u prefers 0 (1 vs 10):
  // u=0, v=w=1 pays 1 + 4 = 5, where pricing per user would pay 1 + 8 and
  // pick v=w=0 (7).
  SolverRequest r;
  r.cost = {{1, 10}, {3, 0}, {3, 0}};
  r.memory = {{0, 0}, {0, 0}, {0, 0}};
  SolverRequest::Shared sh;
  sh.u = 0;
  sh.targets = 2;
  sh.cost = {0, 4, 4, 0};
  sh.uses = {{1, {0, 1}}, {2, {0, 1}}};
  r.shared.push_back(sh);
  SolverResult s = solve(r);
  ASSERT_TRUE(s.feasible);
  EXPECT_TRUE(s.optimal);
  EXPECT_EQ(s.choice, (std::vector<int>{0, 1, 1}));
  EXPECT_NEAR(s.objective, 5.0, 1e-6);
  EXPECT_LE(s.bound, s.objective + 1e-9);
}

TEST(Solver, SharedCostsMatchExhaustiveSearch) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> cost(0.0, 10.0);
  const int maxChoices = 3;
  for (int trial = 0; trial < 40; ++trial) {
    SolverRequest r;
    int n = 3 + trial % 3;
    addRandomVariables(r, rng, n, maxChoices);
    // Variable 0 feeds all others; a use may be variable 0 itself.
    SolverRequest::Shared sh;
    sh.u = 0;
    sh.targets = 3;
    for (size_t i = 0; i < r.cost[0].size() * 3; ++i)
      sh.cost.push_back(cost(rng));
    for (int v = trial % 4 == 0 ? 0 : 1; v < n; ++v) {
      SolverRequest::Shared::Use use{v, {}};
      for (size_t j = 0; j < r.cost[v].size(); ++j)
        use.target.push_back(int(rng() % 4) - 1);
      sh.uses.push_back(use);
    }
    r.shared.push_back(sh);
    if (trial % 2)
      r.memoryLimit = 2.5 * n;
    auto [expected, expectedChoice] = bruteForce(r);
    SolverResult s = solve(r);
    ASSERT_EQ(s.feasible, std::isfinite(expected)) << "trial " << trial;
    if (!s.feasible)
      continue;
    EXPECT_TRUE(s.optimal) << "trial " << trial;
    double got = objectiveOf(r, s.choice);
    EXPECT_NEAR(got, expected, 1e-3 * std::max(1.0, expected))
        << "trial " << trial;
    EXPECT_NEAR(s.objective, got, 1e-3 * std::max(1.0, got));
    EXPECT_LE(s.bound, expected * (1 + 1e-4) + 1e-9) << "trial " << trial;
  }
}

} // namespace

// An infinite or NaN price (a resharding that cannot be done, a cluster
// whose numbers overflow) forbids its choice; it reached CBC as an
// objective coefficient, and Clp aborted (issue 45 item 4).
TEST(Solver, InfinitePricesForbidTheirChoice) {
  const double inf = std::numeric_limits<double>::infinity();
  SolverRequest r;
  r.cost = {{1, inf, 3}, {2, 1, 4}, {1, 2, std::nan("")}};
  r.memory = {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}};
  // A triangle of pairs, so nothing folds away and CBC solves it.
  r.pairs.push_back({0, 1, {0, 2, 1, 2, 0, 2, inf, 2, 0}, std::vector<double>(9, 0)});
  r.pairs.push_back({1, 2, {0, 1, 2, 1, 0, 1, 2, 1, 0}, std::vector<double>(9, 0)});
  r.pairs.push_back({0, 2, {0, 3, 1, 3, 0, 3, 1, 3, 0}, std::vector<double>(9, 0)});
  SolverResult s = solve(r);
  ASSERT_TRUE(s.feasible);
  EXPECT_GT(s.variables, 0);
  EXPECT_NE(s.choice[0], 1);
  EXPECT_NE(s.choice[2], 2);
  EXPECT_TRUE(std::isfinite(s.objective));
  auto [best, choice] = bruteForce(r);
  EXPECT_NEAR(s.objective, best, 1e-9);
}
