//===- Passes.h - CPU code generation passes and pipeline -------*- C++ -*-===//

#ifndef LOOM_CODEGEN_CPU_PASSES_H
#define LOOM_CODEGEN_CPU_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::loom {

#define GEN_PASS_DECL
#include "loom/Codegen/CPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "loom/Codegen/CPU/Passes.h.inc"

/// Options of the CPU pipeline (`--loom-cpu-pipeline`).
struct CpuPipelineOptions : public PassPipelineOptions<CpuPipelineOptions> {
  Option<bool> useBlas{*this, "blas",
                       llvm::cl::desc("Call OpenBLAS for f32/f64 matmuls"),
                       llvm::cl::init(true)};
  Option<int64_t> splitFunctions{
      *this, "split-functions",
      llvm::cl::desc("Outline runs of this many ops (nested counted) of long "
                     "functions into functions of their own "
                     "(loom-split-functions; 0: never)"),
      llvm::cl::init(300)};
  Option<bool> convAsGemm{
      *this, "conv-as-gemm",
      llvm::cl::desc("Ungrouped convolutions as im2col patches times the "
                     "filter, one BLAS GEMM each (loom-convert-to-linalg's "
                     "conv-as-gemm)"),
      llvm::cl::init(true)};
  Option<bool> convLibrary{
      *this, "conv-library",
      llvm::cl::desc("Grouped f32/bf16 forward convolutions and input "
                     "gradients as calls to oneDNN's convolution "
                     "(loom-convert-to-linalg's conv-library)"),
      llvm::cl::init(true)};
  Option<bool> approximateMath{
      *this, "approximate-math",
      llvm::cl::desc("f32 exp, log, erf and tanh as vectorizable polynomials "
                     "(loom-approximate-math) instead of libm calls"),
      llvm::cl::init(true)};
  Option<bool> parallelLoops{
      *this, "parallel-loops",
      llvm::cl::desc("Run the outermost parallel loops (elementwise ops, "
                     "normalizations, losses, optimizer updates) on the "
                     "runtime's threads (loom-parallelize-loops)"),
      llvm::cl::init(true)};
};

/// loom -> linalg on tensors, elementwise chains fused -> buffers, the entry
/// function in destination-passing style, each temporary freed after its
/// last use: the front half of the CPU and CUDA pipelines.
/// `scatterThreads`: loom-convert-to-linalg's scatter-threads (0 on the CPU;
/// the CUDA pipelines cut a scatter-add's axis into chunks);
/// `sharedProducers`: loom-fuse-elementwise's shared-producers, and
/// `convAsGemm` loom-convert-to-linalg's conv-as-gemm (the CUDA pipelines),
/// `convLibrary` its conv-library (the CPU pipeline).
void buildLoomBufferizePipeline(OpPassManager &pm, int64_t scatterThreads = 0,
                                bool sharedProducers = false,
                                bool convAsGemm = false,
                                bool convLibrary = false);

/// Buffers (linalg, scf, library calls) -> loops -> the LLVM dialect: the
/// CPU pipeline's back half.
/// `approximateMath`: loom-approximate-math (else libm calls);
/// `parallelLoops`: linalg ops as parallel loops, the outermost ones run on
/// the runtime's threads (loom-parallelize-loops; else serial loops).
void buildLoomCpuLoweringTail(OpPassManager &pm, bool approximateMath = true,
                              bool parallelLoops = false);

/// loom -> linalg -> bufferized -> LLVM dialect, ready for the JIT or
/// mlir-translate --mlir-to-llvmir.
void buildLoomCpuPipeline(OpPassManager &pm, const CpuPipelineOptions &options);

} // namespace mlir::loom

#endif // LOOM_CODEGEN_CPU_PASSES_H
