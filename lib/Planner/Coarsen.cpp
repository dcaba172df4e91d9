//===- Coarsen.cpp - Repeated layers share the planner's variables --------===//
//
// Finds the longest run of forward ops that repeats with one period (by op
// kind, attributes and types), then checks it against the data flow: layer
// k's ops read their own layer (as layer 0 does), the previous layer (where
// layer 0 reads from before the run), or values outside the run that every
// layer shares or that each layer has its own of (weights). The layers
// that pass share layer 0's variables.
//
//===----------------------------------------------------------------------===//

#include "loom/Planner/Graph.h"

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Support/Debug.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/Hashing.h"

#define DEBUG_TYPE "loom-auto-shard"

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::planner;

namespace {

struct Run {
  int start = 0, period = 0, repeats = 0;
};

/// A hash of what makes two ops alike: name, attributes (but shardings and
/// autodiff's op numbers), operand and result types.
llvm::hash_code signature(Operation *op) {
  llvm::hash_code h = llvm::hash_value(op->getName().getStringRef());
  for (NamedAttribute a : op->getAttrs())
    if (a.getName() != LoomDialect::kShardingAttrName &&
        a.getName() != LoomDialect::kOpIdAttrName &&
        a.getName() != LoomDialect::kVjpOfAttrName &&
        a.getName() != LoomDialect::kRematAttrName &&
        a.getName() != LoomDialect::kStageAttrName)
      h = llvm::hash_combine(h, a.getName(), a.getValue());
  for (Type t : op->getOperandTypes())
    h = llvm::hash_combine(h, t.getAsOpaquePointer());
  for (Type t : op->getResultTypes())
    h = llvm::hash_combine(h, t.getAsOpaquePointer());
  return h;
}

/// The run of signatures covering the most ops that repeats with one period.
Run longestRepeat(ArrayRef<llvm::hash_code> sig) {
  int n = sig.size();
  Run best;
  int64_t bestCover = 0;
  for (int p = 1; p <= n / 2; ++p) {
    int run = 0;
    for (int i = 0; i + p < n; ++i) {
      run = sig[i] == sig[i + p] ? run + 1 : 0;
      // The run [i - run + 1, i] matches one period later.
      if (run >= p && (i + 1 == n - p || sig[i + 1] != sig[i + 1 + p])) {
        int repeats = (run + p) / p;
        int64_t cover = int64_t(repeats) * p;
        if (cover > bestCover) {
          bestCover = cover;
          best = {i - run + 1, p, repeats};
        }
      }
    }
  }
  return best;
}

/// Checks each layer of `run` against the data flow and returns how many
/// consecutive layers from the first read like layers.
class LayerChecker {
public:
  LayerChecker(const Graph &g, ArrayRef<int> ops, const DenseMap<int, int> &pos,
               Run run)
      : g(g), ops(ops), pos(pos), run(run) {
    for (const Edge &e : g.edges) {
      auto &s = sources[e.v];
      s.resize(std::max<size_t>(s.size(), e.operand + 1), {-1, -1});
      s[e.operand] = {e.u, e.res};
      ++uses[e.u];
    }
  }

  int layersThatRead() {
    int layers = 1;
    for (int k = 1; k < run.repeats; ++k) {
      if (!layerReadsLikeLayer0(k)) {
        LLVM_DEBUG(llvm::dbgs() << "coarsen: layer " << k
                                << " reads differently\n");
        break;
      }
      layers = k + 1;
    }
    return layers;
  }

  /// Operand sources of op node `v`, as (node, result); (-1, -1) for none.
  DenseMap<int, SmallVector<std::pair<int, int>, 4>> sources;

private:
  int layerOf(int node) const {
    auto it = pos.find(node);
    if (it == pos.end())
      return -1;
    int i = it->second - run.start;
    if (i < 0 || i >= run.repeats * run.period)
      return -1;
    return i / run.period;
  }
  int posIn(int node, int layer) const {
    return pos.lookup(node) - run.start - layer * run.period;
  }

