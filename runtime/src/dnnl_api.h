//===- dnnl_api.h - oneDNN, loaded when first used ------------*- C++ -*-===//
//
// libloom_blas does not link oneDNN: it loads libdnnl.so.2 (and with it
// libgomp, oneDNN's thread pool in Debian's build) the first time a kernel
// asks for it. Two reasons:
//  * libgomp reads its wait policy when it is loaded, and its default (each
//    pool thread spins for ~300,000 iterations after a parallel region)
//    took the core OpenBLAS's threads and compiled code needed: a ResNet-18
//    step mixing oneDNN convolutions and OpenBLAS GEMMs ran 1.2-1.3x slower
//    on 2 cores. Loaded here, the pool spins briefly and then sleeps
//    (GOMP_SPINCOUNT, unless the user set it or OMP_WAIT_POLICY);
//  * a rank program runs where oneDNN is not installed, on the fallbacks.
// The functions below are pointers of the C API's own types, declared in
// loom::dnnl_gemm so that its code calls them by their usual names (an
// unqualified name is found in the enclosing namespace before the global
// declaration from dnnl.h, which is never called).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_DNNL_API_H
#define LOOM_RUNTIME_DNNL_API_H

#include <oneapi/dnnl/dnnl.h>

#define LOOM_DNNL_FUNCTIONS(X)                                                 \
  X(dnnl_dilated_convolution_forward_desc_init)                                \
  X(dnnl_engine_create)                                                        \
  X(dnnl_get_effective_cpu_isa)                                                \
  X(dnnl_matmul_desc_init)                                                     \
  X(dnnl_memory_create)                                                        \
  X(dnnl_memory_desc_equal)                                                    \
  X(dnnl_memory_desc_get_size)                                                 \
  X(dnnl_memory_desc_init_by_strides)                                          \
  X(dnnl_memory_desc_init_by_tag)                                              \
  X(dnnl_memory_destroy)                                                       \
  X(dnnl_post_ops_append_sum)                                                  \
  X(dnnl_post_ops_create)                                                      \
  X(dnnl_post_ops_destroy)                                                     \
  X(dnnl_primitive_attr_create)                                                \
  X(dnnl_primitive_attr_destroy)                                               \
  X(dnnl_primitive_attr_set_post_ops)                                          \
  X(dnnl_primitive_attr_set_scratchpad_mode)                                   \
  X(dnnl_primitive_create)                                                     \
  X(dnnl_primitive_desc_create)                                                \
  X(dnnl_primitive_desc_destroy)                                               \
  X(dnnl_primitive_desc_query)                                                 \
  X(dnnl_primitive_desc_query_md)                                              \
  X(dnnl_primitive_execute)                                                    \
  X(dnnl_reorder_primitive_desc_create)                                        \
  X(dnnl_stream_create)                                                        \
  X(dnnl_stream_wait)

namespace loom::dnnl_gemm {

#define LOOM_DNNL_POINTER(name) extern decltype(&::name) name;
LOOM_DNNL_FUNCTIONS(LOOM_DNNL_POINTER)
#undef LOOM_DNNL_POINTER
/// libgomp's, found through oneDNN.
extern void (*omp_set_num_threads)(int);

/// Loads oneDNN once; false where it is missing or incomplete (then every
/// kernel takes its fallback).
bool loadDnnl();

} // namespace loom::dnnl_gemm

#endif // LOOM_RUNTIME_DNNL_API_H
