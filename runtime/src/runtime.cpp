//===- runtime.cpp - Runtime, meshes and collectives over mesh axes -------===//

#include "backend.h"
#include "lane.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <vector>

using namespace loom::rt;

struct loom_runtime_s {
  loom_runtime_options_t options;
  std::unique_ptr<Backend> backend;
  /// Collectives started without blocking (lane.h); destroyed, and so
  /// finished, before the backend. Null where they run at once.
  std::unique_ptr<CommLane> lane;
  /// Tracing: on or off, its time 0, what it recorded (the lane records
  /// too: under eventsMutex).
  std::atomic<bool> tracing{false};
  std::chrono::steady_clock::time_point traceStart;
  std::mutex eventsMutex;
  std::vector<loom_trace_event_t> events;

  void record(const loom_trace_event_t &event) {
    std::lock_guard<std::mutex> lock(eventsMutex);
    events.push_back(event);
  }
  /// Before the program's thread uses the backend: the lane is idle.
  void drain() {
    if (lane)
      lane->drain();
  }

  double nowUs() const {
    return std::chrono::duration<double, std::micro>(
               std::chrono::steady_clock::now() - traceStart)
        .count();
  }
};

struct loom_mesh_s {
  loom_runtime_t runtime;
  std::vector<int64_t> sizes;
  std::vector<std::string> names;
  std::vector<int64_t> coordinates;
  /// One group per ordered list of distinct axes, keyed by that list.
  std::map<std::vector<int32_t>, std::unique_ptr<Group>> groups;
  /// A device view (loom_mesh_on_device): buffers are device memory; the
  /// groups are the parent's.
  loom_mesh_s *parent = nullptr;
  bool device = false;

  std::map<std::vector<int32_t>, std::unique_ptr<Group>> &allGroups() {
    return parent ? parent->groups : groups;
  }
};

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

extern "C" size_t loom_dtype_size(loom_dtype_t dtype) {
  switch (dtype) {
  case LOOM_DTYPE_F64:
  case LOOM_DTYPE_I64:
  case LOOM_DTYPE_U64:
    return 8;
  case LOOM_DTYPE_F32:
  case LOOM_DTYPE_I32:
  case LOOM_DTYPE_U32:
    return 4;
  case LOOM_DTYPE_F16:
  case LOOM_DTYPE_BF16:
  case LOOM_DTYPE_I16:
  case LOOM_DTYPE_U16:
    return 2;
  case LOOM_DTYPE_I8:
  case LOOM_DTYPE_U8:
  case LOOM_DTYPE_BOOL:
    return 1;
  }
  return 0;
}

extern "C" const char *loom_dtype_name(loom_dtype_t dtype) {
  static const char *names[] = {"f32", "f64", "f16", "bf16", "i8",
                                "i16", "i32", "i64", "ui8", "ui16",
                                "ui32", "ui64", "i1"};
  unsigned i = static_cast<unsigned>(dtype);
  return i < sizeof(names) / sizeof(names[0]) ? names[i] : "?";
}

extern "C" const char *loom_reduction_name(loom_reduction_t r) {
  switch (r) {
  case LOOM_REDUCTION_SUM:
    return "sum";
  case LOOM_REDUCTION_MAX:
    return "max";
  case LOOM_REDUCTION_MIN:
    return "min";
  case LOOM_REDUCTION_PROD:
    return "prod";
  }
  return "?";
}

extern "C" const char *loom_backend_name(loom_backend_t backend) {
  switch (backend) {
  case LOOM_BACKEND_AUTO:
    return "auto";
  case LOOM_BACKEND_LOCAL:
    return "local";
  case LOOM_BACKEND_MPI:
    return "mpi";
  case LOOM_BACKEND_NCCL:
    return "nccl";
  case LOOM_BACKEND_GLOO:
    return "gloo";
  }
  return "unknown";
}

//===----------------------------------------------------------------------===//
// Runtime
//===----------------------------------------------------------------------===//

extern "C" void loom_runtime_options_init(loom_runtime_options_t *options) {
  std::memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(*options);
  options->backend = LOOM_BACKEND_AUTO;
  options->timeout_seconds = 60.0;
  options->diagnosis_seconds = 3.0;
  options->check_signatures = 1;
}

/// The backend a launcher implies: MPI where an MPI launcher (mpirun, a
/// PMI or PMIx server: srun --mpi=pmix) started the ranks, Gloo where ranks
/// were started without one (torchrun-style variables, plain srun).
static loom_backend_t autoBackend(const loom_launch_info_t &info) {
  if (info.world_size <= 1)
    return LOOM_BACKEND_LOCAL;
  switch (info.launcher) {
  case LOOM_LAUNCHER_TORCHRUN:
    return LOOM_BACKEND_GLOO;
  case LOOM_LAUNCHER_SLURM:
    return std::getenv("PMIX_RANK") || std::getenv("PMI_RANK")
               ? LOOM_BACKEND_MPI
               : LOOM_BACKEND_GLOO;
  default:
    return LOOM_BACKEND_MPI;
  }
}

