//===- PassUtils.h - Helpers shared by the loom training passes -*- C++ -*-===//

#ifndef LOOM_LIB_DIALECT_LOOM_TRANSFORMS_PASSUTILS_H
#define LOOM_LIB_DIALECT_LOOM_TRANSFORMS_PASSUTILS_H

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::loom {

/// The function a pass works on: `name`, or the module's only function.
FailureOr<func::FuncOp> lookupFunction(ModuleOp module, StringRef name,
                                       StringRef pass);

/// A pass option of micro-batches that is 0 takes the count
/// loom-plan-pipeline chose (loom.pipeline_plan's micro_batches): sets
/// `count` to it, or emits an error naming `pass` and `option` when the
/// module has no such plan. Other counts are kept.
LogicalResult resolvePlannedMicroBatches(ModuleOp module, int64_t &count,
                                         StringRef pass, StringRef option);

/// loom-plan-pipeline's comparison in a loom.pipeline_plan (its
/// `without_pipeline` or `pipelined` entry) as one sentence; empty without
/// one.
std::string describePipelineDecision(DictionaryAttr plan);

/// The loom.parameter argument `index` of `fn` is bound to, if any.
ParameterOp boundParameter(func::FuncOp fn, unsigned index);

/// `loom.name` of argument `index`, or "arg<index>".
std::string argumentName(func::FuncOp fn, unsigned index);

/// The ops the first result of `fn` (the loss) depends on: the forward pass
/// of a training step.
llvm::DenseSet<Operation *> lossAncestors(func::FuncOp fn);

/// Per argument of a training step: for optimizer state (a parameter with
/// `state_of`, set by loom-build-train-step), the argument of the trainable
/// weight it belongs to; -1 otherwise.
SmallVector<int> optimizerStateOwners(func::FuncOp fn);

/// Removes the `loom.sharding` hints on ops of `fn` (a strategy or plan
/// replaces them); loom.sharding_constraint ops stay: they are requirements.
void dropShardingHints(func::FuncOp fn);

/// Bytes of a ranked tensor type (i1 stored as a byte; element types
/// without a bit width count 4 bytes); 0 for other types.
int64_t tensorBytes(Type type);

/// `1536` -> "1.5 KiB": bytes in B, KiB, MiB, GiB or TiB with one decimal.
std::string humanBytes(double bytes);

/// The model's name of `op`: its NameLoc (or the first one of a FusedLoc),
/// as `--stage-boundaries` takes it; "" when it has none.
std::string opName(Operation *op);

/// Checks that `fn` has a body of one block.
LogicalResult verifySingleBlock(func::FuncOp fn, StringRef pass);

/// Checks that `fn` has one block ending in func.return and a first result
/// that is a scalar float tensor (the loss).
LogicalResult verifyLossFunction(func::FuncOp fn, StringRef pass);

} // namespace mlir::loom

#endif // LOOM_LIB_DIALECT_LOOM_TRANSFORMS_PASSUTILS_H
