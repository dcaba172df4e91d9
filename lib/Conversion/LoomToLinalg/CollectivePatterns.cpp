//===- CollectivePatterns.cpp - loom collectives -> runtime calls ---------===//
//
// A collective becomes a call to the runtime (runtime/include/loom/kernels.h)
// on contiguous 1-D buffers: the operand is transposed so that the
// communicated dimension is outermost (when it is not already), flattened
// and handed over with bufferization.to_buffer; the result is a fresh buffer
// the call fills, turned back into a tensor and reshaped/transposed into the
// result type. all_slice needs no communication: an extract_slice at this
// device's group index. loom.top_k_indices, not a collective, is a runtime
// call the same way (it selects what top-k gradient compression sends).
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include "llvm/ADT/MapVector.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::lowering;

namespace {

/// loom_dtype_t of an element type (see runtime.h).
int64_t dtypeCode(Type t) {
  if (t.isF32())
    return 0;
  if (t.isF64())
    return 1;
  if (t.isF16())
    return 2;
  if (t.isBF16())
    return 3;
  if (t.isInteger(1))
    return 12;
  auto i = cast<IntegerType>(t);
  bool u = i.isUnsigned();
  switch (i.getWidth()) {
  case 8:
    return u ? 8 : 4;
  case 16:
    return u ? 9 : 5;
  case 32:
    return u ? 10 : 6;
  default:
    return u ? 11 : 7;
  }
}

/// Axis indices packed as the runtime expects (a byte per axis, + 1).
FailureOr<int64_t> axesCode(Operation *op, FlatSymbolRefAttr meshRef,
                            ArrayAttr axes) {
  auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(op, meshRef);
  if (!mesh || axes.size() > 8)
    return failure();
  uint64_t code = 0;
  for (int64_t i = axes.size() - 1; i >= 0; --i) {
    int64_t index = mesh.getAxisIndex(cast<StringAttr>(axes[i]).getValue());
    if (index < 0)
      return failure();
    code = (code << 8) | static_cast<uint64_t>(index + 1);
  }
  return static_cast<int64_t>(code);
}

int64_t reductionCode(ReductionKind k) { return static_cast<int64_t>(k); }

/// Moves dimension `dim` to the front when the dimensions before it are not
/// all of size 1 (then the data of each block is not contiguous).
Value toFront(OpBuilder &b, Location loc, Value v, int64_t dim) {
  ArrayRef<int64_t> shape = shapeOf(v);
  int64_t before = 1;
  for (int64_t d = 0; d < dim; ++d)
    before *= shape[d];
  if (before == 1)
    return v;
  SmallVector<int64_t> perm = {dim}, out = {shape[dim]};
  for (int64_t d = 0, e = shape.size(); d < e; ++d)
    if (d != dim) {
      perm.push_back(d);
      out.push_back(shape[d]);
    }
  Value init = emptyTensor(b, loc, out, tensorType(v).getElementType());
  return linalg::TransposeOp::create(b, loc, v, init, perm).getResult()[0];
}

/// The inverse of toFront for a tensor whose front dimension is `dim` of
/// `shape` (sizes as in the result).
Value fromFront(OpBuilder &b, Location loc, Value flat,
                ArrayRef<int64_t> shape, int64_t dim, Type element) {
  int64_t before = 1;
  for (int64_t d = 0; d < dim; ++d)
    before *= shape[d];
  if (before == 1)
    return reshape(b, loc, flat, shape);
  SmallVector<int64_t> front = {shape[dim]};
  for (int64_t d = 0, e = shape.size(); d < e; ++d)
    if (d != dim)
      front.push_back(shape[d]);
  Value t = reshape(b, loc, flat, front);
  // Front position 0 goes back to `dim`.
  SmallVector<int64_t> perm;
  for (int64_t d = 0, e = shape.size(); d < e; ++d)
    perm.push_back(d == dim ? 0 : (d < dim ? d + 1 : d));
  Value init = emptyTensor(b, loc, shape, element);
  return linalg::TransposeOp::create(b, loc, t, init, perm).getResult()[0];
}

/// A runtime collective issued: its flat operand (read by the runtime until
/// it completes), the buffer it fills, and for a started one (loom.async)
/// the handle its wait completes.
struct Issued {
  Value flat, recv, handle;
  RankedTensorType recvType;
};

/// Declares (once per element type: the symbol is shared, so the element
/// type is in its name) and calls `name_<element>(ints..., buffers...)`.
Value callTyped(OpBuilder &b, Location loc, Operation *anchor, StringRef name,
                Type element, ValueRange ints, ValueRange buffers,
                TypeRange results) {
  auto anyType = MemRefType::get({ShapedType::kDynamic}, element);
  SmallVector<Type> argTypes(ints.getTypes());
  argTypes.append(buffers.size(), anyType);
  std::string symbol;
  llvm::raw_string_ostream os(symbol);
  os << name << "_" << element;
  declare(b, anchor, symbol, FunctionType::get(b.getContext(), argTypes,
                                               results));
  SmallVector<Value> args(ints);
  for (Value m : buffers)
    args.push_back(memref::CastOp::create(b, loc, anyType, m));
  auto call = func::CallOp::create(b, loc, symbol, results, args);
  return results.empty() ? Value() : call.getResult(0);
}

/// Calls `name(ints..., send, recv)` where send is `input` flattened and
/// recv a new buffer of `recvCount` elements; when `start`, calls
/// `name_start`, which returns a handle, and the call completes in
/// `complete`.
Issued issue(OpBuilder &b, Location loc, Operation *anchor, StringRef name,
             ArrayRef<int64_t> ints, Value input, int64_t recvCount,
             bool start) {
  Type element = tensorType(input).getElementType();
  int64_t n = tensorType(input).getNumElements();
  Issued r;
  r.flat = reshape(b, loc, input, {n});
  r.recvType = RankedTensorType::get({recvCount}, element);
  Value send = bufferization::ToBufferOp::create(
      b, loc, MemRefType::get({n}, element), r.flat, /*read_only=*/true);
  r.recv = memref::AllocOp::create(b, loc,
                                   MemRefType::get({recvCount}, element));
  SmallVector<Value> codes;
  for (int64_t v : ints)
    codes.push_back(arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v)));
  if (!start) {
    callTyped(b, loc, anchor, name, element, codes, {send, r.recv}, {});
    return r;
  }
  r.handle = callTyped(b, loc, anchor, (name + "_start").str(), element, codes,
                       {send, r.recv}, b.getI64Type());
  return r;
}

