//===- Passes.td - Artifact passes -------------------------*- tablegen -*-===//
//
// The last step of compilation: what an artifact directory holds besides
// the IR.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_EXECUTION_PASSES_TD
#define LOOM_EXECUTION_PASSES_TD

include "mlir/Pass/PassBase.td"

def LoomExportParameters : Pass<"loom-export-parameters", "mlir::ModuleOp"> {
  let summary = "Move parameter values into DIR/params.bin";
  let description = [{
    Writes the initial value of every `loom.parameter` to `dir/params.bin`
    (64-byte aligned records, in declaration order) and replaces it in the
    IR by `#loom.external<"params.bin", offset = N>`; splat values
    (optimizer state starting at zero) stay in the IR. Parameters without
    a value, and with `init=seeded` every trainable one, get
    `initialParameterValue` (PyTorch-style, from `seed` and the name).
    This is what `loomc -o DIR` does before writing `DIR/train.mlir`, so
    `loom-opt ... --loom-export-parameters=dir=DIR -o DIR/train.mlir`
    writes the same artifact.
  }];
  let options = [
    Option<"dir", "dir", "std::string", /*default=*/"\"\"",
           "Artifact directory (created)">,
    Option<"init", "init", "std::string", /*default=*/"\"model\"",
           "model (the model's values) or seeded (fresh trainable weights)">,
    Option<"seed", "seed", "uint64_t", /*default=*/"0",
           "Seed of init=seeded">,
    Option<"sourceDir", "source-dir", "std::string", /*default=*/"\"\"",
           "Directory relative #loom.external paths of the input are read "
           "from (loomc: the input file's; default: the current directory)">,
  ];
}

#endif // LOOM_EXECUTION_PASSES_TD
