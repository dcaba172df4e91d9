//===- Strategies.cpp - The parallelism presets users know, as shardings --===//
//
// A strategy only annotates the training step's arguments (data,
// parameters, optimizer state); propagation and partitioning do the rest:
//
//   dp     data split on the batch dimension over the data-parallel axis
//   tp     Megatron tensor parallelism over the tensor-parallel axis: weight
//          pairs found in the graph, the first split by output (column),
//          the second by input (row), so each pair needs one all-reduce
//   dp-tp  both
//   zero1, zero2  dp (+ tp when the mesh has that axis), optimizer state
//          also split over dp: gradients are reduce-scattered into it and
//          updated parameters all-gathered. (In a functional step both
//          stages give the same program: gradient buffers are never kept.)
//   zero3  zero2 with the parameters split over dp as well: gathered on use
//
// The model's own loom.sharding hints on ops and results are dropped first.
//
//===----------------------------------------------------------------------===//

#include "loom/Dialect/Loom/Utils/Utils.h"
#include "loom/Sharding/Propagation.h"
#include "loom/Sharding/FactorSharding.h"
#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Sharding/Passes.h"
#include "loom/Sharding/Strategies.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/ScopeExit.h"
#include "loom/Support/Debug.h"

#define DEBUG_TYPE "loom-apply-strategy"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMAPPLYSTRATEGY
#include "loom/Sharding/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

enum class ArgKind { Data, Weight, State, Buffer };

struct Classified {
  SmallVector<ArgKind> kinds;
  /// For state arguments: the argument of the weight they belong to.
  SmallVector<int> owner;
};

Classified classify(func::FuncOp fn) {
  Classified c;
  c.owner = loom::optimizerStateOwners(fn);
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    ParameterOp p = loom::boundParameter(fn, i);
    c.kinds.push_back(!p                ? ArgKind::Data
                      : p.getTrainable() ? ArgKind::Weight
                      : c.owner[i] >= 0  ? ArgKind::State
                                         : ArgKind::Buffer);
  }
  return c;
}

ShardingAttr withAxisOn(ShardingAttr base, MeshOp mesh, int64_t dim,
                        StringRef axis) {
  SmallVector<SmallVector<StringRef>> dims;
  for (int64_t d = 0; d < base.getRank(); ++d) {
    dims.push_back(base.getDimAxes(d));
    if (d == dim)
      dims.back().push_back(axis);
  }
  return ShardingAttr::get(mesh.getContext(), mesh.getSymName(), dims);
}

bool usesAxis(ShardingAttr s, StringRef axis) {
  for (int64_t d = 0; d < s.getRank(); ++d)
    if (llvm::is_contained(s.getDimAxes(d), axis))
      return true;
  return false;
}

/// `v` before any casts (autocast's 16-bit copy of a weight reads the
/// weight elementwise: its dimensions are the weight's).
Value skipCasts(Value v) {
  while (auto c = v.getDefiningOp<CastOp>())
    v = c.getInput();
  return v;
}

/// The weight argument a dot operand reads (directly or transposed, through
/// casts), or -1.
int weightOperand(Value v, const Classified &c) {
  v = skipCasts(v);
  if (auto t = v.getDefiningOp<TransposeOp>())
    v = skipCasts(t.getInput());
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || c.kinds[arg.getArgNumber()] != ArgKind::Weight)
    return -1;
  return arg.getArgNumber();
}