/// The received buffer as a 1-D tensor, after waiting for a started call
/// (the wait takes the operand again: it stays alive and unwritten until
/// then).
Value complete(OpBuilder &b, Location loc, Operation *anchor,
               const Issued &r) {
  if (r.handle) {
    Type element = r.recvType.getElementType();
    Value send = bufferization::ToBufferOp::create(
        b, loc,
        MemRefType::get({tensorType(r.flat).getNumElements()}, element),
        r.flat, /*read_only=*/true);
    callTyped(b, loc, anchor, "loom_rt_collective_wait", element, r.handle,
              {send, r.recv}, {});
  }
  return bufferization::ToTensorOp::create(b, loc, r.recvType, r.recv,
                                           /*restrict=*/true,
                                           /*writable=*/true);
}

Value callRuntime(OpBuilder &b, Location loc, Operation *anchor,
                  StringRef name, ArrayRef<int64_t> ints, Value input,
                  int64_t recvCount) {
  return complete(b, loc, anchor,
                  issue(b, loc, anchor, name, ints, input, recvCount, false));
}

/// The loom.wait that completes a started collective (loom.async), or null.
WaitOp waitOf(Operation *op) {
  if (!op->hasAttr(LoomDialect::kAsyncAttrName) || op->use_empty())
    return nullptr;
  return dyn_cast<WaitOp>(*op->getUsers().begin());
}

template <typename OpT>
struct CollectiveLowering : OpConversionPattern<OpT> {
  using OpConversionPattern<OpT>::OpConversionPattern;
  using OpAdaptor = typename OpConversionPattern<OpT>::OpAdaptor;
};

