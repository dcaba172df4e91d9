//===- Solver.cpp - The sharding ILP, on numbers only ---------------------===//

#include "loom/Planner/Solver.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/ScopeExit.h"

#include <coin/Cbc_C_Interface.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

using namespace mlir::loom::planner;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// CBC's tolerances are absolute (1e-7 and so on): costs and memory are
/// scaled so that the largest becomes these whatever their unit (tiny test
/// models' bytes, or seconds and gigabytes of GPT-3; these targets solve
/// the GPT-3 plans as fast as any tried).
constexpr double kTimeTarget = 1e7, kMemoryTarget = 1e3;
struct Scales {
  double time = 1, memory = 1;
};

/// The request after folding: node costs, the pairs that stay, constants.
struct Folded {
  std::vector<std::vector<double>> cost, memory;
  std::map<std::pair<int, int>, std::pair<std::vector<double>,
                                          std::vector<double>>> pairs;
  double constantCost = 0, constantMemory = 0;
};

/// Scales from the largest magnitudes in `f` (and the memory limit).
Scales scalesOf(const Folded &f, double memoryLimit,
                const std::vector<SolverRequest::Shared> &shared) {
  double time = 0, memory = 0;
  auto see = [](double &m, double x) {
    if (std::isfinite(x))
      m = std::max(m, std::abs(x));
  };
  for (size_t v = 0; v < f.cost.size(); ++v)
    for (size_t i = 0; i < f.cost[v].size(); ++i) {
      see(time, f.cost[v][i]);
      see(memory, f.memory[v][i]);
    }
  for (auto &[key, blk] : f.pairs)
    for (size_t k = 0; k < blk.first.size(); ++k) {
      see(time, blk.first[k]);
      see(memory, blk.second[k]);
    }
  for (const SolverRequest::Shared &sh : shared)
    for (double x : sh.cost)
      see(time, x);
  see(memory, memoryLimit);
  Scales s;
  s.time = time > 0 ? kTimeTarget / time : 1;
  s.memory = memory > 0 ? kMemoryTarget / memory : 1;
  return s;
}

/// Merges pairs of the same variables; pairs with a one-choice side fold
/// into the other side's node costs (or the constants).
Folded foldPairs(const SolverRequest &r) {
  Folded f;
  f.cost = r.cost;
  f.memory = r.memory;
  f.constantCost = r.constantCost;
  f.constantMemory = r.constantMemory;
  for (const SolverRequest::Pair &p : r.pairs) {
    size_t nu = r.cost[p.u].size(), nv = r.cost[p.v].size();
    auto at = [&](const std::vector<double> &x, size_t i, size_t j) {
      return x.empty() ? 0.0 : x[i * nv + j];
    };
    if (nu == 1 || nv == 1) {
      for (size_t i = 0; i < nu; ++i)
        for (size_t j = 0; j < nv; ++j) {
          double t = at(p.cost, i, j), m = at(p.memory, i, j);
          if (nu == 1 && nv == 1) {
            f.constantCost += t;
            f.constantMemory += m;
          } else if (nu == 1) {
            f.cost[p.v][j] += t;
            f.memory[p.v][j] += m;
          } else {
            f.cost[p.u][i] += t;
            f.memory[p.u][i] += m;
          }
        }
      continue;
    }
    auto &blk = f.pairs[{p.u, p.v}];
    if (blk.first.empty()) {
      blk.first.assign(nu * nv, 0);
      blk.second.assign(nu * nv, 0);
    }
    for (size_t k = 0; k < nu * nv; ++k) {
      blk.first[k] += p.cost.empty() ? 0 : p.cost[k];
      blk.second[k] += p.memory.empty() ? 0 : p.memory[k];
    }
  }
  return f;
}

