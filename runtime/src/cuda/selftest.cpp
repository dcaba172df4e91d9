//===- selftest.cpp - What Loom's CUDA library promises, checked on a GPU -===//
//
// gpu-selftest (run by scripts/gpu-check.sh --run on a machine with a GPU):
//
//   environment  the driver, the GPU, where cuBLAS and NCCL were found
//   gemm         cuBLAS through the entry points compiled code calls, in
//                every transpose, stride, offset and broadcast case and
//                f32/f64/f16/bf16, against an f64 reference on the host;
//                outputs poisoned (NaN) first unless accumulating
//   allocator    the pool: alignment, reuse after free (no growth)
//   lazy-module  a module registered by a constructor before main (as the
//                generated code's llvm.global_ctors do), loaded on first
//                use after the GPU was chosen, its kernel run and checked
//   launch-error a bad launch ends the process naming the kernel
//   graphs       a step (temporaries, a host constant, device copies,
//                kernels) replayed from CUDA graphs on two alternating
//                buffers, equal to running it directly; a step that waits
//                for the GPU is refused a graph and still runs right
//   nccl         single-rank NCCL through the runtime: every collective on
//                device buffers, communicator splits, three element types
//   staged       the same collectives through the host backend's staging
//
// One line per check (PASS/FAIL name: detail) and a summary; exit status 1
// when any check fails, 2 when there is no GPU (nothing run).
//
//===----------------------------------------------------------------------===//

#include "api.h"
#include "gpu.h"
#include "graph.h"

#include "loom/gemm.h"
#include "loom/runtime.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace loom::cuda;
using loom::gemm::Memref3;

extern "C" {
void *mgpuModuleLoad(void *data, size_t size);
void *mgpuModuleGetFunction(void *module, const char *name);
void mgpuLaunchKernel(void *function, intptr_t gx, intptr_t gy, intptr_t gz,
                      intptr_t bx, intptr_t by, intptr_t bz, int32_t smem,
                      void *stream, void **params, void **extra, size_t n);
void *mgpuStreamCreate();
void mgpuStreamSynchronize(void *stream);
void *mgpuMemAlloc(uint64_t size, void *stream, bool hostShared);
void mgpuMemFree(void *p, void *stream);
void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream);
void _mlir_ciface_loom_rt_cublas_batch_matmul_f32(Memref3 *, Memref3 *,
                                                  Memref3 *, int64_t, int64_t,
                                                  int64_t);
void _mlir_ciface_loom_rt_cublas_batch_matmul_f64(Memref3 *, Memref3 *,
                                                  Memref3 *, int64_t, int64_t,
                                                  int64_t);
void _mlir_ciface_loom_rt_cublas_batch_matmul_f16(Memref3 *, Memref3 *,
                                                  Memref3 *, int64_t, int64_t,
                                                  int64_t);
void _mlir_ciface_loom_rt_cublas_batch_matmul_bf16(Memref3 *, Memref3 *,
                                                   Memref3 *, int64_t, int64_t,
                                                   int64_t);
void _mlir_ciface_loom_rt_cublas_batch_matmul_f16_f32(Memref3 *, Memref3 *,
                                                      Memref3 *, int64_t,
                                                      int64_t, int64_t);
void _mlir_ciface_loom_rt_cublas_batch_matmul_bf16_f32(Memref3 *, Memref3 *,
                                                       Memref3 *, int64_t,
                                                       int64_t, int64_t);
}

namespace {

int passed = 0, failed = 0;

void report(bool ok, const std::string &name, const std::string &detail) {
  std::printf("%s %s: %s\n", ok ? "PASS" : "FAIL", name.c_str(),
              detail.c_str());
  std::fflush(stdout);
  (ok ? passed : failed)++;
}

// A kernel in PTX (the driver compiles it for the GPU at load): x[i] += 1.
const char kAddOnePtx[] = R"(
.version 7.8
.target sm_75
.address_size 64
.visible .entry loom_selftest_add_one(.param .u64 x, .param .u32 n) {
  .reg .pred %p;
  .reg .b32 %r<5>;
  .reg .f32 %f<3>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [x];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r2, %r2, %r3, %r4;
  setp.ge.u32 %p, %r2, %r1;
  @%p bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r2, 4;
  add.s64 %rd2, %rd2, %rd3;
  ld.global.f32 %f1, [%rd2];
  add.f32 %f2, %f1, 0f3F800000;
  st.global.f32 [%rd2], %f2;
DONE:
  ret;
}
)";

