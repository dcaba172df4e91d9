//===- StructuredPatterns.cpp - contractions, reductions, windows ---------===//

#include "Common.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::lowering;

namespace {

Type originalElement(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType();
}

bool isIdentity(ArrayRef<int64_t> perm) {
  for (auto [i, p] : llvm::enumerate(perm))
    if (static_cast<int64_t>(i) != p)
      return false;
  return true;
}

Value transpose(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> perm) {
  if (isIdentity(perm))
    return v;
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(shapeOf(v)[p]);
  Value init = emptyTensor(b, loc, shape, tensorType(v).getElementType());
  return linalg::TransposeOp::create(b, loc, v, init, perm).getResult()[0];
}

int64_t product(ArrayRef<int64_t> shape, ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= shape[d];
  return n;
}

/// loom.dot_general -> linalg.batch_matmul on [B, M, K] x [B, K, N]. An
/// operand whose contracting dimensions already come first (or last) is
/// used as is through a transposed indexing map; only operands whose batch
/// dimensions are not leading are physically transposed.
struct DotGeneralLowering : OpConversionPattern<DotGeneralOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(DotGeneralOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Type element = originalElement(op.getLhs());
    ArrayRef<int64_t> lhsShape = shapeOf(op.getLhs()),
                      rhsShape = shapeOf(op.getRhs());
    ArrayRef<int64_t> lb = op.getLhsBatchingDims(), rb = op.getRhsBatchingDims();
    ArrayRef<int64_t> lc = op.getLhsContractingDims(),
                      rc = op.getRhsContractingDims();
    SmallVector<int64_t> lf, rf;
    for (int64_t d = 0, e = lhsShape.size(); d < e; ++d)
      if (!llvm::is_contained(lb, d) && !llvm::is_contained(lc, d))
        lf.push_back(d);
    for (int64_t d = 0, e = rhsShape.size(); d < e; ++d)
      if (!llvm::is_contained(rb, d) && !llvm::is_contained(rc, d))
        rf.push_back(d);

    int64_t batch = product(lhsShape, lb), m = product(lhsShape, lf),
            k = product(lhsShape, lc), n = product(rhsShape, rf);

    // lhs as [B, M, K] (plain) or [B, K, M] (transposed).
    auto concat = [](std::initializer_list<ArrayRef<int64_t>> parts) {
      SmallVector<int64_t> out;
      for (ArrayRef<int64_t> p : parts)
        out.append(p.begin(), p.end());
      return out;
    };
    SmallVector<int64_t> lhsPlain = concat({lb, lf, lc});
    SmallVector<int64_t> lhsTrans = concat({lb, lc, lf});
    bool transA = !isIdentity(lhsPlain) && isIdentity(lhsTrans);
    Value lhs = transpose(rewriter, loc, adaptor.getLhs(),
                          transA ? lhsTrans : lhsPlain);
    lhs = reshape(rewriter, loc, lhs,
                  transA ? SmallVector<int64_t>{batch, k, m}
                         : SmallVector<int64_t>{batch, m, k});

    SmallVector<int64_t> rhsPlain = concat({rb, rc, rf});
    SmallVector<int64_t> rhsTrans = concat({rb, rf, rc});
    bool transB = !isIdentity(rhsPlain) && isIdentity(rhsTrans);
    Value rhs = transpose(rewriter, loc, adaptor.getRhs(),
                          transB ? rhsTrans : rhsPlain);
    rhs = reshape(rewriter, loc, rhs,
                  transB ? SmallVector<int64_t>{batch, n, k}
                         : SmallVector<int64_t>{batch, k, n});

    // 16-bit floats multiply-accumulate in f32 and round once at the end:
    // a batch_matmul of 16-bit operands into an f32 result (its body
    // widens each operand, exactly: every 16-bit float is an f32, and so
    // is the product of two). loom-lower-matmul-to-blas calls cuBLAS on
    // tensor cores with it, or widens the operands for sgemm on the CPU;
    // no widened copy of an operand is materialized in between.
    Type acc = accumulatorType(element);
    Scalar s{rewriter, loc, acc};
    Value init = filledTensor(rewriter, loc, {batch, m, n}, s.constant(0));
    AffineExpr db, dm, dn, dk;
    bindDims(ctx, db, dm, dn, dk);
    auto map = [&](ArrayRef<AffineExpr> e) {
      return AffineMapAttr::get(AffineMap::get(4, 0, e, ctx));
    };
    SmallVector<Attribute> maps = {
        transA ? map({db, dk, dm}) : map({db, dm, dk}),
        transB ? map({db, dn, dk}) : map({db, dk, dn}), map({db, dm, dn})};
    auto mm = linalg::BatchMatmulOp::create(
        rewriter, loc, TypeRange{init.getType()}, ValueRange{lhs, rhs},
        ValueRange{init},
        {rewriter.getNamedAttr("indexing_maps", rewriter.getArrayAttr(maps))});
    Value result =
        reshape(rewriter, loc,
                convertTensor(rewriter, loc, mm.getResult(0), acc, element),
                op.getType().getShape());
    rewriter.replaceOp(op, result);
    return success();
  }
};

