//===- NNPatterns.cpp - softmax, normalization and losses -> linalg -------===//
//
// Written out in reductions and elementwise generics, numerically as
// frameworks do: softmax subtracts the maximum, variance is biased, losses
// divide by the total weight of the samples they count.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::lowering;

namespace {

Type originalElement(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}

/// Softmax and normalizations of 16-bit floats compute in f32 inside and
/// round their outputs once (PyTorch's CPU kernels, Megatron's fused
/// softmax): `v` of `element` widened to accumulatorType(element).
Value widened(OpBuilder &b, Location loc, Value v, Type element) {
  return convertTensor(b, loc, v, element, accumulatorType(element));
}
Value narrowed(OpBuilder &b, Location loc, Value v, Type element) {
  return convertTensor(b, loc, v, accumulatorType(element), element);
}

/// max-subtracted exponent and its sum along `axis` (both broadcastable
/// back to x's shape): returns {x - max, sum(exp(x - max))}.
std::pair<Value, Value> softmaxParts(OpBuilder &b, Location loc, Value x,
                                     int64_t axis, Type element) {
  ArrayRef<int64_t> shape = shapeOf(x);
  Value m = keepDims(b, loc, reduce(b, loc, x, {axis}, ReductionKind::max, element),
                     shape, {axis});
  Value shifted = elementwise(b, loc, shape, signless(element), ValueRange{x, m},
                              [&](OpBuilder &nb, Location l, ValueRange a) {
                                return Scalar{nb, l, element}.sub(a[0], a[1]);
                              });
  Value e = elementwise(b, loc, shape, signless(element), ValueRange{shifted},
                        [&](OpBuilder &nb, Location l, ValueRange a) {
                          return math::ExpOp::create(nb, l, a[0]).getResult();
                        });
  Value s = keepDims(b, loc, reduce(b, loc, e, {axis}, ReductionKind::sum, element),
                     shape, {axis});
  return {shifted, s};
}

Value logSoftmax(OpBuilder &b, Location loc, Value x, int64_t axis,
                 Type element) {
  auto [shifted, sum] = softmaxParts(b, loc, x, axis, element);
  return elementwise(b, loc, shapeOf(x), signless(element),
                     ValueRange{shifted, sum},
                     [&](OpBuilder &nb, Location l, ValueRange a) {
                       Scalar s{nb, l, element};
                       return s.sub(a[0], math::LogOp::create(nb, l, a[1]));
                     });
}

template <typename OpTy, bool isLog>
struct SoftmaxLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type original = originalElement(op.getInput());
    Type element = accumulatorType(original);
    Value x = widened(rewriter, loc, adaptor.getInput(), original);
    int64_t axis = op.getAxis();
    Value y;
    if constexpr (isLog) {
      y = logSoftmax(rewriter, loc, x, axis, element);
    } else {
      auto [shifted, sum] = softmaxParts(rewriter, loc, x, axis, element);
      y = elementwise(rewriter, loc, shapeOf(shifted), signless(element),
                      ValueRange{shifted, sum},
                      [&](OpBuilder &b, Location l, ValueRange a) {
                        Scalar s{b, l, element};
                        return s.div(math::ExpOp::create(b, l, a[0]), a[1]);
                      });
    }
    rewriter.replaceOp(op, narrowed(rewriter, loc, y, original));
    return success();
  }
};

/// mean and biased variance of `x` over `dims`, kept as size-1 dims.
std::pair<Value, Value> moments(OpBuilder &b, Location loc, Value x,
                                ArrayRef<int64_t> dims, Type element) {
  ArrayRef<int64_t> shape = shapeOf(x);
  int64_t count = 1;
  for (int64_t d : dims)
    count *= shape[d];
  auto scale = [&](Value v) {
    return elementwise(b, loc, shapeOf(v), signless(element), ValueRange{v},
                       [&](OpBuilder &nb, Location l, ValueRange a) {
                         Scalar s{nb, l, element};
                         return s.div(a[0], s.constant(count));
                       });
  };
  Value mean = keepDims(
      b, loc, scale(reduce(b, loc, x, dims, ReductionKind::sum, element)), shape,
      dims);
  Value sq = elementwise(b, loc, shape, signless(element), ValueRange{x, mean},
                         [&](OpBuilder &nb, Location l, ValueRange a) {
                           Scalar s{nb, l, element};
                           Value c = s.sub(a[0], a[1]);
                           return s.mul(c, c);
                         });
  Value var = keepDims(
      b, loc, scale(reduce(b, loc, sq, dims, ReductionKind::sum, element)), shape,
      dims);
  return {mean, var};
}

