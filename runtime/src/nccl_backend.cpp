//===- nccl_backend.cpp - Collectives over NCCL on GPU buffers ------------===//
//
// Bootstrapped over MPI (rank 0's ncclUniqueId is broadcast), one device per
// rank (local rank modulo the visible GPUs), one stream. Collectives are
// enqueued on the stream and polled with a deadline; on timeout the
// communicator is aborted (ncclCommAbort) so that no rank hangs. Built when
// CUDA and NCCL are found (LOOM_HAVE_NCCL); otherwise creating this backend
// fails with UNAVAILABLE. NCCL and the CUDA runtime are loaded when the
// backend is first made, not linked.
//
//===----------------------------------------------------------------------===//

#include "backend.h"

#ifdef LOOM_HAVE_NCCL

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <dlfcn.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

using namespace loom::rt;

namespace {

/// NCCL and the CUDA runtime, loaded (dlopen) when an NCCL backend is first
/// made: libloom_runtime.so does not depend on them, so rank programs and
/// CPU training run on machines without CUDA. Found through the runtime's
/// run path (the CUDA toolkit Loom was built with) or the loader's.
#define LOOM_NCCL_FUNCTIONS(X)                                                 \
  X(ncclGetErrorString) X(ncclSend) X(ncclRecv) X(ncclGroupStart)              \
  X(ncclGroupEnd) X(ncclCommDestroy) X(ncclAllReduce) X(ncclReduceScatter)     \
  X(ncclGetUniqueId) X(ncclCommUserRank) X(ncclCommSplit) X(ncclCommInitRank)  \
  X(ncclCommGetAsyncError) X(ncclCommCount) X(ncclCommAbort) X(ncclAllGather)
#define LOOM_CUDA_FUNCTIONS(X)                                                 \
  X(cudaGetErrorString) X(cudaStreamQuery) X(cudaStreamDestroy)               \
  X(cudaStreamCreateWithFlags) X(cudaSetDevice) X(cudaMallocAsync)             \
  X(cudaGetDeviceCount) X(cudaFreeAsync)

struct Api {
#define LOOM_DECLARE(name) decltype(&::name) name = nullptr;
  LOOM_NCCL_FUNCTIONS(LOOM_DECLARE)
#undef LOOM_DECLARE
  // The C declarations (cuda_runtime.h overloads some in C++).
  const char *(*cudaGetErrorString)(cudaError_t) = nullptr;
  cudaError_t (*cudaStreamQuery)(cudaStream_t) = nullptr;
  cudaError_t (*cudaStreamDestroy)(cudaStream_t) = nullptr;
  cudaError_t (*cudaStreamCreateWithFlags)(cudaStream_t *, unsigned) = nullptr;
  cudaError_t (*cudaSetDevice)(int) = nullptr;
  cudaError_t (*cudaMallocAsync)(void **, size_t, cudaStream_t) = nullptr;
  cudaError_t (*cudaGetDeviceCount)(int *) = nullptr;
  cudaError_t (*cudaFreeAsync)(void *, cudaStream_t) = nullptr;
};

const Api *api = nullptr;

/// Loads the libraries once; null with `error` naming what is missing.
const Api *loadApi(std::string &error) {
  static Api loaded;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string ncclName = "libnccl.so." + std::to_string(NCCL_MAJOR);
    std::string cudaName = "libcudart.so." + std::to_string(CUDART_VERSION / 1000);
    void *cuda = ::dlopen(cudaName.c_str(), RTLD_NOW | RTLD_LOCAL);
    void *nccl = cuda ? ::dlopen(ncclName.c_str(), RTLD_NOW | RTLD_LOCAL)
                      : nullptr;
    if (!cuda || !nccl) {
      const char *why = ::dlerror();
      failure = "the NCCL backend needs " + (cuda ? ncclName : cudaName) +
                ": " + (why ? why : "not found");
      return;
    }
#define LOOM_LOAD(lib, name)                                                   \
  if (failure.empty()) {                                                       \
    loaded.name = reinterpret_cast<decltype(loaded.name)>(::dlsym(lib, #name)); \
    if (!loaded.name)                                                          \
      failure = "the NCCL backend cannot find " #name " in a loaded library";  \
  }
#define LOOM_LOAD_NCCL(name) LOOM_LOAD(nccl, name)
#define LOOM_LOAD_CUDA(name) LOOM_LOAD(cuda, name)
    LOOM_NCCL_FUNCTIONS(LOOM_LOAD_NCCL)
    LOOM_CUDA_FUNCTIONS(LOOM_LOAD_CUDA)
#undef LOOM_LOAD_CUDA
#undef LOOM_LOAD_NCCL
#undef LOOM_LOAD
  });
  if (!failure.empty()) {
    error = failure;
    return nullptr;
  }
  return &loaded;
}

} // namespace

