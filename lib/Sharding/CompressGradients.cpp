//===- CompressGradients.cpp - Reduce weight gradients in 16 bits ---------===//
//
// Horovod's Compression.fp16 compresses a gradient before its all-reduce
// and decompresses it after. loom-build-train-step writes the compression as
// a cast of each weight gradient to the 16-bit type and back, and marks the
// narrowing cast; the partitioner reduces a gradient where it is made, so
// the reduction sits above the casts, in 32 bits. Casting first and
// reducing the 16-bit values is the compression itself: each device's
// partial sum rounds to 16 bits, and the sum is taken in 16 bits.
//
// Top-k with error feedback (Lin et al., "Deep Gradient Compression"; Stich
// et al., "Sparsified SGD with Memory") selects on each device's partial
// gradient, so it is written here, after partitioning: the step marks each
// weight gradient with an optimization barrier, in front of which the
// partitioner reduces it; the reduction becomes
//
//   acc      = partial + residual            (this device's error feedback)
//   idx      = top_k_indices(acc, k)          k = ceil(RATIO * elements), i32
//   sent     = acc[idx]
//   all      = scatter_add(all_gather(sent), all_gather(idx))
//   residual = acc - scatter_add(sent, idx)   (what was not sent)
//
// and a reduce-scatter keeps this device's block of `all`. The residual is
// state of each device: a parameter `<weight>.error_feedback` whose global
// tensor stacks every device's block along dimension 0 (split over every
// mesh axis), carried from step to step and checkpointed like optimizer
// state.
//
//===----------------------------------------------------------------------===//

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cmath>
#include "loom/Sharding/Passes.h"
#include "loom/Sharding/TopKExchange.h"
#include "loom/Support/Debug.h"

#define DEBUG_TYPE "loom-compress-gradients"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMCOMPRESSGRADIENTS
#include "loom/Sharding/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

bool isSumReduction(Operation *op) {
  if (auto ar = dyn_cast<AllReduceOp>(op))
    return ar.getInputs().size() == 1 &&
           ar.getReduction() == ReductionKind::sum;
  if (auto rs = dyn_cast<ReduceScatterOp>(op))
    return rs.getReduction() == ReductionKind::sum;
  return false;
}

/// The sum reduction `narrow` can move before: the reduction of one value
/// whose result reaches `narrow` only through single-use relayouts.
/// Appends the relayouts (nearest the collective first).
Operation *reductionAbove(CastOp narrow, SmallVectorImpl<Operation *> &path) {
  Value v = narrow.getInput();
  SmallVector<Operation *> up;
  while (Operation *def = v.getDefiningOp()) {
    if (!v.hasOneUse())
      return nullptr;
    if (isSumReduction(def)) {
      path.assign(up.rbegin(), up.rend());
      return def;
    }
    if (!isa<TransposeOp, ReshapeOp>(def))
      return nullptr;
    up.push_back(def);
    v = def->getOperand(0);
  }
  return nullptr;
}

/// The sum reduction below the decompressing cast `widen`: the partial sum
/// passed through both casts (they are linear) and the partitioner reduced
/// it after them, in the wide type. Appends the single-use relayouts
/// between `widen` and the reduction.
Operation *reductionBelow(CastOp widen, SmallVectorImpl<Operation *> &path) {
  Value v = widen.getResult();
  while (v.hasOneUse()) {
    Operation *user = *v.getUsers().begin();
    if (isSumReduction(user) && user->getOperand(0) == v)
      return user;
    if (!isa<TransposeOp, ReshapeOp>(user))
      return nullptr;
    path.push_back(user);
    v = user->getResult(0);
  }
  return nullptr;
}

void retype(Value v, Type element) {
  v.setType(cast<RankedTensorType>(v.getType()).clone(element));
}

