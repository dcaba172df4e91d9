//===- Passes.td - Loom conversion passes ------------------*- tablegen -*-===//
//
// Dialect conversions out of loom (to upstream dialects on tensors).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_CONVERSION_PASSES_TD
#define LOOM_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertLoomToLinalg : Pass<"loom-convert-to-linalg", "mlir::ModuleOp"> {
  let summary = "Lower loom ops to linalg, tensor, arith and math on tensors";
  let description = [{
    Rewrites every loom op (except the declarations loom.mesh and
    loom.parameter) into upstream ops on tensors: elementwise ops and
    reductions into `linalg.generic`, contractions into
    `linalg.batch_matmul` (transposed operands as indexing maps, so that a
    BLAS call needs no copy), data movement into `tensor` ops. Unsigned
    element types become signless with unsigned arithmetic. Ops that cannot
    be compiled (`loom.opaque`) are reported with their name.
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::linalg::LinalgDialect",
    "mlir::math::MathDialect", "mlir::scf::SCFDialect",
    "mlir::bufferization::BufferizationDialect", "mlir::memref::MemRefDialect",
    "mlir::tensor::TensorDialect",
    "mlir::func::FuncDialect"
  ];
}

#endif // LOOM_CONVERSION_PASSES_TD
