//===- Autodiff.cpp - Reverse-mode differentiation of loom IR --------------===//

#include "loom/Training/Autodiff.h"

#include "loom/Support/Debug.h"

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#define DEBUG_TYPE "loom-autodiff"

using namespace mlir;
using namespace mlir::loom;

static bool isFloatTensor(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && isa<FloatType>(type.getElementType());
}

static bool hasRuleFor(Operation *op, unsigned operand) {
  auto rule = dyn_cast<DifferentiableOpInterface>(op);
  return rule && rule.isDifferentiableOperand(operand);
}

/// "'loom.cast'", with the imported op and model node it came from.
static std::string describeOp(Operation *op) {
  std::string s = "'" + op->getName().getStringRef().str() + "'";
  if (auto opaque = dyn_cast<OpaqueOp>(op))
    s += " (imported " + opaque.getOpName().str() + ")";
  if (auto name = dyn_cast<NameLoc>(op->getLoc()))
    s += " (model node '" + name.getName().str() + "')";
  return s;
}

/// Which `wrt` values each value of `ops` depends on: differentiably
/// (`varied`: through float values and ops with gradient rules) and at all
/// (`reached`).
static void forwardActivity(ArrayRef<Operation *> ops, ArrayRef<Value> wrt,
                            DenseMap<Value, llvm::BitVector> &varied,
                            DenseMap<Value, llvm::BitVector> &reached) {
  unsigned n = wrt.size();
  for (auto [i, v] : llvm::enumerate(wrt)) {
    varied.try_emplace(v, n).first->second.set(i);
    reached.try_emplace(v, n).first->second.set(i);
  }
  for (Operation *op : ops) {
    llvm::BitVector dOut(n), rOut(n);
    for (auto [i, v] : llvm::enumerate(op->getOperands())) {
      if (auto it = reached.find(v); it != reached.end())
        rOut |= it->second;
      if (auto it = varied.find(v); it != varied.end())
        if (hasRuleFor(op, i))
          dOut |= it->second;
    }
    if (rOut.none())
      continue;
    for (Value r : op->getResults()) {
      reached[r] = rOut;
      if (dOut.any() && isFloatTensor(r))
        varied[r] = dOut;
    }
  }
}

Dependence mlir::loom::analyzeDependence(Block &block, ArrayRef<Value> from,
                                         ValueRange to) {
  SmallVector<Operation *> ops;
  for (Operation &op : block)
    ops.push_back(&op);
  DenseMap<Value, llvm::BitVector> varied, reached;
  forwardActivity(ops, from, varied, reached);
  Dependence result{llvm::BitVector(from.size()),
                    llvm::BitVector(from.size())};
  for (Value v : to) {
    if (auto it = reached.find(v); it != reached.end())
      result.reached |= it->second;
    if (auto it = varied.find(v); it != varied.end())
      result.differentiable |= it->second;
  }
  return result;
}

