//===- TestReshard.cpp - Test pass for the resharding library -------------===//
//
// `loom-test-reshard` rewrites every function of the form
//
//   func.func @f(%x: T {loom.sharding = FROM}) -> (T {loom.sharding = TO}) {
//     return %x : T
//   }
//
// into the per-device program that moves %x from FROM to TO, with the ops
// buildReshard emits (local types on the signature), and remarks the steps
// planReshard chose and the bytes each device sends — what the planner
// prices for the same pair. Test cases: test/Sharding/reshard.mlir.
//
//===----------------------------------------------------------------------===//

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Dialect/Loom/Utils/Utils.h"
#include "loom/Sharding/FactorSharding.h"
#include "loom/Sharding/Reshard.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::loom;

namespace {

struct TestReshardPass
    : PassWrapper<TestReshardPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestReshardPass)

  StringRef getArgument() const final { return "loom-test-reshard"; }
  StringRef getDescription() const final {
    return "Rewrite `return %arg` between two shardings into the resharding "
           "collectives, remarking the steps and bytes";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<LoomDialect>();
  }

  LogicalResult rewrite(func::FuncOp fn) {
    auto from = fn.getArgAttrOfType<ShardingAttr>(0, LoomDialect::kShardingAttrName);
    auto to = fn.getResultAttrOfType<ShardingAttr>(0, LoomDialect::kShardingAttrName);
    if (fn.getNumArguments() != 1 || fn.getNumResults() != 1 || !from || !to)
      return fn.emitError("loom-test-reshard: expected one argument and one "
                          "result, both with loom.sharding");
    FailureOr<MeshOp> mesh = findMesh(fn);
    if (failed(mesh))
      return failure();
    auto global = cast<RankedTensorType>(fn.getArgumentTypes()[0]);
    std::string error;
    FailureOr<SmallVector<ReshardStep>> steps =
        planReshard(toAxisSharding(from, *mesh), toAxisSharding(to, *mesh),
                    global.getShape(), axisSizes(*mesh), &error);
    if (failed(steps))
      return fn.emitError("cannot reshard: ") << error;
    FailureOr<RankedTensorType> in = localType(global, from, *mesh, fn.getLoc(), "argument");
    FailureOr<RankedTensorType> out = localType(global, to, *mesh, fn.getLoc(), "result");
    if (failed(in) || failed(out))
      return failure();
    double bytes = 0;
    std::string list;
    int64_t elementBytes = tensorBytes(global) / global.getNumElements();
    for (const ReshardStep &s : *steps) {
      int64_t n = 1;
      for (int a : s.axes)
        n *= axisSizes(*mesh)[a];
      bytes += collectiveBytesSent(s.kind, double(s.bufferElements() * elementBytes), n);
      list += (list.empty() ? "" : ", ") + describe(s, *mesh);
    }
    fn.emitRemark() << "reshard " << describe(toAxisSharding(from, *mesh), *mesh)
                    << " -> " << describe(toAxisSharding(to, *mesh), *mesh) << ": "
                    << (list.empty() ? "nothing" : list) << "; "
                    << llvm::formatv("{0}", bytes) << " bytes sent per device";
    Block &body = fn.getBody().front();
    body.getArgument(0).setType(*in);
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    OpBuilder b(ret);
    Value v = buildReshardSteps(b, ret.getLoc(), body.getArgument(0), *steps, *mesh);
    ret->setOperand(0, v);
    fn.setFunctionType(FunctionType::get(fn.getContext(), {*in}, {*out}));
    // Signature shardings now describe the global values of local pieces.
    fn->setAttr(LoomDialect::kPartitionedAttrName,
                FlatSymbolRefAttr::get(mesh->getSymNameAttr()));
    return success();
  }

  void runOnOperation() override {
    for (auto fn : llvm::to_vector(getOperation().getOps<func::FuncOp>()))
      if (failed(rewrite(fn)))
        return signalPassFailure();
  }
};

} // namespace

namespace mlir::loom::test {
void registerTestReshardPass() { PassRegistration<TestReshardPass>(); }
} // namespace mlir::loom::test
