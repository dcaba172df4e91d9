//===- symbols.cpp - The runtime names compiled steps call ----------------===//
//
// Compiled code declares one collective per element type
// (`_mlir_ciface_loom_rt_all_reduce_f32`, ...); the JIT maps every such
// name to one runtime function that takes the type as an argument
// (Executor.cpp, runtimeSymbols). A rank program links the names here.
//
//===----------------------------------------------------------------------===//

#include "loom/kernels.h"

#define LOOM_COLLECTIVES(T)                                                    \
  void _mlir_ciface_loom_rt_all_reduce_##T(int64_t a, int64_t d, int64_t r,    \
                                           loom_memref1 *s, loom_memref1 *o) { \
    _mlir_ciface_loom_rt_all_reduce(a, d, r, s, o);                            \
  }                                                                            \
  void _mlir_ciface_loom_rt_all_gather_##T(int64_t a, int64_t d,               \
                                           loom_memref1 *s, loom_memref1 *o) { \
    _mlir_ciface_loom_rt_all_gather(a, d, s, o);                               \
  }                                                                            \
  void _mlir_ciface_loom_rt_reduce_scatter_##T(                                \
      int64_t a, int64_t d, int64_t r, loom_memref1 *s, loom_memref1 *o) {     \
    _mlir_ciface_loom_rt_reduce_scatter(a, d, r, s, o);                        \
  }                                                                            \
  void _mlir_ciface_loom_rt_all_to_all_##T(int64_t a, int64_t d,               \
                                           loom_memref1 *s, loom_memref1 *o) { \
    _mlir_ciface_loom_rt_all_to_all(a, d, s, o);                               \
  }                                                                            \
  int64_t _mlir_ciface_loom_rt_all_reduce_start_##T(                          \
      int64_t a, int64_t d, int64_t r, loom_memref1 *s, loom_memref1 *o) {     \
    return _mlir_ciface_loom_rt_all_reduce_start(a, d, r, s, o);               \
  }                                                                            \
  int64_t _mlir_ciface_loom_rt_all_gather_start_##T(                          \
      int64_t a, int64_t d, loom_memref1 *s, loom_memref1 *o) {                \
    return _mlir_ciface_loom_rt_all_gather_start(a, d, s, o);                  \
  }                                                                            \
  int64_t _mlir_ciface_loom_rt_reduce_scatter_start_##T(                      \
      int64_t a, int64_t d, int64_t r, loom_memref1 *s, loom_memref1 *o) {     \
    return _mlir_ciface_loom_rt_reduce_scatter_start(a, d, r, s, o);           \
  }                                                                            \
  void _mlir_ciface_loom_rt_collective_wait_##T(int64_t h, loom_memref1 *s,    \
                                                loom_memref1 *o) {             \
    _mlir_ciface_loom_rt_collective_wait(h, s, o);                             \
  }                                                                            \
  void _mlir_ciface_loom_rt_send_recv_##T(int64_t a, int64_t d, int64_t off,   \
                                          int64_t cyc, loom_memref1 *s,        \
                                          loom_memref1 *o) {                   \
    _mlir_ciface_loom_rt_send_recv(a, d, off, cyc, s, o);                      \
  }

#define LOOM_TOP_K(T, I)                                                       \
  void _mlir_ciface_loom_rt_top_k_indices_##T##_##I(                           \
      int64_t k, int64_t d, int64_t id, loom_memref1 *in, loom_memref1 *out) { \
    _mlir_ciface_loom_rt_top_k_indices(k, d, id, in, out);                     \
  }

extern "C" {
LOOM_COLLECTIVES(f16)
LOOM_COLLECTIVES(bf16)
LOOM_COLLECTIVES(f32)
LOOM_COLLECTIVES(f64)
LOOM_COLLECTIVES(i1)
LOOM_COLLECTIVES(i8)
LOOM_COLLECTIVES(i16)
LOOM_COLLECTIVES(i32)
LOOM_COLLECTIVES(i64)
LOOM_TOP_K(f16, i32)
LOOM_TOP_K(f16, i64)
LOOM_TOP_K(bf16, i32)
LOOM_TOP_K(bf16, i64)
LOOM_TOP_K(f32, i32)
LOOM_TOP_K(f32, i64)
LOOM_TOP_K(f64, i32)
LOOM_TOP_K(f64, i64)
}
