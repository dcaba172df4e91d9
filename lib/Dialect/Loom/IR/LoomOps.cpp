//===- LoomOps.cpp - Loom operations: types, verifiers, syntax -------------===//
//
// Result-type inference (ONNX/numpy shape rules), verifiers and custom
// assembly directives. Sharding rules live in LoomShardingRules.cpp.
//
//===----------------------------------------------------------------------===//

#include "loom/Dialect/Loom/IR/LoomOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace mlir::loom;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static FailureOr<RankedTensorType> rankedType(std::optional<Location> loc,
                                              Type type, StringRef what) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (!ranked || !ranked.hasStaticShape()) {
    (void)emitOptionalError(loc, what, " must be a statically shaped tensor, got ",
                            type);
    return failure();
  }
  return ranked;
}

/// Numpy/ONNX multidirectional broadcasting of `types`.
static LogicalResult broadcastShapes(std::optional<Location> loc,
                                     ArrayRef<Type> types,
                                     SmallVectorImpl<int64_t> &shape) {
  shape.clear();
  for (Type type : types) {
    FailureOr<RankedTensorType> t = rankedType(loc, type, "operand");
    if (failed(t))
      return failure();
    ArrayRef<int64_t> s = t->getShape();
    if (s.size() > shape.size())
      shape.insert(shape.begin(), s.size() - shape.size(), 1);
    int64_t offset = shape.size() - s.size();
    for (auto [j, size] : llvm::enumerate(s)) {
      int64_t &out = shape[offset + j];
      if (out == size || size == 1)
        continue;
      if (out == 1) {
        out = size;
        continue;
      }
      if (loc) {
        InFlightDiagnostic diag =
            emitError(*loc, "operands are not broadcast-compatible: ");
        llvm::interleave(types, diag, [&](Type t) { diag << t; }, " vs ");
        diag << " (dimension of size " << size << " against " << out << ")";
      }
      return failure();
    }
  }
  return success();
}

/// Checks that `dims` are valid, unique dimension indices of a rank-`rank`
/// tensor.
static LogicalResult checkDims(std::optional<Location> loc,
                               ArrayRef<int64_t> dims, int64_t rank,
                               StringRef what) {
  llvm::SmallSet<int64_t, 8> seen;
  for (int64_t d : dims) {
    if (d < 0 || d >= rank)
      return emitOptionalError(loc, what, " dimension ", d,
                               " is out of range for rank ", rank);
    if (!seen.insert(d).second)
      return emitOptionalError(loc, what, " dimension ", d,
                               " is listed more than once");
  }
  return success();
}

static int64_t windowOutputSize(int64_t in, int64_t padLo, int64_t padHi,
                                int64_t kernel, int64_t stride,
                                int64_t dilation) {
  int64_t effective = dilation * (kernel - 1) + 1;
  int64_t span = in + padLo + padHi - effective;
  if (span < 0)
    return 0;
  return span / stride + 1;
}

/// Shared checks of conv/pool window attributes over the spatial dimensions
/// of `inputShape` (all but the first two); appends the output sizes.
static LogicalResult inferWindow(std::optional<Location> loc,
                                 ArrayRef<int64_t> inputShape,
                                 ArrayRef<int64_t> kernel,
                                 ArrayRef<int64_t> strides,
                                 ArrayRef<int64_t> padding,
                                 ArrayRef<int64_t> dilations,
                                 SmallVectorImpl<int64_t> &out) {
  int64_t k = inputShape.size() - 2;
  if (static_cast<int64_t>(kernel.size()) != k ||
      static_cast<int64_t>(strides.size()) != k ||
      static_cast<int64_t>(dilations.size()) != k ||
      static_cast<int64_t>(padding.size()) != 2 * k)
    return emitOptionalError(
        loc, "expects ", k, " kernel sizes, strides and dilations and ", 2 * k,
        " paddings [begin..., end...] for ", k, " spatial dimensions");
  for (int64_t i = 0; i < k; ++i) {
    if (kernel[i] < 1 || strides[i] < 1 || dilations[i] < 1)
      return emitOptionalError(
          loc, "kernel sizes, strides and dilations must be positive");
  }
  if (llvm::any_of(padding, [](int64_t p) { return p < 0; }))
    return emitOptionalError(loc, "padding must be non-negative");
  for (int64_t i = 0; i < k; ++i) {
    int64_t size = windowOutputSize(inputShape[2 + i], padding[i],
                                    padding[k + i], kernel[i], strides[i],
                                    dilations[i]);
    if (size < 1)
      return emitOptionalError(loc, "window of size ", kernel[i],
                               " (dilation ", dilations[i],
                               ") does not fit spatial dimension ", 2 + i,
                               " of size ", inputShape[2 + i],
                               " with its padding");
    out.push_back(size);
  }
  return success();
}

