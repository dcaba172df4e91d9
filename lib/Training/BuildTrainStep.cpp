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
#include "loom/Support/Debug.h"
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
    return createSplat(b, b.getLoc(), RankedTensorType::get({}, element),
                       value);
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

/// The optimizer's settings, as the pass options say them.
struct OptimizerConfig {
  std::string kind; // sgd, adam, adamw, none (the forward pass is the step)
  double lr, weightDecay, momentum, dampening, beta1, beta2, eps, gradClip;
  bool nesterov;
  unsigned microBatches;
  std::string lrSchedule;
  int64_t warmupSteps, totalSteps;
  bool numberRules = false;
  /// Dynamic loss scaling (PyTorch GradScaler): initial scale, clean steps
  /// before it doubles.
  bool dynamicLossScale = false;
  double lossScaleInit = 65536.0;
  int64_t growthInterval = 2000;
  /// Gradient compression: the 16-bit type gradients are reduced in.
  std::string gradCompression = "none";
};

/// Builds @train_step from the loss function `fn`, one step at a time:
/// classify arguments, declare optimizer state, create the signature,
/// forward + backward per micro-batch, clip, update, return.
class StepBuilder {
public:
  StepBuilder(ModuleOp module, func::FuncOp fn, const OptimizerConfig &config,
              StringRef pass)
      : module(module), fn(fn), ctx(module.getContext()), config(config),
        pass(pass), b(fn.getLoc(), ctx), a{b} {}

  LogicalResult build() {
    splitBatch = module->hasAttr(LoomDialect::kBatchSplitAttrName);
    if (failed(classifyArguments()) || failed(checkTopK()) ||
        failed(checkPipeline()) || failed(collectStateUpdates()) ||
        failed(declareStates()))
      return failure();
    createStep();
    if (failed(forwardAndBackward())) {
      step.erase();
      return failure();
    }
    if (config.gradCompression != "none")
      compressGradients();
    if (config.dynamicLossScale)
      unscaleGradients();
    if (config.gradClip > 0)
      clipGradients();
    update();
    if (config.dynamicLossScale)
      updateLossScale();
    finish();
    return success();
  }

private:
  LogicalResult classifyArguments();
  LogicalResult checkPipeline();
  /// The micro-batches the step's data carry (a pipeline's template: 1).
  unsigned dataMicroBatches() const {
    return pipelined ? 1 : config.microBatches;
  }
  /// The micro-batches split the model's batch (loom-split-micro-batches).
  bool splitBatch = false;
  void tag(Block::iterator from, StringRef phase, IntegerAttr stage);
  FailureOr<ParameterOp> declareState(Operation *after, StringRef name,
                                      RankedTensorType type,
                                      FlatSymbolRefAttr owner,
                                      double init = 0.0);
  LogicalResult declareStates();
  void createStep();
  LogicalResult forwardAndBackward();
  void clipGradients();
  void compressGradients();
  void markTopK();
  LogicalResult checkTopK();
  void unscaleGradients();
  void updateLossScale();
  /// Applied optimizer updates so far: the step counter, or with dynamic
  /// loss scaling a counter that skipped steps do not advance (PyTorch's
  /// optimizer.step() does not run on them).
  Value updatesArg() { return config.dynamicLossScale ? ampArg(2) : stepArg(); }
  Value learningRate(Value step);
  void update();
  void sgdUpdate(Value param, Value g, ArrayRef<Value> state, Value lr);
  void adamUpdate(Value param, Value g, ArrayRef<Value> state, Value lr,
                  Value nextStep);
  void finish();

  std::string describe(unsigned p) {
    return "parameter @" + boundParameter(fn, params[p]).getSymName().str();
  }
  DictionaryAttr paramRef(ParameterOp p) {
    NamedAttrList attrs;
    attrs.set(LoomDialect::kParamAttrName,
              FlatSymbolRefAttr::get(ctx, p.getSymName()));
    return attrs.getDictionary(ctx);
  }
  /// The step counter, then (dynamic loss scaling) the scale, the growth
  /// tracker and the update counter.
  Value stepArg() { return entry->getArgument(stepIndex); }
  Value ampArg(unsigned i) { return entry->getArgument(stepIndex + 1 + i); }

  ModuleOp module;
  func::FuncOp fn;
  MLIRContext *ctx;
  const OptimizerConfig &config;
  StringRef pass;
  ImplicitLocOpBuilder b;
  Arith a;

  /// Whether the model's ops carry pipeline stages (loom.stage); then the
  /// stage of each trainable parameter (its users').
  bool pipelined = false;
  SmallVector<IntegerAttr> paramStages;

