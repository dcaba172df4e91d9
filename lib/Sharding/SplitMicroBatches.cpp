//===- SplitMicroBatches.cpp - The loss function as one micro-batch -------===//
//
// `--micro-batches K` splits the model's batch B into K micro-batches of
// B / K. The loss function becomes the template of one micro-batch by the
// partitioner's own rewrite: the batch of the data inputs is split over a
// temporary one-axis mesh of K "devices" (as the dp strategy splits it),
// shardings propagate, and loom-partition's rewrite gives every op its
// local shape (reshapes, broadcasts and means adapted as under data
// parallelism). What data parallelism then communicates is what the
// micro-batches, run one after the other, cannot: so each collective over
// the temporary axis is either
//
//   * the all-reduce (sum) that adds the micro-batches' shares of the loss,
//     when the loss is linear in it: replaced by K times the share, so that
//     the step's average over micro-batches is the whole batch's loss (and
//     its gradients the whole batch's gradients), for mean and sum losses
//     alike;
//   * an all_slice of a splat constant: the smaller splat;
//   * an all_slice along the first dimension of a data input that is only
//     read so (labels flattened with the sequence): the input is split
//     there, micro-batch m reading its rows [m n/K, (m+1) n/K);
//   * anything else (a statistic over the batch, such as BatchNorm's in
//     training; a gather of batch rows): an error naming the op.
//
// A dropout (its mask drawn by position in the whole tensor) whose input is
// split along its first dimension runs on the micro-batch's rows, tagged
// loom.micro_batch_rows: loom-build-train-step gives micro-batch m the
// whole tensor's mask from element m * rows on, the rows of the mask the
// whole batch gets.
//
// The temporary mesh and the shardings it put on the function are removed;
// the arguments' own shardings are restored. The module gets
// `loom.batch_split = K`: a step's data is then one entry of the model's
// batch (the runtime reads micro-batch m as its rows [m B/K, (m+1) B/K)).
//
//===----------------------------------------------------------------------===//

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Dialect/Loom/Utils/Utils.h"
#include "loom/Sharding/FactorSharding.h"
#include "loom/Sharding/Passes.h"
#include "loom/Sharding/Propagation.h"
#include "loom/Support/Debug.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#define DEBUG_TYPE "loom-split-micro-batches"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMSPLITMICROBATCHES
#include "loom/Sharding/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

constexpr llvm::StringLiteral kAxis = "micro";

/// Values computed from `roots` (forward data flow within `fn`).
llvm::DenseSet<Value> dependents(func::FuncOp fn, ArrayRef<Value> roots) {
  llvm::DenseSet<Value> out(roots.begin(), roots.end());
  for (Operation &op : fn.getBody().front())
    if (llvm::any_of(op.getOperands(),
                     [&](Value v) { return out.contains(v); }))
      for (Value r : op.getResults())
        out.insert(r);
  return out;
}

/// Whether the loss (result #0) is linear in `v`, reached only through
/// sums with values that do not depend on the data, products and
/// quotients by such values, negations, casts and reshapes.
bool lossIsLinearIn(Value v, const llvm::DenseSet<Value> &dataDependent) {
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (isa<func::ReturnOp>(user)) {
      if (use.getOperandNumber() != 0)
        return false;
      continue;
    }
    auto other = [&]() -> Value {
      return user->getOperand(1 - use.getOperandNumber());
    };
    bool ok = false;
    if (isa<AddOp, SubOp>(user))
      ok = !dataDependent.contains(other());
    else if (isa<MulOp>(user))
      ok = !dataDependent.contains(other());
    else if (isa<DivOp>(user))
      ok = use.getOperandNumber() == 0 && !dataDependent.contains(other());
    else if (isa<NegOp, CastOp, ReshapeOp>(user))
      ok = true;
    if (!ok || !lossIsLinearIn(user->getResult(0), dataDependent))
      return false;
  }
  return true;
}