/// Windowed ops take 1 to 3 spatial dimensions.
static LogicalResult checkSpatialRank(std::optional<Location> loc,
                                      RankedTensorType type, StringRef what) {
  if (type.getRank() < 3 || type.getRank() > 5)
    return emitOptionalError(loc, "expects a channels-first ", what,
                             " [N, C, D1...Dk] with 1 to 3 spatial "
                             "dimensions, got ",
                             type);
  return success();
}

/// Result-type inference policy. Called without a location (a query),
/// inference fails silently. Called with one (from a builder or the
/// verifier), it emits the reason and yields `none` result types instead of
/// failing: a builder then never aborts the process on bad operands, and the
/// verifier still rejects the op because `none` is not its declared type.
template <typename Fn>
static LogicalResult poisonOnError(MLIRContext *ctx,
                                   std::optional<Location> loc,
                                   SmallVectorImpl<Type> &inferred,
                                   unsigned numResults, Fn &&infer) {
  size_t before = inferred.size();
  if (succeeded(infer()))
    return success();
  if (!loc)
    return failure();
  inferred.resize(before);
  inferred.append(numResults, NoneType::get(ctx));
  return success();
}

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

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *ctx,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &inferred) {
  return poisonOnError(ctx, loc, inferred, 1, [&]() -> LogicalResult {
    auto value = dyn_cast_or_null<ElementsAttr>(adaptor.getValueAttr());
    if (!value)
      return emitOptionalError(loc, "value must be an elements attribute");
    inferred.push_back(value.getType());
    return success();
  });
}

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

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

#define LOOM_BINARY_INFER(OP)                                                  \
  LogicalResult OP::inferReturnTypes(MLIRContext *ctx,                         \
                                     std::optional<Location> loc,              \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &inferred) {        \
    return poisonOnError(ctx, loc, inferred, 1, [&] {                          \
      return inferBinary(loc, adaptor.getLhs().getType(),                      \
                         adaptor.getRhs().getType(), inferred);                \
    });                                                                        \
  }
LOOM_BINARY_INFER(AddOp)
LOOM_BINARY_INFER(SubOp)
LOOM_BINARY_INFER(MulOp)
LOOM_BINARY_INFER(DivOp)
LOOM_BINARY_INFER(PowOp)
LOOM_BINARY_INFER(MaxOp)
LOOM_BINARY_INFER(MinOp)
#undef LOOM_BINARY_INFER

LogicalResult CompareOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return poisonOnError(ctx, loc, inferred, 1, [&]() -> LogicalResult {
    return inferBinary(loc, adaptor.getLhs().getType(),
                       adaptor.getRhs().getType(), inferred,
                       IntegerType::get(ctx, 1));
  });
}

LogicalResult SelectOp::inferReturnTypes(MLIRContext *ctx,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  return poisonOnError(ctx, loc, inferred, 1, [&]() -> LogicalResult {
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
  });
}

//===----------------------------------------------------------------------===//
// Contraction and reductions
//===----------------------------------------------------------------------===//

