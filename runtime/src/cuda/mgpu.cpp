//===- mgpu.cpp - The mgpu* ABI that MLIR's generated host code calls -----===//
//
// MLIR 22's gpu-to-llvm lowering (and gpu.binary's translation) emits calls
// to these functions with these signatures; upstream implements them in
// mlir/lib/ExecutionEngine/CudaRuntimeWrappers.cpp, which Debian does not
// ship. Loom's version differs where a training program needs it to:
//
// * Modules load lazily. The translation loads every kernel's module from a
//   global constructor (`llvm.global_ctors`), before `main`, before a GPU
//   is chosen: mgpuModuleLoad only records the image; the first
//   mgpuModuleGetFunction of a module loads it into the rank's context.
// * One stream per rank. The host code creates and destroys a stream
//   around every run of kernels between two host calls; here they are all
//   the rank's one stream (created once), so work stays ordered with
//   cuBLAS calls and collectives, and destroying it is a no-op.
// * Allocations come from the device's stream-ordered pool
//   (cuMemAllocAsync), which keeps freed memory for the next step.
// * Errors name the kernel (the module's function name, made unique per
//   kernel by loom-gpu-name-kernels) and end the process: generated code
//   cannot handle them. LOOM_GPU_SYNC=1 checks after every launch.
//
//===----------------------------------------------------------------------===//

#include "gpu.h"

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>

using namespace loom::cuda;

namespace {

struct Kernel {
  CUfunction function = nullptr;
  std::string name;
};

/// A module as the constructor registered it, loaded at its first use.
struct LazyModule {
  const void *image = nullptr;
  size_t size = 0;
  int index = 0;
  CUmodule module = nullptr;
  std::map<std::string, std::unique_ptr<Kernel>> kernels;
};

std::mutex gModulesMutex;
int gModuleCount = 0;

} // namespace

extern "C" void *mgpuModuleLoad(void *data, size_t gpuBlobSize) {
  std::lock_guard<std::mutex> lock(gModulesMutex);
  auto *m = new LazyModule;
  m->image = data;
  m->size = gpuBlobSize;
  m->index = gModuleCount++;
  return m;
}

extern "C" void mgpuModuleUnload(void *module) {
  auto *m = static_cast<LazyModule *>(module);
  if (!m)
    return;
  // Destructors run at exit, maybe after the context is gone: unloading
  // is the driver's job then.
  if (m->module && Gpu::opened()) {
    Gpu &gpu = *Gpu::opened();
    gpu.driver().cuModuleUnload(m->module);
  }
  delete m;
}

extern "C" void *mgpuModuleGetFunction(void *module, const char *name) {
  auto *m = static_cast<LazyModule *>(module);
  Gpu &gpu = Gpu::current();
  std::lock_guard<std::mutex> lock(gModulesMutex);
  if (!m->module) {
    std::string error;
    if (!gpu.makeCurrent(error))
      gpu.fatal(error);
    gpu.require(gpu.driver().cuModuleLoadData(&m->module, m->image),
                "loading the module of kernel " + std::string(name) + " (#" +
                    std::to_string(m->index) + ", " +
                    std::to_string(m->size) +
                    " bytes; was it compiled for this GPU? loomc "
                    "--target=cuda:sm_XX)");
  }
  std::unique_ptr<Kernel> &k = m->kernels[name];
  if (!k) {
    k = std::make_unique<Kernel>();
    k->name = name;
    gpu.require(gpu.driver().cuModuleGetFunction(&k->function, m->module,
                                                 name),
                "finding kernel " + k->name);
  }
  return k.get();
}

extern "C" void mgpuLaunchKernel(void *function, intptr_t gridX,
                                 intptr_t gridY, intptr_t gridZ,
                                 intptr_t blockX, intptr_t blockY,
                                 intptr_t blockZ, int32_t smem, void *,
                                 void **params, void **extra, size_t) {
  auto *k = static_cast<Kernel *>(function);
  Gpu &gpu = Gpu::current();
  gpu.beginWork(k->name);
  CUresult r = gpu.driver().cuLaunchKernel(
      k->function, unsigned(gridX), unsigned(gridY), unsigned(gridZ),
      unsigned(blockX), unsigned(blockY), unsigned(blockZ), unsigned(smem),
      gpu.stream(), params, extra);
  if (r != CUDA_SUCCESS)
    gpu.require(r, "launching kernel " + k->name + " (grid " +
                       std::to_string(gridX) + "x" + std::to_string(gridY) +
                       "x" + std::to_string(gridZ) + ", block " +
                       std::to_string(blockX) + "x" + std::to_string(blockY) +
                       "x" + std::to_string(blockZ) + ")");
  gpu.endWork();
}

