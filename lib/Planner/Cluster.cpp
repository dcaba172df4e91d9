//===- Cluster.cpp - Cluster presets and description files ----------------===//

#include "loom/Planner/Cluster.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cblas.h>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <unistd.h>
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
      return {l.bandwidth, l.latency, l.name, l.overhead};
  }
  const LinkLevel &top = levels.back();
  return {top.bandwidth, top.latency, top.name, top.overhead};
}

std::string mlir::loom::planner::describeLink(const Link &link) {
  std::string s = llvm::formatv("{0} {1:f0} GB/s {2:f1} us", link.level,
                                link.bandwidth / 1e9, link.latency * 1e6);
  if (link.overhead > 0)
    s += llvm::formatv(" + {0:f1} us per call", link.overhead * 1e6).str();
  return s;
}

/// The most devices a cluster file may describe.
static constexpr int64_t kMaxDevices = int64_t(1) << 24;

static llvm::Error err(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

static DeviceSpec h100() {
  DeviceSpec d;
  d.name = "H100-SXM-80GB";
  // Peaks from the data sheet; what is reached, measured on an H100 80GB
  // HBM3 with bench/h100/gpt_step.py (2026-11-23, PyTorch 2.11, cuBLAS):
  // the median matrix product at GPT shapes reached 70% of peak (bf16
  // 32-80%, f32 59-77%), and a streaming elementwise op 2.54 TB/s of the
  // 3.35 TB/s peak. Time is priced at what is reached.
  d.flopsF32 = 67e12;  // without tensor cores
  d.flops16 = 989e12;  // dense bf16/f16 tensor cores
  d.memoryBandwidth = 2.54e12;
  d.memory = 80e9;
  d.efficiency = 0.7;
  // Loom's own steps on an H100 (bench/gpu/measured-h100-2026-11-27.json,
  // bench/gpu/predict.py): the 16-bit GPT steps were priced at 0.92-1.00
  // of their measured time, the f32 ones at 1.23-1.26 with f32 products
  // at 70 %: cuBLAS's SGEMM reached 51.5 of the 67 TFLOP/s there
  // (gpu-selftest gemm-speed, 4096^3), 77 %; priced so, 1.13-1.16.
  d.efficiencyF32 = 0.77;
  return d;
}

/// What cpu-local assumes besides the measured numbers: contractions run
/// at the measured single-thread SGEMM rate (efficiency 1).
static DeviceSpec measureCpuDefaults() {
  DeviceSpec d;
  d.name = "cpu-core (measured)";
  d.memory = 4e9;
  d.efficiency = 1.0;
  // Loom's CPU executor runs the step as a function (new buffers for the
  // updated parameters and optimizer state).
  d.newUpdateBuffers = true;
  return d;
}

static double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

/// Bytes/s an elementwise op on buffers larger than the caches reaches
/// (y = a + b, as the executor's fused elementwise loops run); the result
/// is read back so that the loop is not optimized away.
static double measureStreamBandwidth() {
  constexpr size_t n = 8 << 20; // 32 MiB per buffer
  std::vector<float> a(n, 1.0f), b(n, 2.0f), y(n, 3.0f);
  auto t0 = std::chrono::steady_clock::now();
  int passes = 0;
  double elapsed = 0;
  volatile float sink = 0;
  do {
    for (size_t i = 0; i < n; ++i)
      y[i] = a[i] + b[i];
    a[passes % n] = y[(passes * 4099) % n];
    sink = sink + y[passes % n];
    ++passes;
    elapsed = secondsSince(t0);
  } while (elapsed < 0.05);
  return 3.0 * sizeof(float) * n * passes / elapsed;
}

/// FLOP/s of the executor's own SGEMM (OpenBLAS, one thread) on 128x128x128
/// products, the size of the products of the CPU tests and benchmarks.
static double measureSgemm() {
  constexpr int n = 128;
  std::vector<float> a(n * n, 1.0f), b(n * n, 0.5f), c(n * n, 0.0f);
  int threads = openblas_get_num_threads();
  openblas_set_num_threads(1);
  // One product first: OpenBLAS initializes its buffers on first use.
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f,
              a.data(), n, b.data(), n, 0.0f, c.data(), n);
  auto t0 = std::chrono::steady_clock::now();
  int64_t products = 0;
  double elapsed = 0;
  do {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f,
                a.data(), n, b.data(), n, 1.0f, c.data(), n);
    ++products;
    elapsed = secondsSince(t0);
  } while (elapsed < 0.05);
  openblas_set_num_threads(threads);
  return 2.0 * n * n * n * products / elapsed;
}

