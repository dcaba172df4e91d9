//===- gpu.h - The process's GPU: device, context, stream, pool -*- C++ -*-===//
//
// A GPU program's rank runs on one GPU: the launcher's local rank modulo
// the visible GPUs (several ranks share one when there are fewer GPUs than
// ranks), its primary context, one stream on which every kernel, copy,
// cuBLAS call and NCCL collective of the rank is ordered, and the device's
// stream-ordered memory pool, kept (release threshold: unlimited) so that
// the step's allocations after the first come from the pool.
//
// Opened by the program before the step runs (Gpu::open). The generated
// host code's calls (mgpu.cpp) and cuBLAS calls (blas.cpp) cannot return an
// error: a failure ends the process with a message naming the kernel or
// the GEMM (Gpu::fatal).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CUDA_GPU_H
#define LOOM_RUNTIME_CUDA_GPU_H

#include "api.h"

#include "loom/device.h"
#include "loom/runtime.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace loom::cuda {

struct Options {
  /// Check for errors after every launch and GEMM (LOOM_GPU_SYNC=1): an
  /// asynchronous fault is then reported with the kernel that caused it.
  bool syncEveryLaunch = false;
  /// Time every kernel and GEMM with CUDA events (--profile).
  bool profile = false;
  /// f32 GEMMs on tensor cores in TF32 (LOOM_CUBLAS_TF32=1); off: f32 math.
  bool tf32 = false;
  /// The step recorded once as a CUDA graph and replayed (graph.cpp);
  /// LOOM_CUDA_GRAPHS=0 turns it off.
  bool graphs = true;
};

class Gpu {
public:
  /// Opens the process's GPU: `ordinal`, or (-1) the launcher's local rank
  /// modulo the visible GPUs. Once per process; null with `error` naming
  /// what is missing (driver, device).
  static Gpu *open(int ordinal, const Options &options, std::string &error);
  /// The opened GPU; opens the default one when none is (the mgpu ABI
  /// called outside a program), ending the process if that fails.
  static Gpu &current();
  /// The opened GPU or null.
  static Gpu *opened();

  const Driver &driver() const { return *drv; }
  CUstream stream() const { return rankStream; }
  int ordinal() const { return deviceOrdinal; }
  int deviceCount() const { return visible; }
  const std::string &name() const { return description; }
  const Options &options() const { return opts; }

  /// Makes the context current on the calling thread.
  bool makeCurrent(std::string &error);
  /// `error` = what + the result's text; false unless r is CUDA_SUCCESS.
  bool check(CUresult r, const std::string &what, std::string &error);
  /// Prints "loom: <what>" and ends the process with status 1.
  [[noreturn]] void fatal(const std::string &what);
  /// Calls fatal when r is an error; `what` names the operation.
  void require(CUresult r, const std::string &what);

  /// Waits for the stream; an error names the last kernel launched.
  bool synchronize(std::string &error);
  /// Stream-ordered device memory from the pool (null for 0 bytes).
  bool allocate(size_t bytes, void **out, std::string &error);
  void release(void *p);
  /// Whether `p` lies in memory allocate() returned and release() has not
  /// taken back: the driver cannot say so for a captured step's memory,
  /// which exists only once the graph runs.
  bool allocated(const void *p) const;
  bool copy(void *dst, const void *src, size_t bytes, loom_copy_kind_t kind,
            std::string &error);

  /// The runtime's view of this GPU (collectives on its buffers).
  const loom_device_t *collectiveDevice() const { return &device; }

  /// Profile mode: brackets one launch or GEMM named `name` with events
  /// (no-ops otherwise). `end` also checks after the launch in sync mode.
  void beginWork(const std::string &name);
  void endWork();
  /// Profile mode: the times so far, most expensive first (waits for the
  /// stream).
  std::vector<loom::program::DeviceTime> profile();
  /// The most device memory in use at once: the pool's high-water mark,
  /// or what the pool holds plus the CUDA graphs' peak (0 if unknown).
  uint64_t peakBytes();
  /// Waits for the stream and gives the pool's free memory back.
  bool trimPool(std::string &error);
  /// Drops the kernel times recorded so far.
  void restartProfile();
  /// The name of the last kernel or GEMM enqueued, for messages.
  const std::string &lastWork() const { return last; }

  /// Stream capture (graph.cpp). While the stream is captured nothing
  /// runs: an error, or a wait for the GPU (which a captured step cannot
  /// do), does not end the process but becomes the capture's problem (the
  /// first is kept), the step's host code goes on, and the caller abandons
  /// the capture and runs the step directly, where a real error is
  /// reported as usual.
  bool capturing() const { return inCapture; }
  void setCapturing(bool on) {
    inCapture = on;
    if (on)
      problem.clear();
  }
  const std::string &captureProblem() const { return problem; }
  /// While capturing: keeps `what` as the problem (unless one is) and
  /// returns true; otherwise false.
  bool refuseCapture(const std::string &what);

private:
  Gpu() = default;
  bool init(int ordinal, const Options &options, std::string &error);
  void collectEvents();

  const Driver *drv = nullptr;
  Options opts;
  CUdevice dev = 0;
  CUcontext context = nullptr;
  CUstream rankStream = nullptr;
  int deviceOrdinal = 0, visible = 0;
  std::string description;
  loom_device_t device;
  std::string last;
  bool inCapture = false;
  std::string problem;
  /// allocate()'s live allocations: start -> bytes.
  std::map<uintptr_t, size_t> live;
  /// Profile mode: events recorded and not yet read, by work name.
  struct Pending {
    std::string name;
    CUevent start, stop;
  };
  std::vector<Pending> pending;
  std::vector<CUevent> spareEvents;
  std::map<std::string, loom::program::DeviceTime> times;
  CUevent takeEvent();
};

} // namespace loom::cuda

#endif // LOOM_RUNTIME_CUDA_GPU_H