LogicalResult DotGeneralOp::inferReturnTypes(MLIRContext *ctx,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &inferred) {
  return poisonOnError(ctx, loc, inferred, 1, [&]() -> LogicalResult {
    FailureOr<RankedTensorType> lhs =
        rankedType(loc, adaptor.getLhs().getType(), "lhs");
    FailureOr<RankedTensorType> rhs =
        rankedType(loc, adaptor.getRhs().getType(), "rhs");
    if (failed(lhs) || failed(rhs))
      return failure();
    ArrayRef<int64_t> lb = adaptor.getLhsBatchingDims();
    ArrayRef<int64_t> rb = adaptor.getRhsBatchingDims();
    ArrayRef<int64_t> lc = adaptor.getLhsContractingDims();
    ArrayRef<int64_t> rc = adaptor.getRhsContractingDims();
    if (lb.size() != rb.size())
      return emitOptionalError(loc, "lhs has ", lb.size(),
                               " batching dimensions but rhs has ", rb.size());
    if (lc.size() != rc.size())
      return emitOptionalError(loc, "lhs has ", lc.size(),
                               " contracting dimensions but rhs has ", rc.size());
    SmallVector<int64_t> lAll(lb), rAll(rb);
    lAll.append(lc.begin(), lc.end());
    rAll.append(rc.begin(), rc.end());
    if (failed(checkDims(loc, lAll, lhs->getRank(), "lhs batching/contracting")) ||
        failed(checkDims(loc, rAll, rhs->getRank(), "rhs batching/contracting")))
      return failure();
    for (auto [l, r] : llvm::zip(lAll, rAll))
      if (lhs->getDimSize(l) != rhs->getDimSize(r))
        return emitOptionalError(loc, "lhs dimension ", l, " (size ",
                                 lhs->getDimSize(l), ") and rhs dimension ", r,
                                 " (size ", rhs->getDimSize(r),
                                 ") are paired but differ in size");
    SmallVector<int64_t> shape;
    for (int64_t d : lb)
      shape.push_back(lhs->getDimSize(d));
    for (int64_t d = 0; d < lhs->getRank(); ++d)
      if (!llvm::is_contained(lAll, d))
        shape.push_back(lhs->getDimSize(d));
    for (int64_t d = 0; d < rhs->getRank(); ++d)
      if (!llvm::is_contained(rAll, d))
        shape.push_back(rhs->getDimSize(d));
    inferred.push_back(RankedTensorType::get(shape, lhs->getElementType()));
    return success();
  });
}

void DotGeneralOp::build(OpBuilder &builder, OperationState &state, Value lhs,
                         Value rhs) {
  auto lhsType = cast<RankedTensorType>(lhs.getType());
  auto rhsType = cast<RankedTensorType>(rhs.getType());
  int64_t batch = std::max<int64_t>(lhsType.getRank() - 2, 0);
  SmallVector<int64_t> batchDims = llvm::to_vector(llvm::seq<int64_t>(0, batch));
  build(builder, state, lhs, rhs, batchDims, batchDims,
        {lhsType.getRank() - 1},
        {std::max<int64_t>(rhsType.getRank() - 2, 0)});
}

static LogicalResult inferReduce(std::optional<Location> loc, Type inputType,
                                 ArrayRef<int64_t> dims, bool keepdims,
                                 SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> input = rankedType(loc, inputType, "input");
  if (failed(input))
    return failure();
  if (failed(checkDims(loc, dims, input->getRank(), "reduced")))
    return failure();
  if (!llvm::is_sorted(dims))
    return emitOptionalError(loc, "reduced dimensions must be sorted");
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < input->getRank(); ++d) {
    if (!llvm::is_contained(dims, d))
      shape.push_back(input->getDimSize(d));
    else if (keepdims)
      shape.push_back(1);
  }
  inferred.push_back(RankedTensorType::get(shape, input->getElementType()));
  return success();
}