namespace {

/// What the reverse sweep needs to know about the ops before the insertion
/// point that the output depends on (`ops`, in block order): which wrt
/// values each value depends on, differentiably (`varied`) and at all
/// (`reached`), and the values the output depends on (`useful`).
struct Activity {
  SmallVector<Operation *> ops;
  DenseMap<Value, llvm::BitVector> varied, reached;
  DenseSet<Value> useful;
  std::function<std::string(unsigned)> describe;
};

/// An op on a float path from wrt to output that cannot pass a gradient
/// would silently drop part of it: an error naming the op.
LogicalResult checkRules(const Activity &act) {
  for (Operation *op : act.ops) {
    bool usefulFloatResult = llvm::any_of(op->getResults(), [&](Value r) {
      return act.useful.contains(r) && isFloatTensor(r);
    });
    if (!usefulFloatResult)
      continue;
    for (auto [i, v] : llvm::enumerate(op->getOperands())) {
      auto it = act.varied.find(v);
      if (it == act.varied.end() || hasRuleFor(op, i))
        continue;
      InFlightDiagnostic diag = op->emitError() << describeOp(op);
      if (!isa<DifferentiableOpInterface>(op))
        diag << " has no gradient rule, but the gradient with respect to "
             << act.describe(it->second.find_first()) << " flows through it";
      else
        diag << " has no gradient for operand #" << i << ", but "
             << act.describe(it->second.find_first()) << " reaches it";
      return failure();
    }
  }
  return success();
}

/// A wrt value that the output depends on only through non-differentiable
/// values (integers, booleans): an error naming the first op where the
/// dependence stops being differentiable.
LogicalResult checkDifferentiable(const Activity &act, Value output,
                                  unsigned n) {
  llvm::BitVector outVaried = act.varied.lookup(output);
  llvm::BitVector outReached = act.reached.lookup(output);
  outVaried.resize(n);
  outReached.resize(n);
  auto carries = [&](Value v, unsigned i) {
    auto it = act.varied.find(v);
    return it != act.varied.end() && it->second.test(i);
  };
  for (unsigned i = 0; i < n; ++i) {
    if (!outReached.test(i) || outVaried.test(i))
      continue;
    for (Operation *op : act.ops) {
      bool takesVaried = llvm::any_of(op->getOperands(),
                                      [&](Value v) { return carries(v, i); });
      bool passesOn = llvm::any_of(op->getResults(),
                                   [&](Value r) { return carries(r, i); });
      bool reachesOutput = llvm::any_of(
          op->getResults(), [&](Value r) { return act.useful.contains(r); });
      if (takesVaried && !passesOn && reachesOutput)
        return op->emitError()
               << "not differentiable: the result depends on "
               << act.describe(i) << " only through " << describeOp(op)
               << ", which produces " << op->getResult(0).getType()
               << ", so no gradient reaches " << act.describe(i);
    }
    return emitError(output.getLoc())
           << "the result depends on " << act.describe(i)
           << " only through non-differentiable values";
  }
  return success();
}

/// Calls each active op's rule in reverse order, summing the gradients of
/// values with several uses.
LogicalResult reverseSweep(OpBuilder &builder, const Activity &act,
                           Value output, Value seed, bool numberRules,
                           DenseMap<Value, Value> &grads) {
  grads[output] = seed;
  // Numbers for the forward ops whose rules run, after any already given.
  int64_t nextId = 0;
  for (Operation &op : *builder.getInsertionBlock())
    if (auto id = op.getAttrOfType<IntegerAttr>(LoomDialect::kOpIdAttrName))
      nextId = std::max(nextId, id.getInt() + 1);
  auto accumulate = [&](Value v, Value g) {
    // Each gradient of a value an op made is named as such: a planned step
    // brings it to the value's layout before summing (CotangentOp).
    if (numberRules && v.getDefiningOp())
      g = CotangentOp::create(builder, g.getLoc(), g, v);
    auto [it, inserted] = grads.try_emplace(v, g);
    if (!inserted)
      it->second = AddOp::create(builder, g.getLoc(), it->second, g);
  };
  for (Operation *op : llvm::reverse(act.ops)) {
    SmallVector<Value> resultGrads;
    for (Value r : op->getResults())
      resultGrads.push_back(grads.lookup(r));
    if (llvm::none_of(resultGrads, [](Value g) { return bool(g); }))
      continue;
    SmallVector<bool> wanted;
    for (auto [i, v] : llvm::enumerate(op->getOperands()))
      wanted.push_back(act.varied.count(v) && act.useful.contains(v) &&
                       hasRuleFor(op, i));
    if (llvm::none_of(wanted, [](bool w) { return w; }))
      continue;
    auto rule = cast<DifferentiableOpInterface>(op);
    SmallVector<Value> operandGrads;
    Block *block = builder.getInsertionBlock();
    Operation *before = builder.getInsertionPoint() == block->begin()
                            ? nullptr
                            : &*std::prev(builder.getInsertionPoint());
    if (failed(rule.buildGradients(builder, resultGrads, wanted, operandGrads)))
      return failure();
    // Ties the rule's ops to the op (see kVjpOfAttrName).
    auto first = before ? std::next(before->getIterator()) : block->begin();
    if (numberRules && first != builder.getInsertionPoint()) {
      auto id = builder.getI64IntegerAttr(nextId++);
      op->setAttr(LoomDialect::kOpIdAttrName, id);
      for (Operation &b : llvm::make_range(first, builder.getInsertionPoint()))
        if (!b.hasTrait<OpTrait::ConstantLike>())
          b.setAttr(LoomDialect::kVjpOfAttrName, id);
    }
    for (auto [i, v] : llvm::enumerate(op->getOperands())) {
      if (!wanted[i] || i >= operandGrads.size() || !operandGrads[i])
        continue;
      if (operandGrads[i].getType() != v.getType())
        return op->emitOpError("gradient rule produced ")
               << operandGrads[i].getType() << " for operand #" << i
               << " of type " << v.getType() << " (a bug in Loom)";
      accumulate(v, operandGrads[i]);
    }
    // A pipelined op's gradient runs on its stage, and so do the sums of
    // gradient contributions it completes.
    if (Attribute stage = op->getAttr(LoomDialect::kStageAttrName)) {
      auto from = before ? std::next(before->getIterator()) : block->begin();
      for (Operation &b : llvm::make_range(from, builder.getInsertionPoint()))
        if (!b.hasTrait<OpTrait::ConstantLike>())
          b.setAttr(LoomDialect::kStageAttrName, stage);
    }
  }
  return success();
}

} // namespace

