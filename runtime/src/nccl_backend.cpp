//===- nccl_backend.cpp - Collectives over NCCL on GPU buffers ------------===//
//
// NCCL on the buffers of the rank's device (loom_runtime_options_t.device,
// filled in by Loom's CUDA library): collectives are enqueued on the
// device's stream, after the step's kernels, and polled with the runtime's
// deadline; on timeout or an asynchronous error the communicator is aborted
// (ncclCommAbort) so that no rank hangs. NCCL is bootstrapped over the
// launcher's host backend (MPI under mpirun, Gloo and the TCP store under
// torchrun-style launches or plain srun): rank 0's ncclUniqueId is gathered
// through it. That backend stays for control traffic (host buffers:
// the start-up handshake, barriers, gathering results).
//
// NCCL is loaded when the backend is made, through the device (which knows
// where it found the CUDA libraries), not linked: libloom_runtime.so needs
// no CUDA.
//
//===----------------------------------------------------------------------===//

#include "backend.h"

#ifdef LOOM_HAVE_NCCL

#include <nccl.h>

#include <dlfcn.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using namespace loom::rt;

namespace {

#define LOOM_NCCL_FUNCTIONS(X)                                                 \
  X(ncclGetErrorString) X(ncclSend) X(ncclRecv) X(ncclGroupStart)              \
  X(ncclGroupEnd) X(ncclCommDestroy) X(ncclAllReduce) X(ncclReduceScatter)     \
  X(ncclGetUniqueId) X(ncclCommUserRank) X(ncclCommSplit) X(ncclCommInitRank)  \
  X(ncclCommGetAsyncError) X(ncclCommCount) X(ncclCommAbort) X(ncclAllGather)  \
  X(ncclGetVersion)

struct Api {
#define LOOM_DECLARE(name) decltype(&::name) name = nullptr;
  LOOM_NCCL_FUNCTIONS(LOOM_DECLARE)
#undef LOOM_DECLARE
};

/// NCCL through the device's library search; null with `error`.
const Api *loadApi(const loom_device_t &device, std::string &error) {
  static Api loaded;
  static bool ok = false;
  if (ok)
    return &loaded;
  std::string soname = "libnccl.so." + std::to_string(NCCL_MAJOR);
  char why[512] = {0};
  void *lib = device.open_library
                  ? device.open_library(device.context, soname.c_str(), why,
                                        sizeof(why))
                  : ::dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    error = "the NCCL backend needs " + soname + ": " +
            (why[0] ? why : "not found");
    return nullptr;
  }
#define LOOM_LOAD(name)                                                        \
  loaded.name = reinterpret_cast<decltype(loaded.name)>(::dlsym(lib, #name));  \
  if (!loaded.name) {                                                          \
    error = soname + " has no " #name;                                         \
    return nullptr;                                                            \
  }
  LOOM_NCCL_FUNCTIONS(LOOM_LOAD)
#undef LOOM_LOAD
  ok = true;
  return &loaded;
}

const Api *api = nullptr;

struct NcclGroup final : Group {
  ncclComm_t comm = nullptr;
  /// The same ranks on the control backend.
  std::unique_ptr<Group> host;
  ~NcclGroup() override {
    if (comm)
      api->ncclCommDestroy(comm);
  }
};

bool ncclType(loom_dtype_t dtype, ncclDataType_t &out) {
  switch (dtype) {
  case LOOM_DTYPE_F32:
    out = ncclFloat32;
    return true;
  case LOOM_DTYPE_F64:
    out = ncclFloat64;
    return true;
  case LOOM_DTYPE_F16:
    out = ncclFloat16;
    return true;
  case LOOM_DTYPE_BF16:
    out = ncclBfloat16;
    return true;
  case LOOM_DTYPE_I8:
    out = ncclInt8;
    return true;
  case LOOM_DTYPE_U8:
  case LOOM_DTYPE_BOOL:
    out = ncclUint8;
    return true;
  case LOOM_DTYPE_I32:
    out = ncclInt32;
    return true;
  case LOOM_DTYPE_U32:
    out = ncclUint32;
    return true;
  case LOOM_DTYPE_I64:
    out = ncclInt64;
    return true;
  case LOOM_DTYPE_U64:
    out = ncclUint64;
    return true;
  default:
    return false;
  }
}

ncclRedOp_t ncclOp(loom_reduction_t r) {
  switch (r) {
  case LOOM_REDUCTION_SUM:
    return ncclSum;
  case LOOM_REDUCTION_MAX:
    return ncclMax;
  case LOOM_REDUCTION_MIN:
    return ncclMin;
  case LOOM_REDUCTION_PROD:
    return ncclProd;
  }
  return ncclSum;
}

class NcclBackend final : public Backend {
public:
  NcclBackend(const loom_runtime_options_t &options,
              std::unique_ptr<Backend> bootstrap)
      : options(options), device(*options.device),
        host(std::move(bootstrap)),
        stream(static_cast<cudaStream_t>(device.stream)) {}
  ~NcclBackend() override {
    if (world)
      api->ncclCommDestroy(world);
  }

  loom_status_t init() {
    std::unique_ptr<Group> all;
    if (loom_status_t s = host->split(0, host->rank(), all))
      return s;
    hostWorld = std::move(all);
    ncclUniqueId id;
    std::memset(&id, 0, sizeof(id));
    if (host->rank() == 0)
      if (ncclResult_t r = api->ncclGetUniqueId(&id))
        return loom_status_make(LOOM_STATUS_UNAVAILABLE,
                                "ncclGetUniqueId: %s",
                                api->ncclGetErrorString(r));
    // Rank 0's id to every rank, over the host backend.
    std::vector<char> ids(sizeof(id) * size_t(host->size()));
    CallInfo info;
    info.op = "all_gather";
    info.description = "the NCCL bootstrap (ncclUniqueId of rank 0)";
    info.dtype = LOOM_DTYPE_U8;
    info.count = sizeof(id);
    if (hostWorld->size > 1) {
      if (loom_status_t s = host->allGather(*hostWorld, info, &id, ids.data()))
        return s;
      std::memcpy(&id, ids.data(), sizeof(id));
    }
    ncclResult_t r =
        api->ncclCommInitRank(&world, host->size(), id, host->rank());
    if (r != ncclSuccess)
      return loom_status_make(
          LOOM_STATUS_UNAVAILABLE, "rank %d of %d: ncclCommInitRank on %s: %s",
          host->rank(), host->size(), device.name,
          api->ncclGetErrorString(r));
    return nullptr;
  }

  loom_backend_t kind() const override { return LOOM_BACKEND_NCCL; }
  int rank() const override { return host->rank(); }
  int size() const override { return host->size(); }
  bool deviceMemory() const override { return true; }
  Backend &control() override { return *host; }
  Group &controlGroup(Group &g) override {
    return *static_cast<NcclGroup &>(g).host;
  }
  void abandon() override { host->abandon(); }

  loom_status_t split(int color, int key,
                      std::unique_ptr<Group> &out) override {
    auto group = std::make_unique<NcclGroup>();
    if (loom_status_t s = host->split(color, key, group->host))
      return s;
    ncclResult_t r =
        api->ncclCommSplit(world, color, key, &group->comm, nullptr);
    if (r != ncclSuccess)
      return loom_status_make(LOOM_STATUS_INTERNAL, "ncclCommSplit: %s",
                              api->ncclGetErrorString(r));
    api->ncclCommCount(group->comm, &group->size);
    api->ncclCommUserRank(group->comm, &group->rank);
    out = std::move(group);
    return nullptr;
  }

  /// The element type check and the completion every collective shares;
  /// `call` issues it on the group's communicator with NCCL's type.
  template <typename Call>
  loom_status_t collective(Group &g, const CallInfo &info, Call call) {
    ncclDataType_t t;
    if (!ncclType(info.dtype, t))
      return noType(info);
    ncclComm_t comm = static_cast<NcclGroup &>(g).comm;
    return finish(comm, info, call(comm, t));
  }

  loom_status_t allReduce(Group &g, const CallInfo &info,
                          loom_reduction_t reduction, const void *send,
                          void *recv) override {
    return collective(g, info, [&](ncclComm_t comm, ncclDataType_t t) {
      return api->ncclAllReduce(send, recv, size_t(info.count), t,
                                ncclOp(reduction), comm, stream);
    });
  }
  loom_status_t allGather(Group &g, const CallInfo &info, const void *send,
                          void *recv) override {
    return collective(g, info, [&](ncclComm_t comm, ncclDataType_t t) {
      return api->ncclAllGather(send, recv, size_t(info.count), t, comm,
                                stream);
    });
  }
  loom_status_t reduceScatter(Group &g, const CallInfo &info,
                              loom_reduction_t reduction, const void *send,
                              void *recv) override {
    return collective(g, info, [&](ncclComm_t comm, ncclDataType_t t) {
      return api->ncclReduceScatter(send, recv, size_t(info.count), t,
                                    ncclOp(reduction), comm, stream);
    });
  }
  loom_status_t allToAll(Group &g, const CallInfo &info, const void *send,
                         void *recv) override {
    ncclDataType_t t;
    if (!ncclType(info.dtype, t))
      return noType(info);
    auto &group = static_cast<NcclGroup &>(g);
    size_t block = loom_dtype_size(info.dtype) * size_t(info.count);
    api->ncclGroupStart();
    for (int peer = 0; peer < group.size; ++peer) {
      api->ncclSend(static_cast<const char *>(send) + peer * block,
                    size_t(info.count), t, peer, group.comm, stream);
      api->ncclRecv(static_cast<char *>(recv) + peer * block,
                    size_t(info.count), t, peer, group.comm, stream);
    }
    return finish(group.comm, info, api->ncclGroupEnd());
  }
  loom_status_t sendRecv(const CallInfo &info, int to, const void *send,
                         int from, void *recv) override {
    ncclDataType_t t;
    if (!ncclType(info.dtype, t))
      return noType(info);
    api->ncclGroupStart();
    if (to >= 0)
      api->ncclSend(send, size_t(info.count), t, to, world, stream);
    if (from >= 0)
      api->ncclRecv(recv, size_t(info.count), t, from, world, stream);
    return finish(world, info, api->ncclGroupEnd());
  }
  loom_status_t barrier(Group &g, const CallInfo &info) override {
    return host->barrier(controlGroup(g), info);
  }
  // isend/irecv: not on NCCL yet (a send posted on the rank's one stream
  // would block the stream until its peer receives); the base class names
  // it.

private:
  loom_status_t noType(const CallInfo &info) {
    return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT,
                            "%s: NCCL has no %s", info.description.c_str(),
                            loom_dtype_name(info.dtype));
  }
  /// Waits for the stream with the deadline; aborts the communicator on
  /// timeout or asynchronous error so that no rank hangs.
  loom_status_t finish(ncclComm_t comm, const CallInfo &info,
                       ncclResult_t launched) {
    if (launched != ncclSuccess && launched != ncclInProgress)
      return loom_status_make(LOOM_STATUS_INTERNAL, "rank %d: %s: %s", rank(),
                              info.description.c_str(),
                              api->ncclGetErrorString(launched));
    auto start = std::chrono::steady_clock::now();
    for (int polls = 0;; ++polls) {
      int32_t done = 0;
      if (loom_status_t s = device.query(device.context, &done))
        return s;
      if (done)
        return nullptr;
      ncclResult_t async = ncclSuccess;
      api->ncclCommGetAsyncError(comm, &async);
      double elapsed = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count();
      if ((async != ncclSuccess && async != ncclInProgress) ||
          elapsed > options.timeout_seconds) {
        api->ncclCommAbort(comm);
        bool failed = async != ncclSuccess && async != ncclInProgress;
        return loom_status_make(
            failed ? LOOM_STATUS_PEER_FAILED : LOOM_STATUS_DEADLINE_EXCEEDED,
            "rank %d of %d: %s %s; the NCCL communicator was aborted", rank(),
            size(), info.description.c_str(),
            failed ? api->ncclGetErrorString(async)
                   : "did not complete in time");
      }
      if (polls > 100)
        std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  loom_runtime_options_t options;
  loom_device_t device;
  std::unique_ptr<Backend> host;
  std::unique_ptr<Group> hostWorld;
  cudaStream_t stream;
  ncclComm_t world = nullptr;
};

} // namespace

loom_status_t loom::rt::makeNcclBackend(const loom_runtime_options_t &options,
                                        std::unique_ptr<Backend> bootstrap,
                                        std::unique_ptr<Backend> &out) {
  if (!options.device)
    return loom_status_make(
        LOOM_STATUS_UNAVAILABLE,
        "the NCCL backend runs on GPU buffers: only a GPU program (loomc "
        "--target=cuda) can use it");
  std::string missing;
  api = loadApi(*options.device, missing);
  if (!api)
    return loom_status_make(LOOM_STATUS_UNAVAILABLE, "%s", missing.c_str());
  auto backend =
      std::make_unique<NcclBackend>(options, std::move(bootstrap));
  if (loom_status_t s = backend->init())
    return s;
  out = std::move(backend);
  return nullptr;
}

#else

loom_status_t loom::rt::makeNcclBackend(const loom_runtime_options_t &,
                                        std::unique_ptr<loom::rt::Backend>,
                                        std::unique_ptr<loom::rt::Backend> &) {
  return loom_status_make(LOOM_STATUS_UNAVAILABLE,
                          "this build of Loom has no NCCL backend (NCCL was "
                          "not found at configure time)");
}

#endif
