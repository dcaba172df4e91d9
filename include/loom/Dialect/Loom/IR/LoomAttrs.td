//===- LoomAttrs.td - Loom enums and attributes ------------*- tablegen -*-===//

#ifndef LOOM_DIALECT_LOOM_IR_LOOMATTRS_TD
#define LOOM_DIALECT_LOOM_IR_LOOMATTRS_TD

include "loom/Dialect/Loom/IR/LoomDialect.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Loom_ReductionKind : I32EnumAttr<"ReductionKind",
    "how partial results combine (and what a reduction factor computes)", [
      I32EnumAttrCase<"sum", 0>,
      I32EnumAttrCase<"max", 1>,
      I32EnumAttrCase<"min", 2>,
      I32EnumAttrCase<"prod", 3>,
    ]> {
  let cppNamespace = "::mlir::loom";
  let genSpecializedAttr = 0;
}
def Loom_ReductionKindAttr : EnumAttr<Loom_Dialect, Loom_ReductionKind,
                                      "reduction_kind">;

def Loom_CompareDirection : I32EnumAttr<"CompareDirection",
    "comparison predicate", [
      I32EnumAttrCase<"eq", 0>,
      I32EnumAttrCase<"ne", 1>,
      I32EnumAttrCase<"lt", 2>,
      I32EnumAttrCase<"le", 3>,
      I32EnumAttrCase<"gt", 4>,
      I32EnumAttrCase<"ge", 5>,
    ]> {
  let cppNamespace = "::mlir::loom";
  let genSpecializedAttr = 0;
}
def Loom_CompareDirectionAttr : EnumAttr<Loom_Dialect, Loom_CompareDirection,
                                         "compare_direction">;

def Loom_LossReduction : I32EnumAttr<"LossReduction",
    "how a loss combines per-sample values (as in PyTorch and ONNX)", [
      I32EnumAttrCase<"none", 0>,
      I32EnumAttrCase<"sum", 1>,
      I32EnumAttrCase<"mean", 2>,
    ]> {
  let cppNamespace = "::mlir::loom";
  let genSpecializedAttr = 0;
}
def Loom_LossReductionAttr : EnumAttr<Loom_Dialect, Loom_LossReduction,
                                      "loss_reduction">;

def Loom_GeluApproximation : I32EnumAttr<"GeluApproximation",
    "GELU formula: exact (erf) or tanh approximation", [
      I32EnumAttrCase<"none", 0>,
      I32EnumAttrCase<"tanh", 1>,
    ]> {
  let cppNamespace = "::mlir::loom";
  let genSpecializedAttr = 0;
}
def Loom_GeluApproximationAttr : EnumAttr<Loom_Dialect, Loom_GeluApproximation,
                                          "gelu_approximation">;

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

class Loom_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Loom_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Loom_MeshAxisAttr : Loom_Attr<"MeshAxis", "mesh_axis"> {
  let summary = "One named axis of a device mesh, with optional link properties";
  let description =
        "A mesh axis has a name, a size (number of devices along it) and, for the\n"
      # "cost model, optional link properties of the collectives that run along\n"
      # "it: `bandwidth` in bytes per second (per direction, per device) and\n"
      # "`latency` in seconds.\n"
      # "\n"
      # "Inside `loom.mesh` axes print compactly:\n"
      # "\n"
      # "```mlir\n"
      # "loom.mesh @cluster [\"dp\"=2, \"tp\"=4 {bandwidth = 4.5e+11, latency = 1.0e-06}]\n"
      # "```\n"
      # "\n"
      # "and standalone as `#loom.mesh_axis<\"tp\"=4 {bandwidth = 4.5e+11}>`.\n";
  let parameters = (ins
    "::mlir::StringAttr":$name,
    "int64_t":$size,
    OptionalParameter<"::mlir::FloatAttr">:$bandwidth,
    OptionalParameter<"::mlir::FloatAttr">:$latency
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Prints `"name"=size {bandwidth = ..., latency = ...}` (no brackets).
    void printBody(::mlir::AsmPrinter &printer) const;
    /// Parses what printBody prints.
    static MeshAxisAttr parseBody(::mlir::AsmParser &parser);
  }];
}

