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
//   f16_f32, bf16_f32
//              16-bit operands, an f32 result, f32 accumulation (tensor
//              cores): what Loom's 16-bit dot_generals lower to (the
//              exact products of 16-bit floats summed in f32, rounded once
//              by whatever consumes the f32 result)
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

int64_t widthOf(Type t) {
  return t == Type::F64 ? 8 : t == Type::F32 ? 4 : 2;
}

cudaDataType dataType(Type t) {
  switch (t) {
  case Type::F32:
    return CUDA_R_32F;
  case Type::F64:
    return CUDA_R_64F;
  case Type::F16:
    return CUDA_R_16F;
  case Type::BF16:
    return CUDA_R_16BF;
  }
  return CUDA_R_32F;
}

/// C (of `result`) = op(A) op(B) (+ C), A and B of `type`.
void batchMatmul(Type type, Type result, Memref3 *a, Memref3 *b, Memref3 *c,
                 int64_t transA, int64_t transB, int64_t accumulate) {
  Gpu &gpu = Gpu::current();
  int64_t width = widthOf(result);
  std::string typeText = typeName(type);
  if (result != type)
    typeText += std::string("->") + typeName(result);
  ColumnMajorGemm g;
  std::string error;
  if (!loom::gemm::mapBatchMatmul(*a, *b, *c, transA != 0, transB != 0,
                                  accumulate != 0, widthOf(type), width, g,
                                  error))
    gpu.fatal("cuBLAS " + typeText + " matmul: " + error);
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
                    "zeroing the result of an empty " + typeText +
                        " matmul");
    return;
  }
  Handle &h = handle(gpu);
  cudaDataType data = dataType(type), resultData = dataType(result);
  cublasComputeType_t compute =
      type == Type::F64 ? CUBLAS_COMPUTE_64F
      : type == Type::F32 && gpu.options().tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                : CUBLAS_COMPUTE_32F;
  float alpha32 = 1, beta32 = g.accumulate ? 1 : 0;
  double alpha64 = 1, beta64 = g.accumulate ? 1 : 0;
  const void *alpha = type == Type::F64 ? static_cast<const void *>(&alpha64)
                                        : static_cast<const void *>(&alpha32);
  const void *beta = type == Type::F64 ? static_cast<const void *>(&beta64)
                                       : static_cast<const void *>(&beta32);
  std::string name = "cublas " + typeText + " " + loom::gemm::describe(g);
  gpu.beginWork(name);
  cublasStatus_t s = h.api->gemmStridedBatched(
      h.handle, g.transA ? CUBLAS_OP_T : CUBLAS_OP_N,
      g.transB ? CUBLAS_OP_T : CUBLAS_OP_N, g.m, g.n, g.k, alpha, g.a, data,
      g.lda, g.strideA, g.b, data, g.ldb, g.strideB, beta, g.c, resultData, g.ldc,
      g.strideC, g.batch, compute, CUBLAS_GEMM_DEFAULT);
  if (s != CUBLAS_STATUS_SUCCESS &&
      !gpu.refuseCapture(name + ": " + h.api->statusString(s)))
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
  batchMatmul(Type::F32, Type::F32, a, b, c, transA, transB, accumulate);
}
void _mlir_ciface_loom_rt_cublas_batch_matmul_f64(Memref3 *a, Memref3 *b,
                                                  Memref3 *c, int64_t transA,
                                                  int64_t transB,
                                                  int64_t accumulate) {
  batchMatmul(Type::F64, Type::F64, a, b, c, transA, transB, accumulate);
}
void _mlir_ciface_loom_rt_cublas_batch_matmul_f16(Memref3 *a, Memref3 *b,
                                                  Memref3 *c, int64_t transA,
                                                  int64_t transB,
                                                  int64_t accumulate) {
  batchMatmul(Type::F16, Type::F16, a, b, c, transA, transB, accumulate);
}
void _mlir_ciface_loom_rt_cublas_batch_matmul_bf16(Memref3 *a, Memref3 *b,
                                                   Memref3 *c, int64_t transA,
                                                   int64_t transB,
                                                   int64_t accumulate) {
  batchMatmul(Type::BF16, Type::BF16, a, b, c, transA, transB, accumulate);
}
void _mlir_ciface_loom_rt_cublas_batch_matmul_f16_f32(Memref3 *a, Memref3 *b,
                                                      Memref3 *c,
                                                      int64_t transA,
                                                      int64_t transB,
                                                      int64_t accumulate) {
  batchMatmul(Type::F16, Type::F32, a, b, c, transA, transB, accumulate);
}
void _mlir_ciface_loom_rt_cublas_batch_matmul_bf16_f32(Memref3 *a, Memref3 *b,
                                                       Memref3 *c,
                                                       int64_t transA,
                                                       int64_t transB,
                                                       int64_t accumulate) {
  batchMatmul(Type::BF16, Type::F32, a, b, c, transA, transB, accumulate);
}
}
