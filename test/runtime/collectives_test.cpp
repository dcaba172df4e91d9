//===- collectives_test.cpp - The runtime's collectives under mpirun ------===//
//
//   mpirun -np N loom-collectives-test MODE
//
// MODE `check`: every collective on every element type and several meshes
// (N, 1 x N, and 2 x N/2 with each ordered subset of axes), compared
// bit-exactly with the result computed locally (inputs are small integers,
// exactly representable in every type, so sums are exact too). Prints
// "rank R: K checks passed" and exits 0, or names the first difference.
// MODE `mismatch`: ranks call all_reduce with different counts; every rank
// must get INVALID_ARGUMENT naming the count. MODE `stall`: the last rank
// sleeps instead of joining an all_reduce; the others must fail within the
// deadline, naming it.
//
// A second argument picks the backend: `mpi` (default); `gloo` (ranks
// started torchrun-style: RANK, WORLD_SIZE, MASTER_ADDR/PORT); `staged-mpi`
// and `staged-gloo`: buffers in a device's memory (a stand-in device whose
// memory is host memory apart from the runtime's: every byte goes through
// its copy callback), staged through the host backend as GPU programs on
// one GPU do; `nccl`: buffers in GPU memory on the NCCL backend (Loom's
// CUDA library opens the GPU). `nccl` skips, saying why, only where there
// is no GPU or fewer GPUs than ranks (NCCL refuses two ranks on one GPU).
//
//===----------------------------------------------------------------------===//

#include "loom/device.h"
#include "loom/runtime.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace {

int gRank = 0;
int gChecks = 0;
/// Where the collectives' buffers live: host memory, or a device (the
/// stand-in or a GPU) reached through gDevice.
loom::program::Device *gDevice = nullptr;
/// Bytes the stand-in device copied (the runtime staged through it).
size_t gStagedBytes = 0;

[[noreturn]] void fail(const std::string &what) {
  std::printf("rank %d: FAIL: %s\n", gRank, what.c_str());
  std::fflush(stdout);
  std::exit(1);
}

void ok(loom_status_t s, const std::string &what) {
  if (s) {
    std::string m = loom_status_message(s);
    loom_status_free(s);
    fail(what + ": " + m);
  }
}

/// A device whose memory is this process's (malloc), reached only through
/// its callbacks: the runtime's staging of device buffers, checked without
/// a GPU.
class StandInDevice final : public loom::program::Device {
public:
  StandInDevice() {
    std::memset(&device, 0, sizeof(device));
    device.struct_size = sizeof(device);
    device.context = this;
    device.name = "stand-in device";
    device.copy = [](void *, void *dst, const void *src, size_t n,
                     loom_copy_kind_t) -> loom_status_t {
      std::memcpy(dst, src, n);
      gStagedBytes += n;
      return nullptr;
    };
    device.zero = [](void *, void *dst, size_t n) -> loom_status_t {
      std::memset(dst, 0, n);
      return nullptr;
    };
    device.query = [](void *, int32_t *done) -> loom_status_t {
      *done = 1;
      return nullptr;
    };
  }
  std::string name() const override { return device.name; }
  bool isHost() const override { return false; }
  bool allocate(size_t bytes, void **out, std::string &) override {
    *out = std::malloc(bytes ? bytes : 1);
    return true;
  }
  void release(void *p) override { std::free(p); }
  bool upload(void *dst, const void *src, size_t n, std::string &) override {
    std::memcpy(dst, src, n);
    return true;
  }
  bool download(void *dst, const void *src, size_t n, std::string &) override {
    std::memcpy(dst, src, n);
    return true;
  }
  bool synchronize(std::string &) override { return true; }
  const loom_device_t *collectiveDevice() const override { return &device; }

private:
  loom_device_t device;
};

/// Runs `call(send, recv)` on `in` and `out` (the same buffer when
/// `inPlace`), in the device's memory when there is one.
template <typename F>
loom_status_t staged(const void *in, size_t inBytes, void *out, size_t outBytes,
                     bool inPlace, F call) {
  if (!gDevice)
    return call(inPlace ? out : in, out);
  void *dIn = nullptr, *dOut = nullptr;
  std::string error;
  auto check = [&](bool good) {
    if (!good)
      fail(gDevice->name() + ": " + error);
  };
  check(gDevice->allocate(outBytes, &dOut, error));
  if (inPlace) {
    check(gDevice->upload(dOut, out, outBytes, error));
  } else {
    check(gDevice->allocate(inBytes, &dIn, error));
    check(gDevice->upload(dIn, in, inBytes, error));
  }
  loom_status_t s = call(inPlace ? dOut : dIn, dOut);
  check(gDevice->download(out, dOut, outBytes, error));
  gDevice->release(dIn);
  gDevice->release(dOut);
  return s;
}

