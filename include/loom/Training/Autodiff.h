//===- Autodiff.h - Reverse-mode differentiation of loom IR -----*- C++ -*-===//
//
// The reverse-mode engine behind loom-autodiff, loom-build-train-step and
// the ONNX `Gradient` op. It differentiates straight-line loom code in one
// block with the ops' DifferentiableOpInterface rules:
//
//   1. activity analysis: values that depend differentiably on `wrt`
//      (varied) and values `output` depends on (useful); only their
//      intersection gets gradients, so unused gradients are never built;
//   2. a reverse sweep over the block that calls each active op's rule and
//      sums gradients of values with several uses.
//
// A `wrt` value that reaches `output` only through ops without a gradient
// (an integer cast, an imported opaque op, a loss's class weights) is an
// error that names the op, not a silent zero.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECT_LOOM_TRANSFORMS_AUTODIFF_H
#define LOOM_DIALECT_LOOM_TRANSFORMS_AUTODIFF_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/SmallVector.h"
#include <functional>

namespace mlir::loom {

struct GradientOptions {
  /// The gradient flowing into `output` (its type). Null: ones, which for a
  /// scalar loss is d loss / d loss = 1.
  Value seed;
  /// Names `wrt[i]` in diagnostics ("parameter @fc1.weight").
  std::function<std::string(unsigned)> describe;
  /// Number each forward op whose rule runs (loom.op_id) and mark the ops
  /// the rule builds with it (loom.vjp_of), and name each gradient of a
  /// value an op made as that value's (loom.cotangent), for a planned
  /// partitioning.
  bool numberRules = false;
};

/// Builds d output / d wrt[i] at `builder`'s insertion point, which must be
/// in the block defining the forward computation and after every op it
/// uses. Returns one gradient per `wrt` value, null where `output` does not
/// depend on it. Fails with diagnostics on ops without a usable rule.
FailureOr<SmallVector<Value>> buildGradients(OpBuilder &builder, Value output,
                                             ArrayRef<Value> wrt,
                                             const GradientOptions &options = {});

/// Which of `from` the values `to` (all in `block`) depend on.
struct Dependence {
  /// Through any ops.
  llvm::BitVector reached;
  /// Through float values and ops with gradient rules: a gradient of `to`
  /// can reach them.
  llvm::BitVector differentiable;
};
Dependence analyzeDependence(Block &block, ArrayRef<Value> from, ValueRange to);

} // namespace mlir::loom

#endif // LOOM_DIALECT_LOOM_TRANSFORMS_AUTODIFF_H
