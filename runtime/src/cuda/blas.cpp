//===- blas.cpp - The cuBLAS entry points compiled code calls -------------===//
//
// `loom-lower-matmul-to-blas{library=cublas}` turns matrix products into
// calls of `_mlir_ciface_loom_rt_cublas_batch_matmul_<type>` with the CPU
// kernel's ABI (runtime/include/loom/kernels.h): row-major rank-3 memref
// descriptors of device buffers, transposes as flags, a batch of 1 that
// broadcasts, `accumulate` (beta = 1). loom::gemm::mapBatchMatmul turns
// that into one column-major strided batched GEMM; this file only calls
// cuBLAS with it, on the rank's stream:
//
//   f32        f32 operands and math (no TF32 unless LOOM_CUBLAS_TF32=1)
//   f64        f64
//   f16, bf16  16-bit operands and result, f32 accumulation (tensor cores)
//
// cuBLAS gets a 32 MiB workspace of its own (what Hopper wants; cuBLAS then
// allocates nothing during a step) and the default math mode.
//
//===----------------------------------------------------------------------===//

#include "gpu.h"

#include "loom/gemm.h"

#include <cublas_v2.h>

#include <string>

using namespace loom::cuda;
using loom::gemm::ColumnMajorGemm;
using loom::gemm::Memref3;

namespace {

struct Handle {
  const Blas *api = nullptr;
  cublasHandle_t handle = nullptr;
};

Handle &handle(Gpu &gpu) {
  static Handle h;
  if (h.handle)
    return h;
  std::string error;
  h.api = loom::cuda::blas(error);
  if (!h.api)
    gpu.fatal("cuBLAS: " + error);
  auto require = [&](cublasStatus_t s, const char *what) {
    if (s != CUBLAS_STATUS_SUCCESS)
      gpu.fatal(gpu.name() + ": cuBLAS (" + h.api->path + "): " + what +
                ": " + h.api->statusString(s));
  };
  if (!gpu.makeCurrent(error))
    gpu.fatal(error);
  require(h.api->create(&h.handle), "cublasCreate");
  require(h.api->setStream(h.handle, static_cast<cudaStream_t>(gpu.stream())),
          "cublasSetStream");
  const size_t kWorkspace = size_t(32) << 20;
  void *workspace = nullptr;
  if (!gpu.allocate(kWorkspace, &workspace, error))
    gpu.fatal(error + " for cuBLAS's workspace");
  require(h.api->setWorkspace(h.handle, workspace, kWorkspace),
          "cublasSetWorkspace");
  require(h.api->setMathMode(h.handle, CUBLAS_DEFAULT_MATH),
          "cublasSetMathMode");
  return h;
}

enum class Type { F32, F64, F16, BF16 };

const char *typeName(Type t) {
  switch (t) {
  case Type::F32:
    return "f32";
  case Type::F64:
    return "f64";
  case Type::F16:
    return "f16";
  case Type::BF16:
    return "bf16";
  }
  return "?";
}

void batchMatmul(Type type, Memref3 *a, Memref3 *b, Memref3 *c,
                 int64_t transA, int64_t transB, int64_t accumulate) {
  Gpu &gpu = Gpu::current();
  int64_t width = type == Type::F64 ? 8 : type == Type::F32 ? 4 : 2;
  ColumnMajorGemm g;
  std::string error;
  if (!loom::gemm::mapBatchMatmul(*a, *b, *c, transA != 0, transB != 0,
                                  accumulate != 0, width, g, error))
    gpu.fatal(std::string("cuBLAS ") + typeName(type) + " matmul: " + error);
  if (g.empty())
    return;
  if (g.k == 0) {
    // An empty sum: C = 0 (or unchanged when accumulating), without asking
    // cuBLAS what it does with k = 0. Each batch's C^T is m contiguous
    // elements per column, columns ldc apart.
    if (!g.accumulate)
      for (int64_t i = 0; i < g.batch; ++i)
        gpu.require(gpu.driver().cuMemsetD2D8Async(
                        CUdeviceptr(g.c + i * g.strideC * width),
                        size_t(g.ldc * width), 0, size_t(g.m * width),
                        size_t(g.n), gpu.stream()),
                    std::string("zeroing the result of an empty ") +
                        typeName(type) + " matmul");
    return;
  }
  Handle &h = handle(gpu);
  cudaDataType data;
  cublasComputeType_t compute;
  switch (type) {
  case Type::F32:
    data = CUDA_R_32F;
    compute = gpu.options().tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                 : CUBLAS_COMPUTE_32F;
    break;
  case Type::F64:
    data = CUDA_R_64F;
    compute = CUBLAS_COMPUTE_64F;
    break;
  case Type::F16:
    data = CUDA_R_16F;
    compute = CUBLAS_COMPUTE_32F;
    break;
  case Type::BF16:
    data = CUDA_R_16BF;
    compute = CUBLAS_COMPUTE_32F;
    break;
  }
  float alpha32 = 1, beta32 = g.accumulate ? 1 : 0;
  double alpha64 = 1, beta64 = g.accumulate ? 1 : 0;
  const void *alpha = type == Type::F64 ? static_cast<const void *>(&alpha64)
                                        : static_cast<const void *>(&alpha32);
  const void *beta = type == Type::F64 ? static_cast<const void *>(&beta64)
                                       : static_cast<const void *>(&beta32);
  std::string name =
      std::string("cublas ") + typeName(type) + " " + loom::gemm::describe(g);
  gpu.beginWork(name);
  cublasStatus_t s = h.api->gemmStridedBatched(
      h.handle, g.transA ? CUBLAS_OP_T : CUBLAS_OP_N,
      g.transB ? CUBLAS_OP_T : CUBLAS_OP_N, g.m, g.n, g.k, alpha, g.a, data,
      g.lda, g.strideA, g.b, data, g.ldb, g.strideB, beta, g.c, data, g.ldc,
      g.strideC, g.batch, compute, CUBLAS_GEMM_DEFAULT);
  if (s != CUBLAS_STATUS_SUCCESS)
    gpu.fatal(gpu.name() + ": " + name + " (lda " + std::to_string(g.lda) +
              ", ldb " + std::to_string(g.ldb) + ", ldc " +
              std::to_string(g.ldc) + "): " + h.api->statusString(s));
  gpu.endWork();
}

} // namespace

extern "C" {
void _mlir_ciface_loom_rt_cublas_batch_matmul_f32(Memref3 *a, Memref3 *b,
                                                  Memref3 *c, int64_t transA,
                                                  int64_t transB,
                                                  int64_t accumulate) {
  batchMatmul(Type::F32, a, b, c, transA, transB, accumulate);
}
void _mlir_ciface_loom_rt_cublas_batch_matmul_f64(Memref3 *a, Memref3 *b,
                                                  Memref3 *c, int64_t transA,
                                                  int64_t transB,
                                                  int64_t accumulate) {
  batchMatmul(Type::F64, a, b, c, transA, transB, accumulate);
}
void _mlir_ciface_loom_rt_cublas_batch_matmul_f16(Memref3 *a, Memref3 *b,
                                                  Memref3 *c, int64_t transA,
                                                  int64_t transB,
                                                  int64_t accumulate) {
  batchMatmul(Type::F16, a, b, c, transA, transB, accumulate);
}
void _mlir_ciface_loom_rt_cublas_batch_matmul_bf16(Memref3 *a, Memref3 *b,
                                                   Memref3 *c, int64_t transA,
                                                   int64_t transB,
                                                   int64_t accumulate) {
  batchMatmul(Type::BF16, a, b, c, transA, transB, accumulate);
}
}