/// What one core of this machine reaches (about 0.3 s): the best of three
/// measurements each, as a shared machine's neighbours and frequency
/// changes only ever make one slower (single measurements of the stream
/// bandwidth here ranged over 27-43 GB/s).
static DeviceSpec measureCpu() {
  DeviceSpec d = measureCpuDefaults();
  for (int i = 0; i < 3; ++i) {
    d.memoryBandwidth = std::max(d.memoryBandwidth, measureStreamBandwidth());
    d.flopsF32 = std::max(d.flopsF32, measureSgemm());
  }
  d.flops16 = d.flopsF32;
  return d;
}

std::string mlir::loom::planner::cpuCalibrationPath() {
  if (const char *p = std::getenv("LOOM_CPU_CALIBRATION"))
    return p;
  llvm::SmallString<256> path;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    path = xdg;
  else if (const char *home = std::getenv("HOME"); home && *home)
    llvm::sys::path::append(path, home, ".cache");
  else
    return "";
  llvm::sys::path::append(path, "loom", "cpu-local.json");
  return std::string(path);
}

/// The calibration file's object; empty when it is missing or not JSON.
static llvm::json::Object readCalibration(const std::string &path) {
  if (!path.empty())
    if (auto buf = llvm::MemoryBuffer::getFile(path)) {
      Expected<llvm::json::Value> v = llvm::json::parse((*buf)->getBuffer());
      if (!v)
        llvm::consumeError(v.takeError());
      else if (llvm::json::Object *o = v->getAsObject())
        return std::move(*o);
    }
  return {};
}

/// Written whole and renamed: ranks and tests may race to create it.
static bool writeCalibration(const std::string &path, llvm::json::Object o) {
  llvm::sys::fs::create_directories(llvm::sys::path::parent_path(path));
  std::string tmp = path + "." + std::to_string(::getpid());
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(tmp, ec);
    if (ec)
      return false;
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(o))) << "\n";
  }
  if (llvm::sys::fs::rename(tmp, path)) {
    llvm::sys::fs::remove(tmp);
    return false;
  }
  return true;
}

static int64_t hardwareCores() {
  return std::max(1u, std::thread::hardware_concurrency());
}

/// This machine's core, measured once and cached, so that the same command
/// plans the same way every time (loom-run --calibrate measures again).
static DeviceSpec calibratedCpu() {
  std::string path = cpuCalibrationPath();
  llvm::json::Object o = readCalibration(path);
  std::optional<double> f = o.getNumber("sgemm_flops_f32");
  std::optional<double> b = o.getNumber("memory_bandwidth");
  if (f && b && *f > 0 && *b > 0 && std::isfinite(*f) && std::isfinite(*b)) {
    DeviceSpec d = measureCpuDefaults();
    d.name = "cpu-core (calibrated, " + path + ")";
    d.flopsF32 = d.flops16 = *f;
    d.memoryBandwidth = *b;
    std::optional<double> op = o.getNumber("op_overhead");
    if (op && *op >= 0 && *op < 1)
      d.opOverhead = *op;
    return d;
  }
  DeviceSpec d = measureCpu();
  if (path.empty())
    return d;
  o["sgemm_flops_f32"] = d.flopsF32;
  o["memory_bandwidth"] = d.memoryBandwidth;
  if (writeCalibration(path, std::move(o)))
    d.name = "cpu-core (measured, cached in " + path + ")";
  return d;
}

LinkCalibration
mlir::loom::planner::linkCalibrationFrom(const llvm::json::Object &o,
                                         int64_t ranks) {
  LinkCalibration c;
  c.ranks = ranks;
  c.cores = o.getInteger("cores").value_or(0);
  c.overhead = o.getNumber("overhead").value_or(-1);
  c.bandwidth = o.getNumber("bandwidth").value_or(0);
  c.computeShare = o.getNumber("compute_share").value_or(0);
  c.streamShare = o.getNumber("stream_share").value_or(0);
  c.overlapSlowdown = o.getNumber("overlap_slowdown").value_or(-1);
  return c;
}

