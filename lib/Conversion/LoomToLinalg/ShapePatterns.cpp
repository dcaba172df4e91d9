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

/// Scatter-add accumulates into a zero tensor: out[..., idx[j], ...] +=
/// updates[..., j, ...]. Repeated indices must add up, which no parallel
/// linalg op expresses, so the index dimensions are a serial loop nest
/// (tensor.extract/insert on an iter_arg, which bufferizes in place). The
/// other dimensions never collide: they are an scf.forall, each iteration
/// owning the line of `out` along the axis (an embedding's gradient: one
/// iteration per hidden element, tokens summed in order inside it). Every
/// element is still summed in the update order, as one serial nest would.
/// With `threads`, the axis is also cut into chunks, an iteration owning one
/// chunk of a line and adding the updates that fall in it.

/// The chunks an axis of `length` is cut into: the most that divide it
/// evenly with chunks x `lines` within `threads` (1: not cut).
int64_t scatterChunks(int64_t length, int64_t lines, int64_t threads) {
  if (threads <= lines)
    return 1;
  for (int64_t c = std::min(length, threads / lines); c > 1; --c)
    if (length % c == 0)
      return c;
  return 1;
}

/// `acc` with `update(at)` added at `at`; with `chunkStart`, only when the
/// index `at` falls in [chunkStart, chunkStart + chunkLen), at `at -
/// chunkStart`.
Value addInChunk(OpBuilder &b, Location l, Value acc, Value at,
                 Value chunkStart, int64_t chunkLen,
                 function_ref<Value(OpBuilder &, Location, Value, Value)> add) {
  if (!chunkStart)
    return add(b, l, acc, at);
  Value rel = arith::SubIOp::create(b, l, at, chunkStart);
  Value inside =
      arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, rel,
                            arith::ConstantIndexOp::create(b, l, chunkLen));
  auto branch = scf::IfOp::create(
      b, l, inside,
      [&](OpBuilder &tb, Location tl) {
        scf::YieldOp::create(tb, tl, add(tb, tl, acc, rel));
      },
      [&](OpBuilder &eb, Location el) { scf::YieldOp::create(eb, el, acc); });
  return branch.getResult(0);
}

/// A scatter-add's serial nest over its index dimensions, accumulating into
/// `line` (the output's line along the axis, 1-D, or a chunk of it) at the
/// free coordinates `freeIvs` (update dimension -> value).
struct ScatterNest {
  Type element; // the output's element type
  Value updates, indices;
  ArrayRef<int64_t> out, upd;
  int64_t axis, idxRank, chunkLen;

