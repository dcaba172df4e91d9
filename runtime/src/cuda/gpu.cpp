//===- gpu.cpp - The process's GPU: device, context, stream, pool ---------===//

#include "gpu.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

using namespace loom::cuda;

namespace {

Gpu *gOpened = nullptr;

// The loom_device_t callbacks: the runtime's collectives on this GPU.
loom_status_t deviceCopy(void *ctx, void *dst, const void *src, size_t bytes,
                         loom_copy_kind_t kind) {
  std::string error;
  if (!static_cast<Gpu *>(ctx)->copy(dst, src, bytes, kind, error))
    return loom_status_make(LOOM_STATUS_INTERNAL, "%s", error.c_str());
  return nullptr;
}

loom_status_t deviceZero(void *ctx, void *dst, size_t bytes) {
  Gpu &gpu = *static_cast<Gpu *>(ctx);
  std::string error;
  if (!gpu.check(gpu.driver().cuMemsetD8Async(CUdeviceptr(dst), 0, bytes,
                                              gpu.stream()),
                 "zeroing " + std::to_string(bytes) + " bytes", error))
    return loom_status_make(LOOM_STATUS_INTERNAL, "%s", error.c_str());
  return nullptr;
}

loom_status_t deviceQuery(void *ctx, int32_t *done) {
  Gpu &gpu = *static_cast<Gpu *>(ctx);
  CUresult r = gpu.driver().cuStreamQuery(gpu.stream());
  if (r == CUDA_ERROR_NOT_READY) {
    *done = 0;
    return nullptr;
  }
  std::string error;
  if (!gpu.check(r, "the rank's stream", error))
    return loom_status_make(LOOM_STATUS_INTERNAL, "%s", error.c_str());
  *done = 1;
  return nullptr;
}

void *deviceOpenLibrary(void *, const char *soname, char *error,
                        size_t size) {
  std::string where, why;
  void *h = openLibrary(soname, where, why);
  if (!h && size)
    std::snprintf(error, size, "%s", why.c_str());
  return h;
}

/// The launcher's local rank (0 without a launcher).
int localRank() {
  loom_launch_info_t info;
  if (loom_status_t s = loom_launch_info_from_env(&info)) {
    loom_status_free(s);
    return 0;
  }
  return info.local_rank;
}

} // namespace

Gpu *Gpu::opened() { return gOpened; }

Gpu *Gpu::open(int ordinal, const Options &options, std::string &error) {
  if (gOpened)
    return gOpened;
  auto *gpu = new Gpu();
  if (!gpu->init(ordinal, options, error)) {
    delete gpu;
    return nullptr;
  }
  gOpened = gpu;
  return gpu;
}

Gpu &Gpu::current() {
  if (gOpened)
    return *gOpened;
  std::string error;
  if (Gpu *gpu = open(-1, Options(), error))
    return *gpu;
  std::fprintf(stderr, "loom: %s\n", error.c_str());
  std::fflush(stderr);
  std::fflush(stdout);
  _exit(1);
}

