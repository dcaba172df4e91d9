//===- LowerMatmulToBlas.cpp - linalg.batch_matmul on buffers -> BLAS -----===//

#include "loom/Codegen/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "loom/Support/Debug.h"

#define DEBUG_TYPE "loom-lower-matmul-to-blas"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMLOWERMATMULTOBLAS
#include "loom/Codegen/CPU/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

/// Whether `map` is (b, m, n, k) -> (b, x, y) for the given dims x, y.
bool isMap(AffineMap map, unsigned x, unsigned y) {
  if (map.getNumDims() != 4 || map.getNumResults() != 3)
    return false;
  return map.getResult(0) == getAffineDimExpr(0, map.getContext()) &&
         map.getResult(1) == getAffineDimExpr(x, map.getContext()) &&
         map.getResult(2) == getAffineDimExpr(y, map.getContext());
}

/// The op that rounds the f32 result `c` of a 16-bit product (fresh, zero
/// filled) to `type`, if that is all `c` is for: an elementwise
/// `linalg.generic` reading only `c`, writing a buffer of `type` and the
/// same shape, its body one `arith.truncf`, with nothing between the
/// product and it but allocations and pure ops; `c` otherwise only freed.
/// The product can then write the 16-bit buffer itself (the GEMM rounds
/// its f32 accumulators once, as the truncf did), and the f32 buffer and
/// the pass over it go away.
linalg::GenericOp roundingConsumer(linalg::BatchMatmulOp op, Value c,
                                   Type type) {
  if (!c.getDefiningOp<memref::AllocOp>())
    return {};
  linalg::GenericOp rounding;
  for (Operation *it = op->getNextNode(); it; it = it->getNextNode()) {
    auto g = dyn_cast<linalg::GenericOp>(it);
    if (g && g.getNumDpsInputs() == 1 && g.getDpsInputs()[0] == c) {
      rounding = g;
      break;
    }
    if (!isa<memref::AllocOp>(it) &&
        (it->getNumRegions() || !isMemoryEffectFree(it)))
      return {};
  }
  if (!rounding || !rounding.hasPureBufferSemantics() ||
      rounding.getNumDpsInits() != 1)
    return {};
  auto out = cast<MemRefType>(rounding.getDpsInits()[0].getType());
  if (out.getElementType() != type ||
      out.getShape() != cast<MemRefType>(c.getType()).getShape() ||
      !llvm::all_of(rounding.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }) ||
      rounding.getNumParallelLoops() != rounding.getNumLoops())
    return {};
  Block &body = rounding.getRegion().front();
  auto trunc = dyn_cast<arith::TruncFOp>(&body.front());
  if (!trunc || trunc.getIn() != body.getArgument(0) ||
      trunc->getNextNode() != body.getTerminator() ||
      body.getTerminator()->getOperand(0) != trunc.getResult())
    return {};
  for (Operation *user : c.getUsers())
    if (user != op && user != rounding && !isa<memref::DeallocOp>(user) &&
        !(isa<linalg::FillOp>(user) && user->getNextNode() == op))
      return {};
  return rounding;
}

struct BatchMatmulToBlas : OpRewritePattern<linalg::BatchMatmulOp> {
  BatchMatmulToBlas(MLIRContext *ctx, StringRef prefix)
      : OpRewritePattern(ctx), prefix(prefix.str()) {}
  std::string prefix;

  LogicalResult matchAndRewrite(linalg::BatchMatmulOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureBufferSemantics())
      return failure();
    auto cType = cast<MemRefType>(op.getDpsInits()[0].getType());
    Type element = cType.getElementType();
    if (!element.isF32() && !element.isF64())
      return failure();
    // 16-bit operands with an f32 result (how 16-bit dot_generals lower):
    // tensor cores on the GPU, widened for sgemm on the CPU.
    Type operand = cast<MemRefType>(op.getDpsInputs()[0].getType())
                       .getElementType();
    if (operand != element && !(element.isF32() && (operand.isBF16() ||
                                                    operand.isF16())))
      return failure();
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    // dims: 0 = b, 1 = m, 2 = n, 3 = k
    bool transA, transB;
    if (isMap(maps[0], 1, 3))
      transA = false;
    else if (isMap(maps[0], 3, 1))
      transA = true;
    else
      return failure();
    if (isMap(maps[1], 3, 2))
      transB = false;
    else if (isMap(maps[1], 2, 3))
      transB = true;
    else
      return failure();
    if (!isMap(maps[2], 1, 2))
      return failure();
    for (Value v : op.getDpsInputs())
      if (cast<MemRefType>(v.getType()).getElementType() != operand)
        return failure();

