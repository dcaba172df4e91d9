//===- Propagation.cpp - Completing shardings over a function -------------===//

#include "loom/Sharding/Propagation.h"

#include "loom/Sharding/Passes.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMPROPAGATESHARDING
#include "loom/Sharding/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

bool isTensor(Value v) { return isa<RankedTensorType>(v.getType()); }

/// Shardings equal up to partial axes.
bool sameDims(ShardingAttr a, ShardingAttr b) {
  return a && b && a.getDims() == b.getDims();
}

class Propagator {
public:
  Propagator(MeshOp mesh, PropagationResult &out) : mesh(mesh), out(out) {}

  /// A given sharding; `rank` orders conflicts (higher wins).
  void fix(Value v, ShardingAttr s, int rank) {
    out.shardings[v] = s;
    priority[v] = rank;
  }

  bool visit(Operation *op, bool forward);

private:
  MeshOp mesh;
  PropagationResult &out;
  DenseMap<Value, int> priority;
  DenseSet<Operation *> reported;
};

bool Propagator::visit(Operation *op, bool forward) {
  auto iface = dyn_cast<ShardingRuleOpInterface>(op);
  if (!iface || op->getNumResults() == 0)
    return false;
  ShardingRule rule = iface.getShardingRule();
  if (rule.getOperands().size() != op->getNumOperands() ||
      rule.getResults().size() != op->getNumResults())
    return false;
  struct Entry {
    const TensorFactors *factors;
    Value value;
    bool isOperand;
  };
  SmallVector<Entry> known, unknown;
  auto consider = [&](const TensorFactors &factors, Value v, bool isOperand) {
    if (!isTensor(v))
      return;
    if (out.shardings.count(v))
      known.push_back({&factors, v, isOperand});
    else
      unknown.push_back({&factors, v, isOperand});
  };
  for (auto [i, v] : llvm::enumerate(op->getOperands()))
    consider(rule.getOperands()[i], v, true);
  for (auto [i, v] : llvm::enumerate(op->getResults()))
    consider(rule.getResults()[i], v, false);
  if (unknown.empty() || known.empty())
    return false;
  // Higher priority first (data and user annotations over parameter
  // storage), then in the sweep's direction.
  llvm::stable_sort(known, [&](const Entry &a, const Entry &b) {
    int pa = priority.lookup(a.value), pb = priority.lookup(b.value);
    if (pa != pb)
      return pa > pb;
    return forward ? (a.isOperand && !b.isOperand)
                   : (!a.isOperand && b.isOperand);
  });
  int inherited = priority.lookup(known.front().value);
  FactorSharding fs(rule, mesh);
  for (const Entry &e : known)
    fs.absorb(*e.factors, out.shardings[e.value], {FactorKind::Parallel});
  for (const Entry &e : known)
    if (e.isOperand)
      fs.absorb(*e.factors, out.shardings[e.value], {FactorKind::Reduction});
  fs.legalize();

  // Conflicts: a known tensor the assignment does not reproduce.
  if (!reported.contains(op))
    for (const Entry &e : known) {
      ShardingAttr want = fs.project(*e.factors, !e.isOperand, op->getContext());
      if (!sameDims(want, out.shardings[e.value])) {
        std::string msg;
        llvm::raw_string_ostream os(msg);
        os << (e.isOperand ? "operand" : "result") << " sharded as "
           << out.shardings[e.value] << " but the op is split as " << want;
        out.conflicts.push_back({op, msg});
        reported.insert(op);
        break;
      }
    }

  // Linear ops pass partial sums on instead of reducing them first.
  SmallVector<ShardingAttr> operandShardings;
  for (Value o : op->getOperands())
    operandShardings.push_back(out.shardings.lookup(o));
  SmallVector<StringRef> partial = linearPartial(rule, operandShardings);
  for (StringRef a : partial)
    if (fs.used.contains(a))
      partial.clear();
  // Only where it saves a collective: a partial operand used elsewhere is
  // reduced once for all its users instead.
  for (Value o : op->getOperands())
    if (ShardingAttr s = out.shardings.lookup(o);
        s && s.isPartial() && !o.hasOneUse())
      partial.clear();
  // Only splits spread: filling values with "replicated" now would block a
  // split arriving later (values nothing splits end up replicated anyway).
  if (fs.used.empty() && partial.empty())
    return false;
  for (const Entry &e : unknown) {
    ShardingAttr s = fs.project(*e.factors, !e.isOperand, op->getContext());
    if (!e.isOperand && !partial.empty() && !s.isPartial())
      s = withPartial(s, partial);
    out.shardings[e.value] = s;
    priority[e.value] = inherited;
  }
  return true;
}

} // namespace