struct AllReduceLowering : CollectiveLowering<AllReduceOp> {
  using CollectiveLowering::CollectiveLowering;
  LogicalResult
  matchAndRewrite(AllReduceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<int64_t> axes = axesCode(op, op.getMeshAttr(), op.getAxes());
    if (failed(axes))
      return rewriter.notifyMatchFailure(op, "unknown mesh axes");
    Location loc = op.getLoc();
    WaitOp wait = waitOf(op);
    // One call per element type over the operands of that type, packed;
    // all issued here, completed here or, when started, at the wait.
    SmallVector<Value> results(op->getNumResults());
    llvm::MapVector<Type, SmallVector<unsigned>> byType;
    for (auto [i, v] : llvm::enumerate(op.getInputs()))
      byType[cast<RankedTensorType>(v.getType()).getElementType()].push_back(
          i);
    SmallVector<Issued> issued;
    for (auto &[element, indices] : byType) {
      SmallVector<Value> flats;
      int64_t total = 0;
      for (unsigned i : indices) {
        Value v = adaptor.getInputs()[i];
        int64_t n = tensorType(v).getNumElements();
        flats.push_back(reshape(rewriter, loc, v, {n}));
        total += n;
      }
      Value packed = flats.size() == 1
                         ? flats.front()
                         : tensor::ConcatOp::create(rewriter, loc, 0, flats);
      issued.push_back(issue(
          rewriter, loc, op, "loom_rt_all_reduce",
          {*axes, dtypeCode(element), reductionCode(op.getReduction())},
          packed, total, bool(wait)));
    }
    if (wait)
      rewriter.setInsertionPoint(wait);
    for (auto [k, group] : llvm::enumerate(byType)) {
      SmallVector<unsigned> &indices = group.second;
      Value reduced = complete(rewriter, loc, op, issued[k]);
      int64_t offset = 0;
      for (unsigned i : indices) {
        RankedTensorType type = tensorType(adaptor.getInputs()[i]);
        int64_t n = type.getNumElements();
        Value part = reduced;
        if (indices.size() > 1)
          part = tensor::ExtractSliceOp::create(
              rewriter, loc, reduced, ArrayRef<OpFoldResult>{rewriter.getIndexAttr(offset)},
              ArrayRef<OpFoldResult>{rewriter.getIndexAttr(n)},
              ArrayRef<OpFoldResult>{rewriter.getIndexAttr(1)});
        results[i] = reshape(rewriter, loc, part, type.getShape());
        offset += n;
      }
    }
    rewriter.replaceOp(op, results);
    if (wait)
      rewriter.replaceOp(wait, results);
    return success();
  }
};

/// All-gather and reduce-scatter along `dim`: that dimension moved to the
/// front, one runtime call on the flat buffer, moved back.
template <typename OpT>
LogicalResult lowerAlongDim(OpT op, Value input, StringRef symbol,
                            ArrayRef<int64_t> extraCodes,
                            ConversionPatternRewriter &rewriter) {
  FailureOr<int64_t> axes = axesCode(op, op.getMeshAttr(), op.getAxes());
  if (failed(axes))
    return rewriter.notifyMatchFailure(op, "unknown mesh axes");
  Location loc = op.getLoc();
  auto dim = static_cast<int64_t>(op.getDim());
  Type element = tensorType(input).getElementType();
  Value front = toFront(rewriter, loc, input, dim);
  SmallVector<int64_t> codes = {*axes,
                                dtypeCode(op.getType().getElementType())};
  llvm::append_range(codes, extraCodes);
  WaitOp wait = waitOf(op);
  Issued issued = issue(rewriter, loc, op, symbol, codes, front,
                        op.getType().getNumElements(), bool(wait));
  if (wait)
    rewriter.setInsertionPoint(wait);
  Value flat = complete(rewriter, loc, op, issued);
  Value result = fromFront(rewriter, loc, flat, op.getType().getShape(), dim,
                           element);
  rewriter.replaceOp(op, result);
  if (wait)
    rewriter.replaceOp(wait, result);
  return success();
}

struct AllGatherLowering : CollectiveLowering<AllGatherOp> {
  using CollectiveLowering::CollectiveLowering;
  LogicalResult
  matchAndRewrite(AllGatherOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    return lowerAlongDim(op, adaptor.getInput(), "loom_rt_all_gather", {},
                         rewriter);
  }
};

struct ReduceScatterLowering : CollectiveLowering<ReduceScatterOp> {
  using CollectiveLowering::CollectiveLowering;
  LogicalResult
  matchAndRewrite(ReduceScatterOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    return lowerAlongDim(op, adaptor.getInput(), "loom_rt_reduce_scatter",
                         {reductionCode(op.getReduction())}, rewriter);
  }
};