// Registered before main, as the generated code's constructors do: no GPU
// is chosen yet.
void *gModule = mgpuModuleLoad(const_cast<char *>(kAddOnePtx),
                               sizeof(kAddOnePtx));

//===----------------------------------------------------------------------===//
// GEMMs
//===----------------------------------------------------------------------===//

enum class Type { F32, F64, F16, BF16 };

int64_t widthOf(Type t) {
  return t == Type::F64 ? 8 : t == Type::F32 ? 4 : 2;
}
const char *nameOf(Type t) {
  return t == Type::F64 ? "f64" : t == Type::F32 ? "f32" : t == Type::F16 ? "f16" : "bf16";
}

uint16_t toBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return uint16_t((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}
float fromBf16(uint16_t h) {
  uint32_t x = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

void store(Type t, char *p, double v) {
  switch (t) {
  case Type::F32: {
    float f = float(v);
    std::memcpy(p, &f, 4);
    return;
  }
  case Type::F64:
    std::memcpy(p, &v, 8);
    return;
  case Type::F16: {
    _Float16 h = _Float16(v);
    std::memcpy(p, &h, 2);
    return;
  }
  case Type::BF16: {
    uint16_t h = toBf16(float(v));
    std::memcpy(p, &h, 2);
    return;
  }
  }
}

double load(Type t, const char *p) {
  switch (t) {
  case Type::F32: {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  case Type::F64: {
    double d;
    std::memcpy(&d, p, 8);
    return d;
  }
  case Type::F16: {
    _Float16 h;
    std::memcpy(&h, p, 2);
    return double(h);
  }
  case Type::BF16: {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return fromBf16(h);
  }
  }
  return 0;
}

/// A rank-3 row-major operand inside a larger buffer: `sizes` of a tensor
/// whose rows are `pad` elements longer and which starts `offset` elements
/// in.
struct Operand {
  int64_t sizes[3];
  int64_t pad = 0, offset = 0;
  int64_t strides[3];
  int64_t elements() const {
    return offset + sizes[0] * strides[0];
  }
  void layout() {
    strides[2] = 1;
    strides[1] = sizes[2] + pad;
    strides[0] = sizes[1] * strides[1];
  }
  int64_t at(int64_t b, int64_t r, int64_t c) const {
    return offset + b * strides[0] + r * strides[1] + c * strides[2];
  }
};

struct GemmCase {
  int64_t batch, m, n, k;
  bool transA, transB, accumulate;
  bool broadcastA = false, broadcastB = false;
  int64_t pad = 0, offset = 0;
};

std::string caseText(Type t, const GemmCase &c) {
  char s[200];
  std::snprintf(s, sizeof(s), "%s %lldx%lldx%lldx%lld %c%c%s%s%s%s", nameOf(t),
                (long long)c.batch, (long long)c.m, (long long)c.n,
                (long long)c.k, c.transA ? 'T' : 'N', c.transB ? 'T' : 'N',
                c.accumulate ? " acc" : "", c.broadcastA ? " bcastA" : "",
                c.broadcastB ? " bcastB" : "",
                c.pad || c.offset ? " padded" : "");
  return s;
}

/// Runs one case through the entry point; the largest error relative to
/// what the type's rounding allows (<= 1 passes).
bool runGemm(Gpu &gpu, Type type, Type outType, const GemmCase &c,
             std::mt19937_64 &gen, double &worst, std::string &error) {
  int64_t w = widthOf(type), wOut = widthOf(outType);
  Operand a, b, out;
  a.sizes[0] = c.broadcastA ? 1 : c.batch;
  a.sizes[1] = c.transA ? c.k : c.m;
  a.sizes[2] = c.transA ? c.m : c.k;
  b.sizes[0] = c.broadcastB ? 1 : c.batch;
  b.sizes[1] = c.transB ? c.n : c.k;
  b.sizes[2] = c.transB ? c.k : c.n;
  out.sizes[0] = c.batch;
  out.sizes[1] = c.m;
  out.sizes[2] = c.n;
  for (Operand *o : {&a, &b, &out}) {
    o->pad = c.pad;
    o->offset = c.offset;
    o->layout();
  }
  std::uniform_real_distribution<double> dist(-1, 1);
  auto fill = [&](const Operand &o, Type t, std::vector<char> &host) {
    int64_t width = widthOf(t);
    host.assign(size_t(o.elements() * width), 0);
    for (int64_t i = 0; i < o.elements(); ++i)
      store(t, host.data() + i * width, dist(gen));
  };
  std::vector<char> ha, hb, hc;
  fill(a, type, ha);
  fill(b, type, hb);
  fill(out, outType, hc);
  std::vector<char> poisoned = hc;
  if (!c.accumulate) // a GEMM with beta = 0 must not read C
    std::memset(poisoned.data(), 0xff, poisoned.size());
  void *da, *db, *dc;
  if (!gpu.allocate(ha.size(), &da, error) ||
      !gpu.allocate(hb.size(), &db, error) ||
      !gpu.allocate(hc.size(), &dc, error) ||
      !gpu.copy(da, ha.data(), ha.size(), LOOM_COPY_HOST_TO_DEVICE, error) ||
      !gpu.copy(db, hb.data(), hb.size(), LOOM_COPY_HOST_TO_DEVICE, error) ||
      !gpu.copy(dc, poisoned.data(), poisoned.size(), LOOM_COPY_HOST_TO_DEVICE,
                error))
    return false;
  auto desc = [](void *p, const Operand &o) {
    Memref3 d;
    d.allocated = d.aligned = p;
    d.offset = o.offset;
    for (int i = 0; i < 3; ++i) {
      d.sizes[i] = o.sizes[i];
      d.strides[i] = o.strides[i];
    }
    return d;
  };
  Memref3 ma = desc(da, a), mb = desc(db, b), mc = desc(dc, out);
  if (outType != type && type == Type::BF16)
    _mlir_ciface_loom_rt_cublas_batch_matmul_bf16_f32(&ma, &mb, &mc, c.transA,
                                                      c.transB, c.accumulate);
  else if (outType != type)
    _mlir_ciface_loom_rt_cublas_batch_matmul_f16_f32(&ma, &mb, &mc, c.transA,
                                                     c.transB, c.accumulate);
  else
  switch (type) {
  case Type::F32:
    _mlir_ciface_loom_rt_cublas_batch_matmul_f32(&ma, &mb, &mc, c.transA,
                                                 c.transB, c.accumulate);
    break;
  case Type::F64:
    _mlir_ciface_loom_rt_cublas_batch_matmul_f64(&ma, &mb, &mc, c.transA,
                                                 c.transB, c.accumulate);
    break;
  case Type::F16:
    _mlir_ciface_loom_rt_cublas_batch_matmul_f16(&ma, &mb, &mc, c.transA,
                                                 c.transB, c.accumulate);
    break;
  case Type::BF16:
    _mlir_ciface_loom_rt_cublas_batch_matmul_bf16(&ma, &mb, &mc, c.transA,
                                                  c.transB, c.accumulate);
    break;
  }
  std::vector<char> result(hc.size());
  bool ok = gpu.copy(result.data(), dc, result.size(),
                     LOOM_COPY_DEVICE_TO_HOST, error);
  gpu.release(da);
  gpu.release(db);
  gpu.release(dc);
  if (!ok)
    return false;
  // The rounding each type allows: its output's unit roundoff relative to
  // the value, plus the accumulation's (f32, or f64) times k relative to
  // the sum of the products' magnitudes.
  double uOut = outType == Type::F64   ? 0x1p-53
                : outType == Type::F32 ? 0x1p-24
                : outType == Type::F16 ? 0x1p-11
                                       : 0x1p-8;
  double uAcc = type == Type::F64 ? 0x1p-53 : 0x1p-24;
  worst = 0;
  for (int64_t bi = 0; bi < c.batch; ++bi)
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double ref = 0, mag = 0;
        int64_t ba = c.broadcastA ? 0 : bi, bb = c.broadcastB ? 0 : bi;
        for (int64_t x = 0; x < c.k; ++x) {
          double av = load(type, ha.data() + w * (c.transA ? a.at(ba, x, i)
                                                           : a.at(ba, i, x)));
          double bv = load(type, hb.data() + w * (c.transB ? b.at(bb, j, x)
                                                           : b.at(bb, x, j)));
          ref += av * bv;
          mag += std::fabs(av * bv);
        }
        double before = load(outType, hc.data() + wOut * out.at(bi, i, j));
        if (c.accumulate) {
          ref += before;
          mag += std::fabs(before);
        }
        double got = load(outType, result.data() + wOut * out.at(bi, i, j));
        double allowed = 2 * uOut * std::fabs(ref) +
                         4 * double(c.k + 1) * uAcc * mag + 1e-300;
        double e = std::isfinite(got) ? std::fabs(got - ref) / allowed
                                      : INFINITY;
        worst = std::max(worst, e);
      }
  // Padding between rows must be untouched.
  for (int64_t i = 0; i < out.elements(); ++i) {
    int64_t rel = i - out.offset;
    bool inside = rel >= 0 && rel % out.strides[1] < out.sizes[2];
    const std::vector<char> &expect = c.accumulate ? hc : poisoned;
    if (!inside &&
        std::memcmp(result.data() + i * wOut, expect.data() + i * wOut,
                    wOut) != 0) {
      error = "element " + std::to_string(i) + " outside the result was "
              "written";
      return false;
    }
  }
  return true;
}

void checkGemms(Gpu &gpu) {
  std::mt19937_64 gen(42);
  std::vector<GemmCase> cases;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      cases.push_back({3, 37, 19, 23, ta, tb, false});
      cases.push_back({3, 37, 19, 23, ta, tb, true});
      cases.push_back({4, 16, 24, 8, ta, tb, false, true, false});
      cases.push_back({4, 16, 24, 8, ta, tb, false, false, true});
      cases.push_back({2, 13, 11, 17, ta, tb, true, false, false, 5, 3});
      cases.push_back({1, 1, 33, 9, ta, tb, false});
      cases.push_back({1, 33, 1, 9, ta, tb, false});
      cases.push_back({2, 7, 5, 1, ta, tb, false});
      cases.push_back({2, 7, 5, 0, ta, tb, false});
      cases.push_back({2, 7, 5, 0, ta, tb, true});
      cases.push_back({1, 256, 192, 320, ta, tb, false});
    }
  // Each operand type with its own result type, then 16-bit operands
  // into f32 (what 16-bit dot_generals lower to).
  std::pair<Type, Type> kinds[] = {
      {Type::F32, Type::F32},  {Type::F64, Type::F64},
      {Type::F16, Type::F16},  {Type::BF16, Type::BF16},
      {Type::F16, Type::F32},  {Type::BF16, Type::F32}};
  for (auto [t, outType] : kinds) {
    int ok = 0;
    double worst = 0;
    std::string firstFailure;
    for (const GemmCase &c : cases) {
      double w = 0;
      std::string error;
      bool run = runGemm(gpu, t, outType, c, gen, w, error);
      worst = std::max(worst, run ? w : INFINITY);
      if (run && w <= 1)
        ++ok;
      else if (firstFailure.empty())
        firstFailure = caseText(t, c) + (outType != t ? " into f32" : "") +
                       ": " +
                       (run ? "error " + std::to_string(w) + "x the bound"
                            : error);
    }
    char detail[300];
    std::snprintf(detail, sizeof(detail),
                  "%d/%zu cases, worst error %.3g of the rounding bound%s%s",
                  ok, cases.size(), worst, firstFailure.empty() ? "" : "; ",
                  firstFailure.c_str());
    std::string kind = nameOf(t);
    if (outType != t)
      kind += std::string("->") + nameOf(outType);
    report(ok == int(cases.size()), "gemm " + kind, detail);
  }
}

/// Throughput of one large GEMM (informational; in the table's detail).
void timeGemms(Gpu &gpu) {
  const int64_t n = 4096;
  for (Type t : {Type::F32, Type::BF16}) {
    std::string error;
    int64_t w = widthOf(t);
    void *a, *b, *c;
    if (!gpu.allocate(n * n * w, &a, error) ||
        !gpu.allocate(n * n * w, &b, error) ||
        !gpu.allocate(n * n * w, &c, error)) {
      report(false, std::string("gemm-speed ") + nameOf(t), error);
      return;
    }
    std::vector<char> zeros(size_t(n * n * w), 0);
    gpu.copy(a, zeros.data(), zeros.size(), LOOM_COPY_HOST_TO_DEVICE, error);
    gpu.copy(b, zeros.data(), zeros.size(), LOOM_COPY_HOST_TO_DEVICE, error);
    Memref3 ma{a, a, 0, {1, n, n}, {n * n, n, 1}};
    Memref3 mb{b, b, 0, {1, n, n}, {n * n, n, 1}};
    Memref3 mc{c, c, 0, {1, n, n}, {n * n, n, 1}};
    auto run = [&] {
      if (t == Type::F32)
        _mlir_ciface_loom_rt_cublas_batch_matmul_f32(&ma, &mb, &mc, 0, 0, 0);
      else
        _mlir_ciface_loom_rt_cublas_batch_matmul_bf16(&ma, &mb, &mc, 0, 0, 0);
    };
    run();
    gpu.synchronize(error);
    CUevent start, stop;
    const Driver &d = gpu.driver();
    d.cuEventCreate(&start, CU_EVENT_DEFAULT);
    d.cuEventCreate(&stop, CU_EVENT_DEFAULT);
    const int reps = 10;
    d.cuEventRecord(start, gpu.stream());
    for (int i = 0; i < reps; ++i)
      run();
    d.cuEventRecord(stop, gpu.stream());
    bool ok = gpu.synchronize(error);
    float ms = 0;
    d.cuEventElapsedTime(&ms, start, stop);
    double tflops = 2.0 * n * n * n * reps / (ms * 1e-3) / 1e12;
    char detail[160];
    std::snprintf(detail, sizeof(detail), "%lldx%lldx%lld: %.1f TFLOP/s",
                  (long long)n, (long long)n, (long long)n, tflops);
    report(ok, std::string("gemm-speed ") + nameOf(t), ok ? detail : error);
    gpu.release(a);
    gpu.release(b);
    gpu.release(c);
    d.cuEventDestroy(start);
    d.cuEventDestroy(stop);
  }
}

//===----------------------------------------------------------------------===//
// Allocator, modules
//===----------------------------------------------------------------------===//

void checkAllocator(Gpu &gpu) {
  const Driver &d = gpu.driver();
  CUmemoryPool pool;
  CUdevice dev;
  d.cuDeviceGet(&dev, gpu.ordinal());
  d.cuDeviceGetDefaultMemPool(&pool, dev);
  auto reserved = [&] {
    cuuint64_t v = 0;
    d.cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v);
    return uint64_t(v);
  };
  void *stream = mgpuStreamCreate();
  bool ok = mgpuMemAlloc(0, stream, false) == nullptr;
  std::string why = ok ? "" : "a 0-byte allocation is not null; ";
  std::vector<uint64_t> sizes = {1, 255, 4096, 1 << 20, 3 << 20, 64 << 20};
  uint64_t after = 0;
  for (int round = 0; round < 3; ++round) {
    std::vector<void *> ps;
    for (uint64_t s : sizes) {
      void *p = mgpuMemAlloc(s, stream, false);
      if (reinterpret_cast<uintptr_t>(p) % 256) {
        ok = false;
        why += "misaligned allocation; ";
      }
      ps.push_back(p);
    }
    for (void *p : ps)
      mgpuMemFree(p, stream);
    mgpuStreamSynchronize(stream);
    if (round == 0)
      after = reserved();
    else if (reserved() > after) {
      ok = false;
      why += "the pool grew from " + std::to_string(after) + " to " +
             std::to_string(reserved()) + " bytes on reuse; ";
    }
  }
  report(ok, "allocator",
         ok ? "aligned, 0 bytes is null, the pool keeps " +
                  std::to_string(after >> 20) +
                  " MiB and reuses it (no growth over 3 rounds)"
            : why);
}

