//===- device.h - Where a rank's tensors live and its step runs -*- C++ -*-===//
//
// The trainer never names CUDA: it asks a device to allocate its buffers,
// upload parameters, optimizer state and batches, run the step on them,
// read the loss back and download the results at the end. `host` is the
// CPU (buffers in this process's memory: what rank programs always did);
// `cuda` is Loom's CUDA library (runtime/src/cuda), which only GPU programs
// link. Collectives stay the runtime's Backend; a device only tells it how
// to reach its memory (collectiveDevice).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_DEVICE_H
#define LOOM_DEVICE_H

#include "loom/runtime.h"

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace loom::program {

/// Time spent in one kernel, GEMM or copy (a device's profile).
struct DeviceTime {
  std::string name;
  int64_t calls = 0;
  double milliseconds = 0;
};

class Device {
public:
  virtual ~Device() = default;
  /// "host", "cuda:0 (NVIDIA H100 80GB HBM3)".
  virtual std::string name() const = 0;
  virtual bool isHost() const = 0;
  /// `bytes` of the device's memory, 64-byte aligned (null for 0 bytes);
  /// false with an error naming the size and what is free.
  virtual bool allocate(size_t bytes, void **out, std::string &error) = 0;
  virtual void release(void *p) = 0;
  /// Copies that return when done.
  virtual bool upload(void *dst, const void *src, size_t bytes,
                      std::string &error) = 0;
  virtual bool download(void *dst, const void *src, size_t bytes,
                        std::string &error) = 0;
  /// Waits for the device's work; false with the error it ended in.
  virtual bool synchronize(std::string &error) = 0;
  /// How the runtime's collectives reach the device's memory (null: host).
  virtual const loom_device_t *collectiveDevice() const { return nullptr; }
  /// With profiling on: time per kernel and GEMM so far, most first.
  virtual std::vector<DeviceTime> profile() { return {}; }
  /// Forgets the times so far (after the first step, which loads kernels).
  virtual void restartProfile() {}
  /// The most device memory the program's allocations held at once (0
  /// where the device does not count it: host).
  virtual uint64_t peakBytes() { return 0; }
  /// Runs one call of the step (`call`) on the buffers at `buffers` (its
  /// arguments' and results' addresses). When `replayable` (the call does
  /// the same work on the same buffers every time and talks to no other
  /// process) a GPU records a call once and replays the recording for
  /// later calls on the same buffers: a CUDA graph. False with an error.
  virtual bool runStep(const std::vector<const void *> &buffers,
                       bool replayable, const std::function<void()> &call,
                       std::string &error) {
    (void)buffers, (void)replayable, (void)error;
    call();
    return true;
  }
  /// How the steps ran, for --profile (empty: nothing to say).
  virtual std::string stepNote() const { return {}; }
};

/// This process's memory.
std::unique_ptr<Device> makeHostDevice();

/// What a GPU program asks of its device (from its flags and environment).
struct DeviceOptions {
  /// The GPU (-1: the launcher's local rank modulo the visible GPUs).
  int ordinal = -1;
  bool syncEveryLaunch = false;
  bool profile = false;
  bool tf32 = false;
  /// Steps replayed as CUDA graphs where they can be (LOOM_CUDA_GRAPHS=0:
  /// never).
  bool graphs = true;
};

} // namespace loom::program

/// Defined by Loom's CUDA library (libloom_cuda.so), which GPU programs
/// link: opens the rank's GPU. Null with `error` naming what is missing
/// (driver, device). Declared weak where programs may lack it.
extern "C++" std::unique_ptr<loom::program::Device>
loom_cuda_open_device(const loom::program::DeviceOptions &options,
                      std::string &error);

#endif // LOOM_DEVICE_H