struct AllToAllLowering : CollectiveLowering<AllToAllOp> {
  using CollectiveLowering::CollectiveLowering;
  LogicalResult
  matchAndRewrite(AllToAllOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<int64_t> axes = axesCode(op, op.getMeshAttr(), op.getAxes());
    if (failed(axes))
      return rewriter.notifyMatchFailure(op, "unknown mesh axes");
    Location loc = op.getLoc();
    auto split = static_cast<int64_t>(op.getSplitDim());
    auto concat = static_cast<int64_t>(op.getConcatDim());
    int64_t g = op.getGroupSize();
    Value in = adaptor.getInput();
    ArrayRef<int64_t> inShape = shapeOf(in);
    Type element = tensorType(in).getElementType();
    // Blocks along the split dimension, outermost.
    Value front = toFront(rewriter, loc, in, split);
    Value flat = callRuntime(rewriter, loc, op, "loom_rt_all_to_all",
                             {*axes, dtypeCode(op.getType().getElementType())},
                             front, tensorType(in).getNumElements());
    // Received: [g, S/g, others...] in the order [split, others...]; put the
    // group dimension in front of `concat`, merge them, and restore the
    // dimension order.
    SmallVector<int64_t> order = {split};
    for (int64_t d = 0, e = inShape.size(); d < e; ++d)
      if (d != split)
        order.push_back(d);
    SmallVector<int64_t> recvShape = {g};
    for (int64_t d : order)
      recvShape.push_back(d == split ? inShape[d] / g : inShape[d]);
    Value r = reshape(rewriter, loc, flat, recvShape);
    int64_t cPos = llvm::find(order, concat) - order.begin();
    SmallVector<int64_t> perm, moved;
    for (int64_t k = 0, e = order.size(); k < e; ++k) {
      if (k == cPos)
        perm.push_back(0);
      perm.push_back(k + 1);
    }
    for (int64_t p : perm)
      moved.push_back(recvShape[p]);
    if (!llvm::equal(perm, llvm::seq<int64_t>(0, perm.size()))) {
      Value init = emptyTensor(rewriter, loc, moved, element);
      r = linalg::TransposeOp::create(rewriter, loc, r, init, perm)
              .getResult()[0];
    }
    // The merged dimensions, in `order`, have the result's sizes.
    SmallVector<int64_t> mergedShape;
    for (int64_t k = 0, e = order.size(); k < e; ++k)
      mergedShape.push_back(op.getType().getDimSize(order[k]));
    r = reshape(rewriter, loc, r, mergedShape);
    SmallVector<int64_t> back;
    for (int64_t d = 0, e = inShape.size(); d < e; ++d)
      back.push_back(llvm::find(order, d) - order.begin());
    if (!llvm::equal(back, llvm::seq<int64_t>(0, back.size()))) {
      Value init =
          emptyTensor(rewriter, loc, op.getType().getShape(), element);
      r = linalg::TransposeOp::create(rewriter, loc, r, init, back)
              .getResult()[0];
    }
    rewriter.replaceOp(op, r);
    return success();
  }
};

struct SendRecvLowering : CollectiveLowering<SendRecvOp> {
  using CollectiveLowering::CollectiveLowering;
  LogicalResult
  matchAndRewrite(SendRecvOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<int64_t> axes = axesCode(op, op.getMeshAttr(), op.getAxes());
    if (failed(axes))
      return rewriter.notifyMatchFailure(op, "unknown mesh axes");
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    Value flat = callRuntime(rewriter, loc, op, "loom_rt_send_recv",
                             {*axes, dtypeCode(type.getElementType()),
                              static_cast<int64_t>(op.getOffset()),
                              op.getCyclic() ? 1 : 0},
                             adaptor.getInput(), type.getNumElements());
    rewriter.replaceOp(op, reshape(rewriter, loc, flat, type.getShape()));
    return success();
  }
};

