//===- LoomStructuredOps.td - Contractions, reductions, windows -*- tablegen -*-===//

#ifndef LOOM_DIALECT_LOOM_IR_LOOMSTRUCTUREDOPS_TD
#define LOOM_DIALECT_LOOM_IR_LOOMSTRUCTUREDOPS_TD

include "loom/Dialect/Loom/IR/LoomBase.td"

//===----------------------------------------------------------------------===//
// Contraction
//===----------------------------------------------------------------------===//

def Loom_DotGeneralOp : Loom_InferredOp<"dot_general",
    [AllElementTypesMatch<["lhs", "rhs", "result"]>]> {
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

class Loom_ReduceOp<string mnemonic, string formula>
    : Loom_InferredOp<mnemonic, [AllElementTypesMatch<["input", "result"]>]> {
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
def Loom_ReduceMaxOp : Loom_ReduceOp<"reduce_max", "maximum">;
def Loom_ReduceMinOp : Loom_ReduceOp<"reduce_min", "minimum">;

//===----------------------------------------------------------------------===//
// Windowed ops (NCHW)
//===----------------------------------------------------------------------===//

def Loom_Conv2DOp : Loom_InferredOp<"conv2d",
    [AllElementTypesMatch<["input", "filter", "result"]>]> {
  let summary = "2-D convolution, NCHW input and FCHW filter (ONNX Conv)";
  let description = [{
    `input` is `[N, C, H, W]`, `filter` is `[F, C / groups, KH, KW]`, the
    result `[N, F, OH, OW]` with
    `OH = (H + pad_top + pad_bottom - dilation_h * (KH - 1) - 1) / stride_h + 1`
    (likewise `OW`). `padding` is `[top, left, bottom, right]`, as ONNX
    `pads`. `C` and `F` must be divisible by `groups`. There is no bias
    operand: add one with `loom.add`.

    Example:

    ```mlir
    %y = loom.conv2d %x, %w strides = [2, 2] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 1
        : (tensor<8x3x32x32xf32>, tensor<16x3x3x3xf32>) -> tensor<8x16x16x16xf32>
    ```
  }];
  let arguments = (ins Loom_FloatTensor:$input, Loom_FloatTensor:$filter,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
      DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$padding,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilations,
      DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $filter `strides` `=` $strides `padding` `=` $padding
    `dilations` `=` $dilations `groups` `=` $groups attr-dict
    `:` functional-type(operands, results)
  }];
}

class Loom_Pool2DOp<string mnemonic, string what, dag extraArgs, string extraFormat>
    : Loom_InferredOp<mnemonic, [AllElementTypesMatch<["input", "result"]>]> {
  let summary = "2-D " # what # " pooling over NCHW";
  let arguments = !con((ins Loom_FloatTensor:$input,
      DenseI64ArrayAttr:$kernel,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
      DefaultValuedAttr<DenseI64ArrayAttr, "{0, 0, 0, 0}">:$padding), extraArgs);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat = "$input `kernel` `=` $kernel `strides` `=` $strides "
    # "`padding` `=` $padding " # extraFormat
    # " attr-dict `:` functional-type(operands, results)";
}

def Loom_MaxPool2DOp : Loom_Pool2DOp<"max_pool2d", "maximum",
    (ins DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilations),
    "`dilations` `=` $dilations"> {
  let description = [{
    Slides a `kernel` window (with `dilations`) with `strides` and
    `padding = [top, left, bottom, right]` over the `H, W` dimensions of an
    `[N, C, H, W]` input and takes the maximum of each window; padded
    positions never win. The output size is computed as for `loom.conv2d`.

    Example:

    ```mlir
    %y = loom.max_pool2d %x kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1]
        : (tensor<8x16x32x32xf32>) -> tensor<8x16x16x16xf32>
    ```
  }];
}

def Loom_AvgPool2DOp : Loom_Pool2DOp<"avg_pool2d", "average",
    (ins UnitAttr:$count_include_pad),
    "(`count_include_pad` $count_include_pad^)?"> {
  let description = [{
    Slides a `kernel` window with `strides` and
    `padding = [top, left, bottom, right]` over the `H, W` dimensions of an
    `[N, C, H, W]` input and averages each window. With `count_include_pad`
    the divisor is the full window size; otherwise it counts only positions
    inside the input (ONNX `count_include_pad`, PyTorch's default is to
    include). The output size is computed as for `loom.conv2d`.

    Example:

    ```mlir
    %y = loom.avg_pool2d %x kernel = [3, 3] strides = [1, 1] padding = [1, 1, 1, 1] count_include_pad
        : (tensor<8x16x32x32xf32>) -> tensor<8x16x32x32xf32>
    ```
  }];
}

#endif // LOOM_DIALECT_LOOM_IR_LOOMSTRUCTUREDOPS_TD