/// cast(relayouts(reduce(x))) -> relayouts(reduce(cast(x))).
void moveAbove(CastOp narrow, Operation *reduction,
               ArrayRef<Operation *> path) {
  Type low = narrow.getType().getElementType();
  OpBuilder b(reduction);
  Value input = reduction->getOperand(0);
  auto early = CastOp::create(
      b, narrow.getLoc(), cast<RankedTensorType>(input.getType()).clone(low),
      input);
  // Only the marker: the cast now reads the partial sum, so a layout
  // recorded for the reduced value would not describe it.
  early->setAttr(LoomDialect::kGradCompressionAttrName,
                 narrow->getAttr(LoomDialect::kGradCompressionAttrName));
  reduction->setOperand(0, early);
  retype(reduction->getResult(0), low);
  for (Operation *op : path)
    retype(op->getResult(0), low);
  narrow.getResult().replaceAllUsesWith(narrow.getInput());
  narrow.erase();
}

/// reduce(relayouts(widen(n))) -> widen(reduce(relayouts(n))).
void moveWidenBelow(CastOp widen, Operation *reduction,
                    ArrayRef<Operation *> path) {
  Value narrow = widen.getInput();
  Type low = cast<RankedTensorType>(narrow.getType()).getElementType();
  Type wide = widen.getType().getElementType();
  widen.getResult().replaceAllUsesWith(narrow);
  for (Operation *op : path)
    retype(op->getResult(0), low);
  Value reduced = reduction->getResult(0);
  retype(reduced, low);
  OpBuilder b(reduction->getContext());
  b.setInsertionPointAfter(reduction);
  auto late = CastOp::create(
      b, widen.getLoc(), cast<RankedTensorType>(reduced.getType()).clone(wide),
      reduced);
  reduced.replaceAllUsesExcept(late, late);
  widen.erase();
}

/// The sum reduction that produces `v` through relayouts, or null.
Operation *reductionOf(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (isSumReduction(def))
      return def;
    if (!isa<TransposeOp, ReshapeOp>(def))
      return nullptr;
    v = def->getOperand(0);
  }
  return nullptr;
}

class TopK {
public:
  TopK(ModuleOp module, func::FuncOp fn, MeshOp mesh, double ratio)
      : module(module), fn(fn), mesh(mesh), ratio(ratio),
        ctx(module.getContext()) {}

  /// Replaces the reduction in front of `barrier` (if any) with the top-k
  /// exchange; removes the barrier.
  LogicalResult rewrite(OptimizationBarrierOp barrier);
  unsigned exchanged = 0;

private:
  LogicalResult exchange(Operation *reduction, StringRef name,
                         StringRef weight);
  FailureOr<ParameterOp> declareResidual(StringRef name, StringRef weight,
                                         RankedTensorType local);
  ModuleOp module;
  func::FuncOp fn;
  MeshOp mesh;
  double ratio;
  MLIRContext *ctx;
};

/// `<weight>.error_feedback`: zeros, every device's block stacked along
/// dimension 0 (split over every mesh axis, in mesh order).
FailureOr<ParameterOp> TopK::declareResidual(StringRef name,
                                             StringRef weight,
                                             RankedTensorType local) {
  if (Operation *clash = module.lookupSymbol(name))
    return clash->emitError()
           << "loom-compress-gradients: the top-k residual @" << name
           << " would clash with this symbol";
  SmallVector<int64_t> shape(local.getShape());
  shape[0] *= mesh.getNumDevices();
  auto global = local.clone(shape);
  // After the weight and the state it owns.
  Operation *after = nullptr;
  for (auto p : module.getOps<ParameterOp>())
    if (p.getSymName() == weight ||
        (p.getStateOf() && *p.getStateOf() == weight))
      after = p;
  if (!after)
    return fn.emitError() << "loom-compress-gradients: no parameter @"
                          << weight << " for a top-k compressed gradient";
  OpBuilder b(ctx);
  b.setInsertionPointAfter(after);
  Attribute zero = b.getZeroAttr(global.getElementType());
  return ParameterOp::create(b, after->getLoc(), name, global,
                             DenseElementsAttr::get(global, zero),
                             /*trainable=*/false,
                             FlatSymbolRefAttr::get(ctx, weight));
}

