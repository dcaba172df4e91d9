//===- CostModel.cpp - Collective and compute time formulas ---------------===//

#include "loom/Planner/CostModel.h"

#include <algorithm>

using namespace mlir::loom::planner;

double mlir::loom::planner::collectiveTime(CollectiveKind kind, double bytes,
                                           int64_t n, const Link &link) {
  if (n <= 1 || bytes <= 0)
    return 0;
  return collectiveBytesSent(kind, bytes, n) / link.bandwidth +
         collectiveSteps(kind, n) * link.latency;
}

double mlir::loom::planner::computeTime(const DeviceSpec &device, double flops,
                                        double bytes, bool half) {
  double peak = (half ? device.flops16 : device.flopsF32) * device.efficiency;
  return std::max(flops / peak, bytes / device.memoryBandwidth);
}
