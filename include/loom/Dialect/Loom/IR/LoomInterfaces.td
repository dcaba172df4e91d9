//===- LoomInterfaces.td - Loom op interfaces --------------*- tablegen -*-===//

#ifndef LOOM_DIALECT_LOOM_IR_LOOMINTERFACES_TD
#define LOOM_DIALECT_LOOM_IR_LOOMINTERFACES_TD

include "mlir/IR/OpBase.td"

//===----------------------------------------------------------------------===//
// Traits (LoomTraits.h): facts about an op that passes ask for instead of
// listing op kinds.
//===----------------------------------------------------------------------===//

class Loom_NativeTrait<string name> : NativeOpTrait<name> {
  let cppNamespace = "::mlir::OpTrait::loom";
}

// The gradient rule reads these operands and results of the op (indices;
// an index past the op's operands, such as an absent optional one, reads
// nothing): DifferentiableOpInterface::getSavedForBackward returns them.
class Loom_Saves<list<int> operands, list<int> results = []>
    : ParamNativeOpTrait<"SavesForBackward",
          !cast<string>(!foldl(0, operands, acc, i, !or(acc, !shl(1, i)))) # ", " #
          !cast<string>(!foldl(0, results, acc, i, !or(acc, !shl(1, i))))> {
  let cppNamespace = "::mlir::OpTrait::loom";
}

// Computes any block of its result from the same block of its operands
// along every parallel factor of its sharding rule, with no attribute that
// names a global size: the partitioner may run it on slices (so that work
// after a reduction moves onto shards, as ZeRO's optimizer does).
def Loom_ComputesOnSlices : Loom_NativeTrait<"ComputesOnSlices">;

// The result holds the operand's elements, rearranged (transpose, reshape)
// or converted one to one (cast): a weight read through it is still the
// weight (the partitioner keeps computation with the activations; the
// planner names the axes a weight is split over).
def Loom_Relayout : Loom_NativeTrait<"Relayout">;

def Loom_ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let cppNamespace = "::mlir::loom";
  let description = [{
    How an op may be sharded, as a factor rule in the style of Shardy's
    `OpShardingRuleAttr`: the op's iteration space is a set of named factors
    with sizes; every dimension of every tensor operand and result is the
    product of an ordered list of factors (major to minor; no factor for a
    size-1 broadcast dimension). A factor is

    * `parallel`: splitting it splits every operand/result dimension that
      contains it, with no communication;
    * `reduction`: it appears only in operands; splitting it leaves each
      device with a partial result that combines with the factor's
      reduction kind (`sum`, `max`, `min`);
    * `replicated`: it must not be split (a softmax axis, a convolution's
      spatial window, a reshaped dimension that does not factor).

    Printed form, e.g. for a batched matmul:
    `([b, m, k], [b, k, n]) -> ([b, m, n]) {b=2, m=4, k=8, n=16} reduction={k:sum}`
  }];
  let methods = [
    InterfaceMethod<
      /*desc=*/"Returns the op's factor rule over its current types.",
      /*retTy=*/"::mlir::loom::ShardingRule",
      /*methodName=*/"getShardingRule",
      /*args=*/(ins)>,
    InterfaceMethod<
      /*desc=*/[{
        Called by the partitioner on the per-device copy of the op once its
        operands and results have local types (`globalOperandTypes` are the
        operands' global ones): updates attributes that name global sizes
        (a slice's limits). Most ops have none.
      }],
      /*retTy=*/"void",
      /*methodName=*/"adaptToLocalTypes",
      /*args=*/(ins "::mlir::TypeRange":$globalOperandTypes),
      /*methodBody=*/"",
      /*defaultImplementation=*/"(void)globalOperandTypes;">,
  ];
}

def Loom_DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let cppNamespace = "::mlir::loom";
  let description = [{
    The op's reverse-mode gradient rule, used by `loom-autodiff`. Given the
    gradients flowing into its results, the op builds (with loom ops, after
    itself) the gradients of the operands that are asked for. Only float
    operands have gradients; an op whose float operand has no gradient
    (a loss's class weights, ...) says so with `isDifferentiableOperand`.
  }];
  let methods = [
    InterfaceMethod<
      /*desc=*/"Whether a gradient can flow to float operand `index`.",
      /*retTy=*/"bool",
      /*methodName=*/"isDifferentiableOperand",
      /*args=*/(ins "unsigned":$index),
      /*methodBody=*/"",
      /*defaultImplementation=*/[{ return true; }]>,
    InterfaceMethod<
      /*desc=*/[{
        Appends the forward values (operands and results of this op) that
        the gradient rule reads: the backward pass keeps them alive, or a
        rematerialized step recomputes them. The default reads the op's
        `Loom_Saves<[operands], [results]>` trait; a unit test
        (GradientCheck.SavesWhatTheRuleReads) checks every rule against the
        ops it builds.
      }],
      /*retTy=*/"void",
      /*methodName=*/"getSavedForBackward",
      /*args=*/(ins "::llvm::SmallVectorImpl<::mlir::Value> &":$saved),
      /*methodBody=*/"",
      /*defaultImplementation=*/[{
        ::mlir::loom::detail::appendSavedForBackward<ConcreteOp>(
            $_op.getOperation(), saved);
      }]>,
    InterfaceMethod<
      /*desc=*/[{
        Builds operand gradients. `resultGrads` has one entry per result
        (null: no gradient flows into that result); `wanted` says which
        operands need one. Fills `operandGrads` (one entry per operand,
        null where not wanted) or fails with a diagnostic on the op.
      }],
      /*retTy=*/"::llvm::LogicalResult",
      /*methodName=*/"buildGradients",
      /*args=*/(ins "::mlir::OpBuilder &":$builder,
                    "::mlir::ValueRange":$resultGrads,
                    "::llvm::ArrayRef<bool>":$wanted,
                    "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

def Loom_CollectiveOpInterface : OpInterface<"CollectiveOpInterface"> {
  let cppNamespace = "::mlir::loom";
  let description = [{
    An op that moves data between the devices of a mesh: it names the mesh
    and an ordered list of its axes, which select the group of devices it
    runs among. Reports, the cost model and the runtime lowering ask the
    op what it is and how many bytes each device sends
    (`collectiveBytesSent` in Collectives.h: ring algorithms).
  }];
  let methods = [
    InterfaceMethod<"Which collective this is.",
      "::mlir::loom::CollectiveKind", "getCollectiveKind", (ins)>,
    InterfaceMethod<"The mesh the collective runs on.",
      "::mlir::FlatSymbolRefAttr", "getMeshAttr", (ins), [{
        return $_op.getMeshAttr();
      }]>,
    InterfaceMethod<"The mesh axes that make a group, major to minor.",
      "::mlir::ArrayAttr", "getAxes", (ins), [{ return $_op.getAxes(); }]>,
    InterfaceMethod<"The number of devices in each group.",
      "int64_t", "getGroupSize", (ins)>,
    InterfaceMethod<[{
        The buffer the byte formula is stated for: all operands of an
        all-reduce, the result of an all-gather, the operand otherwise.
      }], "int64_t", "getBufferBytes", (ins)>,
  ];
  let extraSharedClassDeclaration = [{
    /// Bytes each device of the group sends in one call.
    double getBytesSent() {
      return ::mlir::loom::collectiveBytesSent(
          $_op.getCollectiveKind(), double($_op.getBufferBytes()),
          $_op.getGroupSize());
    }
  }];
}

#endif // LOOM_DIALECT_LOOM_IR_LOOMINTERFACES_TD
