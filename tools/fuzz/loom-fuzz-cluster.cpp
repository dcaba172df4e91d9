//===- loom-fuzz-cluster.cpp - Cluster description files -----------------===//
//
// Input: a cluster JSON file as `loomc --cluster FILE` reads it. A cluster
// that parses must describe something the planner can price: devices,
// positive finite speeds and memory, links for every level.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "loom/Planner/Cluster.h"
#include "llvm/Support/Error.h"

#include <cmath>

using namespace mlir::loom::planner;

static void checkSpec(const DeviceSpec &d) {
  for (double v : {d.flopsF32, d.flops16, d.memoryBandwidth, d.memory})
    if (!(v > 0) || !std::isfinite(v))
      loomfuzz::fail("a parsed cluster has a device with a zero, negative "
                       "or non-finite speed or memory");
  if (!(d.efficiency > 0 && d.efficiency <= 1))
    loomfuzz::fail("a parsed cluster has an efficiency outside (0, 1]");
  if (!(d.efficiencyF32 >= 0 && d.efficiencyF32 <= 1))
    loomfuzz::fail("a parsed cluster has an f32 efficiency outside [0, 1] "
                   "(0: the efficiency)");
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (1u << 16))
    return -1;
  std::string path = loomfuzz::writeScratchFile("cluster.json", data, size);
  llvm::Expected<Cluster> cluster = getCluster(path);
  if (!cluster) {
    llvm::consumeError(cluster.takeError());
    return 0;
  }
  if (cluster->numDevices() < 1)
    loomfuzz::fail("a parsed cluster has no devices");
  checkSpec(cluster->device);
  for (const DeviceKind &k : cluster->kinds)
    checkSpec(k.spec);
  // Every group a plan may form must find a link.
  int64_t n = cluster->numDevices();
  for (int64_t size = 2; size <= n && size <= 4096; size *= 2) {
    Link l = cluster->link(1, size);
    if (!(l.bandwidth > 0) || !std::isfinite(l.bandwidth) || !(l.latency >= 0))
      loomfuzz::fail("a parsed cluster prices a group of " +
                       std::to_string(size) + " with a bad link");
  }
  return 0;
}
