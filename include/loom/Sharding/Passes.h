//===- Passes.h - Sharding passes -------------------------------*- C++ -*-===//

#ifndef LOOM_SHARDING_PASSES_H
#define LOOM_SHARDING_PASSES_H

#include "loom/Dialect/Loom/IR/LoomDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::loom {

/// The first gradient bucket's size when collectives overlap compute
/// (PyTorch DDP's _DEFAULT_FIRST_BUCKET_BYTES): the sharding pipeline gives
/// it to loom-bucket-all-reduce and the planner prices it.
constexpr uint64_t kFirstBucketBytes = 1 << 20;

#define GEN_PASS_DECL
#include "loom/Sharding/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "loom/Sharding/Passes.h.inc"

} // namespace mlir::loom

#endif // LOOM_SHARDING_PASSES_H