bool Gpu::init(int ordinal, const Options &options, std::string &error) {
  opts = options;
  drv = loom::cuda::driver(error);
  if (!drv)
    return false;
  CUresult r = drv->cuInit(0);
  if (r == CUDA_ERROR_NO_DEVICE) {
    error = "no CUDA GPU: the NVIDIA driver (" + drv->path +
            ") sees no device (CUDA_VISIBLE_DEVICES='" +
            (std::getenv("CUDA_VISIBLE_DEVICES")
                 ? std::getenv("CUDA_VISIBLE_DEVICES")
                 : "") +
            "')";
    return false;
  }
  if (!check(r, "starting the NVIDIA driver (cuInit)", error))
    return false;
  if (!check(drv->cuDeviceGetCount(&visible), "counting GPUs", error))
    return false;
  if (visible < 1) {
    error = "no CUDA GPU is visible to this process";
    return false;
  }
  deviceOrdinal = ordinal >= 0 ? ordinal : localRank() % visible;
  if (deviceOrdinal >= visible) {
    error = "GPU " + std::to_string(deviceOrdinal) + " was asked for but " +
            std::to_string(visible) + " are visible";
    return false;
  }
  if (!check(drv->cuDeviceGet(&dev, deviceOrdinal), "opening the GPU", error) ||
      !check(drv->cuDevicePrimaryCtxRetain(&context, dev),
             "creating the GPU's context", error) ||
      !check(drv->cuCtxSetCurrent(context), "using the GPU's context", error))
    return false;
  char name[256] = {0};
  drv->cuDeviceGetName(name, sizeof(name) - 1, dev);
  description = "cuda:" + std::to_string(deviceOrdinal) + " (" + name + ")";
  int pools = 0;
  drv->cuDeviceGetAttribute(
      &pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, dev);
  if (!pools) {
    error = description + " has no stream-ordered memory pools";
    return false;
  }
  if (!check(drv->cuStreamCreate(&rankStream, CU_STREAM_NON_BLOCKING),
             "creating the rank's stream", error))
    return false;
  // The pool keeps what the step frees: the next step's allocations do not
  // go back to the driver.
  CUmemoryPool pool;
  cuuint64_t keep = ~cuuint64_t(0);
  if (!check(drv->cuDeviceGetDefaultMemPool(&pool, dev),
             "finding the GPU's memory pool", error) ||
      !check(drv->cuMemPoolSetAttribute(
                 pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep),
             "keeping the memory pool's memory", error))
    return false;
  std::memset(&device, 0, sizeof(device));
  device.struct_size = sizeof(device);
  device.context = this;
  device.name = description.c_str();
  device.ordinal = deviceOrdinal;
  device.stream = rankStream;
  device.device_count = visible;
  device.copy = deviceCopy;
  device.zero = deviceZero;
  device.query = deviceQuery;
  device.open_library = deviceOpenLibrary;
  return true;
}

bool Gpu::makeCurrent(std::string &error) {
  return check(drv->cuCtxSetCurrent(context), "using the GPU's context",
               error);
}

bool Gpu::refuseCapture(const std::string &what) {
  if (!inCapture)
    return false;
  if (problem.empty())
    problem = what;
  return true;
}

bool Gpu::check(CUresult r, const std::string &what, std::string &error) {
  if (r == CUDA_SUCCESS)
    return true;
  if (refuseCapture(what + ": " + errorText(r)))
    return true;
  error = description.empty() ? what + ": " + errorText(r)
                              : description + ": " + what + ": " +
                                    errorText(r);
  return false;
}

void Gpu::fatal(const std::string &what) {
  std::fprintf(stderr, "loom: %s\n", what.c_str());
  std::fflush(stderr);
  std::fflush(stdout);
  _exit(1);
}

void Gpu::require(CUresult r, const std::string &what) {
  std::string error;
  if (!check(r, what, error))
    fatal(error);
}

bool Gpu::synchronize(std::string &error) {
  if (refuseCapture("the step waits for the GPU" +
                    (last.empty() ? std::string() : " after " + last)))
    return true;
  CUresult r = drv->cuStreamSynchronize(rankStream);
  if (r == CUDA_SUCCESS)
    return true;
  check(r, "waiting for the GPU", error);
  if (!last.empty())
    error += " (the last work enqueued was " + last +
             (opts.syncEveryLaunch
                  ? ")"
                  : "; LOOM_GPU_SYNC=1 checks after every launch and names "
                    "the kernel that failed)");
  return false;
}

bool Gpu::allocate(size_t bytes, void **out, std::string &error) {
  *out = nullptr;
  if (!bytes)
    return true;
  CUdeviceptr p = 0;
  if (!check(drv->cuMemAllocAsync(&p, bytes, rankStream),
             "allocating " + std::to_string(bytes) + " bytes", error)) {
    size_t free = 0, total = 0;
    if (drv->cuMemGetInfo(&free, &total) == CUDA_SUCCESS)
      error += " (" + std::to_string(free >> 20) + " MiB free of " +
               std::to_string(total >> 20) + " MiB)";
    return false;
  }
  *out = reinterpret_cast<void *>(p);
  if (p)
    live[uintptr_t(p)] = bytes;
  return true;
}

void Gpu::release(void *p) {
  if (!p)
    return;
  live.erase(uintptr_t(p));
  require(drv->cuMemFreeAsync(CUdeviceptr(p), rankStream),
          "freeing device memory");
}

bool Gpu::allocated(const void *p) const {
  auto it = live.upper_bound(uintptr_t(p));
  if (it == live.begin())
    return false;
  --it;
  return uintptr_t(p) < it->first + it->second;
}

