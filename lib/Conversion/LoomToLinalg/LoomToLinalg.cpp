//===- LoomToLinalg.cpp - The loom-convert-to-linalg pass -----------------===//

#include "Common.h"

#include "loom/Conversion/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "loom/Support/Debug.h"

#define DEBUG_TYPE "loom-convert-to-linalg"

namespace mlir::loom {
#define GEN_PASS_DEF_CONVERTLOOMTOLINALG
#include "loom/Conversion/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::lowering;

namespace {
struct ConvertLoomToLinalgPass
    : loom::impl::ConvertLoomToLinalgBase<ConvertLoomToLinalgPass> {
  using Base::Base;
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    LoomTypeConverter converter;
    RewritePatternSet patterns(ctx);
    populateElementwisePatterns(converter, patterns);
    populateStructuredPatterns(converter, patterns, convAsGemm,
                               /*gatherPoolGradients=*/scatterThreads > 0,
                               convLibrary);
    populateShapePatterns(converter, patterns, scatterThreads);
    populateNNPatterns(converter, patterns);
    populateCollectivePatterns(converter, patterns);
    // Unsigned types at function boundaries become signless too.
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateReturnOpTypeConversionPattern(patterns, converter);
    populateCallOpTypeConversionPattern(patterns, converter);

    ConversionTarget target(*ctx);
    target.addLegalDialect<arith::ArithDialect, bufferization::BufferizationDialect,
                           linalg::LinalgDialect, math::MathDialect,
                           memref::MemRefDialect, scf::SCFDialect,
                           tensor::TensorDialect>();
    // Barriers stay until loom-prepare-for-execution, after the last CSE.
    target.addLegalOp<ModuleOp, MeshOp, ParameterOp, OptimizationBarrierOp,
                      UnrealizedConversionCastOp>();
    target.addIllegalDialect<LoomDialect>();
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp op) {
      return converter.isSignatureLegal(op.getFunctionType()) &&
             converter.isLegal(&op.getBody());
    });
    target.addDynamicallyLegalOp<func::ReturnOp, func::CallOp>(
        [&](Operation *op) { return converter.isLegal(op); });
    LLVM_DEBUG({
      int n = 0;
      getOperation().walk([&](Operation *op) {
        n += isa<LoomDialect>(op->getDialect()) &&
             !isa<MeshOp, ParameterOp>(op);
      });
      llvm::dbgs() << "loom-convert-to-linalg: " << n << " loom ops\n";
    });
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
