//===- Solver.h - The sharding ILP, on numbers only -------------*- C++ -*-===//
//
// Picks one choice per variable minimizing the total cost (node costs plus
// pair costs of the choices of two variables) under a memory limit, as
// Alpa's and XLA's auto-sharding do (XLA's AutoShardingSolverRequest): the
// request holds numbers only, no IR, so the solver is testable on tables
// written by hand (test/unit/PlannerTest.cpp). CBC solves it.
//
// Formulation: a binary x[v][i] per variable and choice with sum_i x = 1;
// for each pair (u, v) a continuous y[u][v][i][j] >= 0 with
// sum_j y = x[u][i] and sum_i y = x[v][j]; memory is a linear row.
// Before that, pairs whose matrix is separable (a_i + b_j), and pairs with
// a variable of one choice, fold into node costs. A shared cost (one value
// resharded once for all users that need the same layout) is a continuous
// w[i][t] <= x[u][i] with sum_i w[i][t] >= sum_{j: target j = t} x[v][j]
// per use, priced f(i, t) w[i][t].
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PLANNER_SOLVER_H
#define LOOM_PLANNER_SOLVER_H

#include <limits>
#include <vector>

namespace mlir::loom::planner {

struct SolverRequest {
  /// Per variable and choice: its cost (seconds) and memory (bytes).
  std::vector<std::vector<double>> cost, memory;
  /// Costs of pairs of choices, row-major |choices of u| x |choices of v|.
  struct Pair {
    int u, v;
    std::vector<double> cost, memory;
  };
  std::vector<Pair> pairs;
  /// A cost paid once per distinct target that the uses of one value need
  /// (a value resharded alike for several users is resharded once): with
  /// `u` at choice i, every target t some use needs costs cost[i * targets
  /// + t]. A use of variable `v` needs target[j] at its choice j (-1:
  /// none); a use with v == u reads target[i] at u's own choice.
  struct Shared {
    int u = 0, targets = 0;
    std::vector<double> cost;
    struct Use {
      int v;
      std::vector<int> target;
    };
    std::vector<Use> uses;
  };
  std::vector<Shared> shared;
  /// Paid whatever is chosen.
  double constantCost = 0, constantMemory = 0;
  double memoryLimit = std::numeric_limits<double>::infinity();
  /// Seconds CBC may search; the best solution found is returned.
  double timeLimit = 20;
  /// Minimize memory instead of cost (and ignore the limit).
  bool minimizeMemory = false;
  /// A choice per variable to start from (empty: none).
  std::vector<int> start;
};

struct SolverResult {
  bool feasible = false;
  /// CBC proved that no choice meets the memory limit (bound is infinite).
  bool provenInfeasible = false;
  /// Proven optimal (within 0.01%); otherwise the time limit stopped it.
  bool optimal = false;
  /// Objective of the returned choice and the best lower bound proven:
  /// CBC's, or, when it stopped before proving more, every variable's and
  /// pair's cheapest entry summed (the constraints relaxed), whichever is
  /// higher. Valid whether or not a choice was found.
  double objective = std::numeric_limits<double>::infinity();
  double bound = 0;
  std::vector<int> choice;
  int variables = 0, constraints = 0;
};

SolverResult solve(const SolverRequest &request);

} // namespace mlir::loom::planner

#endif // LOOM_PLANNER_SOLVER_H
