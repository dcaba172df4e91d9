//===- compiled.cpp - Collectives as compiled Loom code calls them --------===//
//
// Compiled code passes buffers as integers (aligned pointers) and the mesh
// axes of a collective packed into one integer; the mesh is the process's
// current one (loom_rt_set_mesh). A failing collective cannot be reported
// through compiled code, so it ends the process: the message names the rank,
// the collective and the peers that did not answer, and the exit status is 1.
// In a GPU program the mesh is a device mesh (loom_mesh_on_device): the
// buffers are device memory.
//
//===----------------------------------------------------------------------===//

#include "loom/kernels.h"
#include "loom/runtime.h"

#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace {
loom_mesh_t gMesh = nullptr;

/// Unpacks axes: one byte per axis, least significant first, index + 1.
int32_t unpackAxes(int64_t code, int32_t *axes) {
  int32_t n = 0;
  auto bits = static_cast<uint64_t>(code);
  while (bits && n < 8) {
    axes[n++] = static_cast<int32_t>((bits & 0xff) - 1);
    bits >>= 8;
  }
  return n;
}

void check(loom_status_t status) {
  if (!status)
    return;
  std::fprintf(stderr, "loom: %s\n", loom_status_message(status));
  std::fflush(stderr);
  std::fflush(stdout);
  _exit(1);
}

loom_mesh_t mesh() {
  if (!gMesh) {
    std::fprintf(stderr, "loom: compiled code ran a collective but no mesh "
                         "was set (loom_rt_set_mesh)\n");
    _exit(1);
  }
  return gMesh;
}

} // namespace

extern "C" void loom_rt_set_mesh(loom_mesh_t mesh) { gMesh = mesh; }

extern "C" int64_t loom_rt_pack_axes(const int32_t *axes, int32_t n) {
  uint64_t code = 0;
  for (int32_t i = n - 1; i >= 0; --i)
    code = (code << 8) | static_cast<uint64_t>(axes[i] + 1);
  return static_cast<int64_t>(code);
}

static char *data(loom_memref1 *m, int64_t dtype) {
  return static_cast<char *>(m->aligned) +
         m->offset * static_cast<int64_t>(
                         loom_dtype_size(static_cast<loom_dtype_t>(dtype)));
}

extern "C" void _mlir_ciface_loom_rt_all_reduce(int64_t axesCode,
                                                int64_t dtype,
                                                int64_t reduction,
                                                loom_memref1 *send,
                                                loom_memref1 *recv) {
  int32_t axes[8];
  int32_t n = unpackAxes(axesCode, axes);
  check(loom_all_reduce(mesh(), axes, n, static_cast<loom_dtype_t>(dtype),
                        static_cast<loom_reduction_t>(reduction),
                        data(send, dtype), data(recv, dtype), recv->size));
}

extern "C" void _mlir_ciface_loom_rt_all_gather(int64_t axesCode,
                                                int64_t dtype,
                                                loom_memref1 *send,
                                                loom_memref1 *recv) {
  int32_t axes[8];
  int32_t n = unpackAxes(axesCode, axes);
  check(loom_all_gather(mesh(), axes, n, static_cast<loom_dtype_t>(dtype),
                        data(send, dtype), data(recv, dtype), send->size));
}

extern "C" void _mlir_ciface_loom_rt_reduce_scatter(int64_t axesCode,
                                                    int64_t dtype,
                                                    int64_t reduction,
                                                    loom_memref1 *send,
                                                    loom_memref1 *recv) {
  int32_t axes[8];
  int32_t n = unpackAxes(axesCode, axes);
  check(loom_reduce_scatter(mesh(), axes, n, static_cast<loom_dtype_t>(dtype),
                            static_cast<loom_reduction_t>(reduction),
                            data(send, dtype), data(recv, dtype),
                            recv->size));
}

extern "C" void _mlir_ciface_loom_rt_all_to_all(int64_t axesCode,
                                                int64_t dtype,
                                                loom_memref1 *send,
                                                loom_memref1 *recv) {
  int32_t axes[8];
  int32_t n = unpackAxes(axesCode, axes);
  int64_t group = 1;
  for (int32_t i = 0; i < n; ++i)
    group *= loom_mesh_axis_size(mesh(), axes[i]);
  check(loom_all_to_all(mesh(), axes, n, static_cast<loom_dtype_t>(dtype),
                        data(send, dtype), data(recv, dtype),
                        send->size / group));
}