#define LOOM_REDUCE_INFER(OP)                                                  \
  LogicalResult OP::inferReturnTypes(MLIRContext *ctx,                         \
                                     std::optional<Location> loc,              \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &inferred) {        \
    return poisonOnError(ctx, loc, inferred, 1, [&] {                          \
      return inferReduce(loc, adaptor.getInput().getType(), adaptor.getDims(), \
                         adaptor.getKeepdims(), inferred);                     \
    });                                                                        \
  }
LOOM_REDUCE_INFER(ReduceSumOp)
LOOM_REDUCE_INFER(ReduceMeanOp)
LOOM_REDUCE_INFER(ReduceMaxOp)
LOOM_REDUCE_INFER(ReduceMinOp)
LOOM_REDUCE_INFER(ReduceProdOp)
#undef LOOM_REDUCE_INFER

//===----------------------------------------------------------------------===//
// Windowed ops
//===----------------------------------------------------------------------===//

LogicalResult ConvOp::inferReturnTypes(MLIRContext *ctx,
                                       std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &inferred) {
  return poisonOnError(ctx, loc, inferred, 1, [&]() -> LogicalResult {
    FailureOr<RankedTensorType> input =
        rankedType(loc, adaptor.getInput().getType(), "input");
    FailureOr<RankedTensorType> filter =
        rankedType(loc, adaptor.getFilter().getType(), "filter");
    if (failed(input) || failed(filter))
      return failure();
    if (failed(checkSpatialRank(loc, *input, "input")))
      return failure();
    if (filter->getRank() != input->getRank())
      return emitOptionalError(loc, "filter ", *filter, " must have the rank of "
                               "the input ", *input, " ([F, C/groups, K1...Kk])");
    int64_t groups = adaptor.getGroups();
    int64_t c = input->getDimSize(1), f = filter->getDimSize(0);
    if (groups < 1 || c % groups != 0 || f % groups != 0)
      return emitOptionalError(loc, "groups = ", groups,
                               " must be positive and divide both the ", c,
                               " input channels and the ", f, " filters");
    if (filter->getDimSize(1) != c / groups)
      return emitOptionalError(loc, "filter has ", filter->getDimSize(1),
                               " input channels per group but the input has ", c,
                               " channels in ", groups, " group(s)");
    SmallVector<int64_t> shape{input->getDimSize(0), f};
    if (failed(inferWindow(loc, input->getShape(),
                           filter->getShape().drop_front(2), adaptor.getStrides(),
                           adaptor.getPadding(), adaptor.getDilations(), shape)))
      return failure();
    inferred.push_back(RankedTensorType::get(shape, input->getElementType()));
    return success();
  });
}

static LogicalResult inferPool(std::optional<Location> loc, Type inputType,
                               ArrayRef<int64_t> kernel,
                               ArrayRef<int64_t> strides,
                               ArrayRef<int64_t> padding,
                               ArrayRef<int64_t> dilations,
                               SmallVectorImpl<Type> &inferred,
                               Type resultElement = {}) {
  FailureOr<RankedTensorType> input = rankedType(loc, inputType, "input");
  if (failed(input))
    return failure();
  if (failed(checkSpatialRank(loc, *input, "input")))
    return failure();
  SmallVector<int64_t> shape{input->getDimSize(0), input->getDimSize(1)};
  if (failed(inferWindow(loc, input->getShape(), kernel, strides, padding,
                         dilations, shape)))
    return failure();
  // A window that starts inside the end padding sees no input.
  int64_t k = input->getRank() - 2;
  for (int64_t i = 0; i < k; ++i)
    if ((shape[2 + i] - 1) * strides[i] >= input->getDimSize(2 + i) + padding[i])
      return emitOptionalError(loc, "the last window along spatial dimension ",
                               2 + i, " lies entirely in the padding");
  inferred.push_back(RankedTensorType::get(
      shape, resultElement ? resultElement : input->getElementType()));
  return success();
}

