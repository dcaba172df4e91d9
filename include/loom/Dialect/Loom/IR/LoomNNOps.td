//===- LoomNNOps.td - Normalization, dropout and losses -----*- tablegen -*-===//

#ifndef LOOM_DIALECT_LOOM_IR_LOOMNNOPS_TD
#define LOOM_DIALECT_LOOM_IR_LOOMNNOPS_TD

include "loom/Dialect/Loom/IR/LoomBase.td"

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

class Loom_SoftmaxBase<string mnemonic, string formula>
    : Loom_Op<mnemonic, [Pure, SameOperandsAndResultType, InferTypeOpInterface,
                         Loom_Differentiable, Loom_Saves<[], [0]>]> {
  let summary = formula # " along one axis";
  let description = "Computes `" # formula # "` along dimension `axis` "
    # "(in `[0, rank)`; the importer normalizes ONNX's negative axes and "
    # "opset < 13 coercion), stably (the maximum is subtracted first).\n\n"
    # "Example:\n\n```mlir\n%p = loom." # mnemonic
    # " %scores axis = 3 : tensor<8x12x128x128xf32>\n```\n";
  let arguments = (ins Loom_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat = "$input `axis` `=` $axis attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Loom_SoftmaxOp : Loom_SoftmaxBase<"softmax", "exp(x) / sum(exp(x))">;
def Loom_LogSoftmaxOp : Loom_SoftmaxBase<"log_softmax", "x - log(sum(exp(x)))">;

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

def Loom_LayerNormOp : Loom_InferredOp<"layer_norm",
    [AllElementTypesMatch<["input", "scale", "bias", "result"]>, Loom_Differentiable,
     Loom_Saves<[0, 1]>]> {
  let summary = "layer normalization over the trailing dimensions";
  let description = [{
    Normalizes `input` over dimensions `axis ..< rank` (`axis` in
    `[0, rank)`; ONNX `LayerNormalization`):
    `(x - mean) / sqrt(var + epsilon) * scale + bias`, with the biased
    variance. `scale` and `bias` have the shape of the normalized
    dimensions.

    Example:

    ```mlir
    %y = loom.layer_norm %x, %gamma, %beta axis = 2 epsilon = 9.99999974E-6
        : (tensor<8x128x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<8x128x768xf32>
    ```
  }];
  let arguments = (ins Loom_FloatTensor:$input, Loom_FloatTensor:$scale,
                       Loom_FloatTensor:$bias, I64Attr:$axis,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `axis` `=` $axis `epsilon` `=` $epsilon attr-dict
      `:` functional-type(operands, results)
  }];
}

def Loom_BatchNormInferenceOp : Loom_InferredOp<"batch_norm_inference",
    [AllElementTypesMatch<["input", "scale", "bias", "mean", "variance", "result"]>, Loom_Differentiable,
     Loom_Saves<[0, 1, 3, 4]>]> {
  let summary = "batch normalization with given statistics (NC... layout)";
  let description = [{
    `(x - mean[c]) / sqrt(variance[c] + epsilon) * scale[c] + bias[c]` where
    `c` indexes dimension 1 of an `[N, C, ...]` input; the four vectors have
    shape `[C]`.

    Example:

    ```mlir
    %y = loom.batch_norm_inference %x, %g, %b, %m, %v epsilon = 9.99999974E-6
        : (tensor<8x16x32x32xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
        -> tensor<8x16x32x32xf32>
    ```
  }];
  let arguments = (ins Loom_FloatTensor:$input, Loom_FloatTensor:$scale,
                       Loom_FloatTensor:$bias, Loom_FloatTensor:$mean,
                       Loom_FloatTensor:$variance,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `,` $mean `,` $variance `epsilon` `=` $epsilon attr-dict
      `:` functional-type(operands, results)
  }];
}

