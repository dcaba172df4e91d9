//===- Autocast.cpp - Mixed precision with fp32 master weights ------------===//
//
// Rewrites an f32 model function so that it computes in bf16 or f16 while
// its parameters (the master weights) and everything the optimizer sees stay
// f32, following PyTorch 1.13's autocast (aten/src/ATen/autocast_mode.cpp):
//
//   * matrix products (dot_general, conv) take their operands in the low
//     type and produce it (linalg accumulates them in f32, as oneDNN and
//     cuBLAS do);
//   * losses (cross_entropy, nll_loss, mse_loss) compute in f32;
//   * softmax, log_softmax and normalizations compute in f32 and round their
//     output to the low type (PyTorch's CPU kernels keep these statistics
//     in float internally);
//   * every other op runs in the type of its operands: mixed low/f32
//     operands promote to f32, except that rank-0 or splat constants take the
//     other operand's type (PyTorch does not promote on scalars) and a bias
//     parameter added to a product's result joins it (PyTorch's linear and
//     addmm add the bias in the low type).
//
// Casts are ordinary loom.cast ops inserted before autodiff, so gradients
// flow back through them (a weight's gradient is cast back to f32) and the
// planner prices every low-precision copy and activation.
//
//===----------------------------------------------------------------------===//

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Dialect/Loom/Utils/Utils.h"
#include "loom/Support/Debug.h"
#include "loom/Training/Passes.h"

#define DEBUG_TYPE "loom-autocast"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMAUTOCAST
#include "loom/Training/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

RankedTensorType tensorOf(Value v) {
  return dyn_cast<RankedTensorType>(v.getType());
}

Type elementOf(Value v) {
  RankedTensorType t = tensorOf(v);
  return t ? t.getElementType() : Type();
}

bool isFloat(Value v) { return isa_and_nonnull<FloatType>(elementOf(v)); }

/// Ops that only move data: a value keeps its origin through them.
Value throughShapeOps(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<ReshapeOp, BroadcastOp, TransposeOp, CastOp,
             ShardingConstraintOp>(def))
      break;
    v = def->getOperand(0);
  }
  return v;
}

enum class Policy { Low, F32, F32Inside, Follow };

Policy policyOf(Operation *op) {
  if (isa<DotGeneralOp, ConvOp>(op))
    return Policy::Low;
  if (isa<CrossEntropyOp, NllLossOp, MseLossOp>(op))
    return Policy::F32;
  if (isa<SoftmaxOp, LogSoftmaxOp, LayerNormOp, BatchNormInferenceOp,
          BatchNormTrainingOp>(op))
    return Policy::F32Inside;
  return Policy::Follow;
}

class Autocaster {
public:
  Autocaster(func::FuncOp fn, FloatType low, StringRef pass)
      : fn(fn), low(low), f32(Float32Type::get(fn.getContext())), pass(pass),
        b(fn.getContext()) {}

