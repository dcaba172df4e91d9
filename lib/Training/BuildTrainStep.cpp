//===- BuildTrainStep.cpp - Forward + backward + optimizer as one function ===//
//
// The optimizer is written out as loom ops, in PyTorch 1.13's operation
// order (torch/optim/sgd.py, adam.py, adamw.py: _single_tensor_* paths) so
// that a Loom step reproduces a PyTorch step to rounding. Scalar
// hyper-parameter arithmetic (bias corrections, schedules) is done in f64,
// as PyTorch does it in Python floats.
//
//===----------------------------------------------------------------------===//

#include "loom/Dialect/Loom/Utils/Utils.h"
#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Training/Autodiff.h"
#include "loom/Training/Passes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include <cmath>

#define DEBUG_TYPE "loom-build-train-step"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMBUILDTRAINSTEP
#include "loom/Training/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

/// Small arithmetic helpers on loom values.
struct Arith {
  ImplicitLocOpBuilder &b;

  static RankedTensorType typeOf(Value v) {
    return cast<RankedTensorType>(v.getType());
  }
  Value scalar(Type element, double value) {
    auto type = RankedTensorType::get({}, element);
    Attribute attr = isa<FloatType>(element)
                         ? Attribute(FloatAttr::get(element, value))
                         : Attribute(IntegerAttr::get(
                               element, static_cast<int64_t>(value)));
    return ConstantOp::create(b, DenseElementsAttr::get(type, attr));
  }
  Value f64(double value) { return scalar(b.getF64Type(), value); }
  /// A scalar of `like`'s element type: how PyTorch applies a Python float
  /// to a tensor.
  Value like(Value like, double value) {
    return scalar(typeOf(like).getElementType(), value);
  }
  Value castTo(Value v, Type element) {
    if (typeOf(v).getElementType() == element)
      return v;
    return CastOp::create(b, typeOf(v).clone(element), v);
  }
  Value add(Value x, Value y) { return AddOp::create(b, x, y); }
  Value sub(Value x, Value y) { return SubOp::create(b, x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b, x, y); }
  Value div(Value x, Value y) { return DivOp::create(b, x, y); }
  Value mul(Value x, double c) { return mul(x, like(x, c)); }
  Value sqrt(Value x) { return SqrtOp::create(b, x); }
  Value sumAll(Value v) {
    int64_t rank = typeOf(v).getRank();
    if (rank == 0)
      return v;
    return ReduceSumOp::create(
        b, v, llvm::to_vector(llvm::seq<int64_t>(0, rank)), false);
  }
};

struct BuildTrainStepPass
    : loom::impl::LoomBuildTrainStepBase<BuildTrainStepPass> {
  using LoomBuildTrainStepBase::LoomBuildTrainStepBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<func::FuncOp> found =
        loom::lookupFunction(module, function, getArgument());
    if (failed(found) || failed(build(module, *found)))
      signalPassFailure();
  }

  LogicalResult checkOptions(func::FuncOp fn);
  LogicalResult build(ModuleOp module, func::FuncOp fn);
  /// Declares a zero-initialised optimizer-state parameter after `after`,
  /// the state of weight `owner` (null: of the optimizer, the step count).
  FailureOr<ParameterOp> declareState(ModuleOp module, Operation *after,
                                      StringRef name, RankedTensorType type,
                                      FlatSymbolRefAttr owner);
  Value learningRate(Arith &a, Value step);

  double effectiveLr() const {
    return lr >= 0 ? double(lr) : 1e-3;
  }
  double effectiveWeightDecay() const {
    if (weightDecay >= 0)
      return weightDecay;
    return optimizer == "adamw" ? 0.01 : 0.0;
  }
};

} // namespace