/// The sum reductions whose results make `v`: one through relayouts, or
/// several added (a weight used more than once is reduced per use).
void collectReductions(Value v, SmallVectorImpl<Operation *> &out) {
  if (Operation *r = reductionOf(v)) {
    out.push_back(r);
    return;
  }
  if (auto add = v.getDefiningOp<AddOp>()) {
    collectReductions(add.getLhs(), out);
    collectReductions(add.getRhs(), out);
  }
}

LogicalResult TopK::rewrite(OptimizationBarrierOp barrier) {
  Value marked = barrier.getInputs()[0];
  SmallVector<Operation *> reductions;
  collectReductions(marked, reductions);
  auto weight =
      barrier->getAttrOfType<FlatSymbolRefAttr>(LoomDialect::kParamAttrName);
  barrier.getResult(0).replaceAllUsesWith(marked);
  barrier.erase();
  // Nothing is reduced (one device, or a gradient no device splits the
  // batch of): nothing to compress.
  if (reductions.empty())
    return success();
  if (!weight)
    return reductions[0]->emitError()
           << "loom-compress-gradients: a top-k compressed gradient names no "
              "weight (loom.param on its barrier)";
  for (auto [i, reduction] : llvm::enumerate(reductions)) {
    std::string name = (weight.getValue() + ".error_feedback").str();
    if (i > 0)
      name += "." + std::to_string(i);
    if (failed(exchange(reduction, name, weight.getValue())))
      return failure();
  }
  return success();
}

LogicalResult TopK::exchange(Operation *reduction, StringRef name,
                             StringRef weight) {
  Value partial = reduction->getOperand(0);
  auto local = cast<RankedTensorType>(partial.getType());
  if (local.getRank() == 0)
    return success();
  auto axes = reduction->getAttrOfType<ArrayAttr>("axes");
  FlatSymbolRefAttr meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  FailureOr<ParameterOp> decl = declareResidual(name, weight, local);
  if (failed(decl))
    return failure();

  // The residual: an argument and a result of the step.
  SmallVector<SmallVector<StringRef>> dims(local.getRank());
  for (MeshAxisAttr axis : mesh.getAxes().getAsRange<MeshAxisAttr>())
    dims[0].push_back(axis.getName().getValue());
  NamedAttrList attrs;
  attrs.set(LoomDialect::kParamAttrName,
            FlatSymbolRefAttr::get(decl->getSymNameAttr()));
  attrs.set(LoomDialect::kShardingAttrName,
            ShardingAttr::get(ctx, mesh.getSymName(), dims));
  unsigned argIndex = fn.getNumArguments();
  if (failed(fn.insertArgument(argIndex, local, attrs.getDictionary(ctx),
                               decl->getLoc())))
    return failure();
  Value residual = fn.getArgument(argIndex);

  int64_t group = 1;
  for (Attribute a : axes)
    group *= mesh.getAxis(cast<StringAttr>(a).getValue()).getSize();
  // The exchange the planner prices (TopKExchange.h).
  TopKExchange x = TopKExchange::of(local.getNumElements(), group, ratio);
  int64_t n = x.n, k = x.k;
  Type element = local.getElementType();
  auto index = IntegerType::get(ctx, 8 * x.indexBytes);
  auto flatType = RankedTensorType::get({n}, element);
  ImplicitLocOpBuilder b(reduction->getLoc(), reduction);
  IntegerAttr zero = b.getI64IntegerAttr(0);
  Value acc = AddOp::create(b, partial, residual);
  Value flat = ReshapeOp::create(b, flatType, acc);
  Value idx = TopKIndicesOp::create(b, RankedTensorType::get({k}, index), flat,
                                    b.getI64IntegerAttr(k));
  Value sent = GatherOp::create(b, flat, idx, zero);
  Value allIdx = AllGatherOp::create(
      b, RankedTensorType::get({x.gathered()}, index), idx, meshRef, axes, zero);
  Value allSent = AllGatherOp::create(
      b, RankedTensorType::get({x.gathered()}, element), sent, meshRef, axes,
      zero);
  Value sum = ReshapeOp::create(
      b, local, ScatterAddOp::create(b, flatType, allSent, allIdx, zero));
  Value kept = SubOp::create(b, flat,
                             ScatterAddOp::create(b, flatType, sent, idx, zero));
  Value newResidual = ReshapeOp::create(b, local, kept);
  if (auto rs = dyn_cast<ReduceScatterOp>(reduction))
    sum = AllSliceOp::create(b, rs.getType(), sum, meshRef, axes,
                             rs.getDimAttr());
  reduction->getResult(0).replaceAllUsesWith(sum);
  reduction->erase();

  auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
  unsigned resultIndex = fn.getNumResults();
  if (failed(fn.insertResult(resultIndex, local, attrs.getDictionary(ctx))))
    return failure();
  ret->insertOperands(ret->getNumOperands(), newResidual);
  ++exchanged;
  return success();
}