void checkLazyModule(Gpu &gpu) {
  const int n = 1000;
  std::vector<float> host(n);
  for (int i = 0; i < n; ++i)
    host[i] = float(i);
  void *stream = mgpuStreamCreate();
  void *x = mgpuMemAlloc(n * 4, stream, false);
  std::string error;
  bool ok = gpu.copy(x, host.data(), n * 4, LOOM_COPY_HOST_TO_DEVICE, error);
  void *fn = mgpuModuleGetFunction(gModule, "loom_selftest_add_one");
  uint32_t count = n;
  void *params[] = {&x, &count};
  mgpuLaunchKernel(fn, (n + 255) / 256, 1, 1, 256, 1, 1, 0, stream, params,
                   nullptr, 2);
  mgpuStreamSynchronize(stream);
  ok = ok && gpu.copy(host.data(), x, n * 4, LOOM_COPY_DEVICE_TO_HOST, error);
  int wrong = 0;
  for (int i = 0; i < n; ++i)
    wrong += host[i] != float(i) + 1;
  mgpuMemFree(x, stream);
  report(ok && !wrong, "lazy-module",
         ok ? "registered before main, loaded on first use, " +
                  std::to_string(n - wrong) + "/" + std::to_string(n) +
                  " elements right"
            : error);
}

