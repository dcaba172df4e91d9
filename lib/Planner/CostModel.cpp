//===- CostModel.cpp - What collectives, resharding and compute cost ------===//

#include "loom/Planner/CostModel.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <limits>

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::planner;

double mlir::loom::planner::collectiveTime(CollectiveKind kind, double bytes,
                                           int64_t n, const Link &link) {
  if (n <= 1 || bytes <= 0)
    return 0;
  return collectiveBytesSent(kind, bytes, n) / link.bandwidth +
         collectiveSteps(kind, n) * link.latency + link.overhead;
}

double mlir::loom::planner::computeTime(const DeviceSpec &device, double flops,
                                        double bytes, bool half) {
  double efficiency = half || device.efficiencyF32 <= 0 ? device.efficiency
                                                        : device.efficiencyF32;
  double peak = (half ? device.flops16 : device.flopsF32) * efficiency;
  return std::max(flops / peak, bytes / device.memoryBandwidth);
}

Mask mlir::loom::planner::maskOf(ArrayRef<int> axes) {
  Mask m = 0;
  for (int a : axes)
    m |= Mask(1) << a;
  return m;
}

AxisSharding::Axes mlir::loom::planner::axesOf(Mask m) {
  AxisSharding::Axes axes;
  for (int a = 0; m >> a; ++a)
    if (m >> a & 1)
      axes.push_back(a);
  return axes;
}

//===----------------------------------------------------------------------===//
// MeshShape
//===----------------------------------------------------------------------===//

int64_t MeshShape::n(Mask m) const {
  int64_t r = 1;
  for (int a = 0; a < rank(); ++a)
    if (m >> a & 1)
      r *= sizes[a];
  return r;
}

Link MeshShape::link(Mask m) const {
  Link l{std::numeric_limits<double>::infinity(), 0, "", 0};
  for (int a = 0; a < rank(); ++a)
    if (m >> a & 1) {
      if (links[a].bandwidth < l.bandwidth)
        l = links[a];
      l.latency = std::max(l.latency, links[a].latency);
      l.overhead = std::max(l.overhead, links[a].overhead);
    }
  return l;
}

std::string MeshShape::axes(Mask m) const {
  std::string s = "[";
  bool first = true;
  for (int a = 0; a < rank(); ++a)
    if (m >> a & 1) {
      s += (first ? "" : ", ") + names[a];
      first = false;
    }
  return s + "]";
}

std::string MeshShape::str() const {
  std::string s;
  for (int a = 0; a < rank(); ++a)
    s += (a ? "," : "") + names[a] + "=" + std::to_string(sizes[a]);
  return s;
}

std::string MeshShape::shape() const {
  std::string s;
  for (int a = 0; a < rank(); ++a)
    s += (a ? "x" : "") + std::to_string(sizes[a]);
  return s;
}

std::string mlir::loom::planner::describe(const AxisSharding &s,
                                          const MeshShape &mesh) {
  if (s.isReplicated())
    return "replicated";
  return ::mlir::loom::describe(
      s, [&](int a) { return StringRef(mesh.names[a]); });
}

//===----------------------------------------------------------------------===//
// Costs
//===----------------------------------------------------------------------===//

double Costs::collective(CollectiveKind kind, Mask axes, double bytes,
                         ArrayRef<int> order) {
  int64_t n = mesh.n(axes);
  if (n <= 1 || bytes <= 0 || kind == CollectiveKind::AllSlice)
    return 0;
  Link l = mesh.link(axes);
  if (bucketed && kind == CollectiveKind::AllReduce) {
    l.latency *= bucketShare;
    l.overhead *= bucketShare;
  }
  double t = collectiveTime(kind, bytes, n, l);
  if (log) {
    // A group over several axes is named in the collective's order
    // ([tp, dp] and [dp, tp] are the same group, ranks ordered otherwise:
    // a reduce-scatter's or gather's blocks go to other ranks). An
    // all-reduce's result is the same in any order; the program names
    // its axes in the mesh's order, and so does the report.
    std::string named = mesh.axes(axes);
    if (order.size() > 1 && kind != CollectiveKind::AllReduce) {
      named = "[";
      for (int a : order)
        named += (named.size() > 1 ? ", " : "") + mesh.names[a];
      named += "]";
    }
    log->push_back({collectiveName(kind).str(), named, where,
                    collectiveBytesSent(kind, bytes, n), t, weight});
  }
  return t;
}

double Costs::reshard(const AxisSharding &from, const AxisSharding &to,
                      ArrayRef<int64_t> shape, double elementBytes) {
  if (from == to)
    return 0;
  FailureOr<SmallVector<ReshardStep>> steps =
      planReshard(from, to, shape, mesh.sizes);
  if (failed(steps))
    return std::numeric_limits<double>::infinity();
  double t = 0;
  for (const ReshardStep &s : *steps)
    t += collective(s.kind, maskOf(s.axes), s.bufferElements() * elementBytes,
                    s.axes);
  return t;
}

double Costs::reshardBytes(const AxisSharding &from, const AxisSharding &to,
                           ArrayRef<int64_t> shape, double elementBytes) {
  FailureOr<SmallVector<ReshardStep>> steps =
      planReshard(from, to, shape, mesh.sizes);
  if (failed(steps))
    return std::numeric_limits<double>::infinity();
  double bytes = 0;
  for (const ReshardStep &s : *steps)
    bytes += collectiveBytesSent(s.kind, s.bufferElements() * elementBytes,
                                 mesh.n(maskOf(s.axes)));
  return bytes;
}
