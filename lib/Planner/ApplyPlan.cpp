//===- ApplyPlan.cpp - Writing the chosen plan into the IR ----------------===//

#include "loom/Planner/ApplyPlan.h"

#include "loom/Planner/Candidates.h"
#include "loom/Planner/CostTable.h"
#include "loom/Sharding/FactorSharding.h"

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::planner;

namespace {

/// `t` as an attribute; axes of size 1 split nothing and are left out
/// (a chosen mesh does not have them).
ShardingAttr toAttr(const AxisSharding &t, const MeshShape &mesh,
                    StringRef meshName, MLIRContext *ctx) {
  SmallVector<SmallVector<StringRef>> dims;
  for (const AxisSharding::Axes &d : t.dims) {
    dims.emplace_back();
    for (int a : d)
      if (mesh.sizes[a] > 1)
        dims.back().push_back(mesh.names[a]);
  }
  return ShardingAttr::get(ctx, meshName, dims);
}

MeshOp createMesh(ModuleOp module, const MeshShape &mesh, ArrayRef<int> keep) {
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  b.setInsertionPointToStart(module.getBody());
  SmallVector<Attribute> axes;
  for (int a : keep)
    axes.push_back(MeshAxisAttr::get(
        ctx, StringAttr::get(ctx, mesh.names[a]), mesh.sizes[a],
        b.getF64FloatAttr(mesh.links[a].bandwidth),
        b.getF64FloatAttr(mesh.links[a].latency)));
  std::string name = "mesh";
  SymbolTable table(module);
  for (int i = 1; table.lookup(name); ++i)
    name = "mesh" + std::to_string(i);
  return MeshOp::create(b, module.getLoc(), name, b.getArrayAttr(axes));
}

/// Per weight argument: the axes its optimizer state splits over beyond the
/// weight's own (where its gradient is partial anyway).
SmallVector<std::pair<Mask, int>> stateSplits(const Graph &g,
                                              ArrayRef<int> choice,
                                              const MeshShape &mesh) {
  func::FuncOp fn = g.fn;
  SmallVector<std::pair<Mask, int>> extra(fn.getNumArguments(), {0, -1});
  for (const Edge &e : g.edges) {
    const Node &u = g.nodes[e.u];
    if (!e.firstUse)
      continue;
    const AxisSharding &storage = u.strategies[choice[e.u]].results[0];
    const Strategy &consumer = g.nodes[e.v].strategies[choice[e.v]];
    int dim = -1;
    Mask m = stateExtra(g, u, storage, consumer.gradPartial[e.operand], mesh,
                        &dim);
    if (m && dim >= 0)
      extra[u.argIndex] = {m, dim};
  }
  return extra;
}

} // namespace

MeshOp mlir::loom::planner::applyPlan(ModuleOp module, const Graph &g,
                                      ArrayRef<int> choice,
                                      const MeshShape &mesh, MeshOp fixed,
                                      ArrayRef<int> keep) {
  MLIRContext *ctx = module.getContext();
  MeshOp meshOp = fixed ? fixed : createMesh(module, mesh, keep);
  StringRef meshName = meshOp.getSymName();
  func::FuncOp fn = g.fn;
  SmallVector<std::optional<AxisSharding>> argShard(fn.getNumArguments());
  for (int v = 0; v < int(g.nodes.size()); ++v) {
    const Node &n = g.nodes[v];
    const Strategy &s = n.strategies[choice[v]];
    if (n.kind != NodeKind::Op) {
      argShard[n.argIndex] = s.results[0];
      continue;
    }
    if (isa<ShardingConstraintOp>(n.op))
      continue;
    SmallVector<ShardingAttr> rs;
    for (unsigned r = 0; r < n.op->getNumResults(); ++r) {
      if (!isa<RankedTensorType>(n.op->getResult(r).getType()) ||
          r >= s.results.size()) {
        rs.clear();
        break;
      }
      rs.push_back(toAttr(s.results[r], mesh, meshName, ctx));
    }
    if (!rs.empty())
      setOpResultShardings(n.op, rs);
    // The factors as the planner priced them: the partitioner splits the
    // op so, not by its own reading of the operands.
    if (isa<ShardingRuleOpInterface>(n.op) && !s.factors.empty()) {
      SmallVector<Attribute> factors;
      for (Mask m : s.factors) {
        SmallVector<Attribute> axes;
        for (int a : axesOf(m))
          if (mesh.sizes[a] > 1)
            axes.push_back(StringAttr::get(ctx, mesh.names[a]));
        factors.push_back(ArrayAttr::get(ctx, axes));
      }
      n.op->setAttr(LoomDialect::kFactorsAttrName,
                    ArrayAttr::get(ctx, factors));
    }
  }
  SmallVector<std::pair<Mask, int>> extra = stateSplits(g, choice, mesh);
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    auto type = dyn_cast<RankedTensorType>(fn.getArgumentTypes()[i]);
    if (!type)
      continue;
    AxisSharding t(type.getRank());
    if (argShard[i]) {
      t = *argShard[i];
    } else if (int w = g.stateOwner[i]; w >= 0 && argShard[w]) {
      // Optimizer state: laid out as its weight, split further (ZeRO).
      t = *argShard[w];
      if (auto [m, d] = extra[w]; m && d >= 0)
        appendAxes(t, d, m);
    }
    t.partial.clear();
    fn.setArgAttr(i, LoomDialect::kShardingAttrName,
                  toAttr(t, mesh, meshName, ctx));
  }
  return meshOp;
}

int mlir::loom::planner::markRematerializedLayers(const Graph &g,
                                                  double fraction,
                                                  bool others) {
  int count = static_cast<int>(std::lround(fraction * g.layers));
  if (count <= 0 && !others)
    return 0;
  // Ops outside the layers: before the first layer's first op, or after.
  Operation *firstLayerOp = nullptr;
  for (const Node &n : g.nodes)
    if (n.kind == NodeKind::Op && n.layer >= 0 &&
        (!firstLayerOp || n.op->isBeforeInBlock(firstLayerOp)))
      firstLayerOp = n.op;
  Builder b(g.fn->getContext());
  for (const Node &n : g.nodes) {
    if (n.kind != NodeKind::Op)
      continue;
    int64_t segment = -1;
    if (n.layer >= 0 && n.layer < count)
      segment = n.layer;
    else if (n.layer < 0 && others)
      segment = firstLayerOp && firstLayerOp->isBeforeInBlock(n.op)
                    ? g.layers + 1
                    : g.layers;
    // Each micro-batch's copy of the forward pass recomputes its own.
    if (segment >= 0)
      n.op->setAttr(LoomDialect::kRematAttrName,
                    b.getI64IntegerAttr(segment +
                                        n.microBatch * (g.layers + 2)));
  }
  return std::max(count, 0);
}