namespace {

struct NcclGroup final : Group {
  ncclComm_t comm = nullptr;
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
      : options(options), mpi(std::move(bootstrap)) {}
  ~NcclBackend() override {
    if (world)
      api->ncclCommDestroy(world);
    if (stream)
      api->cudaStreamDestroy(stream);
  }

  loom_status_t init() {
    int devices = 0;
    cudaError_t err = api->cudaGetDeviceCount(&devices);
    if (err != cudaSuccess || devices == 0)
      return loom_status_make(
          LOOM_STATUS_UNAVAILABLE,
          "the NCCL backend needs a GPU: cudaGetDeviceCount: %s",
          err != cudaSuccess ? api->cudaGetErrorString(err) : "no devices");
    loom_launch_info_t info;
    if (loom_status_t s = loom_launch_info_from_env(&info))
      return s;
    api->cudaSetDevice(info.local_rank % devices);
    if (api->cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) !=
        cudaSuccess)
      return loom_status_make(LOOM_STATUS_UNAVAILABLE,
                              "cannot create a CUDA stream");
    ncclUniqueId id;
    if (mpi->rank() == 0 && api->ncclGetUniqueId(&id) != ncclSuccess)
      return loom_status_make(LOOM_STATUS_UNAVAILABLE,
                              "ncclGetUniqueId failed");
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
    ncclResult_t r = api->ncclCommInitRank(&world, mpi->size(), id, mpi->rank());
    if (r != ncclSuccess)
      return loom_status_make(LOOM_STATUS_UNAVAILABLE,
                              "ncclCommInitRank: %s", api->ncclGetErrorString(r));
    return nullptr;
  }

  loom_backend_t kind() const override { return LOOM_BACKEND_NCCL; }
  int rank() const override { return mpi->rank(); }
  int size() const override { return mpi->size(); }

  loom_status_t split(int color, int key,
                      std::unique_ptr<Group> &out) override {
    auto group = std::make_unique<NcclGroup>();
    ncclResult_t r = api->ncclCommSplit(world, color, key, &group->comm, nullptr);
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
      return unsupported(info);
    ncclComm_t comm = static_cast<NcclGroup &>(g).comm;
    return finish(comm, info, call(comm, t));
  }