/// The data inputs of `fn` and its batch: the most common leading size
/// among them (the first one's on a tie), as the dp strategy finds it.
struct Batch {
  SmallVector<unsigned> data, batched;
  int64_t size = -1;
};

Batch findBatch(func::FuncOp fn) {
  Batch b;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    if (!fn.getArgAttr(i, LoomDialect::kParamAttrName))
      b.data.push_back(i);
  llvm::MapVector<int64_t, int> sizes;
  for (unsigned i : b.data) {
    auto t = dyn_cast<RankedTensorType>(fn.getArgumentTypes()[i]);
    if (t && t.getRank() > 0)
      ++sizes[t.getDimSize(0)];
  }
  int best = 0;
  for (auto &[size, n] : sizes)
    if (n > best) {
      b.size = size;
      best = n;
    }
  for (unsigned i : b.data) {
    auto t = cast<RankedTensorType>(fn.getArgumentTypes()[i]);
    if (b.size >= 0 && t.getRank() > 0 && t.getDimSize(0) == b.size)
      b.batched.push_back(i);
  }
  return b;
}

/// A data input that does not lead with the batch (labels flattened with
/// the sequence, [B S]) but is only read sliced along its first dimension
/// over the micro-batches is split there itself: micro-batch m reads its
/// rows [m n/K, (m+1) n/K), as the runtime feeds them.
void splitSlicedInputs(func::FuncOp fn, ArrayRef<unsigned> data) {
  for (unsigned i : data) {
    BlockArgument arg = fn.getArgument(i);
    if (arg.use_empty())
      continue;
    Type sliced;
    bool onlySliced = llvm::all_of(arg.getUsers(), [&](Operation *user) {
      auto slice = dyn_cast<AllSliceOp>(user);
      if (!slice || slice.getDim() != 0 ||
          (sliced && slice.getType() != sliced))
        return false;
      sliced = slice.getType();
      return true;
    });
    if (!onlySliced)
      continue;
    for (Operation *user : llvm::make_early_inc_range(arg.getUsers())) {
      user->getResult(0).replaceAllUsesWith(arg);
      user->erase();
    }
    arg.setType(sliced);
  }
  fn.setType(FunctionType::get(fn.getContext(),
                               fn.getBody().front().getArgumentTypes(),
                               fn.getResultTypes()));
}

/// Replaces what a collective over the micro-batch axis did, or names the
/// op that needs the whole batch (an error).
LogicalResult resolveCollectives(func::FuncOp fn, ArrayRef<unsigned> data,
                                 int64_t batch, int64_t count) {
  SmallVector<Value> dataArgs;
  for (unsigned i : data)
    dataArgs.push_back(fn.getArgument(i));
  llvm::DenseSet<Value> dataDependent = dependents(fn, dataArgs);
  SmallVector<Operation *> collectives;
  fn.walk([&](Operation *op) {
    if (isa<CollectiveOpInterface>(op))
      collectives.push_back(op);
  });
  OpBuilder b(fn.getContext());
  for (Operation *op : collectives) {
    b.setInsertionPoint(op);
    if (auto reduce = dyn_cast<AllReduceOp>(op);
        reduce && reduce.getInputs().size() == 1 &&
        reduce.getReduction() == ReductionKind::sum &&
        lossIsLinearIn(reduce.getResult(0), dataDependent)) {
      // The micro-batch's share of the loss, times K: the step averages.
      Value share = reduce.getInputs()[0];
      auto t = cast<RankedTensorType>(share.getType());
      auto scalar = RankedTensorType::get({}, t.getElementType());
      Value k = ConstantOp::create(
          b, reduce.getLoc(),
          DenseElementsAttr::get(
              scalar, FloatAttr::get(t.getElementType(), double(count))));
      reduce.getResult(0).replaceAllUsesWith(
          MulOp::create(b, reduce.getLoc(), share, k));
      reduce.erase();
      continue;
    }
    if (auto slice = dyn_cast<AllSliceOp>(op)) {
      auto cst = slice.getInput().getDefiningOp<ConstantOp>();
      auto dense = cst ? dyn_cast<DenseElementsAttr>(cst.getValue()) : nullptr;
      if (dense && dense.isSplat()) {
        auto type = cast<RankedTensorType>(slice.getType());
        slice.getResult().replaceAllUsesWith(
            ConstantOp::create(b, slice.getLoc(), dense.resizeSplat(type)));
        slice.erase();
        continue;
      }
    }
    // The op whose value needed the whole batch: the collective's user.
    Operation *reason = op;
    for (Operation *user : op->getUsers()) {
      reason = user;
      break;
    }
    InFlightDiagnostic d = reason->emitError()
                           << "--micro-batches " << count << ": ";
    if (isa<DropoutOp>(reason)) {
      d << "this dropout's input is not the micro-batch's rows of the whole "
           "batch (its mask is drawn by position in the whole tensor of "
        << batch << " rows; only a split along the first dimension maps a "
                    "micro-batch to a block of it)";
      return failure();
    }
    d << "'" << reason->getName() << "' needs values of the whole batch of "
      << batch
      << " (a statistic over the batch, such as BatchNorm's in training, or "
         "a loss that is not a sum or mean of per-sample terms): "
         "micro-batches of "
      << batch / count
      << " cannot compute it one at a time (splitting it would need '"
      << op->getName() << "')";
    d.attachNote(op->getLoc())
        << "the collective split micro-batches cannot perform: " << *op;
    return failure();
  }
  return success();
}

