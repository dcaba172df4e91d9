//===- Propagation.cpp - Completing shardings over a function -------------===//

#include "Propagation.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::detail;

namespace {

bool isTensor(Value v) { return isa<RankedTensorType>(v.getType()); }

/// Shardings equal up to partial axes.
bool sameDims(ShardingAttr a, ShardingAttr b) {
  return a && b && a.getDims() == b.getDims();
}

class Propagator {
public:
  Propagator(MeshOp mesh, PropagationResult &out) : mesh(mesh), out(out) {}

  void fix(Value v, ShardingAttr s) {
    out.shardings[v] = s;
    fixed.insert(v);
  }

  bool visit(Operation *op, bool forward);

private:
  MeshOp mesh;
  PropagationResult &out;
  DenseSet<Value> fixed;
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
  // User shardings first, then in the sweep's direction.
  llvm::stable_sort(known, [&](const Entry &a, const Entry &b) {
    bool fa = fixed.contains(a.value), fb = fixed.contains(b.value);
    if (fa != fb)
      return fa;
    return forward ? (a.isOperand && !b.isOperand)
                   : (!a.isOperand && b.isOperand);
  });
  FactorSharding fs(rule, mesh);
  for (const Entry &e : known)
    fs.absorb(*e.factors, out.shardings[e.value], {FactorKind::Parallel});
  for (const Entry &e : known)
    if (e.isOperand)
      fs.absorb(*e.factors, out.shardings[e.value], {FactorKind::Reduction});

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

  for (const Entry &e : unknown)
    out.shardings[e.value] =
        fs.project(*e.factors, !e.isOperand, op->getContext());
  return true;
}

} // namespace

PropagationResult
mlir::loom::detail::propagate(func::FuncOp fn, MeshOp mesh,
                              const DenseMap<Value, ShardingAttr> &seeds) {
  PropagationResult out;
  Propagator p(mesh, out);
  auto seed = [&](Value v) {
    if (!isTensor(v))
      return;
    if (ShardingAttr s = seeds.lookup(v))
      p.fix(v, s);
    else if (ShardingAttr s = recordedSharding(v))
      p.fix(v, s);
  };
  for (BlockArgument arg : fn.getArguments()) {
    seed(arg);
    if (!out.shardings.count(arg) && isTensor(arg))
      p.fix(arg, replicated(mesh,
                            cast<RankedTensorType>(arg.getType()).getRank()));
  }
  SmallVector<Operation *> ops;
  for (Operation &op : fn.getBody().front().without_terminator()) {
    ops.push_back(&op);
    for (Value r : op.getResults())
      seed(r);
  }
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
  return out;
}