  /// The clamped output index the update at `ivs` (index dims) goes to.
  Value indexAt(OpBuilder &nb, Location nl, ValueRange ivs) const {
    Value i = tensor::ExtractOp::create(nb, nl, indices, ivs);
    i = arith::IndexCastOp::create(nb, nl, nb.getIndexType(), i);
    Value zero = arith::ConstantIndexOp::create(nb, nl, 0);
    Value n = arith::ConstantIndexOp::create(nb, nl, out[axis]);
    Value neg = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::slt, i, zero);
    i = arith::SelectOp::create(nb, nl, neg, arith::AddIOp::create(nb, nl, i, n), i);
    i = arith::MaxSIOp::create(nb, nl, i, zero);
    return arith::MinSIOp::create(
        nb, nl, i, arith::ConstantIndexOp::create(nb, nl, out[axis] - 1));
  }

  /// `acc` with the update at `ivs` added at output index `i`.
  Value addAt(OpBuilder &nb, Location nl, Value acc, Value i, ValueRange ivs,
              const DenseMap<int64_t, Value> &freeIvs, Value chunkStart) const {
    SmallVector<Value> u;
    for (int64_t x = 0; x < int64_t(upd.size()); ++x)
      u.push_back(x >= axis && x < axis + idxRank ? ivs[x - axis]
                                                  : freeIvs.lookup(x));
    return addInChunk(
        nb, nl, acc, i, chunkStart, chunkLen,
        [&](OpBuilder &ab, Location al, Value to, Value at) -> Value {
          Value update = tensor::ExtractOp::create(ab, al, updates, u);
          Value old = tensor::ExtractOp::create(ab, al, to, ValueRange{at});
          Scalar sb{ab, al, element};
          return tensor::InsertOp::create(ab, al, sb.add(old, update), to,
                                          ValueRange{at});
        });
  }

  Value build(OpBuilder &b, Location l, Value line,
              const DenseMap<int64_t, Value> &freeIvs, Value chunkStart) const {
    // A chunk's thread mostly skips updates (1 in `chunks` is its): it
    // walks the indices, a chain of dependent loads. The innermost index
    // loop reads `group` indices before it adds any (all in flight at
    // once on a GPU); the updates are still added in order.
    int64_t innermost = upd[axis + idxRank - 1], group = 1;
    if (chunkStart)
      for (int64_t g : {16, 8, 4, 2})
        if (innermost % g == 0) {
          group = g;
          break;
        }
    SmallVector<Value> idxIvs;
    std::function<Value(OpBuilder &, Location, Value, int64_t)> nest =
        [&](OpBuilder &nb, Location nl, Value acc, int64_t d) -> Value {
      if (d == idxRank)
        return addAt(nb, nl, acc, indexAt(nb, nl, idxIvs), idxIvs, freeIvs,
                     chunkStart);
      bool grouped = d == idxRank - 1 && group > 1;
      Value lb = arith::ConstantIndexOp::create(nb, nl, 0);
      Value ub = arith::ConstantIndexOp::create(nb, nl, upd[axis + d]);
      Value step = arith::ConstantIndexOp::create(nb, nl, grouped ? group : 1);
      auto loop = scf::ForOp::create(
          nb, nl, lb, ub, step, ValueRange{acc},
          [&](OpBuilder &lb2, Location ll, Value iv, ValueRange iter) {
            if (!grouped) {
              idxIvs.push_back(iv);
              Value next = nest(lb2, ll, iter[0], d + 1);
              idxIvs.pop_back();
              scf::YieldOp::create(lb2, ll, next);
              return;
            }
            SmallVector<SmallVector<Value>> ivs;
            SmallVector<Value> at;
            for (int64_t g = 0; g < group; ++g) {
              ivs.push_back(idxIvs);
              ivs.back().push_back(arith::AddIOp::create(
                  lb2, ll, iv, arith::ConstantIndexOp::create(lb2, ll, g)));
              at.push_back(indexAt(lb2, ll, ivs.back()));
            }
            Value next = iter[0];
            for (int64_t g = 0; g < group; ++g)
              next = addAt(lb2, ll, next, at[g], ivs[g], freeIvs, chunkStart);
            scf::YieldOp::create(lb2, ll, next);
          });
      return loop.getResult(0);
    };
    return nest(b, l, line, 0);
  }
};

