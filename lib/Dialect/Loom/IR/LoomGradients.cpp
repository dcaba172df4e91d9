//===- LoomGradients.cpp - Gradient rules: elementwise, structured, shape -===//
//
// DifferentiableOpInterface for elementwise, contraction, reduction and data
// movement ops. Rules follow PyTorch's derivatives.yaml wherever a choice
// exists (ties of max/min split the gradient, abs'(0) = 0, pow masks
// exponent 0), so that Loom's training steps match PyTorch numerically.
// Normalization, pooling, convolution and loss rules are in
// LoomNNGradients.cpp.
//
//===----------------------------------------------------------------------===//

#include "GradientBuilder.h"

#include "llvm/ADT/STLExtras.h"
#include <cmath>
#include <numeric>

using namespace mlir;
using namespace mlir::loom;
using mlir::loom::detail::GradientBuilder;

//===----------------------------------------------------------------------===//
// GradientBuilder
//===----------------------------------------------------------------------===//

Value GradientBuilder::scalar(Type element, double value) {
  return splat(RankedTensorType::get({}, element), value);
}

Value GradientBuilder::splat(RankedTensorType type, double value) {
  return createSplat(b, b.getLoc(), type, value);
}

Value GradientBuilder::castTo(Value v, Type element) {
  if (elementOf(v) == element)
    return v;
  return CastOp::create(b, typeOf(v).clone(element), v);
}

Value GradientBuilder::reshape(Value v, ArrayRef<int64_t> shape) {
  if (shapeOf(v) == shape)
    return v;
  return ReshapeOp::create(b, typeOf(v).clone(shape), v);
}

Value GradientBuilder::transpose(Value v, ArrayRef<int64_t> permutation) {
  bool identity = true;
  for (auto [i, p] : llvm::enumerate(permutation))
    identity &= static_cast<int64_t>(i) == p;
  if (identity)
    return v;
  return TransposeOp::create(b, v, permutation);
}

Value GradientBuilder::broadcast(Value v, ArrayRef<int64_t> shape,
                                 ArrayRef<int64_t> dims) {
  if (shapeOf(v) == shape)
    return v;
  return BroadcastOp::create(b, typeOf(v).clone(shape), v, dims);
}

Value GradientBuilder::broadcastTo(Value v, ArrayRef<int64_t> shape) {
  int64_t offset = shape.size() - shapeOf(v).size();
  SmallVector<int64_t> dims;
  for (int64_t i = 0, e = shapeOf(v).size(); i < e; ++i)
    dims.push_back(offset + i);
  return broadcast(v, shape, dims);
}

Value GradientBuilder::reduceSum(Value v, ArrayRef<int64_t> dims,
                                 bool keepdims) {
  if (dims.empty())
    return v;
  return ReduceSumOp::create(b, v, dims, keepdims);
}

Value GradientBuilder::reduceMean(Value v, ArrayRef<int64_t> dims,
                                  bool keepdims) {
  if (dims.empty())
    return v;
  return ReduceMeanOp::create(b, v, dims, keepdims);
}

Value GradientBuilder::slice(Value v, ArrayRef<int64_t> start,
                             ArrayRef<int64_t> limit, ArrayRef<int64_t> stride) {
  SmallVector<int64_t> strides(stride);
  if (strides.empty())
    strides.assign(start.size(), 1);
  bool whole = true;
  for (auto [i, size] : llvm::enumerate(shapeOf(v)))
    whole &= start[i] == 0 && limit[i] == size && strides[i] == 1;
  if (whole)
    return v;
  return SliceOp::create(b, v, start, limit, strides);
}

Value GradientBuilder::pad(Value v, ArrayRef<int64_t> low,
                           ArrayRef<int64_t> high) {
  if (llvm::all_of(low, [](int64_t x) { return x == 0; }) &&
      llvm::all_of(high, [](int64_t x) { return x == 0; }))
    return v;
  Type element = elementOf(v);
  return PadOp::create(b, v, low, high, scalarAttr(element, 0.0));
}