/// `gpu-selftest --launch-error`: launches the kernel with too many
/// threads per block; the CUDA library must end the process naming it.
int launchError() {
  std::string error;
  Gpu *gpu = Gpu::open(-1, Options(), error);
  if (!gpu)
    return 2;
  void *fn = mgpuModuleGetFunction(gModule, "loom_selftest_add_one");
  void *x = nullptr;
  uint32_t n = 0;
  void *params[] = {&x, &n};
  mgpuLaunchKernel(fn, 1, 1, 1, 4096, 1, 1, 0, mgpuStreamCreate(), params,
                   nullptr, 2);
  return 0; // not reached when the library reports the failure
}

void checkLaunchError(const char *self) {
  std::string command = std::string(self) + " --launch-error 2>&1";
  FILE *p = ::popen(command.c_str(), "r");
  std::string output;
  char buf[512];
  while (p && std::fgets(buf, sizeof(buf), p))
    output += buf;
  int status = p ? ::pclose(p) : -1;
  bool named = output.find("launching kernel loom_selftest_add_one") !=
               std::string::npos;
  bool exited = WIFEXITED(status) && WEXITSTATUS(status) == 1;
  while (!output.empty() && output.back() == '\n')
    output.pop_back();
  report(named && exited, "launch-error",
         (exited ? "" : "exit status " + std::to_string(status) + "; ") +
             output);
}

