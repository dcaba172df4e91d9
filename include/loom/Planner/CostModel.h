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

#include "loom/Dialect/Loom/IR/Collectives.h"
#include "loom/Planner/Cluster.h"

namespace mlir::loom::planner {

// The kinds and byte counts are the dialect's (Collectives.h): what the
// planner prices is what the ops report.
using ::mlir::loom::CollectiveKind;
using ::mlir::loom::collectiveBytesSent;
using ::mlir::loom::collectiveName;

/// Sent bytes over the bandwidth plus one latency per ring step
/// (collectiveSteps). Zero for one device.
double collectiveTime(CollectiveKind kind, double bytes, int64_t n,
                      const Link &link);

/// Roofline: max(flops / (peak * efficiency), bytes / memory bandwidth),
/// the peak for 16-bit floats when `half`.
double computeTime(const DeviceSpec &device, double flops, double bytes,
                   bool half);

} // namespace mlir::loom::planner

#endif // LOOM_PLANNER_COSTMODEL_H