Value GradientBuilder::unbroadcast(Value grad, RankedTensorType type) {
  ArrayRef<int64_t> from = shapeOf(grad), to = type.getShape();
  if (from == to)
    return grad;
  int64_t offset = from.size() - to.size();
  SmallVector<int64_t> dims;
  for (int64_t i = 0, e = from.size(); i < e; ++i)
    if (i < offset || (to[i - offset] == 1 && from[i] != 1))
      dims.push_back(i);
  return reshape(reduceSum(grad, dims), to);
}

Value GradientBuilder::dilate(Value v, ArrayRef<int64_t> strides) {
  if (llvm::all_of(strides, [](int64_t s) { return s == 1; }))
    return v;
  ArrayRef<int64_t> shape = shapeOf(v);
  // [n0, n1] -> [n0, 1, n1, 1] -> pad to [n0, s0, n1, s1] -> [n0*s0, n1*s1]
  // -> crop the trailing zeros of each dimension.
  SmallVector<int64_t> split, high, merged, limit;
  for (auto [n, s] : llvm::zip(shape, strides)) {
    split.push_back(n);
    high.push_back(0);
    if (s > 1) {
      split.push_back(1);
      high.push_back(s - 1);
    }
    merged.push_back(n * s);
    limit.push_back((n - 1) * s + 1);
  }
  Value r = reshape(v, split);
  r = pad(r, SmallVector<int64_t>(split.size(), 0), high);
  r = reshape(r, merged);
  return slice(r, SmallVector<int64_t>(shape.size(), 0), limit);
}

Value GradientBuilder::padOrCrop(Value v, ArrayRef<int64_t> low,
                                 ArrayRef<int64_t> high) {
  ArrayRef<int64_t> shape = shapeOf(v);
  SmallVector<int64_t> start, limit, padLow, padHigh;
  for (auto [i, size] : llvm::enumerate(shape)) {
    start.push_back(std::max<int64_t>(0, -low[i]));
    limit.push_back(size - std::max<int64_t>(0, -high[i]));
    padLow.push_back(std::max<int64_t>(0, low[i]));
    padHigh.push_back(std::max<int64_t>(0, high[i]));
  }
  return pad(slice(v, start, limit), padLow, padHigh);
}

Value GradientBuilder::reverse(Value v, ArrayRef<int64_t> dims) {
  for (int64_t d : dims) {
    int64_t n = shapeOf(v)[d];
    if (n == 1)
      continue;
    SmallVector<int64_t> idx;
    for (int64_t i = n - 1; i >= 0; --i)
      idx.push_back(i);
    auto type = RankedTensorType::get({n}, b.getI64Type());
    Value indices = ConstantOp::create(
        b, DenseElementsAttr::get(type, ArrayRef<int64_t>(idx)));
    v = GatherOp::create(b, v, indices, d);
  }
  return v;
}

Value mlir::loom::detail::convInputGradient(
    GradientBuilder &g, Value grad, Value filter, RankedTensorType inputType,
    ArrayRef<int64_t> strides, ArrayRef<int64_t> padding,
    ArrayRef<int64_t> dilations, int64_t groups) {
  ArrayRef<int64_t> in = inputType.getShape();
  ArrayRef<int64_t> w = GradientBuilder::shapeOf(filter);
  ArrayRef<int64_t> out = GradientBuilder::shapeOf(grad);
  int64_t k = in.size() - 2, f = w[0], cg = w[1], fg = f / groups;
  // Filter [F, C/G, K...] -> [C, F/G, K...], spatially reversed.
  SmallVector<int64_t> split = {groups, fg, cg}, perm = {0, 2, 1};
  SmallVector<int64_t> swapped = {groups * cg, fg}, spatial;
  for (int64_t i = 0; i < k; ++i) {
    split.push_back(w[2 + i]);
    perm.push_back(3 + i);
    swapped.push_back(w[2 + i]);
    spatial.push_back(2 + i);
  }
  Value wt = g.reshape(filter, split);
  wt = g.transpose(wt, perm);
  wt = g.reshape(wt, swapped);
  wt = g.reverse(wt, spatial);

  // Gradient rows at stride intervals, then the "full" padding of the
  // transposed convolution; negative amounts (forward padding larger than
  // the kernel extent) crop.
  SmallVector<int64_t> dil = {1, 1}, cropLow(k + 2, 0), cropHigh(k + 2, 0);
  SmallVector<int64_t> convPad(2 * k, 0), ones(k, 1);
  for (int64_t i = 0; i < k; ++i) {
    dil.push_back(strides[i]);
    int64_t extent = dilations[i] * (w[2 + i] - 1);
    int64_t used = (out[2 + i] - 1) * strides[i];
    int64_t extra = in[2 + i] + padding[i] + padding[k + i] - extent - 1 - used;
    int64_t lo = extent - padding[i], hi = extent - padding[k + i] + extra;
    cropLow[2 + i] = std::min<int64_t>(lo, 0);
    cropHigh[2 + i] = std::min<int64_t>(hi, 0);
    convPad[i] = std::max<int64_t>(lo, 0);
    convPad[k + i] = std::max<int64_t>(hi, 0);
  }
  Value gd = g.dilate(grad, dil);
  gd = g.padOrCrop(gd, cropLow, cropHigh);
  return ConvOp::create(g.builder(), inputType, gd, wt, ones, convPad,
                        dilations, groups);
}

