//===- LoomCollectiveOps.td - Communication between devices --*- tablegen -*-===//
//
// Collectives appear in per-device (partitioned) programs. Each names a mesh
// and an ordered list of its axes: the op runs among the devices that share
// this device's coordinates on every other axis (a group of size = product
// of the listed axis sizes), ordered row-major over the listed axes (the
// first is the most significant) — the order in which a sharding lists the
// axes of a split dimension.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECT_LOOM_IR_LOOMCOLLECTIVEOPS_TD
#define LOOM_DIALECT_LOOM_IR_LOOMCOLLECTIVEOPS_TD

include "loom/Dialect/Loom/IR/LoomBase.td"

class Loom_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Loom_Op<mnemonic, !listconcat(traits, [Pure,
          DeclareOpInterfaceMethods<Loom_CollectiveOpInterface>])> {
  let hasVerifier = 1;
}

def Loom_AllReduceOp : Loom_CollectiveOp<"all_reduce",
    [RangedTypesMatchWith<"result types match operand types", "inputs",
                          "results", "$_self">]> {
  let summary = "combine values across devices; every device gets the result";
  let description = [{
    Every device of a group receives the elementwise `reduction` of the
    group's values of each operand. Several operands make one collective
    (gradient buckets). The partitioner emits it for values that are partial
    sums (`partial = sum {"tp"}`).

    Example:

    ```mlir
    %y = loom.all_reduce %partial over @cluster ["tp"] reduction = sum : tensor<8x768xf32>
    %g1, %g2 = loom.all_reduce %d1, %d2 over @cluster ["dp"] reduction = sum
        : tensor<768x3072xf32>, tensor<3072xf32>
    ```
  }];
  let arguments = (ins Variadic<Loom_Tensor>:$inputs, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, Loom_ReductionKindAttr:$reduction);
  let results = (outs Variadic<Loom_Tensor>:$results);
  let assemblyFormat = [{
    $inputs `over` $mesh $axes `reduction` `=` custom<Keyword>($reduction)
      attr-dict `:` type($inputs)
  }];
}

def Loom_AllGatherOp : Loom_CollectiveOp<"all_gather"> {
  let summary = "concatenate the group's shards along a dimension";
  let description = [{
    Every device receives the concatenation along `dim`, in group order, of
    the group's values: result dimension `dim` is the operand's times the
    group size.

    Example:

    ```mlir
    %w = loom.all_gather %shard over @cluster ["dp"] dim = 0
        : (tensor<192x768xf32>) -> tensor<768x768xf32>
    ```
  }];
  let arguments = (ins Loom_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$dim);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = [{
    $input `over` $mesh $axes `dim` `=` $dim attr-dict `:` functional-type(operands, results)
  }];
}

