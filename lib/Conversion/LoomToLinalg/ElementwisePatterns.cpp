//===- ElementwisePatterns.cpp - loom elementwise ops -> linalg.generic ---===//

#include "Common.h"

#include "mlir/IR/DialectResourceBlobManager.h"
#include <cmath>

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::lowering;

namespace {

Type originalElement(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}

/// Unary elementwise ops: `fn(scalar, x)` builds the result.
template <typename OpTy>
struct UnaryLowering : OpConversionPattern<OpTy> {
  using Fn = Value (*)(const Scalar &, Value, OpTy);
  UnaryLowering(TypeConverter &tc, MLIRContext *ctx, Fn fn)
      : OpConversionPattern<OpTy>(tc, ctx), fn(fn) {}

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type element = originalElement(op.getInput());
    auto type = cast<RankedTensorType>(op.getType());
    Value result = elementwise(
        rewriter, op.getLoc(), type.getShape(), signless(element),
        ValueRange{adaptor.getInput()},
        [&](OpBuilder &b, Location loc, ValueRange args) {
          return fn(Scalar{b, loc, element}, args[0], op);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
  Fn fn;
};

/// Binary elementwise ops with broadcasting.
template <typename OpTy>
struct BinaryLowering : OpConversionPattern<OpTy> {
  using Fn = Value (*)(const Scalar &, Value, Value);
  BinaryLowering(TypeConverter &tc, MLIRContext *ctx, Fn fn)
      : OpConversionPattern<OpTy>(tc, ctx), fn(fn) {}

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type element = originalElement(op.getLhs());
    auto type = cast<RankedTensorType>(op.getType());
    Value result = elementwise(
        rewriter, op.getLoc(), type.getShape(), signless(element),
        ValueRange{adaptor.getLhs(), adaptor.getRhs()},
        [&](OpBuilder &b, Location loc, ValueRange args) {
          return fn(Scalar{b, loc, element}, args[0], args[1]);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
  Fn fn;
};

struct CompareLowering : OpConversionPattern<CompareOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CompareOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type element = originalElement(op.getLhs());
    CompareDirection direction = op.getDirection();
    Value result = elementwise(
        rewriter, op.getLoc(), op.getType().getShape(), rewriter.getI1Type(),
        ValueRange{adaptor.getLhs(), adaptor.getRhs()},
        [&](OpBuilder &b, Location loc, ValueRange args) {
          return Scalar{b, loc, element}.compare(direction, args[0], args[1]);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct SelectLowering : OpConversionPattern<SelectOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SelectOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type element = signless(originalElement(op.getOnTrue()));
    Value result = elementwise(
        rewriter, op.getLoc(), op.getType().getShape(), element,
        adaptor.getOperands(), [&](OpBuilder &b, Location loc, ValueRange a) {
          return arith::SelectOp::create(b, loc, a[0], a[1], a[2]).getResult();
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct CastLowering : OpConversionPattern<CastOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CastOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Type from = originalElement(op.getInput());
    Type to = op.getType().getElementType();
    Value result = elementwise(
        rewriter, op.getLoc(), op.getType().getShape(), signless(to),
        ValueRange{adaptor.getInput()},
        [&](OpBuilder &b, Location loc, ValueRange args) {
          return Scalar{b, loc, from}.convert(args[0], to);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct ConstantLowering : OpConversionPattern<ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConstantOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ElementsAttr value = op.getValue();
    Type element = value.getElementType();
    if (element.isUnsignedInteger()) {
      auto type = cast<RankedTensorType>(value.getType()).clone(signless(element));
      if (auto dense = dyn_cast<DenseElementsAttr>(value))
        value = dense.bitcast(signless(element));
      else if (auto resource = dyn_cast<DenseResourceElementsAttr>(value))
        value = DenseResourceElementsAttr::get(type, resource.getRawHandle());
      else
        return rewriter.notifyMatchFailure(op, "unknown elements attribute");
    }
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, cast<TypedAttr>(value));
    return success();
  }
};

/// Ops that return their first operand (sharding_constraint, cotangent).
template <typename OpTy>
struct IdentityLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getOperands().front());
    return success();
  }
};

struct OpaqueLowering : OpConversionPattern<OpaqueOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(OpaqueOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    return op.emitOpError("'") << op.getOpName()
                               << "' cannot be compiled: Loom has no lowering "
                                  "for it (it was imported with "
                                  "--allow-unsupported)";
  }
};

/// Inverted dropout with a counter-based generator: element k of the full
/// tensor is kept iff the top 24 bits of splitmix64(seed + (k + 1) * phi)
/// are >= round(ratio * 2^24). A function of (seed, k) only, so shards of a
/// partitioned program drop exactly what the whole program drops.
struct DropoutLowering : OpConversionPattern<DropoutOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DropoutOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type element = originalElement(op.getInput());
    ArrayRef<int64_t> shape = op.getResult().getType().getShape();
    double ratio = op.getRatio().convertToDouble();
    Value seed = tensor::ExtractOp::create(rewriter, loc, adaptor.getSeed(),
                                           ValueRange{});
    int64_t threshold = std::llround(ratio * 16777216.0);
    double scale = 1.0 / (1.0 - ratio);
    SmallVector<Value> results = elementwiseN(
        rewriter, loc, shape, TypeRange{signless(element), rewriter.getI1Type()},
        ValueRange{adaptor.getInput()},
        [&](OpBuilder &b, Location l, ValueRange args) {
          Type i64 = b.getI64Type();
          auto c = [&](uint64_t v) -> Value {
            return arith::ConstantOp::create(b, l, b.getIntegerAttr(i64, v));
          };
          Value idx = c(0);
          for (int64_t d = 0, e = shape.size(); d < e; ++d) {
            Value i = arith::IndexCastOp::create(
                b, l, i64, linalg::IndexOp::create(b, l, d));
            idx = arith::AddIOp::create(
                b, l, arith::MulIOp::create(b, l, idx, c(shape[d])), i);
          }
          Value z = arith::AddIOp::create(
              b, l, seed,
              arith::MulIOp::create(b, l, arith::AddIOp::create(b, l, idx, c(1)),
                                    c(DropoutOp::kIndexMultiplier)));
          auto mix = [&](Value v, int64_t shift, uint64_t mul) -> Value {
            Value x = arith::XOrIOp::create(
                b, l, v, arith::ShRUIOp::create(b, l, v, c(shift)));
            return arith::MulIOp::create(b, l, x, c(mul));
          };
          z = mix(z, 30, 0xBF58476D1CE4E5B9ull);
          z = mix(z, 27, 0x94D049BB133111EBull);
          z = arith::XOrIOp::create(b, l, z,
                                    arith::ShRUIOp::create(b, l, z, c(31)));
          Value top = arith::ShRUIOp::create(b, l, z, c(40));
          Value keep = arith::CmpIOp::create(b, l, arith::CmpIPredicate::uge,
                                             top, c(threshold));
          Scalar s{b, l, element};
          Value kept = s.mul(args[0], s.constant(scale));
          return SmallVector<Value>{s.select(keep, kept, s.constant(0)), keep};
        });
    rewriter.replaceOp(op, results);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Scalar bodies
//===----------------------------------------------------------------------===//

template <typename MathOp>
Value mathUnary(const Scalar &s, Value x) {
  return MathOp::create(s.b, s.loc, x);
}

Value gelu(const Scalar &s, Value x, GeluOp op) {
  Value half = s.mul(s.constant(0.5), x);
  Value inner;
  if (op.getApproximate() == GeluApproximation::tanh) {
    Value cube = s.mul(x, s.mul(x, x));
    Value arg = s.mul(s.constant(std::sqrt(2.0 / M_PI)),
                      s.add(x, s.mul(s.constant(0.044715), cube)));
    inner = math::TanhOp::create(s.b, s.loc, arg);
  } else {
    inner = math::ErfOp::create(s.b, s.loc, s.mul(x, s.constant(M_SQRT1_2)));
  }
  return s.mul(half, s.add(s.constant(1), inner));
}

template <typename OpTy>
void addUnary(LoomTypeConverter &tc, RewritePatternSet &patterns,
              Value (*fn)(const Scalar &, Value, OpTy)) {
  patterns.add<UnaryLowering<OpTy>>(tc, patterns.getContext(), fn);
}

template <typename OpTy>
void addBinary(LoomTypeConverter &tc, RewritePatternSet &patterns,
               Value (*fn)(const Scalar &, Value, Value)) {
  patterns.add<BinaryLowering<OpTy>>(tc, patterns.getContext(), fn);
}

} // namespace

void mlir::loom::lowering::populateElementwisePatterns(
    LoomTypeConverter &tc, RewritePatternSet &patterns) {
  addUnary<NegOp>(tc, patterns, [](const Scalar &s, Value x, NegOp) { return s.neg(x); });
  addUnary<AbsOp>(tc, patterns, [](const Scalar &s, Value x, AbsOp) { return s.abs(x); });
  addUnary<ExpOp>(tc, patterns, [](const Scalar &s, Value x, ExpOp) { return mathUnary<math::ExpOp>(s, x); });
  addUnary<LogOp>(tc, patterns, [](const Scalar &s, Value x, LogOp) { return mathUnary<math::LogOp>(s, x); });
  addUnary<SqrtOp>(tc, patterns, [](const Scalar &s, Value x, SqrtOp) { return mathUnary<math::SqrtOp>(s, x); });
  addUnary<RsqrtOp>(tc, patterns, [](const Scalar &s, Value x, RsqrtOp) { return mathUnary<math::RsqrtOp>(s, x); });
  addUnary<TanhOp>(tc, patterns, [](const Scalar &s, Value x, TanhOp) { return mathUnary<math::TanhOp>(s, x); });
  addUnary<ErfOp>(tc, patterns, [](const Scalar &s, Value x, ErfOp) { return mathUnary<math::ErfOp>(s, x); });
  addUnary<FloorOp>(tc, patterns, [](const Scalar &s, Value x, FloorOp) { return mathUnary<math::FloorOp>(s, x); });
  addUnary<CeilOp>(tc, patterns, [](const Scalar &s, Value x, CeilOp) { return mathUnary<math::CeilOp>(s, x); });
  addUnary<RoundOp>(tc, patterns, [](const Scalar &s, Value x, RoundOp) { return mathUnary<math::RoundEvenOp>(s, x); });
  addUnary<SinOp>(tc, patterns, [](const Scalar &s, Value x, SinOp) { return mathUnary<math::SinOp>(s, x); });
  addUnary<CosOp>(tc, patterns, [](const Scalar &s, Value x, CosOp) { return mathUnary<math::CosOp>(s, x); });
  addUnary<SigmoidOp>(tc, patterns, [](const Scalar &s, Value x, SigmoidOp) {
    Value e = math::ExpOp::create(s.b, s.loc, s.neg(x));
    return s.div(s.constant(1), s.add(s.constant(1), e));
  });
  addUnary<ReluOp>(tc, patterns, [](const Scalar &s, Value x, ReluOp) {
    return s.max(x, s.constant(0));
  });
  addUnary<GeluOp>(tc, patterns, gelu);

  addBinary<AddOp>(tc, patterns, [](const Scalar &s, Value x, Value y) { return s.add(x, y); });
  addBinary<SubOp>(tc, patterns, [](const Scalar &s, Value x, Value y) { return s.sub(x, y); });
  addBinary<MulOp>(tc, patterns, [](const Scalar &s, Value x, Value y) { return s.mul(x, y); });
  addBinary<DivOp>(tc, patterns, [](const Scalar &s, Value x, Value y) { return s.div(x, y); });
  addBinary<PowOp>(tc, patterns, [](const Scalar &s, Value x, Value y) { return s.pow(x, y); });
  addBinary<MaxOp>(tc, patterns, [](const Scalar &s, Value x, Value y) { return s.max(x, y); });
  addBinary<MinOp>(tc, patterns, [](const Scalar &s, Value x, Value y) { return s.min(x, y); });

  patterns.add<CompareLowering, SelectLowering, CastLowering, ConstantLowering,
               IdentityLowering<ShardingConstraintOp>,
               IdentityLowering<CotangentOp>, OpaqueLowering, DropoutLowering>(
      tc, patterns.getContext());
}