def Loom_ShardingAttr : Loom_Attr<"Sharding", "sharding"> {
  let summary = "How a tensor value is split over the axes of a device mesh";
  let description =
        "A sharding names a mesh and gives, for every dimension of the tensor, the\n"
      # "ordered list of mesh axes that dimension is split over (major to minor;\n"
      # "`{}` means the dimension is not split). A dimension of size `D` split\n"
      # "over axes of sizes `a1, a2, ...` holds `D / (a1 * a2 * ...)` elements per\n"
      # "device; the split must divide evenly.\n"
      # "\n"
      # "`partial = <kind> {axes}` says the value on each device is only a partial\n"
      # "result: the true value is the `sum` (or `max`, `min`) of the values held\n"
      # "along those axes. An axis may appear at most once in a sharding. Axes\n"
      # "named nowhere replicate the value.\n"
      # "\n"
      # "```mlir\n"
      # "// rows split over \"dp\", columns over \"tp\"\n"
      # "#loom.sharding<@cluster, [{\"dp\"}, {\"tp\"}]>\n"
      # "// dimension 0 split over \"dp\" then \"tp\" (dp major), dimension 1 whole\n"
      # "#loom.sharding<@cluster, [{\"dp\", \"tp\"}, {}]>\n"
      # "// replicated shape, each \"tp\" device holds a partial sum\n"
      # "#loom.sharding<@cluster, [{}, {}], partial = sum {\"tp\"}>\n"
      # "// a scalar, fully replicated\n"
      # "#loom.sharding<@cluster, []>\n"
      # "```\n";
  let parameters = (ins
    "::mlir::FlatSymbolRefAttr":$mesh,
    // One ArrayAttr of StringAttr per tensor dimension.
    "::mlir::ArrayAttr":$dims,
    // StringAttrs; empty when the value is not partial.
    "::mlir::ArrayAttr":$partialAxes,
    "::mlir::loom::ReductionKind":$partialKind
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let builders = [
    AttrBuilder<(ins "::llvm::StringRef":$mesh,
                     "::llvm::ArrayRef<::llvm::SmallVector<::llvm::StringRef>>":$dims,
                     CArg<"::llvm::ArrayRef<::llvm::StringRef>", "{}">:$partialAxes,
                     CArg<"::mlir::loom::ReductionKind",
                          "::mlir::loom::ReductionKind::sum">:$partialKind)>
  ];
  let extraClassDeclaration = [{
    int64_t getRank() const { return getDims().size(); }
    /// The mesh axes dimension `dim` is split over, major to minor.
    ::llvm::SmallVector<::llvm::StringRef> getDimAxes(int64_t dim) const;
    ::llvm::SmallVector<::llvm::StringRef> getPartialAxisNames() const;
    bool isPartial() const { return !getPartialAxes().empty(); }
    /// True when no dimension is split and the value is not partial.
    bool isFullyReplicated() const;
    /// Checks this sharding against the value type it describes and the
    /// mesh it names: rank, axis names, even division. `what` names the
    /// value in messages ("argument #0", "result #1").
    ::llvm::LogicalResult verifyFor(::mlir::Type type,
                                    ::mlir::Operation *anchor,
                                    ::llvm::StringRef what) const;
  }];
}

def Loom_ExternalDataAttr : Loom_Attr<"ExternalData", "external"> {
  let summary = "Tensor contents stored in a side file, not in the IR";
  let description = [{
    Initial values of large parameters can live in a raw little-endian file
    next to the IR instead of in it (in addition to `dense_resource`, which
    moves them to the end of the file). `path` is relative to the directory
    of the IR file; `offset` is in bytes.

    ```mlir
    loom.parameter @"h.0.attn.weight" : tensor<768x2304xf32>
        = #loom.external<"weights.bin", offset = 0> trainable
    ```
  }];
  let parameters = (ins "::mlir::StringAttr":$path, "int64_t":$offset);
  let assemblyFormat = "`<` $path `,` `offset` `=` $offset `>`";
  let genVerifyDecl = 1;
}

#endif // LOOM_DIALECT_LOOM_IR_LOOMATTRS_TD
