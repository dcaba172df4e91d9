//===- dnnl_conv.cpp - Convolutions through oneDNN ------------------------===//
//
// loom.conv on the CPU through oneDNN's forward convolution: the primitive
// chooses its own (blocked) layouts for the input, weights and result
// (format `any`); Loom's dense row-major operands are reordered into them
// and the result back. Primitives and reorders are made once per shape,
// type and thread count and kept: a step convolves the same shapes every
// step. Measured on 2 cores (AVX-512), reorders included: 1.5-3x im2col +
// sgemm on ResNet shapes, 8x on a depthwise 3x3 (brdgmm_dw).
//
//===----------------------------------------------------------------------===//

#include "dnnl_gemm.h"

#include "dnnl_api.h"

#include <array>
#include <atomic>
#include <map>
#include <mutex>
#include <vector>

namespace loom::dnnl_gemm {

int64_t ConvShape::work() const {
  int64_t w = n * f * (c / (groups > 0 ? groups : 1));
  for (int64_t i = 0; i < k; ++i)
    w *= out[i] * kernel[i];
  return w;
}

namespace {

using detail::engine;

/// A dense row-major descriptor of `dims`.
bool plain(const std::vector<int64_t> &dims, dnnl_data_type_t type,
           dnnl_memory_desc_t &md) {
  dnnl_dims_t d = {}, s = {};
  int64_t stride = 1;
  for (int i = int(dims.size()) - 1; i >= 0; --i) {
    d[i] = dims[i];
    s[i] = stride;
    stride *= dims[i];
  }
  return dnnl_memory_desc_init_by_strides(&md, int(dims.size()), d, type, s) ==
         dnnl_success;
}

/// One operand: Loom's layout, the primitive's, and the reorder between
/// them (null when they are the same).
struct Side {
  dnnl_memory_desc_t user, chosen;
  dnnl_primitive_t reorder = nullptr;
  size_t bytes = 0; // of `chosen`
};

struct Entry {
  dnnl_primitive_t primitive = nullptr; // null: not done by oneDNN
  Side src, weights, dst;
  dnnl_memory_desc_t pad;
  size_t scratchpad = 0;
};

bool makeSide(Side &side, const dnnl_memory_desc_t *chosen, bool toChosen) {
  side.chosen = *chosen;
  side.bytes = dnnl_memory_desc_get_size(chosen);
  if (dnnl_memory_desc_equal(&side.user, chosen))
    return true;
  const dnnl_memory_desc_t *from = toChosen ? &side.user : chosen;
  const dnnl_memory_desc_t *to = toChosen ? chosen : &side.user;
  dnnl_primitive_desc_t pd = nullptr;
  if (dnnl_reorder_primitive_desc_create(&pd, from, engine(), to, engine(),
                                         nullptr) != dnnl_success)
    return false;
  bool ok = dnnl_primitive_create(&side.reorder, pd) == dnnl_success;
  dnnl_primitive_desc_destroy(pd);
  return ok;
}

Entry create(const ConvShape &s, dnnl_data_type_t type, int threads) {
  Entry e;
  std::vector<int64_t> xd = {s.n, s.c}, yd = {s.n, s.f}, wd;
  if (s.groups > 1)
    wd = {s.groups, s.f / s.groups, s.c / s.groups};
  else
    wd = {s.f, s.c};
  dnnl_dims_t strides = {}, dilates = {}, padL = {}, padR = {};
  for (int64_t i = 0; i < s.k; ++i) {
    xd.push_back(s.d[i]);
    yd.push_back(s.out[i]);
    wd.push_back(s.kernel[i]);
    strides[i] = s.stride[i];
    dilates[i] = s.dilation[i] - 1;
    padL[i] = s.padBegin[i];
    padR[i] = s.padEnd[i];
  }
  if (!plain(xd, type, e.src.user) || !plain(wd, type, e.weights.user) ||
      !plain(yd, type, e.dst.user))
    return e;
  dnnl_memory_desc_t xa, wa, ya;
  dnnl_dims_t dims;
  auto any = [&](const std::vector<int64_t> &v, dnnl_memory_desc_t &md) {
    for (size_t i = 0; i < v.size(); ++i)
      dims[i] = v[i];
    return dnnl_memory_desc_init_by_tag(&md, int(v.size()), dims, type,
                                        dnnl_format_tag_any) == dnnl_success;
  };
  if (!any(xd, xa) || !any(wd, wa) || !any(yd, ya))
    return e;
  dnnl_convolution_desc_t desc;
  if (dnnl_dilated_convolution_forward_desc_init(
          &desc, dnnl_forward_inference, dnnl_convolution_direct, &xa, &wa,
          nullptr, &ya, strides, dilates, padL, padR) != dnnl_success)
    return e;
  dnnl_primitive_attr_t attr = nullptr;
  dnnl_primitive_attr_create(&attr);
  dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  dnnl_primitive_desc_t pd = nullptr;
  omp_set_num_threads(threads);
  dnnl_status_t status =
      dnnl_primitive_desc_create(&pd, &desc, attr, engine(), nullptr);
  dnnl_primitive_attr_destroy(attr);
  if (status != dnnl_success)
    return e;
  auto md = [&](dnnl_query_t what) {
    return dnnl_primitive_desc_query_md(pd, what, 0);
  };
  if (makeSide(e.src, md(dnnl_query_src_md), true) &&
      makeSide(e.weights, md(dnnl_query_weights_md), true) &&
      makeSide(e.dst, md(dnnl_query_dst_md), false))
    detail::makePrimitive(pd, e.primitive, e.pad, e.scratchpad);
  dnnl_primitive_desc_destroy(pd);
  return e;
}

using Key = std::array<int64_t, 30>;

std::mutex cacheMutex;
std::map<Key, Entry> cache;
std::atomic<int64_t> done{0};

bool reorder(dnnl_primitive_t r, dnnl_stream_t stream, dnnl_memory_t from,
             dnnl_memory_t to) {
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
  return dnnl_primitive_execute(r, stream, 2, args) == dnnl_success;
}

} // namespace

bool conv(const ConvShape &s, Type type, const void *x, const void *w,
          void *y, int threads) {
  if (type == Type::f16 || !detail::nativeOn(type) || s.k < 1 || s.k > 3)
    return false;
  Key key{};
  const int64_t *fields = &s.k;
  for (size_t i = 0; i < sizeof(ConvShape) / sizeof(int64_t); ++i)
    key[i] = fields[i];
  key[27] = int64_t(type);
  key[28] = threads < 1 ? 1 : threads;
  const Entry *entry;
  {
    std::lock_guard<std::mutex> lock(cacheMutex);
    auto it = cache.find(key);
    if (it == cache.end())
      it = cache
               .emplace(key, create(s, type == Type::bf16 ? dnnl_bf16 : dnnl_f32,
                                    int(key[28])))
               .first;
    entry = &it->second; // std::map nodes stay where they are
  }
  if (!entry->primitive)
    return false;
  dnnl_stream_t stream = detail::threadStream();
  if (!stream)
    return false;
  thread_local std::vector<char> bufX, bufW, bufY, scratch;
  detail::Memories m;
  auto side = [&](const Side &sd, void *data, std::vector<char> &buf,
                  dnnl_memory_t &user, dnnl_memory_t &chosen) {
    user = m.make(sd.user, data);
    if (!sd.reorder) {
      chosen = user;
      return user != nullptr;
    }
    if (buf.size() < sd.bytes)
      buf.resize(sd.bytes);
    chosen = m.make(sd.chosen, buf.data());
    return user && chosen;
  };
  dnnl_memory_t ux, cx, uw, cw, uy, cy;
  if (!side(entry->src, const_cast<void *>(x), bufX, ux, cx) ||
      !side(entry->weights, const_cast<void *>(w), bufW, uw, cw) ||
      !side(entry->dst, y, bufY, uy, cy))
    return false;
  dnnl_memory_t pad = nullptr;
  if (entry->scratchpad) {
    if (scratch.size() < entry->scratchpad)
      scratch.resize(entry->scratchpad);
    if (!(pad = m.make(entry->pad, scratch.data())))
      return false;
  }
  omp_set_num_threads(int(key[28]));
  bool ok = (!entry->src.reorder ||
             reorder(entry->src.reorder, stream, ux, cx)) &&
            (!entry->weights.reorder ||
             reorder(entry->weights.reorder, stream, uw, cw));
  if (ok) {
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, cx},
                               {DNNL_ARG_WEIGHTS, cw},
                               {DNNL_ARG_DST, cy},
                               {DNNL_ARG_SCRATCHPAD, pad}};
    ok = dnnl_primitive_execute(entry->primitive, stream, pad ? 4 : 3,
                                args) == dnnl_success;
  }
  if (ok && entry->dst.reorder)
    ok = reorder(entry->dst.reorder, stream, cy, uy);
  ok = ok && dnnl_stream_wait(stream) == dnnl_success;
  if (ok)
    done.fetch_add(1, std::memory_order_relaxed);
  return ok;
}

int64_t convolutions() { return done.load(std::memory_order_relaxed); }

} // namespace loom::dnnl_gemm
