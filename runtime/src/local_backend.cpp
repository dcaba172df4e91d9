//===- local_backend.cpp - One process, no communication library ----------===//

#include "backend.h"

#include <cstring>

using namespace loom::rt;

namespace {
class LocalBackend final : public Backend {
public:
  loom_backend_t kind() const override { return LOOM_BACKEND_LOCAL; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  loom_status_t split(int, int, std::unique_ptr<Group> &out) override {
    out = std::make_unique<Group>();
    return nullptr;
  }
  // Groups of one: the mesh layer copies before reaching these.
  loom_status_t allReduce(Group &, const CallInfo &, loom_reduction_t,
                          const void *, void *) override {
    return nullptr;
  }
  loom_status_t allGather(Group &, const CallInfo &, const void *,
                          void *) override {
    return nullptr;
  }
  loom_status_t reduceScatter(Group &, const CallInfo &, loom_reduction_t,
                              const void *, void *) override {
    return nullptr;
  }
  loom_status_t allToAll(Group &, const CallInfo &, const void *,
                         void *) override {
    return nullptr;
  }
  loom_status_t sendRecv(const CallInfo &info, int to, const void *send,
                         int from, void *recv) override {
    if ((to == 0) != (from == 0))
      return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT,
                              "%s: one process can only send to itself",
                              info.description.c_str());
    if (to == 0 && send != recv)
      std::memmove(recv, send, loom_dtype_size(info.dtype) * info.count);
    return nullptr;
  }
  loom_status_t barrier(Group &, const CallInfo &) override { return nullptr; }
};
} // namespace

std::unique_ptr<Backend> loom::rt::makeLocalBackend() {
  return std::make_unique<LocalBackend>();
}
