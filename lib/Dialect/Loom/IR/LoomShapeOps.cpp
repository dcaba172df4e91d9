//===- LoomShapeOps.cpp - Shape ops -----------------------------------------===//
//
// Type inference and verifiers of reshape, transpose, broadcast, concat,
// slice, gather, scatter_add and pad (LoomShapeOps.td).
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

static LogicalResult inferTranspose(MLIRContext *ctx, std::optional<Location> loc,
                                   TransposeOp::Adaptor adaptor,
                                   SmallVectorImpl<Type> &inferred) {
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
}
LOOM_INFER_TYPES(TransposeOp, 1, inferTranspose)

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

static LogicalResult inferConcat(MLIRContext *ctx, std::optional<Location> loc,
                                ConcatOp::Adaptor adaptor,
                                SmallVectorImpl<Type> &inferred) {
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
}
LOOM_INFER_TYPES(ConcatOp, 1, inferConcat)

static LogicalResult inferSlice(MLIRContext *ctx, std::optional<Location> loc,
                               SliceOp::Adaptor adaptor,
                               SmallVectorImpl<Type> &inferred) {
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
}
LOOM_INFER_TYPES(SliceOp, 1, inferSlice)

static LogicalResult inferGather(MLIRContext *ctx, std::optional<Location> loc,
                                GatherOp::Adaptor adaptor,
                                SmallVectorImpl<Type> &inferred) {
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
}
LOOM_INFER_TYPES(GatherOp, 1, inferGather)

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

LogicalResult TopKIndicesOp::verify() {
  RankedTensorType in = getInput().getType(), out = getType();
  if (in.getRank() != 1)
    return emitOpError("input must be 1-D, got rank ") << in.getRank();
  int64_t n = in.getDimSize(0), k = getK();
  if (k < 1 || k > n)
    return emitOpError("k = ") << k << " must be in [1, " << n << "]";
  Type index = out.getElementType();
  if (out.getRank() != 1 || out.getDimSize(0) != k ||
      !(index.isInteger(64) || (index.isInteger(32) && n <= INT32_MAX)))
    return emitOpError("result must be tensor<")
           << k << "xi64> (or xi32 for at most 2^31 - 1 elements), got "
           << out;
  return success();
}

static LogicalResult inferPad(MLIRContext *ctx, std::optional<Location> loc,
                             PadOp::Adaptor adaptor,
                             SmallVectorImpl<Type> &inferred) {
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
}
LOOM_INFER_TYPES(PadOp, 1, inferPad)