  /// Arguments of `fn`: trainable parameters, and which are data.
  SmallVector<unsigned> params;
  SmallVector<bool> isData;
  /// Optimizer state per trainable parameter, and the step counter.
  SmallVector<SmallVector<ParameterOp>> states;
  ParameterOp stepDecl;
  RankedTensorType stepType;
  unsigned stepIndex = 0;
  /// Dynamic loss scaling: amp.loss_scale, amp.growth_tracker, amp.updates.
  SmallVector<ParameterOp> ampDecls;
  /// Whether some gradient is inf or NaN (i1 scalar), and the new values of
  /// the loss-scaling state.
  Value foundInf;
  SmallVector<Value> newAmp;

  func::FuncOp step;
  Block *entry = nullptr;
  SmallVector<Type> argTypes;
  /// Per trainable parameter: its gradient (null when the loss does not
  /// depend on it); the loss; the updated values.
  SmallVector<Value> grads;
  Value loss;
  SmallVector<Value> newParams, newStates;
  Value nextStep;
  /// State the forward pass updates (BatchNorm's running statistics): the
  /// forward result, the argument it replaces, its declaration, and its
  /// value after the step's last micro-batch.
  struct StateUpdate {
    unsigned result, arg;
    ParameterOp decl;
    Value next;
  };
  SmallVector<StateUpdate> stateUpdates;
  LogicalResult collectStateUpdates();
};

/// Forward results after the loss that carry `loom.param = @p` are the next
/// value of non-trainable parameter @p (an argument of the forward pass):
/// the step returns them so that @p evolves as PyTorch's buffers do.
LogicalResult StepBuilder::collectStateUpdates() {
  for (unsigned r = 1; r < fn.getNumResults(); ++r) {
    auto ref = fn.getResultAttrOfType<FlatSymbolRefAttr>(
        r, LoomDialect::kParamAttrName);
    if (!ref)
      continue;
    std::optional<unsigned> arg;
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      if (ParameterOp p = boundParameter(fn, i);
          p && p.getSymName() == ref.getValue())
        arg = i;
    ParameterOp decl = arg ? boundParameter(fn, *arg) : ParameterOp();
    if (!decl)
      return fn.emitError() << pass << ": result #" << r << " updates @"
                            << ref.getValue()
                            << ", which is not a parameter argument of @"
                            << fn.getSymName();
    if (decl.getTrainable())
      return fn.emitError() << pass << ": result #" << r
                            << " updates trainable parameter @"
                            << ref.getValue()
                            << "; the optimizer owns trainable parameters";
    if (fn.getResultTypes()[r] != decl.getType())
      return fn.emitError() << pass << ": result #" << r << " updates @"
                            << ref.getValue() << " of type " << decl.getType()
                            << " with " << fn.getResultTypes()[r];
    if (pipelined)
      return fn.emitError()
             << pass << ": state updated by the forward pass (@"
             << ref.getValue() << ") is not supported with pipeline stages yet";
    stateUpdates.push_back({r, *arg, decl, Value()});
  }
  return success();
}

LogicalResult StepBuilder::classifyArguments() {
  unsigned numArgs = fn.getNumArguments();
  isData.assign(numArgs, false);
  for (unsigned i = 0; i < numArgs; ++i) {
    ParameterOp param = boundParameter(fn, i);
    if (param && param.getTrainable()) {
      if (config.kind == "none")
        return fn.emitError()
               << pass << ": optimizer=none builds no gradient, but @"
               << param.getSymName()
               << " is trainable (a traced step updates its parameters "
                  "through its own results: declare them non-trainable)";
      if (!isa<FloatType>(param.getType().getElementType()))
        return fn.emitError() << pass << ": trainable parameter @"
                              << param.getSymName() << " has type "
                              << param.getType() << ", not a float tensor";
      // Adam's eps must survive in the update's type: 1e-8 is 0 in f16, and
      // sqrt(v) + 0 divides a zero first moment by zero (NaN at once).
      Type element = param.getType().getElementType();
      if (config.kind != "sgd" && config.eps > 0 && isa<FloatType>(element)) {
        bool lost;
        llvm::APFloat eps(config.eps);
        eps.convert(cast<FloatType>(element).getFloatSemantics(),
                    llvm::APFloat::rmNearestTiesToEven, &lost);
        if (eps.isZero())
          return fn.emitError()
                 << pass << ": eps=" << config.eps << " is 0 in " << element
                 << " (trainable parameter @" << param.getSymName()
                 << "), so Adam's update would divide by zero; give --eps "
                    "that "
                 << element
                 << " can hold (fp16 training commonly uses 1e-4), or keep "
                    "the model in f32 and train it with --precision=fp16 "
                    "(f32 master weights and optimizer state)";
      }
      params.push_back(i);
    }
    isData[i] = !param;
  }
  if (params.empty() && config.kind != "none")
    return fn.emitError()
           << pass << ": @" << fn.getSymName()
           << " has no trainable parameters: nothing to train (parameters "
              "are arguments with loom.param naming a `trainable` "
              "loom.parameter)";
  return success();
}

