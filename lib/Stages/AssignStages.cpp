//===- AssignStages.cpp - Which pipeline stage runs each forward op -------===//
//
// The ops that carry the model's work (those that read activations) are
// cut into contiguous stages in program order; ops that read only weights
// and constants follow their first user; constants stay free. A cut is
// valid when every value crosses at most one boundary: with cuts
// c_1 < c_2 < ..., reach(c_k) < c_{k+1}, where reach(c) is the last user of
// any value made before c. Balancing is the linear-partition dynamic
// program over valid cuts minimising the largest stage's work.
//
//===----------------------------------------------------------------------===//

#include "loom/Stages/Passes.h"

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Dialect/Loom/Utils/Utils.h"
#include "loom/Dialect/Loom/IR/ShardingRule.h"
#include "llvm/Support/FormatVariadic.h"
#include <limits>

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMASSIGNSTAGES
#include "loom/Stages/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

std::string nameOf(Operation *op) { return opName(op); }

/// Work of an op for balancing: its flops, or the bytes it writes.
double workOf(Operation *op) {
  double w = 0;
  if (auto rule = dyn_cast<ShardingRuleOpInterface>(op))
    w = rule.getShardingRule().getFlops();
  if (w <= 0)
    for (Type t : op->getResultTypes())
      w += double(tensorBytes(t)) / 4;
  return w;
}

/// Every value crosses at most one boundary.
LogicalResult checkAdjacent(ArrayRef<Operation *> seq,
                            const DenseMap<Operation *, int> &pos,
                            ArrayRef<int> stageOf) {
  int n = int(seq.size());
  for (int i = 0; i < n; ++i)
    for (Value r : seq[i]->getResults())
      for (Operation *u : r.getUsers())
        if (auto it = pos.find(u);
            it != pos.end() && stageOf[it->second] > stageOf[i] + 1)
          return u->emitError() << "loom-assign-stages: " << "this op on stage " << stageOf[it->second]
                         << " uses a value made on stage " << stageOf[i]
                         << " by '" << seq[i]->getName() << "' ('"
                         << nameOf(seq[i])
                         << "'): stage boundaries must cut only values "
                            "used by the next stage";
  return success();
}

/// Ops on weights alone follow their first staged user.
void followFirstUser(ArrayRef<Operation *> floating) {
  for (Operation *op : llvm::reverse(floating)) {
    IntegerAttr stage;
    for (Operation *u : op->getUsers())
      if (auto s = u->getAttrOfType<IntegerAttr>(LoomDialect::kStageAttrName))
        if (!stage || s.getInt() < stage.getInt())
          stage = s;
    if (stage)
      op->setAttr(LoomDialect::kStageAttrName, stage);
  }
}

struct AssignStagesPass : loom::impl::LoomAssignStagesBase<AssignStagesPass> {
  using LoomAssignStagesBase::LoomAssignStagesBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Without stages asked for, the stages loom-plan-pipeline chose (it
    // annotated the model's ops; the ops added since, the loss's, continue
    // the last stage), else nothing to do.
    if (stages == 1 && boundaries.empty()) {
      auto chosen = module->getAttrOfType<DictionaryAttr>(
          LoomDialect::kPipelinePlanAttrName);
      int64_t planned =
          chosen ? chosen.getAs<IntegerAttr>("stages").getInt() : 1;
      if (planned <= 1)
        return;
      stages = static_cast<unsigned>(planned);
    }
    FailureOr<func::FuncOp> fn = lookupFunction(module, function, getArgument());
    if (failed(fn) || failed(verifySingleBlock(*fn, getArgument())))
      return signalPassFailure();
    if (failed(assign(*fn)))
      return signalPassFailure();
  }

  LogicalResult assign(func::FuncOp fn);
};