def Loom_BatchNormTrainingOp : Loom_InferredOp<"batch_norm_training",
    [AllElementTypesMatch<["input", "scale", "bias", "result"]>, Loom_Differentiable,
     Loom_Saves<[0, 1]>]> {
  let summary = "batch normalization with batch statistics (NC... layout)";
  let description = [{
    Computes per-channel `batch_mean` and biased `batch_variance` of an
    `[N, C, ...]` input over every dimension but 1, and normalizes with them
    as `loom.batch_norm_inference` does. Running statistics are updated by
    ordinary ops from the returned statistics.

    Example:

    ```mlir
    %y, %mean, %var = loom.batch_norm_training %x, %g, %b epsilon = 9.99999974E-6
        : (tensor<8x16x32x32xf32>, tensor<16xf32>, tensor<16xf32>)
        -> (tensor<8x16x32x32xf32>, tensor<16xf32>, tensor<16xf32>)
    ```
  }];
  let arguments = (ins Loom_FloatTensor:$input, Loom_FloatTensor:$scale,
                       Loom_FloatTensor:$bias,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs Loom_FloatTensor:$result, Loom_FloatTensor:$batch_mean,
                      Loom_FloatTensor:$batch_variance);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `epsilon` `=` $epsilon attr-dict
      `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

def Loom_DropoutOp : Loom_InferredOp<"dropout",
    [AllElementTypesMatch<["input", "result"]>, Loom_Differentiable,
     Loom_Saves<[], [1]>]> {
  let summary = "inverted dropout with an explicit seed";
  let description = [{
    Zeroes each element with probability `ratio` and scales the others by
    `1 / (1 - ratio)`; `mask` is `true` where the element was kept. Which
    elements are dropped is a pure function of `seed` and the element's
    index in the full (unsharded) tensor (a counter-based generator), so a
    sharded program drops exactly the elements the single-device program
    drops. `0 <= ratio < 1`.

    Example:

    ```mlir
    %y, %mask = loom.dropout %x, %seed ratio = 1.000000e-01
        : (tensor<8x128x768xf32>, tensor<i64>) -> (tensor<8x128x768xf32>, tensor<8x128x768xi1>)
    ```
  }];
  let arguments = (ins Loom_FloatTensor:$input, Loom_SeedTensor:$seed,
                       F64Attr:$ratio);
  let results = (outs Loom_FloatTensor:$result, Loom_BoolTensor:$mask);
  let extraClassDeclaration = [{
    /// Element k's counter is seed + (k + 1) * kIndexMultiplier (mod 2^64),
    /// so the mask from element k0 on is the mask of a seed
    /// k0 * kIndexMultiplier higher.
    static constexpr uint64_t kIndexMultiplier = 0x9E3779B97F4A7C15ull;
  }];
  let assemblyFormat = [{
    $input `,` $seed `ratio` `=` $ratio attr-dict `:` functional-type(operands, results)
  }];
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

class Loom_ClassLossOp<string mnemonic, list<Trait> traits = []>
    : Loom_InferredOp<mnemonic, !listconcat(traits, [Loom_DifferentiableSome])> {
  let arguments = (ins Loom_FloatTensor:$input, Loom_IndexTensor:$labels,
                       Optional<Loom_FloatTensor>:$weight,
                       DefaultValuedAttr<Loom_LossReductionAttr,
                                         "::mlir::loom::LossReduction::mean">:$reduction,
                       OptionalAttr<I64Attr>:$ignore_index);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $labels (`weight` `=` $weight^)? `reduction` `=` custom<Keyword>($reduction)
      (`ignore_index` `=` $ignore_index^)? attr-dict `:` functional-type(operands, results)
  }];
}

def Loom_CrossEntropyOp : Loom_ClassLossOp<"cross_entropy", [Loom_Saves<[0, 1, 2]>]> {
  let summary = "softmax cross-entropy with integer labels";
  let description = [{
    `input` holds logits `[N, C]` or `[N, C, d1, ...]`, `labels` class
    indices `[N]` or `[N, d1, ...]`. Per sample,
    `loss = -weight[label] * log_softmax(input)[label]` over the class
    dimension 1; samples whose label equals `ignore_index` contribute 0.
    `reduction = mean` divides the sum by the total weight of the counted
    samples (PyTorch `cross_entropy`, ONNX `SoftmaxCrossEntropyLoss`);
    `none` returns the per-sample losses with the shape of `labels`.

    Example:

    ```mlir
    %l = loom.cross_entropy %logits, %labels reduction = mean
        : (tensor<1024x50257xf32>, tensor<1024xi64>) -> tensor<f32>
    %w = loom.cross_entropy %logits, %labels weight = %cw reduction = sum ignore_index = -100
        : (tensor<8x10xf32>, tensor<8xi64>, tensor<10xf32>) -> tensor<f32>
    ```
  }];
}

def Loom_NllLossOp : Loom_ClassLossOp<"nll_loss", [Loom_Saves<[1, 2]>]> {
  let summary = "negative log-likelihood of integer labels";
  let description = [{
    As `loom.cross_entropy`, but `input` already holds log-probabilities
    (ONNX `NegativeLogLikelihoodLoss`, PyTorch `nll_loss`):
    `loss = -weight[label] * input[label]`.

    Example:

    ```mlir
    %l = loom.nll_loss %logp, %labels reduction = mean
        : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
    ```
  }];
}

def Loom_MseLossOp : Loom_InferredOp<"mse_loss",
    [AllTypesMatch<["input", "target"]>, Loom_Differentiable, Loom_Saves<[0, 1]>]> {
  let summary = "mean squared error";
  let description = [{
    `(input - target)^2` per element, summed, averaged (`mean`, the default)
    or returned as is (`none`).

    Example:

    ```mlir
    %l = loom.mse_loss %pred, %y reduction = mean : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins Loom_FloatTensor:$input, Loom_FloatTensor:$target,
                       DefaultValuedAttr<Loom_LossReductionAttr,
                                         "::mlir::loom::LossReduction::mean">:$reduction);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $target `reduction` `=` custom<Keyword>($reduction) attr-dict `:` functional-type(operands, results)
  }];
}

#endif // LOOM_DIALECT_LOOM_IR_LOOMNNOPS_TD
