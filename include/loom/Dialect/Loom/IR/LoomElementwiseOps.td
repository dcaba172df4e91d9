//===- LoomElementwiseOps.td - Elementwise ops --------------*- tablegen -*-===//
//
// Unary, binary (numpy broadcasting), compare, select and cast.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECT_LOOM_IR_LOOMELEMENTWISEOPS_TD
#define LOOM_DIALECT_LOOM_IR_LOOMELEMENTWISEOPS_TD

include "loom/Dialect/Loom/IR/LoomBase.td"

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

class Loom_UnaryOp<string mnemonic, Type tensorType, string formula,
                   list<Trait> traits = []>
    : Loom_Op<mnemonic, !listconcat(traits,
          [Pure, SameOperandsAndResultType, InferTypeOpInterface, Loom_Differentiable,
           Loom_ComputesOnSlices])> {
  let summary = "elementwise " # formula;
  let description = "Computes `" # formula # "` for every element; the result "
    # "has the operand's type.\n\n"
    # "Example:\n\n```mlir\n%y = loom." # mnemonic
    # " %x : tensor<8x16xf32>\n```\n";
  let arguments = (ins tensorType:$input);
  let results = (outs tensorType:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Loom_NegOp : Loom_UnaryOp<"neg", Loom_NumericTensor, "-x">;
def Loom_AbsOp : Loom_UnaryOp<"abs", Loom_NumericTensor, "|x|", [Loom_Saves<[0]>]>;
def Loom_ExpOp : Loom_UnaryOp<"exp", Loom_FloatTensor, "e^x", [Loom_Saves<[], [0]>]>;
def Loom_LogOp : Loom_UnaryOp<"log", Loom_FloatTensor, "ln(x)", [Loom_Saves<[0]>]>;
def Loom_SqrtOp : Loom_UnaryOp<"sqrt", Loom_FloatTensor, "sqrt(x)", [Loom_Saves<[], [0]>]>;
def Loom_RsqrtOp : Loom_UnaryOp<"rsqrt", Loom_FloatTensor, "1 / sqrt(x)", [Loom_Saves<[], [0]>]>;
def Loom_TanhOp : Loom_UnaryOp<"tanh", Loom_FloatTensor, "tanh(x)", [Loom_Saves<[], [0]>]>;
def Loom_SigmoidOp : Loom_UnaryOp<"sigmoid", Loom_FloatTensor, "1 / (1 + e^-x)", [Loom_Saves<[], [0]>]>;
def Loom_ReluOp : Loom_UnaryOp<"relu", Loom_NumericTensor, "max(x, 0)", [Loom_Saves<[], [0]>]>;
def Loom_ErfOp : Loom_UnaryOp<"erf", Loom_FloatTensor, "erf(x)", [Loom_Saves<[0]>]>;
def Loom_FloorOp : Loom_UnaryOp<"floor", Loom_FloatTensor, "floor(x)">;
def Loom_CeilOp : Loom_UnaryOp<"ceil", Loom_FloatTensor, "ceil(x)">;
def Loom_RoundOp : Loom_UnaryOp<"round", Loom_FloatTensor,
    "x rounded to the nearest integer, halves to even">;
def Loom_SinOp : Loom_UnaryOp<"sin", Loom_FloatTensor, "sin(x)", [Loom_Saves<[0]>]>;
def Loom_CosOp : Loom_UnaryOp<"cos", Loom_FloatTensor, "cos(x)", [Loom_Saves<[0]>]>;

def Loom_GeluOp : Loom_Op<"gelu",
    [Pure, SameOperandsAndResultType, InferTypeOpInterface, Loom_Differentiable,
     Loom_ComputesOnSlices, Loom_Saves<[0]>]> {
  let summary = "elementwise GELU";
  let description = [{
    `approximate = none` computes `x/2 * (1 + erf(x / sqrt(2)))`;
    `approximate = tanh` computes
    `x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))`, as PyTorch's
    `gelu(approximate="tanh")` and ONNX `Gelu`.

    Example:

    ```mlir
    %y = loom.gelu %x approximate = tanh : tensor<8x3072xf32>
    ```
  }];
  let arguments = (ins Loom_FloatTensor:$input,
      DefaultValuedAttr<Loom_GeluApproximationAttr,
                        "::mlir::loom::GeluApproximation::none">:$approximate);
  let results = (outs Loom_FloatTensor:$result);
  let assemblyFormat = "$input (`approximate` `=` custom<Keyword>($approximate)^)? attr-dict `:` type($input)";
}

//===----------------------------------------------------------------------===//
// Binary with numpy broadcasting
//===----------------------------------------------------------------------===//

class Loom_BinaryOp<string mnemonic, Type tensorType, string formula,
                    list<Trait> traits = []>
    : Loom_InferredOp<mnemonic, !listconcat(traits, [AllElementTypesMatch<["lhs", "rhs", "result"]>,
                                                      Loom_Differentiable, Loom_ComputesOnSlices])> {
  let summary = "elementwise " # formula # " with numpy broadcasting";
  let description = "Computes `" # formula # "` elementwise. Shapes broadcast "
    # "as in numpy and ONNX: they are aligned at the trailing dimension and "
    # "each pair of sizes must be equal or contain a 1. Operands have the same "
    # "element type.\n\n"
    # "The type is written once when operands and result agree, and as a "
    # "function type otherwise.\n\n"
    # "Example:\n\n```mlir\n"
    # "%z = loom." # mnemonic # " %x, %y : tensor<8x16xf32>\n"
    # "%b = loom." # mnemonic # " %x, %bias : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>\n"
    # "```\n";
  let arguments = (ins tensorType:$lhs, tensorType:$rhs);
  let results = (outs tensorType:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` custom<BinaryTypes>(type($lhs), type($rhs), type($result))
  }];
}

def Loom_AddOp : Loom_BinaryOp<"add", Loom_NumericTensor, "lhs + rhs", [Commutative]> {
  // A sum of zero pads of consecutive slabs along one dimension (the
  // gradient of slicing a tensor into pieces, e.g. a recurrence's time
  // steps or an LSTM's gates) becomes one concat (padded where the slabs
  // do not reach the ends).
  let hasCanonicalizer = 1;
}
def Loom_SubOp : Loom_BinaryOp<"sub", Loom_NumericTensor, "lhs - rhs">;
def Loom_MulOp : Loom_BinaryOp<"mul", Loom_NumericTensor, "lhs * rhs",
    [Commutative, Loom_Saves<[0, 1]>]>;
def Loom_DivOp : Loom_BinaryOp<"div", Loom_NumericTensor,
    "lhs / rhs (integer division truncates toward zero)", [Loom_Saves<[0, 1]>]>;
def Loom_PowOp : Loom_BinaryOp<"pow", Loom_NumericTensor,
    "lhs ^ rhs (for integers, a negative exponent gives 0 unless |lhs| = 1)",
    [Loom_Saves<[0, 1], [0]>]> {
  // x^2 (LayerNorm as exported by PyTorch), x^1 and x^0.5 by constants
  // become mul, identity and sqrt.
  let hasCanonicalizer = 1;
}
def Loom_MaxOp : Loom_BinaryOp<"max", Loom_NumericTensor, "max(lhs, rhs)",
    [Commutative, Loom_Saves<[0, 1]>]>;
def Loom_MinOp : Loom_BinaryOp<"min", Loom_NumericTensor, "min(lhs, rhs)",
    [Commutative, Loom_Saves<[0, 1]>]>;

def Loom_CompareOp : Loom_InferredOp<"compare",
    [AllElementTypesMatch<["lhs", "rhs"]>, Loom_ComputesOnSlices]> {
  let summary = "elementwise comparison with numpy broadcasting";
  let description = [{
    Compares `lhs` and `rhs` elementwise with `direction` (`eq`, `ne`, `lt`,
    `le`, `gt`, `ge`) and returns an `i1` tensor of the broadcast shape.
    Floating-point comparisons are ordered: any comparison with NaN is false,
    except `ne`, which is true.

    Example:

    ```mlir
    %m = loom.compare gt, %x, %zero : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xi1>
    ```
  }];
  let arguments = (ins Loom_CompareDirectionAttr:$direction,
                       Loom_Tensor:$lhs, Loom_Tensor:$rhs);
  let results = (outs Loom_BoolTensor:$result);
  let assemblyFormat = [{
    custom<Keyword>($direction) `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
}

def Loom_SelectOp : Loom_InferredOp<"select",
    [AllElementTypesMatch<["on_true", "on_false", "result"]>, Loom_Differentiable,
     Loom_ComputesOnSlices, Loom_Saves<[0]>]> {
  let summary = "elementwise choice (ONNX Where) with numpy broadcasting";
  let description = [{
    `result[i] = condition[i] ? on_true[i] : on_false[i]`, with all three
    operands broadcast together.

    Example:

    ```mlir
    %r = loom.select %mask, %x, %zero
        : (tensor<8x16xi1>, tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32>
    ```
  }];
  let arguments = (ins Loom_BoolTensor:$condition, Loom_Tensor:$on_true,
                       Loom_Tensor:$on_false);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = [{
    $condition `,` $on_true `,` $on_false attr-dict `:` functional-type(operands, results)
  }];
}

def Loom_CastOp : Loom_Op<"cast", [Pure, SameOperandsAndResultShape, Loom_Differentiable,
                                   Loom_ComputesOnSlices, Loom_Relayout]> {
  let summary = "elementwise element-type conversion";
  let description = [{
    Converts every element to the result's element type: float to float
    rounds to nearest even; float to integer truncates toward zero; integer to
    float rounds to nearest; integers are sign-extended or truncated; any
    nonzero value becomes `true` in `i1`.

    Example:

    ```mlir
    %h = loom.cast %x : tensor<8x16xf32> to tensor<8x16xbf16>
    ```
  }];
  let arguments = (ins Loom_Tensor:$input);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  // A float constant's splat cast to another float type is that type's
  // constant (mixed precision's cast of a scale: a constant on every stage).
  let hasFolder = 1;
}

#endif // LOOM_DIALECT_LOOM_IR_LOOMELEMENTWISEOPS_TD