/// Top-k compression selects on the gradient where it is reduced; a weight
/// read through a cast (--precision's 16-bit copy of an f32 master weight)
/// is reduced at the copy, which the planner does not price as a weight's
/// gradient yet.
LogicalResult StepBuilder::checkTopK() {
  if (!StringRef(config.gradCompression).starts_with("topk:"))
    return success();
  for (unsigned i : params)
    for (Operation *user : fn.getArgument(i).getUsers())
      if (auto c = dyn_cast<CastOp>(user))
        if (c.getType().getElementType() !=
            c.getInput().getType().getElementType())
          return c.emitError()
                 << pass << ": grad-compression=" << config.gradCompression
                 << " of weights read through casts (--precision's 16-bit "
                    "copies of f32 master weights) is not supported yet: "
                    "parameter @"
                 << boundParameter(fn, i).getSymName()
                 << " is cast to " << c.getType().getElementType()
                 << " (use --grad-compression=bf16|fp16, or top-k in f32)";
  return success();
}

/// A pipelined model: every weight lives on one stage; what the pipeline
/// cannot run yet is an error naming it.
LogicalResult StepBuilder::checkPipeline() {
  fn.walk([&](Operation *op) {
    pipelined |= op->hasAttr(LoomDialect::kStageAttrName);
  });
  if (!pipelined)
    return success();
  if (config.gradClip > 0)
    return fn.emitError()
           << pass << ": gradient clipping needs the norm over every stage's "
           << "gradients; it is not supported with pipeline stages yet";
  if (StringRef(config.gradCompression).starts_with("topk:"))
    return fn.emitError()
           << pass << ": top-k gradient compression is not supported with "
           << "pipeline stages yet (use --grad-compression=fp16 or bf16)";
  if (config.dynamicLossScale)
    return fn.emitError()
           << pass << ": dynamic loss scaling needs the overflow check over "
           << "every stage's gradients; it is not supported with pipeline "
           << "stages yet (train with --precision=bf16, which needs none)";
  WalkResult dropout = fn.walk([&](DropoutOp op) {
    op.emitError() << pass << ": dropout with pipeline stages is not "
                   << "supported yet (its mask is seeded per micro-batch)";
    return WalkResult::interrupt();
  });
  if (dropout.wasInterrupted())
    return failure();
  for (unsigned i : params) {
    IntegerAttr stage;
    for (Operation *user : fn.getArgument(i).getUsers()) {
      auto s = user->getAttrOfType<IntegerAttr>(LoomDialect::kStageAttrName);
      if (!s)
        continue;
      if (stage && s.getInt() != stage.getInt())
        return user->emitError()
               << pass << ": " << describe(paramStages.size())
               << " is used on pipeline stages " << stage.getInt() << " and "
               << s.getInt()
               << "; a weight lives on one stage (tied weights across "
                  "stages are not supported): move the stage boundary";
      stage = s;
    }
    paramStages.push_back(stage);
  }
  return success();
}

void StepBuilder::tag(Block::iterator from, StringRef phase,
                      IntegerAttr stage) {
  if (!pipelined)
    return;
  for (Operation &op : llvm::make_range(from, entry->end())) {
    if (op.hasTrait<OpTrait::ConstantLike>())
      continue;
    op.setAttr(LoomDialect::kPhaseAttrName, b.getStringAttr(phase));
    if (stage && !op.hasAttr(LoomDialect::kStageAttrName))
      op.setAttr(LoomDialect::kStageAttrName, stage);
  }
}

FailureOr<ParameterOp> StepBuilder::declareState(Operation *after,
                                                 StringRef name,
                                                 RankedTensorType type,
                                                 FlatSymbolRefAttr owner,
                                                 double init) {
  if (Operation *existing = module.lookupSymbol(name))
    return existing->emitError() << pass << ": optimizer state @" << name
                                 << " would clash with this symbol";
  OpBuilder ob(ctx);
  if (after)
    ob.setInsertionPointAfter(after);
  else
    ob.setInsertionPointToStart(module.getBody());
  Attribute value = scalarAttr(type.getElementType(), init);
  Location loc = after ? after->getLoc() : fn.getLoc();
  return ParameterOp::create(ob, loc, name, type,
                             DenseElementsAttr::get(type, value),
                             /*trainable=*/false, owner);
}