/// Pairs whose matrices are a_i + b_j need no pair variables: they fold
/// into the two nodes.
void foldSeparable(Folded &f) {
  for (auto it = f.pairs.begin(); it != f.pairs.end();) {
    auto [u, v] = it->first;
    size_t nu = f.cost[u].size(), nv = f.cost[v].size();
    auto &[bt, bm] = it->second;
    auto at = [&](const std::vector<double> &x, size_t a, size_t b) {
      return x[a * nv + b];
    };
    bool separable = true;
    for (size_t i = 0; i < nu && separable; ++i)
      for (size_t j = 0; j < nv && separable; ++j) {
        double dt = at(bt, i, j) - at(bt, i, 0) - at(bt, 0, j) + at(bt, 0, 0);
        double dm = at(bm, i, j) - at(bm, i, 0) - at(bm, 0, j) + at(bm, 0, 0);
        double scale = std::abs(at(bt, i, j)) + 1e-12;
        double mscale = std::abs(at(bm, i, j)) + 1;
        separable =
            std::abs(dt) <= 1e-9 * scale && std::abs(dm) <= 1e-9 * mscale;
      }
    if (!separable) {
      ++it;
      continue;
    }
    for (size_t i = 0; i < nu; ++i) {
      f.cost[u][i] += bt[i * nv];
      f.memory[u][i] += bm[i * nv];
    }
    // (b_0 is in every a_i already.)
    for (size_t j = 1; j < nv; ++j) {
      f.cost[v][j] += bt[j] - bt[0];
      f.memory[v][j] += bm[j] - bm[0];
    }
    it = f.pairs.erase(it);
  }
}

/// The linear program in CBC's column format.
struct Columns {
  double timeScale = 1, memScale = 1;
  std::vector<int> firstCol; // per variable, -1 when it has one choice
  std::vector<double> objective, upper;
  std::vector<char> integer;
  std::vector<std::vector<std::pair<int, double>>> entries;
  std::vector<double> rowLb, rowUb;

  /// A column; one whose cost is not a number or infinite (a resharding
  /// that cannot be done, a price beyond any real step) is forbidden: its
  /// upper bound 0, not an infinite coefficient, which the LP solver
  /// cannot take (Clp asserts |c| < 1e25).
  int add(double obj, bool isInteger) {
    bool usable = std::isfinite(obj) && std::abs(obj) < 1e20;
    objective.push_back(usable ? obj : 0.0);
    upper.push_back(usable ? 1.0 : 0.0);
    integer.push_back(isInteger);
    entries.emplace_back();
    return int(entries.size()) - 1;
  }
  int addRow(double lb, double ub) {
    rowLb.push_back(lb);
    rowUb.push_back(ub);
    return int(rowLb.size()) - 1;
  }
};