extern "C" loom_status_t
loom_runtime_create(const loom_runtime_options_t *options,
                    loom_runtime_t *out_runtime) {
  if (!options || !out_runtime)
    return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT,
                            "loom_runtime_create: NULL argument");
  loom_runtime_options_t opts;
  loom_runtime_options_init(&opts);
  std::memcpy(&opts, options, std::min<size_t>(options->struct_size,
                                                sizeof(opts)));
  if (opts.timeout_seconds <= 0 || opts.diagnosis_seconds <= 0)
    return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT,
                            "loom_runtime_create: timeouts must be positive "
                            "(timeout %g s, diagnosis %g s)",
                            opts.timeout_seconds, opts.diagnosis_seconds);
  loom_backend_t backend = opts.backend;
  loom_launch_info_t info;
  if (loom_status_t s = loom_launch_info_from_env(&info))
    return s;
  // NCCL bootstraps (and keeps control traffic) over the launcher's host
  // backend.
  loom_backend_t host = autoBackend(info);
  if (backend == LOOM_BACKEND_AUTO) {
    backend = host;
    // A GPU per rank of this node: NCCL; more ranks than GPUs (several
    // processes on one GPU, which NCCL refuses): the host backend, staged.
    if (opts.device && host != LOOM_BACKEND_LOCAL && info.local_size > 0 &&
        info.local_size <= opts.device->device_count)
      backend = LOOM_BACKEND_NCCL;
    if (const char *forced = std::getenv("LOOM_BACKEND")) {
      std::string name = forced;
      if (name == "mpi")
        backend = LOOM_BACKEND_MPI;
      else if (name == "gloo")
        backend = LOOM_BACKEND_GLOO;
      else if (name == "local")
        backend = LOOM_BACKEND_LOCAL;
      else if (name == "nccl")
        backend = LOOM_BACKEND_NCCL;
      else if (name != "auto")
        return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT,
                                "LOOM_BACKEND=%s: expected mpi, gloo, nccl, "
                                "local or auto",
                                forced);
    }
  }
  auto *runtime = new (std::nothrow) loom_runtime_s;
  if (!runtime)
    return loom_status_make(LOOM_STATUS_INTERNAL, "out of memory");
  runtime->options = opts;
  auto makeHost = [&](loom_backend_t kind, std::unique_ptr<Backend> &out) {
    switch (kind) {
    case LOOM_BACKEND_LOCAL:
      out = makeLocalBackend();
      return loom_status_t(nullptr);
    case LOOM_BACKEND_MPI:
      return makeMpiBackend(opts, out);
    case LOOM_BACKEND_GLOO:
      return makeGlooBackend(opts, out);
    default:
      return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT,
                              "unknown backend %d", static_cast<int>(kind));
    }
  };
  loom_status_t status = nullptr;
  if (backend == LOOM_BACKEND_NCCL) {
    std::unique_ptr<Backend> bootstrap;
    status = makeHost(host, bootstrap);
    if (!status)
      status = makeNcclBackend(opts, std::move(bootstrap), runtime->backend);
  } else {
    status = makeHost(backend, runtime->backend);
  }
  if (status) {
    delete runtime;
    return status;
  }
  if (runtime->backend->callableFromLane())
    runtime->lane = std::make_unique<CommLane>();
  *out_runtime = runtime;
  return nullptr;
}

extern "C" void loom_runtime_destroy(loom_runtime_t runtime) {
  delete runtime;
}

extern "C" void loom_runtime_abandon(loom_runtime_t runtime) {
  if (runtime)
    runtime->backend->abandon();
}

extern "C" int32_t loom_runtime_overlaps(loom_runtime_t runtime) {
  return runtime && runtime->lane ? 1 : 0;
}

extern "C" int32_t loom_runtime_rank(loom_runtime_t runtime) {
  return runtime->backend->rank();
}

extern "C" int32_t loom_runtime_size(loom_runtime_t runtime) {
  return runtime->backend->size();
}

extern "C" loom_backend_t loom_runtime_backend(loom_runtime_t runtime) {
  return runtime->backend->kind();
}

//===----------------------------------------------------------------------===//
// Meshes
//===----------------------------------------------------------------------===//

