//===- api.h - The CUDA driver and cuBLAS, loaded at run time ---*- C++ -*-===//
//
// Loom's CUDA library links no CUDA library: it loads them with dlopen when
// a GPU program starts, so that a program built on a machine with the
// toolkit runs on one that has only the driver and the libraries PyTorch
// brings (the `nvidia-*` Python packages), wherever they are. The driver
// (libcuda.so.1) comes with the NVIDIA driver; cuBLAS and NCCL are searched
// for in LOOM_CUDA_LIBRARY_PATH, the loader's path, the toolkit
// (CUDA_HOME, CUDA_PATH, CUDA_ROOT, /usr/local/cuda) and the `nvidia/*/lib`
// folders of the Python installations on PATH and in the usual places.
//
// Functions are looked up by the names the headers define them to
// (cuMemAlloc is cuMemAlloc_v2), with the headers' prototypes.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CUDA_API_H
#define LOOM_RUNTIME_CUDA_API_H

#include <cublas_api.h>
#include <cuda.h>

#include <string>
#include <vector>

namespace loom::cuda {

#define LOOM_CUDA_DRIVER_FUNCTIONS(X)                                          \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString)        \
  X(cuDeviceGet) X(cuDeviceGetCount) X(cuDeviceGetName) X(cuDeviceTotalMem)    \
  X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain)                          \
  X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuCtxGetCurrent)           \
  X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamQuery) \
  X(cuMemAllocAsync) X(cuMemFreeAsync) X(cuMemAllocManaged) X(cuMemFree)       \
  X(cuDeviceGetDefaultMemPool) X(cuMemPoolSetAttribute) X(cuMemPoolGetAttribute) \
  X(cuMemGetInfo) X(cuModuleLoadData) X(cuModuleGetFunction) X(cuModuleUnload) \
  X(cuLaunchKernel) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync)                  \
  X(cuMemcpyDtoDAsync) X(cuMemcpyAsync) X(cuMemsetD8Async) X(cuMemsetD32Async) X(cuMemsetD2D8Async) X(cuEventCreate) \
  X(cuEventRecord)    \
  X(cuEventSynchronize) X(cuEventElapsedTime) X(cuEventDestroy)               \
  X(cuMemAlloc) X(cuMemcpyHtoD) X(cuPointerGetAttribute) X(cuMemPoolTrimTo)    \
  X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuGraphInstantiateWithFlags) \
  X(cuGraphLaunch) X(cuGraphDestroy) X(cuGraphExecDestroy)                     \
  X(cuDeviceGetGraphMemAttribute)

#define LOOM_CUDA_XSTR(x) LOOM_CUDA_STR(x)
#define LOOM_CUDA_STR(x) #x

struct Driver {
#define LOOM_DECLARE(name) decltype(&::name) name = nullptr;
  LOOM_CUDA_DRIVER_FUNCTIONS(LOOM_DECLARE)
#undef LOOM_DECLARE
  std::string path;
};

/// cuBLAS, with the C prototypes (the C++ header overloads some).
struct Blas {
  cublasStatus_t (*create)(cublasHandle_t *) = nullptr;
  cublasStatus_t (*destroy)(cublasHandle_t) = nullptr;
  cublasStatus_t (*setStream)(cublasHandle_t, cudaStream_t) = nullptr;
  cublasStatus_t (*setWorkspace)(cublasHandle_t, void *, size_t) = nullptr;
  cublasStatus_t (*setMathMode)(cublasHandle_t, cublasMath_t) = nullptr;
  cublasStatus_t (*getVersion)(cublasHandle_t, int *) = nullptr;
  const char *(*statusString)(cublasStatus_t) = nullptr;
  cublasStatus_t (*gemmStridedBatched)(
      cublasHandle_t, cublasOperation_t, cublasOperation_t, int64_t, int64_t,
      int64_t, const void *, const void *, cudaDataType, int64_t, long long,
      const void *, cudaDataType, int64_t, long long, const void *, void *,
      cudaDataType, int64_t, long long, int64_t, cublasComputeType_t,
      cublasGemmAlgo_t) = nullptr;
  std::string path;
};

/// The driver, loaded once; null with `error` ("no NVIDIA driver ...").
const Driver *driver(std::string &error);
/// cuBLAS, loaded once; null with `error`.
const Blas *blas(std::string &error);

/// dlopen of `soname` through the search described above; `where` is the
/// file it loaded (found through `symbol`, one of its functions, when the
/// loader's own path found it). Null with `error` listing where it looked.
void *openLibrary(const std::string &soname, std::string &where,
                  std::string &error, const char *symbol = nullptr);
/// The folders searched after the loader's own path, in order.
std::vector<std::string> librarySearchPath();

/// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)".
std::string errorText(CUresult result);

} // namespace loom::cuda

#endif // LOOM_RUNTIME_CUDA_API_H