loom_status_t staged(const std::vector<char> &in, std::vector<char> &out,
                     bool inPlace,
                     const std::function<loom_status_t(const void *, void *)> &call) {
  return staged(in.data(), in.size(), out.data(), out.size(), inPlace, call);
}

//===----------------------------------------------------------------------===//
// Values in every element type
//===----------------------------------------------------------------------===//

uint16_t toBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return static_cast<uint16_t>(x >> 16); // exact for small integers
}

uint16_t toHalf(float f) {
  // Small integers only: |f| < 2048.
  if (f == 0)
    return std::signbit(f) ? 0x8000 : 0;
  uint16_t sign = f < 0 ? 0x8000 : 0;
  float a = std::fabs(f);
  int e = static_cast<int>(std::floor(std::log2(a)));
  uint16_t mant = static_cast<uint16_t>((a / std::ldexp(1.0f, e) - 1.0f) * 1024);
  return static_cast<uint16_t>(sign | ((e + 15) << 10) | mant);
}

/// Writes integer value v as element i of a buffer of `dtype`.
void put(loom_dtype_t dtype, std::vector<char> &buf, int64_t i, int64_t v) {
  char *p = buf.data() + i * loom_dtype_size(dtype);
  switch (dtype) {
  case LOOM_DTYPE_F32: {
    float f = static_cast<float>(v);
    std::memcpy(p, &f, 4);
    break;
  }
  case LOOM_DTYPE_F64: {
    double d = static_cast<double>(v);
    std::memcpy(p, &d, 8);
    break;
  }
  case LOOM_DTYPE_BF16: {
    uint16_t h = toBf16(static_cast<float>(v));
    std::memcpy(p, &h, 2);
    break;
  }
  case LOOM_DTYPE_F16: {
    uint16_t h = toHalf(static_cast<float>(v));
    std::memcpy(p, &h, 2);
    break;
  }
  case LOOM_DTYPE_I32: {
    int32_t x = static_cast<int32_t>(v);
    std::memcpy(p, &x, 4);
    break;
  }
  case LOOM_DTYPE_I64:
    std::memcpy(p, &v, 8);
    break;
  case LOOM_DTYPE_U8: {
    uint8_t x = static_cast<uint8_t>(v);
    std::memcpy(p, &x, 1);
    break;
  }
  default:
    fail("unexpected type");
  }
}

/// The input of `rank` at element i: small, signed where the type allows,
/// different across ranks, with ties for max/min.
int64_t input(loom_dtype_t dtype, int rank, int64_t i) {
  int64_t v = (rank * 7 + i * 3) % 11;
  if (dtype != LOOM_DTYPE_U8)
    v -= 5;
  return v;
}

int64_t combine(loom_reduction_t r, int64_t a, int64_t b) {
  switch (r) {
  case LOOM_REDUCTION_SUM:
    return a + b;
  case LOOM_REDUCTION_MAX:
    return a > b ? a : b;
  case LOOM_REDUCTION_MIN:
    return a < b ? a : b;
  default:
    return a * b;
  }
}

std::vector<char> buffer(loom_dtype_t dtype, int64_t n) {
  return std::vector<char>(static_cast<size_t>(n) * loom_dtype_size(dtype));
}

void expectEqual(loom_dtype_t dtype, const std::vector<char> &got,
                 const std::vector<char> &want, const std::string &what) {
  ++gChecks;
  if (got.size() != want.size() || std::memcmp(got.data(), want.data(), got.size()))
    for (size_t i = 0; i < got.size(); ++i)
      if (got[i] != want[i])
        fail(what + ": " + loom_dtype_name(dtype) + " differs at byte " +
             std::to_string(i));
}

//===----------------------------------------------------------------------===//
// Checks on one mesh and one group
//===----------------------------------------------------------------------===//

struct GroupView {
  std::vector<int32_t> axes;
  std::vector<int> members; // mesh ranks in group order
  int index = 0;            // this rank's position
};

