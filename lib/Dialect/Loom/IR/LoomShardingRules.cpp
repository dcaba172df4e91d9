//===- LoomShardingRules.cpp - ShardingRuleOpInterface for every op --------===//
//
// One factor rule per op. Dimensions of size 1 never get a factor: they
// cannot be split and broadcasting maps them to nothing.
//
//===----------------------------------------------------------------------===//

#include "loom/Dialect/Loom/IR/LoomOps.h"

using namespace mlir;
using namespace mlir::loom;

namespace {
/// Adds factors for the common case where sizes of 1 map to no factor.
struct RuleBuilder {
  ShardingRule rule;

  /// Returns the new factor, or -1 for size 1.
  int64_t factor(int64_t size, FactorKind kind,
                 ReductionKind reduction = ReductionKind::sum) {
    if (size == 1)
      return -1;
    return rule.addFactor(size, kind, reduction);
  }
  /// One factor of `kind` per dimension of `shape`.
  SmallVector<int64_t> factorsFor(ArrayRef<int64_t> shape, FactorKind kind) {
    SmallVector<int64_t> fs;
    for (int64_t size : shape)
      fs.push_back(factor(size, kind));
    return fs;
  }
  static TensorFactors dims(ArrayRef<int64_t> factorPerDim) {
    TensorFactors t;
    for (int64_t f : factorPerDim) {
      DimFactors d;
      if (f >= 0)
        d.push_back(f);
      t.push_back(d);
    }
    return t;
  }
  void operand(ArrayRef<int64_t> factorPerDim) {
    rule.addOperand(dims(factorPerDim));
  }
  void result(ArrayRef<int64_t> factorPerDim) {
    rule.addResult(dims(factorPerDim));
  }
};

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// Result i is operand i, dimension for dimension (parallel factors).
ShardingRule passThroughRule(ValueRange inputs) {
  RuleBuilder b;
  for (Value v : inputs) {
    SmallVector<int64_t> f = b.factorsFor(shapeOf(v), FactorKind::Parallel);
    b.operand(f);
    b.result(f);
  }
  return b.rule;
}
} // namespace

//===----------------------------------------------------------------------===//
// Ops without tensor values, and elementwise ops
//===----------------------------------------------------------------------===//

ShardingRule MeshOp::getShardingRule() { return {}; }
ShardingRule ParameterOp::getShardingRule() { return {}; }

// Nothing is known about an opaque op: every dimension stays whole.
ShardingRule OpaqueOp::getShardingRule() {
  RuleBuilder b;
  for (Value v : getInputs())
    b.operand(b.factorsFor(shapeOf(v), FactorKind::Replicated));
  for (Value v : getResults())
    b.result(b.factorsFor(shapeOf(v), FactorKind::Replicated));
  b.rule.setNeedsWholeTensors();
  return b.rule;
}

// A selection over the whole input: nothing is split.
ShardingRule TopKIndicesOp::getShardingRule() {
  RuleBuilder b;
  b.operand(b.factorsFor(shapeOf(getInput()), FactorKind::Replicated));
  b.result(b.factorsFor(shapeOf(getResult()), FactorKind::Replicated));
  b.rule.setNeedsWholeTensors();
  return b.rule;
}

// Each result is its operand: the same factors.
ShardingRule OptimizationBarrierOp::getShardingRule() {
  return passThroughRule(getInputs());
}

// Each result is its operand.
ShardingRule WaitOp::getShardingRule() { return passThroughRule(getInputs()); }

// The result is the gradient; the primal only names a layout (the
// partitioner's), so propagation does not carry it into the gradient.
ShardingRule CotangentOp::getShardingRule() {
  RuleBuilder b;
  SmallVector<int64_t> g =
      b.factorsFor(shapeOf(getGradient()), FactorKind::Parallel);
  b.operand(g);
  b.operand(b.factorsFor(shapeOf(getPrimal()), FactorKind::Parallel));
  b.result(g);
  return b.rule;
}

#define LOOM_ELEMENTWISE_RULE(OP)                                              \
  ShardingRule OP::getShardingRule() {                                         \
    return ShardingRule::elementwise(getOperation());                          \
  }
// Elementwise and linear: partial sums pass through.
#define LOOM_LINEAR_RULE(OP, ...)                                              \
  ShardingRule OP::getShardingRule() {                                         \
    ShardingRule rule = ShardingRule::elementwise(getOperation());             \
    rule.setLinearity(__VA_ARGS__);                                            \
    return rule;                                                               \
  }