//===----------------------------------------------------------------------===//
// CUDA graphs
//===----------------------------------------------------------------------===//

/// The test step: `x` += 2 through a temporary, `y` = a host constant + 1.
/// `wait`: it also reads `x` back (a wait no graph can hold).
struct GraphStep {
  static constexpr uint32_t kN = 4096;
  std::vector<float> constant = std::vector<float>(kN);
  std::vector<float> readBack = std::vector<float>(kN);
  GraphStep() {
    for (uint32_t i = 0; i < kN; ++i)
      constant[i] = float(i);
  }
  void operator()(Gpu &gpu, void *x, void *y, bool wait) {
    void *stream = mgpuStreamCreate();
    void *fn = mgpuModuleGetFunction(gModule, "loom_selftest_add_one");
    void *t = mgpuMemAlloc(kN * 4, stream, false);
    uint32_t count = kN;
    void *params[] = {&t, &count};
    mgpuMemcpy(t, x, kN * 4, stream);
    for (int k = 0; k < 2; ++k)
      mgpuLaunchKernel(fn, kN / 256, 1, 1, 256, 1, 1, 0, stream, params,
                       nullptr, 2);
    mgpuMemcpy(x, t, kN * 4, stream);
    mgpuMemcpy(t, constant.data(), kN * 4, stream);
    mgpuLaunchKernel(fn, kN / 256, 1, 1, 256, 1, 1, 0, stream, params,
                     nullptr, 2);
    mgpuMemcpy(y, t, kN * 4, stream);
    mgpuMemFree(t, stream);
    std::string error;
    if (wait)
      gpu.copy(readBack.data(), x, kN * 4, LOOM_COPY_DEVICE_TO_HOST, error);
  }
};

