//===- LoomTraits.h - Traits of loom ops ------------------------*- C++ -*-===//
//
// What each trait means is written in LoomInterfaces.td, where ODS declares
// them; passes ask `op->hasTrait<...>()` instead of listing op kinds.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECT_LOOM_IR_LOOMTRAITS_H
#define LOOM_DIALECT_LOOM_IR_LOOMTRAITS_H

#include "mlir/IR/OpDefinition.h"

#include <type_traits>

namespace mlir::OpTrait::loom {

/// The gradient rule reads operand i when bit i of OperandMask is set, and
/// result i when bit i of ResultMask is.
template <unsigned OperandMask, unsigned ResultMask>
struct SavesForBackward {
  template <typename ConcreteType>
  class Impl : public TraitBase<ConcreteType, Impl> {
  public:
    static constexpr unsigned kSavedOperands = OperandMask;
    static constexpr unsigned kSavedResults = ResultMask;
  };
};
template <typename ConcreteType>
class ComputesOnSlices : public TraitBase<ConcreteType, ComputesOnSlices> {};
template <typename ConcreteType>
class Relayout : public TraitBase<ConcreteType, Relayout> {};

} // namespace mlir::OpTrait::loom

namespace mlir::loom::detail {

template <typename OpT, typename = void>
struct SavedMasks {
  static constexpr unsigned operands = 0, results = 0;
};
template <typename OpT>
struct SavedMasks<OpT, std::void_t<decltype(OpT::kSavedOperands)>> {
  static constexpr unsigned operands = OpT::kSavedOperands;
  static constexpr unsigned results = OpT::kSavedResults;
};

/// The default of DifferentiableOpInterface::getSavedForBackward: the
/// values the op's SavesForBackward trait names (none without one).
template <typename OpT>
void appendSavedForBackward(Operation *op, SmallVectorImpl<Value> &saved) {
  for (unsigned i = 0, e = op->getNumOperands(); i < e && i < 32; ++i)
    if (SavedMasks<OpT>::operands >> i & 1)
      saved.push_back(op->getOperand(i));
  for (unsigned i = 0, e = op->getNumResults(); i < e && i < 32; ++i)
    if (SavedMasks<OpT>::results >> i & 1)
      saved.push_back(op->getResult(i));
}

} // namespace mlir::loom::detail

#endif // LOOM_DIALECT_LOOM_IR_LOOMTRAITS_H