using mlir::loom::detail::Rule;
using mlir::loom::detail::inputGradient;

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

/// `OP`'s gradient is `BODY`, with `x`, `y`, `dy` and `g` in scope.
#define LOOM_UNARY_GRADIENT(OP, BODY)                                          \
  LogicalResult OP::buildGradients(OpBuilder &builder, ValueRange resultGrads, \
                                   ArrayRef<bool> wanted,                      \
                                   SmallVectorImpl<Value> &grads) {            \
    Value x = getInput(), y = getResult();                                     \
    (void)x;                                                                   \
    (void)y;                                                                   \
    return inputGradient(*this, builder, resultGrads, wanted, grads,           \
                         [&](GradientBuilder &g, Value dy) { return (BODY); }); \
  }

LOOM_UNARY_GRADIENT(NegOp, g.neg(dy))
// d|x| = sign(x), with 0 at 0 (PyTorch).
LOOM_UNARY_GRADIENT(AbsOp,
                    g.select(g.compare(CompareDirection::gt, x,
                                       g.scalarLike(x, 0)),
                             dy,
                             g.where(g.compare(CompareDirection::lt, x,
                                               g.scalarLike(x, 0)),
                                     g.neg(dy))))
LOOM_UNARY_GRADIENT(ExpOp, g.mul(dy, y))
LOOM_UNARY_GRADIENT(LogOp, g.div(dy, x))
LOOM_UNARY_GRADIENT(SqrtOp, g.div(g.mul(dy, 0.5), y))
// d(x^-1/2) = -1/2 x^-3/2 = -1/2 y^3.
LOOM_UNARY_GRADIENT(RsqrtOp, g.mul(g.mul(dy, g.mul(g.mul(y, y), y)), -0.5))
LOOM_UNARY_GRADIENT(TanhOp,
                    g.mul(dy, g.sub(g.scalarLike(y, 1), g.mul(y, y))))
LOOM_UNARY_GRADIENT(SigmoidOp,
                    g.mul(dy, g.mul(y, g.sub(g.scalarLike(y, 1), y))))
LOOM_UNARY_GRADIENT(ReluOp, g.where(g.compare(CompareDirection::gt, y,
                                              g.scalarLike(y, 0)),
                                    dy))
// d erf(x) = 2/sqrt(pi) e^(-x^2).
LOOM_UNARY_GRADIENT(ErfOp,
                    g.mul(g.mul(dy, 2.0 / std::sqrt(M_PI)),
                          ExpOp::create(g.builder(), g.neg(g.mul(x, x)))))
// Piecewise constant: zero almost everywhere (as PyTorch).
LOOM_UNARY_GRADIENT(FloorOp, g.zerosLike(x))
LOOM_UNARY_GRADIENT(CeilOp, g.zerosLike(x))
LOOM_UNARY_GRADIENT(RoundOp, g.zerosLike(x))
LOOM_UNARY_GRADIENT(SinOp, g.mul(dy, CosOp::create(g.builder(), x)))
LOOM_UNARY_GRADIENT(CosOp, g.neg(g.mul(dy, SinOp::create(g.builder(), x))))

#undef LOOM_UNARY_GRADIENT

