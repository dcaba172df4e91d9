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
//   * softmax, log_softmax and normalizations run in the low type, which
//     their lowering computes in f32 inside, rounding the output once
//     (PyTorch's CPU kernels and Megatron's fused softmax keep these
//     statistics in float; no f32 copy of the attention scores is kept);
//   * every other op runs in the type of its operands: mixed low/f32
//     operands promote to f32, except that rank-0 or splat constants take the
//     other operand's type (PyTorch does not promote on scalars) and a bias
//     parameter added to a product's result joins it (PyTorch's linear and
//     addmm add the bias in the low type).
//
// A model whose trainable weights already are in the low type gets f32
// master weights: each such parameter becomes f32 (its initial value
// converted exactly) and is cast to the low type where the function reads
// it, so the model computes as before while the optimizer updates f32.
//
// Casts are ordinary loom.cast ops inserted before autodiff, so gradients
// flow back through them (a weight's gradient is cast back to f32) and the
// planner prices every low-precision copy and activation.
//
//===----------------------------------------------------------------------===//

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
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

enum class Policy { Low, F32, Follow };

Policy policyOf(Operation *op) {
  if (isa<DotGeneralOp, ConvOp>(op))
    return Policy::Low;
  if (isa<CrossEntropyOp, NllLossOp, MseLossOp>(op))
    return Policy::F32;
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
  /// Trainable weights are f32, or in the low type (then promoted to f32
  /// master weights).
  LogicalResult check() {
    if (fn.isExternal() || !fn.getBody().hasOneBlock())
      return fn.emitError() << pass << ": @" << fn.getSymName()
                            << " needs a body of one block";
    for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i) {
      ParameterOp param = boundParameter(fn, i);
      if (!param || !param.getTrainable())
        continue;
      Type element = param.getType().getElementType();
      if (element == low) {
        if (failed(promote(param, fn.getArgument(i))))
          return failure();
        continue;
      }
      if (!element.isF32())
        return fn.emitError()
               << pass << ": trainable parameter @" << param.getSymName()
               << " is " << element << "; mixed precision in " << low
               << " keeps f32 master weights of an f32 or " << low
               << " model (leave --precision out to train it in " << element
               << " as it is)";
    }
    return success();
  }

  /// The low-type weight `param` (read as `arg`) becomes an f32 master
  /// weight, cast to the low type where the function reads it.
  LogicalResult promote(ParameterOp param, BlockArgument arg) {
    RankedTensorType lowType = param.getType(), wide = lowType.clone(f32);
    if (std::optional<Attribute> init = param.getInitialValue()) {
      FailureOr<Attribute> converted = widen(*init, wide);
      if (failed(converted))
        return param.emitError()
               << pass << ": cannot convert the initial value of @"
               << param.getSymName() << " to f32 master weights (only "
               << "inline or dense_resource values can be)";
      param.setInitialValueAttr(*converted);
    }
    param.setType(wide);
    arg.setType(wide);
    // Cast where the weight is first read: inside its layer, so that
    // repeated layers still repeat (the planner's coarsening).
    Operation *first = nullptr;
    for (Operation *user : arg.getUsers())
      if (!first || user->isBeforeInBlock(first))
        first = user;
    if (first)
      b.setInsertionPoint(first);
    else
      b.setInsertionPointToStart(arg.getOwner());
    auto c = CastOp::create(b, param.getLoc(), lowType, arg);
    if (first)
      inherit(c, first);
    arg.replaceAllUsesExcept(c, c);
    ++casts;
    SmallVector<Type> inputs(fn.getArgumentTypes());
    inputs[arg.getArgNumber()] = wide;
    fn.setFunctionType(
        FunctionType::get(fn.getContext(), inputs, fn.getResultTypes()));
    return success();
  }

  /// A 16-bit float elements attribute as f32 (exact).
  FailureOr<Attribute> widen(Attribute init, RankedTensorType wide) {
    ArrayRef<char> raw;
    bool splat = false;
    if (auto dense = dyn_cast<DenseElementsAttr>(init)) {
      raw = dense.getRawData();
      splat = dense.isSplat();
    } else if (auto resource = dyn_cast<DenseResourceElementsAttr>(init)) {
      AsmResourceBlob *blob = resource.getRawHandle().getBlob();
      if (!blob)
        return failure();
      raw = blob->getData();
    } else {
      return failure();
    }
    const llvm::fltSemantics &sem = low.getFloatSemantics();
    int64_t n = splat ? 1 : wide.getNumElements();
    if (int64_t(raw.size()) != 2 * n)
      return failure();
    std::vector<float> values(n);
    for (int64_t i = 0; i < n; ++i) {
      uint16_t bits;
      std::memcpy(&bits, raw.data() + 2 * i, 2);
      values[i] = llvm::APFloat(sem, llvm::APInt(16, bits)).convertToFloat();
    }
    if (splat)
      return Attribute(DenseElementsAttr::get(wide, values.front()));
    if (isa<DenseElementsAttr>(init))
      return Attribute(DenseElementsAttr::get(wide, ArrayRef<float>(values)));
    AsmResourceBlob blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
        ArrayRef<char>(reinterpret_cast<const char *>(values.data()),
                       values.size() * sizeof(float)),
        alignof(float));
    std::string name = "master";
    if (auto resource = dyn_cast<DenseResourceElementsAttr>(init))
      name = (resource.getRawHandle().getKey() + ".f32").str();
    return Attribute(
        DenseResourceElementsAttr::get(wide, name, std::move(blob)));
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

  /// Casts the f32 and low-type operands of `op` to `to` (f64 values stay,
  /// as PyTorch's autocast leaves float64 alone).
  void castOperands(Operation *op, Type to) {
    for (OpOperand &operand : op->getOpOperands()) {
      Type element = elementOf(operand.get());
      if ((element == f32 || element == low) && element != to)
        operand.set(castBefore(op, operand.get(), to));
    }
  }

  /// Result types follow the operands' new type (f32 and low-type results
  /// only: integer and boolean results, and other float types, are the
  /// op's own).
  void retypeResults(Operation *op, Type to) {
    for (Value r : op->getResults())
      if (RankedTensorType t = tensorOf(r);
          t && (t.getElementType() == f32 || t.getElementType() == low))
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
      retypeResults(op, f32);
      return;
    case Policy::Follow:
      break;
    }
    if (isa<OptimizationBarrierOp>(op)) {
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