LOOM_ELEMENTWISE_RULE(ConstantOp)
LOOM_ELEMENTWISE_RULE(ShardingConstraintOp)
LOOM_LINEAR_RULE(NegOp, Linearity::Joint)
LOOM_ELEMENTWISE_RULE(AbsOp)
LOOM_ELEMENTWISE_RULE(ExpOp)
LOOM_ELEMENTWISE_RULE(LogOp)
LOOM_ELEMENTWISE_RULE(SqrtOp)
LOOM_ELEMENTWISE_RULE(RsqrtOp)
LOOM_ELEMENTWISE_RULE(TanhOp)
LOOM_ELEMENTWISE_RULE(SigmoidOp)
LOOM_ELEMENTWISE_RULE(ReluOp)
LOOM_ELEMENTWISE_RULE(ErfOp)
LOOM_ELEMENTWISE_RULE(FloorOp)
LOOM_ELEMENTWISE_RULE(CeilOp)
LOOM_ELEMENTWISE_RULE(RoundOp)
LOOM_ELEMENTWISE_RULE(SinOp)
LOOM_ELEMENTWISE_RULE(CosOp)
LOOM_ELEMENTWISE_RULE(GeluOp)
LOOM_LINEAR_RULE(AddOp, Linearity::Joint)
LOOM_LINEAR_RULE(SubOp, Linearity::Joint)
LOOM_LINEAR_RULE(MulOp, Linearity::PerOperand, {0, 1})
LOOM_LINEAR_RULE(DivOp, Linearity::PerOperand, {0})
LOOM_ELEMENTWISE_RULE(PowOp)
LOOM_ELEMENTWISE_RULE(MaxOp)
LOOM_ELEMENTWISE_RULE(MinOp)
LOOM_ELEMENTWISE_RULE(CompareOp)
LOOM_ELEMENTWISE_RULE(SelectOp)
#undef LOOM_ELEMENTWISE_RULE
#undef LOOM_LINEAR_RULE

// Linear between float types (an integer cast truncates).
ShardingRule CastOp::getShardingRule() {
  ShardingRule rule = ShardingRule::elementwise(getOperation());
  if (isa<FloatType>(getInput().getType().getElementType()) &&
      isa<FloatType>(getType().getElementType()))
    rule.setLinearity(Linearity::Joint);
  return rule;
}

// The mask is a function of the global element index, which a per-device
// op does not know: dropout runs on whole tensors (values around it stay
// split; the seed is a scalar).
ShardingRule DropoutOp::getShardingRule() {
  ShardingRule rule = ShardingRule::elementwise(getOperation());
  rule.setNeedsWholeTensors();
  return rule;
}

//===----------------------------------------------------------------------===//
// Contraction and reductions
//===----------------------------------------------------------------------===//

ShardingRule DotGeneralOp::getShardingRule() {
  RuleBuilder b;
  ArrayRef<int64_t> lhs = shapeOf(getLhs()), rhs = shapeOf(getRhs());
  ArrayRef<int64_t> lb = getLhsBatchingDims(), rb = getRhsBatchingDims();
  ArrayRef<int64_t> lc = getLhsContractingDims(), rc = getRhsContractingDims();
  SmallVector<int64_t> lf(lhs.size(), -1), rf(rhs.size(), -1);
  SmallVector<int64_t> batchF(lb.size(), -1), lhsFree, rhsFree;
  // Factors in lhs dimension order, then the rhs's own dimensions.
  for (int64_t d = 0, e = lhs.size(); d < e; ++d) {
    if (auto *it = llvm::find(lb, d); it != lb.end()) {
      int64_t k = it - lb.begin();
      lf[d] = rf[rb[k]] = batchF[k] = b.factor(lhs[d], FactorKind::Parallel);
    } else if (auto *it = llvm::find(lc, d); it != lc.end()) {
      lf[d] = rf[rc[it - lc.begin()]] =
          b.factor(lhs[d], FactorKind::Reduction, ReductionKind::sum);
    } else {
      lhsFree.push_back(lf[d] = b.factor(lhs[d], FactorKind::Parallel));
    }
  }
  for (int64_t d = 0, e = rhs.size(); d < e; ++d)
    if (!llvm::is_contained(rb, d) && !llvm::is_contained(rc, d))
      rhsFree.push_back(rf[d] = b.factor(rhs[d], FactorKind::Parallel));
  SmallVector<int64_t> out = batchF;
  llvm::append_range(out, lhsFree);
  llvm::append_range(out, rhsFree);
  b.operand(lf);
  b.operand(rf);
  b.result(out);
  b.rule.setContraction();
  return b.rule;
}