struct AllSliceLowering : CollectiveLowering<AllSliceOp> {
  using CollectiveLowering::CollectiveLowering;
  LogicalResult
  matchAndRewrite(AllSliceOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FailureOr<int64_t> axes = axesCode(op, op.getMeshAttr(), op.getAxes());
    if (failed(axes))
      return rewriter.notifyMatchFailure(op, "unknown mesh axes");
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    auto dim = static_cast<int64_t>(op.getDim());
    StringRef name = "loom_rt_group_index";
    auto i64 = rewriter.getI64Type();
    auto module = op->getParentOfType<ModuleOp>();
    if (!module.lookupSymbol(name)) {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(module.getBody());
      func::FuncOp::create(rewriter, loc, name,
                           FunctionType::get(ctx, {i64}, {i64}))
          .setPrivate();
    }
    Value code = arith::ConstantOp::create(rewriter, loc,
                                           rewriter.getI64IntegerAttr(*axes));
    Value index =
        func::CallOp::create(rewriter, loc, name, TypeRange{i64}, code)
            .getResult(0);
    int64_t block = op.getType().getDimSize(dim);
    Value offset = arith::MulIOp::create(
        rewriter, loc,
        arith::IndexCastOp::create(rewriter, loc, rewriter.getIndexType(),
                                   index),
        arith::ConstantIndexOp::create(rewriter, loc, block));
    ArrayRef<int64_t> in = shapeOf(adaptor.getInput());
    SmallVector<OpFoldResult> offsets, sizes, strides;
    for (int64_t d = 0, e = in.size(); d < e; ++d) {
      offsets.push_back(d == dim ? OpFoldResult(offset)
                                 : rewriter.getIndexAttr(0));
      sizes.push_back(rewriter.getIndexAttr(d == dim ? block : in[d]));
      strides.push_back(rewriter.getIndexAttr(1));
    }
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
        op, cast<RankedTensorType>(
                getTypeConverter()->convertType(op.getType())),
        adaptor.getInput(), offsets, sizes, strides);
    return success();
  }
};

/// loom.top_k_indices: a runtime call (loom_rt_top_k_indices_<type>) that
/// fills a new i64 buffer; selection has no linalg form worth the name.
struct TopKIndicesLowering : OpConversionPattern<TopKIndicesOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TopKIndicesOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value input = adaptor.getInput();
    Type element = tensorType(input).getElementType();
    int64_t n = tensorType(input).getNumElements(), k = op.getK();
    auto i64 = rewriter.getI64Type();
    Type index = op.getType().getElementType();
    auto anyIn = MemRefType::get({ShapedType::kDynamic}, element);
    auto anyOut = MemRefType::get({ShapedType::kDynamic}, index);
    std::string symbol;
    llvm::raw_string_ostream os(symbol);
    os << "loom_rt_top_k_indices_" << element << "_" << index;
    declare(rewriter, op, symbol,
            FunctionType::get(ctx, {i64, i64, i64, anyIn, anyOut}, {}));
    Value in = bufferization::ToBufferOp::create(
        rewriter, loc, MemRefType::get({n}, element), input,
        /*read_only=*/true);
    auto outType = MemRefType::get({k}, index);
    Value out = memref::AllocOp::create(rewriter, loc, outType);
    SmallVector<Value> args = {
        arith::ConstantOp::create(rewriter, loc, rewriter.getI64IntegerAttr(k)),
        arith::ConstantOp::create(rewriter, loc,
                                  rewriter.getI64IntegerAttr(dtypeCode(element))),
        arith::ConstantOp::create(rewriter, loc,
                                  rewriter.getI64IntegerAttr(dtypeCode(index))),
        memref::CastOp::create(rewriter, loc, anyIn, in),
        memref::CastOp::create(rewriter, loc, anyOut, out)};
    func::CallOp::create(rewriter, loc, symbol, TypeRange{}, args);
    rewriter.replaceOp(op, bufferization::ToTensorOp::create(
                               rewriter, loc, RankedTensorType::get({k}, index),
                               out, /*restrict=*/true, /*writable=*/true));
    return success();
  }
};

/// A wait whose operands are not a started collective's results returns
/// them (a started collective's lowering replaces its own wait).
struct WaitLowering : OpConversionPattern<WaitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(WaitOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (op.getStarted())
      return rewriter.notifyMatchFailure(op, "lowered with its collective");
    rewriter.replaceOp(op, adaptor.getInputs());
    return success();
  }
};

} // namespace

void mlir::loom::lowering::populateCollectivePatterns(
    LoomTypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<AllReduceLowering, AllGatherLowering, ReduceScatterLowering,
               AllToAllLowering, AllSliceLowering, SendRecvLowering,
               TopKIndicesLowering, WaitLowering>(converter,
                                                   patterns.getContext());
}