struct CompressGradientsPass
    : loom::impl::LoomCompressGradientsBase<CompressGradientsPass> {
  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      auto mode =
          fn->getAttrOfType<StringAttr>(LoomDialect::kGradCompressionAttrName);
      std::optional<double> ratio =
          mode ? LoomDialect::topKRatio(mode.getValue()) : std::nullopt;
      if (!ratio)
        continue;
      SmallVector<OptimizationBarrierOp> marked;
      fn.walk([&](OptimizationBarrierOp barrier) {
        if (barrier->hasAttr(LoomDialect::kGradCompressionAttrName))
          marked.push_back(barrier);
      });
      auto meshRef =
          fn->getAttrOfType<FlatSymbolRefAttr>(LoomDialect::kPartitionedAttrName);
      MeshOp mesh = meshRef ? SymbolTable::lookupNearestSymbolFrom<MeshOp>(
                                  fn, meshRef)
                            : MeshOp();
      TopK topk(getOperation(), fn, mesh, *ratio);
      for (OptimizationBarrierOp barrier : marked) {
        if (!mesh) {
          barrier.getResult(0).replaceAllUsesWith(barrier.getInputs()[0]);
          barrier.erase();
          continue;
        }
        if (failed(topk.rewrite(barrier)))
          return signalPassFailure();
      }
      LLVM_DEBUG(llvm::dbgs() << "loom-compress-gradients: " << topk.exchanged
                              << " top-k exchanges\n");
    }
    unsigned moved = 0, left = 0;
    // Collected first: rewriting erases casts the walk has not reached.
    SmallVector<CastOp> marked;
    getOperation().walk([&](CastOp narrow) {
      if (narrow->hasAttr(LoomDialect::kGradCompressionAttrName))
        marked.push_back(narrow);
    });
    for (CastOp narrow : marked) {
      SmallVector<Operation *> path;
      if (Operation *reduction = reductionAbove(narrow, path)) {
        moveAbove(narrow, reduction, path);
        ++moved;
        continue;
      }
      path.clear();
      auto widen = narrow->hasOneUse()
                       ? dyn_cast<CastOp>(*narrow->getUsers().begin())
                       : CastOp();
      if (widen) {
        if (Operation *reduction = reductionBelow(widen, path)) {
          moveWidenBelow(widen, reduction, path);
          ++moved;
          continue;
        }
      }
      ++left;
    }
    LLVM_DEBUG(llvm::dbgs() << "loom-compress-gradients: " << moved
                            << " reductions in 16 bits, " << left
                            << " compressed gradients without one\n");
  }
};

} // namespace
