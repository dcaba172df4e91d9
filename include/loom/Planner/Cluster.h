//===- Cluster.h - What the cost model knows about the hardware -*- C++ -*-===//
//
// A cluster is one kind of device and a hierarchy of links: e.g. 8 GPUs on
// NVLink inside a node, nodes on InfiniBand. A collective among devices
// `stride` ranks apart uses the innermost level that holds them all.
//
// Presets (getCluster):
//   h100-8x             one node of 8 H100 SXM (NVLink 450 GB/s per direction)
//   h100-cluster:NxM    N nodes of M H100 (M <= 8 on NVLink; 400 Gb/s
//                       InfiniBand, 50 GB/s per GPU, between nodes)
//   cpu-local[:N]       N MPI ranks on this machine (default: its cores);
//                       FLOP/s and memory bandwidth measured when asked for,
//                       the link as `loom-run --calibrate -np N` measured it
// or a JSON file (docs/planner.md):
//   {"name": "...", "device": {"name": "...", "flops_f32": 6.7e13,
//    "flops_bf16": 9.89e14, "memory_bandwidth": 3.35e12, "memory": 8.0e10,
//    "efficiency": 0.6, "efficiency_f32": 0.77},
//    "levels": [{"name": "nvlink", "size": 8, "bandwidth": 4.5e11,
//                "latency": 2e-6, "overhead": 0}, ...]}  (innermost first)
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_PLANNER_CLUSTER_H
#define LOOM_PLANNER_CLUSTER_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <string>

namespace mlir::loom::planner {

struct DeviceSpec {
  std::string name;
  /// Peak FLOP/s for f32 and for 16-bit floats (bf16, f16).
  double flopsF32 = 0;
  double flops16 = 0;
  /// Memory bandwidth (bytes/s) that streaming ops reach (measured, not
  /// the data sheet's peak) and capacity (bytes) per device.
  double memoryBandwidth = 0;
  double memory = 0;
  /// Fraction of peak FLOP/s that contractions reach; `efficiencyF32` for
  /// f32 contractions where it differs (0: `efficiency`): a GPU's f32 FMA
  /// pipes and its tensor cores reach different fractions of their peaks.
  double efficiency = 0.6;
  double efficiencyF32 = 0;
  /// Seconds every op costs besides its FLOPs and bytes (the executor's
  /// dispatch, allocation and a loop nest's fixed cost), per forward op,
  /// per backward op and per parameter update: what loom-run --calibrate
  /// measures for cpu-local (0: not priced).
  double opOverhead = 0;
  /// The step writes the updated parameters and optimizer state to new
  /// buffers instead of updating them in place (Loom's CPU executor runs
  /// the step as a function: cpu-local), so both copies are held.
  bool newUpdateBuffers = false;
  /// Collectives the program starts early (loom-overlap-collectives) run
  /// on the runtime's lane while the program computes: the fraction of
  /// such a collective's time that still delays the step (the lane shares
  /// the device's cores), as loom-run --calibrate measures it for
  /// cpu-local. Negative: started collectives do not overlap, they are
  /// priced as blocking (NCCL, which runs them inside the start today).
  double overlapSlowdown = -1;
};

struct LinkLevel {
  std::string name;
  /// Devices (innermost level) or units of the level below.
  int64_t size = 1;
  /// Bytes/s per direction per device, and seconds per message.
  double bandwidth = 0;
  double latency = 0;
  /// Seconds every collective call adds besides its messages (the
  /// runtime's call, its signature check, ranks that share cores waiting to
  /// be scheduled): what loom-run --calibrate measures for cpu-local.
  double overhead = 0;
};

struct Link {
  double bandwidth = 0;
  double latency = 0;
  std::string level;
  double overhead = 0;
};

/// "loopback 2 GB/s 0.0 us + 41.0 us per call" (the per-call cost only
/// where there is one), as plan reports name an axis's link.
std::string describeLink(const Link &link);

/// What loom-run --calibrate measured for N ranks of this machine: the
/// time an all-reduce adds to a step, fitted as overhead + bytes sent /
/// bandwidth (loom-calibrate).
struct LinkCalibration {
  int64_t ranks = 0, cores = 0;
  double overhead = 0, bandwidth = 0;
  /// The fraction of one core's compute and of its memory bandwidth each
  /// rank got when all N ranks ran at once (0: not measured; the planner
  /// then assumes min(1, cores / N) for both).
  double computeShare = 0, streamShare = 0;
  /// DeviceSpec::overlapSlowdown as measured (-1: not measured).
  double overlapSlowdown = -1;
};

/// The numbers of a calibration file's "links" entry, or of loom-calibrate's
/// output (missing ones: 0, overhead -1), for `ranks` ranks.
LinkCalibration linkCalibrationFrom(const llvm::json::Object &o,
                                    int64_t ranks);

/// Where cpu-local's measurements are kept: $LOOM_CPU_CALIBRATION, else
/// $XDG_CACHE_HOME/loom/cpu-local.json, else ~/.cache/loom/cpu-local.json.
std::string cpuCalibrationPath();

/// Measures this machine's core again and writes it, with `link` (when
/// given: kept per rank count beside earlier ones), to cpuCalibrationPath();
/// returns the core as measured (opOverhead as kept before).
llvm::Expected<DeviceSpec> recalibrateCpu(const LinkCalibration *link);

/// Keeps the executor's measured cost per op (DeviceSpec::opOverhead) and
/// per step (reported, not priced) in cpuCalibrationPath().
llvm::Error setCpuOpOverhead(double perOp, double perStep);

/// Devices of one kind: `count` consecutive ranks.
struct DeviceKind {
  DeviceSpec spec;
  int64_t count = 0;
};

/// What an SPMD step on `kinds` is priced with: every device runs the same
/// program on equal shards, so a step takes as long as on the slowest kind
/// and must fit the smallest (field-wise minimum).
DeviceSpec slowestOf(llvm::ArrayRef<DeviceKind> kinds);

struct Cluster {
  std::string name;
  /// The device the planner prices: the only kind, or slowestOf(kinds).
  DeviceSpec device;
  /// Every kind, in rank order (one for presets and "device" files).
  llvm::SmallVector<DeviceKind, 2> kinds;
  /// Innermost first.
  llvm::SmallVector<LinkLevel, 2> levels;

  int64_t numDevices() const;
  /// The link a collective among `size` devices `stride` ranks apart uses:
  /// the innermost level whose blocks hold the whole group.
  Link link(int64_t stride, int64_t size) const;
};

/// A preset name (see above) or a JSON file.
llvm::Expected<Cluster> getCluster(llvm::StringRef spec);

/// One line per preset, for --help and errors.
std::string describeClusterPresets();

} // namespace mlir::loom::planner

#endif // LOOM_PLANNER_CLUSTER_H