extern "C" int64_t _mlir_ciface_loom_rt_all_reduce_start(
    int64_t axesCode, int64_t dtype, int64_t reduction, loom_memref1 *send,
    loom_memref1 *recv) {
  int32_t axes[8];
  int32_t n = unpackAxes(axesCode, axes);
  loom_pending_t pending = nullptr;
  check(loom_all_reduce_start(mesh(), axes, n,
                              static_cast<loom_dtype_t>(dtype),
                              static_cast<loom_reduction_t>(reduction),
                              data(send, dtype), data(recv, dtype),
                              recv->size, &pending));
  return reinterpret_cast<int64_t>(pending);
}

extern "C" int64_t _mlir_ciface_loom_rt_all_gather_start(int64_t axesCode,
                                                         int64_t dtype,
                                                         loom_memref1 *send,
                                                         loom_memref1 *recv) {
  int32_t axes[8];
  int32_t n = unpackAxes(axesCode, axes);
  loom_pending_t pending = nullptr;
  check(loom_all_gather_start(mesh(), axes, n,
                              static_cast<loom_dtype_t>(dtype),
                              data(send, dtype), data(recv, dtype),
                              send->size, &pending));
  return reinterpret_cast<int64_t>(pending);
}

extern "C" int64_t _mlir_ciface_loom_rt_reduce_scatter_start(
    int64_t axesCode, int64_t dtype, int64_t reduction, loom_memref1 *send,
    loom_memref1 *recv) {
  int32_t axes[8];
  int32_t n = unpackAxes(axesCode, axes);
  loom_pending_t pending = nullptr;
  check(loom_reduce_scatter_start(mesh(), axes, n,
                                  static_cast<loom_dtype_t>(dtype),
                                  static_cast<loom_reduction_t>(reduction),
                                  data(send, dtype), data(recv, dtype),
                                  recv->size, &pending));
  return reinterpret_cast<int64_t>(pending);
}

extern "C" void _mlir_ciface_loom_rt_collective_wait(int64_t handle,
                                                     loom_memref1 *,
                                                     loom_memref1 *) {
  check(loom_collective_wait(reinterpret_cast<loom_pending_t>(handle)));
}

/// Sends to the group member `offset` places later and receives from the
/// one `offset` places earlier (wrapping around when `cyclic`); receives
/// zeros when there is no such member.
extern "C" void _mlir_ciface_loom_rt_send_recv(int64_t axesCode, int64_t dtype,
                                               int64_t offset, int64_t cyclic,
                                               loom_memref1 *send,
                                               loom_memref1 *recv) {
  int32_t axes[8];
  int32_t n = unpackAxes(axesCode, axes);
  loom_mesh_t m = mesh();
  int32_t numAxes = loom_mesh_num_axes(m);
  int64_t coords[16];
  for (int32_t a = 0; a < numAxes && a < 16; ++a)
    coords[a] = loom_mesh_coordinate(m, a);
  int64_t group = 1, index = 0;
  for (int32_t i = 0; i < n; ++i) {
    group *= loom_mesh_axis_size(m, axes[i]);
    index = index * loom_mesh_axis_size(m, axes[i]) + coords[axes[i]];
  }
  // The mesh rank of group member `k` (or -1 outside the group).
  auto rankOf = [&](int64_t k) -> int32_t {
    if (cyclic)
      k = ((k % group) + group) % group;
    if (k < 0 || k >= group)
      return -1;
    int64_t c[16];
    for (int32_t a = 0; a < numAxes && a < 16; ++a)
      c[a] = coords[a];
    for (int32_t i = n - 1; i >= 0; --i) {
      int64_t size = loom_mesh_axis_size(m, axes[i]);
      c[axes[i]] = k % size;
      k /= size;
    }
    return loom_mesh_rank_at(m, c);
  };
  int32_t to = rankOf(index + offset), from = rankOf(index - offset);
  char *out = data(recv, dtype);
  // Host or device memory, as the mesh says (loom_mesh_on_device).
  if (from < 0)
    check(loom_fill_zero(m, out,
                         static_cast<size_t>(recv->size) *
                             loom_dtype_size(static_cast<loom_dtype_t>(dtype))));
  check(loom_send_recv(m, static_cast<loom_dtype_t>(dtype), to,
                       data(send, dtype), from, out, send->size));
}

extern "C" int64_t loom_rt_group_index(int64_t axesCode) {
  int32_t axes[8];
  int32_t n = unpackAxes(axesCode, axes);
  int64_t index = 0;
  for (int32_t i = 0; i < n; ++i)
    index = index * loom_mesh_axis_size(mesh(), axes[i]) +
            loom_mesh_coordinate(mesh(), axes[i]);
  return index;
}