LogicalResult GeluOp::buildGradients(OpBuilder &builder, ValueRange resultGrads,
                                     ArrayRef<bool> wanted,
                                     SmallVectorImpl<Value> &grads) {
  return inputGradient(
      *this, builder, resultGrads, wanted, grads,
      [&](GradientBuilder &g, Value dy) {
        Value x = getInput();
        ImplicitLocOpBuilder &b = g.builder();
        if (getApproximate() == GeluApproximation::none) {
          // Phi(x) + x phi(x).
          Value cdf = g.mul(g.add(g.scalarLike(x, 1),
                                  ErfOp::create(b, g.mul(x, M_SQRT1_2))),
                            0.5);
          Value pdf = g.mul(ExpOp::create(b, g.mul(g.mul(x, x), -0.5)),
                            0.5 * M_2_SQRTPI * M_SQRT1_2);
          return g.mul(dy, g.add(cdf, g.mul(x, pdf)));
        }
        // PyTorch's GeluBackward for approximate = "tanh".
        const double beta = M_SQRT2 * M_2_SQRTPI * 0.5, kappa = 0.044715;
        Value x2 = g.mul(x, x);
        Value inner = g.mul(g.add(x, g.mul(g.mul(x2, x), kappa)), beta);
        Value t = TanhOp::create(b, inner);
        Value one = g.scalarLike(x, 1);
        Value left = g.mul(x, 0.5);
        Value right = g.add(one, t);
        Value leftDerivative = g.mul(right, 0.5);
        Value tanhDerivative = g.sub(one, g.mul(t, t));
        Value innerDerivative = g.mul(g.add(one, g.mul(x2, 3 * kappa)), beta);
        Value rightDerivative = g.mul(left, tanhDerivative);
        return g.mul(dy, g.add(leftDerivative,
                               g.mul(rightDerivative, innerDerivative)));
      });
}

//===----------------------------------------------------------------------===//
// Binary (numpy broadcasting: gradients are summed back to operand shapes)
//===----------------------------------------------------------------------===//

/// `OP`'s operand gradients are `LHS` and `RHS` (before un-broadcasting),
/// with `a`, `b`, `dy` and `g` in scope.
#define LOOM_BINARY_GRADIENT(OP, LHS, RHS)                                     \
  LogicalResult OP::buildGradients(OpBuilder &builder, ValueRange resultGrads, \
                                   ArrayRef<bool> wanted,                      \
                                   SmallVectorImpl<Value> &grads) {            \
    Rule r(*this, builder, grads);                                             \
    GradientBuilder &g = r.g;                                                  \
    Value dy = resultGrads[0], a = getLhs(), b = getRhs();                     \
    (void)g;                                                                   \
    (void)a;                                                                   \
    (void)b;                                                                   \
    if (!dy)                                                                   \
      return success();                                                        \
    if (wanted[0])                                                             \
      r.set(0, (LHS));                                                         \
    if (wanted[1])                                                             \
      r.set(1, (RHS));                                                         \
    return success();                                                          \
  }

LOOM_BINARY_GRADIENT(AddOp, dy, dy)
LOOM_BINARY_GRADIENT(SubOp, dy, g.neg(dy))
LOOM_BINARY_GRADIENT(MulOp, g.mul(dy, b), g.mul(dy, a))
// -dy * a / b^2 for the divisor.
LOOM_BINARY_GRADIENT(DivOp, g.div(dy, b), g.neg(g.div(g.mul(dy, a), g.mul(b, b))))

#undef LOOM_BINARY_GRADIENT

LogicalResult PowOp::buildGradients(OpBuilder &builder, ValueRange resultGrads,
                                    ArrayRef<bool> wanted,
                                    SmallVectorImpl<Value> &grads) {
  Rule r(*this, builder, grads);
  GradientBuilder &g = r.g;
  Value dy = resultGrads[0], a = getLhs(), e = getRhs();
  if (!dy)
    return success();
  Value zero = g.scalarLike(a, 0);
  if (wanted[0]) {
    // dy * e * a^(e-1), 0 where e == 0.
    Value em1 = g.sub(e, g.scalarLike(e, 1));
    Value d = g.mul(dy, g.mul(e, PowOp::create(g.builder(), a, em1)));
    r.set(0, g.select(g.compare(CompareDirection::eq, e, zero), zero, d));
  }
  if (wanted[1]) {
    // dy * a^e * ln a, 0 where a == 0 and e >= 0.
    Value d = g.mul(dy, g.mul(getResult(), LogOp::create(g.builder(), a)));
    Value mask = g.select(g.compare(CompareDirection::ge, e, zero), zero, d);
    r.set(1, g.select(g.compare(CompareDirection::eq, a, zero), mask, d));
  }
  return success();
}