Columns buildColumns(Folded &f, const SolverRequest &r) {
  Columns c;
  Scales scales = scalesOf(f, r.memoryLimit, r.shared);
  c.timeScale = scales.time;
  c.memScale = scales.memory;
  bool memory = r.minimizeMemory;
  c.firstCol.assign(f.cost.size(), -1);
  for (size_t v = 0; v < f.cost.size(); ++v) {
    size_t n = f.cost[v].size();
    if (n == 1) {
      f.constantCost += f.cost[v][0];
      f.constantMemory += f.memory[v][0];
      continue;
    }
    int row = c.addRow(1.0, 1.0);
    c.firstCol[v] = c.entries.size();
    for (size_t i = 0; i < n; ++i) {
      int col = c.add(memory ? f.memory[v][i] * c.memScale
                             : f.cost[v][i] * c.timeScale,
                      true);
      c.entries[col].push_back({row, 1.0});
    }
  }
  bool memoryRow = !memory && std::isfinite(r.memoryLimit);
  std::vector<std::pair<int, double>> pairMemory; // (column, bytes)
  for (auto &[key, blk] : f.pairs) {
    auto [u, v] = key;
    size_t nu = f.cost[u].size(), nv = f.cost[v].size();
    int rowU = int(c.rowLb.size());
    for (size_t i = 0; i < nu + nv; ++i)
      c.addRow(0.0, 0.0);
    int rowV = rowU + int(nu);
    for (size_t i = 0; i < nu; ++i)
      c.entries[c.firstCol[u] + i].push_back({rowU + int(i), -1.0});
    for (size_t j = 0; j < nv; ++j)
      c.entries[c.firstCol[v] + j].push_back({rowV + int(j), -1.0});
    for (size_t i = 0; i < nu; ++i)
      for (size_t j = 0; j < nv; ++j) {
        double t = blk.first[i * nv + j], m = blk.second[i * nv + j];
        int col = c.add(memory ? m * c.memScale : t * c.timeScale, false);
        c.entries[col].push_back({rowU + int(i), 1.0});
        c.entries[col].push_back({rowV + int(j), 1.0});
        if (m != 0 && memoryRow)
          pairMemory.push_back({col, m});
      }
  }
  // Shared costs: w[i][t] <= x[u][i], and for each use and target t,
  // sum_i w[i][t] >= sum_{j: target j = t} x[v][j]. With u at choice i*,
  // w[i*][t] is 1 exactly when some use needs t. Tighter than one
  // w >= x[u][i] + x[v][j] - 1 row per use, and fewer rows. Variables of
  // one choice are the constant 1.
  if (!memory)
    for (const SolverRequest::Shared &sh : r.shared) {
      size_t nu = f.cost[sh.u].size();
      // Nothing to choose: a constant (CBC returns no solution for a
      // model without integer columns).
      if (c.firstCol[sh.u] < 0 &&
          llvm::all_of(sh.uses, [&](const SolverRequest::Shared::Use &use) {
            return c.firstCol[use.v] < 0;
          })) {
        std::vector<bool> need(sh.targets, false);
        for (const SolverRequest::Shared::Use &use : sh.uses)
          if (!use.target.empty() && use.target[0] >= 0)
            need[use.target[0]] = true;
        for (int t = 0; t < sh.targets; ++t)
          if (need[t])
            f.constantCost += sh.cost[t];
        continue;
      }
      std::vector<int> w(nu * sh.targets, -1);
      for (int t = 0; t < sh.targets; ++t) {
        bool needed = false;
        for (const SolverRequest::Shared::Use &use : sh.uses)
          needed |= llvm::is_contained(use.target, t);
        if (!needed)
          continue;
        for (size_t i = 0; i < nu; ++i) {
          int col = c.add(sh.cost[i * sh.targets + t] * c.timeScale, false);
          w[i * sh.targets + t] = col;
          if (c.firstCol[sh.u] >= 0) {
            int row = c.addRow(-std::numeric_limits<double>::max(), 0.0);
            c.entries[col].push_back({row, 1.0});
            c.entries[c.firstCol[sh.u] + i].push_back({row, -1.0});
          }
        }
        for (const SolverRequest::Shared::Use &use : sh.uses) {
          double rhs = 0;
          std::vector<std::pair<int, double>> terms;
          for (size_t j = 0; j < use.target.size(); ++j)
            if (use.target[j] == t) {
              if (c.firstCol[use.v] >= 0)
                terms.push_back({c.firstCol[use.v] + int(j), -1.0});
              else
                rhs += 1;
            }
          if (terms.empty() && rhs == 0)
            continue;
          int row = c.addRow(rhs, std::numeric_limits<double>::max());
          for (size_t i = 0; i < nu; ++i)
            c.entries[w[i * sh.targets + t]].push_back({row, 1.0});
          for (auto [col, val] : terms)
            c.entries[col].push_back({row, val});
        }
      }
    }
  if (memoryRow) {
    int row = c.addRow(-std::numeric_limits<double>::max(),
                       (r.memoryLimit - f.constantMemory) * c.memScale);
    for (size_t v = 0; v < f.cost.size(); ++v)
      if (c.firstCol[v] >= 0)
        for (size_t i = 0; i < f.memory[v].size(); ++i)
          if (f.memory[v][i] != 0)
            c.entries[c.firstCol[v] + i].push_back(
                {row, f.memory[v][i] * c.memScale});
    for (auto [col, m] : pairMemory)
      c.entries[col].push_back({row, m * c.memScale});
  }
  return c;
}

