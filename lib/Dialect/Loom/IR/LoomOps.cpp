//===- LoomOps.cpp - Loom operations: types, verifiers, syntax -------------===//
//
// Custom assembly directives and the op classes (LoomOps.cpp.inc); core,
// mesh and elementwise ops. The other families: LoomStructuredOps.cpp,
// LoomShapeOps.cpp, LoomNNOps.cpp; shared inference rules in InferTypes.h;
// sharding rules in LoomShardingRules.cpp, gradients in LoomGradients.cpp.
//
//===----------------------------------------------------------------------===//

#include "InferTypes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include <cmath>

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::detail;

//===----------------------------------------------------------------------===//
// Custom directives
//===----------------------------------------------------------------------===//

/// `: T` when both operands and the result have type T, else
/// `: (T1, T2) -> T3`.
static ParseResult parseBinaryTypes(OpAsmParser &parser, Type &lhs, Type &rhs,
                                    Type &result) {
  if (succeeded(parser.parseOptionalLParen())) {
    if (parser.parseType(lhs) || parser.parseComma() || parser.parseType(rhs) ||
        parser.parseRParen() || parser.parseArrow() || parser.parseType(result))
      return failure();
    return success();
  }
  if (parser.parseType(lhs))
    return failure();
  rhs = result = lhs;
  return success();
}

static void printBinaryTypes(OpAsmPrinter &printer, Operation *, Type lhs,
                             Type rhs, Type result) {
  if (lhs == rhs && rhs == result) {
    printer << lhs;
    return;
  }
  printer << "(" << lhs << ", " << rhs << ") -> " << result;
}

/// `[start:limit(:stride)?, ...]`
static ParseResult parseSliceRanges(OpAsmParser &parser,
                                    DenseI64ArrayAttr &start,
                                    DenseI64ArrayAttr &limit,
                                    DenseI64ArrayAttr &stride) {
  SmallVector<int64_t> starts, limits, strides;
  if (parser.parseCommaSeparatedList(
          OpAsmParser::Delimiter::Square, [&]() -> ParseResult {
            int64_t s, l, st = 1;
            if (parser.parseInteger(s) || parser.parseColon() ||
                parser.parseInteger(l))
              return failure();
            if (succeeded(parser.parseOptionalColon()) &&
                parser.parseInteger(st))
              return failure();
            starts.push_back(s);
            limits.push_back(l);
            strides.push_back(st);
            return success();
          }))
    return failure();
  MLIRContext *ctx = parser.getContext();
  start = DenseI64ArrayAttr::get(ctx, starts);
  limit = DenseI64ArrayAttr::get(ctx, limits);
  stride = DenseI64ArrayAttr::get(ctx, strides);
  return success();
}

static void printSliceRanges(OpAsmPrinter &printer, Operation *,
                             DenseI64ArrayAttr start, DenseI64ArrayAttr limit,
                             DenseI64ArrayAttr stride) {
  printer << "[";
  int64_t rank = start.size();
  for (int64_t i = 0; i < rank; ++i) {
    if (i)
      printer << ", ";
    printer << start[i] << ":" << (i < limit.size() ? limit[i] : 0);
    if (i < stride.size() && stride[i] != 1)
      printer << ":" << stride[i];
  }
  printer << "]";
}

/// `["dp"=2, "tp"=4 {bandwidth = ..., latency = ...}]`
static ParseResult parseMeshAxes(OpAsmParser &parser, ArrayAttr &axes) {
  SmallVector<Attribute> list;
  if (parser.parseCommaSeparatedList(
          OpAsmParser::Delimiter::Square, [&]() -> ParseResult {
            MeshAxisAttr axis = MeshAxisAttr::parseBody(parser);
            if (!axis)
              return failure();
            list.push_back(axis);
            return success();
          }))
    return failure();
  axes = ArrayAttr::get(parser.getContext(), list);
  return success();
}

static void printMeshAxes(OpAsmPrinter &printer, Operation *, ArrayAttr axes) {
  printer << "[";
  llvm::interleaveComma(axes, printer, [&](Attribute a) {
    cast<MeshAxisAttr>(a).printBody(printer);
  });
  printer << "]";
}

/// Enum attributes as a bare keyword (`lt`, `mean`, `tanh`).
template <typename AttrT, typename EnumT>
static ParseResult parseEnumKeyword(OpAsmParser &parser, AttrT &attr,
                                    std::optional<EnumT> (*symbolize)(StringRef),
                                    StringRef expected) {
  StringRef keyword;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseKeyword(&keyword))
    return failure();
  std::optional<EnumT> value = symbolize(keyword);
  if (!value)
    return parser.emitError(loc) << "expected one of " << expected << ", got '"
                                 << keyword << "'";
  attr = AttrT::get(parser.getContext(), *value);
  return success();
}