/// Max/min: the gradient goes to the selected operand; ties split it evenly
/// (PyTorch maximum/minimum).
static void minMaxGradients(Rule &r, Value dy, ArrayRef<bool> wanted,
                            CompareDirection wins) {
  GradientBuilder &g = r.g;
  Value a = r.operand(0), b = r.operand(1);
  Value half = g.mul(dy, 0.5);
  Value tie = g.compare(CompareDirection::eq, a, b);
  if (wanted[0])
    r.set(0, g.select(g.compare(wins, a, b), dy, g.where(tie, half)));
  if (wanted[1])
    r.set(1, g.select(g.compare(wins, b, a), dy, g.where(tie, half)));
}

LogicalResult MaxOp::buildGradients(OpBuilder &builder, ValueRange resultGrads,
                                    ArrayRef<bool> wanted,
                                    SmallVectorImpl<Value> &grads) {
  Rule r(*this, builder, grads);
  if (resultGrads[0])
    minMaxGradients(r, resultGrads[0], wanted, CompareDirection::gt);
  return success();
}

LogicalResult MinOp::buildGradients(OpBuilder &builder, ValueRange resultGrads,
                                    ArrayRef<bool> wanted,
                                    SmallVectorImpl<Value> &grads) {
  Rule r(*this, builder, grads);
  if (resultGrads[0])
    minMaxGradients(r, resultGrads[0], wanted, CompareDirection::lt);
  return success();
}

LogicalResult SelectOp::buildGradients(OpBuilder &builder,
                                       ValueRange resultGrads,
                                       ArrayRef<bool> wanted,
                                       SmallVectorImpl<Value> &grads) {
  Rule r(*this, builder, grads);
  GradientBuilder &g = r.g;
  Value dy = resultGrads[0], c = getCondition();
  if (!dy)
    return success();
  if (wanted[1])
    r.set(1, g.where(c, dy));
  if (wanted[2])
    r.set(2, g.select(c, g.scalarLike(dy, 0), dy));
  return success();
}

LogicalResult CastOp::buildGradients(OpBuilder &builder, ValueRange resultGrads,
                                     ArrayRef<bool> wanted,
                                     SmallVectorImpl<Value> &grads) {
  Rule r(*this, builder, grads);
  Value dy = resultGrads[0];
  // Float to float only: an integer result carries no gradient.
  if (wanted[0] && dy && GradientBuilder::isFloat(getInput()))
    grads[0] = r.g.castTo(dy, getInput().getType().getElementType());
  return success();
}

LogicalResult ShardingConstraintOp::buildGradients(
    OpBuilder &builder, ValueRange resultGrads, ArrayRef<bool> wanted,
    SmallVectorImpl<Value> &grads) {
  Rule r(*this, builder, grads);
  // The gradient is pinned to the same sharding (GSPMD does the same).
  if (wanted[0] && resultGrads[0])
    grads[0] = ShardingConstraintOp::create(r.g.builder(), resultGrads[0],
                                            getSharding());
  return success();
}

//===----------------------------------------------------------------------===//
// Contraction and reductions
//===----------------------------------------------------------------------===//

