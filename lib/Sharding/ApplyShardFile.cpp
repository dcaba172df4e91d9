//===- ApplyShardFile.cpp - loom-apply-shard-file -------------------------===//

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Dialect/Loom/Utils/Utils.h"
#include "loom/Sharding/FactorSharding.h"
#include "loom/Sharding/Passes.h"
#include "loom/Support/Debug.h"

#include "mlir/AsmParser/AsmParser.h"
#include "llvm/Support/MemoryBuffer.h"

#define DEBUG_TYPE "loom-apply-shard-file"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMAPPLYSHARDFILE
#include "loom/Sharding/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

struct ApplyShardFilePass
    : loom::impl::LoomApplyShardFileBase<ApplyShardFilePass> {
  using LoomApplyShardFileBase::LoomApplyShardFileBase;

  void runOnOperation() override {
    FailureOr<ShardedFunction> step =
        lookupShardedFunction(getOperation(), function, getArgument());
    if (failed(step))
      return signalPassFailure();
    std::string error = apply(step->fn, step->mesh);
    if (!error.empty()) {
      step->fn.emitError() << getArgument() << ": " << error;
      return signalPassFailure();
    }
  }

  /// Returns an error message, or "".
  std::string apply(func::FuncOp step, MeshOp mesh) {
    auto buffer = llvm::MemoryBuffer::getFile(file);
    if (!buffer)
      return "cannot read " + file;
    MLIRContext *ctx = step.getContext();
    llvm::StringMap<unsigned> byName;
    for (unsigned i = 0; i < step.getNumArguments(); ++i) {
      if (ParameterOp p = boundParameter(step, i))
        byName[p.getSymName()] = i;
      if (auto n = step.getArgAttrOfType<StringAttr>(
              i, LoomDialect::kNameAttrName))
        byName[n.getValue()] = i;
    }
    SmallVector<StringRef> lines;
    (*buffer)->getBuffer().split(lines, '\n');
    llvm::StringMap<ShardingAttr> given;
    for (auto [n, raw] : llvm::enumerate(lines)) {
      StringRef line = raw.split('#').first.trim();
      if (line.empty())
        continue;
      auto [name, dims] = line.split(' ');
      std::string where = file + ":" + std::to_string(n + 1) + ": ";
      auto it = byName.find(name);
      if (it == byName.end())
        return where + "'" + name.str() +
               "' is neither a parameter nor an input of the model";
      std::string text = "#loom.sharding<@" + mesh.getSymName().str() + ", " +
                         dims.trim().str() + ">";
      auto attr = dyn_cast_or_null<ShardingAttr>(parseAttribute(text, ctx));
      if (!attr)
        return where + "cannot parse the sharding '" + dims.trim().str() +
               "' (expected e.g. [{\"dp\"}, {}])";
      if (failed(attr.verifyFor(step.getArgumentTypes()[it->second], step,
                                name.str())))
        return where + "the sharding does not fit '" + name.str() + "'";
      LLVM_DEBUG(llvm::dbgs() << name << ": " << attr << "\n");
      step.setArgAttr(it->second, LoomDialect::kShardingAttrName, attr);
      given[name] = attr;
    }
    // Optimizer state (state_of its weight) follows its weight unless given.
    for (unsigned i = 0; i < step.getNumArguments(); ++i) {
      ParameterOp p = boundParameter(step, i);
      if (!p || !p.getStateOfAttr() || given.count(p.getSymName()))
        continue;
      if (ShardingAttr s = given.lookup(p.getStateOfAttr().getValue()))
        step.setArgAttr(i, LoomDialect::kShardingAttrName, s);
    }
    return "";
  }
};

} // namespace