FailureOr<SmallVector<Value>>
mlir::loom::buildGradients(OpBuilder &builder, Value output,
                           ArrayRef<Value> wrt,
                           const GradientOptions &options) {
  Block *block = builder.getInsertionBlock();
  Activity act;
  act.describe = [&](unsigned i) {
    return options.describe ? options.describe(i)
                            : "input #" + std::to_string(i);
  };
  if (!isFloatTensor(output))
    return emitError(output.getLoc(), "cannot differentiate a value of type ")
           << output.getType() << ": it is not a float tensor";
  for (auto [i, v] : llvm::enumerate(wrt))
    if (!isFloatTensor(v))
      return emitError(v.getLoc(), "cannot differentiate with respect to ")
             << act.describe(i) << " of type " << v.getType()
             << ": it is not a float tensor";

  // Only the ops before the insertion point that the output depends on
  // (the rest get no gradient and need no activity): found from the output,
  // not by scanning the block, whose length grows with each micro-batch's
  // forward and backward pass (a step of M copies scanned M^2 / 2 of them).
  Block::iterator end = builder.getInsertionPoint();
  auto inScope = [&](Operation *op) {
    return op && op->getBlock() == block &&
           (end == block->end() || op->isBeforeInBlock(&*end));
  };
  act.useful.insert(output);
  DenseSet<Operation *> seen;
  SmallVector<Value> work{output};
  while (!work.empty()) {
    Operation *op = work.pop_back_val().getDefiningOp();
    if (!inScope(op) || !seen.insert(op).second)
      continue;
    act.ops.push_back(op);
    for (Value v : op->getOperands())
      if (act.useful.insert(v).second)
        work.push_back(v);
  }
  llvm::sort(act.ops, [](Operation *a, Operation *b) {
    return a->isBeforeInBlock(b);
  });
  forwardActivity(act.ops, wrt, act.varied, act.reached);
  if (failed(checkRules(act)) ||
      failed(checkDifferentiable(act, output, wrt.size())))
    return failure();

  Value seed = options.seed;
  if (!seed) {
    auto type = cast<RankedTensorType>(output.getType());
    seed = ConstantOp::create(
        builder, output.getLoc(),
        DenseElementsAttr::get(type,
                               FloatAttr::get(type.getElementType(), 1.0)));
  }
  DenseMap<Value, Value> grads;
  if (failed(reverseSweep(builder, act, output, seed, options.numberRules, grads)))
    return failure();
  SmallVector<Value> result;
  for (Value v : wrt)
    result.push_back(grads.lookup(v));
  LLVM_DEBUG(llvm::dbgs() << "autodiff: " << act.ops.size() << " ops, "
                          << grads.size() << " gradients\n");
  return result;
}