GroupView groupOf(loom_mesh_t mesh, std::vector<int32_t> axes) {
  GroupView g;
  g.axes = axes;
  int32_t n = loom_mesh_num_axes(mesh);
  std::vector<int64_t> coords(n), mine(n);
  for (int32_t a = 0; a < n; ++a)
    mine[a] = loom_mesh_coordinate(mesh, a);
  int64_t size = 1;
  for (int32_t a : axes)
    size *= loom_mesh_axis_size(mesh, a);
  for (int64_t k = 0; k < size; ++k) {
    coords = mine;
    int64_t rest = k;
    for (int i = static_cast<int>(axes.size()) - 1; i >= 0; --i) {
      int64_t s = loom_mesh_axis_size(mesh, axes[i]);
      coords[axes[i]] = rest % s;
      rest /= s;
    }
    int r = loom_mesh_rank_at(mesh, coords.data());
    if (r == gRank)
      g.index = static_cast<int>(k);
    g.members.push_back(r);
  }
  return g;
}

void checkGroup(loom_mesh_t mesh, const GroupView &g, const std::string &tag) {
  const loom_dtype_t types[] = {LOOM_DTYPE_F32, LOOM_DTYPE_F64, LOOM_DTYPE_BF16,
                                LOOM_DTYPE_F16, LOOM_DTYPE_I32, LOOM_DTYPE_I64,
                                LOOM_DTYPE_U8};
  const loom_reduction_t reductions[] = {LOOM_REDUCTION_SUM,
                                         LOOM_REDUCTION_MAX,
                                         LOOM_REDUCTION_MIN};
  const int64_t n = 37; // not a multiple of anything
  int size = static_cast<int>(g.members.size());
  const int32_t *axes = g.axes.data();
  int32_t na = static_cast<int32_t>(g.axes.size());
  for (loom_dtype_t t : types) {
    std::string what = tag + " " + loom_dtype_name(t);
    std::vector<char> send = buffer(t, n * size), recv = buffer(t, n * size);
    for (int64_t i = 0; i < n * size; ++i)
      put(t, send, i, input(t, gRank, i));
    for (loom_reduction_t r : reductions) {
      std::vector<char> want = buffer(t, n);
      for (int64_t i = 0; i < n; ++i) {
        int64_t v = input(t, g.members[0], i);
        for (int k = 1; k < size; ++k)
          v = combine(r, v, input(t, g.members[k], i));
        put(t, want, i, v);
      }
      std::vector<char> out = buffer(t, n);
      ok(staged(send, out, false,
                [&](const void *i, void *o) {
                  return loom_all_reduce(mesh, axes, na, t, r, i, o, n);
                }),
         what + " all_reduce");
      expectEqual(t, out, want, what + " all_reduce");
      // In place.
      std::vector<char> inplace(send.begin(), send.begin() + out.size());
      ok(staged(inplace, inplace, true,
                [&](const void *i, void *o) {
                  return loom_all_reduce(mesh, axes, na, t, r, i, o, n);
                }),
         what + " all_reduce in place");
      expectEqual(t, inplace, want, what + " all_reduce in place");
      // Reduce-scatter: block `index` of the reduction of n * size elements.
      std::vector<char> rs = buffer(t, n), rsWant = buffer(t, n);
      for (int64_t i = 0; i < n; ++i) {
        int64_t e = g.index * n + i;
        int64_t v = input(t, g.members[0], e);
        for (int k = 1; k < size; ++k)
          v = combine(r, v, input(t, g.members[k], e));
        put(t, rsWant, i, v);
      }
      ok(staged(send, rs, false,
                [&](const void *i, void *o) {
                  return loom_reduce_scatter(mesh, axes, na, t, r, i, o, n);
                }),
         what + " reduce_scatter");
      expectEqual(t, rs, rsWant, what + " reduce_scatter");
    }
    // All-gather: the first n elements of every member, in group order.
    std::vector<char> ag = buffer(t, n * size), agWant = buffer(t, n * size);
    for (int k = 0; k < size; ++k)
      for (int64_t i = 0; i < n; ++i)
        put(t, agWant, k * n + i, input(t, g.members[k], i));
    ok(staged(send, ag, false,
              [&](const void *i, void *o) {
                return loom_all_gather(mesh, axes, na, t, i, o, n);
              }),
       what + " all_gather");
    expectEqual(t, ag, agWant, what + " all_gather");
    // All-to-all: block k of mine goes to k; block k of recv is member k's
    // block `index`.
    std::vector<char> aa = buffer(t, n * size), aaWant = buffer(t, n * size);
    for (int k = 0; k < size; ++k)
      for (int64_t i = 0; i < n; ++i)
        put(t, aaWant, k * n + i, input(t, g.members[k], g.index * n + i));
    ok(staged(send, aa, false,
              [&](const void *i, void *o) {
                return loom_all_to_all(mesh, axes, na, t, i, o, n);
              }),
       what + " all_to_all");
    expectEqual(t, aa, aaWant, what + " all_to_all");
  }
  ok(loom_barrier(mesh, axes, na), tag + " barrier");
}

