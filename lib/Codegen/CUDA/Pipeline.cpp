//===- Pipeline.cpp - loom -> GPU kernels and host code for CUDA ----------===//
//
// The CUDA pipeline (`--loom-cuda-pipeline`): the CPU pipeline's front half
// (linalg, fusion, bufferization), matmuls as cuBLAS calls, temporaries on
// the device, every other loop nest a one-dimensional kernel (blocks of
// `block-size` threads), kernels outlined and lowered through NVVM to
// PTX/cubin (gpu.binary), the host part to the LLVM dialect
// (gpu-lower-to-nvvm-pipeline).
//
//===----------------------------------------------------------------------===//

#include "loom/Codegen/CUDA/Passes.h"
#include "loom/Codegen/CPU/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/Pipelines/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

/// Independent iterations a scatter-add (an embedding's gradient) is cut
/// into: enough to fill a GPU (132 SMs x 2048 threads is about 270,000).
static constexpr int64_t kScatterThreads = 65536;

/// Every loop nest one-dimensional, tiled into blocks of `blockSize`
/// iterations (threads): what becomes kernels.
namespace mlir::loom {
static void addKernelLoops(OpPassManager &pm, int blockSize,
                           bool deviceAllocations) {
  // Long reductions in two stages of many threads (their partial results
  // are temporaries like any other: on the device below).
  pm.addPass(createLoomGpuSplitReductions());
  LoomGpuDeviceBuffersOptions buffers;
  buffers.allocations = deviceAllocations;
  pm.addPass(createLoomGpuDeviceBuffers(buffers));
  // Parallel dimensions outermost: they become the kernel's threads (and
  // scf.forall's: a scatter-add's independent lines).
  pm.addPass(createLoomGpuOuterParallelDims());
  pm.addPass(createForallToParallelLoopPass());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createLoomGpuRegisterAccumulators());
  pm.addPass(createLoomGpuSerialKernels());
  // Elementwise threads of 16 contiguous bytes (one vector access each);
  // alignment is declared on the device only.
  LoomGpuContiguousLanesOptions lanes;
  lanes.assumeAlignment = deviceAllocations;
  pm.addPass(createLoomGpuContiguousLanes(lanes));
  pm.addPass(createLoomGpuFlattenParallelLoops());
  pm.addNestedPass<func::FuncOp>(createParallelLoopTilingPass(
      {static_cast<int64_t>(blockSize)}, /*noMinMaxBounds=*/true));
}
} // namespace mlir::loom

void mlir::loom::buildLoomCudaLoopsOnCpuPipeline(OpPassManager &pm) {
  buildLoomBufferizePipeline(pm, kScatterThreads, /*sharedProducers=*/true,
                             /*convAsGemm=*/true);
  pm.addPass(createLoomLowerMatmulToBlas());
  addKernelLoops(pm, CudaPipelineOptions().blockSize, /*deviceAllocations=*/false);
  pm.addPass(createLoomGpuOrderedReductions());
  buildLoomCpuLoweringTail(pm);
}

const char *mlir::loom::configuredCudaToolkit() { return LOOM_CUDA_ROOT; }

void mlir::loom::buildLoomCudaPipeline(OpPassManager &pm,
                                       const CudaPipelineOptions &options) {
  buildLoomBufferizePipeline(pm, kScatterThreads, /*sharedProducers=*/true,
                             /*convAsGemm=*/true);
  LoomLowerMatmulToBlasOptions cublas;
  cublas.library = "cublas";
  pm.addPass(createLoomLowerMatmulToBlas(cublas));
  addKernelLoops(pm, options.blockSize, /*deviceAllocations=*/true);
  pm.addNestedPass<func::FuncOp>(createGpuMapParallelLoopsPass());
  pm.addNestedPass<func::FuncOp>(createConvertParallelLoopToGpuPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createLoomGpuDeviceConstants());
  // Constants (a shape's sizes, the tiling's bounds) into the kernels, not
  // passed as arguments: a division by a constant index is a multiply and
  // a shift; by an argument, a 64-bit division routine per element.
  pm.addPass(createGpuLaunchSinkIndexComputationsPass());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createLoomGpuNameKernels());
  pm.addPass(createLoomGpuCheckHost());
  // Allocations, launches and frees on one stream, ordered by tokens: the
  // host lowering (gpu-to-llvm) only converts asynchronous gpu.alloc, and
  // a synchronous launch would create and destroy a stream per kernel.
  pm.addNestedPass<func::FuncOp>(createGpuAsyncRegionPass());
  gpu::GPUToNVVMPipelineOptions nvvm;
  nvvm.cubinChip = options.chip;
  nvvm.cubinFeatures = options.features;
  nvvm.cubinFormat = options.format;
  nvvm.cmdOptions = options.ptxasOptions;
  nvvm.optLevel = 3;
  gpu::buildLowerToNVVMPassPipeline(pm, nvvm);
}