/// The link loom-run --calibrate -np `ranks` measured on this machine
/// (same core count), if any.
static std::optional<LinkCalibration> calibratedLink(int64_t ranks) {
  llvm::json::Object o = readCalibration(cpuCalibrationPath());
  const llvm::json::Object *links = o.getObject("links");
  const llvm::json::Object *l =
      links ? links->getObject(std::to_string(ranks)) : nullptr;
  if (!l)
    return std::nullopt;
  LinkCalibration c = linkCalibrationFrom(*l, ranks);
  auto share = [](double x) { return x >= 0.01 && x <= 1.5; };
  if (!share(c.computeShare) || !share(c.streamShare))
    c.computeShare = c.streamShare = 0;
  if (c.cores != hardwareCores() || !(c.overhead >= 0) ||
      !std::isfinite(c.overhead) || !(c.bandwidth > 0) ||
      !std::isfinite(c.bandwidth))
    return std::nullopt;
  return c;
}

Expected<DeviceSpec>
mlir::loom::planner::recalibrateCpu(const LinkCalibration *link) {
  std::string path = cpuCalibrationPath();
  if (path.empty())
    return err("no place for cpu-local's calibration: neither "
               "LOOM_CPU_CALIBRATION, XDG_CACHE_HOME nor HOME is set");
  llvm::json::Object o = readCalibration(path);
  DeviceSpec d = measureCpu();
  d.name = "cpu-core (calibrated, " + path + ")";
  if (std::optional<double> op = o.getNumber("op_overhead"))
    d.opOverhead = *op;
  o["sgemm_flops_f32"] = d.flopsF32;
  o["memory_bandwidth"] = d.memoryBandwidth;
  if (link) {
    llvm::json::Object *links = o.getObject("links");
    if (!links) {
      o["links"] = llvm::json::Object();
      links = o.getObject("links");
    }
    (*links)[std::to_string(link->ranks)] = llvm::json::Object{
        {"cores", link->cores},
        {"overhead", link->overhead},
        {"bandwidth", link->bandwidth},
        {"compute_share", link->computeShare},
        {"stream_share", link->streamShare},
        {"overlap_slowdown", link->overlapSlowdown}};
  }
  if (!writeCalibration(path, std::move(o)))
    return err("cannot write cpu-local's calibration to '" + path + "'");
  return d;
}

llvm::Error mlir::loom::planner::setCpuOpOverhead(double perOp,
                                                  double perStep) {
  std::string path = cpuCalibrationPath();
  llvm::json::Object o = readCalibration(path);
  o["op_overhead"] = perOp;
  o["step_overhead"] = perStep;
  if (path.empty() || !writeCalibration(path, std::move(o)))
    return err("cannot write cpu-local's calibration to '" + path + "'");
  return llvm::Error::success();
}

std::string mlir::loom::planner::describeClusterPresets() {
  return "h100-8x (one node, 8 H100 on NVLink), h100-cluster:NxM (N nodes "
         "of M H100, InfiniBand between nodes), cpu-local[:N] (N MPI ranks "
         "on this machine), or a JSON file";
}

namespace {

/// Reads a cluster file; every error names the file and the key at fault.
class ClusterFileParser {
public:
  explicit ClusterFileParser(StringRef path) : path(path) {}

  /// `key` of `o` into `out` (`fallback` when absent); present, it must be
  /// a string (a name of any JSON type was taken as absent).
  llvm::Error optionalString(const llvm::json::Object &o, StringRef key,
                             const llvm::Twine &where, std::string &out,
                             StringRef fallback) {
    const llvm::json::Value *v = o.get(key);
    if (!v) {
      out = fallback.str();
      return llvm::Error::success();
    }
    std::optional<StringRef> s = v->getAsString();
    if (!s)
      return fail(where + ": \"" + key + "\" must be a string");
    out = s->str();
    return llvm::Error::success();
  }