/// (x - mean) * rsqrt(var + eps) * scale + bias, all broadcast to x.
Value normalize(OpBuilder &b, Location loc, Value x, Value mean, Value var,
                Value scale, Value bias, double epsilon, Type element) {
  return elementwise(
      b, loc, shapeOf(x), signless(element),
      ValueRange{x, mean, var, scale, bias},
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Scalar s{nb, l, element};
        Value inv = math::RsqrtOp::create(nb, l, s.add(a[2], s.constant(epsilon)));
        return s.add(s.mul(s.mul(s.sub(a[0], a[1]), inv), a[3]), a[4]);
      });
}

struct LayerNormLowering : OpConversionPattern<LayerNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LayerNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type original = originalElement(op.getInput());
    Type element = accumulatorType(original);
    auto wide = [&](Value v) { return widened(rewriter, loc, v, original); };
    Value x = wide(adaptor.getInput());
    SmallVector<int64_t> dims;
    for (int64_t d = op.getAxis(), e = op.getType().getRank(); d < e; ++d)
      dims.push_back(d);
    auto [mean, var] = moments(rewriter, loc, x, dims, element);
    Value y = normalize(rewriter, loc, x, mean, var, wide(adaptor.getScale()),
                        wide(adaptor.getBias()),
                        op.getEpsilon().convertToDouble(), element);
    rewriter.replaceOp(op, narrowed(rewriter, loc, y, original));
    return success();
  }
};

/// [C] -> [C, 1, ..., 1] so that it broadcasts along dimension 1 of x.
Value perChannel(OpBuilder &b, Location loc, Value v, int64_t rank) {
  SmallVector<int64_t> shape(rank - 1, 1);
  shape[0] = shapeOf(v)[0];
  return reshape(b, loc, v, shape);
}

struct BatchNormInferenceLowering : OpConversionPattern<BatchNormInferenceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(BatchNormInferenceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type original = originalElement(op.getInput());
    Type element = accumulatorType(original);
    int64_t rank = op.getType().getRank();
    auto ch = [&](Value v) {
      return perChannel(rewriter, loc, widened(rewriter, loc, v, original), rank);
    };
    Value y = normalize(rewriter, loc, widened(rewriter, loc, adaptor.getInput(), original),
                        ch(adaptor.getMean()), ch(adaptor.getVariance()),
                        ch(adaptor.getScale()), ch(adaptor.getBias()),
                        op.getEpsilon().convertToDouble(), element);
    rewriter.replaceOp(op, narrowed(rewriter, loc, y, original));
    return success();
  }
};

struct BatchNormTrainingLowering : OpConversionPattern<BatchNormTrainingOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(BatchNormTrainingOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type original = originalElement(op.getInput());
    Type element = accumulatorType(original);
    auto wide = [&](Value v) { return widened(rewriter, loc, v, original); };
    auto narrow = [&](Value v) { return narrowed(rewriter, loc, v, original); };
    int64_t rank = op.getResult().getType().getRank();
    SmallVector<int64_t> dims;
    for (int64_t d = 0; d < rank; ++d)
      if (d != 1)
        dims.push_back(d);
    Value x = wide(adaptor.getInput());
    auto [mean, var] = moments(rewriter, loc, x, dims, element);
    auto ch = [&](Value v) { return perChannel(rewriter, loc, wide(v), rank); };
    Value y = normalize(rewriter, loc, x, mean, var, ch(adaptor.getScale()),
                        ch(adaptor.getBias()),
                        op.getEpsilon().convertToDouble(), element);
    int64_t c = op.getBatchMean().getType().getDimSize(0);
    rewriter.replaceOp(op, {narrow(y), narrow(reshape(rewriter, loc, mean, {c})),
                            narrow(reshape(rewriter, loc, var, {c}))});
    return success();
  }
};

