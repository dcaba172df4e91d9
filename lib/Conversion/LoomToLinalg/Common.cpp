//===- Common.cpp - Shared helpers of the loom -> linalg lowering ---------===//

#include "Common.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/AffineExpr.h"
#include <limits>

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::lowering;

Type mlir::loom::lowering::signless(Type element) {
  if (auto i = dyn_cast<IntegerType>(element); i && !i.isSignless())
    return IntegerType::get(i.getContext(), i.getWidth());
  return element;
}

LoomTypeConverter::LoomTypeConverter() {
  addConversion([](Type t) { return t; });
  addConversion([](IntegerType t) -> Type { return signless(t); });
  addConversion([](RankedTensorType t) -> Type {
    return t.clone(signless(t.getElementType()));
  });
  // Casts between unsigned and signless tensors at the edges of what was
  // converted (function boundaries are converted too, so these fold away).
  auto cast = [](OpBuilder &b, Type type, ValueRange inputs,
                 Location loc) -> Value {
    return UnrealizedConversionCastOp::create(b, loc, type, inputs).getResult(0);
  };
  addSourceMaterialization(cast);
  addTargetMaterialization(cast);
}

//===----------------------------------------------------------------------===//
// Scalar
//===----------------------------------------------------------------------===//

Value Scalar::constant(double v) const {
  Type t = type();
  if (auto f = dyn_cast<FloatType>(t))
    return arith::ConstantOp::create(b, loc, FloatAttr::get(f, v));
  if (t.isInteger(1))
    return arith::ConstantOp::create(b, loc, b.getIntegerAttr(t, v != 0));
  return arith::ConstantOp::create(b, loc,
                                   b.getIntegerAttr(t, static_cast<int64_t>(v)));
}

Value Scalar::add(Value x, Value y) const {
  if (isFloat())
    return arith::AddFOp::create(b, loc, x, y);
  return arith::AddIOp::create(b, loc, x, y);
}
Value Scalar::sub(Value x, Value y) const {
  if (isFloat())
    return arith::SubFOp::create(b, loc, x, y);
  return arith::SubIOp::create(b, loc, x, y);
}
Value Scalar::mul(Value x, Value y) const {
  if (isFloat())
    return arith::MulFOp::create(b, loc, x, y);
  return arith::MulIOp::create(b, loc, x, y);
}
Value Scalar::div(Value x, Value y) const {
  if (isFloat())
    return arith::DivFOp::create(b, loc, x, y);
  if (isUnsigned())
    return arith::DivUIOp::create(b, loc, x, y);
  return arith::DivSIOp::create(b, loc, x, y);
}
Value Scalar::max(Value x, Value y) const {
  if (isFloat())
    return arith::MaximumFOp::create(b, loc, x, y); // NaN-propagating
  if (isUnsigned())
    return arith::MaxUIOp::create(b, loc, x, y);
  return arith::MaxSIOp::create(b, loc, x, y);
}
Value Scalar::min(Value x, Value y) const {
  if (isFloat())
    return arith::MinimumFOp::create(b, loc, x, y);
  if (isUnsigned())
    return arith::MinUIOp::create(b, loc, x, y);
  return arith::MinSIOp::create(b, loc, x, y);
}
Value Scalar::neg(Value x) const {
  if (isFloat())
    return arith::NegFOp::create(b, loc, x);
  return arith::SubIOp::create(b, loc, constant(0), x);
}
Value Scalar::abs(Value x) const {
  if (isFloat())
    return math::AbsFOp::create(b, loc, x);
  if (isUnsigned())
    return x;
  return math::AbsIOp::create(b, loc, x);
}
Value Scalar::pow(Value x, Value y) const {
  if (isFloat())
    return math::PowFOp::create(b, loc, x, y);
  if (isUnsigned()) {
    // No unsigned ipow: exponents are non-negative, so the signed one
    // computes the same bits.
    return math::IPowIOp::create(b, loc, x, y);
  }
  return math::IPowIOp::create(b, loc, x, y);
}