LogicalResult DotGeneralOp::buildGradients(OpBuilder &builder,
                                           ValueRange resultGrads,
                                           ArrayRef<bool> wanted,
                                           SmallVectorImpl<Value> &grads) {
  Rule r(*this, builder, grads);
  GradientBuilder &g = r.g;
  Value dy = resultGrads[0];
  if (!dy)
    return success();
  ArrayRef<int64_t> lb = getLhsBatchingDims(), rb = getRhsBatchingDims();
  ArrayRef<int64_t> lc = getLhsContractingDims(), rc = getRhsContractingDims();
  int64_t lRank = getLhs().getType().getRank();
  int64_t rRank = getRhs().getType().getRank();
  auto freeDims = [](int64_t rank, ArrayRef<int64_t> batch,
                     ArrayRef<int64_t> contract) {
    SmallVector<int64_t> free;
    for (int64_t d = 0; d < rank; ++d)
      if (!llvm::is_contained(batch, d) && !llvm::is_contained(contract, d))
        free.push_back(d);
    return free;
  };
  SmallVector<int64_t> lf = freeDims(lRank, lb, lc);
  SmallVector<int64_t> rf = freeDims(rRank, rb, rc);
  int64_t nb = lb.size(), nlf = lf.size(), nrf = rf.size();
  SmallVector<int64_t> dyBatch, dyLhsFree, dyRhsFree;
  for (int64_t i = 0; i < nb; ++i)
    dyBatch.push_back(i);
  for (int64_t i = 0; i < nlf; ++i)
    dyLhsFree.push_back(nb + i);
  for (int64_t i = 0; i < nrf; ++i)
    dyRhsFree.push_back(nb + nlf + i);

  if (wanted[0]) {
    // dLhs = dy . rhs over rhs's free dims: [batch, lhs free, rhs contracting
    // dims in ascending order], then permuted into lhs's layout.
    Value d = DotGeneralOp::create(g.builder(), dy, getRhs(), dyBatch, rb,
                                   dyRhsFree, rf);
    SmallVector<int64_t> source(lRank); // lhs dim -> position in d
    for (int64_t i = 0; i < nb; ++i)
      source[lb[i]] = i;
    for (int64_t i = 0; i < nlf; ++i)
      source[lf[i]] = nb + i;
    SmallVector<int64_t> rcSorted(rc);
    llvm::sort(rcSorted);
    for (auto [pos, rdim] : llvm::enumerate(rcSorted)) {
      int64_t k = llvm::find(rc, rdim) - rc.begin();
      source[lc[k]] = nb + nlf + pos;
    }
    grads[0] = g.transpose(d, source);
  }
  if (wanted[1]) {
    // dRhs = lhs . dy over lhs's free dims: [batch, lhs contracting dims in
    // ascending order, rhs free], then permuted into rhs's layout.
    Value d = DotGeneralOp::create(g.builder(), getLhs(), dy, lb, dyBatch, lf,
                                   dyLhsFree);
    SmallVector<int64_t> source(rRank);
    for (int64_t i = 0; i < nb; ++i)
      source[rb[i]] = i;
    SmallVector<int64_t> lcSorted(lc);
    llvm::sort(lcSorted);
    for (auto [pos, ldim] : llvm::enumerate(lcSorted)) {
      int64_t k = llvm::find(lc, ldim) - lc.begin();
      source[rc[k]] = nb + pos;
    }
    int64_t nc = lc.size();
    for (int64_t i = 0; i < nrf; ++i)
      source[rf[i]] = nb + nc + i;
    grads[1] = g.transpose(d, source);
  }
  return success();
}

/// The reduction's result gradient spread back over the input's shape.
static Value expandReduced(GradientBuilder &g, Value dy, Value input,
                           ArrayRef<int64_t> dims, bool keepdims) {
  ArrayRef<int64_t> shape = GradientBuilder::shapeOf(input);
  SmallVector<int64_t> kept;
  for (int64_t d = 0, e = shape.size(); d < e; ++d)
    if (keepdims || !llvm::is_contained(dims, d))
      kept.push_back(d);
  return g.broadcast(dy, shape, kept);
}

static int64_t reducedCount(Value input, ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= GradientBuilder::shapeOf(input)[d];
  return n;
}

LogicalResult ReduceSumOp::buildGradients(OpBuilder &builder,
                                          ValueRange resultGrads,
                                          ArrayRef<bool> wanted,
                                          SmallVectorImpl<Value> &grads) {
  return inputGradient(*this, builder, resultGrads, wanted, grads,
                       [&](GradientBuilder &g, Value dy) {
                         return expandReduced(g, dy, getInput(), getDims(),
                                              getKeepdims());
                       });
}

LogicalResult ReduceMeanOp::buildGradients(OpBuilder &builder,
                                           ValueRange resultGrads,
                                           ArrayRef<bool> wanted,
                                           SmallVectorImpl<Value> &grads) {
  return inputGradient(
      *this, builder, resultGrads, wanted, grads,
      [&](GradientBuilder &g, Value dy) {
        double n = static_cast<double>(reducedCount(getInput(), getDims()));
        return expandReduced(g, g.mul(dy, 1.0 / n), getInput(), getDims(),
                             getKeepdims());
      });
}