/// Every ordered list of distinct axes (permutations of every subset).
static void orderedSubsets(int n, std::vector<int32_t> &current,
                           std::vector<bool> &used,
                           std::vector<std::vector<int32_t>> &out) {
  if (!current.empty())
    out.push_back(current);
  for (int a = 0; a < n; ++a) {
    if (used[a])
      continue;
    used[a] = true;
    current.push_back(a);
    orderedSubsets(n, current, used, out);
    current.pop_back();
    used[a] = false;
  }
}

extern "C" loom_status_t loom_mesh_create(loom_runtime_t runtime,
                                          int32_t num_axes,
                                          const int64_t *axis_sizes,
                                          const char *const *axis_names,
                                          loom_mesh_t *out_mesh) {
  if (!runtime || !out_mesh || num_axes < 0 || (num_axes && !axis_sizes))
    return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT,
                            "loom_mesh_create: invalid arguments");
  runtime->drain();
  if (num_axes > 6)
    return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT,
                            "loom_mesh_create: %d axes; at most 6 are "
                            "supported",
                            num_axes);
  auto mesh = std::make_unique<loom_mesh_s>();
  mesh->runtime = runtime;
  int64_t product = 1;
  std::string shape;
  for (int32_t i = 0; i < num_axes; ++i) {
    if (axis_sizes[i] < 1)
      return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT,
                              "loom_mesh_create: axis %d has size %lld", i,
                              static_cast<long long>(axis_sizes[i]));
    product *= axis_sizes[i];
    mesh->sizes.push_back(axis_sizes[i]);
    std::string name = axis_names && axis_names[i] ? axis_names[i]
                                                   : "axis" + std::to_string(i);
    for (const std::string &other : mesh->names)
      if (other == name)
        return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT,
                                "loom_mesh_create: axis name '%s' repeats",
                                name.c_str());
    mesh->names.push_back(name);
    shape += (i ? ", " : "") + name + "=" + std::to_string(axis_sizes[i]);
  }
  Backend &backend = *runtime->backend;
  if (product != backend.size())
    return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT,
                            "the mesh [%s] has %lld devices but %d ranks "
                            "were launched",
                            shape.c_str(), static_cast<long long>(product),
                            backend.size());
  int64_t rest = backend.rank();
  mesh->coordinates.assign(num_axes, 0);
  for (int32_t i = num_axes - 1; i >= 0; --i) {
    mesh->coordinates[i] = rest % mesh->sizes[i];
    rest /= mesh->sizes[i];
  }
  // Groups, created in the same order on every rank.
  std::vector<std::vector<int32_t>> lists;
  std::vector<int32_t> current;
  std::vector<bool> used(num_axes, false);
  orderedSubsets(num_axes, current, used, lists);
  for (const std::vector<int32_t> &axes : lists) {
    int64_t color = 0, key = 0;
    for (int32_t a = 0; a < num_axes; ++a)
      if (std::find(axes.begin(), axes.end(), a) == axes.end())
        color = color * mesh->sizes[a] + mesh->coordinates[a];
    for (int32_t a : axes)
      key = key * mesh->sizes[a] + mesh->coordinates[a];
    std::unique_ptr<Group> group;
    if (loom_status_t s = backend.split(static_cast<int>(color),
                                        static_cast<int>(key), group))
      return s;
    mesh->groups[axes] = std::move(group);
  }
  *out_mesh = mesh.release();
  return nullptr;
}

extern "C" void loom_mesh_destroy(loom_mesh_t mesh) { delete mesh; }

extern "C" loom_status_t loom_mesh_on_device(loom_mesh_t mesh,
                                             loom_mesh_t *out_mesh) {
  if (!mesh || !out_mesh)
    return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT,
                            "loom_mesh_on_device: NULL argument");
  if (!mesh->runtime->options.device)
    return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT,
                            "loom_mesh_on_device: the runtime was created "
                            "without a device (loom_runtime_options_t.device)");
  auto view = std::make_unique<loom_mesh_s>();
  view->runtime = mesh->runtime;
  view->sizes = mesh->sizes;
  view->names = mesh->names;
  view->coordinates = mesh->coordinates;
  view->parent = mesh->parent ? mesh->parent : mesh;
  view->device = true;
  *out_mesh = view.release();
  return nullptr;
}

extern "C" int32_t loom_mesh_is_on_device(loom_mesh_t mesh) {
  return mesh && mesh->device ? 1 : 0;
}

extern "C" int32_t loom_mesh_num_axes(loom_mesh_t mesh) {
  return static_cast<int32_t>(mesh->sizes.size());
}

extern "C" int64_t loom_mesh_axis_size(loom_mesh_t mesh, int32_t axis) {
  return axis >= 0 && axis < loom_mesh_num_axes(mesh) ? mesh->sizes[axis] : 0;
}

extern "C" const char *loom_mesh_axis_name(loom_mesh_t mesh, int32_t axis) {
  return axis >= 0 && axis < loom_mesh_num_axes(mesh)
             ? mesh->names[axis].c_str()
             : "";
}

