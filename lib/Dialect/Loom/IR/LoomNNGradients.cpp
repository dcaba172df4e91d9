//===- LoomNNGradients.cpp - Gradient rules: conv, pooling, norms, losses -===//
//
// DifferentiableOpInterface for the neural-network ops. Convolution
// backward is expressed with loom.conv itself (a transposed convolution for
// the input, a convolution of input and gradient for the filter), max
// pooling with loom.max_pool_indices and loom.scatter_add, and the losses
// with softmax and one-hot masks, so that the backward pass needs no op
// of its own.
//
//===----------------------------------------------------------------------===//

#include "GradientBuilder.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::loom;
using mlir::loom::detail::GradientBuilder;

using mlir::loom::detail::inputGradient;
using mlir::loom::detail::Rule;

static int64_t numElements(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

//===----------------------------------------------------------------------===//
// Convolution and pooling
//===----------------------------------------------------------------------===//

LogicalResult ConvOp::buildGradients(OpBuilder &builder, ValueRange resultGrads,
                                     ArrayRef<bool> wanted,
                                     SmallVectorImpl<Value> &grads) {
  Rule r(*this, builder, grads);
  GradientBuilder &g = r.g;
  Value dy = resultGrads[0];
  if (!dy)
    return success();
  int64_t groups = getGroups();
  if (wanted[0])
    grads[0] = detail::convInputGradient(g, dy, getFilter(),
                                         getInput().getType(), getStrides(),
                                         getPadding(), getDilations(), groups);
  if (wanted[1]) {
    // dW[f, c, k] = sum_{n, o} dy[n, f, o] x[n, c, o * stride + k * dilation]:
    // a convolution of x (channels as batch, batch as channels) with dy
    // (batch as input channels), strides and dilations swapped. Groups
    // become groups of that convolution.
    ArrayRef<int64_t> in = getInput().getType().getShape();
    ArrayRef<int64_t> w = getFilter().getType().getShape();
    int64_t k = getNumSpatialDims(), n = in[0], cg = w[1];
    SmallVector<int64_t> split = {n, groups, cg}, perm = {2, 1, 0};
    SmallVector<int64_t> merged = {cg, groups * n}, dyPerm = {1, 0};
    SmallVector<int64_t> start(k + 2, 0), limit = {cg, w[0]}, back = {1, 0};
    for (int64_t i = 0; i < k; ++i) {
      split.push_back(in[2 + i]);
      perm.push_back(3 + i);
      merged.push_back(in[2 + i]);
      dyPerm.push_back(2 + i);
      limit.push_back(w[2 + i]);
      back.push_back(2 + i);
    }
    Value xt = g.reshape(getInput(), split);
    xt = g.transpose(xt, perm);
    xt = g.reshape(xt, merged);
    Value dyt = g.transpose(dy, dyPerm);
    auto conv = ConvOp::create(g.builder(), xt, dyt, getDilations(),
                               getPadding(), getStrides(), groups);
    conv->setAttr(LoomDialect::kWeightGradientAttrName,
                  g.builder().getUnitAttr());
    Value dw = conv;
    // The last window may reach past the filter when the forward convolution
    // dropped trailing input rows.
    dw = g.slice(dw, start, limit);
    grads[1] = g.transpose(dw, back);
  }
  return success();
}

LogicalResult MaxPoolOp::buildGradients(OpBuilder &builder,
                                        ValueRange resultGrads,
                                        ArrayRef<bool> wanted,
                                        SmallVectorImpl<Value> &grads) {
  return inputGradient(
      *this, builder, resultGrads, wanted, grads,
      [&](GradientBuilder &g, Value dy) {
        // Each window's gradient goes to the element it took (the first maximum,
        // as PyTorch), summed where windows overlap.
        RankedTensorType inType = getInput().getType();
        Value indices =
            MaxPoolIndicesOp::create(g.builder(), getInput(), getKernel(),
                                     getStrides(), getPadding(), getDilations());
        int64_t m = numElements(getType().getShape());
        int64_t total = numElements(inType.getShape());
        Value flatDy = g.reshape(dy, {m});
        Value flatIdx = g.reshape(indices, {m});
        Value dx = ScatterAddOp::create(
            g.builder(), RankedTensorType::get({total}, inType.getElementType()),
            flatDy, flatIdx, 0);
        return g.reshape(dx, inType.getShape());
      });
}

LogicalResult AvgPoolOp::buildGradients(OpBuilder &builder,
                                        ValueRange resultGrads,
                                        ArrayRef<bool> wanted,
                                        SmallVectorImpl<Value> &grads) {
  return inputGradient(
      *this, builder, resultGrads, wanted, grads,
      [&](GradientBuilder &g, Value dy) {
        RankedTensorType inType = getInput().getType();
        ArrayRef<int64_t> kernel = getKernel();
        int64_t window = numElements(kernel), c = inType.getDimSize(1);
        // Divide by each window's divisor, then spread over the window: a
        // depthwise transposed convolution with an all-ones filter.
        Value scaled;
        if (getCountIncludePad()) {
          scaled = g.mul(dy, 1.0 / static_cast<double>(window));
        } else {
          Value ones = g.splat(inType, 1.0);
          Value fraction =
              AvgPoolOp::create(g.builder(), ones, kernel, getStrides(),
                                getPadding(), /*count_include_pad=*/true);
          scaled = g.div(dy, g.mul(fraction, static_cast<double>(window)));
        }
        SmallVector<int64_t> filterShape = {c, 1};
        llvm::append_range(filterShape, kernel);
        Value filter = g.splat(inType.clone(filterShape), 1.0);
        SmallVector<int64_t> dilations(kernel.size(), 1);
        return detail::convInputGradient(g, scaled, filter, inType,
                                         getStrides(), getPadding(), dilations,
                                         c);
      });
}

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::buildGradients(OpBuilder &builder,
                                        ValueRange resultGrads,
                                        ArrayRef<bool> wanted,
                                        SmallVectorImpl<Value> &grads) {
  return inputGradient(
      *this, builder, resultGrads, wanted, grads,
      [&](GradientBuilder &g, Value dy) {
        Value y = getResult();
        int64_t axis = getAxis();
        Value dot = g.reduceSum(g.mul(dy, y), {axis}, /*keepdims=*/true);
        return g.mul(y, g.sub(dy, dot));
      });
}

LogicalResult LogSoftmaxOp::buildGradients(OpBuilder &builder,
                                           ValueRange resultGrads,
                                           ArrayRef<bool> wanted,
                                           SmallVectorImpl<Value> &grads) {
  return inputGradient(
      *this, builder, resultGrads, wanted, grads,
      [&](GradientBuilder &g, Value dy) {
        Value y = getResult();
        int64_t axis = getAxis();
        Value sum = g.reduceSum(dy, {axis}, /*keepdims=*/true);
        return g.sub(dy, g.mul(ExpOp::create(g.builder(), y), sum));
      });
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

namespace {
/// x normalized over `dims` (kept as size 1), recomputed from the input.
struct Normalized {
  Value centered, rstd, xhat;
};
} // namespace

static Normalized normalize(GradientBuilder &g, Value x,
                            ArrayRef<int64_t> dims, double epsilon) {
  Value mean = g.reduceMean(x, dims, /*keepdims=*/true);
  Value centered = g.sub(x, mean);
  Value var = g.reduceMean(g.mul(centered, centered), dims, /*keepdims=*/true);
  Value rstd = RsqrtOp::create(g.builder(), g.add(var, g.scalarLike(x, epsilon)));
  return {centered, rstd, g.mul(centered, rstd)};
}

/// dx of y = xhat * scale + bias given dxhat = dy * scale:
/// rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)).
static Value normalizedInputGradient(GradientBuilder &g, const Normalized &n,
                                     Value dxhat, ArrayRef<int64_t> dims) {
  Value meanD = g.reduceMean(dxhat, dims, /*keepdims=*/true);
  Value meanDX = g.reduceMean(g.mul(dxhat, n.xhat), dims, /*keepdims=*/true);
  return g.mul(n.rstd, g.sub(g.sub(dxhat, meanD), g.mul(n.xhat, meanDX)));
}

LogicalResult LayerNormOp::buildGradients(OpBuilder &builder,
                                          ValueRange resultGrads,
                                          ArrayRef<bool> wanted,
                                          SmallVectorImpl<Value> &grads) {
  Rule r(*this, builder, grads);
  GradientBuilder &g = r.g;
  Value dy = resultGrads[0];
  if (!dy)
    return success();
  int64_t rank = getInput().getType().getRank(), axis = getAxis();
  SmallVector<int64_t> normDims, leadDims;
  for (int64_t d = 0; d < rank; ++d)
    (d >= axis ? normDims : leadDims).push_back(d);
  Normalized n = normalize(g, getInput(), normDims,
                           getEpsilon().convertToDouble());
  if (wanted[0])
    grads[0] = normalizedInputGradient(g, n, g.mul(dy, getScale()), normDims);
  if (wanted[1])
    grads[1] = g.reduceSum(g.mul(dy, n.xhat), leadDims);
  if (wanted[2])
    grads[2] = g.reduceSum(dy, leadDims);
  return success();
}

/// Dimensions of an [N, C, ...] tensor other than the channel dimension.
static SmallVector<int64_t> nonChannelDims(int64_t rank) {
  SmallVector<int64_t> dims = {0};
  for (int64_t d = 2; d < rank; ++d)
    dims.push_back(d);
  return dims;
}

/// A per-channel [C] vector shaped [C, 1, ...] to broadcast against
/// [N, C, ...].
static Value perChannel(GradientBuilder &g, Value v, int64_t rank) {
  SmallVector<int64_t> shape = {GradientBuilder::shapeOf(v)[0]};
  shape.append(rank - 2, 1);
  return g.reshape(v, shape);
}

LogicalResult BatchNormTrainingOp::buildGradients(
    OpBuilder &builder, ValueRange resultGrads, ArrayRef<bool> wanted,
    SmallVectorImpl<Value> &grads) {
  Rule r(*this, builder, grads);
  GradientBuilder &g = r.g;
  Value dy = resultGrads[0], dMean = resultGrads[1], dVar = resultGrads[2];
  if (!dy && !dMean && !dVar)
    return success();
  Value x = getInput();
  int64_t rank = getInput().getType().getRank();
  SmallVector<int64_t> dims = nonChannelDims(rank);
  Normalized n = normalize(g, x, dims, getEpsilon().convertToDouble());
  RankedTensorType xType = getInput().getType();
  // Elements per channel: the product of the other dimensions (the
  // elements divided by the channels would divide by zero without
  // channels).
  double count = 1;
  for (int64_t d : dims)
    count *= static_cast<double>(xType.getDimSize(d));
  if (wanted[0]) {
    Value dx;
    if (dy)
      dx = normalizedInputGradient(
          g, n, g.mul(dy, perChannel(g, getScale(), rank)), dims);
    // The returned statistics are functions of x too.
    if (dMean) {
      Value d = g.broadcastTo(g.mul(perChannel(g, dMean, rank), 1.0 / count),
                              xType.getShape());
      dx = dx ? g.add(dx, d) : d;
    }
    if (dVar) {
      Value d = g.mul(g.mul(perChannel(g, dVar, rank), n.centered),
                      2.0 / count);
      dx = dx ? g.add(dx, d) : d;
    }
    grads[0] = dx;
  }
  if (wanted[1] && dy)
    grads[1] = g.reduceSum(g.mul(dy, n.xhat), dims);
  if (wanted[2] && dy)
    grads[2] = g.reduceSum(dy, dims);
  return success();
}

LogicalResult BatchNormInferenceOp::buildGradients(
    OpBuilder &builder, ValueRange resultGrads, ArrayRef<bool> wanted,
    SmallVectorImpl<Value> &grads) {
  Rule r(*this, builder, grads);
  GradientBuilder &g = r.g;
  Value dy = resultGrads[0];
  if (!dy)
    return success();
  Value x = getInput();
  int64_t rank = getInput().getType().getRank();
  SmallVector<int64_t> dims = nonChannelDims(rank);
  double eps = getEpsilon().convertToDouble();
  Value rstd = RsqrtOp::create(g.builder(),
                               g.add(getVariance(), g.scalarLike(x, eps)));
  Value rstdC = perChannel(g, rstd, rank);
  Value scaleC = perChannel(g, getScale(), rank);
  Value centered = g.sub(x, perChannel(g, getMean(), rank));
  if (wanted[0])
    grads[0] = g.mul(dy, g.mul(scaleC, rstdC));
  if (wanted[1])
    grads[1] = g.reduceSum(g.mul(g.mul(dy, centered), rstdC), dims);
  if (wanted[2])
    grads[2] = g.reduceSum(dy, dims);
  if (wanted[3])
    grads[3] = g.neg(g.mul(g.reduceSum(dy, dims), g.mul(getScale(), rstd)));
  if (wanted[4]) {
    Value rstd3 = g.mul(g.mul(rstd, rstd), rstd);
    grads[4] = g.mul(g.reduceSum(g.mul(dy, centered), dims),
                     g.mul(g.mul(getScale(), rstd3), -0.5));
  }
  return success();
}

LogicalResult DropoutOp::buildGradients(OpBuilder &builder,
                                        ValueRange resultGrads,
                                        ArrayRef<bool> wanted,
                                        SmallVectorImpl<Value> &grads) {
  return inputGradient(
      *this, builder, resultGrads, wanted, grads,
      [&](GradientBuilder &g, Value dy) {
        double scale = 1.0 / (1.0 - getRatio().convertToDouble());
        return g.where(getMask(), g.mul(dy, scale));
      });
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

/// The gradient of a class loss with respect to its input, given how the
/// per-sample term depends on it (`perSample(c)` returns the input gradient
/// for per-sample coefficients `c` broadcast over [N, C, ...]).
template <typename LossOp>
static Value classLossGradient(
    GradientBuilder &g, LossOp op, Value dy,
    function_ref<Value(Value coefficient, Value onehot)> perSample) {
  Value x = op.getInput(), labels = op.getLabels();
  RankedTensorType xType = op.getInput().getType();
  ArrayRef<int64_t> xShape = xType.getShape();
  ArrayRef<int64_t> lShape = op.getLabels().getType().getShape();
  Type element = xType.getElementType();
  int64_t rank = xShape.size(), classes = xShape[1];

  Value valid;
  if (std::optional<int64_t> ignore = op.getIgnoreIndex())
    valid = g.compare(CompareDirection::ne, labels,
                      g.scalarLike(labels, static_cast<double>(*ignore)));
  Value weight;
  if (op.getWeight())
    weight = GatherOp::create(g.builder(), op.getWeight(), labels, 0);

  // Coefficient of each sample's term in the loss, times the incoming
  // gradient.
  Value c = dy;
  if (op.getReduction() == LossReduction::mean) {
    Value total;
    if (weight)
      total = g.reduceSum(valid ? g.where(valid, weight) : weight,
                          llvm::to_vector(llvm::seq<int64_t>(0, lShape.size())));
    else if (valid)
      total = g.reduceSum(g.castTo(valid, element),
                          llvm::to_vector(llvm::seq<int64_t>(0, lShape.size())));
    else
      total = g.scalar(element, static_cast<double>(numElements(lShape)));
    c = g.div(c, total);
  }
  if (weight)
    c = g.mul(c, weight);
  if (valid)
    c = g.where(valid, c);
  c = g.broadcastTo(c, lShape);
  SmallVector<int64_t> sampleDims = {0};
  for (int64_t d = 2; d < rank; ++d)
    sampleDims.push_back(d);
  Value cx = g.broadcast(c, xShape, sampleDims);

  // One-hot of the labels over the class dimension.
  Type labelElement = GradientBuilder::elementOf(labels);
  SmallVector<int64_t> iota(classes);
  for (int64_t i = 0; i < classes; ++i)
    iota[i] = i;
  auto iotaType = RankedTensorType::get({classes}, labelElement);
  SmallVector<APInt> ids;
  for (int64_t i : iota)
    ids.push_back(APInt(labelElement.getIntOrFloatBitWidth(), i));
  Value classIds = ConstantOp::create(
      g.builder(), DenseElementsAttr::get(iotaType, ids));
  Value onehot = g.compare(CompareDirection::eq,
                           g.broadcast(labels, xShape, sampleDims),
                           g.broadcast(classIds, xShape, {1}));
  return perSample(cx, onehot);
}

LogicalResult CrossEntropyOp::buildGradients(OpBuilder &builder,
                                             ValueRange resultGrads,
                                             ArrayRef<bool> wanted,
                                             SmallVectorImpl<Value> &grads) {
  return inputGradient(
      *this, builder, resultGrads, wanted, grads,
      [&](GradientBuilder &g, Value dy) {
        // d/dx (-log_softmax(x)[label]) = softmax(x) - onehot(label).
        return classLossGradient(
            g, *this, dy, [&](Value c, Value onehot) {
              Value p = SoftmaxOp::create(g.builder(), getInput(), 1);
              Value t =
                  g.castTo(onehot, GradientBuilder::elementOf(getInput()));
              return g.mul(c, g.sub(p, t));
            });
      });
}

bool CrossEntropyOp::isDifferentiableOperand(unsigned index) {
  return index == 0;
}

LogicalResult NllLossOp::buildGradients(OpBuilder &builder,
                                        ValueRange resultGrads,
                                        ArrayRef<bool> wanted,
                                        SmallVectorImpl<Value> &grads) {
  return inputGradient(
      *this, builder, resultGrads, wanted, grads,
      [&](GradientBuilder &g, Value dy) {
        return classLossGradient(g, *this, dy, [&](Value c, Value onehot) {
          return g.where(onehot, g.neg(c));
        });
      });
}

bool NllLossOp::isDifferentiableOperand(unsigned index) { return index == 0; }

LogicalResult MseLossOp::buildGradients(OpBuilder &builder,
                                        ValueRange resultGrads,
                                        ArrayRef<bool> wanted,
                                        SmallVectorImpl<Value> &grads) {
  Rule r(*this, builder, grads);
  GradientBuilder &g = r.g;
  Value dy = resultGrads[0];
  if (!dy)
    return success();
  double factor = 2.0;
  if (getReduction() == LossReduction::mean)
    factor /= static_cast<double>(numElements(getInput().getType().getShape()));
  Value d = g.mul(g.mul(dy, g.sub(getInput(), getTarget())), factor);
  if (wanted[0])
    grads[0] = d;
  if (wanted[1])
    grads[1] = g.neg(d);
  return success();
}