/// Max/min reductions: the gradient is shared evenly by the elements equal
/// to the extremum (PyTorch amax/amin).
static Value extremumGradient(GradientBuilder &g, Value dy, Value input,
                              Value result, ArrayRef<int64_t> dims,
                              bool keepdims) {
  Value extremum = expandReduced(g, result, input, dims, keepdims);
  Value hit = g.compare(CompareDirection::eq, input, extremum);
  Value count = g.reduceSum(g.castTo(hit, GradientBuilder::elementOf(input)),
                            dims, keepdims);
  Value share = expandReduced(g, g.div(dy, count), input, dims, keepdims);
  return g.where(hit, share);
}

template <typename OpT>
static LogicalResult extremumGradients(OpT op, OpBuilder &builder,
                                       ValueRange resultGrads,
                                       ArrayRef<bool> wanted,
                                       SmallVectorImpl<Value> &grads) {
  return inputGradient(op, builder, resultGrads, wanted, grads,
                       [&](GradientBuilder &g, Value dy) {
                         return extremumGradient(g, dy, op.getInput(),
                                                 op.getResult(), op.getDims(),
                                                 op.getKeepdims());
                       });
}

LogicalResult ReduceMaxOp::buildGradients(OpBuilder &builder,
                                          ValueRange resultGrads,
                                          ArrayRef<bool> wanted,
                                          SmallVectorImpl<Value> &grads) {
  return extremumGradients(*this, builder, resultGrads, wanted, grads);
}

LogicalResult ReduceMinOp::buildGradients(OpBuilder &builder,
                                          ValueRange resultGrads,
                                          ArrayRef<bool> wanted,
                                          SmallVectorImpl<Value> &grads) {
  return extremumGradients(*this, builder, resultGrads, wanted, grads);
}