  Expected<Cluster> parse(const llvm::json::Value &v) {
    const llvm::json::Object *o = v.getAsObject();
    if (!o)
      return fail("expected a JSON object");
    if (auto e = onlyKeys(*o, "the cluster", {"name", "device", "devices", "levels"}))
      return std::move(e);
    Cluster c;
    if (auto e = optionalString(*o, "name", "the cluster", c.name, path))
      return std::move(e);
    const llvm::json::Object *dev = o->getObject("device");
    const llvm::json::Array *devs = o->getArray("devices");
    if (bool(dev) == bool(devs))
      return fail("give either \"device\" (one kind) or \"devices\" (a list "
                  "of kinds with counts, in rank order)");
    if (auto e = parseLevels(o->getArray("levels"), c))
      return std::move(e);
    if (dev) {
      DeviceKind kind;
      if (auto e = parseDevice(*dev, "device", false, kind))
        return std::move(e);
      kind.count = c.numDevices();
      c.kinds.push_back(kind);
    } else {
      int64_t total = 0;
      for (auto [i, value] : llvm::enumerate(*devs)) {
        const llvm::json::Object *d = value.getAsObject();
        std::string where = "devices[" + std::to_string(i) + "]";
        if (!d)
          return fail(where + " is not an object");
        DeviceKind kind;
        if (auto e = parseDevice(*d, where, true, kind))
          return std::move(e);
        total += kind.count;
        c.kinds.push_back(kind);
      }
      if (c.kinds.empty())
        return fail("\"devices\" is empty");
      if (total != c.numDevices())
        return fail(llvm::formatv("\"devices\" lists {0} devices but the "
                                  "levels make {1}",
                                  total, c.numDevices())
                        .str());
    }
    c.device = slowestOf(c.kinds);
    return c;
  }

private:
  llvm::Error fail(const llvm::Twine &msg) {
    return err("cluster file '" + path + "': " + msg);
  }

  /// Unknown keys are errors: a misspelled "bandwith" must not silently
  /// fall back to a default.
  llvm::Error onlyKeys(const llvm::json::Object &o, StringRef what,
                       llvm::ArrayRef<StringRef> allowed) {
    for (const auto &kv : o)
      if (!llvm::is_contained(allowed, StringRef(kv.first))) {
        std::string list;
        for (StringRef a : allowed)
          list += (list.empty() ? "\"" : ", \"") + a.str() + "\"";
        return fail("unknown key \"" + StringRef(kv.first) + "\" in " + what +
                    " (expected " + list + ")");
      }
    return llvm::Error::success();
  }

  /// A positive number, within [lo, hi] where given: plausible hardware,
  /// so that no price overflows (a device of 5e-324 FLOP/s priced every op
  /// at infinity, which aborted the ILP solver).
  llvm::Error number(const llvm::json::Object &obj, StringRef where,
                     StringRef key, double &out, bool required,
                     double lo = 0, double hi = 0, StringRef unit = "") {
    if (const llvm::json::Value *v = obj.get(key)) {
      std::optional<double> x = v->getAsNumber();
      if (!x || !(*x > 0) || !std::isfinite(*x))
        return fail(where + " \"" + key + "\" must be a positive number");
      if (hi > 0 && (*x < lo || *x > hi))
        return fail(llvm::formatv("{0} \"{1}\" must be from {2:e0} to {3:e0} "
                                  "{4}, not {5:e2}",
                                  where, key, lo, hi, unit, *x)
                        .str());
      out = *x;
      return llvm::Error::success();
    }
    if (required)
      return fail(where + ": missing number \"" + key + "\"");
    return llvm::Error::success();
  }