void checkMesh(loom_runtime_t rt, std::vector<int64_t> sizes,
               std::vector<const char *> names) {
  loom_mesh_t hostMesh, mesh;
  ok(loom_mesh_create(rt, static_cast<int32_t>(sizes.size()), sizes.data(),
                      names.data(), &hostMesh),
     "mesh_create");
  mesh = hostMesh;
  if (gDevice)
    ok(loom_mesh_on_device(hostMesh, &mesh), "mesh_on_device");
  std::string shape;
  for (size_t i = 0; i < sizes.size(); ++i)
    shape += (i ? "x" : "") + std::to_string(sizes[i]);
  int32_t n = loom_mesh_num_axes(mesh);
  std::vector<std::vector<int32_t>> lists;
  for (int32_t a = 0; a < n; ++a)
    lists.push_back({a});
  if (n == 2) {
    lists.push_back({0, 1});
    lists.push_back({1, 0});
  }
  for (const auto &axes : lists) {
    std::string tag = "mesh " + shape + " axes [";
    for (size_t i = 0; i < axes.size(); ++i)
      tag += (i ? "," : "") + std::string(names[axes[i]]);
    checkGroup(mesh, groupOf(mesh, axes), tag + "]");
  }
  // A ring of send/recv over all ranks.
  int size = loom_runtime_size(rt);
  int32_t value = gRank * 10 + 1, got = -1;
  ok(staged(&value, sizeof(value), &got, sizeof(got), false,
            [&](const void *i, void *o) {
              return loom_send_recv(mesh, LOOM_DTYPE_I32, (gRank + 1) % size,
                                    i, (gRank + size - 1) % size, o, 1);
            }),
     "send_recv ring");
  ++gChecks;
  if (got != ((gRank + size - 1) % size) * 10 + 1)
    fail("send_recv ring received " + std::to_string(got));
  // The host mesh of a device runtime still takes host buffers (control
  // traffic: the start-up handshake, gathering results).
  int32_t all[8];
  for (int32_t a = 0; a < n; ++a)
    all[a] = a;
  std::vector<int64_t> mine(1, gRank + 1), every(size);
  ok(loom_all_gather(hostMesh, all, n, LOOM_DTYPE_I64, mine.data(),
                     every.data(), 1),
     "all_gather of host buffers");
  ++gChecks;
  for (int r = 0; r < size; ++r)
    if (every[r] != r + 1)
      fail("all_gather of host buffers received " + std::to_string(every[r]));
  if (mesh != hostMesh)
    loom_mesh_destroy(mesh);
  loom_mesh_destroy(hostMesh);
}

} // namespace