/// Runs `calls` steps alternating between two buffers; true when both
/// hold 2 per call and `y` the constant + 1. `note` = how they ran.
bool runGraphSteps(Gpu &gpu, bool wait, int calls, std::string &note,
                   std::string &why) {
  GraphStep step;
  const uint32_t n = GraphStep::kN;
  std::vector<float> zeros(n, 0.0f), host(n);
  void *stream = mgpuStreamCreate();
  void *x[2] = {mgpuMemAlloc(n * 4, stream, false),
                mgpuMemAlloc(n * 4, stream, false)};
  void *y = mgpuMemAlloc(n * 4, stream, false);
  std::string error;
  bool ok = gpu.copy(x[0], zeros.data(), n * 4, LOOM_COPY_HOST_TO_DEVICE,
                     error) &&
            gpu.copy(x[1], zeros.data(), n * 4, LOOM_COPY_HOST_TO_DEVICE,
                     error);
  {
    StepGraphs graphs(gpu);
    for (int c = 0; ok && c < calls; ++c) {
      void *buffer = x[c % 2];
      ok = graphs.run({buffer, y}, true,
                      [&] { step(gpu, buffer, y, wait); }, error);
    }
    note = graphs.note();
  }
  for (int b = 0; ok && b < 2; ++b) {
    ok = gpu.copy(host.data(), x[b], n * 4, LOOM_COPY_DEVICE_TO_HOST, error);
    float want = float(2 * ((calls + 1 - b) / 2));
    for (uint32_t i = 0; ok && i < n; ++i)
      if (host[i] != want) {
        ok = false;
        error = "buffer " + std::to_string(b) + "[" + std::to_string(i) +
                "] = " + std::to_string(host[i]) + ", expected " +
                std::to_string(want);
      }
  }
  ok = ok && gpu.copy(host.data(), y, n * 4, LOOM_COPY_DEVICE_TO_HOST, error);
  for (uint32_t i = 0; ok && i < n; ++i)
    if (host[i] != float(i) + 1) {
      ok = false;
      error = "y[" + std::to_string(i) + "] = " + std::to_string(host[i]);
    }
  for (void *p : {x[0], x[1], y})
    mgpuMemFree(p, stream);
  if (!ok)
    why += error + "; ";
  return ok;
}

