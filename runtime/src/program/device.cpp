//===- device.cpp - The host device: buffers in this process's memory -----===//

#include "loom/device.h"

#include <cstdlib>
#include <cstring>

namespace {

class HostDevice final : public loom::program::Device {
public:
  std::string name() const override { return "host"; }
  bool isHost() const override { return true; }
  bool allocate(size_t bytes, void **out, std::string &error) override {
    *out = nullptr;
    if (!bytes)
      return true;
    *out = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!*out) {
      error = "cannot allocate " + std::to_string(bytes) + " bytes";
      return false;
    }
    return true;
  }
  void release(void *p) override { std::free(p); }
  bool upload(void *dst, const void *src, size_t bytes,
              std::string &) override {
    if (bytes)
      std::memcpy(dst, src, bytes);
    return true;
  }
  bool download(void *dst, const void *src, size_t bytes,
                std::string &) override {
    if (bytes)
      std::memcpy(dst, src, bytes);
    return true;
  }
  bool synchronize(std::string &) override { return true; }
};

} // namespace

std::unique_ptr<loom::program::Device> loom::program::makeHostDevice() {
  return std::make_unique<HostDevice>();
}