  LogicalResult run() {
    if (failed(check()))
      return failure();
    Block &body = fn.getBody().front();
    for (Operation &op : llvm::make_early_inc_range(body.without_terminator()))
      rewrite(&op);
    restoreResults(cast<func::ReturnOp>(body.getTerminator()));
    LLVM_DEBUG(llvm::dbgs() << pass << ": " << casts << " casts to or from "
                            << low << "\n");
    return success();
  }

private:
  /// Only an f32 model has master weights to keep.
  LogicalResult check() {
    if (fn.isExternal() || !fn.getBody().hasOneBlock())
      return fn.emitError() << pass << ": @" << fn.getSymName()
                            << " needs a body of one block";
    for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i) {
      ParameterOp param = boundParameter(fn, i);
      if (!param || !param.getTrainable())
        continue;
      Type element = param.getType().getElementType();
      if (!element.isF32())
        return fn.emitError()
               << pass << ": trainable parameter @" << param.getSymName()
               << " is " << element << "; mixed precision keeps f32 master "
               << "weights of an f32 model (export the model in f32, or "
               << "leave --precision out to train it in " << element
               << " as it is)";
    }
    return success();
  }

  /// Casts `v` to element type `to` before `user`, in `user`'s stage.
  Value castBefore(Operation *user, Value v, Type to) {
    RankedTensorType type = tensorOf(v);
    if (!type || type.getElementType() == to)
      return v;
    b.setInsertionPoint(user);
    auto c = CastOp::create(b, user->getLoc(), type.clone(to), v);
    inherit(c, user);
    ++casts;
    return c;
  }

  /// Pipeline stage and remat segment of the op a cast serves.
  static void inherit(Operation *cast, Operation *from) {
    for (StringRef name :
         {LoomDialect::kStageAttrName, LoomDialect::kRematAttrName})
      if (Attribute a = from->getAttr(name))
        cast->setAttr(name, a);
  }

  void castOperands(Operation *op, Type to) {
    for (OpOperand &operand : op->getOpOperands())
      if (isFloat(operand.get()) && elementOf(operand.get()) != to)
        operand.set(castBefore(op, operand.get(), to));
  }

  /// Result types follow the operands' new type (f32 results only: integer
  /// and boolean results, and other float types, are the op's own).
  void retypeResults(Operation *op, Type to) {
    for (Value r : op->getResults())
      if (RankedTensorType t = tensorOf(r); t && t.getElementType() == f32)
        r.setType(t.clone(to));
  }

  /// Rank-0 values and splat constants do not promote (PyTorch's scalars).
  static bool isScalarLike(Value v) {
    Value origin = throughShapeOps(v);
    if (tensorOf(origin) && tensorOf(origin).getRank() == 0)
      return true;
    auto c = origin.getDefiningOp<ConstantOp>();
    auto dense = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : nullptr;
    return dense && dense.isSplat();
  }

  bool isParameter(Value v) {
    auto arg = dyn_cast<BlockArgument>(throughShapeOps(v));
    return arg && arg.getOwner()->getParentOp() == fn &&
           boundParameter(fn, arg.getArgNumber());
  }

  static bool isProduct(Value v) {
    return isa_and_nonnull<DotGeneralOp, ConvOp>(
        throughShapeOps(v).getDefiningOp());
  }

  /// The type an op whose operands mix `low` and f32 computes in.
  Type promoted(Operation *op) {
    SmallVector<Value> lows, wides;
    for (Value v : op->getOperands())
      if (isFloat(v))
        (elementOf(v) == low ? lows : wides).push_back(v);
    if (llvm::all_of(wides, isScalarLike))
      return low;
    // product + bias: PyTorch's linear adds the bias in the low type.
    if (isa<AddOp, SubOp>(op) && lows.size() == 1 && wides.size() == 1 &&
        isProduct(lows[0]) && isParameter(wides[0]))
      return low;
    return f32;
  }

  void rewrite(Operation *op) {
    if (isa<CastOp, ConstantOp>(op))
      return;
    bool anyLow = false, anyF32 = false;
    for (Value v : op->getOperands()) {
      anyLow |= elementOf(v) == low;
      anyF32 |= elementOf(v) == f32;
    }
    switch (policyOf(op)) {
    case Policy::Low:
      castOperands(op, low);
      retypeResults(op, low);
      return;
    case Policy::F32:
      castOperands(op, f32);
      return;
    case Policy::F32Inside: {
      if (!anyLow)
        return;
      castOperands(op, f32);
      // The normalized output (result 0) rounds back; statistics results
      // stay f32.
      Value out = op->getResult(0);
      b.setInsertionPointAfter(op);
      auto c = CastOp::create(b, op->getLoc(), tensorOf(out).clone(low), out);
      inherit(c, op);
      ++casts;
      out.replaceAllUsesExcept(c, c);
      return;
    }
    case Policy::Follow:
      break;
    }
    if (auto barrier = dyn_cast<OptimizationBarrierOp>(op)) {
      for (auto [in, out] : llvm::zip(op->getOperands(), op->getResults()))
        out.setType(in.getType());
      return;
    }
    if (!anyLow)
      return;
    Type to = anyF32 ? promoted(op) : Type(low);
    castOperands(op, to);
    retypeResults(op, to);
  }

  /// The function keeps its signature: outputs computed in the low type are
  /// cast back.
  void restoreResults(func::ReturnOp ret) {
    for (auto [operand, type] :
         llvm::zip(ret->getOpOperands(), fn.getResultTypes())) {
      Type want = cast<RankedTensorType>(type).getElementType();
      if (elementOf(operand.get()) != want)
        operand.set(castBefore(ret, operand.get(), want));
    }
  }

  func::FuncOp fn;
  FloatType low, f32;
  StringRef pass;
  OpBuilder b;
  unsigned casts = 0;
};

struct AutocastPass : loom::impl::LoomAutocastBase<AutocastPass> {
  using LoomAutocastBase::LoomAutocastBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    FloatType low;
    if (precision == "bf16")
      low = BFloat16Type::get(ctx);
    else if (precision == "fp16")
      low = Float16Type::get(ctx);
    else if (precision == "fp32")
      return; // nothing to do
    else {
      module.emitError() << getArgument() << ": unknown precision '"
                         << precision << "' (expected bf16, fp16 or fp32)";
      return signalPassFailure();
    }
    FailureOr<func::FuncOp> fn =
        lookupFunction(module, function, getArgument());
    if (failed(fn) || failed(Autocaster(*fn, low, getArgument()).run()))
      return signalPassFailure();
  }
};

} // namespace
