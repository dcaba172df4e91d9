//===- ShardingUtils.h - Factor shardings shared by propagation/partition -===//
//
// An op's sharding rule names factors; a *factor sharding* assigns each
// factor an ordered list of mesh axes. Tensor shardings map to factor
// shardings (a dimension's axes go to its factors, major first, while they
// divide) and back (a dimension's axes are its factors' axes in order;
// reduction factors with axes make results partial).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_LIB_DIALECT_LOOM_TRANSFORMS_SHARDINGUTILS_H
#define LOOM_LIB_DIALECT_LOOM_TRANSFORMS_SHARDINGUTILS_H

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Dialect/Loom/IR/ShardingRule.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::loom {

struct FactorSharding {
  explicit FactorSharding(const ShardingRule &rule, MeshOp mesh)
      : rule(rule), mesh(mesh), axes(rule.getNumFactors()) {}

  const ShardingRule &rule;
  MeshOp mesh;
  /// Axes of each factor, major to minor.
  SmallVector<SmallVector<StringRef, 2>> axes;
  llvm::StringSet<> used;

  int64_t axisSize(StringRef axis) const {
    MeshOp m = mesh;
    return m.getAxis(axis).getSize();
  }
  int64_t shards(int64_t factor) const {
    int64_t n = 1;
    for (StringRef a : axes[factor])
      n *= axisSize(a);
    return n;
  }

  /// Takes axes from `sharding`'s dimensions for the factors of `tensor`
  /// that are unassigned and of a kind in `kinds`. Returns whether anything
  /// was assigned. Axes already used by another factor are skipped, as are
  /// axes that do not divide what is left of the factor.
  bool absorb(const TensorFactors &tensor, ShardingAttr sharding,
              ArrayRef<FactorKind> kinds);

  /// Drops axes of factors that no tensor dimension can express: in a
  /// dimension made of several factors (a reshape's merged dimension), a
  /// minor factor may only be split when every more major one is split
  /// completely (otherwise the local block is strided, not a slice).
  /// Returns whether anything was dropped.
  bool legalize();

  /// The tensor sharding of `tensor` under this assignment; results
  /// (`isResult`) are partial over the axes of reduction factors.
  ShardingAttr project(const TensorFactors &tensor, bool isResult,
                       MLIRContext *ctx);
};

/// A fully replicated sharding of a tensor of `rank`.
ShardingAttr replicated(MeshOp mesh, int64_t rank);

/// The sharding of `value` recorded in the IR (op attribute, function
/// argument/result attribute), or null.
ShardingAttr recordedSharding(Value value);

/// The `loom.sharding` of result `i` of `op`, or null.
ShardingAttr opResultSharding(Operation *op, unsigned i);
void setOpResultShardings(Operation *op, ArrayRef<ShardingAttr> shardings);

/// The single mesh named by shardings in `fn` (or the module's only mesh).
FailureOr<MeshOp> findMesh(func::FuncOp fn);

/// The function a sharding pass works on (`name`, or the module's only
/// one) and its mesh (findMesh); errors name `pass`.
/// Results of a training step that are the next value of a parameter
/// (loom.param) take that parameter's sharding, so that the next step can
/// take them as they are.
void shardUpdatesLikeParameters(func::FuncOp fn);

struct ShardedFunction {
  func::FuncOp fn;
  MeshOp mesh;
};
FailureOr<ShardedFunction> lookupShardedFunction(ModuleOp module,
                                                 StringRef name,
                                                 StringRef pass);

/// Local (per-device) type of `global` under `sharding`; fails when a
/// dimension does not divide (`what` names the value in the error).
FailureOr<RankedTensorType> localType(RankedTensorType global,
                                      ShardingAttr sharding, MeshOp mesh,
                                      Location loc, const Twine &what);

} // namespace mlir::loom



namespace mlir::loom {

/// For ops linear in their operands (ShardingRule::getLinearity), the
/// partial sum (over the same axes) of operands can flow to the result
/// without a collective: returns the common partial axes when `shardings`
/// (one per operand, null for unknown) allow it — every operand partial
/// alike for a jointly linear op (add, concat, reshape...), one partial
/// linear operand and the rest whole for mul or div. Only sums qualify.
SmallVector<StringRef> linearPartial(const ShardingRule &rule,
                                     ArrayRef<ShardingAttr> shardings);
SmallVector<StringRef> linearPartial(Operation *op,
                                     ArrayRef<ShardingAttr> shardings);

/// `s` with partial sum axes `partial` (replacing any).
ShardingAttr withPartial(ShardingAttr s, ArrayRef<StringRef> partial);

} // namespace mlir::loom
#endif // LOOM_LIB_DIALECT_LOOM_TRANSFORMS_SHARDINGUTILS_H
