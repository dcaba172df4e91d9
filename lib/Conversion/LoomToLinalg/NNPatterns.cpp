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

/// A softmax's statistics along `axis` of `x` (elements of `original`),
/// computed in accumulatorType(original) straight from x: {max(x),
/// sum(exp(x - max))}, the reduced dimension dropped. A cross-entropy and
/// the softmax of its gradient build the same two reductions of the same
/// logits, which CSE then computes once per step.
std::pair<Value, Value> softmaxStats(OpBuilder &b, Location loc, Value x,
                                     int64_t axis, Type original) {
  Type acc = accumulatorType(original);
  Value m = reduceOf(b, loc, ValueRange{x}, {}, {axis}, ReductionKind::max, acc,
                     [&](OpBuilder &nb, Location l, ValueRange a) {
                       return Scalar{nb, l, original}.convert(a[0], acc);
                     });
  Value s = reduceOf(
      b, loc, ValueRange{x}, ValueRange{m}, {axis}, ReductionKind::sum, acc,
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Scalar sc{nb, l, acc};
        Value shifted = sc.sub(Scalar{nb, l, original}.convert(a[0], acc), a[1]);
        return math::ExpOp::create(nb, l, shifted).getResult();
      });
  return {m, s};
}

/// log_softmax(x)[i] = (x[i] - max) - log(sum), in the accumulator type.
Value logSoftmaxOf(Scalar acc, Type original, Value x, Value max, Value sum) {
  Value shifted = acc.sub(Scalar{acc.b, acc.loc, original}.convert(x, acc.type()), max);
  return acc.sub(shifted, math::LogOp::create(acc.b, acc.loc, sum));
}

template <typename OpTy, bool isLog>
struct SoftmaxLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    Type original = originalElement(op.getInput());
    Type acc = accumulatorType(original);
    int64_t axis = op.getAxis();
    ArrayRef<int64_t> shape = shapeOf(x);
    auto [m, sum] = softmaxStats(rewriter, loc, x, axis, original);
    Value y = elementwise(
        rewriter, loc, shape, signless(original),
        ValueRange{x, keepDims(rewriter, loc, m, shape, {axis}),
                   keepDims(rewriter, loc, sum, shape, {axis})},
        [&](OpBuilder &b, Location l, ValueRange a) {
          Scalar s{b, l, acc};
          Value r;
          if constexpr (isLog) {
            r = logSoftmaxOf(s, original, a[0], a[1], a[2]);
          } else {
            Value shifted = s.sub(Scalar{b, l, original}.convert(a[0], acc), a[1]);
            r = s.div(math::ExpOp::create(b, l, shifted), a[2]);
          }
          return s.convert(r, original);
        });
    rewriter.replaceOp(op, y);
    return success();
  }
};

/// mean and biased variance of `x` (elements of `original`) over `dims`,
/// in accumulatorType(original), kept as size-1 dims; the squares are
/// summed where they are computed.
std::pair<Value, Value> moments(OpBuilder &b, Location loc, Value x,
                                ArrayRef<int64_t> dims, Type original) {
  ArrayRef<int64_t> shape = shapeOf(x);
  Type element = accumulatorType(original);
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
  Value mean = scale(reduceOf(b, loc, ValueRange{x}, {}, dims, ReductionKind::sum,
                              element, [&](OpBuilder &nb, Location l, ValueRange a) {
                                return Scalar{nb, l, original}.convert(a[0], element);
                              }));
  Value var = scale(reduceOf(
      b, loc, ValueRange{x}, ValueRange{mean}, dims, ReductionKind::sum, element,
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Scalar s{nb, l, element};
        Value c = s.sub(Scalar{nb, l, original}.convert(a[0], element), a[1]);
        return s.mul(c, c);
      }));
  return {keepDims(b, loc, mean, shape, dims), keepDims(b, loc, var, shape, dims)};
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
    auto [mean, var] = moments(rewriter, loc, adaptor.getInput(), dims, original);
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
    auto [mean, var] = moments(rewriter, loc, adaptor.getInput(), dims, original);
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

/// A sample's log-probability of class `coords[1]` at `coords` ([N, C,
/// d...]), in `element`.
using PickFn = function_ref<Value(OpBuilder &, Location, ValueRange coords)>;

/// Per-sample negative log-likelihood of the log-probabilities `pick`
/// reads ([N, C, d...], C = `classes`) at `labels` ([N, d...]): returns
/// {loss_i, weight_i} with ignored samples at weight 0.
std::pair<Value, Value> perSampleNll(OpBuilder &b, Location loc, int64_t classes,
                                     PickFn pick, Value labels, Value weight,
                                     std::optional<int64_t> ignoreIndex,
                                     Type element) {
  ArrayRef<int64_t> labelShape = shapeOf(labels);
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
        Value picked = pick(nb, l, coords);
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
    Value x = adaptor.getInput();
    int64_t classes = shapeOf(x)[1];
    std::optional<int64_t> ignore;
    if (op.getIgnoreIndex())
      ignore = *op.getIgnoreIndex();
    // From logits: log_softmax(x) is read only at the labels, computed
    // there from x and the rows' statistics in f32 and rounded to x's type
    // (PyTorch's log_softmax of 16-bit logits); nothing of x's size is
    // written.
    Value m, sum;
    if (fromLogits)
      std::tie(m, sum) = softmaxStats(rewriter, loc, x, 1, element);
    auto pick = [&](OpBuilder &b, Location l, ValueRange coords) -> Value {
      Value v = tensor::ExtractOp::create(b, l, x, coords);
      if (!fromLogits)
        return v;
      SmallVector<Value> row{coords[0]};
      row.append(coords.begin() + 2, coords.end());
      Scalar acc{b, l, accumulatorType(element)};
      Value lp = logSoftmaxOf(acc, element, v,
                              tensor::ExtractOp::create(b, l, m, row),
                              tensor::ExtractOp::create(b, l, sum, row));
      return acc.convert(lp, element);
    };
    auto [loss, weight] = perSampleNll(rewriter, loc, classes, pick,
                                       adaptor.getLabels(), adaptor.getWeight(),
                                       ignore, element);
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
