//===- ShapePatterns.cpp - loom data movement -> tensor/linalg -------------===//

#include "Common.h"

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::lowering;

namespace {

struct ReshapeLowering : OpConversionPattern<ReshapeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReshapeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, reshape(rewriter, op.getLoc(), adaptor.getInput(),
                                   op.getType().getShape()));
    return success();
  }
};

struct TransposeLowering : OpConversionPattern<TransposeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TransposeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value init = emptyTensor(rewriter, op.getLoc(), op.getType().getShape(),
                             signless(op.getType().getElementType()));
    rewriter.replaceOp(op, linalg::TransposeOp::create(rewriter, op.getLoc(),
                                                       adaptor.getInput(), init,
                                                       op.getPermutation())
                               .getResult()[0]);
    return success();
  }
};

struct BroadcastLowering : OpConversionPattern<BroadcastOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(BroadcastOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    MLIRContext *ctx = rewriter.getContext();
    ArrayRef<int64_t> in = shapeOf(op.getInput()), out = op.getType().getShape();
    SmallVector<AffineExpr> exprs;
    for (auto [i, d] : llvm::enumerate(op.getDims()))
      exprs.push_back(in[i] == 1 && out[d] != 1 ? getAffineConstantExpr(0, ctx)
                                                : getAffineDimExpr(d, ctx));
    Type element = signless(op.getType().getElementType());
    Value init = emptyTensor(rewriter, op.getLoc(), out, element);
    SmallVector<AffineMap> maps = {
        AffineMap::get(out.size(), 0, exprs, ctx),
        AffineMap::getMultiDimIdentityMap(out.size(), ctx)};
    SmallVector<utils::IteratorType> iterators(out.size(),
                                               utils::IteratorType::parallel);
    auto generic = linalg::GenericOp::create(
        rewriter, op.getLoc(), TypeRange{init.getType()},
        ValueRange{adaptor.getInput()}, ValueRange{init}, maps, iterators,
        [](OpBuilder &b, Location l, ValueRange a) {
          linalg::YieldOp::create(b, l, a[0]);
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

SmallVector<OpFoldResult> indexAttrs(OpBuilder &b, ArrayRef<int64_t> values) {
  SmallVector<OpFoldResult> out;
  for (int64_t v : values)
    out.push_back(b.getIndexAttr(v));
  return out;
}

struct ConcatLowering : OpConversionPattern<ConcatOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConcatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    ArrayRef<int64_t> out = op.getType().getShape();
    int64_t axis = op.getAxis();
    Value result = emptyTensor(rewriter, loc, out,
                               signless(op.getType().getElementType()));
    SmallVector<int64_t> offsets(out.size(), 0), strides(out.size(), 1);
    for (Value in : adaptor.getInputs()) {
      ArrayRef<int64_t> sizes = shapeOf(in);
      result = tensor::InsertSliceOp::create(
          rewriter, loc, in, result, indexAttrs(rewriter, offsets),
          indexAttrs(rewriter, sizes), indexAttrs(rewriter, strides));
      offsets[axis] += sizes[axis];
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct SliceLowering : OpConversionPattern<SliceOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getType()));
    // tensor.extract_slice wants in-bounds offsets even for empty slices.
    SmallVector<int64_t> offsets(op.getStart()), strides(op.getStride());
    for (auto [d, size] : llvm::enumerate(type.getShape()))
      if (size == 0)
        offsets[d] = 0, strides[d] = 1;
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
        op, type, adaptor.getInput(), indexAttrs(rewriter, offsets),
        indexAttrs(rewriter, type.getShape()), indexAttrs(rewriter, strides));
    return success();
  }
};

/// Gather reads the table with tensor.extract inside a generic over the
/// result; indices are wrapped once if negative and clamped to the axis.
struct GatherLowering : OpConversionPattern<GatherOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    ArrayRef<int64_t> in = shapeOf(op.getInput()), idx = shapeOf(op.getIndices());
    ArrayRef<int64_t> out = op.getType().getShape();
    int64_t axis = op.getAxis(), idxRank = idx.size();
    SmallVector<AffineExpr> idxExprs;
    for (int64_t d = 0; d < idxRank; ++d)
      idxExprs.push_back(getAffineDimExpr(axis + d, ctx));
    Type element = signless(op.getType().getElementType());
    Value init = emptyTensor(rewriter, loc, out, element);
    SmallVector<AffineMap> maps = {
        AffineMap::get(out.size(), 0, idxExprs, ctx),
        AffineMap::getMultiDimIdentityMap(out.size(), ctx)};
    SmallVector<utils::IteratorType> iterators(out.size(),
                                               utils::IteratorType::parallel);
    Value table = adaptor.getInput();
    int64_t size = in[axis];
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{init.getType()}, ValueRange{adaptor.getIndices()},
        ValueRange{init}, maps, iterators,
        [&](OpBuilder &b, Location l, ValueRange a) {
          Type indexType = b.getIndexType();
          Value i = arith::IndexCastOp::create(b, l, indexType, a[0]);
          Value zero = arith::ConstantIndexOp::create(b, l, 0);
          Value n = arith::ConstantIndexOp::create(b, l, size);
          Value neg = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, i, zero);
          i = arith::SelectOp::create(b, l, neg, arith::AddIOp::create(b, l, i, n), i);
          i = arith::MaxSIOp::create(b, l, i, zero);
          i = arith::MinSIOp::create(
              b, l, i, arith::ConstantIndexOp::create(b, l, size - 1));
          SmallVector<Value> coords;
          for (int64_t d = 0; d < axis; ++d)
            coords.push_back(linalg::IndexOp::create(b, l, d));
          coords.push_back(i);
          for (int64_t d = axis + 1, e = in.size(); d < e; ++d)
            coords.push_back(linalg::IndexOp::create(b, l, d - 1 + idxRank));
          linalg::YieldOp::create(b, l,
                                  tensor::ExtractOp::create(b, l, table, coords)
                                      .getResult());
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