  llvm::Error parseDevice(const llvm::json::Object &dev, StringRef where,
                          bool counted, DeviceKind &kind) {
    llvm::SmallVector<StringRef> keys = {"name", "flops_f32", "flops_bf16",
                                   "memory_bandwidth", "memory", "efficiency",
                                   "efficiency_f32", "op_overhead",
                                   "overlap_slowdown"};
    if (counted)
      keys.push_back("count");
    if (auto e = onlyKeys(dev, where, keys))
      return e;
    DeviceSpec &d = kind.spec;
    if (auto e = optionalString(dev, "name", where, d.name, "device"))
      return e;
    if (auto e = number(dev, where, "flops_f32", d.flopsF32, true, 1e3, 1e21,
                        "FLOP/s"))
      return e;
    d.flops16 = d.flopsF32;
    if (auto e = number(dev, where, "flops_bf16", d.flops16, false, 1e3, 1e21,
                        "FLOP/s"))
      return e;
    if (auto e = number(dev, where, "memory_bandwidth", d.memoryBandwidth, true,
                        1e3, 1e17, "bytes/s"))
      return e;
    if (auto e = number(dev, where, "memory", d.memory, true, 1e3, 1e18,
                        "bytes"))
      return e;
    if (auto e = number(dev, where, "efficiency", d.efficiency, false))
      return e;
    if (d.efficiency > 1)
      return fail(where + " \"efficiency\" is the fraction of peak FLOP/s "
                  "reached, in (0, 1]");
    if (auto e = number(dev, where, "efficiency_f32", d.efficiencyF32, false))
      return e;
    if (d.efficiencyF32 > 1)
      return fail(where + " \"efficiency_f32\" is the fraction of peak f32 "
                  "FLOP/s reached, in (0, 1]");
    // Seconds per op besides its FLOPs and bytes (0: none).
    if (const llvm::json::Value *v = dev.get("op_overhead")) {
      std::optional<double> x = v->getAsNumber();
      if (!x || !(*x >= 0) || *x > 1)
        return fail(where + " \"op_overhead\" must be a number of seconds "
                    "from 0 to 1");
      d.opOverhead = *x;
    }
    // Started collectives overlap compute (>= 0: the share of their time
    // that still delays the step); absent: they are priced as blocking.
    if (const llvm::json::Value *v = dev.get("overlap_slowdown")) {
      std::optional<double> x = v->getAsNumber();
      if (!x || !(*x >= 0) || *x > 2)
        return fail(where + " \"overlap_slowdown\" must be a number in "
                    "[0, 2] (the share of a started collective's time that "
                    "still delays the step)");
      d.overlapSlowdown = *x;
    }
    if (counted) {
      std::optional<int64_t> n = dev.getInteger("count");
      if (!n || *n < 1 || *n > kMaxDevices)
        return fail(where + " needs a positive integer \"count\"");
      kind.count = *n;
    }
    return llvm::Error::success();
  }

  llvm::Error parseLevels(const llvm::json::Array *levels, Cluster &c) {
    if (!levels || levels->empty())
      return fail("missing \"levels\" (innermost first)");
    for (const llvm::json::Value &lv : *levels) {
      const llvm::json::Object *l = lv.getAsObject();
      if (!l)
        return fail("a level is not an object");
      LinkLevel level;
      if (auto e = optionalString(*l, "name", "a level", level.name, "level"))
        return e;
      std::string where = "level '" + level.name + "'";
      if (auto e = onlyKeys(*l, where,
                            {"name", "size", "bandwidth", "latency",
                             "overhead"}))
        return e;
      std::optional<int64_t> size = l->getInteger("size");
      if (!size || *size < 1)
        return fail(where + " needs a positive integer \"size\"");
      // The planner enumerates meshes over the devices: 2^24 is far more
      // than any cluster and keeps products of sizes from overflowing.
      if (*size > kMaxDevices / c.numDevices())
        return fail(llvm::formatv("the levels make more than {0} devices",
                                  kMaxDevices)
                        .str());
      level.size = *size;
      if (auto e = number(*l, where, "bandwidth", level.bandwidth, true, 1e3,
                          1e17, "bytes/s"))
        return e;
      if (auto e = number(*l, where, "latency", level.latency, true, 1e-12,
                          1e3, "seconds"))
        return e;
      // Seconds per collective call besides its messages (0: none).
      if (const llvm::json::Value *v = l->get("overhead")) {
        std::optional<double> x = v->getAsNumber();
        if (!x || !(*x >= 0) || *x > 1e3)
          return fail(where + " \"overhead\" must be a number of seconds "
                      "from 0 to 1e3");
        level.overhead = *x;
      }
      c.levels.push_back(level);
    }
    return llvm::Error::success();
  }

  std::string path;
};

} // namespace

