//===- CostModel.h - Collective and compute time formulas --------*- C++ -*-===//
//
// The formulas the planner prices with (ring algorithms, as NCCL and MPI
// implement them for large messages; roofline compute). Bytes are per
// device; `n` devices share a link of `bandwidth` bytes/s per direction and
// `latency` seconds per step.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PLANNER_COSTMODEL_H
#define LOOM_PLANNER_COSTMODEL_H

#include "loom/Planner/Cluster.h"

#include "llvm/ADT/StringRef.h"

namespace mlir::loom::planner {

enum class CollectiveKind { AllReduce, AllGather, ReduceScatter, AllToAll };

llvm::StringRef collectiveName(CollectiveKind kind);

/// Bytes each device sends: all-reduce 2(n-1)/n S, the others (n-1)/n S.
/// `bytes` (S) is the whole buffer for all-reduce, the gathered result for
/// all-gather, the input for reduce-scatter, the local buffer for
/// all-to-all.
double collectiveBytesSent(CollectiveKind kind, double bytes, int64_t n);

/// Sent bytes over the bandwidth plus one latency per ring step: 2(n-1)
/// for all-reduce, n-1 for the others. Zero for one device.
double collectiveTime(CollectiveKind kind, double bytes, int64_t n,
                      const Link &link);

/// Roofline: max(flops / (peak * efficiency), bytes / memory bandwidth),
/// the peak for 16-bit floats when `half`.
double computeTime(const DeviceSpec &device, double flops, double bytes,
                   bool half);

} // namespace mlir::loom::planner

#endif // LOOM_PLANNER_COSTMODEL_H
