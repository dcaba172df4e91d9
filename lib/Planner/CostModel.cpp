//===- CostModel.cpp - Collective and compute time formulas ---------------===//

#include "loom/Planner/CostModel.h"

#include <algorithm>

using namespace mlir::loom::planner;

llvm::StringRef mlir::loom::planner::collectiveName(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return "all_reduce";
  case CollectiveKind::AllGather:
    return "all_gather";
  case CollectiveKind::ReduceScatter:
    return "reduce_scatter";
  case CollectiveKind::AllToAll:
    return "all_to_all";
  }
  return "";
}

double mlir::loom::planner::collectiveBytesSent(CollectiveKind kind,
                                                double bytes, int64_t n) {
  if (n <= 1 || bytes <= 0)
    return 0;
  double f = double(n - 1) / n;
  return kind == CollectiveKind::AllReduce ? 2 * f * bytes : f * bytes;
}

double mlir::loom::planner::collectiveTime(CollectiveKind kind, double bytes,
                                           int64_t n, const Link &link) {
  if (n <= 1 || bytes <= 0)
    return 0;
  double steps = kind == CollectiveKind::AllReduce ? 2.0 * (n - 1) : n - 1;
  return collectiveBytesSent(kind, bytes, n) / link.bandwidth +
         steps * link.latency;
}

double mlir::loom::planner::computeTime(const DeviceSpec &device, double flops,
                                        double bytes, bool half) {
  double peak = (half ? device.flops16 : device.flopsF32) * device.efficiency;
  return std::max(flops / peak, bytes / device.memoryBandwidth);
}