void checkGraphs(Gpu &gpu) {
  std::string replayed, refused, why;
  bool ok = runGraphSteps(gpu, false, 7, replayed, why);
  if (ok && replayed.find("steps replayed as CUDA graphs: 6 replays of 2 "
                          "graphs, 1 step run directly") == std::string::npos) {
    ok = false;
    why += "the steps were not replayed: " + replayed + "; ";
  }
  bool ok2 = runGraphSteps(gpu, true, 3, refused, why);
  // Refused at the wait, or at the copy to pageable memory before it.
  if (ok2 && refused.find("no CUDA graph (") == std::string::npos) {
    ok2 = false;
    why += "a step that waits was not refused a graph: " + refused + "; ";
  }
  report(ok && ok2, "graphs",
         ok && ok2 ? "7 steps on 2 buffers: " + replayed +
                         ", results equal; a step that waits: " + refused
                   : why);
}

//===----------------------------------------------------------------------===//
// Collectives on device buffers
//===----------------------------------------------------------------------===//

/// Every collective on a one-rank mesh's device view; NCCL (`nccl`) or the
/// local backend with staging.
void checkCollectives(Gpu &gpu, bool nccl) {
  const char *name = nccl ? "nccl" : "staged";
  loom_runtime_options_t opts;
  loom_runtime_options_init(&opts);
  opts.backend = nccl ? LOOM_BACKEND_NCCL : LOOM_BACKEND_LOCAL;
  opts.device = gpu.collectiveDevice();
  loom_runtime_t rt = nullptr;
  loom_mesh_t mesh = nullptr, dev = nullptr;
  auto failWith = [&](loom_status_t s, const std::string &what) {
    report(false, name, what + ": " + loom_status_message(s));
    loom_status_free(s);
    loom_mesh_destroy(dev);
    loom_mesh_destroy(mesh);
    loom_runtime_destroy(rt);
  };
  if (loom_status_t s = loom_runtime_create(&opts, &rt))
    return failWith(s, "creating the runtime");
  int64_t sizes[] = {1, 1};
  const char *names[] = {"dp", "tp"};
  if (loom_status_t s = loom_mesh_create(rt, 2, sizes, names, &mesh))
    return failWith(s, "creating a mesh (communicator splits)");
  if (loom_status_t s = loom_mesh_on_device(mesh, &dev))
    return failWith(s, "the device mesh");
  int32_t axes[] = {0, 1};
  std::string errors;
  int checks = 0;
  for (loom_dtype_t t : {LOOM_DTYPE_F32, LOOM_DTYPE_BF16, LOOM_DTYPE_I64}) {
    const int64_t n = 1024;
    size_t w = loom_dtype_size(t), bytes = n * w;
    std::vector<char> in(bytes), out(bytes), zeros(bytes, 0);
    for (int64_t i = 0; i < n; ++i) {
      if (t == LOOM_DTYPE_F32) {
        float f = float(i) * 0.5f;
        std::memcpy(in.data() + i * w, &f, 4);
      } else if (t == LOOM_DTYPE_BF16) {
        uint16_t h = toBf16(float(i % 256));
        std::memcpy(in.data() + i * w, &h, 2);
      } else {
        int64_t v = i * 1000003;
        std::memcpy(in.data() + i * w, &v, 8);
      }
    }
    void *a, *b;
    std::string error;
    gpu.allocate(bytes, &a, error);
    gpu.allocate(bytes, &b, error);
    gpu.copy(a, in.data(), bytes, LOOM_COPY_HOST_TO_DEVICE, error);
    auto expect = [&](const char *op, loom_status_t s) {
      ++checks;
      if (s) {
        errors += std::string(op) + " " + loom_dtype_name(t) + ": " +
                  loom_status_message(s) + "; ";
        loom_status_free(s);
        return;
      }
      std::string e;
      gpu.copy(out.data(), b, bytes, LOOM_COPY_DEVICE_TO_HOST, e);
      if (out != in)
        errors += std::string(op) + " " + loom_dtype_name(t) +
                  ": wrong values; ";
      gpu.copy(b, zeros.data(), bytes, LOOM_COPY_HOST_TO_DEVICE, e);
    };
    expect("all_reduce", loom_all_reduce(dev, axes, 2, t, LOOM_REDUCTION_SUM,
                                         a, b, n));
    expect("all_gather", loom_all_gather(dev, axes, 1, t, a, b, n));
    expect("reduce_scatter", loom_reduce_scatter(dev, axes + 1, 1, t,
                                                 LOOM_REDUCTION_MAX, a, b, n));
    expect("all_to_all", loom_all_to_all(dev, axes, 2, t, a, b, n));
    expect("send_recv", loom_send_recv(dev, t, 0, a, 0, b, n));
    // In place.
    gpu.copy(b, in.data(), bytes, LOOM_COPY_HOST_TO_DEVICE, error);
    expect("all_reduce in place",
           loom_all_reduce(dev, axes, 1, t, LOOM_REDUCTION_SUM, b, b, n));
    gpu.release(a);
    gpu.release(b);
  }
  // loom_fill_zero on device memory.
  {
    std::vector<float> ones(256, 1.0f), back(256, 1.0f);
    void *z;
    std::string error;
    gpu.allocate(1024, &z, error);
    gpu.copy(z, ones.data(), 1024, LOOM_COPY_HOST_TO_DEVICE, error);
    ++checks;
    if (loom_status_t s = loom_fill_zero(dev, z, 1024)) {
      errors += std::string("fill_zero: ") + loom_status_message(s) + "; ";
      loom_status_free(s);
    }
    gpu.copy(back.data(), z, 1024, LOOM_COPY_DEVICE_TO_HOST, error);
    for (float f : back)
      if (f != 0) {
        errors += "fill_zero left a non-zero; ";
        break;
      }
    gpu.release(z);
  }
  bool isNccl = loom_runtime_backend(rt) == LOOM_BACKEND_NCCL;
  loom_mesh_destroy(dev);
  loom_mesh_destroy(mesh);
  loom_runtime_destroy(rt);
  report(errors.empty() && isNccl == nccl, name,
         errors.empty()
             ? std::to_string(checks) + " collectives on device buffers (f32, "
                                        "bf16, i64) through the " +
                   (isNccl ? "NCCL" : "local (staged)") + " backend"
             : errors);
}

} // namespace

