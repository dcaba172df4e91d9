//===- Coarsen.cpp - Repeated layers share the planner's variables --------===//
//
// Finds the longest run of forward ops that repeats with one period (by op
// kind, attributes and types), then checks it against the data flow: layer
// k's ops read their own layer (as layer 0 does), the previous layer (where
// layer 0 reads from before the run), or values outside the run that every
// layer shares or that each layer has its own of (weights). The layers
// that pass share layer 0's variables. A step of micro-batches run one
// after the other holds a copy of the forward pass per micro-batch: the
// copies share copy 0's variables, and the layers are copy 0's.
//
//===----------------------------------------------------------------------===//

#include "loom/Planner/Graph.h"

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Support/Debug.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
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
    // Uses by the ops searched (one micro-batch's copy).
    for (const Edge &e : g.edges) {
      auto &s = sources[e.v];
      s.resize(std::max<size_t>(s.size(), e.operand + 1), {-1, -1});
      s[e.operand] = {e.u, e.res};
      if (pos.count(e.v))
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

  /// What a constant op computes: its signature and its operands'.
  llvm::hash_code constantKey(int v) {
    if (auto it = keys.find(v); it != keys.end())
      return it->second;
    llvm::hash_code h = signature(g.nodes[v].op);
    for (auto [u, res] : sources[v])
      h = llvm::hash_combine(h, res, u < 0 ? llvm::hash_code(0) : constantKey(u));
    return keys[v] = h;
  }

  bool operandReadsAlike(int k, int j, size_t o, std::pair<int, int> here,
                         std::pair<int, int> there) {
    auto [u, ures] = here;
    auto [w, wres] = there;
    if ((u < 0) != (w < 0) || ures != wres)
      return false;
    if (u < 0)
      return true;
    // The same constant computed again (a pipeline stage's own copy).
    if (g.nodes[u].constant || g.nodes[w].constant)
      return g.nodes[u].constant && g.nodes[w].constant &&
             constantKey(u) == constantKey(w);
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
  DenseMap<int, llvm::hash_code> keys;
};

/// Whether ops `v` and `w` are alike but for attributes (a micro-batch's
/// slice of the data, a dropout's seed).
bool alikeButAttributes(Operation *v, Operation *w) {
  return v->getName() == w->getName() &&
         v->getOperandTypes() == w->getOperandTypes() &&
         v->getResultTypes() == w->getResultTypes();
}

/// The copies of the forward pass in a step of k micro-batches
/// (loom.micro_batches: BuildTrainStep clones the forward pass per
/// micro-batch; after the copies come the few ops that sum their losses).
struct Copies {
  /// Copy 0's ops: ops[0, n).
  int n = 0;
  /// Per copy m >= 1 and copy 0's op j: copy m's op, or -1 where CSE kept
  /// copy 0's (an op that reads nothing of its copy, a weight's transpose).
  std::vector<std::vector<int>> of;
};

/// Matches copies 1..k-1 against copy 0 = ops[0, n): copy m's op for copy
/// 0's op j is alike and reads copy m's ops where copy 0's reads copy 0's
/// and the same nodes elsewhere.
bool matchCopies(const Graph &g, ArrayRef<int> ops, int k, int n,
                 const DenseMap<int, SmallVector<std::pair<int, int>, 4>> &src,
                 Copies &out) {
  DenseMap<int, int> posIn0;
  for (int j = 0; j < n; ++j)
    posIn0[ops[j]] = j;
  auto sourcesOf = [&](int v) {
    auto it = src.find(v);
    return it == src.end() ? ArrayRef<std::pair<int, int>>()
                           : ArrayRef<std::pair<int, int>>(it->second);
  };
  // Copy 0's ops that read nothing of copy 0 but such ops (a weight's
  // transpose, a slice of a constant mask): CSE may have kept one.
  std::vector<bool> shareable(n, true);
  for (int j = 0; j < n; ++j)
    for (auto [u, res] : sourcesOf(ops[j]))
      if (auto it = posIn0.find(u); it != posIn0.end() && !shareable[it->second])
        shareable[j] = false;
  out.n = n;
  out.of.assign(k, {});
  int at = n;
  for (int m = 1; m < k; ++m) {
    std::vector<int> &of = out.of[m];
    of.assign(n, -1);
    // Where copy m reads the value copy 0's op j made.
    auto valueOf = [&](int j) { return of[j] >= 0 ? of[j] : ops[j]; };
    for (int j = 0; j < n; ++j) {
      bool alike = false;
      if (at < int(ops.size())) {
        int v = ops[at], w = ops[j];
        ArrayRef<std::pair<int, int>> sv = sourcesOf(v), sw = sourcesOf(w);
        alike = alikeButAttributes(g.nodes[v].op, g.nodes[w].op) &&
                sv.size() == sw.size();
        for (size_t o = 0; alike && o < sv.size(); ++o) {
          auto it = posIn0.find(sw[o].first);
          int expected = it == posIn0.end() ? sw[o].first : valueOf(it->second);
          alike = sv[o].second == sw[o].second && sv[o].first == expected;
        }
      }
      if (alike)
        of[j] = ops[at++];
      else if (!shareable[j])
        return false;
    }
  }
  // What is left sums the copies' losses.
  return int(ops.size()) - at <= 2 * k + 2;
}

/// The copies of a step of k micro-batches, or none (n = 0).
Copies findCopies(const Graph &g, ArrayRef<int> ops, int k) {
  DenseMap<int, SmallVector<std::pair<int, int>, 4>> src;
  for (const Edge &e : g.edges) {
    auto &s = src[e.v];
    s.resize(std::max<size_t>(s.size(), e.operand + 1), {-1, -1});
    s[e.operand] = {e.u, e.res};
  }
  Copies copies;
  // Copy 1 starts with an op alike to copy 0's first.
  for (int n = 1; n * k <= int(ops.size()) + 2 * k * k; ++n) {
    if (n >= int(ops.size()))
      break;
    if (!alikeButAttributes(g.nodes[ops[n]].op, g.nodes[ops[0]].op))
      continue;
    if (matchCopies(g, ops, k, n, src, copies))
      return copies;
  }
  return Copies();
}

} // namespace