extern "C" int64_t loom_mesh_coordinate(loom_mesh_t mesh, int32_t axis) {
  return axis >= 0 && axis < loom_mesh_num_axes(mesh)
             ? mesh->coordinates[axis]
             : -1;
}

extern "C" int32_t loom_mesh_rank_at(loom_mesh_t mesh,
                                     const int64_t *coordinates) {
  int64_t rank = 0;
  for (int32_t a = 0; a < loom_mesh_num_axes(mesh); ++a) {
    if (coordinates[a] < 0 || coordinates[a] >= mesh->sizes[a])
      return -1;
    rank = rank * mesh->sizes[a] + coordinates[a];
  }
  return static_cast<int32_t>(rank);
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

namespace {
/// Validates the common arguments and finds the group.
loom_status_t prepare(loom_mesh_t mesh, const char *op, const int32_t *axes,
                      int32_t num_axes, loom_dtype_t dtype, int64_t count,
                      Group *&group, CallInfo &info, const char *detail = "") {
  if (!mesh)
    return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT, "%s: no mesh", op);
  if (loom_dtype_size(dtype) == 0)
    return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT,
                            "%s: unknown element type %d", op,
                            static_cast<int>(dtype));
  if (count < 0)
    return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT,
                            "%s: negative count %lld", op,
                            static_cast<long long>(count));
  std::vector<int32_t> list(axes, axes + num_axes);
  std::string names;
  for (int32_t a : list) {
    if (a < 0 || a >= loom_mesh_num_axes(mesh))
      return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT,
                              "%s: axis %d is not an axis of the mesh", op, a);
    names += (names.empty() ? "" : ", ") + mesh->names[a];
  }
  info.op = op;
  info.dtype = dtype;
  info.count = count;
  info.description = std::string(op) + detail + " of " +
                     std::to_string(count) + " x " + loom_dtype_name(dtype) +
                     " over [" + names + "]";
  if (list.empty()) {
    group = nullptr;
    return nullptr;
  }
  auto it = mesh->allGroups().find(list);
  if (it == mesh->allGroups().end())
    return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT,
                            "%s: axes [%s] repeat an axis", op, names.c_str());
  group = it->second.get();
  return nullptr;
}

size_t bytes(loom_dtype_t dtype, int64_t count) {
  return loom_dtype_size(dtype) * static_cast<size_t>(count);
}

} // namespace

namespace {
/// Copies between buffers of a mesh's memory: host, or the runtime's device.
loom_status_t copyLocal(loom_mesh_t mesh, const void *src, void *dst,
                        size_t n) {
  if (src == dst || !n)
    return nullptr;
  if (!mesh->device) {
    std::memmove(dst, src, n);
    return nullptr;
  }
  const loom_device_t *d = mesh->runtime->options.device;
  return d->copy(d->context, dst, src, n, LOOM_COPY_DEVICE_TO_DEVICE);
}

loom_status_t deviceCopy(loom_mesh_t mesh, void *dst, const void *src,
                         size_t n, loom_copy_kind_t kind) {
  if (!n)
    return nullptr;
  const loom_device_t *d = mesh->runtime->options.device;
  return d->copy(d->context, dst, src, n, kind);
}

} // namespace

/// A started collective (loom_*_start): its task on the lane, or none when
/// it ran inside the start; what the wait's trace event names.
struct loom_pending_s {
  loom_runtime_t runtime;
  std::shared_ptr<CommLane::Task> task;
  const char *op;
  uint64_t mask;
  int64_t bytes;
};