template <typename OpTy>
struct ReduceLowering : OpConversionPattern<OpTy> {
  ReduceLowering(TypeConverter &tc, MLIRContext *ctx, ReductionKind kind,
                 bool mean)
      : OpConversionPattern<OpTy>(tc, ctx), kind(kind), mean(mean) {}

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type element = originalElement(op.getInput());
    ArrayRef<int64_t> inShape = shapeOf(op.getInput());
    ArrayRef<int64_t> dims = op.getDims();
    // A mean divides the (f32 for 16-bit floats) sum before rounding.
    Type acc = mean ? accumulatorType(element) : element;
    Value r = reduce(rewriter, loc, adaptor.getInput(), dims, kind, element,
                     /*wide=*/mean);
    if (mean) {
      int64_t count = product(inShape, dims);
      r = elementwise(rewriter, loc, shapeOf(r), signless(acc), ValueRange{r},
                      [&](OpBuilder &b, Location l, ValueRange a) {
                        Scalar s{b, l, acc};
                        return s.div(a[0], s.constant(count));
                      });
      r = convertTensor(rewriter, loc, r, acc, element);
    }
    if (op.getKeepdims())
      r = keepDims(rewriter, loc, r, inShape, dims);
    rewriter.replaceOp(op, r);
    return success();
  }
  ReductionKind kind;
  bool mean;
};

/// Pads `x` ([N, C, D...]) by `padding` ([begin..., end...]) with `value`.
Value padSpatial(OpBuilder &b, Location loc, Value x,
                 ArrayRef<int64_t> padding, Value value) {
  int64_t k = padding.size() / 2;
  if (llvm::all_of(padding, [](int64_t p) { return p == 0; }))
    return x;
  SmallVector<int64_t> lo(2, 0), hi(2, 0);
  SmallVector<int64_t> shape(shapeOf(x));
  for (int64_t i = 0; i < k; ++i) {
    lo.push_back(padding[i]);
    hi.push_back(padding[k + i]);
    shape[2 + i] += padding[i] + padding[k + i];
  }
  auto type = tensorType(x).clone(shape);
  SmallVector<OpFoldResult> low, high;
  for (auto [l, h] : llvm::zip(lo, hi)) {
    low.push_back(b.getIndexAttr(l));
    high.push_back(b.getIndexAttr(h));
  }
  return tensor::PadOp::create(b, loc, type, x, low, high, value);
}

/// Window access `o * stride + k * dilation` per spatial dimension.
AffineExpr windowExpr(AffineExpr o, AffineExpr kk, int64_t stride,
                      int64_t dilation) {
  return o * stride + kk * dilation;
}