static ShardingRule reduceRule(Operation *op, ArrayRef<int64_t> dims,
                               bool keepdims, ReductionKind kind,
                               bool mean = false) {
  RuleBuilder b;
  ArrayRef<int64_t> in = shapeOf(op->getOperand(0));
  SmallVector<int64_t> inF, outF;
  for (int64_t d = 0, e = in.size(); d < e; ++d) {
    bool reduced = llvm::is_contained(dims, d);
    int64_t f = b.factor(in[d], reduced ? FactorKind::Reduction
                                        : FactorKind::Parallel,
                         kind);
    if (reduced && mean && f >= 0)
      b.rule.setAveraged(f);
    inF.push_back(f);
    if (!reduced)
      outF.push_back(f);
    else if (keepdims)
      outF.push_back(-1);
  }
  b.operand(inF);
  b.result(outF);
  return b.rule;
}

ShardingRule ReduceSumOp::getShardingRule() {
  ShardingRule rule =
      reduceRule(*this, getDims(), getKeepdims(), ReductionKind::sum);
  rule.setLinearity(Linearity::Joint);
  return rule;
}
// A split mean is a sum of local means scaled by 1/shards (the factors are
// `averaged`), so the combiner is `sum`.
ShardingRule ReduceMeanOp::getShardingRule() {
  return reduceRule(*this, getDims(), getKeepdims(), ReductionKind::sum,
                    /*mean=*/true);
}
ShardingRule ReduceMaxOp::getShardingRule() {
  return reduceRule(*this, getDims(), getKeepdims(), ReductionKind::max);
}
ShardingRule ReduceMinOp::getShardingRule() {
  return reduceRule(*this, getDims(), getKeepdims(), ReductionKind::min);
}
ShardingRule ReduceProdOp::getShardingRule() {
  return reduceRule(*this, getDims(), getKeepdims(), ReductionKind::prod);
}

//===----------------------------------------------------------------------===//
// Windowed ops
//===----------------------------------------------------------------------===//

ShardingRule ConvOp::getShardingRule() {
  RuleBuilder b;
  ArrayRef<int64_t> x = shapeOf(getInput()), w = shapeOf(getFilter()),
                    y = shapeOf(getResult());
  int64_t n = b.factor(x[0], FactorKind::Parallel);
  int64_t f, c, cw;
  if (getGroups() == 1) {
    f = b.factor(w[0], FactorKind::Parallel);
    c = cw = b.factor(x[1], FactorKind::Reduction, ReductionKind::sum);
  } else {
    // Grouped: a filter slice needs the matching channel group; keep whole.
    f = b.factor(w[0], FactorKind::Replicated);
    c = b.factor(x[1], FactorKind::Replicated);
    cw = b.factor(w[1], FactorKind::Replicated);
  }
  // Windows overlap (halos): spatial dimensions stay whole.
  SmallVector<int64_t> xf{n, c}, wf{f, cw}, yf{n, f};
  llvm::append_range(xf, b.factorsFor(x.drop_front(2), FactorKind::Replicated));
  llvm::append_range(wf, b.factorsFor(w.drop_front(2), FactorKind::Replicated));
  llvm::append_range(yf, b.factorsFor(y.drop_front(2), FactorKind::Replicated));
  b.operand(xf);
  b.operand(wf);
  b.result(yf);
  b.rule.setContraction();
  // Multiply-accumulates: every output element, every input channel of
  // its group, every kernel position.
  double flops = 2.0 * x[0] * w[0] * w[1];
  for (int64_t d : w.drop_front(2))
    flops *= d;
  for (int64_t d : y.drop_front(2))
    flops *= d;
  b.rule.setFlops(flops);
  return b.rule;
}

static ShardingRule poolRule(Operation *op) {
  RuleBuilder b;
  ArrayRef<int64_t> x = shapeOf(op->getOperand(0)),
                    y = shapeOf(op->getResult(0));
  int64_t n = b.factor(x[0], FactorKind::Parallel);
  int64_t c = b.factor(x[1], FactorKind::Parallel);
  SmallVector<int64_t> xf{n, c}, yf{n, c};
  llvm::append_range(xf, b.factorsFor(x.drop_front(2), FactorKind::Replicated));
  llvm::append_range(yf, b.factorsFor(y.drop_front(2), FactorKind::Replicated));
  b.operand(xf);
  b.result(yf);
  return b.rule;
}