bool Gpu::copy(void *dst, const void *src, size_t bytes,
               loom_copy_kind_t kind, std::string &error) {
  if (!bytes)
    return true;
  CUresult r;
  const char *what;
  switch (kind) {
  case LOOM_COPY_HOST_TO_DEVICE:
    r = drv->cuMemcpyHtoDAsync(CUdeviceptr(dst), src, bytes, rankStream);
    what = "copying to the GPU";
    break;
  case LOOM_COPY_DEVICE_TO_HOST:
    r = drv->cuMemcpyDtoHAsync(dst, CUdeviceptr(src), bytes, rankStream);
    what = "copying from the GPU";
    break;
  default:
    r = drv->cuMemcpyDtoDAsync(CUdeviceptr(dst), CUdeviceptr(src), bytes,
                               rankStream);
    what = "copying on the GPU";
  }
  return check(r, std::string(what) + " (" + std::to_string(bytes) +
                      " bytes)",
               error) &&
         synchronize(error);
}

CUevent Gpu::takeEvent() {
  if (!spareEvents.empty()) {
    CUevent e = spareEvents.back();
    spareEvents.pop_back();
    return e;
  }
  CUevent e = nullptr;
  require(drv->cuEventCreate(&e, CU_EVENT_DEFAULT), "creating a CUDA event");
  return e;
}

void Gpu::beginWork(const std::string &name) {
  last = name;
  if (!opts.profile || inCapture)
    return;
  Pending p{name, takeEvent(), takeEvent()};
  require(drv->cuEventRecord(p.start, rankStream), "recording an event");
  pending.push_back(p);
  // Read the events now and then: a long step has thousands.
  if (pending.size() > 4096)
    collectEvents();
}

void Gpu::endWork() {
  if (inCapture)
    return;
  if (opts.profile && !pending.empty())
    require(drv->cuEventRecord(pending.back().stop, rankStream),
            "recording an event");
  if (opts.syncEveryLaunch) {
    std::string error;
    CUresult r = drv->cuStreamSynchronize(rankStream);
    if (!check(r, last, error))
      fatal(error);
  }
}

void Gpu::collectEvents() {
  std::string error;
  if (!synchronize(error))
    fatal(error);
  for (Pending &p : pending) {
    float ms = 0;
    require(drv->cuEventElapsedTime(&ms, p.start, p.stop),
            "reading an event");
    loom::program::DeviceTime &t = times[p.name];
    t.name = p.name;
    ++t.calls;
    t.milliseconds += ms;
    spareEvents.push_back(p.start);
    spareEvents.push_back(p.stop);
  }
  pending.clear();
}

void Gpu::restartProfile() {
  collectEvents();
  times.clear();
}

bool Gpu::trimPool(std::string &error) {
  CUmemoryPool pool;
  return synchronize(error) &&
         check(drv->cuDeviceGetDefaultMemPool(&pool, dev),
               "finding the GPU's memory pool", error) &&
         check(drv->cuMemPoolTrimTo(pool, 0), "trimming the memory pool",
               error);
}

uint64_t Gpu::peakBytes() {
  CUmemoryPool pool;
  cuuint64_t high = 0, used = 0, graphs = 0;
  if (drv->cuDeviceGetDefaultMemPool(&pool, dev) != CUDA_SUCCESS ||
      drv->cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &high) !=
          CUDA_SUCCESS ||
      drv->cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT,
                                 &used) != CUDA_SUCCESS)
    return 0;
  // A replayed step's temporaries are the graphs' memory (graph.cpp), not
  // the pool's: what the pool holds now (parameters, state, batch) plus
  // the most the graphs held, or the pool's own peak (the steps run
  // directly) if higher.
  if (drv->cuDeviceGetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH,
                                        &graphs) != CUDA_SUCCESS)
    graphs = 0;
  return std::max<uint64_t>(high, used + graphs);
}

std::vector<loom::program::DeviceTime> Gpu::profile() {
  collectEvents();
  std::vector<loom::program::DeviceTime> out;
  for (auto &[name, t] : times)
    out.push_back(t);
  std::sort(out.begin(), out.end(), [](const loom::program::DeviceTime &a,
                                         const loom::program::DeviceTime &b) {
    return a.milliseconds > b.milliseconds;
  });
  return out;
}
