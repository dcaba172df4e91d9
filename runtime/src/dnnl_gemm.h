//===- dnnl_gemm.h - Batch matmuls through oneDNN --------------*- C++ -*-===//
//
// 16-bit batch matmuls (bf16 operands, f32 accumulation) through oneDNN's
// matmul primitive where this machine has a native kernel for them (AVX512
// BF16 or AMX: oneDNN's `brg:avx512_core_bf16` and up); OpenBLAS has no bf16
// GEMM, so without oneDNN the operands are widened to f32 for sgemm.
// Internal to libloom_blas.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_DNNL_GEMM_H
#define LOOM_RUNTIME_DNNL_GEMM_H

#include <cstddef>
#include <cstdint>

#include <oneapi/dnnl/dnnl_types.h>

namespace loom::dnnl_gemm {

enum class Type { bf16, f16, f32 };

/// A rank-3 strided operand as the memref descriptor gives it.
struct Operand {
  void *data; // aligned pointer plus offset
  int64_t sizes[3];
  int64_t strides[3];
  Type type;
};

/// C = op(A) op(B) (+ C when `accumulate`), A and B 16-bit, C f32 or of
/// their type (the f32 sums rounded once to nearest even), batches of 1
/// broadcast. Returns false, having written nothing, when oneDNN has no
/// native kernel for it here (its reference kernels are slower than
/// widening for sgemm), when LOOM_ONEDNN=0, or when oneDNN refuses the
/// layout; the caller then computes it.
bool batchMatmul(const Operand &a, const Operand &b, const Operand &c,
                 bool transA, bool transB, bool accumulate, int threads);

/// How many products oneDNN has computed in this process.
int64_t products();

/// An N-d convolution (1 to 3 spatial dimensions, channels first, dense
/// row-major operands), as loom.conv describes it: x [n, c, d...],
/// w [f, c / groups, kernel...], y [n, f, out...].
struct ConvShape {
  int64_t k, groups, n, c, f;
  int64_t d[3], kernel[3], out[3], stride[3], padBegin[3], padEnd[3],
      dilation[3];
  /// Multiply-adds.
  int64_t work() const;
};

/// y = conv(x, w) through oneDNN's convolution (blocked layouts chosen by
/// oneDNN, the operands reordered into them and the result back); f32, or
/// bf16 where the CPU has native bf16 (f32 accumulation, the result
/// rounded once). Returns false, having written nothing, when oneDNN is
/// off (LOOM_ONEDNN=0), has no native kernel for the type, or refuses.
bool conv(const ConvShape &shape, Type type, const void *x, const void *w,
          void *y, int threads);

/// How many convolutions oneDNN has computed in this process.
int64_t convolutions();

/// Threads for a product or convolution of `work` multiply-adds: one below
/// 2^22 (OpenBLAS's threads cost more than they save there: 10x slower on
/// attention's 128x64x128 products on 2 cores), else as many as OpenBLAS
/// uses, so that its pool and oneDNN's do not oversubscribe the rank.
constexpr int64_t kThreadedWork = int64_t(1) << 22;
int threadsFor(int64_t work);

namespace detail {
/// The engine (null where oneDNN is off or cannot make one), the calling
/// thread's stream, whether oneDNN has native kernels for `type` here
/// (false without an engine).
dnnl_engine_t engine();
dnnl_stream_t threadStream();
bool nativeOn(Type type);
/// `pd`'s implementation name, or null for oneDNN's reference
/// implementations (loops, slower than the fallbacks).
const char *fastImplementation(const_dnnl_primitive_desc_t pd);
/// The primitive of `pd` with its scratchpad's descriptor and size, unless
/// fastImplementation(pd) is null; false when not made.
bool makePrimitive(const_dnnl_primitive_desc_t pd, dnnl_primitive_t &primitive,
                   dnnl_memory_desc_t &pad, size_t &scratchpad);
/// Memory objects wrapping buffers for one call, destroyed with it.
struct Memories {
  dnnl_memory_t make(const dnnl_memory_desc_t &md, void *data);
  ~Memories();
  dnnl_memory_t all[8] = {};
  int count = 0;
};
} // namespace detail

/// The oneDNN implementation a product of these types would use here (e.g.
/// "brg:avx512_core_bf16"), or "" when none would be used: for reports and
/// tests.
const char *implementation(Type operands, Type result);

} // namespace loom::dnnl_gemm

#endif // LOOM_RUNTIME_DNNL_GEMM_H