int main(int argc, char **argv) {
  std::string mode = argc > 1 ? argv[1] : "check";
  std::string backend = argc > 2 ? argv[2] : "mpi";
  loom_runtime_options_t options;
  loom_runtime_options_init(&options);
  options.backend = backend == "nccl"                                ? LOOM_BACKEND_NCCL
                    : backend == "gloo" || backend == "staged-gloo" ? LOOM_BACKEND_GLOO
                                                                    : LOOM_BACKEND_MPI;
  StandInDevice standIn;
  std::unique_ptr<loom::program::Device> gpu;
  if (backend.rfind("staged-", 0) == 0)
    gDevice = &standIn;
  if (backend == "nccl") {
    // One GPU per rank (NCCL refuses two ranks on one GPU): skip, saying
    // why, only where there are fewer.
    loom_launch_info_t info;
    ok(loom_launch_info_from_env(&info), "launcher");
    std::string error;
    gpu = loom_cuda_open_device(loom::program::DeviceOptions(), error);
    if (!gpu) {
      std::printf("rank %d: SKIP: no GPU: %s\n", info.rank, error.c_str());
      return 0;
    }
    int gpus = gpu->collectiveDevice()->device_count;
    if (info.local_size > gpus) {
      std::printf("rank %d: SKIP: %d ranks on this node but %d GPU(s); NCCL "
                  "needs one GPU per rank\n",
                  info.rank, info.local_size, gpus);
      return 0;
    }
    gDevice = gpu.get();
  }
  if (gDevice)
    options.device = gDevice->collectiveDevice();
  if (mode == "stall") {
    options.timeout_seconds = 2.0;
    options.diagnosis_seconds = 1.0;
  }
  loom_runtime_t rt;
  loom_status_t s = loom_runtime_create(&options, &rt);
  if (s) {
    std::printf("FAIL: runtime: %s\n", loom_status_message(s));
    return 1;
  }
  gRank = loom_runtime_rank(rt);
  int size = loom_runtime_size(rt);

  if (mode == "check") {
    checkMesh(rt, {size}, {"x"});
    checkMesh(rt, {1, size}, {"one", "x"});
    if (size % 2 == 0)
      checkMesh(rt, {2, size / 2}, {"dp", "tp"});
    // A mesh that does not match the number of ranks is an error.
    int64_t wrong = size + 1;
    const char *name = "x";
    loom_mesh_t mesh;
    loom_status_t bad = loom_mesh_create(rt, 1, &wrong, &name, &mesh);
    ++gChecks;
    if (!bad || loom_status_code(bad) != LOOM_STATUS_INVALID_ARGUMENT)
      fail("a mesh of the wrong size was accepted");
    std::string staging =
        gDevice == &standIn
            ? "; " + std::to_string(gStagedBytes) + " bytes staged"
            : "";
    if (gDevice == &standIn && !gStagedBytes)
      fail("the stand-in device's memory was never staged through");
    std::printf("rank %d: %d checks passed%s (%s)\n", gRank, gChecks,
                staging.c_str(), loom_status_message(bad));
    loom_status_free(bad);
  } else if (mode == "mismatch") {
    int64_t sizes[] = {size};
    const char *names[] = {"x"};
    loom_mesh_t mesh;
    ok(loom_mesh_create(rt, 1, sizes, names, &mesh), "mesh");
    int32_t axis = 0;
    std::vector<float> buf(16, 1.0f);
    // Rank r reduces 4 + r elements.
    loom_status_t e = loom_all_reduce(mesh, &axis, 1, LOOM_DTYPE_F32,
                                      LOOM_REDUCTION_SUM, buf.data(),
                                      buf.data(), 4 + gRank);
    if (!e || loom_status_code(e) != LOOM_STATUS_INVALID_ARGUMENT)
      fail("mismatched counts were not reported");
    std::printf("rank %d: error as expected: %s\n", gRank,
                loom_status_message(e));
    loom_status_free(e);
    loom_mesh_destroy(mesh);
  } else if (mode == "stall") {
    int64_t sizes[] = {size};
    const char *names[] = {"x"};
    loom_mesh_t mesh;
    ok(loom_mesh_create(rt, 1, sizes, names, &mesh), "mesh");
    int32_t axis = 0;
    std::vector<float> buf(16, 1.0f);
    if (gRank == size - 1) {
      // Stalled: neither joins nor answers pings for longer than the
      // deadline plus the diagnosis.
      std::this_thread::sleep_for(std::chrono::seconds(6));
      std::printf("rank %d: woke up\n", gRank);
      std::fflush(stdout);
      _Exit(3);
    }
    loom_status_t e =
        loom_all_reduce(mesh, &axis, 1, LOOM_DTYPE_F32, LOOM_REDUCTION_SUM,
                        buf.data(), buf.data(), 16);
    if (!e)
      fail("the stalled all_reduce completed");
    std::printf("rank %d: error as expected: %s: %s\n", gRank,
                loom_status_code_string(loom_status_code(e)),
                loom_status_message(e));
    std::fflush(stdout);
    loom_status_free(e);
    // As a program ends after an error: the runtime torn down (Gloo's
    // rank 0 keeps the store up until the others have diagnosed).
    loom_mesh_destroy(mesh);
    loom_runtime_destroy(rt);
    _Exit(2);
  } else {
    fail("unknown mode " + mode);
  }
  loom_runtime_destroy(rt);
  return 0;
}
