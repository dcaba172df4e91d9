//===- Pipeline.cpp - loom -> LLVM dialect for CPU execution --------------===//
//
// The CPU pipeline (`--loom-cpu-pipeline`): loom-convert-to-linalg, fusion,
// bufferization (the front half, shared with the CUDA pipeline), BLAS
// calls, loops, LLVM dialect. Executor JIT-compiles its output.
//
//===----------------------------------------------------------------------===//

#include "loom/Codegen/CPU/Passes.h"
#include "loom/Conversion/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mlir::loom::buildLoomBufferizePipeline(OpPassManager &pm,
                                            int64_t scatterThreads,
                                            bool sharedProducers,
                                            bool convAsGemm,
                                            bool convLibrary) {
  // loom -> tensors of linalg/tensor/arith/math, elementwise chains fused.
  pm.addPass(createCanonicalizerPass());
  ConvertLoomToLinalgOptions toLinalg;
  toLinalg.scatterThreads = scatterThreads;
  toLinalg.convAsGemm = convAsGemm;
  toLinalg.convLibrary = convLibrary;
  pm.addPass(createConvertLoomToLinalg(toLinalg));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  LoomFuseElementwiseOptions fuse;
  fuse.sharedProducers = sharedProducers;
  pm.addPass(createLoomFuseElementwise(fuse));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createLoomPrepareForExecution());

  // Tensors -> buffers; the caller owns inputs and outputs.
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  // Let results be computed in the caller's buffers, not copied there.
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  pm.addPass(createCanonicalizerPass()); // drops the replaced tensor.empty ops
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // bufferization::buildBufferDeallocationPipeline, with the step's one
  // large bufferization.dealloc split before upstream's simplification
  // (quadratic in its operands) sees it.
  pm.addPass(memref::createExpandReallocPass(
      memref::ExpandReallocPassOptions{/*emitDeallocs=*/false}));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(bufferization::createOwnershipBasedBufferDeallocationPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createLoomSplitDeallocations());
  pm.addPass(bufferization::createBufferDeallocationSimplificationPass());
  pm.addPass(bufferization::createLowerDeallocationsPass());
  pm.addPass(createCSEPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCanonicalizerPass());
  // Free each temporary after its last use, not at the end of the step.
  pm.addPass(createLoomFreeBuffersEarly());
}

void mlir::loom::buildLoomCpuPipeline(OpPassManager &pm,
                                      const CpuPipelineOptions &options) {
  buildLoomBufferizePipeline(pm, /*scatterThreads=*/0,
                             /*sharedProducers=*/false, options.convAsGemm,
                             options.convLibrary);
  // Buffers -> loops (or BLAS) -> LLVM.
  if (options.useBlas)
    pm.addPass(createLoomLowerMatmulToBlas());
  // Compile time linear in the step's length (LLVM's is not in a
  // function's).
  LoomSplitFunctionsOptions split;
  split.maxOps = options.splitFunctions;
  pm.addPass(createLoomSplitFunctions(split));
  buildLoomCpuLoweringTail(pm, options.approximateMath,
                           options.parallelLoops);
}

void mlir::loom::buildLoomCpuLoweringTail(OpPassManager &pm,
                                          bool approximateMath,
                                          bool parallelLoops) {
  // scf.forall (a scatter-add's independent lines) -> serial loops.
  pm.addPass(createForallToForLoopPass());
  if (parallelLoops) {
    pm.addPass(createConvertLinalgToParallelLoopsPass());
    pm.addPass(createLoomParallelizeLoops());
  } else {
    pm.addPass(createConvertLinalgToLoopsPass());
  }
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(math::createMathExtendToSupportedTypes());
  if (approximateMath)
    pm.addPass(createLoomApproximateMath());
  pm.addPass(arith::createArithExpandOpsPass());
  pm.addPass(createConvertMathToFuncs());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  // Dynamic offsets (all_slice) leave affine.apply behind.
  pm.addPass(createLowerAffinePass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}