namespace {
/// How a collective's buffers are sized: `count` elements, times the
/// group's size where the flag says so.
struct Extent {
  bool sendTimesGroup = false, recvTimesGroup = false;
};

/// What every collective entry point does first: checks the arguments
/// (prepare); on a group of one device copies `send` to `recv`
/// (`localCount` elements) instead of calling the backend (NCCL on device
/// buffers is called even then: its copy is ordered on the stream); then
/// `run(backend, group, info, send, recv)` on the buffers the backend
/// takes: host buffers on host backends (device buffers staged through
/// them), device buffers on NCCL (host buffers go to its control backend).
template <typename Run>
loom_status_t collective(loom_mesh_t mesh, const char *op, const int32_t *axes,
                         int32_t num_axes, loom_dtype_t dtype, int64_t count,
                         const char *detail, int32_t extra, const void *send,
                         void *recv, int64_t localCount, Extent extent,
                         Run run, loom_pending_t *pending = nullptr) {
  Group *group;
  CallInfo info;
  if (pending)
    *pending = nullptr;
  if (loom_status_t s = prepare(mesh, op, axes, num_axes, dtype, count, group,
                                info, detail))
    return s;
  info.extra = extra;
  loom_runtime_s &rt = *mesh->runtime;
  uint64_t mask = 0;
  for (int32_t i = 0; i < num_axes; ++i)
    mask |= uint64_t(1) << axes[i];
  if (pending) {
    *pending = new (std::nothrow) loom_pending_s{&rt, nullptr, op, mask,
                                                 int64_t(bytes(dtype, count))};
    if (!*pending)
      return loom_status_make(LOOM_STATUS_INTERNAL, "out of memory");
  }
  Backend *backend = rt.backend.get();
  bool nativeDevice = mesh->device && backend->deviceMemory();
  if (!group || (group->size == 1 && !nativeDevice))
    return copyLocal(mesh, send, recv, bytes(dtype, localCount));
  if (!mesh->device && backend->deviceMemory()) {
    group = &backend->controlGroup(*group);
    backend = &backend->control();
  }
  // By value: a started collective runs after this returns.
  auto timed = [&rt, backend, group, info, run, op, mask,
                size = int64_t(bytes(dtype, count))](const void *s, void *r) {
    if (!rt.tracing)
      return run(*backend, *group, info, s, r);
    double start = rt.nowUs();
    loom_status_t status = run(*backend, *group, info, s, r);
    rt.record({op, mask, size, start, rt.nowUs() - start,
               CommLane::onLane() ? 1 : 0});
    return status;
  };
  if (pending && rt.lane && !mesh->device) {
    (*pending)->task =
        rt.lane->post([timed, send, recv] { return timed(send, recv); });
    return nullptr;
  }
  rt.drain();
  if (!mesh->device || nativeDevice)
    return timed(send, recv);
  // Device buffers on a host backend: through host memory.
  size_t sendBytes = bytes(dtype, extent.sendTimesGroup ? count * group->size
                                                        : count);
  size_t recvBytes = bytes(dtype, extent.recvTimesGroup ? count * group->size
                                                        : count);
  bool inPlace = send == recv;
  std::vector<char> hostSend(inPlace ? 0 : sendBytes),
      hostRecv(std::max(recvBytes, inPlace ? sendBytes : 0));
  char *hs = inPlace ? hostRecv.data() : hostSend.data();
  if (loom_status_t s =
          deviceCopy(mesh, hs, send, sendBytes, LOOM_COPY_DEVICE_TO_HOST))
    return s;
  if (loom_status_t s = timed(hs, hostRecv.data()))
    return s;
  return deviceCopy(mesh, recv, hostRecv.data(), recvBytes,
                    LOOM_COPY_HOST_TO_DEVICE);
}

std::string reductionDetail(loom_reduction_t reduction) {
  return std::string(" (") + loom_reduction_name(reduction) + ")";
}
} // namespace

namespace {
/// The three collectives that may be started: blocking when `pending` is
/// null, else started (the handle in *pending).
loom_status_t allReduce(loom_mesh_t mesh, const int32_t *axes,
                        int32_t num_axes, loom_dtype_t dtype,
                        loom_reduction_t reduction, const void *send,
                        void *recv, int64_t count, loom_pending_t *pending) {
  return collective(mesh, "all_reduce", axes, num_axes, dtype, count,
                    reductionDetail(reduction).c_str(), reduction, send, recv,
                    count, Extent{},
                    [=](Backend &b, Group &g, const CallInfo &info,
                        const void *s, void *r) {
                      return b.allReduce(g, info, reduction, s, r);
                    },
                    pending);
}

loom_status_t allGather(loom_mesh_t mesh, const int32_t *axes,
                        int32_t num_axes, loom_dtype_t dtype,
                        const void *send, void *recv, int64_t send_count,
                        loom_pending_t *pending) {
  return collective(mesh, "all_gather", axes, num_axes, dtype, send_count, "",
                    0, send, recv, send_count, Extent{false, true},
                    [=](Backend &b, Group &g, const CallInfo &info,
                        const void *s,
                        void *r) { return b.allGather(g, info, s, r); },
                    pending);
}

loom_status_t reduceScatter(loom_mesh_t mesh, const int32_t *axes,
                            int32_t num_axes, loom_dtype_t dtype,
                            loom_reduction_t reduction, const void *send,
                            void *recv, int64_t recv_count,
                            loom_pending_t *pending) {
  return collective(mesh, "reduce_scatter", axes, num_axes, dtype, recv_count,
                    reductionDetail(reduction).c_str(), reduction, send, recv,
                    recv_count, Extent{true, false},
                    [=](Backend &b, Group &g, const CallInfo &info,
                        const void *s, void *r) {
                      return b.reduceScatter(g, info, reduction, s, r);
                    },
                    pending);
}

loom_status_t noHandle(const char *op) {
  return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT, "%s_start: no handle",
                          op);
}
} // namespace