Value Scalar::compare(CompareDirection direction, Value x, Value y) const {
  if (isFloat()) {
    arith::CmpFPredicate p;
    switch (direction) {
    case CompareDirection::eq: p = arith::CmpFPredicate::OEQ; break;
    case CompareDirection::ne: p = arith::CmpFPredicate::UNE; break;
    case CompareDirection::lt: p = arith::CmpFPredicate::OLT; break;
    case CompareDirection::le: p = arith::CmpFPredicate::OLE; break;
    case CompareDirection::gt: p = arith::CmpFPredicate::OGT; break;
    case CompareDirection::ge: p = arith::CmpFPredicate::OGE; break;
    }
    return arith::CmpFOp::create(b, loc, p, x, y);
  }
  bool u = isUnsigned() || element.isInteger(1);
  arith::CmpIPredicate p;
  switch (direction) {
  case CompareDirection::eq: p = arith::CmpIPredicate::eq; break;
  case CompareDirection::ne: p = arith::CmpIPredicate::ne; break;
  case CompareDirection::lt: p = u ? arith::CmpIPredicate::ult : arith::CmpIPredicate::slt; break;
  case CompareDirection::le: p = u ? arith::CmpIPredicate::ule : arith::CmpIPredicate::sle; break;
  case CompareDirection::gt: p = u ? arith::CmpIPredicate::ugt : arith::CmpIPredicate::sgt; break;
  case CompareDirection::ge: p = u ? arith::CmpIPredicate::uge : arith::CmpIPredicate::sge; break;
  }
  return arith::CmpIOp::create(b, loc, p, x, y);
}

Value Scalar::select(Value c, Value x, Value y) const {
  return arith::SelectOp::create(b, loc, c, x, y);
}

Value Scalar::convert(Value x, Type to) const {
  Type from = element;
  Type toS = signless(to);
  if (from == to)
    return x;
  auto fromF = dyn_cast<FloatType>(from);
  auto toF = dyn_cast<FloatType>(to);
  if (fromF && toF) {
    if (toF.getWidth() > fromF.getWidth())
      return arith::ExtFOp::create(b, loc, toF, x);
    if (toF.getWidth() < fromF.getWidth())
      return arith::TruncFOp::create(b, loc, toF, x);
    // f16 <-> bf16: through f32.
    Value wide = arith::ExtFOp::create(b, loc, b.getF32Type(), x);
    return arith::TruncFOp::create(b, loc, toF, wide);
  }
  if (to.isInteger(1)) {
    // Anything nonzero is true.
    if (fromF)
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, x,
                                   Scalar{b, loc, from}.constant(0));
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, x,
                                 Scalar{b, loc, from}.constant(0));
  }
  bool fromU = from.isUnsignedInteger() || from.isInteger(1);
  if (toF) {
    if (fromU)
      return arith::UIToFPOp::create(b, loc, toF, x);
    return arith::SIToFPOp::create(b, loc, toF, x);
  }
  if (fromF) {
    if (to.isUnsignedInteger())
      return arith::FPToUIOp::create(b, loc, toS, x);
    return arith::FPToSIOp::create(b, loc, toS, x);
  }
  unsigned fw = from.getIntOrFloatBitWidth(), tw = to.getIntOrFloatBitWidth();
  if (tw > fw)
    return fromU ? Value(arith::ExtUIOp::create(b, loc, toS, x))
                 : Value(arith::ExtSIOp::create(b, loc, toS, x));
  if (tw < fw)
    return arith::TruncIOp::create(b, loc, toS, x);
  return x; // same width, signedness only
}

Value Scalar::identity(ReductionKind kind) const {
  Type t = type();
  switch (kind) {
  case ReductionKind::sum:
    return constant(0);
  case ReductionKind::prod:
    return constant(1);
  case ReductionKind::max:
  case ReductionKind::min: {
    bool isMax = kind == ReductionKind::max;
    if (auto f = dyn_cast<FloatType>(t))
      return arith::ConstantOp::create(
          b, loc,
          FloatAttr::get(f, APFloat::getInf(f.getFloatSemantics(), isMax)));
    unsigned w = t.getIntOrFloatBitWidth();
    APInt v = isUnsigned() ? (isMax ? APInt::getMinValue(w) : APInt::getMaxValue(w))
                           : (isMax ? APInt::getSignedMinValue(w)
                                    : APInt::getSignedMaxValue(w));
    return arith::ConstantOp::create(b, loc, IntegerAttr::get(t, v));
  }
  }
  llvm_unreachable("unknown reduction");
}