LogicalResult ReduceProdOp::buildGradients(OpBuilder &builder,
                                           ValueRange resultGrads,
                                           ArrayRef<bool> wanted,
                                           SmallVectorImpl<Value> &grads) {
  return inputGradient(
      *this, builder, resultGrads, wanted, grads,
      [&](GradientBuilder &g, Value dy) {
        // d prod / d x_i is the product of the others. Without zeros that is
        // prod / x_i; a lone zero gets the product of the nonzeros; with two
        // or more zeros every derivative is 0.
        Value x = getInput();
        ArrayRef<int64_t> dims = getDims();
        bool keep = getKeepdims();
        auto expand = [&](Value v) {
          return expandReduced(g, v, x, dims, keep);
        };
        Value zero = g.scalarLike(x, 0), one = g.scalarLike(x, 1);
        Value isZero = g.compare(CompareDirection::eq, x, zero);
        Value nonzero = g.select(isZero, one, x);
        Value prodNonzero =
            expand(ReduceProdOp::create(g.builder(), nonzero, dims, keep));
        Value zeros = expand(g.reduceSum(
            g.castTo(isZero, GradientBuilder::elementOf(x)), dims, keep));
        Value lone = g.compare(CompareDirection::eq, zeros, one);
        Value d = g.select(isZero, g.where(lone, prodNonzero),
                           g.div(expand(getResult()), nonzero));
        return g.mul(expand(dy), d);
      });
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::buildGradients(OpBuilder &builder,
                                        ValueRange resultGrads,
                                        ArrayRef<bool> wanted,
                                        SmallVectorImpl<Value> &grads) {
  return inputGradient(*this, builder, resultGrads, wanted, grads,
                       [&](GradientBuilder &g, Value dy) {
                         return g.reshape(dy, getInput().getType().getShape());
                       });
}

LogicalResult TransposeOp::buildGradients(OpBuilder &builder,
                                          ValueRange resultGrads,
                                          ArrayRef<bool> wanted,
                                          SmallVectorImpl<Value> &grads) {
  return inputGradient(*this, builder, resultGrads, wanted, grads,
                       [&](GradientBuilder &g, Value dy) {
                         ArrayRef<int64_t> perm = getPermutation();
                         SmallVector<int64_t> inverse(perm.size());
                         for (auto [i, p] : llvm::enumerate(perm))
                           inverse[p] = i;
                         return g.transpose(dy, inverse);
                       });
}

LogicalResult BroadcastOp::buildGradients(OpBuilder &builder,
                                          ValueRange resultGrads,
                                          ArrayRef<bool> wanted,
                                          SmallVectorImpl<Value> &grads) {
  return inputGradient(
      *this, builder, resultGrads, wanted, grads,
      [&](GradientBuilder &g, Value dy) {
        ArrayRef<int64_t> in = getInput().getType().getShape();
        ArrayRef<int64_t> out = getType().getShape();
        ArrayRef<int64_t> dims = getDims();
        SmallVector<int64_t> summed;
        for (int64_t d = 0, e = out.size(); d < e; ++d) {
          const int64_t *it = llvm::find(dims, d);
          if (it == dims.end() || (in[it - dims.begin()] == 1 && out[d] != 1))
            summed.push_back(d);
        }
        return g.reshape(g.reduceSum(dy, summed), in);
      });
}

LogicalResult ConcatOp::buildGradients(OpBuilder &builder,
                                       ValueRange resultGrads,
                                       ArrayRef<bool> wanted,
                                       SmallVectorImpl<Value> &grads) {
  Rule r(*this, builder, grads);
  Value dy = resultGrads[0];
  if (!dy)
    return success();
  ArrayRef<int64_t> out = getType().getShape();
  int64_t axis = getAxis(), offset = 0;
  for (auto [i, input] : llvm::enumerate(getInputs())) {
    int64_t size = GradientBuilder::shapeOf(input)[axis];
    if (wanted[i]) {
      SmallVector<int64_t> start(out.size(), 0), limit(out);
      start[axis] = offset;
      limit[axis] = offset + size;
      grads[i] = r.g.slice(dy, start, limit);
    }
    offset += size;
  }
  return success();
}

LogicalResult SliceOp::buildGradients(OpBuilder &builder,
                                      ValueRange resultGrads,
                                      ArrayRef<bool> wanted,
                                      SmallVectorImpl<Value> &grads) {
  return inputGradient(
      *this, builder, resultGrads, wanted, grads,
      [&](GradientBuilder &g, Value dy) {
        ArrayRef<int64_t> in = getInput().getType().getShape();
        ArrayRef<int64_t> out = getType().getShape();
        Value d = g.dilate(dy, getStride());
        SmallVector<int64_t> low(getStart()), high;
        for (auto [i, size] : llvm::enumerate(in))
          high.push_back(out[i] == 0 ? size - low[i]
                                     : size - low[i] -
                                           ((out[i] - 1) * getStride()[i] + 1));
        return g.pad(d, low, high);
      });
}

LogicalResult GatherOp::buildGradients(OpBuilder &builder,
                                       ValueRange resultGrads,
                                       ArrayRef<bool> wanted,
                                       SmallVectorImpl<Value> &grads) {
  return inputGradient(*this, builder, resultGrads, wanted, grads,
                       [&](GradientBuilder &g, Value dy) {
                         return ScatterAddOp::create(
                             g.builder(), getInput().getType(), dy,
                             getIndices(), getAxis());
                       });
}

LogicalResult ScatterAddOp::buildGradients(OpBuilder &builder,
                                           ValueRange resultGrads,
                                           ArrayRef<bool> wanted,
                                           SmallVectorImpl<Value> &grads) {
  return inputGradient(*this, builder, resultGrads, wanted, grads,
                       [&](GradientBuilder &g, Value dy) {
                         return GatherOp::create(g.builder(), dy,
                                                 getIndices(), getAxis());
                       });
}

LogicalResult PadOp::buildGradients(OpBuilder &builder, ValueRange resultGrads,
                                    ArrayRef<bool> wanted,
                                    SmallVectorImpl<Value> &grads) {
  return inputGradient(
      *this, builder, resultGrads, wanted, grads,
      [&](GradientBuilder &g, Value dy) {
        ArrayRef<int64_t> in = getInput().getType().getShape();
        SmallVector<int64_t> limit;
        for (auto [i, size] : llvm::enumerate(in))
          limit.push_back(getLow()[i] + size);
        return g.slice(dy, getLow(), limit);
      });
}