extern "C" loom_status_t loom_all_reduce(loom_mesh_t mesh, const int32_t *axes,
                                         int32_t num_axes, loom_dtype_t dtype,
                                         loom_reduction_t reduction,
                                         const void *send, void *recv,
                                         int64_t count) {
  return allReduce(mesh, axes, num_axes, dtype, reduction, send, recv, count,
                   nullptr);
}

extern "C" loom_status_t loom_all_gather(loom_mesh_t mesh, const int32_t *axes,
                                         int32_t num_axes, loom_dtype_t dtype,
                                         const void *send, void *recv,
                                         int64_t send_count) {
  return allGather(mesh, axes, num_axes, dtype, send, recv, send_count,
                   nullptr);
}

extern "C" loom_status_t
loom_reduce_scatter(loom_mesh_t mesh, const int32_t *axes, int32_t num_axes,
                    loom_dtype_t dtype, loom_reduction_t reduction,
                    const void *send, void *recv, int64_t recv_count) {
  return reduceScatter(mesh, axes, num_axes, dtype, reduction, send, recv,
                       recv_count, nullptr);
}

extern "C" loom_status_t loom_all_to_all(loom_mesh_t mesh, const int32_t *axes,
                                         int32_t num_axes, loom_dtype_t dtype,
                                         const void *send, void *recv,
                                         int64_t count_per_rank) {
  return collective(mesh, "all_to_all", axes, num_axes, dtype, count_per_rank,
                    "", 0, send, recv, count_per_rank, Extent{true, true},
                    [=](Backend &b, Group &g, const CallInfo &info, const void *s,
                        void *r) { return b.allToAll(g, info, s, r); });
}

extern "C" loom_status_t
loom_all_reduce_start(loom_mesh_t mesh, const int32_t *axes, int32_t num_axes,
                      loom_dtype_t dtype, loom_reduction_t reduction,
                      const void *send, void *recv, int64_t count,
                      loom_pending_t *out) {
  return out ? allReduce(mesh, axes, num_axes, dtype, reduction, send, recv,
                         count, out)
             : noHandle("all_reduce");
}

extern "C" loom_status_t
loom_all_gather_start(loom_mesh_t mesh, const int32_t *axes, int32_t num_axes,
                      loom_dtype_t dtype, const void *send, void *recv,
                      int64_t send_count, loom_pending_t *out) {
  return out ? allGather(mesh, axes, num_axes, dtype, send, recv, send_count,
                         out)
             : noHandle("all_gather");
}

extern "C" loom_status_t loom_reduce_scatter_start(
    loom_mesh_t mesh, const int32_t *axes, int32_t num_axes,
    loom_dtype_t dtype, loom_reduction_t reduction, const void *send,
    void *recv, int64_t recv_count, loom_pending_t *out) {
  return out ? reduceScatter(mesh, axes, num_axes, dtype, reduction, send,
                             recv, recv_count, out)
             : noHandle("reduce_scatter");
}

extern "C" loom_status_t loom_collective_wait(loom_pending_t pending) {
  if (!pending)
    return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT,
                            "loom_collective_wait: no handle");
  std::unique_ptr<loom_pending_s> owned(pending);
  if (!owned->task)
    return nullptr;
  loom_runtime_s &rt = *owned->runtime;
  double start = rt.tracing ? rt.nowUs() : 0;
  loom_status_t s = rt.lane->wait(*owned->task);
  if (rt.tracing)
    rt.record({"collective_wait", owned->mask, owned->bytes, start,
               rt.nowUs() - start, 0});
  return s;
}

extern "C" loom_status_t loom_send_recv(loom_mesh_t mesh, loom_dtype_t dtype,
                                        int32_t to, const void *send,
                                        int32_t from, void *recv,
                                        int64_t count) {
  Group *group;
  CallInfo info;
  if (loom_status_t s =
          prepare(mesh, "send_recv", nullptr, 0, dtype, count, group, info))
    return s;
  int size = mesh->runtime->backend->size();
  if (to >= size || from >= size || to < -1 || from < -1)
    return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT,
                            "send_recv: peer %d or %d is not a rank of %d", to,
                            from, size);
  info.description = "send_recv of " + std::to_string(count) + " x " +
                     loom_dtype_name(dtype) + " (to rank " +
                     std::to_string(to) + ", from rank " +
                     std::to_string(from) + ")";
  Backend &backend = *mesh->runtime->backend;
  mesh->runtime->drain();
  if (!mesh->device && backend.deviceMemory())
    return backend.control().sendRecv(info, to, send, from, recv);
  if (!mesh->device || backend.deviceMemory())
    return backend.sendRecv(info, to, send, from, recv);
  size_t n = bytes(dtype, count);
  std::vector<char> hostSend(to >= 0 ? n : 0), hostRecv(from >= 0 ? n : 0);
  if (to >= 0)
    if (loom_status_t s = deviceCopy(mesh, hostSend.data(), send, n,
                                     LOOM_COPY_DEVICE_TO_HOST))
      return s;
  if (loom_status_t s = backend.sendRecv(info, to, hostSend.data(), from,
                                         hostRecv.data()))
    return s;
  return from >= 0 ? deviceCopy(mesh, recv, hostRecv.data(), n,
                                LOOM_COPY_HOST_TO_DEVICE)
                   : nullptr;
}