Value Scalar::combine(ReductionKind kind, Value x, Value y) const {
  // Float sums and products may be reassociated so that LLVM vectorizes
  // reductions (as every framework's kernels do); the order of additions
  // then differs from a sequential loop.
  auto reassoc = arith::FastMathFlagsAttr::get(b.getContext(),
                                               arith::FastMathFlags::reassoc);
  switch (kind) {
  case ReductionKind::sum:
    if (isFloat())
      return arith::AddFOp::create(b, loc, x, y, reassoc);
    return add(x, y);
  case ReductionKind::prod:
    if (isFloat())
      return arith::MulFOp::create(b, loc, x, y, reassoc);
    return mul(x, y);
  case ReductionKind::max:
    return max(x, y);
  case ReductionKind::min:
    return min(x, y);
  }
  llvm_unreachable("unknown reduction");
}

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

AffineMap mlir::loom::lowering::broadcastMap(MLIRContext *ctx,
                                             ArrayRef<int64_t> operand,
                                             ArrayRef<int64_t> result) {
  SmallVector<AffineExpr> exprs;
  int64_t offset = result.size() - operand.size();
  for (auto [j, size] : llvm::enumerate(operand)) {
    int64_t d = offset + j;
    if (size == 1 && result[d] != 1)
      exprs.push_back(getAffineConstantExpr(0, ctx));
    else
      exprs.push_back(getAffineDimExpr(d, ctx));
  }
  return AffineMap::get(result.size(), 0, exprs, ctx);
}

Value mlir::loom::lowering::emptyTensor(OpBuilder &b, Location loc,
                                        ArrayRef<int64_t> shape, Type element) {
  return tensor::EmptyOp::create(b, loc, shape, element);
}

Value mlir::loom::lowering::filledTensor(OpBuilder &b, Location loc,
                                         ArrayRef<int64_t> shape, Value scalar) {
  Value empty = emptyTensor(b, loc, shape, scalar.getType());
  return linalg::FillOp::create(b, loc, ValueRange{scalar}, ValueRange{empty})
      .getResult(0);
}

SmallVector<Value> mlir::loom::lowering::elementwiseN(
    OpBuilder &b, Location loc, ArrayRef<int64_t> shape, TypeRange elements,
    ValueRange inputs,
    function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange)> body) {
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps;
  for (Value in : inputs)
    maps.push_back(broadcastMap(ctx, shapeOf(in), shape));
  SmallVector<Value> outs;
  SmallVector<Type> resultTypes;
  for (Type element : elements) {
    outs.push_back(emptyTensor(b, loc, shape, element));
    resultTypes.push_back(RankedTensorType::get(shape, element));
    maps.push_back(AffineMap::getMultiDimIdentityMap(shape.size(), ctx));
  }
  SmallVector<utils::IteratorType> iterators(shape.size(),
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, resultTypes, inputs, outs, maps, iterators,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        SmallVector<Value> results = body(nb, nl, args.take_front(inputs.size()));
        linalg::YieldOp::create(nb, nl, results);
      });
  return SmallVector<Value>(generic.getResults());
}

Value mlir::loom::lowering::elementwise(OpBuilder &b, Location loc,
                                        ArrayRef<int64_t> shape, Type element,
                                        ValueRange inputs, BodyFn body) {
  return elementwiseN(b, loc, shape, TypeRange{element}, inputs,
                      [&](OpBuilder &nb, Location nl, ValueRange args) {
                        return SmallVector<Value>{body(nb, nl, args)};
                      })
      .front();
}

Type mlir::loom::lowering::accumulatorType(Type element) {
  if (auto f = dyn_cast<FloatType>(element); f && f.getWidth() < 32)
    return Float32Type::get(element.getContext());
  return element;
}

Value mlir::loom::lowering::convertTensor(OpBuilder &b, Location loc, Value v,
                                          Type from, Type to) {
  if (from == to)
    return v;
  return elementwise(b, loc, shapeOf(v), signless(to), ValueRange{v},
                     [&](OpBuilder &nb, Location l, ValueRange a) {
                       return Scalar{nb, l, from}.convert(a[0], to);
                     });
}