LogicalResult AssignStagesPass::assign(func::FuncOp fn) {
  Block &body = fn.getBody().front();
  auto fail = [&](Operation *at) {
    return (at ? at->emitError() : fn.emitError()) << getArgument() << ": ";
  };
  if (stages < 1)
    return fail(nullptr) << "stages must be >= 1";
  // The sequence: ops that read activations (data or what data made).
  llvm::DenseSet<Value> varying;
  for (BlockArgument a : body.getArguments())
    if (!fn.getArgAttr(a.getArgNumber(), LoomDialect::kParamAttrName))
      varying.insert(a);
  SmallVector<Operation *> seq;
  DenseMap<Operation *, int> pos;
  SmallVector<Operation *> floating;
  for (Operation &op : body.without_terminator()) {
    if (op.hasTrait<OpTrait::ConstantLike>())
      continue;
    bool varies = llvm::any_of(op.getOperands(),
                               [&](Value v) { return varying.contains(v); });
    if (!varies) {
      floating.push_back(&op);
      continue;
    }
    for (Value r : op.getResults())
      varying.insert(r);
    pos[&op] = int(seq.size());
    seq.push_back(&op);
  }
  int n = int(seq.size());
  // reach[c]: the last position that uses a value made before c.
  std::vector<int> reach(n + 1, -1);
  {
    std::vector<int> lastUse(n, -1);
    for (int i = 0; i < n; ++i)
      for (Value r : seq[i]->getResults())
        for (Operation *u : r.getUsers())
          if (auto it = pos.find(u); it != pos.end())
            lastUse[i] = std::max(lastUse[i], it->second);
    int running = -1;
    for (int c = 1; c <= n; ++c) {
      running = std::max(running, lastUse[c - 1]);
      reach[c] = running;
    }
  }
  std::vector<int> stageOf(n, 0);
  int S = int(stages);
  bool annotated = llvm::any_of(seq, [](Operation *op) {
    return op->hasAttr(LoomDialect::kStageAttrName);
  });
  if (annotated) {
    // The user's stages; an op without one continues the previous op's.
    int current = 0;
    for (int i = 0; i < n; ++i) {
      if (auto s = seq[i]->getAttrOfType<IntegerAttr>(
              LoomDialect::kStageAttrName)) {
        if (s.getInt() < current)
          return fail(seq[i]) << "loom.stage " << s.getInt()
                              << " comes after an op of stage " << current
                              << "; stages must not decrease in program order";
        current = int(s.getInt());
      }
      stageOf[i] = current;
    }
    if (current + 1 != S)
      return fail(nullptr) << "the loom.stage annotations name "
                           << current + 1 << " stages, the pipeline has "
                           << S;
  } else if (!boundaries.empty()) {
    if (int(boundaries.size()) != S - 1)
      return fail(nullptr) << boundaries.size()
                           << " stage boundaries make " << boundaries.size() + 1
                           << " stages, the pipeline has " << S;
    int at = 0;
    for (auto [k, name] : llvm::enumerate(boundaries)) {
      int found = -1;
      for (int i = at; i < n && found < 0; ++i)
        if (nameOf(seq[i]) == name)
          found = i;
      if (found < 0) {
        bool exists = llvm::any_of(
            seq, [&, name = name](Operation *op) { return nameOf(op) == name; });
        return fail(nullptr)
               << "stage boundary '" << name << "' "
               << (exists ? "comes before the previous boundary"
                          : "names no op of the model that reads activations");
      }
      if (found == 0)
        return fail(seq[0]) << "stage boundary '" << name
                            << "' is the first op: stage 0 would be empty";
      for (int i = found; i < n; ++i)
        stageOf[i] = int(k) + 1;
      at = found + 1;
    }
  } else if (S > 1) {
    // Balanced valid cuts. best[k][j]: the least largest stage over the
    // first k stages covering [0, j) with a cut at j.
    std::vector<double> prefix(n + 1, 0);
    for (int i = 0; i < n; ++i)
      prefix[i + 1] = prefix[i] + workOf(seq[i]);
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<std::vector<double>> best(S + 1, std::vector<double>(n + 1, inf));
    std::vector<std::vector<int>> from(S + 1, std::vector<int>(n + 1, -1));
    best[0][0] = 0;
    for (int k = 1; k <= S; ++k)
      for (int j = 1; j <= n; ++j)
        for (int i = k - 1; i < j; ++i) {
          if (best[k - 1][i] == inf)
            continue;
          // Values made before the cut at i must be used before j.
          if (i > 0 && reach[i] >= j)
            continue;
          if (k == S && j != n)
            continue;
          double v = std::max(best[k - 1][i], prefix[j] - prefix[i]);
          if (v < best[k][j]) {
            best[k][j] = v;
            from[k][j] = i;
          }
        }
    if (best[S][n] == inf) {
      return fail(nullptr)
             << "cannot cut the model into " << S << " pipeline stages: it has "
             << n << " ops that read activations and no " << S - 1
             << " places where every value crosses at most one boundary "
                "(fewer layers than stages?); use fewer stages";
    }
    for (int k = S, j = n; k > 0; --k) {
      int i = from[k][j];
      for (int x = i; x < j; ++x)
        stageOf[x] = k - 1;
      j = i;
    }
  }
  if (failed(checkAdjacent(seq, pos, stageOf)))
    return failure();
  Builder b(&getContext());
  for (int i = 0; i < n; ++i)
    seq[i]->setAttr(LoomDialect::kStageAttrName, b.getI64IntegerAttr(stageOf[i]));
  followFirstUser(floating);
  return success();
}

} // namespace