/// Scatter-add accumulates into a zero tensor with a loop nest over the
/// updates (tensor.extract/insert on an iter_arg, which bufferizes in place):
/// repeated indices must add up, which no parallel linalg op expresses.
struct ScatterAddLowering : OpConversionPattern<ScatterAddOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ScatterAddOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    ArrayRef<int64_t> out = op.getType().getShape();
    ArrayRef<int64_t> upd = shapeOf(op.getUpdates());
    int64_t axis = op.getAxis();
    int64_t idxRank = shapeOf(op.getIndices()).size();
    Scalar s{rewriter, loc, op.getType().getElementType()};
    Value init = filledTensor(rewriter, loc, out, s.constant(0));
    Value updates = adaptor.getUpdates(), indices = adaptor.getIndices();

    SmallVector<Value> ivs;
    std::function<Value(OpBuilder &, Location, Value, size_t)> nest =
        [&](OpBuilder &b, Location l, Value acc, size_t d) -> Value {
      if (d == upd.size()) {
        SmallVector<Value> idxCoords(ivs.begin() + axis,
                                     ivs.begin() + axis + idxRank);
        Value i = tensor::ExtractOp::create(b, l, indices, idxCoords);
        i = arith::IndexCastOp::create(b, l, b.getIndexType(), i);
        Value zero = arith::ConstantIndexOp::create(b, l, 0);
        Value n = arith::ConstantIndexOp::create(b, l, out[axis]);
        Value neg =
            arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, i, zero);
        i = arith::SelectOp::create(b, l, neg, arith::AddIOp::create(b, l, i, n),
                                    i);
        i = arith::MaxSIOp::create(b, l, i, zero);
        i = arith::MinSIOp::create(
            b, l, i, arith::ConstantIndexOp::create(b, l, out[axis] - 1));
        SmallVector<Value> coords(ivs.begin(), ivs.begin() + axis);
        coords.push_back(i);
        coords.append(ivs.begin() + axis + idxRank, ivs.end());
        Value u = tensor::ExtractOp::create(b, l, updates, ivs);
        Value old = tensor::ExtractOp::create(b, l, acc, coords);
        Scalar sb{b, l, op.getType().getElementType()};
        return tensor::InsertOp::create(b, l, sb.add(old, u), acc, coords);
      }
      Value lb = arith::ConstantIndexOp::create(b, l, 0);
      Value ub = arith::ConstantIndexOp::create(b, l, upd[d]);
      Value step = arith::ConstantIndexOp::create(b, l, 1);
      auto loop = scf::ForOp::create(
          b, l, lb, ub, step, ValueRange{acc},
          [&](OpBuilder &nb, Location nl, Value iv, ValueRange iter) {
            ivs.push_back(iv);
            Value next = nest(nb, nl, iter[0], d + 1);
            ivs.pop_back();
            scf::YieldOp::create(nb, nl, next);
          });
      return loop.getResult(0);
    };
    rewriter.replaceOp(op, nest(rewriter, loc, init, 0));
    return success();
  }
};

struct PadLowering : OpConversionPattern<PadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(PadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto type = cast<RankedTensorType>(
        getTypeConverter()->convertType(op.getType()));
    TypedAttr value = cast<TypedAttr>(op.getValue());
    if (auto i = dyn_cast<IntegerAttr>(value); i && !i.getType().isSignlessInteger())
      value = IntegerAttr::get(signless(i.getType()), i.getValue());
    Value pad = arith::ConstantOp::create(rewriter, loc, value);
    rewriter.replaceOpWithNewOp<tensor::PadOp>(
        op, type, adaptor.getInput(), indexAttrs(rewriter, op.getLow()),
        indexAttrs(rewriter, op.getHigh()), pad);
    return success();
  }
};

} // namespace

void mlir::loom::lowering::populateShapePatterns(LoomTypeConverter &tc,
                                                 RewritePatternSet &patterns) {
  patterns.add<ReshapeLowering, TransposeLowering, BroadcastLowering,
               ConcatLowering, SliceLowering, GatherLowering, ScatterAddLowering,
               PadLowering>(
      tc, patterns.getContext());
}