Value mlir::loom::lowering::reduceOf(OpBuilder &b, Location loc,
                                     ValueRange full, ValueRange rows,
                                     ArrayRef<int64_t> dims, ReductionKind kind,
                                     Type acc, BodyFn value) {
  MLIRContext *ctx = b.getContext();
  ArrayRef<int64_t> shape = shapeOf(full.front());
  int64_t rank = shape.size();
  SmallVector<int64_t> outShape;
  SmallVector<AffineExpr> outExprs;
  SmallVector<utils::IteratorType> iterators;
  for (int64_t d = 0; d < rank; ++d) {
    bool reduced = llvm::is_contained(dims, d);
    iterators.push_back(reduced ? utils::IteratorType::reduction
                                : utils::IteratorType::parallel);
    if (!reduced) {
      outShape.push_back(shape[d]);
      outExprs.push_back(getAffineDimExpr(d, ctx));
    }
  }
  AffineMap outMap = AffineMap::get(rank, 0, outExprs, ctx);
  SmallVector<AffineMap> maps(full.size(),
                              AffineMap::getMultiDimIdentityMap(rank, ctx));
  maps.append(rows.size(), outMap);
  maps.push_back(outMap);
  SmallVector<Value> inputs(full);
  inputs.append(rows.begin(), rows.end());
  Value init = filledTensor(b, loc, outShape, Scalar{b, loc, acc}.identity(kind));
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, inputs, ValueRange{init}, maps,
      iterators, [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value v = value(nb, nl, args.drop_back());
        linalg::YieldOp::create(
            nb, nl, Scalar{nb, nl, acc}.combine(kind, args.back(), v));
      });
  return generic.getResult(0);
}

Value mlir::loom::lowering::reduce(OpBuilder &b, Location loc, Value input,
                                   ArrayRef<int64_t> dims, ReductionKind kind,
                                   Type element, bool wide) {
  bool widen = kind == ReductionKind::sum || kind == ReductionKind::prod;
  Type acc = widen ? accumulatorType(element) : element;
  Value r = reduceOf(b, loc, ValueRange{input}, {}, dims, kind, acc,
                     [&](OpBuilder &nb, Location nl, ValueRange args) {
                       return Scalar{nb, nl, element}.convert(args[0], acc);
                     });
  return wide ? r : convertTensor(b, loc, r, acc, element);
}

Value mlir::loom::lowering::keepDims(OpBuilder &b, Location loc, Value reduced,
                                     ArrayRef<int64_t> fullShape,
                                     ArrayRef<int64_t> dims) {
  SmallVector<int64_t> shape(fullShape);
  for (int64_t d : dims)
    shape[d] = 1;
  return reshape(b, loc, reduced, shape);
}

Value mlir::loom::lowering::reshape(OpBuilder &b, Location loc, Value v,
                                    ArrayRef<int64_t> shape) {
  RankedTensorType type = tensorType(v);
  if (type.getShape() == shape)
    return v;
  auto target = type.clone(shape);
  if (std::optional<SmallVector<ReassociationIndices>> r =
          getReassociationIndicesForReshape(type, target)) {
    if (target.getRank() < type.getRank())
      return tensor::CollapseShapeOp::create(b, loc, target, v, *r);
    return tensor::ExpandShapeOp::create(b, loc, target, v, *r);
  }
  // Through 1-D: collapse everything, then expand.
  int64_t n = type.getNumElements();
  auto flat = type.clone({n});
  Value collapsed = v;
  if (type.getRank() != 1) {
    SmallVector<ReassociationIndices> all(1);
    for (int64_t d = 0; d < type.getRank(); ++d)
      all[0].push_back(d);
    if (type.getRank() == 0)
      all.clear();
    collapsed = type.getRank() == 0
                    ? Value(tensor::ExpandShapeOp::create(b, loc, flat, v, all))
                    : Value(tensor::CollapseShapeOp::create(b, loc, flat, v, all));
  }
  if (target.getRank() == 1)
    return collapsed;
  SmallVector<ReassociationIndices> all(1);
  for (int64_t d = 0; d < target.getRank(); ++d)
    all[0].push_back(d);
  if (target.getRank() == 0)
    return tensor::CollapseShapeOp::create(b, loc, target, collapsed,
                                           SmallVector<ReassociationIndices>{});
  return tensor::ExpandShapeOp::create(b, loc, target, collapsed, all);
}

void mlir::loom::lowering::declare(OpBuilder &b, Operation *anchor,
                                   StringRef name, FunctionType type) {
  auto module = anchor->getParentOfType<ModuleOp>();
  if (module.lookupSymbol(name))
    return;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  auto fn = func::FuncOp::create(b, anchor->getLoc(), name, type);
  fn.setPrivate();
  fn->setAttr("llvm.emit_c_interface", b.getUnitAttr());
}