/// Optimizer state, zero-initialised and named as PyTorch names it, right
/// after its weight; the step counter after the last declaration.
LogicalResult StepBuilder::declareStates() {
  SmallVector<std::string> suffixes;
  if (config.kind != "sgd")
    suffixes = {"exp_avg", "exp_avg_sq"};
  else if (config.momentum != 0)
    suffixes.push_back("momentum_buffer");
  states.resize(params.size());
  for (auto [p, i] : llvm::enumerate(params)) {
    ParameterOp param = boundParameter(fn, i);
    Operation *after = param;
    for (const std::string &suffix : suffixes) {
      FailureOr<ParameterOp> state = declareState(
          after, (param.getSymName() + "." + suffix).str(), param.getType(),
          FlatSymbolRefAttr::get(param.getSymNameAttr()));
      if (failed(state))
        return failure();
      states[p].push_back(*state);
      after = *state;
    }
  }
  stepType = RankedTensorType::get({}, IntegerType::get(ctx, 64));
  Operation *lastDecl = nullptr;
  for (Operation &op : module.getBody()->getOperations())
    if (isa<ParameterOp, MeshOp>(op))
      lastDecl = &op;
  FailureOr<ParameterOp> decl =
      declareState(lastDecl, "optimizer.step", stepType, /*owner=*/nullptr);
  if (failed(decl))
    return failure();
  stepDecl = *decl;
  if (!config.dynamicLossScale)
    return success();
  auto f32 = RankedTensorType::get({}, b.getF32Type());
  Operation *after = stepDecl;
  struct Amp {
    StringRef name;
    RankedTensorType type;
    double init;
  };
  for (const Amp &s : {Amp{"amp.loss_scale", f32, config.lossScaleInit},
                       Amp{"amp.growth_tracker", stepType, 0.0},
                       Amp{"amp.updates", stepType, 0.0}}) {
    FailureOr<ParameterOp> amp =
        declareState(after, s.name, s.type, nullptr, s.init);
    if (failed(amp))
      return failure();
    ampDecls.push_back(*amp);
    after = *amp;
  }
  return success();
}

/// The loss function's arguments (data with a leading micro-batch dimension
/// when K > 1), then optimizer state (laid out like its weight), then the
/// step counter.
void StepBuilder::createStep() {
  unsigned k = dataMicroBatches();
  SmallVector<DictionaryAttr> argAttrs;
  SmallVector<Location> argLocs;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
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
  for (auto [p, perParam] : llvm::enumerate(states))
    for (ParameterOp s : perParam) {
      argTypes.push_back(s.getType());
      NamedAttrList attrs(paramRef(s));
      if (Attribute sharding =
              fn.getArgAttr(params[p], LoomDialect::kShardingAttrName))
        attrs.set(LoomDialect::kShardingAttrName, sharding);
      argAttrs.push_back(attrs.getDictionary(ctx));
      argLocs.push_back(s.getLoc());
    }
  stepIndex = argTypes.size();
  SmallVector<ParameterOp> counters = {stepDecl};
  llvm::append_range(counters, ampDecls);
  for (ParameterOp decl : counters) {
    argTypes.push_back(decl.getType());
    argAttrs.push_back(paramRef(decl));
    argLocs.push_back(decl.getLoc());
  }

  OpBuilder mb(ctx);
  mb.setInsertionPointAfter(fn);
  step = func::FuncOp::create(mb, fn.getLoc(), "train_step",
                              FunctionType::get(ctx, argTypes, {}));
  step.setAllArgAttrs(argAttrs);
  if (k > 1)
    step->setAttr(LoomDialect::kMicroBatchesAttrName,
                  IntegerAttr::get(IntegerType::get(ctx, 64), k));
  if (pipelined) {
    NamedAttrList pipe;
    pipe.set("micro_batches", mb.getI64IntegerAttr(config.microBatches));
    module->setAttr(LoomDialect::kPipelineAttrName, pipe.getDictionary(ctx));
  }
  entry = step.addEntryBlock();
  for (auto [arg, loc] : llvm::zip(entry->getArguments(), argLocs))
    arg.setLoc(loc);
  b.setInsertionPointToEnd(entry);
}