int main(int argc, char **argv) {
  if (argc > 1 && std::string(argv[1]) == "--launch-error")
    return launchError();
  std::string error;
  const Driver *d = loom::cuda::driver(error);
  if (!d) {
    std::printf("SKIP environment: %s\n", error.c_str());
    return 2;
  }
  Options options;
  Gpu *gpu = Gpu::open(-1, options, error);
  if (!gpu) {
    std::printf("SKIP environment: %s\n", error.c_str());
    return 2;
  }
  int version = 0;
  d->cuDriverGetVersion(&version);
  std::string blasWhere, blasError;
  const Blas *b = loom::cuda::blas(blasError);
  std::string ncclWhere, ncclError;
  bool nccl = loom::cuda::openLibrary("libnccl.so.2", ncclWhere, ncclError,
                                      "ncclGetVersion") != nullptr;
  report(b != nullptr && nccl, "environment",
         gpu->name() + ", driver " + d->path + " (CUDA " +
             std::to_string(version / 1000) + "." +
             std::to_string(version % 1000 / 10) + "), cuBLAS " +
             (b ? b->path : blasError) + ", NCCL " +
             (nccl ? ncclWhere : ncclError));
  checkGemms(*gpu);
  timeGemms(*gpu);
  checkAllocator(*gpu);
  checkLazyModule(*gpu);
  checkLaunchError(argv[0]);
  checkGraphs(*gpu);
  checkCollectives(*gpu, /*nccl=*/false);
  checkCollectives(*gpu, /*nccl=*/true);
  std::printf("gpu-selftest: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