LogicalResult BuildTrainStepPass::checkOptions(func::FuncOp fn) {
  auto fail = [&]() {
    return fn.emitError() << "loom-build-train-step: ";
  };
  if (optimizer != "sgd" && optimizer != "adam" && optimizer != "adamw")
    return fail() << "unknown optimizer '" << optimizer
                  << "' (expected sgd, adam or adamw)";
  if (optimizer == "sgd" && lr < 0)
    return fail() << "sgd needs a learning rate (lr=...)";
  if (lr == 0 || (lr < 0 && lr != -1.0))
    return fail() << "invalid learning rate " << static_cast<double>(lr);
  if (momentum < 0 || dampening < 0 || effectiveWeightDecay() < 0)
    return fail() << "momentum, dampening and weight-decay must be >= 0";
  if (nesterov && (momentum <= 0 || dampening != 0))
    return fail() << "Nesterov momentum requires a momentum and zero dampening";
  if (beta1 < 0 || beta1 >= 1 || beta2 < 0 || beta2 >= 1)
    return fail() << "Adam betas must be in [0, 1), got "
                  << static_cast<double>(beta1) << ", "
                  << static_cast<double>(beta2);
  if (eps < 0)
    return fail() << "eps must be >= 0";
  if (gradClip < 0)
    return fail() << "grad-clip must be >= 0";
  if (microBatches < 1)
    return fail() << "micro-batches must be at least 1";
  if (lrSchedule != "constant" && lrSchedule != "warmup-cosine")
    return fail() << "unknown lr-schedule '" << lrSchedule
                  << "' (expected constant or warmup-cosine)";
  if (lrSchedule == "warmup-cosine" &&
      (warmupSteps < 0 || totalSteps <= warmupSteps))
    return fail() << "warmup-cosine needs 0 <= warmup-steps < total-steps, got "
                  << static_cast<int64_t>(warmupSteps) << " and "
                  << static_cast<int64_t>(totalSteps);
  return success();
}

FailureOr<ParameterOp>
BuildTrainStepPass::declareState(ModuleOp module, Operation *after,
                                 StringRef name, RankedTensorType type,
                                 FlatSymbolRefAttr owner) {
  if (Operation *existing = module.lookupSymbol(name))
    return existing->emitError()
           << "loom-build-train-step: optimizer state @" << name
           << " would clash with this symbol";
  OpBuilder b(module.getContext());
  b.setInsertionPointAfter(after);
  Attribute zero = isa<FloatType>(type.getElementType())
                       ? Attribute(FloatAttr::get(type.getElementType(), 0.0))
                       : Attribute(IntegerAttr::get(type.getElementType(), 0));
  return ParameterOp::create(b, after->getLoc(), name, type,
                             DenseElementsAttr::get(type, zero),
                             /*trainable=*/false, owner);
}

/// lr * schedule(step), in f64; `step` counts completed steps.
Value BuildTrainStepPass::learningRate(Arith &a, Value step) {
  double base = effectiveLr();
  if (lrSchedule == "constant")
    return a.f64(base);
  // Hugging Face get_cosine_schedule_with_warmup (num_cycles = 0.5).
  Value s = a.castTo(step, a.b.getF64Type());
  double warm = static_cast<double>(warmupSteps);
  double span = static_cast<double>(std::max<int64_t>(1, totalSteps - warmupSteps));
  Value warmup = a.div(s, a.f64(std::max(1.0, warm)));
  Value progress = a.div(a.sub(s, a.f64(warm)), a.f64(span));
  Value cosine = a.mul(a.add(a.f64(1.0),
                             CosOp::create(a.b, a.mul(progress, M_PI))),
                       0.5);
  cosine = MaxOp::create(a.b, cosine, a.f64(0.0));
  Value inWarmup =
      CompareOp::create(a.b, CompareDirection::lt, s, a.f64(warm));
  return a.mul(SelectOp::create(a.b, inWarmup, warmup, cosine), base);
}