static ParseResult parseKeyword(OpAsmParser &parser,
                                CompareDirectionAttr &attr) {
  return parseEnumKeyword(parser, attr, symbolizeCompareDirection,
                          "eq, ne, lt, le, gt, ge");
}
static ParseResult parseKeyword(OpAsmParser &parser, LossReductionAttr &attr) {
  return parseEnumKeyword(parser, attr, symbolizeLossReduction,
                          "none, sum, mean");
}
static ParseResult parseKeyword(OpAsmParser &parser,
                                GeluApproximationAttr &attr) {
  return parseEnumKeyword(parser, attr, symbolizeGeluApproximation,
                          "none, tanh");
}
static ParseResult parseKeyword(OpAsmParser &parser, ReductionKindAttr &attr) {
  return parseEnumKeyword(parser, attr, symbolizeReductionKind,
                          "sum, max, min, prod");
}
static void printKeyword(OpAsmPrinter &printer, Operation *,
                         ReductionKindAttr attr) {
  printer << stringifyReductionKind(attr.getValue());
}
static void printKeyword(OpAsmPrinter &printer, Operation *,
                         CompareDirectionAttr attr) {
  printer << stringifyCompareDirection(attr.getValue());
}
static void printKeyword(OpAsmPrinter &printer, Operation *,
                         LossReductionAttr attr) {
  printer << stringifyLossReduction(attr.getValue());
}
static void printKeyword(OpAsmPrinter &printer, Operation *,
                         GeluApproximationAttr attr) {
  printer << stringifyGeluApproximation(attr.getValue());
}

#define GET_OP_CLASSES
#include "loom/Dialect/Loom/IR/LoomOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Core ops
//===----------------------------------------------------------------------===//

TypedAttr mlir::loom::scalarAttr(Type element, double value) {
  if (isa<FloatType>(element))
    return FloatAttr::get(element, value);
  // Saturated to the integer type's range (a value from a file may be 1e30
  // or NaN: converting those to an integer is undefined); i1 is 0 or 1.
  unsigned width = element.getIntOrFloatBitWidth();
  if (width == 1)
    return IntegerAttr::get(element, APInt(1, value != 0 && value == value));
  if (element.isUnsignedInteger()) {
    double top = std::ldexp(1.0, int(width)); // 2^width, exact
    uint64_t v = 0;
    if (value >= top)
      v = width == 64 ? ~uint64_t(0) : (uint64_t(1) << width) - 1;
    else if (value > 0)
      v = static_cast<uint64_t>(value);
    return IntegerAttr::get(element, APInt(width, v));
  }
  double top = std::ldexp(1.0, int(width) - 1); // 2^(width-1), exact
  int64_t v = 0;
  if (value >= top)
    v = int64_t((uint64_t(1) << (width - 1)) - 1);
  else if (value <= -top)
    v = int64_t(~uint64_t(0) << (width - 1));
  else if (value == value)
    v = static_cast<int64_t>(value);
  return IntegerAttr::get(element, APInt(width, uint64_t(v), /*isSigned=*/true,
                                         /*implicitTrunc=*/true));
}

Value mlir::loom::createSplat(OpBuilder &b, Location loc, RankedTensorType type,
                              double value) {
  return ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(type, scalarAttr(type.getElementType(), value)));
}

static LogicalResult inferConstant(MLIRContext *ctx, std::optional<Location> loc,
                                  ConstantOp::Adaptor adaptor,
                                  SmallVectorImpl<Type> &inferred) {
  auto value = dyn_cast_or_null<ElementsAttr>(adaptor.getValueAttr());
  if (!value)
    return emitOptionalError(loc, "value must be an elements attribute");
  inferred.push_back(value.getType());
  return success();
}
LOOM_INFER_TYPES(ConstantOp, 1, inferConstant)

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

/// A splat float constant cast to another float type, rounded to nearest
/// even (the op's rule).
OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  auto input = dyn_cast_or_null<SplatElementsAttr>(adaptor.getInput());
  auto type = dyn_cast<RankedTensorType>(getType());
  if (!input || !type || !isa<FloatType>(input.getElementType()) ||
      !isa<FloatType>(type.getElementType()))
    return {};
  APFloat value = input.getSplatValue<APFloat>();
  bool lost = false;
  value.convert(cast<FloatType>(type.getElementType()).getFloatSemantics(),
                APFloat::rmNearestTiesToEven, &lost);
  return DenseElementsAttr::get(type, value);
}

