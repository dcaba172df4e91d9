//===- PrintShardingRules.cpp - Report sharding rules as remarks ----------===//

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Sharding/Passes.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMPRINTSHARDINGRULES
#include "loom/Sharding/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {
struct PrintShardingRulesPass
    : loom::impl::LoomPrintShardingRulesBase<PrintShardingRulesPass> {
  void runOnOperation() override {
    bool failed = false;
    getOperation()->walk([&](ShardingRuleOpInterface op) {
      // Meshes and parameter declarations have no values to shard.
      if (op->getNumOperands() == 0 && op->getNumResults() == 0)
        return;
      ShardingRule rule = op.getShardingRule();
      if (llvm::failed(rule.verify(op))) {
        failed = true;
        return;
      }
      op->emitRemark() << "sharding rule: " << rule.str();
    });
    if (failed)
      signalPassFailure();
  }
};
} // namespace