def Loom_ReduceScatterOp : Loom_CollectiveOp<"reduce_scatter"> {
  let summary = "combine values across devices, each keeping one block";
  let description = [{
    The elementwise `reduction` of the group's values, split along `dim`
    into group-size blocks, of which each device keeps the one at its group
    index: an all-reduce followed by a slice, in one collective with a
    1 / group-size share of the traffic (ZeRO's gradient reduction).

    Example:

    ```mlir
    %g = loom.reduce_scatter %partial over @cluster ["dp"] dim = 0 reduction = sum
        : (tensor<768x768xf32>) -> tensor<192x768xf32>
    ```
  }];
  let arguments = (ins Loom_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$dim,
                       Loom_ReductionKindAttr:$reduction);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = [{
    $input `over` $mesh $axes `dim` `=` $dim `reduction` `=` custom<Keyword>($reduction)
      attr-dict `:` functional-type(operands, results)
  }];
}

def Loom_AllToAllOp : Loom_CollectiveOp<"all_to_all"> {
  let summary = "move a split from one dimension to another";
  let description = [{
    Splits the operand along `split_dim` into group-size blocks, sends block
    `j` to group member `j`, and concatenates the received blocks along
    `concat_dim` in group order: a value split along `concat_dim` becomes
    split along `split_dim`.

    Example:

    ```mlir
    %y = loom.all_to_all %x over @cluster ["tp"] split_dim = 1 concat_dim = 0
        : (tensor<4x64xf32>) -> tensor<16x16xf32>
    ```
  }];
  let arguments = (ins Loom_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$split_dim,
                       I64Attr:$concat_dim);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = [{
    $input `over` $mesh $axes `split_dim` `=` $split_dim `concat_dim` `=` $concat_dim
      attr-dict `:` functional-type(operands, results)
  }];
}

def Loom_AllSliceOp : Loom_CollectiveOp<"all_slice"> {
  let summary = "keep this device's block of a replicated value (no communication)";
  let description = [{
    Splits the operand along `dim` into group-size blocks and returns the
    block at this device's group index. No data moves: it turns a value
    replicated over the axes into one split over them.

    Example:

    ```mlir
    %shard = loom.all_slice %w over @cluster ["tp"] dim = 1
        : (tensor<768x3072xf32>) -> tensor<768x1536xf32>
    ```
  }];
  let arguments = (ins Loom_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$dim);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = [{
    $input `over` $mesh $axes `dim` `=` $dim attr-dict `:` functional-type(operands, results)
  }];
}

def Loom_SendRecvOp : Loom_CollectiveOp<"send_recv",
    [AllTypesMatch<["input", "result"]>]> {
  let summary = "pass a value to the group member `offset` places later";
  let description = [{
    Every device of a group sends its operand to the member `offset`
    positions after it in group order and returns the value received from
    the member `offset` positions before it: pipeline stages hand
    activations forward (`offset = 1`) and gradients back (`offset = -1`).
    Without `cyclic`, a device with no such sender receives zeros and one
    with no such receiver sends nothing; with `cyclic`, positions wrap
    around (a ring).

    Example:

    ```mlir
    %next = loom.send_recv %act over @cluster ["pp"] offset = 1 : tensor<8x768xf32>
    %ring = loom.send_recv %kv over @cluster ["sp"] offset = 1 cyclic : tensor<4x64xf32>
    ```
  }];
  let arguments = (ins Loom_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       StrArrayAttr:$axes, I64Attr:$offset, UnitAttr:$cyclic);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = [{
    $input `over` $mesh $axes `offset` `=` $offset (`cyclic` $cyclic^)?
      attr-dict `:` type($input)
  }];
}

def Loom_WaitOp : Loom_Op<"wait",
    [DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "where the program needs the results of a started collective";
  let description = [{
    Returns its operands. When they are the results of a collective marked
    `loom.async` (an `all_reduce`, `all_gather` or `reduce_scatter`), the
    collective is started where it stands and runs on the rank's
    communication lane while the ops between it and this wait compute; the
    wait blocks until it has finished. `loom-overlap-collectives` places
    both: the collective where its operands are ready (a gradient bucket as
    soon as the backward pass has made it), the wait just before the first
    op that reads a result (the optimizer). An async collective's results
    are read by its wait only. Like `optimization_barrier`, the wait has
    unknown side effects, so no pass moves work across it or removes it; a
    wait whose operands are not a started collective's results only returns
    them.

    Example:

    ```mlir
    %r:2 = loom.all_reduce %g1, %g2 over @cluster ["dp"] reduction = sum
        {loom.async} : tensor<64x64xf32>, tensor<64xf32>
    // ... the rest of the backward pass ...
    %g1r, %g2r = loom.wait %r#0, %r#1 : tensor<64x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Variadic<Loom_Tensor>:$inputs);
  let results = (outs Variadic<Loom_Tensor>:$results);
  let assemblyFormat = [{
    $inputs `:` type($inputs) attr-dict
  }];
  let extraClassDeclaration = [{
    /// The started collective whose results this wait completes, or null.
    ::mlir::Operation *getStarted();
  }];
}

#endif // LOOM_DIALECT_LOOM_IR_LOOMCOLLECTIVEOPS_TD
