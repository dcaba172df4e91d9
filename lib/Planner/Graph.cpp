//===- Graph.cpp - The planner's view of a training step ------------------===//

#include "loom/Planner/Graph.h"

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Dialect/Loom/Utils/Utils.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::planner;

double mlir::loom::planner::bytesOf(Type type) {
  return double(tensorBytes(type));
}

bool mlir::loom::planner::isHalf(Type type) {
  auto t = dyn_cast<RankedTensorType>(type);
  return t && (t.getElementType().isBF16() || t.getElementType().isF16());
}

double Edge::bytes() const { return bytesOf(type); }
double Edge::elementBytes() const {
  return bytesOf(type) / std::max<int64_t>(1, type.getNumElements());
}
bool Edge::half() const { return isHalf(type); }

namespace {

/// What optimizer state a step keeps per weight: the most any weight has
/// (state_of), none for a step without (plain SGD), `defaultStates` for a
/// loss function.
int countStates(func::FuncOp fn, ArrayRef<int> stateOwner, int defaultStates) {
  DenseMap<int, int> statesOf;
  for (int owner : stateOwner)
    if (owner >= 0)
      ++statesOf[owner];
  if (!statesOf.empty()) {
    int n = 0;
    for (auto &[w, count] : statesOf)
      n = std::max(n, count);
    return n;
  }
  if (fn->hasAttr("loom.train_step") || fn.getNumResults() > 1)
    return 0;
  return defaultStates;
}

/// Values the backward pass reads: what the gradient rules of forward ops
/// with a gradient flowing through them save.
DenseSet<Value> savedValues(Block &block, const DenseSet<Operation *> &forward,
                            DenseSet<Value> &needsGrad) {
  DenseSet<Value> saved;
  for (Operation &op : block.without_terminator()) {
    if (!forward.contains(&op))
      continue;
    bool grad = llvm::any_of(op.getOperands(),
                             [&](Value o) { return needsGrad.contains(o); });
    if (!grad)
      continue;
    for (Value r : op.getResults())
      if (auto t = dyn_cast<RankedTensorType>(r.getType());
          t && isa<FloatType>(t.getElementType()))
        needsGrad.insert(r);
    SmallVector<Value> values;
    if (auto rule = dyn_cast<DifferentiableOpInterface>(op))
      rule.getSavedForBackward(values);
    saved.insert(values.begin(), values.end());
  }
  return saved;
}

} // namespace

static void countGradientBytes(Graph &g) {
  g.gradientBytes = 0;
  for (const Node &n : g.nodes)
    if (n.kind == NodeKind::Param && n.trainable)
      g.gradientBytes += bytesOf(n.type);
}

Graph mlir::loom::planner::buildGraph(func::FuncOp fn, int defaultStates) {
  Graph g;
  g.fn = fn;
  Block &block = fn.getBody().front();
  DenseSet<Operation *> forward = lossAncestors(fn);
  g.stateOwner = optimizerStateOwners(fn);
  g.nStates = countStates(fn, g.stateOwner, defaultStates);
  if (auto mode = fn->getAttrOfType<StringAttr>(
          LoomDialect::kGradCompressionAttrName)) {
    if (std::optional<double> ratio = LoomDialect::topKRatio(mode.getValue()))
      g.topKRatio = *ratio;
    else
      g.gradElementBytes = 2;
  }

  // Arguments the forward pass reads: weights and data.
  DenseMap<Value, std::pair<int, int>> nodeOf;
  DenseSet<Value> needsGrad;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    Value arg = fn.getArgument(i);
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || llvm::none_of(arg.getUsers(), [&](Operation *u) {
          return forward.contains(u);
        }))
      continue;
    ParameterOp p = boundParameter(fn, i);
    Node n;
    n.trainable = p && p.getTrainable();
    n.buffer = p && !n.trainable;
    n.kind = n.trainable ? NodeKind::Param : NodeKind::Data;
    n.argIndex = i;
    n.type = type;
    n.name = p ? p.getSymName().str() : argumentName(fn, i);
    n.readBackward = llvm::any_of(arg.getUsers(), [](Operation *u) {
      return u->hasAttr(LoomDialect::kVjpOfAttrName);
    });
    nodeOf[arg] = {int(g.nodes.size()), 0};
    if (n.trainable)
      needsGrad.insert(arg);
    g.nodes.push_back(n);
  }
  DenseSet<Value> saved = savedValues(block, forward, needsGrad);

  // Forward ops (constants are free on every device).
  for (Operation &op : block.without_terminator()) {
    if (!forward.contains(&op) || op.getNumOperands() == 0)
      continue;
    Node n;
    n.op = &op;
    std::string loc;
    llvm::raw_string_ostream os(loc);
    op.getLoc().print(os);
    n.name = op.getName().getStringRef().str() + " " + loc;
    for (Value o : op.getOperands()) {
      auto t = dyn_cast<RankedTensorType>(o.getType());
      n.gradOperand.push_back(needsGrad.contains(o) && t &&
                              isa<FloatType>(t.getElementType()));
    }
    for (Value r : op.getResults())
      n.saved.push_back(saved.contains(r));
    int id = g.nodes.size();
    for (unsigned r = 0; r < op.getNumResults(); ++r)
      nodeOf[op.getResult(r)] = {id, int(r)};
    g.nodes.push_back(n);
  }

  // Edges.
  DenseSet<int> used;
  for (int v = 0; v < int(g.nodes.size()); ++v) {
    if (g.nodes[v].kind != NodeKind::Op)
      continue;
    Operation *op = g.nodes[v].op;
    for (unsigned k = 0; k < op->getNumOperands(); ++k) {
      auto type = dyn_cast<RankedTensorType>(op->getOperand(k).getType());
      auto it = nodeOf.find(op->getOperand(k));
      if (it == nodeOf.end() || !type)
        continue;
      int u = it->second.first;
      g.edges.push_back({u, it->second.second, v, int(k), type,
                         bool(g.nodes[v].gradOperand[k]),
                         used.insert(u).second});
    }
  }
  for (int v = 0; v < int(g.nodes.size()); ++v)
    g.nodes[v].rep = g.nodes[v].same = v;
  countGradientBytes(g);
  return g;
}