/// Forward and backward for each micro-batch; gradients of loss / K summed
/// in micro-batch order, as PyTorch's accumulation does.
LogicalResult StepBuilder::forwardAndBackward() {
  // The seed is 1/K either way: a pipelined template is one of K.
  unsigned seedK = config.microBatches;
  unsigned k = dataMicroBatches();
  Block &body = fn.getBody().front();
  auto fnRet = cast<func::ReturnOp>(body.getTerminator());
  grads.assign(params.size(), nullptr);
  SmallVector<Value> microLosses;
  for (unsigned m = 0; m < k; ++m) {
    IRMapping map;
    for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
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
    // Micro-batch m starts from the state micro-batch m - 1 left.
    for (StateUpdate &s : stateUpdates)
      if (s.next)
        map.map(fn.getArgument(s.arg), s.next);
    Operation *beforeForward = entry->empty() ? nullptr : &entry->back();
    for (Operation &op : body.without_terminator()) {
      Operation *copy = b.clone(op, map);
      // A fresh mask per step and micro-batch (seed + step * K + m); split
      // micro-batches: the batch's seed + step, from element m * rows on.
      if (auto dropout = dyn_cast<DropoutOp>(copy)) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(dropout);
        Type i64 = b.getI64Type();
        Value index =
            splitBatch
                ? stepArg()
                : a.add(a.mul(stepArg(), a.scalar(i64, k)), a.scalar(i64, m));
        Value seed = a.add(dropout.getSeed(), index);
        if (auto rows = dropout->getAttrOfType<IntegerAttr>(
                LoomDialect::kMicroBatchRowsAttrName)) {
          uint64_t skip = uint64_t(m) * uint64_t(rows.getInt()) *
                          DropoutOp::kIndexMultiplier;
          auto scalarI64 = RankedTensorType::get({}, i64);
          seed = a.add(seed, ConstantOp::create(
                                 b, DenseElementsAttr::get(
                                        scalarI64, APInt(64, skip))));
          dropout->removeAttr(LoomDialect::kMicroBatchRowsAttrName);
        }
        dropout.getSeedMutable().assign(seed);
      }
    }
    tag(beforeForward ? std::next(beforeForward->getIterator())
                      : entry->begin(),
        "forward", nullptr);
    Value microLoss = map.lookup(fnRet.getOperand(0));
    for (StateUpdate &s : stateUpdates)
      s.next = map.lookup(fnRet.getOperand(s.result));
    microLosses.push_back(microLoss);
    if (params.empty())
      continue; // optimizer=none: the forward pass is the whole step
    SmallVector<Value> wrt;
    for (unsigned i : params)
      wrt.push_back(map.lookup(fn.getArgument(i)));
    GradientOptions options;
    options.describe = [&](unsigned p) { return describe(p); };
    options.numberRules = config.numberRules;
    auto lossType = cast<RankedTensorType>(microLoss.getType());
    options.seed = ConstantOp::create(
        b, DenseElementsAttr::get(
               lossType, FloatAttr::get(lossType.getElementType(),
                                        1.0 / static_cast<double>(seedK))));
    // Loss scaling: the backward pass starts from scale / K.
    if (config.dynamicLossScale)
      options.seed = a.mul(options.seed,
                           a.castTo(ampArg(0), lossType.getElementType()));
    Block::iterator backwardStart = std::prev(entry->end());
    FailureOr<SmallVector<Value>> g = buildGradients(b, microLoss, wrt, options);
    if (failed(g))
      return failure();
    // Micro-batches' gradients of a weight named so (loom.cotangent): a
    // planned step sums them where they are and reduces the sum once.
    for (auto [p, grad] : llvm::enumerate(*g))
      if (Value d = grad && k > 1 && config.numberRules
                        ? CotangentOp::create(b, grad.getLoc(), grad, wrt[p])
                        : grad)
        grads[p] = grads[p] ? a.add(grads[p], d) : d;
    tag(std::next(backwardStart), "backward", nullptr);
  }
  Value lossSum = microLosses.front(); // after the copies (planner's coarsen)
  for (Value l : ArrayRef<Value>(microLosses).drop_front())
    lossSum = a.add(lossSum, l);
  loss = k > 1 ? a.mul(lossSum, 1.0 / static_cast<double>(k)) : lossSum;
  for (auto [p, i] : llvm::enumerate(params))
    if (!grads[p])
      emitWarning(fn.getLoc())
          << "the loss does not depend on " << describe(p)
          << "; it is not updated (PyTorch skips parameters without "
             "gradients)";
  LLVM_DEBUG(llvm::dbgs() << pass << ": " << params.size()
                          << " trainable parameters, " << k
                          << " micro-batches\n");
  return success();
}

/// Global-norm clipping (torch.nn.utils.clip_grad_norm_, norm_type 2).
void StepBuilder::clipGradients() {
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
  Value coef =
      a.div(a.like(total, config.gradClip), a.add(total, a.like(total, 1e-6)));
  coef = MinOp::create(b, coef, a.like(coef, 1.0));
  for (Value &g : grads)
    if (g)
      g = a.mul(g, a.castTo(coef, Arith::typeOf(g).getElementType()));
}

