//===- Cluster.cpp - Cluster presets and description files ----------------===//

#include "loom/Planner/Cluster.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

using namespace mlir::loom::planner;
using llvm::Expected;
using llvm::StringRef;

int64_t Cluster::numDevices() const {
  int64_t n = 1;
  for (const LinkLevel &l : levels)
    n *= l.size;
  return n;
}

Link Cluster::link(int64_t stride, int64_t size) const {
  int64_t span = stride * size;
  int64_t block = 1;
  for (const LinkLevel &l : levels) {
    block *= l.size;
    if (span <= block)
      return {l.bandwidth, l.latency, l.name};
  }
  const LinkLevel &top = levels.back();
  return {top.bandwidth, top.latency, top.name};
}

static llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

static DeviceSpec h100() {
  DeviceSpec d;
  d.name = "H100-SXM-80GB";
  d.flopsF32 = 67e12;  // without tensor cores
  d.flops16 = 989e12;  // dense bf16/f16 tensor cores
  d.memoryBandwidth = 3.35e12;
  d.memory = 80e9;
  d.efficiency = 0.6;
  return d;
}

/// Single-core FLOP/s and memory bandwidth of this machine, measured once
/// (a few tens of milliseconds).
static DeviceSpec measureCpu() {
  DeviceSpec d;
  d.name = "cpu-core (measured)";
  // FLOP/s: independent multiply-adds the compiler vectorizes.
  constexpr int kLanes = 64;
  std::vector<float> acc(kLanes, 0.0f), x(kLanes, 1.0001f);
  auto t0 = std::chrono::steady_clock::now();
  int64_t iters = 0;
  double elapsed = 0;
  do {
    for (int r = 0; r < 20000; ++r)
      for (int i = 0; i < kLanes; ++i)
        acc[i] = acc[i] * 0.9999f + x[i];
    iters += 20000;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                            t0)
                  .count();
  } while (elapsed < 0.02);
  volatile float sink = acc[0];
  (void)sink;
  d.flopsF32 = 2.0 * kLanes * iters / elapsed;
  d.flops16 = d.flopsF32;
  // Memory bandwidth: copies of a buffer larger than the caches.
  std::vector<char> a(64 << 20, 1), b(64 << 20, 0);
  t0 = std::chrono::steady_clock::now();
  int copies = 0;
  do {
    std::memcpy(b.data(), a.data(), a.size());
    ++copies;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                            t0)
                  .count();
  } while (elapsed < 0.02);
  d.memoryBandwidth = 2.0 * a.size() * copies / elapsed;
  d.memory = 4e9;
  d.efficiency = 0.5;
  return d;
}

std::string mlir::loom::planner::describeClusterPresets() {
  return "h100-8x (one node, 8 H100 on NVLink), h100-cluster:NxM (N nodes "
         "of M H100, InfiniBand between nodes), cpu-local[:N] (N MPI ranks "
         "on this machine), or a JSON file";
}

static Expected<Cluster> parseFile(StringRef path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    return err("cannot read cluster '" + path + "': " +
               buf.getError().message() + " (expected " +
               describeClusterPresets() + ")");
  Expected<llvm::json::Value> v = llvm::json::parse((*buf)->getBuffer());
  if (!v)
    return err("cluster file '" + path + "': " + llvm::toString(v.takeError()));
  const llvm::json::Object *o = v->getAsObject();
  if (!o)
    return err("cluster file '" + path + "': expected a JSON object");
  Cluster c;
  c.name = o->getString("name").value_or(path).str();
  const llvm::json::Object *dev = o->getObject("device");
  if (!dev)
    return err("cluster file '" + path + "': missing \"device\"");
  auto number = [&](const llvm::json::Object *obj, StringRef key,
                    double &out, bool required) -> llvm::Error {
    if (std::optional<double> x = obj->getNumber(key)) {
      if (*x <= 0)
        return err("cluster file '" + path + "': \"" + key +
                   "\" must be positive");
      out = *x;
      return llvm::Error::success();
    }
    if (required)
      return err("cluster file '" + path + "': missing number \"" + key + "\"");
    return llvm::Error::success();
  };
  c.device.name = dev->getString("name").value_or("device").str();
  if (auto e = number(dev, "flops_f32", c.device.flopsF32, true))
    return std::move(e);
  c.device.flops16 = c.device.flopsF32;
  if (auto e = number(dev, "flops_bf16", c.device.flops16, false))
    return std::move(e);
  if (auto e = number(dev, "memory_bandwidth", c.device.memoryBandwidth, true))
    return std::move(e);
  if (auto e = number(dev, "memory", c.device.memory, true))
    return std::move(e);
  if (auto e = number(dev, "efficiency", c.device.efficiency, false))
    return std::move(e);
  const llvm::json::Array *levels = o->getArray("levels");
  if (!levels || levels->empty())
    return err("cluster file '" + path +
               "': missing \"levels\" (innermost first)");
  for (const llvm::json::Value &lv : *levels) {
    const llvm::json::Object *l = lv.getAsObject();
    if (!l)
      return err("cluster file '" + path + "': a level is not an object");
    LinkLevel level;
    level.name = l->getString("name").value_or("level").str();
    std::optional<int64_t> size = l->getInteger("size");
    if (!size || *size < 1)
      return err("cluster file '" + path + "': level '" + level.name +
                 "' needs a positive integer \"size\"");
    level.size = *size;
    if (auto e = number(l, "bandwidth", level.bandwidth, true))
      return std::move(e);
    if (auto e = number(l, "latency", level.latency, true))
      return std::move(e);
    c.levels.push_back(level);
  }
  return c;
}

Expected<Cluster> mlir::loom::planner::getCluster(StringRef spec) {
  Cluster c;
  c.name = spec.str();
  if (spec == "h100-8x") {
    c.device = h100();
    c.levels.push_back({"nvlink", 8, 450e9, 2e-6});
    return c;
  }
  if (spec.consume_front("h100-cluster:")) {
    StringRef n, m;
    std::tie(n, m) = spec.split('x');
    int64_t nodes = 0, perNode = 0;
    if (n.getAsInteger(10, nodes) || m.getAsInteger(10, perNode) ||
        nodes < 1 || perNode < 1 || perNode > 8)
      return err("cluster 'h100-cluster:" + spec +
                 "': expected NODESxGPUS with 1 to 8 GPUs per node, e.g. "
                 "h100-cluster:16x8");
    c.device = h100();
    c.levels.push_back({"nvlink", perNode, 450e9, 2e-6});
    c.levels.push_back({"infiniband", nodes, 50e9, 5e-6});
    return c;
  }
  if (spec == "cpu-local" || spec.starts_with("cpu-local:")) {
    int64_t ranks = std::max(1u, std::thread::hardware_concurrency());
    if (spec.consume_front("cpu-local:") &&
        (spec.getAsInteger(10, ranks) || ranks < 1))
      return err("cluster 'cpu-local:" + spec +
                 "': expected a number of ranks, e.g. cpu-local:4");
    static DeviceSpec measured = measureCpu();
    c.device = measured;
    // MPI between processes of one machine (TCP loopback in the tests).
    c.levels.push_back({"loopback", ranks, 1e9, 3e-5});
    return c;
  }
  return parseFile(spec);
}