static void findLayers(Graph &g, ArrayRef<int> ops);

void mlir::loom::planner::coarsen(Graph &g) {
  for (int v = 0; v < int(g.nodes.size()); ++v) {
    g.nodes[v].rep = v;
    g.nodes[v].same = v;
    g.nodes[v].microBatch = 0;
    g.nodes[v].constant = false;
  }
  SmallVector<int> ops;
  for (int v = 0; v < int(g.nodes.size()); ++v)
    if (g.nodes[v].kind == NodeKind::Op)
      ops.push_back(v);
  // A step of micro-batches: its layers are copy 0's, and the copies
  // share copy 0's choices (below).
  g.microBatches = 1;
  Copies copies;
  if (auto k = g.fn ? g.fn->getAttrOfType<IntegerAttr>(
                          LoomDialect::kMicroBatchesAttrName)
                    : IntegerAttr();
      k && k.getInt() > 1) {
    copies = findCopies(g, ops, k.getInt());
    if (copies.n > 0)
      g.microBatches = k.getInt();
    LLVM_DEBUG(llvm::dbgs() << "coarsen: " << k.getInt() << " micro-batches, "
                            << copies.n << " ops in the first\n");
  }
  if (g.microBatches < 2) {
    findLayers(g, ops);
    return;
  }
  findLayers(g, ArrayRef<int>(ops).take_front(copies.n));
  // A copy's op that reads what copy 0's reads, with the same attributes,
  // computes the same value: CSE keeps copy 0's.
  auto attrs = [](Operation *op) {
    SmallVector<NamedAttribute> kept;
    for (NamedAttribute n : op->getAttrs())
      if (n.getName() != LoomDialect::kOpIdAttrName &&
          n.getName() != LoomDialect::kVjpOfAttrName)
        kept.push_back(n);
    return kept;
  };
  for (int m = 1; m < g.microBatches; ++m)
    for (int j = 0; j < copies.n; ++j) {
      if (copies.of[m][j] < 0)
        continue;
      Node &copy = g.nodes[copies.of[m][j]];
      const Node &first = g.nodes[ops[j]];
      copy.rep = first.rep;
      copy.layer = first.layer;
      copy.crossLayerProducer = first.crossLayerProducer;
      copy.microBatch = m;
      if (isMemoryEffectFree(copy.op) && copy.op->getNumRegions() == 0 &&
          copy.op->getOperands() == first.op->getOperands() &&
          attrs(copy.op) == attrs(first.op))
        copy.same = ops[j];
    }
}

/// The repeated layers among `ops` (all the forward ops, or one
/// micro-batch's copy of them).
static void findLayers(Graph &g, ArrayRef<int> allOps) {
  // Ops computed from constants alone are not part of the layers: CSE keeps
  // one for all layers, and pipeline stages one each, so they would break
  // the period where they are (a scale's cast to bf16 before the first
  // layer's use and each stage's first).
  DenseMap<int, SmallVector<int, 4>> sources;
  for (const Edge &e : g.edges)
    sources[e.v].push_back(e.u);
  SmallVector<int> ops;
  for (int v : allOps) { // in program order: operands first
    g.nodes[v].constant = llvm::all_of(sources.lookup(v), [&](int u) {
      return g.nodes[u].kind == NodeKind::Op && g.nodes[u].constant;
    });
    if (!g.nodes[v].constant)
      ops.push_back(v);
  }
  DenseMap<int, int> pos;
  SmallVector<llvm::hash_code> sig;
  for (int v : ops) {
    pos[v] = sig.size();
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