LogicalResult MaxPoolIndicesOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  return poisonOnError(ctx, loc, inferred, 1, [&]() -> LogicalResult {
    return inferPool(loc, adaptor.getInput().getType(), adaptor.getKernel(),
                     adaptor.getStrides(), adaptor.getPadding(),
                     adaptor.getDilations(), inferred,
                     IntegerType::get(ctx, 64));
  });
}

LogicalResult MaxPoolOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return poisonOnError(ctx, loc, inferred, 1, [&]() -> LogicalResult {
    return inferPool(loc, adaptor.getInput().getType(), adaptor.getKernel(),
                     adaptor.getStrides(), adaptor.getPadding(),
                     adaptor.getDilations(), inferred);
  });
}

LogicalResult AvgPoolOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return poisonOnError(ctx, loc, inferred, 1, [&]() -> LogicalResult {
    SmallVector<int64_t> ones(adaptor.getKernel().size(), 1);
    return inferPool(loc, adaptor.getInput().getType(), adaptor.getKernel(),
                     adaptor.getStrides(), adaptor.getPadding(), ones, inferred);
  });
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  if (getInput().getType().getNumElements() !=
      getResult().getType().getNumElements())
    return emitOpError("cannot reshape ")
           << getInput().getType() << " ("
           << getInput().getType().getNumElements() << " elements) into "
           << getResult().getType() << " ("
           << getResult().getType().getNumElements() << " elements)";
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *ctx,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  return poisonOnError(ctx, loc, inferred, 1, [&]() -> LogicalResult {
    FailureOr<RankedTensorType> input =
        rankedType(loc, adaptor.getInput().getType(), "input");
    if (failed(input))
      return failure();
    ArrayRef<int64_t> perm = adaptor.getPermutation();
    if (static_cast<int64_t>(perm.size()) != input->getRank())
      return emitOptionalError(loc, "permutation has ", perm.size(),
                               " entries but the input has rank ",
                               input->getRank());
    if (failed(checkDims(loc, perm, input->getRank(), "permuted")))
      return failure();
    SmallVector<int64_t> shape;
    for (int64_t p : perm)
      shape.push_back(input->getDimSize(p));
    inferred.push_back(RankedTensorType::get(shape, input->getElementType()));
    return success();
  });
}