/// An ungrouped N-d convolution as one matrix product (`conv-as-gemm`):
/// the padded input's windows copied out as patches P [C, K..., N, O...]
/// (im2col), then y' [F, N x O] = w [F, C x K] P [C x K, N x O] (one GEMM:
/// a BLAS or cuBLAS call), transposed to y [N, F, O...]. The forward
/// convolution, its input gradient and its weight gradient are all
/// loom.conv, so all three become GEMMs; the patches cost a copy of the
/// input per kernel tap. Where the window is wider than the output (a
/// weight gradient: a 56 x 56 "kernel", the gradient, over a 3 x 3
/// output), the patches are P^T [N, O..., C, K...] instead, read by the
/// GEMM as a transposed operand: their innermost dimension is then the long
/// one, which a GPU thread writes four or eight elements of at once
/// (loom-gpu-contiguous-lanes), not 3. The padding is read, not
/// materialized: a window element outside the input is 0 (a padded copy
/// of the input cost a zero fill and a copy per convolution).
Value convAsGemm(ConvOp op, Value x, Value filter,
                 ConversionPatternRewriter &rewriter) {
  Location loc = op.getLoc();
  MLIRContext *ctx = rewriter.getContext();
  Type element = originalElement(op.getInput());
  Type acc = accumulatorType(element);
  int64_t k = op.getNumSpatialDims();
  ArrayRef<int64_t> xs = shapeOf(op.getInput()), ws = shapeOf(op.getFilter()),
                    ys = op.getType().getShape();
  int64_t nb = xs[0], c = xs[1], f = ws[0], taps = 1, outs = 1;
  for (int64_t i = 0; i < k; ++i) {
    taps *= ws[2 + i];
    outs *= ys[2 + i];
  }
  bool transposed = k > 0 && ws[1 + k] > ys[1 + k];
  // Patches: iteration dims (c, k..., n, o...), or (n, o..., c, k...) when
  // transposed, all parallel; the positions of each group's first.
  int64_t cAt = transposed ? 1 + k : 0, kAt = cAt + 1;
  int64_t nAt = transposed ? 0 : 1 + k, oAt = nAt + 1;
  int64_t numDims = 2 + 2 * k;
  SmallVector<int64_t> patchShape(numDims);
  patchShape[cAt] = c;
  patchShape[nAt] = nb;
  for (int64_t i = 0; i < k; ++i) {
    patchShape[kAt + i] = ws[2 + i];
    patchShape[oAt + i] = ys[2 + i];
  }
  auto dim = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  ArrayRef<int64_t> padding = op.getPadding();
  bool padded = llvm::any_of(padding, [](int64_t p) { return p != 0; });
  Value empty = tensor::EmptyOp::create(rewriter, loc, patchShape, element);
  auto parallel =
      SmallVector<utils::IteratorType>(numDims, utils::IteratorType::parallel);
  linalg::GenericOp patches;
  if (!padded) {
    SmallVector<AffineExpr> xe{dim(nAt), dim(cAt)};
    for (int64_t i = 0; i < k; ++i)
      xe.push_back(windowExpr(dim(oAt + i), dim(kAt + i), op.getStrides()[i],
                              op.getDilations()[i]));
    SmallVector<AffineMap> maps = {
        AffineMap::get(numDims, 0, xe, ctx),
        AffineMap::getMultiDimIdentityMap(numDims, ctx)};
    patches = linalg::GenericOp::create(
        rewriter, loc, TypeRange{empty.getType()}, ValueRange{x},
        ValueRange{empty}, maps, parallel,
        [&](OpBuilder &b, Location l, ValueRange a) {
          linalg::YieldOp::create(b, l, a[0]);
        });
  } else {
    // x[n, c, o * stride + k * dilation - low] where every spatial index
    // is inside the input (compared unsigned: a negative one is huge),
    // else 0; an index outside is replaced by 0 before the read.
    patches = linalg::GenericOp::create(
        rewriter, loc, TypeRange{empty.getType()}, ValueRange{},
        ValueRange{empty}, AffineMap::getMultiDimIdentityMap(numDims, ctx),
        parallel, [&](OpBuilder &b, Location l, ValueRange) {
          auto index = [&](int64_t v) {
            return arith::ConstantIndexOp::create(b, l, v).getResult();
          };
          SmallVector<Value> at{linalg::IndexOp::create(b, l, nAt),
                                linalg::IndexOp::create(b, l, cAt)};
          Value inside;
          for (int64_t i = 0; i < k; ++i) {
            Value o = arith::MulIOp::create(
                b, l, linalg::IndexOp::create(b, l, oAt + i),
                index(op.getStrides()[i]));
            Value kk = arith::MulIOp::create(
                b, l, linalg::IndexOp::create(b, l, kAt + i),
                index(op.getDilations()[i]));
            Value h = arith::SubIOp::create(
                b, l, arith::AddIOp::create(b, l, o, kk), index(padding[i]));
            Value in = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult,
                                             h, index(xs[2 + i]));
            inside = inside ? arith::AndIOp::create(b, l, inside, in) : in;
            at.push_back(arith::SelectOp::create(b, l, in, h, index(0)));
          }
          Value v = tensor::ExtractOp::create(b, l, x, at);
          Value zero = Scalar{b, l, element}.constant(0);
          linalg::YieldOp::create(
              b, l, arith::SelectOp::create(b, l, inside, v, zero).getResult());
        });
  }
  Value lhs = reshape(rewriter, loc, filter, {1, f, c * taps});
  Value rhs = reshape(rewriter, loc, patches.getResult(0),
                      transposed ? SmallVector<int64_t>{1, nb * outs, c * taps}
                                 : SmallVector<int64_t>{1, c * taps, nb * outs});
  Scalar s{rewriter, loc, acc};
  Value init = filledTensor(rewriter, loc, {1, f, nb * outs}, s.constant(0));
  AffineExpr db, dm, dn, dk;
  bindDims(ctx, db, dm, dn, dk);
  auto map = [&](ArrayRef<AffineExpr> e) {
    return AffineMapAttr::get(AffineMap::get(4, 0, e, ctx));
  };
  SmallVector<Attribute> mmMaps = {
      map({db, dm, dk}), transposed ? map({db, dn, dk}) : map({db, dk, dn}),
      map({db, dm, dn})};
  auto mm = linalg::BatchMatmulOp::create(
      rewriter, loc, TypeRange{init.getType()}, ValueRange{lhs, rhs},
      ValueRange{init},
      {rewriter.getNamedAttr("indexing_maps", rewriter.getArrayAttr(mmMaps))});
  Value y = convertTensor(rewriter, loc, mm.getResult(0), acc, element);
  SmallVector<int64_t> fno{f, nb};
  fno.append(ys.begin() + 2, ys.end());
  y = reshape(rewriter, loc, y, fno);
  SmallVector<int64_t> perm{1, 0};
  for (int64_t i = 0; i < k; ++i)
    perm.push_back(2 + i);
  return transpose(rewriter, loc, y, perm);
}