/// A posted transfer; a receive into device memory staged through a host
/// buffer is copied to the device when it completes.
struct loom_request_s {
  std::unique_ptr<Request> request;
  loom_runtime_t runtime;
  Backend *backend = nullptr;
  loom_mesh_t mesh = nullptr;
  std::vector<char> staging;
  void *deviceRecv = nullptr;
};

extern "C" int32_t loom_max_tag(void) { return (1 << 14) - 1; }

namespace {
loom_status_t preparePeer(loom_mesh_t mesh, const char *op, loom_dtype_t dtype,
                          int32_t peer, int64_t count, int32_t tag,
                          const char *what, loom_request_t *out,
                          CallInfo &info) {
  Group *group;
  if (!out)
    return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT, "%s: no request",
                            op);
  *out = nullptr;
  if (loom_status_t s = prepare(mesh, op, nullptr, 0, dtype, count, group, info))
    return s;
  int size = mesh->runtime->backend->size();
  if (peer < 0 || peer >= size)
    return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT,
                            "%s: peer %d is not a rank of %d", op, peer, size);
  if (tag < 0 || tag >= loom_max_tag())
    return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT,
                            "%s: tag %d is not in [0, %d)", op, tag,
                            loom_max_tag());
  info.description = std::string(op) + " of " + (what ? what : "a buffer") +
                     " (" + std::to_string(count) + " x " +
                     loom_dtype_name(dtype) + ", " +
                     (std::string(op) == "isend" ? "to" : "from") +
                     " rank " + std::to_string(peer) + ")";
  info.extra = peer;
  return nullptr;
}
} // namespace

namespace {
/// Validates a point-to-point call and posts it with `post(info, request)`.
template <typename Post>
loom_status_t postPeer(loom_mesh_t mesh, const char *op, loom_dtype_t dtype,
                       int32_t peer, int64_t count, int32_t tag,
                       const char *what, loom_request_t *out, Post post) {
  CallInfo info;
  if (loom_status_t s =
          preparePeer(mesh, op, dtype, peer, count, tag, what, out, info))
    return s;
  mesh->runtime->drain();
  auto r = std::make_unique<loom_request_s>();
  r->runtime = mesh->runtime;
  r->mesh = mesh;
  Backend &backend = *mesh->runtime->backend;
  r->backend = !mesh->device && backend.deviceMemory() ? &backend.control()
                                                       : &backend;
  if (loom_status_t s = post(info, *r))
    return s;
  *out = r.release();
  return nullptr;
}

/// Whether a point-to-point buffer goes through host memory (device
/// buffers on a host backend).
bool staged(loom_mesh_t mesh) {
  return mesh->device && !mesh->runtime->backend->deviceMemory();
}
} // namespace

extern "C" loom_status_t loom_isend(loom_mesh_t mesh, loom_dtype_t dtype,
                                    int32_t to, const void *send,
                                    int64_t count, int32_t tag,
                                    const char *what, loom_request_t *out) {
  return postPeer(mesh, "isend", dtype, to, count, tag, what, out,
                  [&](const CallInfo &info, loom_request_s &r) {
                    const void *buffer = send;
                    if (staged(mesh)) {
                      // The device buffer's bytes now: the caller may reuse
                      // it once this returns only on a device stream.
                      r.staging.resize(bytes(dtype, count));
                      if (loom_status_t s = deviceCopy(
                              mesh, r.staging.data(), send, r.staging.size(),
                              LOOM_COPY_DEVICE_TO_HOST))
                        return s;
                      buffer = r.staging.data();
                    }
                    return r.backend->isend(info, to, buffer, tag, r.request);
                  });
}

extern "C" loom_status_t loom_irecv(loom_mesh_t mesh, loom_dtype_t dtype,
                                    int32_t from, void *recv, int64_t count,
                                    int32_t tag, const char *what,
                                    loom_request_t *out) {
  return postPeer(mesh, "irecv", dtype, from, count, tag, what, out,
                  [&](const CallInfo &info, loom_request_s &r) {
                    void *buffer = recv;
                    if (staged(mesh)) {
                      r.staging.resize(bytes(dtype, count));
                      r.deviceRecv = recv;
                      buffer = r.staging.data();
                    }
                    return r.backend->irecv(info, from, buffer, tag,
                                            r.request);
                  });
}