extern "C" void *mgpuStreamCreate() { return Gpu::current().stream(); }

extern "C" void mgpuStreamDestroy(void *) {}

/// gpu-async-region waits for the stream before every host call of the
/// step (each cuBLAS call, each collective) and at its end. In Loom's
/// runtime nothing needs that wait: every "stream" is the rank's one
/// stream, cuBLAS and NCCL run on it, a staged collective copies through
/// it and waits for its copy, and the training loop reads results back
/// with a copy that waits. Waiting anyway drained the GPU 52 times per GPT
/// step and left it idle while the host launched the next kernels (2.9 ms
/// of a 21.8 ms bf16 step on an H200). So the wait happens only with
/// LOOM_GPU_SYNC=1, where it also names the last kernel on an error.
extern "C" void mgpuStreamSynchronize(void *) {
  Gpu &gpu = Gpu::current();
  if (!gpu.options().syncEveryLaunch)
    return;
  std::string error;
  if (!gpu.synchronize(error))
    gpu.fatal(error);
}

extern "C" void *mgpuMemAlloc(uint64_t sizeBytes, void *, bool isHostShared) {
  Gpu &gpu = Gpu::current();
  // Loom's pipeline allocates device memory only (gpu.alloc without
  // host_shared); managed memory would need its own free.
  if (isHostShared)
    gpu.fatal("the step asked for host-shared (managed) GPU memory, which "
              "Loom's CUDA library does not provide");
  void *p = nullptr;
  std::string error;
  if (!gpu.allocate(sizeBytes, &p, error))
    gpu.fatal(error + " for the step's temporaries");
  return p;
}

extern "C" void mgpuMemFree(void *ptr, void *) { Gpu::current().release(ptr); }

namespace {

/// Device copies of the host constants steps copy from, by address and
/// size: uploaded once, at the first step (a CUDA graph cannot record a
/// copy from pageable host memory, and the bytes never change).
std::map<std::pair<const void *, size_t>, CUdeviceptr> gConstants;

/// `src` in device memory: itself, or its constant's device copy. (The
/// driver does not know a captured step's temporaries: Gpu does.)
CUdeviceptr deviceSource(Gpu &gpu, const void *src, size_t bytes) {
  if (gpu.allocated(src))
    return CUdeviceptr(src);
  CUmemorytype type = CUmemorytype(0);
  if (gpu.driver().cuPointerGetAttribute(&type,
                                         CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                         CUdeviceptr(src)) == CUDA_SUCCESS &&
      type != CU_MEMORYTYPE_HOST)
    return CUdeviceptr(src);
  CUdeviceptr &copy = gConstants[{src, bytes}];
  if (!copy) {
    std::string what = "uploading a " + std::to_string(bytes) +
                       "-byte constant";
    gpu.require(gpu.driver().cuMemAlloc(&copy, bytes), what);
    gpu.require(gpu.driver().cuMemcpyHtoD(copy, src, bytes), what);
  }
  return copy;
}

} // namespace

// gpu.memcpy: a constant global host code passes to a device call, copied
// by loom-gpu-device-constants (which checks that the global is constant),
// or device memory (unified addressing tells which).
extern "C" void mgpuMemcpy(void *dst, void *src, size_t sizeBytes, void *) {
  Gpu &gpu = Gpu::current();
  if (!sizeBytes)
    return;
  gpu.require(gpu.driver().cuMemcpyDtoDAsync(
                  CUdeviceptr(dst), deviceSource(gpu, src, sizeBytes),
                  sizeBytes, gpu.stream()),
              "copying " + std::to_string(sizeBytes) + " bytes");
}

extern "C" void mgpuMemset32(void *dst, unsigned int value, size_t count,
                             void *) {
  Gpu &gpu = Gpu::current();
  gpu.require(gpu.driver().cuMemsetD32Async(CUdeviceptr(dst), value, count,
                                            gpu.stream()),
              "filling " + std::to_string(count) + " words");
}