/// Whether `conv-library` calls the runtime for `op`: a grouped f32 or
/// bf16 convolution (depthwise ones included: without the call, a loop
/// nest) whose kernel is no wider than its output in any spatial dimension
/// and that is not marked a weight gradient (forward convolutions and
/// input gradients; a weight gradient, whose "kernel" is the output
/// gradient, measured 0.45-0.9x im2col + sgemm through oneDNN's forward
/// convolution). Ungrouped convolutions stay im2col GEMMs: through oneDNN,
/// ResNet-18's parameters after two SGD steps were 1.2e-4 from PyTorch's
/// float64 ones where the GEMMs' are 1.2e-7 (every single convolution
/// within f32 rounding of a direct sum; not understood yet), and its step
/// measured no faster (0.92-1.2x).
bool libraryConv(ConvOp op) {
  if (op->hasAttr(LoomDialect::kWeightGradientAttrName) || op.getGroups() == 1)
    return false;
  Type element = originalElement(op.getInput());
  if (!element.isF32() && !element.isBF16())
    return false;
  int64_t k = op.getNumSpatialDims();
  if (k < 1 || k > 3)
    return false;
  ArrayRef<int64_t> ws = shapeOf(op.getFilter()), ys = op.getType().getShape();
  for (int64_t i = 0; i < k; ++i)
    if (ws[2 + i] > ys[2 + i])
      return false;
  return true;
}

/// The convolution as a call to `loom_rt_conv_<type>(params, x, w, y)`
/// (runtime/include/loom/kernels.h: oneDNN's convolution), its operands
/// and result as flat buffers, its shape as 26 constant integers.
Value convByLibrary(ConvOp op, Value x, Value filter,
                    ConversionPatternRewriter &rewriter) {
  Location loc = op.getLoc();
  Type element = originalElement(op.getInput());
  int64_t k = op.getNumSpatialDims();
  ArrayRef<int64_t> xs = shapeOf(op.getInput()), ws = shapeOf(op.getFilter()),
                    ys = op.getType().getShape();
  SmallVector<int64_t> params = {k, int64_t(op.getGroups()), xs[0], xs[1], ws[0]};
  auto three = [&](auto at, int64_t unused) {
    for (int64_t i = 0; i < 3; ++i)
      params.push_back(i < k ? at(i) : unused);
  };
  three([&](int64_t i) { return xs[2 + i]; }, 1);
  three([&](int64_t i) { return ws[2 + i]; }, 1);
  three([&](int64_t i) { return ys[2 + i]; }, 1);
  three([&](int64_t i) { return op.getStrides()[i]; }, 1);
  three([&](int64_t i) { return op.getPadding()[i]; }, 0);
  three([&](int64_t i) { return op.getPadding()[k + i]; }, 0);
  three([&](int64_t i) { return op.getDilations()[i]; }, 1);
  auto i64 = rewriter.getI64Type();
  auto paramType = RankedTensorType::get({int64_t(params.size())}, i64);
  Value paramTensor = arith::ConstantOp::create(
      rewriter, loc, DenseElementsAttr::get(paramType, ArrayRef(params)));
  auto buffer = [&](Value t, Type elem) -> Value {
    int64_t n = tensorType(t).getNumElements();
    Value flat = tensorType(t).getRank() == 1 ? t : reshape(rewriter, loc, t, {n});
    Value m = bufferization::ToBufferOp::create(
        rewriter, loc, MemRefType::get({n}, elem), flat, /*read_only=*/true);
    return memref::CastOp::create(
        rewriter, loc, MemRefType::get({ShapedType::kDynamic}, elem), m);
  };
  int64_t ny = op.getType().getNumElements();
  Value y = memref::AllocOp::create(rewriter, loc,
                                    MemRefType::get({ny}, element));
  SmallVector<Value> args = {
      buffer(paramTensor, i64), buffer(x, element), buffer(filter, element),
      memref::CastOp::create(
          rewriter, loc, MemRefType::get({ShapedType::kDynamic}, element), y)};
  std::string symbol = element.isF32() ? "loom_rt_conv_f32" : "loom_rt_conv_bf16";
  declare(rewriter, op, symbol,
          FunctionType::get(rewriter.getContext(), ValueRange(args).getTypes(),
                            {}));
  func::CallOp::create(rewriter, loc, symbol, TypeRange{}, args);
  Value result = bufferization::ToTensorOp::create(
      rewriter, loc, RankedTensorType::get({ny}, element), y,
      /*restrict=*/true, /*writable=*/true);
  return reshape(rewriter, loc, result, ys);
}