extern "C" loom_status_t loom_request_wait(loom_request_t request) {
  if (!request)
    return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT,
                            "loom_request_wait: no request");
  std::unique_ptr<loom_request_s> owned(request);
  owned->runtime->drain();
  if (loom_status_t s = owned->backend->wait(*owned->request))
    return s;
  if (!owned->deviceRecv)
    return nullptr;
  return deviceCopy(owned->mesh, owned->deviceRecv, owned->staging.data(),
                    owned->staging.size(), LOOM_COPY_HOST_TO_DEVICE);
}

extern "C" void loom_runtime_trace_start(loom_runtime_t runtime) {
  std::lock_guard<std::mutex> lock(runtime->eventsMutex);
  runtime->events.clear();
  runtime->traceStart = std::chrono::steady_clock::now();
  runtime->tracing = true;
}

extern "C" void loom_runtime_trace_stop(loom_runtime_t runtime) {
  runtime->tracing = false;
}

extern "C" double loom_runtime_trace_now_us(loom_runtime_t runtime) {
  return runtime->nowUs();
}

extern "C" int64_t loom_runtime_trace_count(loom_runtime_t runtime) {
  std::lock_guard<std::mutex> lock(runtime->eventsMutex);
  return static_cast<int64_t>(runtime->events.size());
}

extern "C" int32_t loom_runtime_trace_event(loom_runtime_t runtime,
                                            int64_t index,
                                            loom_trace_event_t *out_event) {
  std::lock_guard<std::mutex> lock(runtime->eventsMutex);
  if (index < 0 || index >= static_cast<int64_t>(runtime->events.size()) ||
      !out_event)
    return -1;
  *out_event = runtime->events[index];
  return 0;
}

extern "C" loom_status_t loom_barrier(loom_mesh_t mesh, const int32_t *axes,
                                      int32_t num_axes) {
  Group *group;
  CallInfo info;
  if (loom_status_t s = prepare(mesh, "barrier", axes, num_axes,
                                LOOM_DTYPE_U8, 0, group, info))
    return s;
  if (!group || group->size == 1)
    return nullptr;
  // A barrier is control traffic: on the host backend.
  mesh->runtime->drain();
  Backend &backend = mesh->runtime->backend->control();
  return backend.barrier(mesh->runtime->backend->controlGroup(*group), info);
}

extern "C" loom_status_t loom_fill_zero(loom_mesh_t mesh, void *buffer,
                                        size_t n) {
  if (!mesh)
    return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT,
                            "loom_fill_zero: no mesh");
  if (!n)
    return nullptr;
  if (!mesh->device) {
    std::memset(buffer, 0, n);
    return nullptr;
  }
  const loom_device_t *d = mesh->runtime->options.device;
  return d->zero(d->context, buffer, n);
}

void loom::rt::signatureOf(const CallInfo &info, int code, int64_t out[8]) {
  int64_t sig[4] = {code, info.dtype, info.count, info.extra};
  for (int i = 0; i < 4; ++i) {
    out[i] = sig[i];
    out[4 + i] = -sig[i];
  }
}

loom_status_t loom::rt::signatureMismatch(const CallInfo &info, int code,
                                          const int64_t reduced[8], int rank,
                                          int size) {
  int64_t sig[8];
  signatureOf(info, code, sig);
  static const char *fields[] = {"operation", "element type", "count",
                                 "reduction/peer"};
  for (int i = 0; i < 4; ++i)
    if (reduced[i] != sig[i] || -reduced[4 + i] != sig[i])
      return loom_status_make(
          LOOM_STATUS_INVALID_ARGUMENT,
          "rank %d of %d: %s: the ranks disagree on the %s (from %lld to "
          "%lld across ranks; this rank: %lld)",
          rank, size, info.description.c_str(), fields[i],
          static_cast<long long>(-reduced[4 + i]),
          static_cast<long long>(reduced[i]), static_cast<long long>(sig[i]));
  return nullptr;
}

#ifndef LOOM_HAVE_GLOO
loom_status_t loom::rt::makeGlooBackend(const loom_runtime_options_t &,
                                        std::unique_ptr<Backend> &) {
  return loom_status_make(
      LOOM_STATUS_UNAVAILABLE,
      "these ranks were started without an MPI launcher (torchrun-style "
      "RANK/WORLD_SIZE or plain srun), which needs the gloo backend, and "
      "this runtime was built without Gloo (install libgloo-dev and "
      "rebuild), or launch with mpirun -np N / srun --mpi=pmix");
}
#endif
