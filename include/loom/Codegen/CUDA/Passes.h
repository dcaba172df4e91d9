//===- Passes.h - CUDA code generation passes and pipeline ------*- C++ -*-===//

#ifndef LOOM_CODEGEN_CUDA_PASSES_H
#define LOOM_CODEGEN_CUDA_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir::loom {

#define GEN_PASS_DECL
#include "loom/Codegen/CUDA/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "loom/Codegen/CUDA/Passes.h.inc"

/// Options of the CUDA pipeline (`--loom-cuda-pipeline`).
struct CudaPipelineOptions : public PassPipelineOptions<CudaPipelineOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("GPU architecture (sm_75 and up: "
                                          "what CUDA 13 supports)"),
                           llvm::cl::init("sm_90")};
  Option<std::string> features{
      *this, "features",
      llvm::cl::desc("PTX ISA version as an NVPTX feature"),
      llvm::cl::init("+ptx86")};
  Option<std::string> format{
      *this, "format",
      llvm::cl::desc("What the GPU modules become: isa (PTX text), bin "
                     "(cubin, through ptxas) or fatbin"),
      llvm::cl::init("fatbin")};
  Option<std::string> ptxasOptions{
      *this, "ptxas-options",
      llvm::cl::desc("Options for ptxas (bin, fatbin): warnings are errors "
                     "and spills are warnings by default"),
      llvm::cl::init("--warn-on-spills -Werror")};
  Option<int> blockSize{*this, "block-size",
                        llvm::cl::desc("Threads per block of each kernel"),
                        llvm::cl::init(256)};
};

/// The CUDA toolkit Loom was configured with (-DLOOM_CUDA_ROOT). The
/// pipeline's gpu-module-to-binary finds ptxas and libdevice through
/// $CUDA_ROOT, $CUDA_HOME or $CUDA_PATH (NVVM::getCUDAToolkitPath), else a
/// path fixed when MLIR was built: the tools set $CUDA_ROOT to this one
/// when none is set (Toolkit.h).
const char *configuredCudaToolkit();

/// loom -> linalg -> bufferized on device buffers -> matmuls as cuBLAS
/// calls, every other loop nest a kernel -> NVVM -> PTX/cubin (gpu.binary)
/// and the host part in the LLVM dialect.
void buildLoomCudaPipeline(OpPassManager &pm,
                           const CudaPipelineOptions &options);

/// The CUDA pipeline's kernel loop nests (flattened, wrapped, tiled into
/// blocks of the default size, guards included) run as host loops, with
/// host buffers and BLAS where the GPU calls cuBLAS, and reductions summed
/// in order as a GPU thread sums them (loom-gpu-ordered-reductions): the
/// arithmetic of the generated kernels, checked on the CPU
/// (`loom-run --gpu-loops-on-cpu`).
void buildLoomCudaLoopsOnCpuPipeline(OpPassManager &pm);

} // namespace mlir::loom

#endif // LOOM_CODEGEN_CUDA_PASSES_H