/// lr * schedule(step), in f64; `step` counts completed steps.
Value StepBuilder::learningRate(Value stepValue) {
  double base = config.lr;
  if (config.lrSchedule == "constant")
    return a.f64(base);
  // Hugging Face get_cosine_schedule_with_warmup (num_cycles = 0.5).
  Value s = a.castTo(stepValue, a.b.getF64Type());
  double warm = static_cast<double>(config.warmupSteps);
  double span = static_cast<double>(
      std::max<int64_t>(1, config.totalSteps - config.warmupSteps));
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

/// torch.optim.SGD: L2 decay, momentum with dampening, Nesterov.
void StepBuilder::sgdUpdate(Value param, Value g, ArrayRef<Value> state,
                            Value lr) {
  Type element = Arith::typeOf(param).getElementType();
  Value d = g;
  if (config.weightDecay != 0)
    d = a.add(d, a.mul(param, config.weightDecay));
  if (config.momentum != 0) {
    Value next = a.add(a.mul(state[0], config.momentum),
                       a.mul(d, 1.0 - config.dampening));
    if (config.dampening != 0) {
      // The first step copies the gradient into the buffer.
      Value first =
          CompareOp::create(b, CompareDirection::eq, updatesArg(),
                            a.scalar(stepType.getElementType(), 0));
      next = SelectOp::create(b, first, d, next);
    }
    newStates.push_back(next);
    d = config.nesterov ? a.add(d, a.mul(next, config.momentum)) : next;
  }
  newParams.push_back(a.sub(param, a.mul(d, a.castTo(lr, element))));
}

/// torch.optim.Adam (L2 decay on the gradient) and AdamW (decoupled decay
/// on the weight), with bias corrections of the incremented step in f64.
void StepBuilder::adamUpdate(Value param, Value g, ArrayRef<Value> state,
                             Value lr, Value stepValue) {
  Type element = Arith::typeOf(param).getElementType();
  auto asElement = [&](Value scalarF64) { return a.castTo(scalarF64, element); };
  double wd = config.weightDecay;
  Value stepF = a.castTo(stepValue, b.getF64Type());
  if (config.kind == "adamw" && wd != 0)
    param = a.mul(param, asElement(a.sub(a.f64(1.0), a.mul(lr, wd))));
  if (config.kind == "adam" && wd != 0)
    g = a.add(g, a.mul(param, wd));
  Value m = a.add(a.mul(state[0], config.beta1), a.mul(g, 1.0 - config.beta1));
  Value v = a.add(a.mul(state[1], config.beta2),
                  a.mul(a.mul(g, g), 1.0 - config.beta2));
  Value bc1 = a.sub(a.f64(1.0), PowOp::create(b, a.f64(config.beta1), stepF));
  Value bc2 = a.sub(a.f64(1.0), PowOp::create(b, a.f64(config.beta2), stepF));
  Value stepSize = a.div(lr, bc1);
  Value denom = a.add(a.div(a.sqrt(v), asElement(a.sqrt(bc2))),
                      a.like(v, config.eps));
  newParams.push_back(
      a.sub(param, a.mul(asElement(stepSize), a.div(m, denom))));
  newStates.push_back(m);
  newStates.push_back(v);
}

/// Horovod's Compression.fp16 (compress before the all-reduce, decompress
/// after): each wider float gradient goes through the 16-bit type and back.
/// Casts between floats are linear, so the partial sum a gradient is on
/// data-parallel devices passes through them, and the plan reduces it where
/// it is cheapest: in 16 bits.
void StepBuilder::compressGradients() {
  step->setAttr(LoomDialect::kGradCompressionAttrName,
                b.getStringAttr(config.gradCompression));
  if (StringRef(config.gradCompression).starts_with("topk:")) {
    markTopK();
    return;
  }
  Type low = config.gradCompression == "fp16" ? Type(b.getF16Type())
                                              : Type(b.getBF16Type());
  for (Value &g : grads) {
    if (!g)
      continue;
    auto element = cast<FloatType>(Arith::typeOf(g).getElementType());
    if (element.getWidth() <= 16)
      continue;
    Value narrow = a.castTo(g, low);
    narrow.getDefiningOp()->setAttr(LoomDialect::kGradCompressionAttrName,
                                    b.getStringAttr(config.gradCompression));
    g = a.castTo(narrow, element);
  }
}

/// Top-k compression with error feedback selects on each device's own
/// partial gradient, so it has no single-device form: each weight gradient
/// passes through a marked optimization barrier, which the partitioner
/// reduces in front of (the barrier is not linear), and
/// loom-compress-gradients replaces that reduction with the exchange of
/// each device's top-k entries, adding the per-device residual.
void StepBuilder::markTopK() {
  for (auto [p, g] : llvm::enumerate(grads)) {
    if (!g || Arith::typeOf(g).getRank() == 0)
      continue;
    auto barrier = OptimizationBarrierOp::create(b, ValueRange{g});
    barrier->setAttr(LoomDialect::kGradCompressionAttrName,
                     b.getStringAttr(config.gradCompression));
    barrier->setAttr(LoomDialect::kParamAttrName,
                     FlatSymbolRefAttr::get(
                         boundParameter(fn, params[p]).getSymNameAttr()));
    g = barrier.getResult(0);
  }
}

/// GradScaler.unscale_: gradients times the f32 reciprocal of the scale
/// (computed in f64, as PyTorch does), and whether any scaled gradient is
/// inf or NaN. The count of such elements sums over every shard, so the
/// partitioner's all-reduce makes all ranks agree.
void StepBuilder::unscaleGradients() {
  Type f32 = b.getF32Type();
  Value inv = a.castTo(
      a.div(a.f64(1.0), a.castTo(ampArg(0), b.getF64Type())), f32);
  Value bad;
  for (Value &g : grads) {
    if (!g)
      continue;
    Value finite = CompareOp::create(b, CompareDirection::lt, AbsOp::create(b, g),
                                     a.like(g, INFINITY));
    Value count = a.sumAll(
        SelectOp::create(b, finite, a.scalar(f32, 0.0), a.scalar(f32, 1.0)));
    bad = bad ? a.add(bad, count) : count;
    g = a.mul(g, a.castTo(inv, Arith::typeOf(g).getElementType()));
  }
  foundInf = CompareOp::create(b, CompareDirection::gt, bad, a.scalar(f32, 0.0));
}

/// GradScaler.update (_amp_update_scale_): halve the scale and reset the
/// tracker after an overflow; double it (if the result is finite) after
/// `growthInterval` clean steps in a row.
void StepBuilder::updateLossScale() {
  Type i64 = stepType.getElementType();
  Value scale = ampArg(0), tracker = ampArg(1), updates = ampArg(2);
  Value one = a.scalar(i64, 1), zero = a.scalar(i64, 0);
  Value successful = a.add(tracker, one);
  Value grow = CompareOp::create(b, CompareDirection::ge, successful,
                                 a.scalar(i64, config.growthInterval));
  Value grown = a.mul(scale, 2.0);
  Value finite = CompareOp::create(b, CompareDirection::lt, grown,
                                   a.like(grown, INFINITY));
  Value clean = SelectOp::create(
      b, grow, SelectOp::create(b, finite, grown, scale), scale);
  newAmp.push_back(SelectOp::create(b, foundInf, a.mul(scale, 0.5), clean));
  newAmp.push_back(SelectOp::create(
      b, foundInf, zero, SelectOp::create(b, grow, zero, successful)));
  newAmp.push_back(
      SelectOp::create(b, foundInf, updates, a.add(updates, one)));
}

void StepBuilder::update() {
  nextStep = a.add(stepArg(), a.scalar(stepType.getElementType(), 1));
  Value nextUpdate =
      config.dynamicLossScale
          ? a.add(updatesArg(), a.scalar(stepType.getElementType(), 1))
          : nextStep;
  Value lr = learningRate(stepArg());
  unsigned stateArg = fn.getNumArguments();
  for (auto [p, i] : llvm::enumerate(params)) {
    Value param = entry->getArgument(i);
    SmallVector<Value> state;
    for (size_t s = 0; s < states[p].size(); ++s)
      state.push_back(entry->getArgument(stateArg++));
    Block::iterator before = std::prev(entry->end());
    size_t firstState = newStates.size();
    if (!grads[p]) {
      newParams.push_back(param);
      llvm::append_range(newStates, state);
    } else if (config.kind == "sgd") {
      sgdUpdate(param, grads[p], state, lr);
    } else {
      adamUpdate(param, grads[p], state, lr, nextUpdate);
    }
    // A step with inf/NaN gradients leaves weights and state as they were.
    if (foundInf && grads[p]) {
      newParams.back() = SelectOp::create(b, foundInf, param, newParams.back());
      for (auto [i, old] : llvm::enumerate(state))
        newStates[firstState + i] =
            SelectOp::create(b, foundInf, old, newStates[firstState + i]);
    }
    if (pipelined && paramStages[p])
      tag(std::next(before), "update", paramStages[p]);
  }
}

/// Returns the loss, then every updated value with `loom.param` naming the
/// parameter it is the next value of.
void StepBuilder::finish() {
  SmallVector<Value> results = {loss};
  SmallVector<DictionaryAttr> resultAttrs;
  NamedAttrList lossAttrs;
  lossAttrs.set(LoomDialect::kNameAttrName, StringAttr::get(ctx, "loss"));
  resultAttrs.push_back(lossAttrs.getDictionary(ctx));
  for (auto [p, i] : llvm::enumerate(params)) {
    results.push_back(newParams[p]);
    resultAttrs.push_back(paramRef(boundParameter(fn, i)));
  }
  unsigned s = 0;
  for (auto &perParam : states)
    for (ParameterOp decl : perParam) {
      results.push_back(newStates[s++]);
      resultAttrs.push_back(paramRef(decl));
    }
  results.push_back(nextStep);
  resultAttrs.push_back(paramRef(stepDecl));
  for (auto [value, decl] : llvm::zip(newAmp, ampDecls)) {
    results.push_back(value);
    resultAttrs.push_back(paramRef(decl));
  }
  for (const StateUpdate &s : stateUpdates) {
    results.push_back(s.next);
    resultAttrs.push_back(paramRef(s.decl));
  }
  func::ReturnOp::create(b, results);
  step.setFunctionType(
      FunctionType::get(ctx, argTypes, ValueRange(results).getTypes()));
  step.setAllResultAttrs(resultAttrs);
}

struct BuildTrainStepPass
    : loom::impl::LoomBuildTrainStepBase<BuildTrainStepPass> {
  using LoomBuildTrainStepBase::LoomBuildTrainStepBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    int64_t m = microBatches; // 0: loom.pipeline_plan's
    if (failed(resolvePlannedMicroBatches(module, m, getArgument(), "micro-batches")))
      return signalPassFailure();
    microBatches = static_cast<unsigned>(m);
    FailureOr<func::FuncOp> fn =
        lookupFunction(module, function, getArgument());
    if (failed(fn) || failed(checkOptions(*fn)) ||
        failed(verifyLossFunction(*fn, getArgument())))
      return signalPassFailure();
    if (module.lookupSymbol("train_step")) {
      fn->emitError() << getArgument() << ": @train_step already exists";
      return signalPassFailure();
    }
    OptimizerConfig config{optimizer,    effectiveLr(), effectiveWeightDecay(),
                           momentum,     dampening,     beta1,
                           beta2,        eps,           gradClip,
                           nesterov,     microBatches,  lrSchedule,
                           warmupSteps,  totalSteps,  numberGradientRules,
                           lossScale == "dynamic", lossScaleInit,
                           lossScaleGrowthInterval, gradCompression};
    if (failed(StepBuilder(module, *fn, config, getArgument()).build()))
      return signalPassFailure();
    if (!keepForward)
      fn->erase();
  }

  LogicalResult checkOptions(func::FuncOp fn);
  double effectiveLr() const { return lr >= 0 ? double(lr) : 1e-3; }
  double effectiveWeightDecay() const {
    return weightDecay >= 0 ? double(weightDecay) : optimizer == "adamw" ? 0.01 : 0.0;
  }
};

} // namespace

