//===- device.cpp - The CUDA device a GPU program's trainer runs on -------===//

#include "gpu.h"
#include "graph.h"

#include "loom/device.h"

using namespace loom::cuda;

namespace {

class CudaDevice final : public loom::program::Device {
public:
  explicit CudaDevice(Gpu &gpu) : gpu(gpu), graphs(gpu) {}
  std::string name() const override { return gpu.name(); }
  bool isHost() const override { return false; }
  bool allocate(size_t bytes, void **out, std::string &error) override {
    return gpu.allocate(bytes, out, error);
  }
  void release(void *p) override { gpu.release(p); }
  bool upload(void *dst, const void *src, size_t bytes,
              std::string &error) override {
    return gpu.copy(dst, src, bytes, LOOM_COPY_HOST_TO_DEVICE, error);
  }
  bool download(void *dst, const void *src, size_t bytes,
                std::string &error) override {
    return gpu.copy(dst, src, bytes, LOOM_COPY_DEVICE_TO_HOST, error);
  }
  bool synchronize(std::string &error) override {
    return gpu.synchronize(error);
  }
  const loom_device_t *collectiveDevice() const override {
    return gpu.collectiveDevice();
  }
  std::vector<loom::program::DeviceTime> profile() override {
    return gpu.profile();
  }
  uint64_t peakBytes() override { return gpu.peakBytes(); }
  void restartProfile() override { gpu.restartProfile(); }
  bool runStep(const std::vector<const void *> &buffers, bool replayable,
               const std::function<void()> &call,
               std::string &error) override {
    return graphs.run(buffers, replayable, call, error);
  }
  std::string stepNote() const override { return graphs.note(); }

private:
  Gpu &gpu;
  StepGraphs graphs;
};

} // namespace

std::unique_ptr<loom::program::Device>
loom_cuda_open_device(const loom::program::DeviceOptions &options,
                      std::string &error) {
  Options o;
  o.syncEveryLaunch = options.syncEveryLaunch;
  o.profile = options.profile;
  o.tf32 = options.tf32;
  o.graphs = options.graphs;
  Gpu *gpu = Gpu::open(options.ordinal, o, error);
  if (!gpu)
    return nullptr;
  return std::make_unique<CudaDevice>(*gpu);
}