/// Per-sample negative log-likelihood of log-probabilities `logp`
/// ([N, C, d...]) at `labels` ([N, d...]): returns {loss_i, weight_i} with
/// ignored samples at weight 0.
std::pair<Value, Value> perSampleNll(OpBuilder &b, Location loc, Value logp,
                                     Value labels, Value weight,
                                     std::optional<int64_t> ignoreIndex,
                                     Type element) {
  ArrayRef<int64_t> shape = shapeOf(logp);
  ArrayRef<int64_t> labelShape = shapeOf(labels);
  int64_t classes = shape[1];
  SmallVector<Value> results = elementwiseN(
      b, loc, labelShape, TypeRange{signless(element), signless(element)},
      ValueRange{labels}, [&](OpBuilder &nb, Location l, ValueRange a) {
        Scalar s{nb, l, element};
        Type index = nb.getIndexType();
        Value label = a[0];
        Value valid = arith::ConstantOp::create(nb, l, nb.getBoolAttr(true));
        if (ignoreIndex) {
          Value ignore = arith::ConstantOp::create(
              nb, l, nb.getIntegerAttr(label.getType(), *ignoreIndex));
          valid = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ne, label,
                                        ignore);
        }
        // Clamp so that ignored (or bad) labels never read out of bounds.
        Value i = arith::IndexCastOp::create(nb, l, index, label);
        i = arith::MaxSIOp::create(nb, l, i, arith::ConstantIndexOp::create(nb, l, 0));
        i = arith::MinSIOp::create(nb, l, i,
                                   arith::ConstantIndexOp::create(nb, l, classes - 1));
        SmallVector<Value> coords{linalg::IndexOp::create(nb, l, 0), i};
        for (int64_t d = 1, e = labelShape.size(); d < e; ++d)
          coords.push_back(linalg::IndexOp::create(nb, l, d));
        Value picked = tensor::ExtractOp::create(nb, l, logp, coords);
        Value w = weight ? Value(tensor::ExtractOp::create(nb, l, weight,
                                                           ValueRange{i}))
                         : s.constant(1);
        w = s.select(valid, w, s.constant(0));
        Value loss = s.select(valid, s.neg(s.mul(picked, w)), s.constant(0));
        return SmallVector<Value>{loss, w};
      });
  return {results[0], results[1]};
}

Value sumAll(OpBuilder &b, Location loc, Value v, Type element) {
  SmallVector<int64_t> dims;
  for (int64_t d = 0, e = shapeOf(v).size(); d < e; ++d)
    dims.push_back(d);
  return reduce(b, loc, v, dims, ReductionKind::sum, element);
}

Value applyReduction(OpBuilder &b, Location loc, Value loss, Value weight,
                     LossReduction reduction, Type element) {
  if (reduction == LossReduction::none)
    return loss;
  Value total = sumAll(b, loc, loss, element);
  if (reduction == LossReduction::sum)
    return total;
  Value denom = sumAll(b, loc, weight, element);
  return elementwise(b, loc, {}, signless(element), ValueRange{total, denom},
                     [&](OpBuilder &nb, Location l, ValueRange a) {
                       return Scalar{nb, l, element}.div(a[0], a[1]);
                     });
}

template <typename OpTy, bool fromLogits>
struct ClassLossLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type element = originalElement(op.getInput());
    Value logp = adaptor.getInput();
    if (fromLogits)
      logp = logSoftmax(rewriter, loc, logp, 1, element);
    std::optional<int64_t> ignore;
    if (op.getIgnoreIndex())
      ignore = *op.getIgnoreIndex();
    auto [loss, weight] = perSampleNll(rewriter, loc, logp, adaptor.getLabels(),
                                       adaptor.getWeight(), ignore, element);
    rewriter.replaceOp(op, applyReduction(rewriter, loc, loss, weight,
                                          op.getReduction(), element));
    return success();
  }
};

struct MseLossLowering : OpConversionPattern<MseLossOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(MseLossOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type element = originalElement(op.getInput());
    ArrayRef<int64_t> shape = shapeOf(op.getInput());
    Value sq = elementwise(rewriter, loc, shape, signless(element),
                           ValueRange{adaptor.getInput(), adaptor.getTarget()},
                           [&](OpBuilder &b, Location l, ValueRange a) {
                             Scalar s{b, l, element};
                             Value d = s.sub(a[0], a[1]);
                             return s.mul(d, d);
                           });
    Value r = sq;
    if (op.getReduction() != LossReduction::none) {
      r = sumAll(rewriter, loc, sq, element);
      if (op.getReduction() == LossReduction::mean) {
        int64_t count = op.getInput().getType().getNumElements();
        r = elementwise(rewriter, loc, {}, signless(element), ValueRange{r},
                        [&](OpBuilder &b, Location l, ValueRange a) {
                          Scalar s{b, l, element};
                          return s.div(a[0], s.constant(count));
                        });
      }
    }
    rewriter.replaceOp(op, r);
    return success();
  }
};

} // namespace

void mlir::loom::lowering::populateNNPatterns(LoomTypeConverter &tc,
                                              RewritePatternSet &patterns) {
  patterns.add<SoftmaxLowering<SoftmaxOp, false>,
               SoftmaxLowering<LogSoftmaxOp, true>, LayerNormLowering,
               BatchNormInferenceLowering, BatchNormTrainingLowering,
               ClassLossLowering<CrossEntropyOp, true>,
               ClassLossLowering<NllLossOp, false>, MseLossLowering>(
      tc, patterns.getContext());
}