  loom_status_t allReduce(Group &g, const CallInfo &info,
                          loom_reduction_t reduction, const void *send,
                          void *recv) override {
    return collective(g, info, [&](ncclComm_t comm, ncclDataType_t t) {
      return api->ncclAllReduce(send, recv, info.count, t, ncclOp(reduction), comm,
                           stream);
    });
  }
  loom_status_t allGather(Group &g, const CallInfo &info, const void *send,
                          void *recv) override {
    return collective(g, info, [&](ncclComm_t comm, ncclDataType_t t) {
      return api->ncclAllGather(send, recv, info.count, t, comm, stream);
    });
  }
  loom_status_t reduceScatter(Group &g, const CallInfo &info,
                              loom_reduction_t reduction, const void *send,
                              void *recv) override {
    return collective(g, info, [&](ncclComm_t comm, ncclDataType_t t) {
      return api->ncclReduceScatter(send, recv, info.count, t, ncclOp(reduction),
                               comm, stream);
    });
  }
  loom_status_t allToAll(Group &g, const CallInfo &info, const void *send,
                         void *recv) override {
    ncclDataType_t t;
    if (!ncclType(info.dtype, t))
      return unsupported(info);
    auto &group = static_cast<NcclGroup &>(g);
    size_t block = loom_dtype_size(info.dtype) * info.count;
    api->ncclGroupStart();
    for (int peer = 0; peer < group.size; ++peer) {
      api->ncclSend(static_cast<const char *>(send) + peer * block, info.count, t,
               peer, group.comm, stream);
      api->ncclRecv(static_cast<char *>(recv) + peer * block, info.count, t, peer,
               group.comm, stream);
    }
    return finish(group.comm, info, api->ncclGroupEnd());
  }
  loom_status_t sendRecv(const CallInfo &info, int to, const void *send,
                         int from, void *recv) override {
    ncclDataType_t t;
    if (!ncclType(info.dtype, t))
      return unsupported(info);
    api->ncclGroupStart();
    if (to >= 0)
      api->ncclSend(send, info.count, t, to, world, stream);
    if (from >= 0)
      api->ncclRecv(recv, info.count, t, from, world, stream);
    return finish(world, info, api->ncclGroupEnd());
  }
  loom_status_t barrier(Group &g, const CallInfo &info) override {
    void *scratch = nullptr;
    api->cudaMallocAsync(&scratch, sizeof(int), stream);
    ncclComm_t comm = static_cast<NcclGroup &>(g).comm;
    loom_status_t s = finish(
        comm, info,
        api->ncclAllReduce(scratch, scratch, 1, ncclInt32, ncclSum, comm, stream));
    api->cudaFreeAsync(scratch, stream);
    return s;
  }

private:
  loom_status_t unsupported(const CallInfo &info) {
    return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT,
                            "%s: NCCL has no %s", info.description.c_str(),
                            loom_dtype_name(info.dtype));
  }
  /// Waits for the stream with the deadline; aborts the communicator on
  /// timeout or asynchronous error so that no rank hangs.
  loom_status_t finish(ncclComm_t comm, const CallInfo &info,
                       ncclResult_t launched) {
    if (launched != ncclSuccess && launched != ncclInProgress)
      return loom_status_make(LOOM_STATUS_INTERNAL, "rank %d: %s: %s",
                              rank(), info.description.c_str(),
                              api->ncclGetErrorString(launched));
    auto start = std::chrono::steady_clock::now();
    for (;;) {
      cudaError_t q = api->cudaStreamQuery(stream);
      if (q == cudaSuccess)
        return nullptr;
      if (q != cudaErrorNotReady)
        return loom_status_make(LOOM_STATUS_INTERNAL, "rank %d: %s: %s",
                                rank(), info.description.c_str(),
                                api->cudaGetErrorString(q));
      ncclResult_t async = ncclSuccess;
      api->ncclCommGetAsyncError(comm, &async);
      double elapsed = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count();
      if (async != ncclSuccess || elapsed > options.timeout_seconds) {
        api->ncclCommAbort(comm);
        return loom_status_make(
            async != ncclSuccess ? LOOM_STATUS_PEER_FAILED
                                 : LOOM_STATUS_DEADLINE_EXCEEDED,
            "rank %d of %d: %s %s; the NCCL communicator was aborted",
            rank(), size(), info.description.c_str(),
            async != ncclSuccess ? api->ncclGetErrorString(async)
                                 : "did not complete in time");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }

  loom_runtime_options_t options;
  std::unique_ptr<Backend> mpi;
  ncclComm_t world = nullptr;
  cudaStream_t stream = nullptr;
};

} // namespace

loom_status_t loom::rt::makeNcclBackend(const loom_runtime_options_t &options,
                                        std::unique_ptr<Backend> &out) {
  std::string missing;
  api = loadApi(missing);
  if (!api)
    return loom_status_make(LOOM_STATUS_UNAVAILABLE, "%s", missing.c_str());
  std::unique_ptr<Backend> bootstrap;
  if (loom_status_t s = makeMpiBackend(options, bootstrap))
    return s;
  auto backend = std::make_unique<NcclBackend>(options, std::move(bootstrap));
  if (loom_status_t s = backend->init())
    return s;
  out = std::move(backend);
  return nullptr;
}

#else

loom_status_t loom::rt::makeNcclBackend(const loom_runtime_options_t &,
                                        std::unique_ptr<loom::rt::Backend> &) {
  return loom_status_make(LOOM_STATUS_UNAVAILABLE,
                          "this build of Loom has no NCCL backend (CUDA and "
                          "NCCL were not found at configure time)");
}

#endif