/// Solves with CBC and reads the choice of every variable.
void runCbc(const Columns &c, const Folded &f, const SolverRequest &r,
            SolverResult &res) {
  size_t ncols = c.entries.size(), nrows = c.rowLb.size();
  std::vector<int> start(ncols + 1), index;
  std::vector<double> value;
  for (size_t col = 0; col < ncols; ++col) {
    start[col] = index.size();
    for (auto &[row, val] : c.entries[col]) {
      index.push_back(row);
      value.push_back(val);
    }
  }
  start[ncols] = index.size();
  std::vector<double> colLb(ncols, 0.0), colUb(c.upper);
  Cbc_Model *model = Cbc_newModel();
  auto release = llvm::make_scope_exit([&] { Cbc_deleteModel(model); });
  Cbc_loadProblem(model, ncols, nrows, start.data(), index.data(),
                  value.data(), colLb.data(), colUb.data(),
                  c.objective.data(), c.rowLb.data(), c.rowUb.data());
  for (size_t col = 0; col < ncols; ++col)
    if (c.integer[col])
      Cbc_setInteger(model, col);
  Cbc_setLogLevel(model, 0);
  Cbc_setMaximumSeconds(model, r.timeLimit);
  Cbc_setParameter(model, "threads", "1");
  // Plans within 0.01% of the optimum are as good as the model is.
  Cbc_setAllowableFractionGap(model, 1e-4);
  if (!r.start.empty()) {
    std::vector<int> idx;
    std::vector<double> val;
    for (size_t v = 0; v < f.cost.size(); ++v)
      if (c.firstCol[v] >= 0)
        for (size_t i = 0; i < f.cost[v].size(); ++i) {
          idx.push_back(c.firstCol[v] + i);
          val.push_back(int(i) == r.start[v] ? 1.0 : 0.0);
        }
    Cbc_setMIPStartI(model, idx.size(), idx.data(), val.data());
  }
  auto t0 = std::chrono::steady_clock::now();
  Cbc_solve(model);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  const double *x = Cbc_bestSolution(model);
  double scale = r.minimizeMemory ? c.memScale : c.timeScale;
  double constant = r.minimizeMemory ? f.constantMemory : f.constantCost;
  // CBC also reports "infeasible" when the time limit cuts its
  // preprocessing short (measured: GPT-3 shapes at --plan-time-limit=0.05
  // that have plans within the memory limit); only a search that ended well
  // within the limit proves it.
  if (Cbc_isProvenInfeasible(model)) {
    if (!Cbc_isSecondsLimitReached(model) && seconds < 0.5 * r.timeLimit) {
      res.provenInfeasible = true;
      res.bound = std::numeric_limits<double>::infinity();
    }
    return;
  }
  // CBC's best possible value, when it got that far: stopped before the
  // root relaxation it is +-COIN_DBL_MAX (not a bound). solve() takes the
  // larger of it and the relaxed sum.
  double best = Cbc_getBestPossibleObjValue(model);
  res.bound = std::abs(best) < 1e20 ? best / scale + constant
                                    : -std::numeric_limits<double>::infinity();
  if (!x)
    return;
  res.feasible = true;
  res.optimal = Cbc_isProvenOptimal(model);
  res.objective = Cbc_getObjValue(model) / scale + constant;
  for (size_t v = 0; v < f.cost.size(); ++v) {
    if (c.firstCol[v] < 0)
      continue;
    int best = 0;
    for (size_t i = 1; i < f.cost[v].size(); ++i)
      if (x[c.firstCol[v] + i] > x[c.firstCol[v] + best])
        best = i;
    res.choice[v] = best;
  }
}

} // namespace

namespace {
/// The cheapest entry of every variable and pair, summed: a lower bound of
/// every choice's objective, whatever the constraints.
double relaxedBound(const SolverRequest &r) {
  const auto &table = r.minimizeMemory ? r.memory : r.cost;
  double sum = r.minimizeMemory ? r.constantMemory : r.constantCost;
  for (const std::vector<double> &entries : table)
    if (!entries.empty())
      sum += *std::min_element(entries.begin(), entries.end());
  for (const SolverRequest::Pair &p : r.pairs) {
    const std::vector<double> &entries = r.minimizeMemory ? p.memory : p.cost;
    if (!entries.empty())
      sum += *std::min_element(entries.begin(), entries.end());
  }
  // A shared cost is at least what its costliest use needs at the least.
  if (!r.minimizeMemory)
    for (const SolverRequest::Shared &sh : r.shared) {
      double most = 0;
      size_t nu = r.cost[sh.u].size();
      for (const SolverRequest::Shared::Use &use : sh.uses) {
        double least = std::numeric_limits<double>::infinity();
        for (size_t i = 0; i < nu; ++i) {
          if (use.v == sh.u) {
            int t = use.target[i];
            least = std::min(least, t < 0 ? 0.0 : sh.cost[i * sh.targets + t]);
            continue;
          }
          for (int t : use.target)
            least = std::min(least, t < 0 ? 0.0 : sh.cost[i * sh.targets + t]);
        }
        if (std::isfinite(least))
          most = std::max(most, least);
      }
      sum += most;
    }
  return sum;
}
} // namespace

SolverResult mlir::loom::planner::solve(const SolverRequest &request) {
  SolverResult res;
  res.choice.assign(request.cost.size(), 0);
  Folded f = foldPairs(request);
  foldSeparable(f);
  Columns c = buildColumns(f, request);
  res.variables = c.entries.size();
  res.constraints = c.rowLb.size();
  if (c.entries.empty()) {
    res.feasible =
        request.minimizeMemory || f.constantMemory <= request.memoryLimit;
    res.optimal = true;
    res.objective = request.minimizeMemory ? f.constantMemory : f.constantCost;
    res.bound = res.objective;
    return res;
  }
  runCbc(c, f, request, res);
  if (!res.provenInfeasible)
    res.bound = std::max(res.bound, relaxedBound(request));
  if (res.feasible)
    res.bound = std::min(res.bound, res.objective);
  return res;
}
