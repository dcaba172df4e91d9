//===- InferTypes.h - Shared pieces of loom ops' type inference -*- C++ -*-===//
//
// Private to lib/Dialect/Loom/IR: shape rules (numpy broadcasting,
// dimension lists, convolution windows) used by the ops' inferReturnTypes,
// and the policy every inference follows (poisonOnError, applied by
// LOOM_INFER_TYPES).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_LIB_DIALECT_LOOM_IR_INFERTYPES_H
#define LOOM_LIB_DIALECT_LOOM_IR_INFERTYPES_H

#include "loom/Dialect/Loom/IR/LoomOps.h"

#include <optional>

namespace mlir::loom::detail {

FailureOr<RankedTensorType> rankedType(std::optional<Location> loc, Type type,
                                       StringRef what);

/// Numpy/ONNX multidirectional broadcasting of `types`.
LogicalResult broadcastShapes(std::optional<Location> loc, ArrayRef<Type> types,
                              SmallVectorImpl<int64_t> &shape);

/// Checks that `dims` are valid, unique dimension indices of a rank-`rank`
/// tensor.
LogicalResult checkDims(std::optional<Location> loc, ArrayRef<int64_t> dims,
                        int64_t rank, StringRef what);

/// Shared checks of conv/pool window attributes over the spatial dimensions
/// of `inputShape` (all but the first two); appends the output sizes.
LogicalResult inferWindow(std::optional<Location> loc,
                          ArrayRef<int64_t> inputShape,
                          ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                          ArrayRef<int64_t> padding,
                          ArrayRef<int64_t> dilations,
                          SmallVectorImpl<int64_t> &out);

/// Windowed ops take 1 to 3 spatial dimensions.
LogicalResult checkSpatialRank(std::optional<Location> loc,
                               RankedTensorType type, StringRef what);

/// Result-type inference policy. Called without a location (a query),
/// inference fails silently. Called with one (from a builder or the
/// verifier), it emits the reason and yields `tensor<none>` result types
/// instead of failing: a builder then never aborts the process on bad
/// operands, the op's typed result accessors (RankedTensorType) stay valid
/// for the caller that goes on until it checks for errors, and the verifier
/// still rejects the op because `tensor<none>` is not its declared type.
template <typename Fn>
LogicalResult poisonOnError(MLIRContext *ctx,
                                   std::optional<Location> loc,
                                   SmallVectorImpl<Type> &inferred,
                                   unsigned numResults, Fn &&infer) {
  size_t before = inferred.size();
  if (succeeded(infer()))
    return success();
  if (!loc)
    return failure();
  inferred.resize(before);
  inferred.append(numResults, RankedTensorType::get({}, NoneType::get(ctx)));
  return success();
}

} // namespace mlir::loom::detail

/// Defines OP::inferReturnTypes as INFER(ctx, loc, adaptor, inferred), a
/// function of the op's adaptor, under the poisonOnError policy for an op
/// of N results.
#define LOOM_INFER_TYPES(OP, N, INFER)                                         \
  ::llvm::LogicalResult OP::inferReturnTypes(                                  \
      ::mlir::MLIRContext *ctx, std::optional<::mlir::Location> loc,          \
      Adaptor adaptor, ::llvm::SmallVectorImpl<::mlir::Type> &inferred) {      \
    return ::mlir::loom::detail::poisonOnError(                                \
        ctx, loc, inferred, N,                                                 \
        [&] { return INFER(ctx, loc, adaptor, inferred); });                   \
  }

#endif // LOOM_LIB_DIALECT_LOOM_IR_INFERTYPES_H
