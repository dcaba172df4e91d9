//===- LoomStructuredOps.cpp - Contractions, reductions, windows ------------===//
//
// Type inference and builders of dot_general, the reductions, conv and
// pooling (LoomStructuredOps.td).
//
//===----------------------------------------------------------------------===//

#include "InferTypes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::detail;

//===----------------------------------------------------------------------===//
// Contraction and reductions
//===----------------------------------------------------------------------===//

static LogicalResult inferDotGeneral(MLIRContext *ctx, std::optional<Location> loc,
                                    DotGeneralOp::Adaptor adaptor,
                                    SmallVectorImpl<Type> &inferred) {
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
}
LOOM_INFER_TYPES(DotGeneralOp, 1, inferDotGeneral)

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

template <typename OpT>
static LogicalResult inferReduceOp(MLIRContext *, std::optional<Location> loc,
                                   typename OpT::Adaptor adaptor,
                                   SmallVectorImpl<Type> &inferred) {
  return inferReduce(loc, adaptor.getInput().getType(), adaptor.getDims(),
                     adaptor.getKeepdims(), inferred);
}
#define LOOM_REDUCE_INFER(OP) LOOM_INFER_TYPES(OP, 1, inferReduceOp<OP>)
LOOM_REDUCE_INFER(ReduceSumOp)
LOOM_REDUCE_INFER(ReduceMeanOp)
LOOM_REDUCE_INFER(ReduceMaxOp)
LOOM_REDUCE_INFER(ReduceMinOp)
LOOM_REDUCE_INFER(ReduceProdOp)
#undef LOOM_REDUCE_INFER

//===----------------------------------------------------------------------===//
// Windowed ops
//===----------------------------------------------------------------------===//

static LogicalResult inferConv(MLIRContext *ctx, std::optional<Location> loc,
                              ConvOp::Adaptor adaptor,
                              SmallVectorImpl<Type> &inferred) {
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
}
LOOM_INFER_TYPES(ConvOp, 1, inferConv)

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

static LogicalResult inferMaxPoolIndices(MLIRContext *ctx, std::optional<Location> loc,
                                        MaxPoolIndicesOp::Adaptor adaptor,
                                        SmallVectorImpl<Type> &inferred) {
  return inferPool(loc, adaptor.getInput().getType(), adaptor.getKernel(),
                   adaptor.getStrides(), adaptor.getPadding(),
                   adaptor.getDilations(), inferred,
                   IntegerType::get(ctx, 64));
}
LOOM_INFER_TYPES(MaxPoolIndicesOp, 1, inferMaxPoolIndices)

static LogicalResult inferMaxPool(MLIRContext *ctx, std::optional<Location> loc,
                                 MaxPoolOp::Adaptor adaptor,
                                 SmallVectorImpl<Type> &inferred) {
  return inferPool(loc, adaptor.getInput().getType(), adaptor.getKernel(),
                   adaptor.getStrides(), adaptor.getPadding(),
                   adaptor.getDilations(), inferred);
}
LOOM_INFER_TYPES(MaxPoolOp, 1, inferMaxPool)

static LogicalResult inferAvgPool(MLIRContext *ctx, std::optional<Location> loc,
                                 AvgPoolOp::Adaptor adaptor,
                                 SmallVectorImpl<Type> &inferred) {
  SmallVector<int64_t> ones(adaptor.getKernel().size(), 1);
  return inferPool(loc, adaptor.getInput().getType(), adaptor.getKernel(),
                   adaptor.getStrides(), adaptor.getPadding(), ones, inferred);
}
LOOM_INFER_TYPES(AvgPoolOp, 1, inferAvgPool)