/// N-d convolution as one linalg.generic over
/// (n, g, f, o..., c, k...) with the input padded first; with
/// `conv-as-gemm` and one group, as a matrix product (convAsGemm); with
/// `conv-library`, where libraryConv holds, as a runtime call.
struct ConvLowering : OpConversionPattern<ConvOp> {
  ConvLowering(const TypeConverter &tc, MLIRContext *ctx, bool asGemm,
               bool library)
      : OpConversionPattern(tc, ctx), asGemm(asGemm), library(library) {}
  bool asGemm, library;

  LogicalResult
  matchAndRewrite(ConvOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    if (library && libraryConv(op)) {
      rewriter.replaceOp(op, convByLibrary(op, adaptor.getInput(),
                                           adaptor.getFilter(), rewriter));
      return success();
    }
    if (asGemm && op.getGroups() == 1) {
      rewriter.replaceOp(op, convAsGemm(op, adaptor.getInput(),
                                        adaptor.getFilter(), rewriter));
      return success();
    }
    MLIRContext *ctx = rewriter.getContext();
    Type element = originalElement(op.getInput());
    Type acc = accumulatorType(element);
    Scalar s{rewriter, loc, element};
    int64_t k = op.getNumSpatialDims();
    int64_t g = op.getGroups();
    ArrayRef<int64_t> xs = shapeOf(op.getInput()), ws = shapeOf(op.getFilter()),
                      ys = op.getType().getShape();
    int64_t nb = xs[0], c = xs[1] / g, f = ws[0] / g;
    Value x = padSpatial(rewriter, loc, adaptor.getInput(), op.getPadding(),
                         s.constant(0));
    // Split channels into groups: x [N, G, C/G, D...], w [G, F/G, C/G, K...].
    SmallVector<int64_t> xg{nb, g, c}, wg{g, f, c}, yg{nb, g, f};
    llvm::append_range(xg, shapeOf(x).drop_front(2));
    llvm::append_range(wg, ws.drop_front(2));
    llvm::append_range(yg, ys.drop_front(2));
    x = reshape(rewriter, loc, x, xg);
    Value w = reshape(rewriter, loc, adaptor.getFilter(), wg);

    // Iteration dims: n, g, f, o_1..o_k (parallel), c, k_1..k_k (reduction).
    int64_t numDims = 3 + k + 1 + k;
    auto dim = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    SmallVector<AffineExpr> xe{dim(0), dim(1), dim(3 + k)}, we{dim(1), dim(2), dim(3 + k)},
        ye{dim(0), dim(1), dim(2)};
    for (int64_t i = 0; i < k; ++i) {
      xe.push_back(windowExpr(dim(3 + i), dim(4 + k + i), op.getStrides()[i],
                              op.getDilations()[i]));
      we.push_back(dim(4 + k + i));
      ye.push_back(dim(3 + i));
    }
    SmallVector<AffineMap> maps = {AffineMap::get(numDims, 0, xe, ctx),
                                   AffineMap::get(numDims, 0, we, ctx),
                                   AffineMap::get(numDims, 0, ye, ctx)};
    SmallVector<utils::IteratorType> iterators(3 + k, utils::IteratorType::parallel);
    iterators.append(1 + k, utils::IteratorType::reduction);
    Value init = filledTensor(rewriter, loc, yg, Scalar{rewriter, loc, acc}.constant(0));
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{init.getType()}, ValueRange{x, w},
        ValueRange{init}, maps, iterators,
        [&](OpBuilder &b, Location l, ValueRange a) {
          Scalar in{b, l, element}, ns{b, l, acc};
          Value product =
              ns.mul(in.convert(a[0], acc), in.convert(a[1], acc));
          linalg::YieldOp::create(b, l, ns.add(a[2], product));
        });
    Value y = convertTensor(rewriter, loc, generic.getResult(0), acc, element);
    rewriter.replaceOp(op, reshape(rewriter, loc, y, ys));
    return success();
  }
};