  bool layerReadsLikeLayer0(int k) {
    int p = run.period;
    for (int j = 0; j < p; ++j) {
      int v = ops[run.start + k * p + j], r = ops[run.start + j];
      auto &sv = sources[v], &sr = sources[r];
      if (sv.size() != sr.size())
        return false;
      for (size_t o = 0; o < sv.size(); ++o)
        if (!operandReadsAlike(k, j, o, sv[o], sr[o]))
          return false;
    }
    return true;
  }

  bool operandReadsAlike(int k, int j, size_t o, std::pair<int, int> here,
                         std::pair<int, int> there) {
    auto [u, ures] = here;
    auto [w, wres] = there;
    if ((u < 0) != (w < 0) || ures != wres)
      return false;
    if (u < 0)
      return true;
    int lu = layerOf(u), lw = layerOf(w);
    if (lu == k) // this layer's own op: where layer 0 reads
      return lw == 0 && posIn(u, k) == posIn(w, 0);
    if (lu == k - 1) {
      // The previous layer: layer 0 reads from before the run, and every
      // later layer from the same position.
      if (lw >= 0)
        return false;
      if (k < 2)
        return true;
      int x = sources[ops[run.start + run.period + j]][o].first;
      return x >= 0 && layerOf(x) == 0 && posIn(x, 0) == posIn(u, k - 1);
    }
    if (lu < 0) {
      // Outside the run: shared by every layer (a mask), or each layer's
      // own parameter or input.
      const Node &a = g.nodes[u], &b = g.nodes[w];
      return lw < 0 &&
             (u == w || (a.kind != NodeKind::Op && a.kind == b.kind &&
                         a.type == b.type && uses.lookup(u) == 1 &&
                         uses.lookup(w) == 1));
    }
    return false;
  }

  const Graph &g;
  ArrayRef<int> ops;
  const DenseMap<int, int> &pos;
  Run run;
  DenseMap<int, int> uses;
};

} // namespace

void mlir::loom::planner::coarsen(Graph &g) {
  for (int v = 0; v < int(g.nodes.size()); ++v)
    g.nodes[v].rep = v;
  SmallVector<int> ops;
  DenseMap<int, int> pos;
  SmallVector<llvm::hash_code> sig;
  for (int v = 0; v < int(g.nodes.size()); ++v)
    if (g.nodes[v].kind == NodeKind::Op) {
      pos[v] = ops.size();
      ops.push_back(v);
      sig.push_back(signature(g.nodes[v].op));
    }
  Run run = longestRepeat(sig);
  LLVM_DEBUG(llvm::dbgs() << "coarsen: " << ops.size() << " ops, period "
                          << run.period << " x " << run.repeats
                          << " from op " << run.start << "\n");
  if (run.repeats < 2)
    return;
  LayerChecker checker(g, ops, pos, run);
  int layers = checker.layersThatRead();
  if (layers < 2)
    return;
  g.layers = layers;
  g.period = run.period;
  for (int k = 0; k < layers; ++k)
    for (int j = 0; j < run.period; ++j) {
      int v = ops[run.start + k * run.period + j];
      g.nodes[v].rep = ops[run.start + j];
      g.nodes[v].layer = k;
    }
  // Parameters follow their consumer; producers read by the next layer
  // hold the layer input under rematerialization.
  for (const Edge &e : g.edges) {
    Node &u = g.nodes[e.u], &v = g.nodes[e.v];
    if (v.layer >= 1 && u.kind != NodeKind::Op && u.rep == e.u) {
      int w = checker.sources[v.rep][e.operand].first;
      if (w >= 0 && w != e.u && g.nodes[w].kind == u.kind)
        u.rep = w;
    }
    if (u.layer >= 0 && v.layer == u.layer + 1)
      u.crossLayerProducer = true;
  }
}