ShardingRule MaxPoolOp::getShardingRule() { return poolRule(*this); }
ShardingRule AvgPoolOp::getShardingRule() { return poolRule(*this); }
// Indices are flat positions in the global input.
ShardingRule MaxPoolIndicesOp::getShardingRule() {
  ShardingRule rule = poolRule(*this);
  rule.setNeedsWholeTensors();
  return rule;
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

ShardingRule ReshapeOp::getShardingRule() {
  ShardingRule rule = ShardingRule::reshape(*this);
  rule.setLinearity(Linearity::Joint);
  return rule;
}

ShardingRule TransposeOp::getShardingRule() {
  ShardingRule rule = ShardingRule::permutation(*this, getPermutation());
  rule.setLinearity(Linearity::Joint);
  return rule;
}

ShardingRule BroadcastOp::getShardingRule() {
  RuleBuilder b;
  ArrayRef<int64_t> in = shapeOf(getInput()), out = shapeOf(getResult());
  SmallVector<int64_t> outF = b.factorsFor(out, FactorKind::Parallel);
  SmallVector<int64_t> inF;
  for (auto [i, d] : llvm::enumerate(getDims()))
    inF.push_back(in[i] == out[d] ? outF[d] : -1);
  b.operand(inF);
  b.result(outF);
  b.rule.setLinearity(Linearity::Joint);
  return b.rule;
}

ShardingRule ConcatOp::getShardingRule() {
  RuleBuilder b;
  ArrayRef<int64_t> out = shapeOf(getResult());
  int64_t axis = getAxis();
  SmallVector<int64_t> shared(out.size(), -1);
  for (int64_t d = 0, e = out.size(); d < e; ++d)
    if (d != axis)
      shared[d] = b.factor(out[d], FactorKind::Parallel);
  for (Value v : getInputs()) {
    SmallVector<int64_t> f = shared;
    f[axis] = b.factor(shapeOf(v)[axis], FactorKind::Replicated);
    b.operand(f);
  }
  SmallVector<int64_t> f = shared;
  f[axis] = b.factor(out[axis], FactorKind::Replicated);
  b.result(f);
  b.rule.setLinearity(Linearity::Joint);
  return b.rule;
}

/// For ops that keep some dimensions whole (`keep[d]`) and change the rest:
/// kept dimensions share a parallel factor, changed ones get separate
/// replicated factors on each side.
static ShardingRule sameOrReplicated(Operation *op, ArrayRef<bool> keep) {
  RuleBuilder b;
  ArrayRef<int64_t> in = shapeOf(op->getOperand(0)),
                    out = shapeOf(op->getResult(0));
  SmallVector<int64_t> inF, outF;
  for (int64_t d = 0, e = in.size(); d < e; ++d) {
    if (keep[d]) {
      int64_t f = b.factor(in[d], FactorKind::Parallel);
      inF.push_back(f);
      outF.push_back(f);
    } else {
      inF.push_back(b.factor(in[d], FactorKind::Replicated));
      outF.push_back(b.factor(out[d], FactorKind::Replicated));
    }
  }
  b.operand(inF);
  b.result(outF);
  return b.rule;
}

ShardingRule SliceOp::getShardingRule() {
  ArrayRef<int64_t> in = shapeOf(getInput());
  SmallVector<bool> keep;
  for (int64_t d = 0, e = in.size(); d < e; ++d)
    keep.push_back(getStart()[d] == 0 && getLimit()[d] == in[d] &&
                   getStride()[d] == 1);
  ShardingRule rule = sameOrReplicated(*this, keep);
  rule.setLinearity(Linearity::Joint);
  return rule;
}

// A dimension split over devices is taken whole on each (only dimensions
// the slice keeps whole can be split): its limit becomes the local size.
void SliceOp::adaptToLocalTypes(TypeRange globalOperandTypes) {
  SmallVector<int64_t> limit(getLimit());
  ArrayRef<int64_t> local = getInput().getType().getShape();
  ArrayRef<int64_t> global =
      cast<RankedTensorType>(globalOperandTypes[0]).getShape();
  for (auto [d, l] : llvm::enumerate(limit))
    if (local[d] != global[d])
      l = local[d];
  setLimit(limit);
}

ShardingRule PadOp::getShardingRule() {
  SmallVector<bool> keep;
  for (auto [lo, hi] : llvm::zip(getLow(), getHigh()))
    keep.push_back(lo == 0 && hi == 0);
  return sameOrReplicated(*this, keep);
}

ShardingRule GatherOp::getShardingRule() {
  RuleBuilder b;
  ArrayRef<int64_t> in = shapeOf(getInput()), idx = shapeOf(getIndices());
  int64_t axis = getAxis();
  SmallVector<int64_t> inF, idxF, outF;
  for (int64_t d = 0; d < axis; ++d) {
    inF.push_back(b.factor(in[d], FactorKind::Parallel));
    outF.push_back(inF.back());
  }
  // Any row may be looked up: the gathered axis stays whole.
  inF.push_back(b.factor(in[axis], FactorKind::Replicated));
  for (int64_t size : idx) {
    idxF.push_back(b.factor(size, FactorKind::Parallel));
    outF.push_back(idxF.back());
  }
  for (int64_t d = axis + 1, e = in.size(); d < e; ++d) {
    inF.push_back(b.factor(in[d], FactorKind::Parallel));
    outF.push_back(inF.back());
  }
  b.operand(inF);
  b.operand(idxF);
  b.result(outF);
  return b.rule;
}

ShardingRule ScatterAddOp::getShardingRule() {
  RuleBuilder b;
  ArrayRef<int64_t> out = shapeOf(getResult()), idx = shapeOf(getIndices());
  int64_t axis = getAxis();
  SmallVector<int64_t> updF, idxF, outF;
  for (int64_t d = 0; d < axis; ++d) {
    outF.push_back(b.factor(out[d], FactorKind::Parallel));
    updF.push_back(outF.back());
  }
  // Any row may be written: the scattered axis stays whole. Splitting the
  // index dimensions leaves partial sums.
  outF.push_back(b.factor(out[axis], FactorKind::Replicated));
  for (int64_t size : idx) {
    idxF.push_back(b.factor(size, FactorKind::Reduction));
    updF.push_back(idxF.back());
  }
  for (int64_t d = axis + 1, e = out.size(); d < e; ++d) {
    outF.push_back(b.factor(out[d], FactorKind::Parallel));
    updF.push_back(outF.back());
  }
  b.operand(updF);
  b.operand(idxF);
  b.result(outF);
  return b.rule;
}

//===----------------------------------------------------------------------===//
// NN ops
//===----------------------------------------------------------------------===//

static ShardingRule normalizeOverAxis(Operation *op, int64_t axis) {
  ArrayRef<int64_t> in = shapeOf(op->getOperand(0));
  SmallVector<bool> keep;
  for (int64_t d = 0, e = in.size(); d < e; ++d)
    keep.push_back(d != axis);
  // Same shape in and out: share the replicated factor too.
  RuleBuilder b;
  SmallVector<int64_t> f;
  for (int64_t d = 0, e = in.size(); d < e; ++d)
    f.push_back(b.factor(in[d], keep[d] ? FactorKind::Parallel
                                        : FactorKind::Replicated));
  b.operand(f);
  b.result(f);
  return b.rule;
}

ShardingRule SoftmaxOp::getShardingRule() {
  return normalizeOverAxis(*this, getAxis());
}
ShardingRule LogSoftmaxOp::getShardingRule() {
  return normalizeOverAxis(*this, getAxis());
}

ShardingRule LayerNormOp::getShardingRule() {
  RuleBuilder b;
  ArrayRef<int64_t> in = shapeOf(getInput());
  int64_t axis = getAxis();
  SmallVector<int64_t> f;
  for (int64_t d = 0, e = in.size(); d < e; ++d)
    f.push_back(b.factor(in[d], d < axis ? FactorKind::Parallel
                                         : FactorKind::Replicated));
  ArrayRef<int64_t> normalized = ArrayRef<int64_t>(f).drop_front(axis);
  b.operand(f);
  b.operand(normalized);
  b.operand(normalized);
  b.result(f);
  return b.rule;
}

ShardingRule BatchNormInferenceOp::getShardingRule() {
  RuleBuilder b;
  SmallVector<int64_t> f =
      b.factorsFor(shapeOf(getInput()), FactorKind::Parallel);
  b.operand(f);
  for (int i = 0; i < 4; ++i)
    b.operand({f[1]});
  b.result(f);
  return b.rule;
}

ShardingRule BatchNormTrainingOp::getShardingRule() {
  // Statistics span every dimension but the channel one; splitting those
  // would give per-device statistics (unsynchronized batch norm).
  RuleBuilder b;
  ArrayRef<int64_t> in = shapeOf(getInput());
  SmallVector<int64_t> f;
  for (int64_t d = 0, e = in.size(); d < e; ++d)
    f.push_back(b.factor(in[d], d == 1 ? FactorKind::Parallel
                                       : FactorKind::Replicated));
  b.operand(f);
  b.operand({f[1]});
  b.operand({f[1]});
  b.result(f);
  b.result({f[1]});
  b.result({f[1]});
  return b.rule;
}

static ShardingRule classLossRule(Operation *op, Value weight,
                                  bool ignoreIndex, LossReduction reduction) {
  RuleBuilder b;
  ArrayRef<int64_t> in = shapeOf(op->getOperand(0));
  // A mean over samples splits into local means scaled by 1/shards, unless
  // it is normalized by a global count (class weights, ignored labels).
  bool globalNorm = reduction == LossReduction::mean && (weight || ignoreIndex);
  FactorKind sampleKind = reduction == LossReduction::none ? FactorKind::Parallel
                          : globalNorm                     ? FactorKind::Replicated
                                                           : FactorKind::Reduction;
  SmallVector<int64_t> inF, labelF;
  for (int64_t d = 0, e = in.size(); d < e; ++d) {
    if (d == 1) {
      // Every class is needed to normalize (and to pick the label's).
      inF.push_back(b.factor(in[d], FactorKind::Replicated));
      continue;
    }
    inF.push_back(b.factor(in[d], sampleKind, ReductionKind::sum));
    if (reduction == LossReduction::mean && !globalNorm && inF.back() >= 0)
      b.rule.setAveraged(inF.back());
    labelF.push_back(inF.back());
  }
  b.operand(inF);
  b.operand(labelF);
  if (weight)
    b.operand({inF[1]});
  if (reduction == LossReduction::none)
    b.result(labelF);
  else
    b.result({});
  return b.rule;
}

ShardingRule CrossEntropyOp::getShardingRule() {
  return classLossRule(*this, getWeight(), getIgnoreIndex().has_value(),
                       getReduction());
}
ShardingRule NllLossOp::getShardingRule() {
  return classLossRule(*this, getWeight(), getIgnoreIndex().has_value(),
                       getReduction());
}

ShardingRule MseLossOp::getShardingRule() {
  if (getReduction() == LossReduction::none)
    return ShardingRule::elementwise(*this);
  RuleBuilder b;
  SmallVector<int64_t> f;
  for (int64_t size : shapeOf(getInput())) {
    f.push_back(b.factor(size, FactorKind::Reduction, ReductionKind::sum));
    if (getReduction() == LossReduction::mean && f.back() >= 0)
      b.rule.setAveraged(f.back());
  }
  b.operand(f);
  b.operand(f);
  b.result({});
  return b.rule;
}

//===----------------------------------------------------------------------===//
// Collectives (per-device programs): the communicated dimensions stay whole
//===----------------------------------------------------------------------===//

ShardingRule AllReduceOp::getShardingRule() {
  return passThroughRule(getInputs());
}

static SmallVector<bool> allBut(Operation *op, ArrayRef<int64_t> dims) {
  SmallVector<bool> keep(shapeOf(op->getOperand(0)).size(), true);
  for (int64_t d : dims)
    keep[d] = false;
  return keep;
}

ShardingRule AllGatherOp::getShardingRule() {
  return sameOrReplicated(*this, allBut(*this, {static_cast<int64_t>(getDim())}));
}
ShardingRule ReduceScatterOp::getShardingRule() {
  return sameOrReplicated(*this, allBut(*this, {static_cast<int64_t>(getDim())}));
}
ShardingRule AllSliceOp::getShardingRule() {
  return sameOrReplicated(*this, allBut(*this, {static_cast<int64_t>(getDim())}));
}
ShardingRule SendRecvOp::getShardingRule() {
  return ShardingRule::elementwise(*this);
}
ShardingRule AllToAllOp::getShardingRule() {
  return sameOrReplicated(*this,
                          allBut(*this, {static_cast<int64_t>(getSplitDim()),
                                         static_cast<int64_t>(getConcatDim())}));
}