/// Pooling as a linalg.generic over (n, c, o..., k...). Max pools pad with
/// -inf; average pools pad with 0 and divide by the window size or by a
/// constant count of in-bounds positions (shapes are static).
template <typename OpTy, bool isMax>
struct PoolLowering : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;

  LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Type element = originalElement(op.getInput());
    Scalar s{rewriter, loc, element};
    ArrayRef<int64_t> xs = shapeOf(op.getInput());
    ArrayRef<int64_t> ys = cast<RankedTensorType>(op.getType()).getShape();
    int64_t k = xs.size() - 2;
    ArrayRef<int64_t> kernel = op.getKernel(), strides = op.getStrides(),
                      padding = op.getPadding();
    SmallVector<int64_t> dilations(k, 1);
    if constexpr (isMax)
      llvm::copy(op.getDilations(), dilations.begin());
    ReductionKind kind = isMax ? ReductionKind::max : ReductionKind::sum;
    Value x = padSpatial(rewriter, loc, adaptor.getInput(), padding,
                         s.identity(kind));
    // The kernel extent enters the iteration space through an empty tensor.
    Value window = emptyTensor(rewriter, loc, kernel, s.type());
    int64_t numDims = 2 + 2 * k;
    auto dim = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    SmallVector<AffineExpr> xe{dim(0), dim(1)}, ke, ye{dim(0), dim(1)};
    for (int64_t i = 0; i < k; ++i) {
      xe.push_back(windowExpr(dim(2 + i), dim(2 + k + i), strides[i],
                              dilations[i]));
      ke.push_back(dim(2 + k + i));
      ye.push_back(dim(2 + i));
    }
    SmallVector<AffineMap> maps = {AffineMap::get(numDims, 0, xe, ctx),
                                   AffineMap::get(numDims, 0, ke, ctx),
                                   AffineMap::get(numDims, 0, ye, ctx)};
    SmallVector<utils::IteratorType> iterators(2 + k, utils::IteratorType::parallel);
    iterators.append(k, utils::IteratorType::reduction);
    Value init = filledTensor(rewriter, loc, ys, s.identity(kind));
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{init.getType()}, ValueRange{x, window},
        ValueRange{init}, maps, iterators,
        [&](OpBuilder &b, Location l, ValueRange a) {
          linalg::YieldOp::create(b, l,
                                  Scalar{b, l, element}.combine(kind, a[2], a[0]));
        });
    Value result = generic.getResult(0);
    if constexpr (!isMax) {
      // Divisor per output position over the spatial dims.
      SmallVector<int64_t> outSpatial(ys.drop_front(2));
      int64_t volume = 1;
      for (int64_t kk : kernel)
        volume *= kk;
      SmallVector<double> counts;
      int64_t total = 1;
      for (int64_t d : outSpatial)
        total *= d;
      for (int64_t flat = 0; flat < total; ++flat) {
        int64_t rem = flat, count = 1;
        for (int64_t i = k - 1; i >= 0; --i) {
          int64_t o = rem % outSpatial[i];
          rem /= outSpatial[i];
          int64_t start = o * strides[i] - padding[i];
          int64_t lo = std::max<int64_t>(start, 0);
          int64_t hi = std::min<int64_t>(start + kernel[i], xs[2 + i]);
          int64_t inside = std::max<int64_t>(hi - lo, 0);
          if (op.getCountIncludePad()) {
            // Pads count; positions past the end padding (ceil mode) do not.
            int64_t padHi = std::min<int64_t>(start + kernel[i],
                                              xs[2 + i] + padding[k + i]);
            inside = padHi - start;
          }
          count *= inside;
        }
        counts.push_back(static_cast<double>(count));
      }
      (void)volume;
      auto countType = RankedTensorType::get(outSpatial, s.type());
      SmallVector<Attribute> attrs;
      for (double c : counts)
        attrs.push_back(FloatAttr::get(s.type(), c));
      Value divisor = arith::ConstantOp::create(
          rewriter, loc, DenseElementsAttr::get(countType, attrs));
      result = elementwise(rewriter, loc, ys, s.type(),
                           ValueRange{result, divisor},
                           [&](OpBuilder &b, Location l, ValueRange a) {
                             return Scalar{b, l, element}.div(a[0], a[1]);
                           });
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// A max pool's gradient (MaxPoolOp::buildGradients: a flat scatter-add of
/// the window gradients to loom.max_pool_indices), gathered instead: each
/// input element visits the windows that cover it and adds the gradient of
/// those that took it. A flat scatter has no other dimension to spread over
/// and is one serial loop (ResNet-18 on a GPU: 6.4 million updates in one
/// thread, 1.5 s); gathered, every input element is a thread. The windows
/// are visited in ascending order (taps in descending order), which is the
/// scatter's update order: the same additions in the same order, the same
/// bits. For the CUDA pipelines (scatter-threads); the CPU keeps the
/// scatter, one pass over the updates instead of one per tap.
struct MaxPoolGradientLowering : OpConversionPattern<ScatterAddOp> {
  MaxPoolGradientLowering(const TypeConverter &tc, MLIRContext *ctx)
      : OpConversionPattern(tc, ctx, /*benefit=*/2) {}

  /// The pooling whose indices the scatter sums at, when it is one.
  static MaxPoolIndicesOp poolOf(ScatterAddOp op) {
    auto reshape = op.getIndices().getDefiningOp<ReshapeOp>();
    auto pool = reshape ? reshape.getInput().getDefiningOp<MaxPoolIndicesOp>()
                        : MaxPoolIndicesOp();
    if (!pool || pool.getColumnMajor() || op.getAxis() != 0 ||
        op.getType().getRank() != 1 ||
        cast<RankedTensorType>(op.getUpdates().getType()).getRank() != 1 ||
        pool.getInput().getType().getNumElements() !=
            op.getType().getNumElements())
      return {};
    int64_t taps = 1;
    for (int64_t k : pool.getKernel())
      taps *= k;
    return taps <= 64 ? pool : MaxPoolIndicesOp();
  }

  LogicalResult
  matchAndRewrite(ScatterAddOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    MaxPoolIndicesOp pool = poolOf(op);
    if (!pool)
      return failure();
    Location loc = op.getLoc();
    ArrayRef<int64_t> xs = pool.getInput().getType().getShape(),
                      ys = pool.getType().getShape();
    ArrayRef<int64_t> kernel = pool.getKernel(), strides = pool.getStrides(),
                      padding = pool.getPadding(), dilations = pool.getDilations();
    int64_t k = kernel.size();
    Type element =
        cast<RankedTensorType>(adaptor.getUpdates().getType()).getElementType();
    Value updates = adaptor.getUpdates(), indices = adaptor.getIndices();
    Value init = emptyTensor(rewriter, loc, xs, element);
    SmallVector<utils::IteratorType> iterators(xs.size(),
                                               utils::IteratorType::parallel);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{init.getType()}, ValueRange{}, ValueRange{init},
        SmallVector<AffineMap>{
            AffineMap::getMultiDimIdentityMap(xs.size(), getContext())},
        iterators, [&](OpBuilder &b, Location l, ValueRange) {
          auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(b, l, v); };
          auto cmp = [&](arith::CmpIPredicate p, Value x, Value y) {
            return arith::CmpIOp::create(b, l, p, x, y).getResult();
          };
          SmallVector<Value> iv;
          for (int64_t d = 0, e = xs.size(); d < e; ++d)
            iv.push_back(linalg::IndexOp::create(b, l, d));
          // This element's flat index, and its (n, c) plane's first window.
          Value self = iv[0];
          for (int64_t d = 1, e = xs.size(); d < e; ++d)
            self = arith::AddIOp::create(
                b, l, arith::MulIOp::create(b, l, self, c(xs[d])), iv[d]);
          Value plane = arith::AddIOp::create(
              b, l, arith::MulIOp::create(b, l, iv[0], c(xs[1])), iv[1]);
          Scalar s{b, l, element};
          Value acc = s.constant(0);
          SmallVector<int64_t> tap(k);
          for (int64_t i = 0; i < k; ++i)
            tap[i] = kernel[i] - 1;
          while (true) {
            // The window that takes this element at `tap`, if one does.
            Value valid = arith::ConstantIntOp::create(b, l, 1, 1);
            Value j = plane;
            for (int64_t i = 0; i < k; ++i) {
              Value num = arith::SubIOp::create(
                  b, l, arith::AddIOp::create(b, l, iv[2 + i], c(padding[i])),
                  c(tap[i] * dilations[i]));
              Value o = arith::DivSIOp::create(b, l, num, c(strides[i]));
              valid = arith::AndIOp::create(
                  b, l, valid, cmp(arith::CmpIPredicate::sge, num, c(0)));
              valid = arith::AndIOp::create(
                  b, l, valid,
                  cmp(arith::CmpIPredicate::eq,
                      arith::RemSIOp::create(b, l, num, c(strides[i])), c(0)));
              valid = arith::AndIOp::create(
                  b, l, valid, cmp(arith::CmpIPredicate::slt, o, c(ys[2 + i])));
              j = arith::AddIOp::create(b, l,
                                        arith::MulIOp::create(b, l, j, c(ys[2 + i])),
                                        o);
            }
            j = arith::SelectOp::create(b, l, valid, j, c(0));
            Value taken = arith::IndexCastOp::create(
                b, l, b.getIndexType(),
                tensor::ExtractOp::create(b, l, indices, ValueRange{j}));
            Value hit = arith::AndIOp::create(
                b, l, valid, cmp(arith::CmpIPredicate::eq, taken, self));
            Value v = tensor::ExtractOp::create(b, l, updates, ValueRange{j});
            acc = arith::SelectOp::create(b, l, hit, s.add(acc, v), acc);
            // The next tap in descending order (the last dimension fastest).
            int64_t i = k - 1;
            while (i >= 0 && tap[i] == 0) {
              tap[i] = kernel[i] - 1;
              --i;
            }
            if (i < 0)
              break;
            --tap[i];
          }
          linalg::YieldOp::create(b, l, acc);
        });
    rewriter.replaceOp(op, reshape(rewriter, loc, generic.getResult(0),
                                   op.getType().getShape()));
    return success();
  }
};

