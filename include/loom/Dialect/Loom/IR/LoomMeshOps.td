//===- LoomMeshOps.td - Device meshes and sharding annotations -*- tablegen -*-===//

#ifndef LOOM_DIALECT_LOOM_IR_LOOMMESHOPS_TD
#define LOOM_DIALECT_LOOM_IR_LOOMMESHOPS_TD

include "loom/Dialect/Loom/IR/LoomBase.td"
include "mlir/IR/SymbolInterfaces.td"

def Loom_MeshOp : Loom_Op<"mesh", [Symbol]> {
  let summary = "a named device mesh with named axes";
  let description =
        "Declares a logical mesh of devices: a multi-dimensional array of\n"
      # "`product(sizes)` devices, numbered in row-major order (the last axis\n"
      # "varies fastest, so it should be the one with the fastest links). Each\n"
      # "axis has a name used by `#loom.sharding` and may carry link properties\n"
      # "for the cost model: `bandwidth` (bytes/s per device and direction) and\n"
      # "`latency` (seconds).\n"
      # "\n"
      # "Example:\n"
      # "\n"
      # "```mlir\n"
      # "loom.mesh @cluster [\"dp\"=2, \"tp\"=4]\n"
      # "loom.mesh @pod [\"node\"=16 {bandwidth = 5.0e+10, latency = 5.0e-06},\n"
      # "                \"gpu\"=8 {bandwidth = 4.5e+11, latency = 1.0e-06}]\n"
      # "```\n";
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypedArrayAttrBase<Loom_MeshAxisAttr, "mesh axes">:$axes);
  let assemblyFormat = "$sym_name custom<MeshAxes>($axes) attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getNumAxes() { return getAxes().size(); }
    /// Total number of devices.
    int64_t getNumDevices();
    /// The axis called `name`, or null.
    MeshAxisAttr getAxis(::llvm::StringRef name);
    /// Index of the axis called `name`, or -1.
    int64_t getAxisIndex(::llvm::StringRef name);
  }];
}

def Loom_ShardingConstraintOp : Loom_Op<"sharding_constraint",
    [Pure, SameOperandsAndResultType, InferTypeOpInterface, Loom_Differentiable]> {
  let summary = "require a sharding at this point of the program";
  let description =
        "Returns its operand unchanged and pins its sharding, as Shardy's\n"
      # "`sdy.sharding_constraint` and GSPMD's `with_sharding_constraint`: the\n"
      # "value is resharded here if it arrives sharded otherwise, and propagation\n"
      # "treats the sharding as given by the user.\n"
      # "\n"
      # "Example:\n"
      # "\n"
      # "```mlir\n"
      # "%h = loom.sharding_constraint %x <@cluster, [{\"dp\"}, {}, {\"tp\"}]> : tensor<8x128x3072xf32>\n"
      # "```\n";
  let arguments = (ins Loom_Tensor:$input, Loom_ShardingAttr:$sharding);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$input $sharding attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Loom_CotangentOp : Loom_Op<"cotangent",
    [Pure, AllTypesMatch<["gradient", "primal", "result"]>]> {
  let summary = "a gradient, named as the gradient of a forward value";
  let description =
        "Returns `gradient` unchanged; `primal` is the forward value it is the\n"
      # "gradient of (one contribution to it). Autodiff writes it for a step\n"
      # "the planner plans (`number-gradient-rules`), where the planner prices\n"
      # "the backward pass of a resharding as its transpose: a gradient goes\n"
      # "back to the layout its forward value has before it is summed with the\n"
      # "value's other gradients and read by the gradient rule of the op that\n"
      # "made the value. The partitioner does exactly that (partial sums are\n"
      # "reduced or scattered once, here, not once per reader) and drops the\n"
      # "op; everywhere else it is the identity. A step of several\n"
      # "micro-batches names each micro-batch's gradient of a weight (a\n"
      # "function argument) so: the partitioner adds those that come back in\n"
      # "one layout where they are (partial sums included) and leaves their\n"
      # "sum to the optimizer's update, which reduces it once per step.\n"
      # "\n"
      # "Example:\n"
      # "\n"
      # "```mlir\n"
      # "%dh = loom.cotangent %g of %h : tensor<8x128x1024xf32>\n"
      # "```\n";
  let arguments = (ins Loom_Tensor:$gradient, Loom_Tensor:$primal);
  let results = (outs Loom_Tensor:$result);
  let assemblyFormat = "$gradient `of` $primal attr-dict `:` type($result)";
}

#endif // LOOM_DIALECT_LOOM_IR_LOOMMESHOPS_TD
