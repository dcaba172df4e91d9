//===- LoomStructuredOps.td - Contractions, reductions, windows -*- tablegen -*-===//

#ifndef LOOM_DIALECT_LOOM_IR_LOOMSTRUCTUREDOPS_TD
#define LOOM_DIALECT_LOOM_IR_LOOMSTRUCTUREDOPS_TD

include "loom/Dialect/Loom/IR/LoomBase.td"

//===----------------------------------------------------------------------===//
// Contraction
//===----------------------------------------------------------------------===//

def Loom_DotGeneralOp : Loom_InferredOp<"dot_general",
    [AllElementTypesMatch<["lhs", "rhs", "result"]>, Loom_Differentiable,
     Loom_Saves<[0, 1]>]> {
  let summary = "general matrix product with batch and contracting dimensions";
  let description = [{
    Contracts `lhs` and `rhs` over pairs of contracting dimensions, with
    pairs of batch dimensions kept side by side (StableHLO `dot_general`).
    The result dimensions are, in order: the batch dimensions (in the order
    given), the remaining `lhs` dimensions, the remaining `rhs` dimensions.
    `batching_dims` may be omitted when there are none.
    Paired dimensions must have equal sizes; there is no implicit
    broadcasting.

    Example: a matmul, a batched matmul and an attention score `Q K^T`
    without a transpose.

    ```mlir
    %h = loom.dot_general %x, %w contracting_dims = [1] x [0]
        : (tensor<1024x768xf32>, tensor<768x3072xf32>) -> tensor<1024x3072xf32>
    %y = loom.dot_general %x, %w batching_dims = [0] x [0] contracting_dims = [2] x [1]
        : (tensor<8x128x512xf32>, tensor<8x512x64xf32>) -> tensor<8x128x64xf32>
    %s = loom.dot_general %q, %k batching_dims = [0, 1] x [0, 1] contracting_dims = [3] x [3]
        : (tensor<8x16x128x64xf32>, tensor<8x16x128x64xf32>) -> tensor<8x16x128x128xf32>
    ```
  }];
  let arguments = (ins Loom_NumericTensor:$lhs, Loom_NumericTensor:$rhs,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$lhs_batching_dims,
                       DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$rhs_batching_dims,
                       DenseI64ArrayAttr:$lhs_contracting_dims,
                       DenseI64ArrayAttr:$rhs_contracting_dims);
  let results = (outs Loom_NumericTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs
    (`batching_dims` `=` $lhs_batching_dims^ `x` $rhs_batching_dims)?
    `contracting_dims` `=` $lhs_contracting_dims `x` $rhs_contracting_dims
    attr-dict `:` functional-type(operands, results)
  }];
  let builders = [
    // Plain (batched) matmul: [..., M, K] x [..., K, N] with equal batch dims.
    OpBuilder<(ins "::mlir::Value":$lhs, "::mlir::Value":$rhs)>
  ];
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

class Loom_ReduceOp<string mnemonic, string formula, list<Trait> traits = []>
    : Loom_InferredOp<mnemonic, !listconcat(traits,
          [AllElementTypesMatch<["input", "result"]>, Loom_Differentiable])> {
  let summary = formula # " over dimensions";
  let description = "Reduces `input` with " # formula # " over `dims` (sorted, "
    # "unique). With `keepdims` the reduced dimensions stay as size 1; "
    # "otherwise they are removed. `dims = []` returns the input unchanged.\n\n"
    # "Example:\n\n```mlir\n"
    # "%r = loom." # mnemonic # " %x dims = [1] keepdims : (tensor<8x16xf32>) -> tensor<8x1xf32>\n"
    # "%s = loom." # mnemonic # " %x dims = [0, 1] : (tensor<8x16xf32>) -> tensor<f32>\n"
    # "```\n";
  let arguments = (ins Loom_NumericTensor:$input, DenseI64ArrayAttr:$dims,
                       UnitAttr:$keepdims);
  let results = (outs Loom_NumericTensor:$result);
  let assemblyFormat = [{
    $input `dims` `=` $dims (`keepdims` $keepdims^)? attr-dict
      `:` functional-type(operands, results)
  }];
}

def Loom_ReduceSumOp : Loom_ReduceOp<"reduce_sum", "sum">;
def Loom_ReduceMeanOp : Loom_ReduceOp<"reduce_mean", "arithmetic mean">;
def Loom_ReduceMaxOp : Loom_ReduceOp<"reduce_max", "maximum", [Loom_Saves<[0], [0]>]>;
def Loom_ReduceMinOp : Loom_ReduceOp<"reduce_min", "minimum", [Loom_Saves<[0], [0]>]>;
def Loom_ReduceProdOp : Loom_ReduceOp<"reduce_prod", "product", [Loom_Saves<[0], [0]>]>;

//===----------------------------------------------------------------------===//
// Windowed ops (channels-first, 1 to 3 spatial dimensions)
//===----------------------------------------------------------------------===//