LogicalResult BroadcastOp::verify() {
  RankedTensorType in = getInput().getType(), out = getResult().getType();
  ArrayRef<int64_t> dims = getDims();
  if (static_cast<int64_t>(dims.size()) != in.getRank())
    return emitOpError("dims has ")
           << dims.size() << " entries but the input has rank "
           << in.getRank();
  for (auto [i, d] : llvm::enumerate(dims)) {
    if (d < 0 || d >= out.getRank())
      return emitOpError("dims entry ")
             << d << " is out of range for result rank " << out.getRank();
    if (i > 0 && d <= dims[i - 1])
      return emitOpError("dims must be strictly increasing");
    int64_t size = in.getDimSize(i);
    if (size != 1 && size != out.getDimSize(d))
      return emitOpError("input dimension ")
             << i << " (size " << size << ") cannot broadcast to result "
             << "dimension " << d << " (size " << out.getDimSize(d) << ")";
  }
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *ctx,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  return poisonOnError(ctx, loc, inferred, 1, [&]() -> LogicalResult {
    if (adaptor.getInputs().empty())
      return emitOptionalError(loc, "needs at least one operand");
    FailureOr<RankedTensorType> first =
        rankedType(loc, adaptor.getInputs().front().getType(), "operand");
    if (failed(first))
      return failure();
    int64_t rank = first->getRank();
    int64_t axis = adaptor.getAxis();
    if (axis < 0 || axis >= rank)
      return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                               rank);
    SmallVector<int64_t> shape(first->getShape());
    for (auto [i, v] : llvm::enumerate(adaptor.getInputs().drop_front())) {
      FailureOr<RankedTensorType> t = rankedType(loc, v.getType(), "operand");
      if (failed(t))
        return failure();
      if (t->getRank() != rank)
        return emitOptionalError(loc, "operand #", i + 1, " has rank ",
                                 t->getRank(), " but operand #0 has rank ", rank);
      for (int64_t d = 0; d < rank; ++d) {
        if (d == axis)
          continue;
        if (t->getDimSize(d) != shape[d])
          return emitOptionalError(loc, "operand #", i + 1, " has size ",
                                   t->getDimSize(d), " in dimension ", d,
                                   " but operand #0 has ", shape[d]);
      }
      shape[axis] += t->getDimSize(axis);
    }
    inferred.push_back(RankedTensorType::get(shape, first->getElementType()));
    return success();
  });
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *ctx,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  return poisonOnError(ctx, loc, inferred, 1, [&]() -> LogicalResult {
    FailureOr<RankedTensorType> input =
        rankedType(loc, adaptor.getInput().getType(), "input");
    if (failed(input))
      return failure();
    ArrayRef<int64_t> start = adaptor.getStart(), limit = adaptor.getLimit(),
                      stride = adaptor.getStride();
    int64_t rank = input->getRank();
    if (static_cast<int64_t>(start.size()) != rank ||
        static_cast<int64_t>(limit.size()) != rank ||
        static_cast<int64_t>(stride.size()) != rank)
      return emitOptionalError(loc, "needs one range per dimension (", rank,
                               "), got ", start.size());
    SmallVector<int64_t> shape;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t size = input->getDimSize(d);
      if (start[d] < 0 || start[d] > limit[d] || limit[d] > size)
        return emitOptionalError(loc, "range ", start[d], ":", limit[d],
                                 " of dimension ", d, " is not within [0, ",
                                 size, "] in increasing order");
      if (stride[d] < 1)
        return emitOptionalError(loc, "stride of dimension ", d,
                                 " must be positive, got ", stride[d]);
      shape.push_back(llvm::divideCeil(limit[d] - start[d], stride[d]));
    }
    inferred.push_back(RankedTensorType::get(shape, input->getElementType()));
    return success();
  });
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *ctx,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &inferred) {
  return poisonOnError(ctx, loc, inferred, 1, [&]() -> LogicalResult {
    FailureOr<RankedTensorType> input =
        rankedType(loc, adaptor.getInput().getType(), "input");
    FailureOr<RankedTensorType> indices =
        rankedType(loc, adaptor.getIndices().getType(), "indices");
    if (failed(input) || failed(indices))
      return failure();
    int64_t axis = adaptor.getAxis();
    if (axis < 0 || axis >= input->getRank())
      return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                               input->getRank());
    SmallVector<int64_t> shape(input->getShape().take_front(axis));
    llvm::append_range(shape, indices->getShape());
    llvm::append_range(shape, input->getShape().drop_front(axis + 1));
    inferred.push_back(RankedTensorType::get(shape, input->getElementType()));
    return success();
  });
}

