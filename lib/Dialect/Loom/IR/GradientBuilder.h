//===- GradientBuilder.h - Helpers for loom gradient rules ------*- C++ -*-===//
//
// A thin layer over ImplicitLocOpBuilder that the gradient rules
// (LoomGradients.cpp, LoomNNGradients.cpp) share: constants of a value's
// element type, numpy un-broadcasting, reductions that restore shapes.
// Everything it builds is ordinary loom ops, so backward passes are sharded
// and lowered like forward ones.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_LIB_DIALECT_LOOM_IR_GRADIENTBUILDER_H
#define LOOM_LIB_DIALECT_LOOM_IR_GRADIENTBUILDER_H

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::loom::detail {

class GradientBuilder {
public:
  GradientBuilder(OpBuilder &builder, Location loc) : b(loc, builder) {}

  ImplicitLocOpBuilder &builder() { return b; }

  static RankedTensorType typeOf(Value v) {
    return ::mlir::cast<RankedTensorType>(v.getType());
  }
  static ArrayRef<int64_t> shapeOf(Value v) { return typeOf(v).getShape(); }
  static Type elementOf(Value v) { return typeOf(v).getElementType(); }
  static bool isFloat(Value v) { return isa<FloatType>(elementOf(v)); }

  /// A rank-0 constant of element type `element` (broadcasts in binary ops).
  Value scalar(Type element, double value);
  /// A scalar constant of `like`'s element type.
  Value scalarLike(Value like, double value) {
    return scalar(elementOf(like), value);
  }
  /// A splat constant of `type`.
  Value splat(RankedTensorType type, double value);
  Value zerosLike(Value v) { return splat(typeOf(v), 0.0); }

  Value add(Value x, Value y) { return AddOp::create(b, x, y); }
  Value sub(Value x, Value y) { return SubOp::create(b, x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b, x, y); }
  Value div(Value x, Value y) { return DivOp::create(b, x, y); }
  Value neg(Value x) { return NegOp::create(b, x); }
  Value mul(Value x, double c) { return mul(x, scalarLike(x, c)); }
  Value compare(CompareDirection direction, Value x, Value y) {
    return CompareOp::create(b, direction, x, y);
  }
  Value select(Value c, Value x, Value y) {
    return SelectOp::create(b, c, x, y);
  }
  /// `condition ? x : 0`, shaped like the broadcast of both.
  Value where(Value condition, Value x) {
    return select(condition, x, scalarLike(x, 0.0));
  }
  Value castTo(Value v, Type element);

  Value reshape(Value v, ArrayRef<int64_t> shape);
  Value transpose(Value v, ArrayRef<int64_t> permutation);
  /// loom.broadcast of `v` into `shape`, operand dimension i -> dims[i].
  Value broadcast(Value v, ArrayRef<int64_t> shape, ArrayRef<int64_t> dims);
  /// Numpy broadcast of `v` to `shape` (trailing alignment).
  Value broadcastTo(Value v, ArrayRef<int64_t> shape);
  Value reduceSum(Value v, ArrayRef<int64_t> dims, bool keepdims = false);
  Value reduceMean(Value v, ArrayRef<int64_t> dims, bool keepdims = false);
  Value slice(Value v, ArrayRef<int64_t> start, ArrayRef<int64_t> limit,
              ArrayRef<int64_t> stride = {});
  Value pad(Value v, ArrayRef<int64_t> low, ArrayRef<int64_t> high);

  /// Sums `grad` (the gradient of a numpy-broadcast result) down to the
  /// shape of `type`.
  Value unbroadcast(Value grad, RankedTensorType type);

  /// Places `v` at every `stride`-th position of each dimension (zeros in
  /// between): size n becomes (n - 1) * stride + 1.
  Value dilate(Value v, ArrayRef<int64_t> strides);
  /// Pads with `low`/`high` zeros per dimension; negative amounts crop.
  Value padOrCrop(Value v, ArrayRef<int64_t> low, ArrayRef<int64_t> high);
  /// Reverses `v` along `dims`.
  Value reverse(Value v, ArrayRef<int64_t> dims);

private:
  ImplicitLocOpBuilder b;
};

/// The common shape of a rule: one GradientBuilder at the op, operand
/// gradients reset to null.
struct Rule {
  Operation *op;
  GradientBuilder g;
  SmallVectorImpl<Value> &grads;
  Rule(Operation *op, OpBuilder &builder, SmallVectorImpl<Value> &grads)
      : op(op), g(builder, op->getLoc()), grads(grads) {
    grads.assign(op->getNumOperands(), Value());
  }
  Value operand(unsigned i) { return op->getOperand(i); }
  /// Sets operand i's gradient from a possibly broadcast-shaped value.
  void set(unsigned i, Value grad) {
    grads[i] = g.unbroadcast(grad, GradientBuilder::typeOf(operand(i)));
  }
};

/// For ops with one differentiable operand (#0): `body(g, dy)` builds its
/// gradient when one flows into result #0 and operand 0 wants one.
template <typename Fn>
LogicalResult inputGradient(Operation *op, OpBuilder &builder,
                            ValueRange resultGrads, ArrayRef<bool> wanted,
                            SmallVectorImpl<Value> &grads, Fn &&body) {
  Rule r(op, builder, grads);
  if (wanted[0] && resultGrads[0])
    grads[0] = body(r.g, resultGrads[0]);
  return success();
}

/// Gradient of `loom.conv` with respect to its input: a transposed
/// convolution of `grad` with `filter`.
Value convInputGradient(GradientBuilder &g, Value grad, Value filter,
                        RankedTensorType inputType, ArrayRef<int64_t> strides,
                        ArrayRef<int64_t> padding, ArrayRef<int64_t> dilations,
                        int64_t groups);

} // namespace mlir::loom::detail

#endif // LOOM_LIB_DIALECT_LOOM_IR_GRADIENTBUILDER_H
