//===- Common.h - Shared helpers of the loom -> linalg lowering -*- C++ -*-===//

#ifndef LOOM_LIB_CONVERSION_LOOMTOLINALG_COMMON_H
#define LOOM_LIB_CONVERSION_LOOMTOLINALG_COMMON_H

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::loom::lowering {

/// Unsigned integers become signless of the same width (arith and linalg
/// need signless types); the op's original element type says which
/// arithmetic to use.
class LoomTypeConverter : public TypeConverter {
public:
  LoomTypeConverter();
};

Type signless(Type element);

/// Scalar arithmetic with the semantics of a loom element type (float,
/// signed or unsigned integer, i1), on values of its signless counterpart.
struct Scalar {
  OpBuilder &b;
  Location loc;
  Type element; // original (possibly unsigned) element type

  bool isFloat() const { return isa<FloatType>(element); }
  bool isUnsigned() const { return element.isUnsignedInteger(); }
  Type type() const { return signless(element); }

  Value constant(double v) const;
  Value add(Value x, Value y) const;
  Value sub(Value x, Value y) const;
  Value mul(Value x, Value y) const;
  Value div(Value x, Value y) const;
  Value max(Value x, Value y) const;
  Value min(Value x, Value y) const;
  Value neg(Value x) const;
  Value abs(Value x) const;
  Value pow(Value x, Value y) const;
  /// Comparison with loom semantics (ordered floats except ne).
  Value compare(CompareDirection direction, Value x, Value y) const;
  Value select(Value c, Value x, Value y) const;
  /// Converts `x` of this element type to `to` (with its semantics).
  Value convert(Value x, Type to) const;
  /// The identity of a reduction (0, -inf/min, +inf/max, 1).
  Value identity(ReductionKind kind) const;
  Value combine(ReductionKind kind, Value x, Value y) const;
};

/// Maps a value of shape `operand` into an iteration space of shape
/// `result` with numpy broadcasting (trailing alignment; size-1 operand
/// dimensions read index 0).
AffineMap broadcastMap(MLIRContext *ctx, ArrayRef<int64_t> operand,
                       ArrayRef<int64_t> result);

/// `tensor.empty` of the given shape and (signless) element type.
Value emptyTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                  Type element);
Value filledTensor(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                   Value scalar);

using BodyFn = function_ref<Value(OpBuilder &, Location, ValueRange)>;
/// A parallel linalg.generic producing `shape` x `element` from broadcast
/// inputs; `body` maps the input scalars to the result scalar.
Value elementwise(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                  Type element, ValueRange inputs, BodyFn body);
/// As above with several results.
SmallVector<Value> elementwiseN(OpBuilder &b, Location loc,
                                ArrayRef<int64_t> shape,
                                TypeRange elements, ValueRange inputs,
                                function_ref<SmallVector<Value>(
                                    OpBuilder &, Location, ValueRange)> body);

/// The type sums and products of `element` accumulate in: f32 for 16-bit
/// floats (as PyTorch's CPU kernels and cuBLAS accumulate bf16/f16), else
/// `element` itself.
Type accumulatorType(Type element);
/// Converts every element of `v` from `from` to `to` (no-op when equal).
Value convertTensor(OpBuilder &b, Location loc, Value v, Type from, Type to);

/// A reduction over `dims` whose value is computed from its inputs in the
/// reduction's own body: `full` inputs have the reduced tensor's shape,
/// `rows` the result's (one value per output element, e.g. a row's
/// maximum). Nothing between the inputs and the reduction is
/// materialized: a softmax's `exp(x - max)` and a variance's squares are
/// computed where they are summed (as every framework's fused kernels do),
/// in `acc`. The result drops the reduced dimensions.
Value reduceOf(OpBuilder &b, Location loc, ValueRange full, ValueRange rows,
               ArrayRef<int64_t> dims, ReductionKind kind, Type acc,
               BodyFn value);
/// Reduces `input` over `dims` (sorted) with `kind`; the result drops the
/// reduced dimensions. `element` is the original element type. Sums and
/// products of 16-bit floats accumulate in f32; the result is rounded back
/// to `element` unless `wide` (then it stays in accumulatorType(element)).
Value reduce(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> dims,
             ReductionKind kind, Type element, bool wide = false);
/// Reinserts size-1 dimensions at `dims` (the inverse of a reduction's
/// shape change), for keepdims and broadcasting back.
Value keepDims(OpBuilder &b, Location loc, Value reduced,
               ArrayRef<int64_t> fullShape, ArrayRef<int64_t> dims);
/// Row-major reshape of a static tensor (collapse/expand when possible).
Value reshape(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape);

/// Declares the external function `name` of `type` with the C interface
/// (`_mlir_ciface_` + name: runtime/include/loom/kernels.h), once per
/// module.
void declare(OpBuilder &b, Operation *anchor, StringRef name,
             FunctionType type);

inline RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}
inline ArrayRef<int64_t> shapeOf(Value v) { return tensorType(v).getShape(); }

void populateElementwisePatterns(LoomTypeConverter &converter,
                                 RewritePatternSet &patterns);
/// `convAsGemm`, `convLibrary`: see loom-convert-to-linalg's conv-as-gemm
/// and conv-library options;
/// `gatherPoolGradients`: max-pool gradients gathered per input element
/// (the scatter-threads option, the CUDA pipelines).
void populateStructuredPatterns(LoomTypeConverter &converter,
                                RewritePatternSet &patterns,
                                bool convAsGemm = false,
                                bool gatherPoolGradients = false,
                                bool convLibrary = false);
/// `scatterThreads`: see loom-convert-to-linalg's scatter-threads option.
void populateShapePatterns(LoomTypeConverter &converter,
                           RewritePatternSet &patterns,
                           int64_t scatterThreads = 0);
void populateNNPatterns(LoomTypeConverter &converter,
                        RewritePatternSet &patterns);
void populateCollectivePatterns(LoomTypeConverter &converter,
                                RewritePatternSet &patterns);

} // namespace mlir::loom::lowering

#endif // LOOM_LIB_CONVERSION_LOOMTOLINALG_COMMON_H
