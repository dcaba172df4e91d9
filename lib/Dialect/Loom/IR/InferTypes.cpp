//===- InferTypes.cpp - Shared pieces of loom ops' type inference ---------===//

#include "InferTypes.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace mlir::loom;

FailureOr<RankedTensorType> mlir::loom::detail::rankedType(std::optional<Location> loc,
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
LogicalResult mlir::loom::detail::broadcastShapes(std::optional<Location> loc,
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
LogicalResult mlir::loom::detail::checkDims(std::optional<Location> loc,
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

/// The output size of a window over `in`; nullopt when the arithmetic on
/// these sizes (from a file) overflows 64 bits.
static std::optional<int64_t> windowOutputSize(int64_t in, int64_t padLo,
                                               int64_t padHi, int64_t kernel,
                                               int64_t stride,
                                               int64_t dilation) {
  int64_t effective, padded, span;
  if (__builtin_mul_overflow(dilation, kernel - 1, &effective) ||
      __builtin_add_overflow(effective, int64_t(1), &effective) ||
      __builtin_add_overflow(in, padLo, &padded) ||
      __builtin_add_overflow(padded, padHi, &padded) ||
      __builtin_sub_overflow(padded, effective, &span))
    return std::nullopt;
  if (span < 0)
    return 0;
  return span / stride + 1;
}

/// Shared checks of conv/pool window attributes over the spatial dimensions
/// of `inputShape` (all but the first two); appends the output sizes.
LogicalResult mlir::loom::detail::inferWindow(std::optional<Location> loc,
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
    std::optional<int64_t> size =
        windowOutputSize(inputShape[2 + i], padding[i], padding[k + i],
                         kernel[i], strides[i], dilations[i]);
    if (!size)
      return emitOptionalError(loc, "window of size ", kernel[i],
                               " (dilation ", dilations[i],
                               ") with its padding over spatial dimension ",
                               2 + i, " of size ", inputShape[2 + i],
                               " overflows 64-bit sizes");
    if (*size < 1)
      return emitOptionalError(loc, "window of size ", kernel[i],
                               " (dilation ", dilations[i],
                               ") does not fit spatial dimension ", 2 + i,
                               " of size ", inputShape[2 + i],
                               " with its padding");
    out.push_back(*size);
  }
  return success();
}

/// Windowed ops take 1 to 3 spatial dimensions.
LogicalResult mlir::loom::detail::checkSpatialRank(std::optional<Location> loc,
                                      RankedTensorType type, StringRef what) {
  if (type.getRank() < 3 || type.getRank() > 5)
    return emitOptionalError(loc, "expects a channels-first ", what,
                             " [N, C, D1...Dk] with 1 to 3 spatial "
                             "dimensions, got ",
                             type);
  return success();
}