/// Megatron pairs, found by propagation: splitting a weight's output
/// dimension must end in another weight's contracting dimension.
DenseMap<unsigned, ShardingAttr> tensorParallel(func::FuncOp step,
                                                MeshOp mesh, StringRef tp,
                                                const Classified &c) {
  DenseMap<unsigned, ShardingAttr> assigned;
  int64_t tpSize = mesh.getAxis(tp).getSize();
  // Search on the forward pass alone: a copy of the step that only returns
  // the loss, with dead code removed, so that gradients and optimizer
  // updates do not carry splits around.
  OpBuilder builder(step);
  auto fn = cast<func::FuncOp>(builder.clone(*step));
  auto cleanup = llvm::make_scope_exit([&] { fn.erase(); });
  {
    auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
    OpBuilder b(ret);
    func::ReturnOp::create(b, ret.getLoc(), ret.getOperand(0));
    ret.erase();
    SmallVector<Operation *> ops;
    for (Operation &op : fn.getBody().front().without_terminator())
      ops.push_back(&op);
    for (Operation *op : llvm::reverse(ops))
      if (op->use_empty())
        op->erase();
  }
  // Inputs are whole; only weights are free to be split.
  DenseMap<Value, ShardingAttr> fixedInputs;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (c.kinds[i] != ArgKind::Weight)
      fixedInputs[fn.getArgument(i)] = replicated(
          mesh, cast<RankedTensorType>(fn.getArgumentTypes()[i]).getRank());
  // The forward pass: what the loss depends on.
  DenseSet<Operation *> forward = loom::lossAncestors(fn);
  struct WeightDot {
    DotGeneralOp dot;
    int weight;
    unsigned operand; // 0: lhs, 1: rhs
  };
  SmallVector<WeightDot> dots;
  for (Operation &op : fn.getBody().front())
    if (auto dot = dyn_cast<DotGeneralOp>(op); dot && forward.contains(dot))
      for (unsigned k = 0; k < 2; ++k) {
        int w = weightOperand(dot->getOperand(k), c);
        if (w >= 0 && cast<RankedTensorType>(fn.getArgumentTypes()[w]).getRank() == 2)
          dots.push_back({dot, w, k});
      }
  auto contracting = [](WeightDot d) {
    return d.operand == 0 ? d.dot.getLhsContractingDims()
                          : d.dot.getRhsContractingDims();
  };
  // The weight's dimension a dot operand dimension reads (through one
  // transpose at most).
  auto weightDim = [&](WeightDot d, int64_t operandDim) {
    Value v = skipCasts(d.dot->getOperand(d.operand));
    if (auto t = v.getDefiningOp<TransposeOp>())
      return static_cast<int64_t>(t.getPermutation()[operandDim]);
    return operandDim;
  };
  for (const WeightDot &first : dots) {
    if (assigned.count(first.weight))
      continue;
    ArrayRef<int64_t> contract = contracting(first);
    if (contract.size() != 1)
      continue;
    int64_t freeOperandDim = 1 - contract[0];
    int64_t freeDim = weightDim(first, freeOperandDim);
    auto wType = cast<RankedTensorType>(fn.getArgumentTypes()[first.weight]);
    if (wType.getDimSize(freeDim) % tpSize != 0)
      continue;
    DenseMap<Value, ShardingAttr> seeds = fixedInputs;
    for (auto &[arg, s] : assigned)
      seeds[fn.getArgument(arg)] = s;
    ShardingAttr column =
        withAxisOn(replicated(mesh, 2), mesh, freeDim, tp);
    seeds[fn.getArgument(first.weight)] = column;
    PropagationResult r = propagate(fn, mesh, seeds, /*freeArguments=*/true);
    // A second weight contracted over the split?
    bool paired = false;
    for (const WeightDot &second : dots) {
      if (second.weight == first.weight)
        continue;
      ArrayRef<int64_t> sc = contracting(second);
      if (sc.size() != 1)
        continue;
      ShardingAttr s = r.shardings.lookup(fn.getArgument(second.weight));
      if (s && llvm::is_contained(s.getDimAxes(weightDim(second, sc[0])), tp))
        paired = true;
    }
    // Megatron pairs meet at the second weight's contraction and nowhere
    // else: a split that reaches any other reduction (a normalization after
    // a residual connection, a loss) is not one.
    for (Operation &op : fn.getBody().front()) {
      bool weightDot = false;
      if (auto dot = dyn_cast<DotGeneralOp>(op))
        weightDot = weightOperand(dot.getLhs(), c) >= 0 ||
                    weightOperand(dot.getRhs(), c) >= 0;
      SmallVector<ShardingAttr> in;
      for (Value o : op.getOperands())
        in.push_back(r.shardings.lookup(o));
      bool passesOn = !linearPartial(&op, in).empty();
      for (Value res : op.getResults()) {
        ShardingAttr sr = r.shardings.lookup(res);
        if (sr && sr.isPartial() && !weightDot && !passesOn)
          paired = false;
      }
    }
    LLVM_DEBUG(llvm::dbgs() << "tp: splitting " << argumentName(fn, first.weight)
                            << " by columns makes a Megatron pair: "
                            << (paired ? "yes" : "no") << "\n");
    if (!paired)
      continue;
    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
      if (c.kinds[i] != ArgKind::Weight || assigned.count(i))
        continue;
      ShardingAttr s = r.shardings.lookup(fn.getArgument(i));
      if (s && usesAxis(s, tp) && !s.isPartial())
        assigned[i] = s;
    }
  }
  return assigned;
}

} // namespace

bool mlir::loom::isPlannedPreset(StringRef strategy) {
  return llvm::is_contained({"dp", "tp", "dp-tp", "zero1", "zero2", "zero3",
                             "replicated"},
                            strategy);
}