LogicalResult ScatterAddOp::verify() {
  RankedTensorType updates = getUpdates().getType(), out = getType();
  ArrayRef<int64_t> idx = getIndices().getType().getShape();
  int64_t axis = getAxis();
  if (axis < 0 || axis >= out.getRank())
    return emitOpError("axis ") << axis << " is out of range for result rank "
                                << out.getRank();
  SmallVector<int64_t> expected(out.getShape().take_front(axis));
  llvm::append_range(expected, idx);
  llvm::append_range(expected, out.getShape().drop_front(axis + 1));
  if (updates.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("updates have shape [")
           << updates.getShape() << "] but result and indices need ["
           << ArrayRef<int64_t>(expected) << "]";
  return success();
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *ctx,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &inferred) {
  return poisonOnError(ctx, loc, inferred, 1, [&]() -> LogicalResult {
    FailureOr<RankedTensorType> input =
        rankedType(loc, adaptor.getInput().getType(), "input");
    if (failed(input))
      return failure();
    ArrayRef<int64_t> low = adaptor.getLow(), high = adaptor.getHigh();
    int64_t rank = input->getRank();
    if (static_cast<int64_t>(low.size()) != rank ||
        static_cast<int64_t>(high.size()) != rank)
      return emitOptionalError(loc, "needs ", rank,
                               " low and high padding amounts, got ", low.size(),
                               " and ", high.size());
    auto value = dyn_cast_or_null<TypedAttr>(adaptor.getValueAttr());
    if (!value || value.getType() != input->getElementType())
      return emitOptionalError(loc, "padding value must have the element type ",
                               input->getElementType());
    SmallVector<int64_t> shape;
    for (int64_t d = 0; d < rank; ++d) {
      if (low[d] < 0 || high[d] < 0)
        return emitOptionalError(loc, "padding amounts must be non-negative");
      shape.push_back(input->getDimSize(d) + low[d] + high[d]);
    }
    inferred.push_back(RankedTensorType::get(shape, input->getElementType()));
    return success();
  });
}

//===----------------------------------------------------------------------===//
// NN ops
//===----------------------------------------------------------------------===//

static LogicalResult verifyAxis(Operation *op, int64_t axis, int64_t rank) {
  if (axis < 0 || axis >= rank)
    return op->emitOpError("axis ")
           << axis << " is out of range for rank " << rank
           << " (axes are normalized to [0, rank))";
  return success();
}

LogicalResult SoftmaxOp::verify() {
  return verifyAxis(*this, getAxis(), getInput().getType().getRank());
}

LogicalResult LogSoftmaxOp::verify() {
  return verifyAxis(*this, getAxis(), getInput().getType().getRank());
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *ctx,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &inferred) {
  return poisonOnError(ctx, loc, inferred, 1, [&]() -> LogicalResult {
    FailureOr<RankedTensorType> input =
        rankedType(loc, adaptor.getInput().getType(), "input");
    FailureOr<RankedTensorType> scale =
        rankedType(loc, adaptor.getScale().getType(), "scale");
    FailureOr<RankedTensorType> bias =
        rankedType(loc, adaptor.getBias().getType(), "bias");
    if (failed(input) || failed(scale) || failed(bias))
      return failure();
    int64_t axis = adaptor.getAxis();
    if (axis < 0 || axis >= input->getRank())
      return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                               input->getRank());
    ArrayRef<int64_t> normalized = input->getShape().drop_front(axis);
    if (scale->getShape() != normalized || bias->getShape() != normalized)
      return emitOptionalError(loc,
                               "scale and bias must have the shape of the "
                               "normalized dimensions of ",
                               *input, " from axis ", axis, ", got ", *scale,
                               " and ", *bias);
    inferred.push_back(*input);
    return success();
  });
}

/// Checks an `[N, C, ...]` input and `[C]` per-channel vectors.
static LogicalResult checkBatchNormShapes(std::optional<Location> loc,
                                          Type inputType,
                                          ArrayRef<Type> vectors,
                                          RankedTensorType &input) {
  FailureOr<RankedTensorType> in = rankedType(loc, inputType, "input");
  if (failed(in))
    return failure();
  input = *in;
  if (input.getRank() < 2)
    return emitOptionalError(loc, "input must be [N, C, ...], got ", input);
  int64_t c = input.getDimSize(1);
  for (Type v : vectors) {
    auto t = dyn_cast<RankedTensorType>(v);
    if (!t || t.getRank() != 1 || t.getDimSize(0) != c)
      return emitOptionalError(loc, "per-channel operands must be [", c,
                               "], got ", v);
  }
  return success();
}

LogicalResult BatchNormInferenceOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  return poisonOnError(ctx, loc, inferred, 1, [&]() -> LogicalResult {
    RankedTensorType input;
    if (failed(checkBatchNormShapes(
            loc, adaptor.getInput().getType(),
            {adaptor.getScale().getType(), adaptor.getBias().getType(),
             adaptor.getMean().getType(), adaptor.getVariance().getType()},
            input)))
      return failure();
    inferred.push_back(input);
    return success();
  });
}

