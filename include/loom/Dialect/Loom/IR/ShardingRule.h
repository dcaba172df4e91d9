//===- ShardingRule.h - Einsum-like factor rules for sharding ---*- C++ -*-===//
//
// The data behind ShardingRuleOpInterface. A rule describes an op's
// iteration space as factors; every tensor dimension of the op is a product of
// factors. Propagation and partitioning read rules; they never look at op
// kinds.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECT_LOOM_IR_SHARDINGRULE_H
#define LOOM_DIALECT_LOOM_IR_SHARDINGRULE_H

#include "loom/Dialect/Loom/IR/LoomEnums.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include <string>

namespace mlir::loom {

enum class FactorKind {
  /// Splitting splits every dimension that holds the factor; no
  /// communication.
  Parallel,
  /// Appears only in operands; splitting leaves partial results that combine
  /// with the factor's reduction kind.
  Reduction,
  /// Must not be split.
  Replicated,
};

struct ShardingFactor {
  int64_t size;
  FactorKind kind;
  /// Meaningful for FactorKind::Reduction only.
  ReductionKind reduction = ReductionKind::sum;
  /// The op divides by this factor's size (a mean over it): split, each
  /// device computes a local mean, which the partitioner scales by 1/shards
  /// so that the partial results sum to the global mean.
  bool averaged = false;
};

/// How partial sums may pass through an op without being reduced first.
enum class Linearity {
  /// They may not: a partial operand is reduced before the op.
  None,
  /// The op is linear in all its operands together (add, concat, reshape,
  /// reduce_sum): when every operand is a partial sum over the same axes,
  /// so is the result.
  Joint,
  /// The op is linear in each operand of `getLinearOperands()` while the
  /// others stay fixed (mul in either, div in its dividend): one partial
  /// operand with every other operand whole gives a partial result.
  PerOperand,
};

/// Factors of one tensor dimension, major to minor. Empty for a size-1
/// dimension that maps to no factor (broadcast).
using DimFactors = llvm::SmallVector<int64_t, 2>;
/// Factors of every dimension of one tensor (empty for scalars and for
/// non-tensor values).
using TensorFactors = llvm::SmallVector<DimFactors, 4>;

class ShardingRule {
public:
  /// Adds a factor and returns its index.
  int64_t addFactor(int64_t size, FactorKind kind,
                    ReductionKind reduction = ReductionKind::sum);
  void setAveraged(int64_t factor) { factors[factor].averaged = true; }

  //===--------------------------------------------------------------------===//
  // What else passes need to know (instead of switching on op kinds).
  //===--------------------------------------------------------------------===//

  /// The op multiply-accumulates over its reduction factors (a matmul, a
  /// convolution): two flops per point, and the planner names the mesh
  /// axes that split its weights "tp".
  void setContraction() { contraction = true; }
  bool isContraction() const { return contraction; }
  /// Floating-point operations of the whole op; by default the points of
  /// the iteration space (the product of the factor sizes), twice that for
  /// a contraction. Split over factors, each device does its share.
  void setFlops(double value) { flops = value; }
  double getFlops() const;
  /// The per-device op would not compute a slice of the global op whatever
  /// is split (its results depend on global element positions: dropout
  /// masks, pooling indices): the partitioner gives it whole tensors and
  /// the planner plans it so.
  void setNeedsWholeTensors() { wholeTensors = true; }
  bool needsWholeTensors() const { return wholeTensors; }
  void setLinearity(Linearity kind, llvm::ArrayRef<unsigned> operands = {}) {
    linearity = kind;
    linearOperands.assign(operands.begin(), operands.end());
  }
  Linearity getLinearity() const { return linearity; }
  llvm::ArrayRef<unsigned> getLinearOperands() const { return linearOperands; }
  void addOperand(TensorFactors dims) { operands.push_back(std::move(dims)); }
  void addResult(TensorFactors dims) { results.push_back(std::move(dims)); }

  llvm::ArrayRef<ShardingFactor> getFactors() const { return factors; }
  const ShardingFactor &getFactor(int64_t i) const { return factors[i]; }
  int64_t getNumFactors() const { return factors.size(); }
  llvm::ArrayRef<TensorFactors> getOperands() const { return operands; }
  llvm::ArrayRef<TensorFactors> getResults() const { return results; }

  /// Checks the rule against `op`'s types: one entry per operand and
  /// result, factor sizes multiply to dimension sizes, reduction factors
  /// appear in no result, every factor is used. Emits an error on `op`.
  llvm::LogicalResult verify(Operation *op) const;

  /// `([i, j], [j, k]) -> ([i, k]) {i=4, j=8, k=16} reduction={j:sum}`.
  void print(llvm::raw_ostream &os) const;
  std::string str() const;
  /// Name used for factor `i` in print(): i, j, k, ..., then f26, f27, ...
  static std::string factorName(int64_t i);

  //===--------------------------------------------------------------------===//
  // Rules shared by several ops.
  //===--------------------------------------------------------------------===//

  /// Numpy-broadcasting elementwise op: one parallel factor per result
  /// dimension; operand dimensions of size 1 that broadcast get none.
  static ShardingRule elementwise(Operation *op);
  /// `op` has one operand and one result; dimension `i` of the operand is
  /// dimension `perm[i]`... of the result: result dim `r` holds operand dim
  /// `perm[r]`. Dimensions in `replicated` get separate replicated factors
  /// on operand and result.
  static ShardingRule permutation(Operation *op, llvm::ArrayRef<int64_t> perm);
  /// Row-major reshape between two shapes: aligned prefixes share factors;
  /// parts that do not factor become replicated.
  static ShardingRule reshape(Operation *op);

private:
  bool contraction = false, wholeTensors = false;
  double flops = -1;
  Linearity linearity = Linearity::None;
  llvm::SmallVector<unsigned, 2> linearOperands;
  llvm::SmallVector<ShardingFactor> factors;
  llvm::SmallVector<TensorFactors> operands;
  llvm::SmallVector<TensorFactors> results;
};

inline llvm::raw_ostream &operator<<(llvm::raw_ostream &os,
                                     const ShardingRule &rule) {
  rule.print(os);
  return os;
}

} // namespace mlir::loom

#endif // LOOM_DIALECT_LOOM_IR_SHARDINGRULE_H