LogicalResult OptimizationBarrierOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, ValueRange operands,
    DictionaryAttr, OpaqueProperties, RegionRange,
    SmallVectorImpl<Type> &inferred) {
  llvm::append_range(inferred, operands.getTypes());
  return success();
}

LogicalResult WaitOp::inferReturnTypes(MLIRContext *,
                                       std::optional<Location>,
                                       ValueRange operands, DictionaryAttr,
                                       OpaqueProperties, RegionRange,
                                       SmallVectorImpl<Type> &inferred) {
  llvm::append_range(inferred, operands.getTypes());
  return success();
}

Operation *WaitOp::getStarted() {
  if (getInputs().empty())
    return nullptr;
  Operation *def = getInputs().front().getDefiningOp();
  if (!def || !def->hasAttr(LoomDialect::kAsyncAttrName))
    return nullptr;
  return def;
}

LogicalResult
ParameterOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  FlatSymbolRefAttr owner = getStateOfAttr();
  if (!owner)
    return success();
  auto weight = symbolTable.lookupNearestSymbolFrom<ParameterOp>(*this, owner);
  if (!weight || !weight.getTrainable())
    return emitOpError("state_of names ")
           << owner << ", which is not a trainable loom.parameter";
  if (getTrainable())
    return emitOpError("optimizer state (state_of ")
           << owner << ") cannot be trainable";
  return success();
}

LogicalResult ParameterOp::verify() {
  RankedTensorType type = getTensorType();
  if (getTrainable() && !isa<FloatType>(type.getElementType()))
    return emitOpError("trainable parameter must have a floating-point "
                       "element type, got ")
           << type;
  std::optional<Attribute> init = getInitialValue();
  if (!init)
    return success();
  if (auto elements = dyn_cast<ElementsAttr>(*init)) {
    if (elements.getType() != type)
      return emitOpError("initial value has type ")
             << elements.getType() << " but the parameter has type " << type;
    return success();
  }
  if (isa<ExternalDataAttr>(*init))
    return success();
  return emitOpError("initial value must be an elements attribute or "
                     "#loom.external, got ")
         << *init;
}

//===----------------------------------------------------------------------===//
// Mesh ops
//===----------------------------------------------------------------------===//

int64_t MeshOp::getNumDevices() {
  int64_t n = 1;
  for (Attribute a : getAxes())
    n *= cast<MeshAxisAttr>(a).getSize();
  return n;
}

MeshAxisAttr MeshOp::getAxis(StringRef name) {
  for (Attribute a : getAxes()) {
    auto axis = cast<MeshAxisAttr>(a);
    if (axis.getName().getValue() == name)
      return axis;
  }
  return {};
}

int64_t MeshOp::getAxisIndex(StringRef name) {
  for (auto [i, a] : llvm::enumerate(getAxes()))
    if (cast<MeshAxisAttr>(a).getName().getValue() == name)
      return i;
  return -1;
}

LogicalResult MeshOp::verify() {
  if (getAxes().empty())
    return emitOpError("needs at least one axis");
  llvm::DenseSet<StringAttr> seen;
  for (Attribute a : getAxes()) {
    auto axis = cast<MeshAxisAttr>(a);
    if (!seen.insert(axis.getName()).second)
      return emitOpError("has two axes named \"")
             << axis.getName().getValue() << "\"";
  }
  return success();
}

