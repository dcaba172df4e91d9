//===- Collectives.h - Kinds of collective and what they send ---*- C++ -*-===//
//
// One description of the collectives for everything that counts them: the
// ops (CollectiveOpInterface::getBytesSent), the partitioner's report, the
// resharding library's steps and the planner's cost model. The formulas are
// those of ring algorithms, as NCCL and MPI run large messages.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DIALECT_LOOM_IR_COLLECTIVES_H
#define LOOM_DIALECT_LOOM_IR_COLLECTIVES_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace mlir::loom {

enum class CollectiveKind {
  AllReduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  /// Keeps this device's block: no communication.
  AllSlice,
  /// Sends to one peer and receives from another (pipeline hand-off).
  SendRecv,
};

/// "all_reduce", "all_gather", ...: the op's mnemonic.
llvm::StringRef collectiveName(CollectiveKind kind);

/// Bytes each of `n` devices sends in one call: all-reduce 2(n-1)/n S;
/// all-gather, reduce-scatter and all-to-all (n-1)/n S; send/recv S;
/// all-slice nothing. `bytes` (S) is the whole buffer for all-reduce, the
/// gathered result for all-gather, the input for reduce-scatter, the local
/// buffer for all-to-all and send/recv. Zero for one device.
double collectiveBytesSent(CollectiveKind kind, double bytes, int64_t n);

/// Messages in sequence (each pays the link latency once): 2(n-1) for
/// all-reduce, n-1 for the other ring collectives, 1 for send/recv, 0 for
/// all-slice and for one device.
double collectiveSteps(CollectiveKind kind, int64_t n);

} // namespace mlir::loom

#endif // LOOM_DIALECT_LOOM_IR_COLLECTIVES_H
