//===- no_cuda.cpp - loom_cuda_open_device where no CUDA library is built -===//

#include "loom/device.h"

std::unique_ptr<loom::program::Device>
loom_cuda_open_device(const loom::program::DeviceOptions &,
                      std::string &error) {
  error = "this build has no CUDA library (no CUDA headers at configure time)";
  return nullptr;
}