LogicalResult ShardingConstraintOp::verify() {
  return getSharding().verifyFor(getInput().getType(), *this, "the operand");
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

static LogicalResult inferBinary(std::optional<Location> loc, Type lhs,
                                 Type rhs, SmallVectorImpl<Type> &inferred,
                                 Type elementType = {}) {
  SmallVector<int64_t> shape;
  if (failed(broadcastShapes(loc, {lhs, rhs}, shape)))
    return failure();
  if (!elementType)
    elementType = cast<RankedTensorType>(lhs).getElementType();
  inferred.push_back(RankedTensorType::get(shape, elementType));
  return success();
}

template <typename OpT>
static LogicalResult inferBinaryOp(MLIRContext *, std::optional<Location> loc,
                                   typename OpT::Adaptor adaptor,
                                   SmallVectorImpl<Type> &inferred) {
  return inferBinary(loc, adaptor.getLhs().getType(),
                     adaptor.getRhs().getType(), inferred);
}
#define LOOM_BINARY_INFER(OP) LOOM_INFER_TYPES(OP, 1, inferBinaryOp<OP>)
LOOM_BINARY_INFER(AddOp)
LOOM_BINARY_INFER(SubOp)
LOOM_BINARY_INFER(MulOp)
LOOM_BINARY_INFER(DivOp)
LOOM_BINARY_INFER(PowOp)
LOOM_BINARY_INFER(MaxOp)
LOOM_BINARY_INFER(MinOp)
#undef LOOM_BINARY_INFER

static LogicalResult inferCompare(MLIRContext *ctx, std::optional<Location> loc,
                                 CompareOp::Adaptor adaptor,
                                 SmallVectorImpl<Type> &inferred) {
  return inferBinary(loc, adaptor.getLhs().getType(),
                     adaptor.getRhs().getType(), inferred,
                     IntegerType::get(ctx, 1));
}
LOOM_INFER_TYPES(CompareOp, 1, inferCompare)

static LogicalResult inferSelect(MLIRContext *ctx, std::optional<Location> loc,
                                SelectOp::Adaptor adaptor,
                                SmallVectorImpl<Type> &inferred) {
  SmallVector<int64_t> shape;
  Type onTrue = adaptor.getOnTrue().getType();
  if (failed(broadcastShapes(loc,
                             {adaptor.getCondition().getType(), onTrue,
                              adaptor.getOnFalse().getType()},
                             shape)))
    return failure();
  inferred.push_back(RankedTensorType::get(
      shape, cast<RankedTensorType>(onTrue).getElementType()));
  return success();
}
LOOM_INFER_TYPES(SelectOp, 1, inferSelect)

//===----------------------------------------------------------------------===//
// Canonicalization
//===----------------------------------------------------------------------===//

namespace {
/// pow(x, c) for a splat float constant c in {1, 2, 0.5} whose broadcast
/// does not change x's shape.
struct SimplifyPowByConstant : OpRewritePattern<PowOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PowOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getLhs().getType() != op.getType())
      return failure();
    DenseElementsAttr exponent;
    if (!matchPattern(op.getRhs(), m_Constant(&exponent)) ||
        !exponent.isSplat() || !isa<FloatType>(exponent.getElementType()))
      return failure();
    double e = exponent.getSplatValue<APFloat>().convertToDouble();
    Value x = op.getLhs();
    if (e == 1.0) {
      rewriter.replaceOp(op, x);
      return success();
    }
    if (e == 2.0) {
      rewriter.replaceOpWithNewOp<MulOp>(op, x, x);
      return success();
    }
    if (e == 0.5) {
      rewriter.replaceOpWithNewOp<SqrtOp>(op, x);
      return success();
    }
    return failure();
  }
};
} // namespace

namespace {
/// Whether a plan names how `op` is split (its factors or its results'
/// shardings): the rewrites below leave such ops alone, so that the
/// program stays the one the plan priced.
bool planned(Operation *op) {
  return op->hasAttr(LoomDialect::kFactorsAttrName) ||
         op->hasAttr(LoomDialect::kShardingAttrName);
}
} // namespace

namespace {
/// add(pad(a), add(pad(b), pad(c)), ...) with zero pads whose inputs cover
/// consecutive slabs of one dimension (no overlap, no gap) is
/// pad(concat(a, b, c)): at every element one term is the slab's value and
/// the others are zeros. The gradient of slicing a value into T pieces was
/// T full-size tensors and T - 1 full-size additions (quadratic in T for a
/// recurrence's time steps). Matched at the root of a chain of
/// single-use additions.
struct ConcatDisjointZeroPads : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  static bool isZero(Attribute value) {
    if (auto f = dyn_cast<FloatAttr>(value))
      return f.getValue().isZero();
    if (auto i = dyn_cast<IntegerAttr>(value))
      return i.getValue().isZero();
    return false;
  }