PropagationResult
mlir::loom::propagate(func::FuncOp fn, MeshOp mesh,
                              const DenseMap<Value, ShardingAttr> &seeds,
                              bool freeArguments) {
  PropagationResult out;
  Propagator p(mesh, out);
  // Priorities: what the user pins on values and data inputs (3) over how
  // parameters are stored (1), so that activations keep their batch split
  // and a split weight is gathered where it is used (ZeRO-3).
  auto rankOf = [&](Value v) {
    if (auto arg = dyn_cast<BlockArgument>(v))
      return fn.getArgAttr(arg.getArgNumber(), LoomDialect::kParamAttrName)
                 ? 1
                 : 3;
    return 3;
  };
  auto seed = [&](Value v) {
    if (!isTensor(v))
      return;
    if (ShardingAttr s = seeds.lookup(v))
      p.fix(v, s, rankOf(v));
    else if (ShardingAttr s = recordedSharding(v))
      p.fix(v, s, rankOf(v));
  };
  for (BlockArgument arg : fn.getArguments()) {
    seed(arg);
    if (!out.shardings.count(arg) && isTensor(arg) && !freeArguments)
      p.fix(arg,
            replicated(mesh, cast<RankedTensorType>(arg.getType()).getRank()),
            0);
  }
  SmallVector<Operation *> ops;
  for (Operation &op : fn.getBody().front().without_terminator()) {
    ops.push_back(&op);
    for (Value r : op.getResults())
      seed(r);
  }
  // Returned values are stored as the results are declared (a parameter's
  // next value as the parameter), with the priority of parameter storage.
  auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
  for (auto [i, v] : llvm::enumerate(ret.getOperands()))
    if (isTensor(v) && !out.shardings.count(v) && v.getDefiningOp())
      if (auto s = fn.getResultAttrOfType<ShardingAttr>(
              i, LoomDialect::kShardingAttrName))
        p.fix(v, s, 1);
  for (int iteration = 0; iteration < 16; ++iteration) {
    bool changed = false;
    for (Operation *op : ops)
      changed |= p.visit(op, /*forward=*/true);
    for (Operation *op : llvm::reverse(ops))
      changed |= p.visit(op, /*forward=*/false);
    if (!changed)
      break;
  }
  for (Operation *op : ops)
    for (Value r : op->getResults())
      if (isTensor(r) && !out.shardings.count(r))
        out.shardings[r] =
            replicated(mesh, cast<RankedTensorType>(r.getType()).getRank());
  for (BlockArgument arg : fn.getArguments())
    if (isTensor(arg) && !out.shardings.count(arg))
      out.shardings[arg] =
          replicated(mesh, cast<RankedTensorType>(arg.getType()).getRank());
  return out;
}

namespace {
struct PropagateShardingPass
    : loom::impl::LoomPropagateShardingBase<PropagateShardingPass> {
  using LoomPropagateShardingBase::LoomPropagateShardingBase;
  void runOnOperation() override {
    FailureOr<ShardedFunction> step =
        lookupShardedFunction(getOperation(), function, getArgument());
    if (failed(step))
      return signalPassFailure();
    func::FuncOp fn = step->fn;
    shardUpdatesLikeParameters(fn);
    PropagationResult plan = propagate(fn, step->mesh);
    for (auto &[op, msg] : plan.conflicts)
      op->emitRemark("sharding conflict: ") << msg;
    for (Operation &op : fn.getBody().front().without_terminator()) {
      if (op.getNumResults() == 0 || isa<ShardingConstraintOp>(op))
        continue;
      SmallVector<ShardingAttr> shardings;
      for (Value r : op.getResults())
        shardings.push_back(plan.shardings.lookup(r));
      if (llvm::all_of(shardings, [](ShardingAttr s) { return s; }))
        setOpResultShardings(&op, shardings);
    }
    for (BlockArgument arg : fn.getArguments())
      if (ShardingAttr s = plan.shardings.lookup(arg))
        fn.setArgAttr(arg.getArgNumber(), LoomDialect::kShardingAttrName, s);
  }
};
} // namespace
