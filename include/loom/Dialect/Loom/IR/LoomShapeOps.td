//===- LoomShapeOps.td - Data movement ops ------------------*- tablegen -*-===//

#ifndef LOOM_DIALECT_LOOM_IR_LOOMSHAPEOPS_TD
#define LOOM_DIALECT_LOOM_IR_LOOMSHAPEOPS_TD

include "loom/Dialect/Loom/IR/LoomBase.td"

def Loom_ReshapeOp : Loom_Op<"reshape",
    [Pure, AllElementTypesMatch<["input", "result"]>, Loom_Differentiable,
     Loom_Relayout]> {
  let summary = "reinterpret a tensor with a new shape (row-major order)";
  let description = [{
    Returns the elements of `input`, in row-major order, with the result's
    shape; both must have the same number of elements.

    Example:

    ```mlir
    %y = loom.reshape %x : (tensor<8x128x768xf32>) -> tensor<8x128x12x64xf32>
    ```
  }];
  let arguments = (ins Loom_Tensor:$input);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Loom_TransposeOp : Loom_InferredOp<"transpose",
    [AllElementTypesMatch<["input", "result"]>, Loom_Differentiable,
     Loom_ComputesOnSlices, Loom_Relayout]> {
  let summary = "permute dimensions";
  let description = [{
    `result` dimension `i` is `input` dimension `permutation[i]`.

    Example:

    ```mlir
    %y = loom.transpose %x permutation = [0, 2, 1, 3]
        : (tensor<8x128x12x64xf32>) -> tensor<8x12x128x64xf32>
    ```
  }];
  let arguments = (ins Loom_Tensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = [{
    $input `permutation` `=` $permutation attr-dict `:` functional-type(operands, results)
  }];
  // A transpose that swaps a dot_general's two groups of free dimensions is
  // the dot_general of the swapped operands ((A B)^T = B^T A^T): a weight
  // gradient's layout without the copy.
  let hasCanonicalizer = 1;
}

def Loom_BroadcastOp : Loom_Op<"broadcast",
    [Pure, AllElementTypesMatch<["input", "result"]>, Loom_Differentiable,
     Loom_ComputesOnSlices]> {
  let summary = "broadcast into a larger shape (StableHLO broadcast_in_dim)";
  let description = [{
    Operand dimension `i` becomes result dimension `dims[i]` (`dims` strictly
    increasing); its size must equal that result dimension or be 1 (then it is
    repeated). Result dimensions not named in `dims` are new.

    Example:

    ```mlir
    %b = loom.broadcast %bias dims = [1] : (tensor<768xf32>) -> tensor<8x768xf32>
    ```
  }];
  let arguments = (ins Loom_Tensor:$input, DenseI64ArrayAttr:$dims);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = [{
    $input `dims` `=` $dims attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Loom_ConcatOp : Loom_InferredOp<"concat",
    [SameOperandsAndResultElementType, Loom_Differentiable]> {
  let summary = "concatenate tensors along one dimension";
  let description = [{
    All operands have the same rank and equal sizes except along `axis`.

    Example:

    ```mlir
    %y = loom.concat %a, %b axis = 1
        : (tensor<8x16xf32>, tensor<8x32xf32>) -> tensor<8x48xf32>
    ```
  }];
  let arguments = (ins Variadic<Loom_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = [{
    $inputs `axis` `=` $axis attr-dict `:` functional-type(operands, results)
  }];
}

def Loom_SliceOp : Loom_InferredOp<"slice",
    [AllElementTypesMatch<["input", "result"]>, Loom_Differentiable],
    ["adaptToLocalTypes"]> {
  let summary = "static strided slice";
  let description = [{
    For each dimension, takes elements `start, start + stride, ...` below
    `limit`, written `[start:limit]` or `[start:limit:stride]` per dimension
    (`0 <= start <= limit <= size`, `stride >= 1`). Negative indices and
    steps of ONNX `Slice` are normalized by the importer.

    Example:

    ```mlir
    %y = loom.slice %x [0:8, 0:768:3] : (tensor<8x2304xf32>) -> tensor<8x256xf32>
    ```
  }];
  let arguments = (ins Loom_Tensor:$input, DenseI64ArrayAttr:$start,
                       DenseI64ArrayAttr:$limit, DenseI64ArrayAttr:$stride);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = [{
    $input custom<SliceRanges>($start, $limit, $stride) attr-dict
      `:` functional-type(operands, results)
  }];
}

def Loom_GatherOp : Loom_InferredOp<"gather",
    [AllElementTypesMatch<["input", "result"]>, Loom_Differentiable,
     Loom_Saves<[1]>]> {
  let summary = "take slices along one axis by index (ONNX Gather, embedding lookup)";
  let description = [{
    `result.shape = input.shape[:axis] + indices.shape + input.shape[axis+1:]`
    and `result[a..., i..., b...] = input[a..., indices[i...], b...]`.
    Negative indices count from the end, as in ONNX; an index outside
    `[-size, size)` is undefined behaviour at run time (lowerings clamp).
    An embedding lookup is `axis = 0`.

    Example:

    ```mlir
    %e = loom.gather %wte[%tokens] axis = 0
        : (tensor<50257x768xf32>, tensor<8x128xi64>) -> tensor<8x128x768xf32>
    ```
  }];
  let arguments = (ins Loom_Tensor:$input, Loom_IndexTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = [{
    $input `[` $indices `]` `axis` `=` $axis attr-dict `:` functional-type(operands, results)
  }];
}

def Loom_ScatterAddOp : Loom_Op<"scatter_add",
    [Pure, AllElementTypesMatch<["updates", "result"]>, Loom_Differentiable,
     Loom_Saves<[1]>]> {
  let summary = "sum slices into a zero tensor by index (the adjoint of loom.gather)";
  let description = [{
    Starts from zeros of the result type and adds
    `updates[a..., i..., b...]` into `result[a..., indices[i...], b...]`,
    summing where indices repeat: the gradient of `loom.gather` (an
    embedding's weight gradient is `axis = 0`). `updates.shape` is
    `result.shape[:axis] + indices.shape + result.shape[axis+1:]`; the result
    type is given because the size of `axis` cannot be inferred. Negative
    indices count from the end; an index outside `[-size, size)` is
    undefined behaviour at run time (lowerings clamp), as for `loom.gather`.

    Example:

    ```mlir
    %dwte = loom.scatter_add %dx[%tokens] axis = 0
        : (tensor<8x128x768xf32>, tensor<8x128xi64>) -> tensor<50257x768xf32>
    ```
  }];
  let arguments = (ins Loom_Tensor:$updates, Loom_IndexTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = [{
    $updates `[` $indices `]` `axis` `=` $axis attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Loom_TopKIndicesOp : Loom_Op<"top_k_indices", [Pure]> {
  let summary = "positions of the k elements of largest magnitude";
  let description = [{
    Returns, in ascending order, the positions of the `k` elements of the
    1-D `input` with the largest absolute value; among equal magnitudes the
    lower position wins, and NaN counts as larger than any number, so the
    result is deterministic. The positions are i64, or i32 when the input
    has fewer than 2^31 elements. Top-k gradient compression
    (loom-compress-gradients) selects what each device sends with it; the
    values are then a `loom.gather` at these positions.

    Example:

    ```mlir
    %idx = loom.top_k_indices %g k = 20 : (tensor<2048xf32>) -> tensor<20xi32>
    ```
  }];
  let arguments = (ins Loom_FloatTensor:$input, I64Attr:$k);
  let results = (outs Loom_IndexTensor:$result);
  let assemblyFormat = [{
    $input `k` `=` $k attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Loom_PadOp : Loom_InferredOp<"pad",
    [AllElementTypesMatch<["input", "result"]>, Loom_Differentiable]> {
  let summary = "pad with a constant value";
  let description = [{
    Adds `low[i]` elements before and `high[i]` after dimension `i`, filled
    with `value` (an attribute of the element type). Padding amounts are
    non-negative.

    Example:

    ```mlir
    %y = loom.pad %x low = [0, 0, 1, 1] high = [0, 0, 1, 1] value = 0.000000e+00 : f32
        : (tensor<8x3x32x32xf32>) -> tensor<8x3x34x34xf32>
    ```
  }];
  let arguments = (ins Loom_Tensor:$input, DenseI64ArrayAttr:$low,
                       DenseI64ArrayAttr:$high, TypedAttrInterface:$value);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = [{
    $input `low` `=` $low `high` `=` $high `value` `=` $value attr-dict
      `:` functional-type(operands, results)
  }];
}

#endif // LOOM_DIALECT_LOOM_IR_LOOMSHAPEOPS_TD