LogicalResult BuildTrainStepPass::build(ModuleOp module, func::FuncOp fn) {
  if (failed(checkOptions(fn)) ||
      failed(loom::verifyLossFunction(fn, getArgument())))
    return failure();
  if (module.lookupSymbol("train_step"))
    return fn.emitError("loom-build-train-step: @train_step already exists");
  MLIRContext *ctx = &getContext();
  unsigned numArgs = fn.getNumArguments(), k = microBatches;

  // Classify arguments.
  SmallVector<unsigned> params;
  SmallVector<bool> isData(numArgs, false);
  for (unsigned i = 0; i < numArgs; ++i) {
    ParameterOp param = loom::boundParameter(fn, i);
    if (param && param.getTrainable()) {
      if (!isa<FloatType>(param.getType().getElementType()))
        return fn.emitError() << "loom-build-train-step: trainable parameter @"
                              << param.getSymName() << " has type "
                              << param.getType() << ", not a float tensor";
      params.push_back(i);
    }
    isData[i] = !param;
  }
  if (params.empty())
    return fn.emitError()
           << "loom-build-train-step: @" << fn.getSymName()
           << " has no trainable parameters: nothing to train (parameters "
              "are arguments with loom.param naming a `trainable` "
              "loom.parameter)";

  // Optimizer state declarations.
  SmallVector<std::string> stateSuffixes;
  if (optimizer == "sgd") {
    if (momentum != 0)
      stateSuffixes.push_back("momentum_buffer");
  } else {
    stateSuffixes = {"exp_avg", "exp_avg_sq"};
  }
  SmallVector<SmallVector<ParameterOp>> states(params.size());
  for (auto [p, i] : llvm::enumerate(params)) {
    ParameterOp param = loom::boundParameter(fn, i);
    Operation *after = param;
    for (const std::string &suffix : stateSuffixes) {
      FailureOr<ParameterOp> state = declareState(
          module, after, (param.getSymName() + "." + suffix).str(),
          param.getType(), FlatSymbolRefAttr::get(param.getSymNameAttr()));
      if (failed(state))
        return failure();
      states[p].push_back(*state);
      after = *state;
    }
  }
  auto stepType = RankedTensorType::get({}, IntegerType::get(ctx, 64));
  Operation *lastDecl = nullptr;
  for (Operation &op : module.getBody()->getOperations())
    if (isa<ParameterOp, MeshOp>(op))
      lastDecl = &op;
  FailureOr<ParameterOp> stepDecl =
      lastDecl ? declareState(module, lastDecl, "optimizer.step", stepType,
                              /*owner=*/nullptr)
               : FailureOr<ParameterOp>(failure());
  if (!lastDecl) {
    OpBuilder b(ctx);
    b.setInsertionPointToStart(module.getBody());
    if (module.lookupSymbol("optimizer.step"))
      return fn.emitError("loom-build-train-step: @optimizer.step exists");
    stepDecl = ParameterOp::create(
        b, fn.getLoc(), "optimizer.step", stepType,
        DenseElementsAttr::get(stepType, IntegerAttr::get(stepType.getElementType(), 0)),
        false, /*state_of=*/nullptr);
  }
  if (failed(stepDecl))
    return failure();

  // Signature: the loss function's arguments (data with a leading
  // micro-batch dimension when K > 1), then optimizer state, then the step.
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  SmallVector<Location> argLocs;
  for (unsigned i = 0; i < numArgs; ++i) {
    auto type = cast<RankedTensorType>(fn.getArgumentTypes()[i]);
    NamedAttrList attrs(fn.getArgAttrDict(i));
    if (isData[i] && k > 1) {
      SmallVector<int64_t> shape = {static_cast<int64_t>(k)};
      llvm::append_range(shape, type.getShape());
      type = type.clone(shape);
      // The micro-batch dimension is not split.
      if (auto s = dyn_cast_or_null<ShardingAttr>(
              attrs.get(LoomDialect::kShardingAttrName))) {
        SmallVector<Attribute> dims = {ArrayAttr::get(ctx, {})};
        llvm::append_range(dims, s.getDims());
        attrs.set(LoomDialect::kShardingAttrName,
                  ShardingAttr::get(ctx, s.getMesh(), ArrayAttr::get(ctx, dims),
                                    s.getPartialAxes(), s.getPartialKind()));
      }
    }
    argTypes.push_back(type);
    argAttrs.push_back(attrs.getDictionary(ctx));
    argLocs.push_back(fn.getArgument(i).getLoc());
  }
  auto paramRef = [&](ParameterOp p) {
    NamedAttrList attrs;
    attrs.set(LoomDialect::kParamAttrName,
              FlatSymbolRefAttr::get(ctx, p.getSymName()));
    return attrs.getDictionary(ctx);
  };
  for (auto [p, perParam] : llvm::enumerate(states))
    for (ParameterOp s : perParam) {
      argTypes.push_back(s.getType());
      // Optimizer state is laid out like its weight.
      NamedAttrList attrs(paramRef(s));
      if (Attribute sharding =
              fn.getArgAttr(params[p], LoomDialect::kShardingAttrName))
        attrs.set(LoomDialect::kShardingAttrName, sharding);
      argAttrs.push_back(attrs.getDictionary(ctx));
      argLocs.push_back(s.getLoc());
    }
  argTypes.push_back(stepType);
  argAttrs.push_back(paramRef(*stepDecl));
  argLocs.push_back(stepDecl->getLoc());

  OpBuilder moduleBuilder(ctx);
  moduleBuilder.setInsertionPointAfter(fn);
  auto step = func::FuncOp::create(moduleBuilder, fn.getLoc(), "train_step",
                                   FunctionType::get(ctx, argTypes, {}));
  step.setAllArgAttrs(argAttrs);
  if (k > 1)
    step->setAttr(LoomDialect::kMicroBatchesAttrName,
                  IntegerAttr::get(IntegerType::get(ctx, 64), k));
  Block *entry = step.addEntryBlock();
  for (auto [arg, loc] : llvm::zip(entry->getArguments(), argLocs))
    arg.setLoc(loc);
  ImplicitLocOpBuilder b(fn.getLoc(), ctx);
  b.setInsertionPointToEnd(entry);
  Arith a{b};

  // Forward and backward for each micro-batch; gradients of loss / K summed
  // in micro-batch order, as PyTorch's accumulation does.
  auto describe = [&](unsigned p) {
    return "parameter @" +
           loom::boundParameter(fn, params[p]).getSymName().str();
  };
  Block &body = fn.getBody().front();
  auto fnRet = cast<func::ReturnOp>(body.getTerminator());
  SmallVector<Value> grads(params.size());
  SmallVector<bool> used(params.size(), false);
  Value lossSum;
  for (unsigned m = 0; m < k; ++m) {
    IRMapping map;
    for (unsigned i = 0; i < numArgs; ++i) {
      Value arg = entry->getArgument(i);
      if (isData[i] && k > 1) {
        auto full = cast<RankedTensorType>(arg.getType());
        SmallVector<int64_t> start(full.getRank(), 0),
            limit(full.getShape()), stride(full.getRank(), 1);
        start[0] = m;
        limit[0] = m + 1;
        Value slice = SliceOp::create(b, arg, start, limit, stride);
        arg = ReshapeOp::create(b, fn.getArgumentTypes()[i], slice);
      }
      map.map(fn.getArgument(i), arg);
    }
    Value stepArg = entry->getArguments().back();
    for (Operation &op : body.without_terminator()) {
      Operation *copy = b.clone(op, map);
      // A fresh dropout mask for every step and micro-batch: offset the
      // model's seed by the global micro-batch index step * K + m.
      if (auto dropout = dyn_cast<DropoutOp>(copy)) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(dropout);
        Type i64 = b.getI64Type();
        Value index = a.add(a.mul(stepArg, a.scalar(i64, k)), a.scalar(i64, m));
        dropout.getSeedMutable().assign(a.add(dropout.getSeed(), index));
      }
    }
    Value loss = map.lookup(fnRet.getOperand(0));
    SmallVector<Value> wrt;
    for (unsigned i : params)
      wrt.push_back(map.lookup(fn.getArgument(i)));
    GradientOptions options;
    options.describe = describe;
    auto lossType = cast<RankedTensorType>(loss.getType());
    options.seed = ConstantOp::create(
        b, DenseElementsAttr::get(
               lossType, FloatAttr::get(lossType.getElementType(),
                                        1.0 / static_cast<double>(k))));
    FailureOr<SmallVector<Value>> g = buildGradients(b, loss, wrt, options);
    if (failed(g)) {
      step.erase();
      return failure();
    }
    for (auto [p, grad] : llvm::enumerate(*g)) {
      if (!grad)
        continue;
      used[p] = true;
      grads[p] = grads[p] ? a.add(grads[p], grad) : grad;
    }
    lossSum = lossSum ? a.add(lossSum, loss) : loss;
  }
  Value loss = k > 1 ? a.mul(lossSum, 1.0 / static_cast<double>(k)) : lossSum;
  for (auto [p, i] : llvm::enumerate(params))
    if (!used[p])
      emitWarning(fn.getLoc())
          << "the loss does not depend on " << describe(p)
          << "; it is not updated (PyTorch skips parameters without "
             "gradients)";

  // Global-norm clipping (torch.nn.utils.clip_grad_norm_, norm_type 2).
  if (gradClip > 0) {
    Value totalSq;
    for (Value g : grads) {
      if (!g)
        continue;
      Value norm = a.sqrt(a.sumAll(a.mul(g, g)));
      Value sq = a.mul(norm, norm);
      totalSq = totalSq ? a.add(totalSq, a.castTo(sq, Arith::typeOf(totalSq)
                                                          .getElementType()))
                        : sq;
    }
    Value total = a.sqrt(totalSq);
    Value coef = a.div(a.like(total, gradClip), a.add(total, a.like(total, 1e-6)));
    coef = MinOp::create(b, coef, a.like(coef, 1.0));
    for (Value &g : grads)
      if (g)
        g = a.mul(g, a.castTo(coef, Arith::typeOf(g).getElementType()));
  }

  // Optimizer.
  Value stepArg = entry->getArguments().back();
  Value nextStep = a.add(stepArg, a.scalar(stepType.getElementType(), 1));
  Value lr = learningRate(a, stepArg);
  double wd = effectiveWeightDecay();
  SmallVector<Value> newParams, newStates;
  unsigned stateArg = numArgs;
  for (auto [p, i] : llvm::enumerate(params)) {
    Value param = entry->getArgument(i);
    SmallVector<Value> state;
    for (size_t s = 0; s < states[p].size(); ++s)
      state.push_back(entry->getArgument(stateArg++));
    Value g = grads[p];
    if (!g) {
      newParams.push_back(param);
      llvm::append_range(newStates, state);
      continue;
    }
    Type element = Arith::typeOf(param).getElementType();
    auto asElement = [&](Value scalarF64) { return a.castTo(scalarF64, element); };
    if (optimizer == "sgd") {
      Value d = g;
      if (wd != 0)
        d = a.add(d, a.mul(param, wd));
      if (momentum != 0) {
        Value buf = state[0];
        Value next = a.add(a.mul(buf, momentum), a.mul(d, 1.0 - dampening));
        if (dampening != 0) {
          // The first step copies the gradient into the buffer.
          Value first = CompareOp::create(b, CompareDirection::eq, stepArg,
                                          a.scalar(stepType.getElementType(), 0));
          next = SelectOp::create(b, first, d, next);
        }
        newStates.push_back(next);
        d = nesterov ? a.add(d, a.mul(next, momentum)) : next;
      }
      newParams.push_back(a.sub(param, a.mul(d, asElement(lr))));
      continue;
    }
    // Adam / AdamW.
    Value stepF = a.castTo(nextStep, b.getF64Type());
    if (optimizer == "adamw" && wd != 0)
      param = a.mul(param, asElement(a.sub(a.f64(1.0), a.mul(lr, wd))));
    if (optimizer == "adam" && wd != 0)
      g = a.add(g, a.mul(param, wd));
    Value m = a.add(a.mul(state[0], beta1), a.mul(g, 1.0 - beta1));
    Value v = a.add(a.mul(state[1], beta2), a.mul(a.mul(g, g), 1.0 - beta2));
    Value bc1 = a.sub(a.f64(1.0), PowOp::create(b, a.f64(beta1), stepF));
    Value bc2 = a.sub(a.f64(1.0), PowOp::create(b, a.f64(beta2), stepF));
    Value stepSize = a.div(lr, bc1);
    Value bc2Sqrt = a.sqrt(bc2);
    Value denom = a.add(a.div(a.sqrt(v), asElement(bc2Sqrt)), a.like(v, eps));
    newParams.push_back(a.sub(param, a.mul(asElement(stepSize), a.div(m, denom))));
    newStates.push_back(m);
    newStates.push_back(v);
  }

  SmallVector<Value> results = {loss};
  SmallVector<DictionaryAttr> resultAttrs;
  NamedAttrList lossAttrs;
  lossAttrs.set(LoomDialect::kNameAttrName, StringAttr::get(ctx, "loss"));
  resultAttrs.push_back(lossAttrs.getDictionary(ctx));
  for (auto [p, i] : llvm::enumerate(params)) {
    results.push_back(newParams[p]);
    resultAttrs.push_back(paramRef(loom::boundParameter(fn, i)));
  }
  unsigned s = 0;
  for (auto &perParam : states)
    for (ParameterOp decl : perParam) {
      results.push_back(newStates[s++]);
      resultAttrs.push_back(paramRef(decl));
    }
  results.push_back(nextStep);
  resultAttrs.push_back(paramRef(*stepDecl));
  func::ReturnOp::create(b, results);
  step.setFunctionType(
      FunctionType::get(ctx, argTypes, ValueRange(results).getTypes()));
  step.setAllResultAttrs(resultAttrs);
  if (!keepForward)
    fn.erase();
  return success();
}
