//===- LoomInterfaces.td - Loom op interfaces --------------*- tablegen -*-===//

#ifndef LOOM_DIALECT_LOOM_IR_LOOMINTERFACES_TD
#define LOOM_DIALECT_LOOM_IR_LOOMINTERFACES_TD

include "mlir/IR/OpBase.td"

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

#endif // LOOM_DIALECT_LOOM_IR_LOOMINTERFACES_TD