DeviceSpec mlir::loom::planner::slowestOf(llvm::ArrayRef<DeviceKind> kinds) {
  DeviceSpec d = kinds.front().spec;
  if (kinds.size() == 1)
    return d;
  d.name.clear();
  auto f32Efficiency = [](const DeviceSpec &s) {
    return s.efficiencyF32 > 0 ? s.efficiencyF32 : s.efficiency;
  };
  d.efficiencyF32 = f32Efficiency(d);
  for (const DeviceKind &k : kinds) {
    d.name += (d.name.empty() ? "" : " + ") + std::to_string(k.count) + "x " +
              k.spec.name;
    d.flopsF32 = std::min(d.flopsF32, k.spec.flopsF32);
    d.flops16 = std::min(d.flops16, k.spec.flops16);
    d.memoryBandwidth = std::min(d.memoryBandwidth, k.spec.memoryBandwidth);
    d.memory = std::min(d.memory, k.spec.memory);
    d.efficiency = std::min(d.efficiency, k.spec.efficiency);
    d.efficiencyF32 = std::min(d.efficiencyF32, f32Efficiency(k.spec));
    d.newUpdateBuffers |= k.spec.newUpdateBuffers;
    d.opOverhead = std::max(d.opOverhead, k.spec.opOverhead);
  }
  // Overlap only where every kind overlaps, at the largest slowdown.
  d.overlapSlowdown = kinds.front().spec.overlapSlowdown;
  for (const DeviceKind &k : kinds)
    d.overlapSlowdown = k.spec.overlapSlowdown < 0
                            ? -1
                            : d.overlapSlowdown < 0
                                  ? d.overlapSlowdown
                                  : std::max(d.overlapSlowdown,
                                             k.spec.overlapSlowdown);
  d.name += " (priced as the slowest and smallest)";
  return d;
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
  return ClusterFileParser(path).parse(*v);
}

Expected<Cluster> mlir::loom::planner::getCluster(StringRef spec) {
  Cluster c;
  c.name = spec.str();
  if (spec == "h100-8x") {
    c.device = h100();
    c.levels.push_back({"nvlink", 8, 450e9, 2e-6});
    c.kinds.push_back({c.device, c.numDevices()});
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
    c.kinds.push_back({c.device, c.numDevices()});
    return c;
  }
  if (spec == "cpu-local" || spec.starts_with("cpu-local:")) {
    int64_t ranks = std::max(1u, std::thread::hardware_concurrency());
    if (spec.consume_front("cpu-local:") &&
        (spec.getAsInteger(10, ranks) || ranks < 1))
      return err("cluster 'cpu-local:" + spec +
                 "': expected a number of ranks, e.g. cpu-local:4");
    static DeviceSpec measured = calibratedCpu();
    c.device = measured;
    std::optional<LinkCalibration> calibrated =
        ranks > 1 ? calibratedLink(ranks) : std::nullopt;
    // Each rank's share of a core's compute and memory bandwidth when all
    // run at once: as loom-run --calibrate measured it, else its share of
    // the cores.
    int64_t cores = hardwareCores();
    if (calibrated && calibrated->computeShare > 0) {
      c.device.flopsF32 *= calibrated->computeShare;
      c.device.flops16 *= calibrated->computeShare;
      c.device.memoryBandwidth *= calibrated->streamShare;
      c.device.opOverhead /= calibrated->computeShare;
      c.device.name += llvm::formatv(" ({0} ranks on {1} cores: {2:f2} of "
                                     "its compute, {3:f2} of its memory "
                                     "bandwidth each, measured)",
                                     ranks, cores, calibrated->computeShare,
                                     calibrated->streamShare)
                           .str();
    } else if (ranks > cores) {
      double share = double(cores) / double(ranks);
      c.device.flopsF32 *= share;
      c.device.flops16 *= share;
      c.device.memoryBandwidth *= share;
      c.device.opOverhead /= share;
      c.device.name += llvm::formatv(" ({0} ranks share {1} cores)", ranks,
                                     cores)
                           .str();
    }
    // MPI between processes of one machine: as loom-run --calibrate -np N
    // measured it, else a guess (1 GB/s, 30 us per ring step).
    LinkLevel loopback{"loopback", ranks, 1e9, 3e-5, 0};
    if (calibrated && calibrated->overlapSlowdown >= 0 &&
        calibrated->overlapSlowdown <= 2) {
      c.device.overlapSlowdown = calibrated->overlapSlowdown;
      c.device.name += llvm::formatv(", started collectives overlap (each "
                                     "delays the step by {0:f2} of its "
                                     "time, measured)",
                                     calibrated->overlapSlowdown)
                           .str();
    }
    if (calibrated) {
      loopback.name = "loopback (calibrated)";
      loopback.bandwidth = calibrated->bandwidth;
      loopback.latency = 0;
      loopback.overhead = calibrated->overhead;
    }
    c.levels.push_back(loopback);
    c.kinds.push_back({c.device, c.numDevices()});
    return c;
  }
  return parseFile(spec);
}