def Loom_ConvOp : Loom_InferredOp<"conv",
    [AllElementTypesMatch<["input", "filter", "result"]>, Loom_Differentiable,
     Loom_Saves<[0, 1]>]> {
  let summary = "N-d convolution, channels first (ONNX Conv), 1 to 3 spatial dims";
  let description = [{
    `input` is `[N, C, D1, ..., Dk]` (k = 1, 2 or 3), `filter` is
    `[F, C / groups, K1, ..., Kk]`, the result `[N, F, O1, ..., Ok]` with
    `Oi = (Di + pad_begin_i + pad_end_i - dilation_i * (Ki - 1) - 1) / stride_i + 1`.
    `strides` and `dilations` have k entries; `padding` has 2k,
    `[begin_1, ..., begin_k, end_1, ..., end_k]` as ONNX `pads`. `C` and
    `F` must be divisible by `groups`. There is no bias operand: add one with
    `loom.add`.

    Example:

    ```mlir
    %y = loom.conv %x, %w strides = [2, 2] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1
        : (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<8x16x16x16xf32>
    %a = loom.conv %s, %k strides = [1] padding = [2, 2] dilations = [1] groups = 1
        : (tensor<4x80x1000xf32>, tensor<256x80x5xf32>) -> tensor<4x256x1000xf32>
    ```
  }];
  let arguments = (ins Loom_FloatTensor:$input, Loom_FloatTensor:$filter,
      DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$padding,
      DenseI64ArrayAttr:$dilations, DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $filter `strides` `=` $strides `padding` `=` $padding
    `dilations` `=` $dilations `groups` `=` $groups attr-dict
    `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    int64_t getNumSpatialDims() { return getInput().getType().getRank() - 2; }
  }];
}

class Loom_PoolOp<string mnemonic, string what, dag extraArgs, string extraFormat,
                  Type tensorType = Loom_FloatTensor, list<Trait> traits = []>
    : Loom_InferredOp<mnemonic, !listconcat(traits,
          [AllElementTypesMatch<["input", "result"]>, Loom_Differentiable])> {
  let summary = "N-d " # what # " pooling, channels first, 1 to 3 spatial dims";
  let arguments = !con((ins tensorType:$input,
      DenseI64ArrayAttr:$kernel, DenseI64ArrayAttr:$strides,
      DenseI64ArrayAttr:$padding), extraArgs);
  let results = (outs tensorType:$result);
  let assemblyFormat = "$input `kernel` `=` $kernel `strides` `=` $strides "
    # "`padding` `=` $padding " # extraFormat
    # " attr-dict `:` functional-type(operands, results)";
}

def Loom_MaxPoolOp : Loom_PoolOp<"max_pool", "maximum",
    (ins DenseI64ArrayAttr:$dilations), "`dilations` `=` $dilations",
    Loom_NumericTensor, [Loom_Saves<[0]>]> {
  let description = [{
    Slides a `kernel` window (with `dilations`) with `strides` over the
    spatial dimensions of an `[N, C, D1, ..., Dk]` input, padded by
    `padding = [begin_1, ..., begin_k, end_1, ..., end_k]`, and takes the
    maximum of each window; padded positions never win. The output size is
    computed as for `loom.conv`; a window must not lie entirely in the
    padding.

    Example:

    ```mlir
    %y = loom.max_pool %x kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1]
        : (tensor<8x16x32x32xf32>) -> tensor<8x16x16x16xf32>
    ```
  }];
}

def Loom_MaxPoolIndicesOp : Loom_InferredOp<"max_pool_indices"> {
  let summary = "where each window of a max pool takes its maximum";
  let description = [{
    For the windows of `loom.max_pool` with the same attributes, the flat
    index into the input of the element each window takes (the first one
    on ties, in window order): `(n * C + c) * D1 * ... * Dk + offset`, where
    the offset within the spatial block is row-major, or column-major with
    `column_major` (ONNX MaxPool's `Indices` with `storage_order`). Max pool
    backward scatters gradients to these positions.

    Example:

    ```mlir
    %i = loom.max_pool_indices %x kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1]
        : (tensor<8x16x32x32xf32>) -> tensor<8x16x16x16xi64>
    ```
  }];
  let arguments = (ins Loom_NumericTensor:$input, DenseI64ArrayAttr:$kernel,
                       DenseI64ArrayAttr:$strides, DenseI64ArrayAttr:$padding,
                       DenseI64ArrayAttr:$dilations, UnitAttr:$column_major);
  let results = (outs Loom_TensorOf<[I64]>:$result);
  let assemblyFormat = [{
    $input `kernel` `=` $kernel `strides` `=` $strides `padding` `=` $padding
    `dilations` `=` $dilations (`column_major` $column_major^)? attr-dict
    `:` functional-type(operands, results)
  }];
}

def Loom_AvgPoolOp : Loom_PoolOp<"avg_pool", "average",
    (ins UnitAttr:$count_include_pad), "(`count_include_pad` $count_include_pad^)?"> {
  let description = [{
    Slides a `kernel` window with `strides` over the spatial dimensions of
    an `[N, C, D1, ..., Dk]` input, padded by
    `padding = [begin_1, ..., begin_k, end_1, ..., end_k]`, and averages each
    window. With `count_include_pad` the divisor is the full window size;
    otherwise it counts only positions inside the input (ONNX
    `count_include_pad`). The output size is computed as for `loom.conv`.

    Example:

    ```mlir
    %y = loom.avg_pool %x kernel = [3, 3] strides = [1, 1] padding = [1, 1, 1, 1] count_include_pad
        : (tensor<8x16x32x32xf32>) -> tensor<8x16x32x32xf32>
    ```
  }];
}

#endif // LOOM_DIALECT_LOOM_IR_LOOMSTRUCTUREDOPS_TD
