//===- LoomCoreOps.td - Constants and parameters ------------*- tablegen -*-===//

#ifndef LOOM_DIALECT_LOOM_IR_LOOMCOREOPS_TD
#define LOOM_DIALECT_LOOM_IR_LOOMCOREOPS_TD

include "loom/Dialect/Loom/IR/LoomBase.td"
include "mlir/IR/SymbolInterfaces.td"

def Loom_ConstantOp : Loom_Op<"constant",
    [ConstantLike, Pure, InferTypeOpAdaptor]> {
  let summary = "a tensor constant";
  let description = [{
    A constant tensor. Large values should use `dense_resource<...>`, which
    keeps the bytes out of the op and in the file's resource section (or a
    `loom.parameter` with `#loom.external` data).

    Example:

    ```mlir
    %c = loom.constant dense<[1.0, 2.0]> : tensor<2xf32>
    %w = loom.constant dense_resource<conv1_weight> : tensor<16x3x3x3xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def Loom_ParameterOp : Loom_Op<"parameter",
    [Symbol, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "a named model parameter or buffer and its initial value";
  let description = [{
    Declares a parameter (trainable weight) or buffer (non-trainable state
    such as batch-norm running statistics) at module level. Functions take
    parameters as arguments marked `{loom.param = @name}`, so that a
    training step can return updated values and the partitioner can shard
    them like any other value; the runtime binds the initial value.

    The initial value is a dense (or `dense_resource`) elements attribute of
    the parameter's type, or `#loom.external<"file", offset = N>` for raw
    bytes in a side file; without one, the parameter is initialized by the
    training driver's seeded initializer.

    Optimizer state (Adam's moments, SGD's momentum buffer) names the
    trainable parameter it belongs to with `state_of`: it is stored and
    sharded like that weight (ZeRO splits it further).

    Example:

    ```mlir
    loom.parameter @"fc1.weight" : tensor<512x784xf32> = dense_resource<fc1_weight> trainable
    loom.parameter @"bn.running_mean" : tensor<16xf32> = dense<0.0> : tensor<16xf32>
    loom.parameter @"h.0.mlp.weight" : tensor<768x3072xf32> trainable
    loom.parameter @"h.0.mlp.weight.exp_avg" : tensor<768x3072xf32> = dense<0.0> : tensor<768x3072xf32> state_of @"h.0.mlp.weight"
    func.func @forward(%x: tensor<8x784xf32>,
                       %w: tensor<512x784xf32> {loom.param = @"fc1.weight"}) -> tensor<8x512xf32> {
      ...
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, TypeAttrOf<Loom_Tensor>:$type,
                       OptionalAttr<AnyAttr>:$initial_value, UnitAttr:$trainable,
                       OptionalAttr<FlatSymbolRefAttr>:$state_of);
  let assemblyFormat = [{
    $sym_name `:` $type (`=` $initial_value^)? (`trainable` $trainable^)?
      (`state_of` $state_of^)? attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
  }];
}

def Loom_OpaqueOp : Loom_Op<"opaque"> {
  let summary = "an imported op that Loom cannot express";
  let description = [{
    Keeps an op of the source model that Loom does not support, with its
    attributes, so that the rest of the graph can still be inspected
    (`loom-translate --import-onnx --allow-unsupported`). Nothing can
    compile or shard it: its sharding rule keeps every dimension whole and
    lowerings reject it with its name.

    Example:

    ```mlir
    %y = loom.opaque "NonMaxSuppression"(%boxes, %scores) {center_point_box = 0 : i64}
        : (tensor<1x6x4xf32>, tensor<1x1x6xf32>) -> tensor<3x3xi64>
    ```
  }];
  let arguments = (ins StrAttr:$op_name, DictionaryAttr:$op_attributes,
                       Variadic<Loom_Tensor>:$inputs);
  let results = (outs Variadic<Loom_Tensor>:$results);
  let assemblyFormat = [{
    $op_name `(` $inputs `)` $op_attributes attr-dict `:` functional-type($inputs, $results)
  }];
}

def Loom_OptimizationBarrierOp : Loom_Op<"optimization_barrier",
    [DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "returns its operands; no pass may merge or move across it";
  let description = [{
    Returns its operands unchanged. It has unknown side effects, so CSE
    cannot merge a computation behind it with the same computation on the
    barrier's operands, and it is never removed as dead: rematerialization
    (loom-rematerialize) passes a segment's inputs through one so that the
    recomputation in the backward pass stays a recomputation (as XLA's and
    StableHLO's `optimization_barrier`). The CPU pipeline drops it after its
    last CSE.

    Example:

    ```mlir
    %x2, %w2 = loom.optimization_barrier %x, %w : tensor<8x64xf32>, tensor<64x64xf32>
    ```
  }];
  let arguments = (ins Variadic<Loom_Tensor>:$inputs);
  let results = (outs Variadic<Loom_Tensor>:$results);
  let assemblyFormat = [{
    ($inputs^ `:` type($inputs))? attr-dict
  }];
}

#endif // LOOM_DIALECT_LOOM_IR_LOOMCOREOPS_TD