    // A zero fill of C right before the product is folded into the call
    // (beta = 0): it would cost a pass over C plus reading it back.
    Value c = op.getDpsInits()[0];
    bool accumulate = true;
    if (auto fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
        fill && fill.hasPureBufferSemantics() &&
        fill.getDpsInits()[0] == c && matchPattern(fill.getInputs()[0], m_AnyZeroFloat())) {
      rewriter.eraseOp(fill);
      accumulate = false;
    }

    // A 16-bit product whose f32 result is only rounded to 16 bits: the
    // call writes the rounded result (`_bf16`, `_f16`: f32 accumulation,
    // one rounding) where the rounding op wrote it.
    linalg::GenericOp rounding;
    Operation *f32Alloc = nullptr;
    if (operand != element && !accumulate)
      rounding = roundingConsumer(op, c, operand);
    if (rounding) {
      rewriter.setInsertionPoint(rounding);
      Value f32 = c;
      f32Alloc = f32.getDefiningOp();
      c = rounding.getDpsInits()[0];
      element = operand;
      for (Operation *user : llvm::make_early_inc_range(f32.getUsers()))
        if (isa<memref::DeallocOp>(user))
          rewriter.eraseOp(user);
      rewriter.eraseOp(rounding);
    }

    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    int64_t dyn = ShapedType::kDynamic;
    auto anyLayout = StridedLayoutAttr::get(ctx, dyn, {dyn, dyn, dyn});
    auto argType = MemRefType::get({dyn, dyn, dyn}, element, anyLayout);
    auto operandType = MemRefType::get({dyn, dyn, dyn}, operand, anyLayout);
    std::string name = prefix + (rounding && operand.isBF16()  ? "_bf16"
                                 : rounding && operand.isF16() ? "_f16"
                                 : operand.isBF16()            ? "_bf16_f32"
                                 : operand.isF16()             ? "_f16_f32"
                                 : element.isF32()             ? "_f32"
                                                               : "_f64");
    auto module = op->getParentOfType<ModuleOp>();
    auto i64 = rewriter.getI64Type();
    auto fnType =
        FunctionType::get(ctx, {operandType, operandType, argType, i64, i64, i64}, {});
    if (!module.lookupSymbol<func::FuncOp>(name)) {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(module.getBody());
      auto decl = func::FuncOp::create(rewriter, loc, name, fnType);
      decl.setPrivate();
      decl->setAttr("llvm.emit_c_interface", rewriter.getUnitAttr());
    }
    SmallVector<Value> args;
    for (Value v : op.getDpsInputs())
      args.push_back(memref::CastOp::create(rewriter, loc, operandType, v));
    args.push_back(memref::CastOp::create(rewriter, loc, argType, c));
    args.push_back(arith::ConstantOp::create(rewriter, loc,
                                             rewriter.getI64IntegerAttr(transA)));
    args.push_back(arith::ConstantOp::create(rewriter, loc,
                                             rewriter.getI64IntegerAttr(transB)));
    args.push_back(arith::ConstantOp::create(
        rewriter, loc, rewriter.getI64IntegerAttr(accumulate)));
    LLVM_DEBUG(llvm::dbgs() << "BLAS: " << name << " transA " << transA
                            << " transB " << transB << " accumulate "
                            << accumulate << "\n");
    rewriter.replaceOpWithNewOp<func::CallOp>(op, name, TypeRange{}, args);
    if (f32Alloc && f32Alloc->use_empty())
      rewriter.eraseOp(f32Alloc);
    return success();
  }
};

struct LowerMatmulToBlasPass
    : loom::impl::LoomLowerMatmulToBlasBase<LowerMatmulToBlasPass> {
  using LoomLowerMatmulToBlasBase::LoomLowerMatmulToBlasBase;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    if (library != "blas" && library != "cublas") {
      getOperation().emitError()
          << "loom-lower-matmul-to-blas: unknown library '" << library
          << "' (expected blas or cublas)";
      return signalPassFailure();
    }
    patterns.add<BatchMatmulToBlas>(&getContext(),
                                    library == "cublas"
                                        ? "loom_rt_cublas_batch_matmul"
                                        : "loom_rt_batch_matmul");
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