  LogicalResult matchAndRewrite(AddOp op,
                                PatternRewriter &rewriter) const override {
    auto type = dyn_cast<RankedTensorType>(op.getType());
    if (!type || !type.hasStaticShape())
      return failure();
    auto sameAdd = [&](Operation *user) {
      return isa<AddOp>(user) && user->getResult(0).getType() == type;
    };
    if (planned(op))
      return failure();
    if (op->hasOneUse() && sameAdd(*op->user_begin()))
      return failure(); // the root of the chain rewrites it
    SmallVector<PadOp> pads;
    SmallVector<Value> work{op.getLhs(), op.getRhs()};
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (v.getType() != type)
        return failure();
      Operation *def = v.getDefiningOp();
      if (def && planned(def))
        return failure();
      if (auto add = dyn_cast_or_null<AddOp>(def)) {
        if (!add->hasOneUse())
          return failure();
        work.push_back(add.getLhs());
        work.push_back(add.getRhs());
        continue;
      }
      auto pad = dyn_cast_or_null<PadOp>(def);
      if (!pad || !isZero(pad.getValue()))
        return failure();
      pads.push_back(pad);
    }
    // The one dimension every pad pads.
    std::optional<unsigned> dim;
    for (PadOp pad : pads)
      for (unsigned d = 0; d < type.getRank(); ++d) {
        if (pad.getLow()[d] < 0 || pad.getHigh()[d] < 0)
          return failure();
        if (pad.getLow()[d] == 0 && pad.getHigh()[d] == 0)
          continue;
        if (dim && *dim != d)
          return failure();
        dim = d;
      }
    if (!dim)
      return failure();
    unsigned d = *dim;
    llvm::sort(pads, [&](PadOp a, PadOp b) {
      return a.getLow()[d] < b.getLow()[d];
    });
    for (size_t i = 0; i + 1 < pads.size(); ++i) {
      int64_t end = pads[i].getLow()[d] +
                    cast<RankedTensorType>(pads[i].getInput().getType())
                        .getDimSize(d);
      if (end != pads[i + 1].getLow()[d])
        return failure();
    }
    SmallVector<Value> pieces;
    for (PadOp pad : pads)
      pieces.push_back(pad.getInput());
    Value joined = ConcatOp::create(rewriter, op.getLoc(), pieces,
                                    rewriter.getI64IntegerAttr(d));
    int64_t low = pads.front().getLow()[d], high = pads.back().getHigh()[d];
    if (low != 0 || high != 0) {
      SmallVector<int64_t> lows(type.getRank(), 0), highs(type.getRank(), 0);
      lows[d] = low;
      highs[d] = high;
      joined = PadOp::create(rewriter, op.getLoc(), joined,
                             rewriter.getDenseI64ArrayAttr(lows),
                             rewriter.getDenseI64ArrayAttr(highs),
                             pads.front().getValue());
    }
    rewriter.replaceOp(op, joined);
    return success();
  }
};
} // namespace

void AddOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                        MLIRContext *context) {
  results.add<ConcatDisjointZeroPads>(context);
}

namespace {
/// transpose(dot_general(a, b)) whose permutation keeps the batch
/// dimensions and puts b's free dimensions before a's is
/// dot_general(b, a) with the dimension lists swapped: the gradient rule
/// of a weight read transposed (h W^T) built its gradient as h^T dy and
/// then transposed it, a strided copy of the whole weight per use (per
/// time step in a recurrence).
struct SwapTransposedDotGeneral : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto dot = op.getInput().getDefiningOp<DotGeneralOp>();
    if (!dot || !dot->hasOneUse() || planned(op) || planned(dot))
      return failure();
    int64_t nb = dot.getLhsBatchingDims().size();
    int64_t nc = dot.getLhsContractingDims().size();
    int64_t nlf = dot.getLhs().getType().getRank() - nb - nc;
    int64_t nrf = dot.getRhs().getType().getRank() - nb - nc;
    if (nlf == 0 || nrf == 0)
      return failure();
    SmallVector<int64_t> swapped;
    for (int64_t i = 0; i < nb; ++i)
      swapped.push_back(i);
    for (int64_t i = 0; i < nrf; ++i)
      swapped.push_back(nb + nlf + i);
    for (int64_t i = 0; i < nlf; ++i)
      swapped.push_back(nb + i);
    if (op.getPermutation() != ArrayRef<int64_t>(swapped))
      return failure();
    auto product = DotGeneralOp::create(
        rewriter, dot.getLoc(), dot.getRhs(), dot.getLhs(),
        dot.getRhsBatchingDimsAttr(), dot.getLhsBatchingDimsAttr(),
        dot.getRhsContractingDimsAttr(), dot.getLhsContractingDimsAttr());
    product->setDiscardableAttrs(dot->getDiscardableAttrDictionary());
    assert(product.getType() == op.getType() && "(A B)^T = B^T A^T");
    rewriter.replaceOp(op, product);
    return success();
  }
};
} // namespace

void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<SwapTransposedDotGeneral>(context);
}

void PowOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                        MLIRContext *context) {
  results.add<SimplifyPowByConstant>(context);
}
