//===- dnnl_gemm.cpp - Batch matmuls through oneDNN -----------------------===//
//
// oneDNN's matmul primitive (C API: the runtime builds without exceptions),
// one primitive per layout, thread count and accumulation, created on first
// use and kept: a training step multiplies the same shapes every step.
// Each call wraps the caller's buffers (no copies), runs on the calling
// thread's stream with a scratchpad of its own (user scratchpad mode, so
// that ranks run as threads of one process may multiply at once).
//
//===----------------------------------------------------------------------===//

#include "dnnl_gemm.h"

#include "dnnl_api.h"

#include <array>
#include <atomic>
#include <cstdlib>
#include <dlfcn.h>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

extern "C" int openblas_get_num_threads(void);

namespace loom::dnnl_gemm {
namespace {

dnnl_data_type_t dnnlType(Type t) {
  switch (t) {
  case Type::bf16:
    return dnnl_bf16;
  case Type::f16:
    return dnnl_f16;
  case Type::f32:
    return dnnl_f32;
  }
  return dnnl_f32;
}

} // namespace

#define LOOM_DNNL_POINTER(name) decltype(&::name) name = nullptr;
LOOM_DNNL_FUNCTIONS(LOOM_DNNL_POINTER)
#undef LOOM_DNNL_POINTER
void (*omp_set_num_threads)(int) = nullptr;

bool loadDnnl() {
  static bool loaded = [] {
    // libgomp reads these when it is loaded (below, with oneDNN), unless
    // something in the process loaded it already.
    if (!std::getenv("GOMP_SPINCOUNT") && !std::getenv("OMP_WAIT_POLICY") &&
        !dlopen("libgomp.so.1", RTLD_LAZY | RTLD_NOLOAD))
      setenv("GOMP_SPINCOUNT", "1000", 0);
    void *lib = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      return false;
    bool all = true;
#define LOOM_DNNL_LOAD(name)                                                   \
  name = reinterpret_cast<decltype(&::name)>(dlsym(lib, #name));               \
  all = all && name;
    LOOM_DNNL_FUNCTIONS(LOOM_DNNL_LOAD)
#undef LOOM_DNNL_LOAD
    omp_set_num_threads =
        reinterpret_cast<void (*)(int)>(dlsym(lib, "omp_set_num_threads"));
    return all && omp_set_num_threads;
  }();
  return loaded;
}

/// The engine, or null where oneDNN cannot make one or is turned off.
dnnl_engine_t detail::engine() {
  static dnnl_engine_t e = [] {
    const char *env = std::getenv("LOOM_ONEDNN");
    if ((env && std::strcmp(env, "0") == 0) || !loadDnnl())
      return dnnl_engine_t(nullptr);
    dnnl_engine_t made = nullptr;
    if (dnnl_engine_create(&made, dnnl_cpu, 0) != dnnl_success)
      return dnnl_engine_t(nullptr);
    return made;
  }();
  return e;
}

/// Whether oneDNN computes this type with native instructions on this CPU
/// (f32 everywhere; bf16: AVX512-BF16 or AMX; f16: oneDNN 2.6 has no fast
/// CPU f16 kernels before AVX512-FP16, which its ISA list does not name).
bool detail::nativeOn(Type operands) {
  if (!engine())
    return false;
  if (operands == Type::f32)
    return true;
  if (operands != Type::bf16)
    return false;
  unsigned isa = static_cast<unsigned>(dnnl_get_effective_cpu_isa());
  unsigned bf16 = static_cast<unsigned>(dnnl_cpu_isa_avx512_core_bf16);
  return (isa & bf16) == bf16;
}

int threadsFor(int64_t work) {
  return work < kThreadedWork ? 1 : openblas_get_num_threads();
}

const char *detail::fastImplementation(const_dnnl_primitive_desc_t pd) {
  const char *impl = nullptr;
  dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
  return impl && std::strncmp(impl, "ref", 3) != 0 ? impl : nullptr;
}

dnnl_memory_t detail::Memories::make(const dnnl_memory_desc_t &md,
                                     void *data) {
  dnnl_memory_t m = nullptr;
  if (count == 8 ||
      dnnl_memory_create(&m, &md, engine(), data) != dnnl_success)
    return nullptr;
  return all[count++] = m;
}

detail::Memories::~Memories() {
  for (int i = 0; i < count; ++i)
    dnnl_memory_destroy(all[i]);
}

bool detail::makePrimitive(const_dnnl_primitive_desc_t pd,
                           dnnl_primitive_t &primitive,
                           dnnl_memory_desc_t &pad, size_t &scratchpad) {
  primitive = nullptr;
  if (!fastImplementation(pd))
    return false;
  const dnnl_memory_desc_t *md =
      dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  scratchpad = 0;
  if (md) {
    pad = *md;
    scratchpad = dnnl_memory_desc_get_size(md);
  }
  if (dnnl_primitive_create(&primitive, pd) != dnnl_success)
    primitive = nullptr;
  return primitive != nullptr;
}

dnnl_stream_t detail::threadStream() {
  thread_local dnnl_stream_t stream = nullptr;
  if (!stream && engine() &&
      dnnl_stream_create(&stream, engine(), dnnl_stream_default_flags) !=
          dnnl_success)
    stream = nullptr;
  return stream;
}

namespace {
using detail::engine;
using detail::nativeOn;

struct Key {
  std::array<int64_t, 18> shape; // dims and strides of A, B, C
  int types, flags, threads;
  bool operator<(const Key &o) const {
    if (shape != o.shape)
      return shape < o.shape;
    if (types != o.types)
      return types < o.types;
    if (flags != o.flags)
      return flags < o.flags;
    return threads < o.threads;
  }
};

struct Entry {
  dnnl_primitive_t primitive = nullptr; // null: not done by oneDNN
  dnnl_memory_desc_t a, b, c, pad;
  size_t scratchpad = 0; // bytes of `pad`
};

std::mutex cacheMutex;
std::atomic<int64_t> done{0};
std::map<Key, Entry> cache;

/// An operand's logical [batch, rows, cols] view for oneDNN: `transposed`
/// swaps the matrix dimensions, a batch of 1 broadcasts.
void logical(const Operand &x, bool transposed, int64_t dims[3],
             int64_t strides[3]) {
  int r = transposed ? 2 : 1, c = transposed ? 1 : 2;
  // A batch at stride 0 is one matrix for all: oneDNN's broadcast batch.
  dims[0] = x.strides[0] == 0 ? 1 : x.sizes[0];
  dims[1] = x.sizes[r];
  dims[2] = x.sizes[c];
  strides[1] = x.strides[r];
  strides[2] = x.strides[c];
  // A batch of one may carry any stride; oneDNN wants one past the matrix.
  strides[0] = dims[0] == 1 ? dims[1] * dims[2] : x.strides[0];
  // Dimensions of one: their stride is free, give oneDNN a plain one.
  if (dims[2] == 1)
    strides[2] = 1;
  if (dims[1] == 1)
    strides[1] = dims[2];
}

Entry create(const Key &key, const dnnl_memory_desc_t &a,
             const dnnl_memory_desc_t &b, const dnnl_memory_desc_t &c,
             bool accumulate) {
  Entry e;
  e.a = a;
  e.b = b;
  e.c = c;
  dnnl_matmul_desc_t desc;
  if (dnnl_matmul_desc_init(&desc, &a, &b, nullptr, &c) != dnnl_success)
    return e;
  dnnl_primitive_attr_t attr = nullptr;
  dnnl_post_ops_t post = nullptr;
  dnnl_primitive_attr_create(&attr);
  dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  if (accumulate) {
    dnnl_post_ops_create(&post);
    dnnl_post_ops_append_sum(post, 1.0f);
    dnnl_primitive_attr_set_post_ops(attr, post);
  }
  dnnl_primitive_desc_t pd = nullptr;
  omp_set_num_threads(key.threads);
  dnnl_status_t status =
      dnnl_primitive_desc_create(&pd, &desc, attr, engine(), nullptr);
  if (post)
    dnnl_post_ops_destroy(post);
  dnnl_primitive_attr_destroy(attr);
  if (status != dnnl_success)
    return e;
  detail::makePrimitive(pd, e.primitive, e.pad, e.scratchpad);
  dnnl_primitive_desc_destroy(pd);
  return e;
}

bool descriptor(const int64_t dims[3], const int64_t strides[3], Type t,
                dnnl_memory_desc_t &md) {
  dnnl_dims_t d = {dims[0], dims[1], dims[2]};
  dnnl_dims_t s = {strides[0], strides[1], strides[2]};
  return dnnl_memory_desc_init_by_strides(&md, 3, d, dnnlType(t), s) ==
         dnnl_success;
}

} // namespace

bool batchMatmul(const Operand &a, const Operand &b, const Operand &c,
                 bool transA, bool transB, bool accumulate, int threads) {
  // f32 products stay with OpenBLAS (oneDNN measured 0.95-1.2x it here).
  if (a.type != b.type || a.type == Type::f32 || !nativeOn(a.type))
    return false;
  if (c.type != Type::f32 && c.type != a.type)
    return false;
  Key key;
  int64_t *s = key.shape.data();
  logical(a, transA, s, s + 3);
  logical(b, transB, s + 6, s + 9);
  for (int i = 0; i < 3; ++i) {
    s[12 + i] = c.sizes[i];
    s[15 + i] = c.strides[i];
  }
  if (c.sizes[0] == 1)
    s[15] = c.sizes[1] * c.sizes[2];
  if (c.sizes[2] == 1)
    s[17] = 1;
  if (c.sizes[1] == 1)
    s[16] = c.sizes[2];
  key.types = int(a.type) * 16 + int(c.type);
  key.flags = accumulate ? 1 : 0;
  key.threads = threads < 1 ? 1 : threads;

  const Entry *entry;
  {
    std::lock_guard<std::mutex> lock(cacheMutex);
    auto it = cache.find(key);
    if (it == cache.end()) {
      dnnl_memory_desc_t ma, mb, mc;
      if (!descriptor(s, s + 3, a.type, ma) ||
          !descriptor(s + 6, s + 9, b.type, mb) ||
          !descriptor(s + 12, s + 15, c.type, mc)) {
        it = cache.emplace(key, Entry()).first;
      } else {
        it = cache.emplace(key, create(key, ma, mb, mc, accumulate)).first;
      }
    }
    entry = &it->second; // std::map nodes stay where they are
  }
  if (!entry->primitive)
    return false;

  dnnl_stream_t stream = detail::threadStream();
  thread_local std::vector<char> scratch;
  if (!stream)
    return false;
  if (scratch.size() < entry->scratchpad)
    scratch.resize(entry->scratchpad);

  detail::Memories m;
  dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, m.make(entry->a, a.data)},
                             {DNNL_ARG_WEIGHTS, m.make(entry->b, b.data)},
                             {DNNL_ARG_DST, m.make(entry->c, c.data)},
                             {DNNL_ARG_SCRATCHPAD, nullptr}};
  if (entry->scratchpad)
    args[3].memory = m.make(entry->pad, scratch.data());
  int nargs = entry->scratchpad ? 4 : 3;
  if (m.count != nargs)
    return false;
  omp_set_num_threads(key.threads);
  bool ok = dnnl_primitive_execute(entry->primitive, stream, nargs, args) ==
                dnnl_success &&
            dnnl_stream_wait(stream) == dnnl_success;
  if (ok)
    done.fetch_add(1, std::memory_order_relaxed);
  return ok;
}

int64_t products() { return done.load(std::memory_order_relaxed); }

const char *implementation(Type operands, Type result) {
  static std::string names[3][3];
  static std::mutex m;
  std::lock_guard<std::mutex> lock(m);
  std::string &name = names[int(operands)][int(result)];
  if (!name.empty() || operands == Type::f32 || !detail::nativeOn(operands))
    return name.c_str();
  int64_t dims[3] = {1, 64, 64}, strides[3] = {64 * 64, 64, 1};
  dnnl_memory_desc_t a, c;
  if (!descriptor(dims, strides, operands, a) ||
      !descriptor(dims, strides, result, c))
    return name.c_str();
  dnnl_matmul_desc_t desc;
  dnnl_primitive_desc_t pd = nullptr;
  if (dnnl_matmul_desc_init(&desc, &a, &a, nullptr, &c) == dnnl_success &&
      dnnl_primitive_desc_create(&pd, &desc, nullptr, engine(), nullptr) ==
          dnnl_success) {
    if (const char *impl = detail::fastImplementation(pd))
      name = impl;
    dnnl_primitive_desc_destroy(pd);
  }
  return name.c_str();
}

} // namespace loom::dnnl_gemm