LogicalResult mlir::loom::applyStrategy(func::FuncOp fn, MeshOp mesh,
                                        const StrategyOptions &options) {
  StringRef strategy = options.strategy;
  bool dp = strategy == "dp" || strategy == "dp-tp" ||
            strategy.starts_with("zero");
  bool tp = strategy == "tp" || strategy == "dp-tp";
  bool zero = strategy.starts_with("zero");
  if (!dp && !tp && strategy != "replicated")
    return fn.emitError() << "unknown strategy '" << strategy
                          << "' (expected dp, tp, dp-tp, zero1, zero2, "
                             "zero3 or replicated)";
  if (zero && strategy != "zero1" && strategy != "zero2" &&
      strategy != "zero3")
    return fn.emitError() << "unknown strategy '" << strategy << "'";
  auto needAxis = [&](StringRef axis) -> LogicalResult {
    MeshAxisAttr a = mesh.getAxis(axis);
    if (!a)
      return fn.emitError() << "strategy '" << strategy << "' needs a mesh axis \""
                            << axis << "\"; mesh @" << mesh.getSymName()
                            << " has none";
    return success();
  };
  if (dp && failed(needAxis(options.dpAxis)))
    return failure();
  if (tp && failed(needAxis(options.tpAxis)))
    return failure();
  // ZeRO also uses tensor parallelism when the mesh has the axis.
  if (zero && mesh.getAxis(options.tpAxis) &&
      mesh.getAxis(options.tpAxis).getSize() > 1)
    tp = true;

  // A strategy replaces the model's own sharding hints on ops and results
  // (explicit loom.sharding_constraint ops stay: they are requirements).
  loom::dropShardingHints(fn);
  for (unsigned i = 0; i < fn.getNumResults(); ++i)
    fn.removeResultAttr(
        i, StringAttr::get(fn.getContext(), LoomDialect::kShardingAttrName));

  Classified c = classify(fn);
  MLIRContext *ctx = fn.getContext();
  SmallVector<ShardingAttr> shardings;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    shardings.push_back(replicated(
        mesh, cast<RankedTensorType>(fn.getArgumentTypes()[i]).getRank()));

  if (tp) {
    DenseMap<unsigned, ShardingAttr> t =
        tensorParallel(fn, mesh, options.tpAxis, c);
    for (auto &[i, s] : t)
      shardings[i] = s;
  }
  int64_t dpSize = dp ? mesh.getAxis(options.dpAxis).getSize() : 1;
  if (dp) {
    // The batch dimension: 0, or 1 behind the micro-batch dimension.
    int64_t batchDim =
        fn->hasAttr(LoomDialect::kMicroBatchesAttrName) ? 1 : 0;
    // The batch size: the most common size of that dimension among the
    // data inputs (the first one's on a tie). Inputs without it (an
    // attention mask, a lookup table) stay whole.
    llvm::MapVector<int64_t, int> sizes;
    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
      auto t = cast<RankedTensorType>(fn.getArgumentTypes()[i]);
      if (c.kinds[i] == ArgKind::Data && t.getRank() > batchDim)
        ++sizes[t.getDimSize(batchDim)];
    }
    int64_t batch = -1;
    int best = 0;
    for (auto &[size, count] : sizes)
      if (count > best) {
        batch = size;
        best = count;
      }
    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
      if (c.kinds[i] != ArgKind::Data)
        continue;
      auto t = cast<RankedTensorType>(fn.getArgumentTypes()[i]);
      if (t.getRank() <= batchDim || t.getDimSize(batchDim) != batch)
        continue;
      if (t.getDimSize(batchDim) % dpSize != 0)
        return fn.emitError()
               << "data-parallel over \"" << options.dpAxis << "\" ("
               << dpSize << " devices) needs a batch divisible by "
               << dpSize << ", but input '"
               << loom::argumentName(fn, i) << "' has "
               << t.getDimSize(batchDim);
      shardings[i] = withAxisOn(shardings[i], mesh, batchDim, options.dpAxis);
    }
  }
  // Split a tensor further over dp on its first dimension that allows it.
  auto overDp = [&](unsigned i) {
    ShardingAttr s = shardings[i];
    if (usesAxis(s, options.dpAxis))
      return s;
    auto t = cast<RankedTensorType>(fn.getArgumentTypes()[i]);
    for (int64_t d = 0; d < t.getRank(); ++d) {
      int64_t n = dpSize;
      for (StringRef a : s.getDimAxes(d))
        n *= mesh.getAxis(a).getSize();
      if (t.getDimSize(d) % n == 0)
        return withAxisOn(s, mesh, d, options.dpAxis);
    }
    return s; // too small to split: replicated over dp
  };
  if (strategy == "zero3")
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      if (c.kinds[i] == ArgKind::Weight)
        shardings[i] = overDp(i);
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (c.kinds[i] == ArgKind::State) {
      shardings[i] = shardings[c.owner[i]];
      if (zero)
        shardings[i] = overDp(i);
    }
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    fn.setArgAttr(i, LoomDialect::kShardingAttrName, shardings[i]);
  LLVM_DEBUG({
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      llvm::dbgs() << strategy << ": " << argumentName(fn, i) << " "
                   << shardings[i] << "\n";
  });
  (void)ctx;
  return success();
}

namespace {
struct ApplyStrategyPass
    : loom::impl::LoomApplyStrategyBase<ApplyStrategyPass> {
  using LoomApplyStrategyBase::LoomApplyStrategyBase;
  void runOnOperation() override {
    FailureOr<ShardedFunction> step =
        lookupShardedFunction(getOperation(), function, getArgument());
    if (failed(step))
      return signalPassFailure();
    StrategyOptions options;
    options.strategy = strategy;
    options.dpAxis = dpAxis;
    options.tpAxis = tpAxis;
    if (failed(applyStrategy(step->fn, step->mesh, options)))
      signalPassFailure();
  }
};
} // namespace