LogicalResult BuildTrainStepPass::checkOptions(func::FuncOp fn) {
  auto fail = [&]() {
    return fn.emitError() << "loom-build-train-step: ";
  };
  if (optimizer == "none") {
    // The function updates its own state: nothing here touches gradients.
    if (microBatches > 1 || gradClip > 0 || lossScale == "dynamic" ||
        gradCompression != "none")
      return fail() << "optimizer=none (a step that updates its own state) "
                       "takes one batch per step and no gradient options "
                       "(micro-batches, grad-clip, loss-scale, "
                       "grad-compression)";
    return success();
  }
  if (optimizer != "sgd" && optimizer != "adam" && optimizer != "adamw")
    return fail() << "unknown optimizer '" << optimizer
                  << "' (expected sgd, adam, adamw or none)";
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
  if (StringRef(gradCompression).starts_with("topk:")) {
    if (!LoomDialect::topKRatio(gradCompression))
      return fail() << "grad-compression '" << gradCompression
                    << "': the top-k ratio must be a number in (0, 1], e.g. "
                       "topk:0.01 sends 1% of each gradient";
    if (lossScale == "dynamic")
      return fail() << "grad-compression=" << gradCompression
                    << " keeps residuals of scaled gradients across steps, "
                       "which dynamic loss scaling would rescale; use "
                       "--precision=bf16 (no loss scaling) or fp16 "
                       "compression";
  } else if (gradCompression != "none" && gradCompression != "fp16" &&
             gradCompression != "bf16") {
    return fail() << "unknown grad-compression '" << gradCompression
                  << "' (expected none, fp16, bf16 or topk:RATIO; PowerSGD "
                     "is not implemented yet)";
  }
  if (lossScale != "none" && lossScale != "dynamic")
    return fail() << "unknown loss-scale '" << lossScale
                  << "' (expected none or dynamic)";
  if (!(lossScaleInit > 0) || !std::isfinite(lossScaleInit) ||
      lossScaleGrowthInterval < 1)
    return fail() << "dynamic loss scaling needs a finite loss-scale-init > 0 "
                  << "and loss-scale-growth-interval >= 1, got "
                  << static_cast<double>(lossScaleInit) << " and "
                  << static_cast<int64_t>(lossScaleGrowthInterval);
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