struct ScatterAddLowering : OpConversionPattern<ScatterAddOp> {
  ScatterAddLowering(const TypeConverter &tc, MLIRContext *ctx, int64_t threads)
      : OpConversionPattern(tc, ctx), threads(threads) {}
  int64_t threads;
  LogicalResult
  matchAndRewrite(ScatterAddOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    ArrayRef<int64_t> out = op.getType().getShape();
    ArrayRef<int64_t> upd = shapeOf(op.getUpdates());
    int64_t axis = op.getAxis();
    int64_t idxRank = shapeOf(op.getIndices()).size();
    Type element =
        cast<RankedTensorType>(adaptor.getUpdates().getType()).getElementType();
    Scalar s{rewriter, loc, op.getType().getElementType()};
    Value init = filledTensor(rewriter, loc, out, s.constant(0));
    Value updates = adaptor.getUpdates(), indices = adaptor.getIndices();

    // The update dimensions that are not index dimensions, and the output
    // dimension each one is.
    SmallVector<int64_t> freeDims;
    for (int64_t d = 0; d < int64_t(upd.size()); ++d)
      if (d < axis || d >= axis + idxRank)
        freeDims.push_back(d);
    auto outDimOf = [&](int64_t d) { return d < axis ? d : d - idxRank + 1; };
    int64_t lines = 1;
    for (int64_t d : freeDims)
      lines *= upd[d];
    int64_t chunks =
        freeDims.empty() ? 1 : scatterChunks(out[axis], lines, threads);
    int64_t chunkLen = out[axis] / chunks;

    ScatterNest nest{op.getType().getElementType(), updates, indices, out, upd,
                     axis, idxRank, chunkLen};
    auto serialNest = [&](OpBuilder &b, Location l, Value line,
                          const DenseMap<int64_t, Value> &freeIvs,
                          Value chunkStart) {
      return nest.build(b, l, line, freeIvs, chunkStart);
    };
    auto lineType = RankedTensorType::get({chunkLen}, element);

    // The line of `out` at the free coordinates: offsets, sizes, strides.
    auto lineOf = [&](OpBuilder &b, DenseMap<int64_t, Value> freeIvs,
                      SmallVector<OpFoldResult> &offsets,
                      SmallVector<OpFoldResult> &sizes,
                      SmallVector<OpFoldResult> &strides) {
      offsets.assign(out.size(), b.getIndexAttr(0));
      sizes.assign(out.size(), b.getIndexAttr(1));
      strides.assign(out.size(), b.getIndexAttr(1));
      sizes[axis] = b.getIndexAttr(chunkLen);
      for (auto [d, v] : freeIvs)
        offsets[outDimOf(d)] = v;
    };

    if (freeDims.empty()) {
      // Only index dimensions: one serial nest over the whole output (a
      // 1-D output is its own line).
      Value line = init;
      if (out.size() != 1) {
        SmallVector<OpFoldResult> offsets, sizes, strides;
        lineOf(rewriter, DenseMap<int64_t, Value>(), offsets, sizes, strides);
        line = tensor::ExtractSliceOp::create(rewriter, loc, lineType, init,
                                              offsets, sizes, strides);
        Value done = serialNest(rewriter, loc, line,
                                DenseMap<int64_t, Value>(), Value());
        rewriter.replaceOpWithNewOp<tensor::InsertSliceOp>(
            op, done, init, offsets, sizes, strides);
        return success();
      }
      rewriter.replaceOp(
          op, serialNest(rewriter, loc, line, DenseMap<int64_t, Value>(),
                         Value()));
      return success();
    }
    SmallVector<OpFoldResult> ubs;
    if (chunks > 1)
      ubs.push_back(rewriter.getIndexAttr(chunks));
    for (int64_t d : freeDims)
      ubs.push_back(rewriter.getIndexAttr(upd[d]));
    auto forall = scf::ForallOp::create(rewriter, loc, ubs, ValueRange{init},
                                        std::nullopt);
    Block *body = forall.getBody();
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPointToStart(body);
    OpBuilder &b = rewriter;
    DenseMap<int64_t, Value> freeIvs;
    unsigned first = chunks > 1 ? 1 : 0;
    for (auto [k, d] : llvm::enumerate(freeDims))
      freeIvs[d] = body->getArgument(first + k);
    Value shared = body->getArgument(first + freeDims.size());
    SmallVector<OpFoldResult> offsets, sizes, strides;
    lineOf(b, freeIvs, offsets, sizes, strides);
    Value chunkStart;
    if (chunks > 1) {
      chunkStart = arith::MulIOp::create(
          b, loc, body->getArgument(0),
          arith::ConstantIndexOp::create(b, loc, chunkLen));
      offsets[axis] = chunkStart;
    }
    Value line = tensor::ExtractSliceOp::create(b, loc, lineType, shared,
                                                offsets, sizes, strides);
    Value done = serialNest(b, loc, line, freeIvs, chunkStart);
    rewriter.setInsertionPointToStart(forall.getTerminator().getBody());
    tensor::ParallelInsertSliceOp::create(rewriter, loc, done, shared, offsets,
                                          sizes, strides);
    rewriter.setInsertionPointAfter(forall);
    rewriter.replaceOp(op, forall.getResult(0));
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
                                                 RewritePatternSet &patterns,
                                                 int64_t scatterThreads) {
  patterns.add<ReshapeLowering, TransposeLowering, BroadcastLowering,
               ConcatLowering, SliceLowering, GatherLowering, PadLowering>(
      tc, patterns.getContext());
  patterns.add<ScatterAddLowering>(tc, patterns.getContext(), scatterThreads);
}