/// Max pool indices: a two-result generic reducing (value, flat index) with
/// a strict comparison, so the first maximum in window order wins.
struct MaxPoolIndicesLowering : OpConversionPattern<MaxPoolIndicesOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(MaxPoolIndicesOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Type element = originalElement(op.getInput());
    Scalar s{rewriter, loc, element};
    ArrayRef<int64_t> xs = shapeOf(op.getInput());
    ArrayRef<int64_t> ys = op.getType().getShape();
    int64_t k = xs.size() - 2;
    ArrayRef<int64_t> kernel = op.getKernel(), strides = op.getStrides(),
                      padding = op.getPadding(), dilations = op.getDilations();
    Value x = padSpatial(rewriter, loc, adaptor.getInput(), padding,
                         s.identity(ReductionKind::max));
    Value window = emptyTensor(rewriter, loc, kernel, s.type());
    int64_t numDims = 2 + 2 * k;
    auto dim = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    SmallVector<AffineExpr> xe{dim(0), dim(1)}, ke, ye{dim(0), dim(1)};
    for (int64_t i = 0; i < k; ++i) {
      xe.push_back(windowExpr(dim(2 + i), dim(2 + k + i), strides[i],
                              dilations[i]));
      ke.push_back(dim(2 + k + i));
      ye.push_back(dim(2 + i));
    }
    AffineMap outMap = AffineMap::get(numDims, 0, ye, ctx);
    SmallVector<AffineMap> maps = {AffineMap::get(numDims, 0, xe, ctx),
                                   AffineMap::get(numDims, 0, ke, ctx), outMap,
                                   outMap};
    SmallVector<utils::IteratorType> iterators(2 + k, utils::IteratorType::parallel);
    iterators.append(k, utils::IteratorType::reduction);
    Type i64 = rewriter.getI64Type();
    Value initMax = filledTensor(rewriter, loc, ys, s.identity(ReductionKind::max));
    Value initIdx = filledTensor(
        rewriter, loc, ys,
        arith::ConstantOp::create(rewriter, loc, rewriter.getI64IntegerAttr(0)));
    bool columnMajor = op.getColumnMajor();
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{initMax.getType(), initIdx.getType()},
        ValueRange{x, window}, ValueRange{initMax, initIdx}, maps, iterators,
        [&](OpBuilder &b, Location l, ValueRange a) {
          auto c = [&](int64_t v) -> Value {
            return arith::ConstantOp::create(b, l, b.getI64IntegerAttr(v));
          };
          auto idx = [&](int64_t d) -> Value {
            return arith::IndexCastOp::create(b, l, i64,
                                              linalg::IndexOp::create(b, l, d));
          };
          // Channel plane, then the position inside it.
          Value flat = arith::AddIOp::create(
              b, l, arith::MulIOp::create(b, l, idx(0), c(xs[1])), idx(1));
          SmallVector<Value> pos;
          for (int64_t i = 0; i < k; ++i) {
            Value p = arith::AddIOp::create(
                b, l, arith::MulIOp::create(b, l, idx(2 + i), c(strides[i])),
                arith::MulIOp::create(b, l, idx(2 + k + i), c(dilations[i])));
            pos.push_back(arith::SubIOp::create(b, l, p, c(padding[i])));
          }
          SmallVector<int64_t> order;
          for (int64_t i = 0; i < k; ++i)
            order.push_back(columnMajor ? k - 1 - i : i);
          for (int64_t i : order)
            flat = arith::AddIOp::create(
                b, l, arith::MulIOp::create(b, l, flat, c(xs[2 + i])), pos[i]);
          Scalar ns{b, l, element};
          Value take = ns.compare(CompareDirection::gt, a[0], a[2]);
          linalg::YieldOp::create(
              b, l,
              ValueRange{ns.select(take, a[0], a[2]),
                         arith::SelectOp::create(b, l, take, flat, a[3])});
        });
    rewriter.replaceOp(op, generic.getResult(1));
    return success();
  }
};

} // namespace

void mlir::loom::lowering::populateStructuredPatterns(
    LoomTypeConverter &tc, RewritePatternSet &patterns, bool convAsGemm,
    bool gatherPoolGradients, bool convLibrary) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<DotGeneralLowering, MaxPoolIndicesLowering,
               PoolLowering<MaxPoolOp, true>, PoolLowering<AvgPoolOp, false>>(
      tc, ctx);
  patterns.add<ConvLowering>(tc, ctx, convAsGemm, convLibrary);
  if (gatherPoolGradients)
    patterns.add<MaxPoolGradientLowering>(tc, ctx);
  patterns.add<ReduceLowering<ReduceSumOp>>(tc, ctx, ReductionKind::sum, false);
  patterns.add<ReduceLowering<ReduceMeanOp>>(tc, ctx, ReductionKind::sum, true);
  patterns.add<ReduceLowering<ReduceMaxOp>>(tc, ctx, ReductionKind::max, false);
  patterns.add<ReduceLowering<ReduceMinOp>>(tc, ctx, ReductionKind::min, false);
  patterns.add<ReduceLowering<ReduceProdOp>>(tc, ctx, ReductionKind::prod, false);
}