struct SplitMicroBatchesPass
    : loom::impl::LoomSplitMicroBatchesBase<SplitMicroBatchesPass> {
  using LoomSplitMicroBatchesBase::LoomSplitMicroBatchesBase;

  void runOnOperation() override {
    int64_t n = count;
    if (failed(resolvePlannedMicroBatches(getOperation(), n, getArgument(),
                                          "count")))
      return signalPassFailure();
    count = n;
    if (count < 1) {
      getOperation().emitError()
          << getArgument() << ": the number of micro-batches must be at "
          << "least 1, got " << int64_t(count.getValue());
      return signalPassFailure();
    }
    if (count == 1)
      return;
    ModuleOp module = getOperation();
    FailureOr<func::FuncOp> found =
        loom::lookupFunction(module, function, getArgument());
    if (failed(found) || failed(split(module, *found)))
      signalPassFailure();
  }

  /// Errors on what the split cannot handle before anything changes.
  LogicalResult check(func::FuncOp fn, const Batch &batch, int64_t count) {
    auto fail = [&](Operation *at) {
      return at->emitError() << "--micro-batches " << count << ": ";
    };
    StringRef name = fn.getSymName();
    if (fn.getNumResults() == 0)
      return fail(fn) << "@" << name << " returns no loss";
    // Shardings inside the function name another mesh; the arguments' are
    // kept (restored afterwards), an op's would be lost.
    Operation *annotated = nullptr;
    fn.walk([&](Operation *op) {
      if (isa<ShardingConstraintOp>(op) ||
          op->hasAttr(LoomDialect::kShardingAttrName))
        annotated = op;
    });
    if (annotated)
      return fail(annotated)
             << "micro-batches cannot split a model with sharding "
                "annotations inside @"
             << name
             << " yet (this op has one); use a strategy (--strategy dp, "
                "tp, auto, ...) instead of the model's annotations";
    if (batch.size < 0)
      return fail(fn) << "@" << name
                      << " has no batched input (no data argument with a "
                         "leading dimension) to split";
    if (batch.size % count != 0)
      return fail(fn) << "the batch of " << batch.size << " (input '"
                      << loom::argumentName(fn, batch.batched.front())
                      << "') does not split into " << count
                      << " equal micro-batches: the model's batch is the "
                         "step's whole batch, so the number of "
                         "micro-batches must divide it";
    return success();
  }

  LogicalResult split(ModuleOp module, func::FuncOp fn) {
    MLIRContext *ctx = module.getContext();
    int64_t count = this->count.getValue();
    StringRef name = fn.getSymName();
    Batch batch = findBatch(fn);
    if (failed(check(fn, batch, count)))
      return failure();

    // The arguments' and results' own shardings, restored afterwards.
    auto shardingName = StringAttr::get(ctx, LoomDialect::kShardingAttrName);
    SmallVector<Attribute> ownArgs, ownResults;
    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
      ownArgs.push_back(fn.getArgAttr(i, shardingName));
      fn.removeArgAttr(i, shardingName);
    }
    for (unsigned i = 0; i < fn.getNumResults(); ++i) {
      ownResults.push_back(fn.getResultAttr(i, shardingName));
      fn.removeResultAttr(i, shardingName);
    }

    // A mesh of `count` micro-batches, the batch split over it.
    std::string meshName = "loom_micro_batches";
    for (int n = 1; module.lookupSymbol(meshName); ++n)
      meshName = "loom_micro_batches_" + std::to_string(n);
    OpBuilder b(ctx);
    b.setInsertionPointToStart(module.getBody());
    auto mesh = MeshOp::create(
        b, module.getLoc(), meshName,
        b.getArrayAttr({MeshAxisAttr::get(ctx, StringAttr::get(ctx, kAxis),
                                          count, nullptr, nullptr)}));
    DenseMap<Value, ShardingAttr> seeds;
    for (unsigned i : batch.batched) {
      auto t = cast<RankedTensorType>(fn.getArgumentTypes()[i]);
      SmallVector<SmallVector<StringRef>> dims(t.getRank());
      dims[0].push_back(kAxis);
      seeds[fn.getArgument(i)] =
          ShardingAttr::get(ctx, mesh.getSymName(), dims);
    }
    PropagationResult plan = propagate(fn, mesh, seeds);
    if (failed(partitionFunction(fn, mesh, plan, /*dropoutOnRows=*/true))) {
      mesh.erase();
      return failure();
    }
    SmallVector<Type> wholeTypes(fn.getArgumentTypes());
    fn = module.lookupSymbol<func::FuncOp>(name);
    splitSlicedInputs(fn, batch.data);
    // The step reads one entry of the whole batch and hands micro-batch m
    // its rows of every data input the micro-batches split; an input
    // without the batch (an attention mask given as data) is read whole
    // by every micro-batch: its name goes into loom.batch_whole_inputs.
    SmallVector<Attribute> wholeInputs;
    for (unsigned i : batch.data)
      if (fn.getArgumentTypes()[i] == wholeTypes[i])
        wholeInputs.push_back(b.getStringAttr(loom::argumentName(fn, i)));
    if (failed(resolveCollectives(fn, batch.data, batch.size, count))) {
      mesh.erase();
      return failure();
    }

    // The template: no trace of the temporary mesh.
    fn->removeAttr(LoomDialect::kPartitionedAttrName);
    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
      fn.removeArgAttr(i, shardingName);
      if (ownArgs[i])
        fn.setArgAttr(i, shardingName, ownArgs[i]);
    }
    for (unsigned i = 0; i < fn.getNumResults(); ++i) {
      fn.removeResultAttr(i, shardingName);
      if (ownResults[i])
        fn.setResultAttr(i, shardingName, ownResults[i]);
    }
    mesh.erase();
    module->setAttr(LoomDialect::kBatchSplitAttrName,
                    b.getI64IntegerAttr(count));
    if (!wholeInputs.empty())
      module->setAttr(LoomDialect::kBatchWholeInputsAttrName,
                      b.getArrayAttr(wholeInputs));
    LLVM_DEBUG(llvm::dbgs() << getArgument() << ": @" << name << " batch "
                            << batch.size << " as " << count
                            << " micro-batches of " << batch.size / count
                            << "\n");
    return success();
  }
};

} // namespace