LogicalResult BatchNormTrainingOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  return poisonOnError(ctx, loc, inferred, 3, [&]() -> LogicalResult {
    RankedTensorType input;
    if (failed(checkBatchNormShapes(
            loc, adaptor.getInput().getType(),
            {adaptor.getScale().getType(), adaptor.getBias().getType()}, input)))
      return failure();
    auto stats =
        RankedTensorType::get({input.getDimSize(1)}, input.getElementType());
    inferred.append({input, stats, stats});
    return success();
  });
}

LogicalResult DropoutOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return poisonOnError(ctx, loc, inferred, 2, [&]() -> LogicalResult {
    FailureOr<RankedTensorType> input =
        rankedType(loc, adaptor.getInput().getType(), "input");
    if (failed(input))
      return failure();
    double ratio = adaptor.getRatio().convertToDouble();
    if (!(ratio >= 0.0 && ratio < 1.0))
      return emitOptionalError(loc, "ratio must be in [0, 1), got ", ratio);
    inferred.push_back(*input);
    inferred.push_back(input->clone(IntegerType::get(ctx, 1)));
    return success();
  });
}

static LogicalResult inferClassLoss(std::optional<Location> loc,
                                    Type inputType, Type labelsType,
                                    Value weight, LossReduction reduction,
                                    SmallVectorImpl<Type> &inferred) {
  FailureOr<RankedTensorType> input = rankedType(loc, inputType, "input");
  FailureOr<RankedTensorType> labels = rankedType(loc, labelsType, "labels");
  if (failed(input) || failed(labels))
    return failure();
  if (input->getRank() < 2)
    return emitOptionalError(loc, "input must be [N, C, d1, ...], got ",
                             *input);
  SmallVector<int64_t> expected{input->getDimSize(0)};
  llvm::append_range(expected, input->getShape().drop_front(2));
  if (labels->getShape() != ArrayRef<int64_t>(expected))
    return emitOptionalError(loc, "labels ", *labels,
                             " do not match input ", *input,
                             ": expected shape [N, d1, ...] = [",
                             llvm::make_range(expected.begin(), expected.end()),
                             "]");
  if (weight) {
    auto w = dyn_cast<RankedTensorType>(weight.getType());
    if (!w || w.getRank() != 1 || w.getDimSize(0) != input->getDimSize(1))
      return emitOptionalError(loc, "weight must be [C] = [",
                               input->getDimSize(1), "], got ",
                               weight.getType());
  }
  if (reduction == LossReduction::none)
    inferred.push_back(labels->clone(input->getElementType()));
  else
    inferred.push_back(RankedTensorType::get({}, input->getElementType()));
  return success();
}

LogicalResult CrossEntropyOp::inferReturnTypes(
    MLIRContext *ctx, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &inferred) {
  return poisonOnError(ctx, loc, inferred, 1, [&]() -> LogicalResult {
    return inferClassLoss(loc, adaptor.getInput().getType(),
                          adaptor.getLabels().getType(), adaptor.getWeight(),
                          adaptor.getReduction(), inferred);
  });
}

LogicalResult NllLossOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return poisonOnError(ctx, loc, inferred, 1, [&]() -> LogicalResult {
    return inferClassLoss(loc, adaptor.getInput().getType(),
                          adaptor.getLabels().getType(), adaptor.getWeight(),
                          adaptor.getReduction(), inferred);
  });
}

LogicalResult MseLossOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &inferred) {
  return poisonOnError(ctx, loc, inferred, 1, [&]() -> LogicalResult {
    FailureOr<RankedTensorType> input =
        rankedType(loc, adaptor.getInput().getType(), "input");
    if (failed(input))
      return failure();
    if (adaptor.getReduction() == LossReduction::none)
      inferred.push_back(*input);
    else
      inferred.push_back(RankedTensorType::get({}, input->getElementType()));
    return success();
  });
}

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

void PowOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                        MLIRContext *context) {
  results.add<SimplifyPowByConstant>(context);
}
