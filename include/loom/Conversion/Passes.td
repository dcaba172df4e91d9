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

    A scatter-add (an embedding's gradient) is a serial loop over its
    updates inside an `scf.forall` over the other dimensions, each
    iteration owning one line of the output along the axis. With
    `scatter-threads=N` (the CUDA pipelines: 65536) the axis is also cut
    into C equal chunks (C the largest divisor of the axis's length with C
    times the other dimensions at most N), each iteration owning one chunk
    of one line and walking every update, adding those that fall in it:
    N-way parallel instead of hidden-size-way, and every element still
    summed in update order (the same bits). With `scatter-threads`, a max
    pool's gradient (the flat scatter-add at `loom.max_pool_indices` that
    its gradient builds, which has no other dimension to spread over) is
    gathered instead: one iteration per input element visits the windows
    covering it in ascending order and adds the gradients of those that
    took it (the same additions in the same order).

    With `conv-as-gemm` (the CPU and CUDA pipelines; `loom-run
    --conv-loops` turns it off) an ungrouped convolution is one matrix
    product: its input's windows are copied out as patches
    [C, K..., N, O...] (im2col) and multiplied by the filter as
    [F, C x K] x [C x K, N x O] (a linalg.batch_matmul of batch 1, which
    loom-lower-matmul-to-blas hands to OpenBLAS or cuBLAS), then transposed
    to [N, F, O...]. Without it, and for grouped convolutions, a
    convolution is one linalg.generic summing its window in order. With
    `conv-library` (the CPU pipeline), a grouped f32 or bf16 convolution
    (depthwise included) whose kernel is no wider than its output in any
    spatial dimension (a forward convolution, an input gradient) is a call
    to the runtime's `loom_rt_conv_f32`/`_bf16` on flat buffers (oneDNN's
    convolution), its shape and window as 26 integers; a weight gradient
    (marked `loom.weight_gradient` by the gradient rule) and ungrouped
    convolutions stay as above.
  }];
  let options = [
    Option<"scatterThreads", "scatter-threads", "int64_t", /*default=*/"0",
           "Independent iterations a scatter-add should reach by cutting its "
           "axis into chunks (0: one iteration per line)">,
    Option<"convAsGemm", "conv-as-gemm", "bool", /*default=*/"false",
           "Ungrouped convolutions as im2col patches times the filter (one "
           "GEMM each)">,
    Option<"convLibrary", "conv-library", "bool", /*default=*/"false",
           "Grouped f32 and bf16 convolutions whose kernel is no wider than "
           "their output (forward passes, input gradients) as calls to "
           "loom_rt_conv_<type> (oneDNN, the CPU pipeline)">,
  ];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::linalg::LinalgDialect",
    "mlir::math::MathDialect", "mlir::scf::SCFDialect",
    "mlir::bufferization::BufferizationDialect", "mlir::memref::MemRefDialect",
    "mlir::tensor::TensorDialect",
    "mlir::func::FuncDialect"
  ];
}

#endif // LOOM_CONVERSION_PASSES_TD
