//===- Passes.td - Loom conversion passes ------------------*- tablegen -*-===//

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

def LoomFuseElementwise : Pass<"loom-fuse-elementwise", "mlir::ModuleOp"> {
  let summary = "Fuse chains of elementwise linalg.generic ops";
  let description = [{
    Fuses a `linalg.generic` producer whose iterators are all parallel into
    the `linalg.generic` that consumes it, so elementwise chains become one
    loop nest without temporaries. Unlike upstream
    `linalg-fuse-elementwise-ops`, never fuses into named ops
    (`linalg.batch_matmul`, `linalg.transpose`): a matmul must stay a
    matmul to reach BLAS, and a transpose fused into a contraction turns it
    into a slow generic loop nest.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

def LoomLowerMatmulToBlas : Pass<"loom-lower-matmul-to-blas", "mlir::ModuleOp"> {
  let summary = "Call BLAS for f32/f64 matrix products on buffers";
  let description = [{
    After bufferization, replaces `linalg.matmul` and `linalg.batch_matmul`
    on f32 and f64 memrefs (plain or with transposed operands) by calls to
    `loom_rt_batch_matmul_{f32,f64}`, which run OpenBLAS gemm per batch
    with the right transpose flags and leading dimensions; a zero fill of
    the output right before is folded into the call (beta = 0). Other
    element types stay for the generic loop lowering.
  }];
  let dependentDialects = ["mlir::func::FuncDialect", "mlir::arith::ArithDialect"];
}

def LoomPrepareForExecution : Pass<"loom-prepare-for-execution", "mlir::ModuleOp"> {
  let summary = "Give the entry function a destination-passing interface";
  let description = [{
    Rewrites each public function `@f(args) -> results` so that results are
    written into caller-provided buffers: `@f(args..., outs: memref...)`
    with `bufferization.materialize_in_destination ... restrict writable`,
    returning nothing; inputs are marked read-only; marks it
    `llvm.emit_c_interface`, and removes loom declarations and attributes
    that have no meaning below this point (loom.parameter, loom.mesh,
    loom.param/loom.name/loom.sharding). After bufferization the caller owns
    every buffer.
  }];
  let dependentDialects = ["mlir::bufferization::BufferizationDialect",
                           "mlir::memref::MemRefDialect"];
}

#endif // LOOM_CONVERSION_PASSES_TD
