//===- tensor.cpp - Host tensors, blocks and .npy headers -----------------===//

#include "loom/program.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

using namespace loom::program;

int64_t loom::program::numElements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

Tensor::Tensor(loom_dtype_t dtype, std::vector<int64_t> shape)
    : dtype(dtype), shape(std::move(shape)) {
  bytes.assign(static_cast<size_t>(numElements() * loom_dtype_size(dtype)), 0);
}

int64_t Tensor::numElements() const { return program::numElements(shape); }

namespace {
template <typename T> T load(const char *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

float fromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// IEEE half to float (exact).
float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h >> 15) << 31, exp = (h >> 10) & 31,
           man = h & 1023;
  if (exp == 31)
    return fromBits(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    float f = std::ldexp(float(man), -24);
    return sign ? -f : f;
  }
  return fromBits(sign | ((exp + 112) << 23) | (man << 13));
}
} // namespace

double Tensor::getAsDouble(int64_t i) const {
  return elementAsDouble(bytes.data() + i * loom_dtype_size(dtype), dtype);
}

int64_t loom::program::findBadValue(const char *data, loom_dtype_t dtype,
                                    int64_t count, int64_t indexBound,
                                    std::string &why) {
  bool isFloat = dtype == LOOM_DTYPE_F32 || dtype == LOOM_DTYPE_F64 ||
                 dtype == LOOM_DTYPE_F16 || dtype == LOOM_DTYPE_BF16;
  if (!isFloat && indexBound <= 0)
    return -1;
  size_t size = loom_dtype_size(dtype);
  for (int64_t i = 0; i < count; ++i) {
    double v = elementAsDouble(data + size_t(i) * size, dtype);
    if (isFloat && !std::isfinite(v)) {
      why = std::isnan(v) ? std::string("NaN (training data must be finite)")
                          : std::string("an infinite value (training data must "
                                        "be finite; an attention mask of "
                                        "-inf goes in as a boolean mask, or "
                                        "as a constant of the model, e.g. a "
                                        "registered buffer)");
      return i;
    }
    if (!isFloat && (v < 0 || v >= double(indexBound))) {
      char text[96];
      std::snprintf(text, sizeof(text),
                    "%.0f, outside [0, %lld) (the classes or rows it indexes)",
                    v, (long long)indexBound);
      why = text;
      return i;
    }
  }
  return -1;
}

double loom::program::elementAsDouble(const char *p, loom_dtype_t dtype) {
  switch (dtype) {
  case LOOM_DTYPE_F32:
    return load<float>(p);
  case LOOM_DTYPE_F64:
    return load<double>(p);
  case LOOM_DTYPE_F16:
    return halfToFloat(load<uint16_t>(p));
  case LOOM_DTYPE_BF16:
    return fromBits(uint32_t(load<uint16_t>(p)) << 16);
  case LOOM_DTYPE_I8:
    return load<int8_t>(p);
  case LOOM_DTYPE_I16:
    return load<int16_t>(p);
  case LOOM_DTYPE_I32:
    return load<int32_t>(p);
  case LOOM_DTYPE_I64:
    return double(load<int64_t>(p));
  case LOOM_DTYPE_U8:
  case LOOM_DTYPE_BOOL:
    return load<uint8_t>(p);
  case LOOM_DTYPE_U16:
    return load<uint16_t>(p);
  case LOOM_DTYPE_U32:
    return load<uint32_t>(p);
  case LOOM_DTYPE_U64:
    return double(load<uint64_t>(p));
  }
  return 0;
}

void loom::program::copyBlock(const char *src,
                              const std::vector<int64_t> &srcShape,
                              const std::vector<int64_t> &srcOffset, char *dst,
                              const std::vector<int64_t> &dstShape,
                              const std::vector<int64_t> &dstOffset,
                              const std::vector<int64_t> &shape,
                              int64_t bytes) {
  int64_t rank = static_cast<int64_t>(shape.size());
  if (rank == 0) {
    std::memcpy(dst, src, bytes);
    return;
  }
  int64_t count = program::numElements(shape);
  if (count == 0)
    return;
  std::vector<int64_t> srcStride(rank, 1), dstStride(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d) {
    srcStride[d] = srcStride[d + 1] * srcShape[d + 1];
    dstStride[d] = dstStride[d + 1] * dstShape[d + 1];
  }
  int64_t row = shape[rank - 1];
  std::vector<int64_t> index(rank, 0);
  for (int64_t done = 0; done < count; done += row) {
    int64_t s = 0, t = 0;
    for (int64_t d = 0; d < rank; ++d) {
      s += (srcOffset[d] + index[d]) * srcStride[d];
      t += (dstOffset[d] + index[d]) * dstStride[d];
    }
    std::memcpy(dst + t * bytes, src + s * bytes, row * bytes);
    for (int64_t d = rank - 2; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
}

namespace {
struct DescrEntry {
  const char *code;
  loom_dtype_t dtype;
};
const DescrEntry kDescrs[] = {
    {"f4", LOOM_DTYPE_F32}, {"f8", LOOM_DTYPE_F64}, {"f2", LOOM_DTYPE_F16},
    {"i8", LOOM_DTYPE_I64}, {"i4", LOOM_DTYPE_I32}, {"i2", LOOM_DTYPE_I16},
    {"i1", LOOM_DTYPE_I8},  {"b1", LOOM_DTYPE_BOOL}, {"u1", LOOM_DTYPE_U8},
    {"u2", LOOM_DTYPE_U16}, {"u4", LOOM_DTYPE_U32}, {"u8", LOOM_DTYPE_U64},
};
} // namespace

std::string loom::program::npyDescr(loom_dtype_t dtype) {
  for (const DescrEntry &e : kDescrs)
    if (e.dtype == dtype)
      return std::string(loom_dtype_size(dtype) == 1 ? "|" : "<") + e.code;
  return "";
}

bool loom::program::dtypeOfNpyDescr(const std::string &descr,
                                    loom_dtype_t &dtype) {
  if (descr.size() < 3 ||
      std::string("<|=").find(descr[0]) == std::string::npos)
    return false;
  for (const DescrEntry &e : kDescrs)
    if (descr.substr(1) == e.code) {
      dtype = e.dtype;
      return true;
    }
  return false;
}

std::string loom::program::npyHeader(const std::string &descr,
                                     const std::vector<int64_t> &shape) {
  std::string dims = "(";
  for (int64_t d : shape)
    dims += std::to_string(d) + ", ";
  if (shape.size() > 1)
    dims.resize(dims.size() - 2);
  else if (shape.size() == 1)
    dims.resize(dims.size() - 1);
  dims += ")";
  std::string header = "{'descr': '" + descr +
                       "', 'fortran_order': False, 'shape': " + dims + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += char(1);
  out += char(0);
  out += char(header.size() & 0xff);
  out += char(header.size() >> 8);
  return out + header;
}

bool loom::program::parseNpyHeader(const char *bytes, size_t size,
                                   const std::string &path, NpyInfo &info,
                                   std::string &error) {
  std::string data(bytes, std::min<size_t>(size, 1 << 16));
  if (size < 10 || data.compare(0, 6, "\x93NUMPY") != 0) {
    error = path + " is not a .npy file";
    return false;
  }
  uint8_t major = data[6];
  size_t headerLen = uint8_t(data[8]) | (uint8_t(data[9]) << 8), start = 10;
  if (major != 1) {
    if (size < 12) {
      error = path + ": truncated .npy header";
      return false;
    }
    headerLen |= (uint8_t(data[10]) << 16) | (size_t(uint8_t(data[11])) << 24);
    start = 12;
  }
  if (start + headerLen > data.size()) {
    error = path + ": truncated .npy header";
    return false;
  }
  std::string header = data.substr(start, headerLen);
  auto field = [&](const std::string &key) -> std::string {
    size_t at = header.find("'" + key + "'");
    if (at == std::string::npos)
      return "";
    std::string rest = header.substr(at + key.size() + 2);
    size_t first = rest.find_first_not_of(" :");
    return first == std::string::npos ? "" : rest.substr(first);
  };
  std::string descr = field("descr");
  if (descr.empty() || (descr[0] != '\'' && descr[0] != '"')) {
    error = path + ": .npy header has no descr";
    return false;
  }
  info.descr = descr.substr(1, descr.find_first_of("'\"", 1) - 1);
  if (field("fortran_order").compare(0, 4, "True") == 0) {
    error = path + ": Fortran-order .npy files are not supported";
    return false;
  }
  std::string shape = field("shape");
  if (shape.empty() || shape[0] != '(') {
    error = path + ": .npy header has no shape";
    return false;
  }
  shape = shape.substr(1, shape.find(')') - 1);
  info.shape.clear();
  size_t pos = 0;
  while (pos < shape.size()) {
    size_t comma = shape.find(',', pos);
    std::string part = shape.substr(pos, comma == std::string::npos
                                             ? std::string::npos
                                             : comma - pos);
    pos = comma == std::string::npos ? shape.size() : comma + 1;
    size_t b = part.find_first_not_of(' '), e = part.find_last_not_of(' ');
    if (b == std::string::npos)
      continue;
    part = part.substr(b, e - b + 1);
    char *end = nullptr;
    errno = 0;
    long long d = std::strtoll(part.c_str(), &end, 10);
    if (*end || d < 0 || errno == ERANGE) {
      error = path + ": bad .npy shape (" + shape + ")";
      return false;
    }
    info.shape.push_back(d);
  }
  info.dataOffset = start + headerLen;
  // The data the header promises must be in the file: a shape from a
  // damaged or hostile file never sizes an allocation or a read past the
  // end.
  loom_dtype_t dtype;
  uint64_t dataBytes = dtypeOfNpyDescr(info.descr, dtype) ? loom_dtype_size(dtype) : 1;
  for (int64_t d : info.shape)
    if (d != 0 && dataBytes > (uint64_t(1) << 62) / uint64_t(d)) {
      error = path + ": .npy shape (" + shape + ") is too large";
      return false;
    } else {
      dataBytes *= uint64_t(d);
    }
  if (info.dataOffset > size || dataBytes > size - info.dataOffset) {
    error = path + " is truncated: its header says shape (" + shape + ") of '" +
            info.descr + "', " + std::to_string(dataBytes) + " bytes of data, but " +
            std::to_string(size > info.dataOffset ? size - info.dataOffset : 0) +
            " follow the header";
    return false;
  }
  return true;
}

int64_t DataOrder::entry(int64_t position) {
  int64_t epoch = position / entries, index = position % entries;
  if (!shuffle)
    return index;
  if (epoch != cachedEpoch) {
    // Fisher-Yates with our own draws: the same permutation from any
    // standard library.
    permutation.resize(entries);
    for (int64_t i = 0; i < entries; ++i)
      permutation[i] = i;
    std::mt19937_64 gen(seed * 0x9E3779B97F4A7C15ull + uint64_t(epoch));
    for (int64_t i = entries - 1; i > 0; --i)
      std::swap(permutation[i], permutation[gen() % uint64_t(i + 1)]);
    cachedEpoch = epoch;
  }
  return permutation[index];
}

std::vector<int64_t> loom::program::blockOffset(loom_mesh_t mesh,
                                                const std::vector<int64_t> &shape,
                                                const Sharding &sharding) {
  std::vector<int64_t> offset(shape.size(), 0);
  for (size_t d = 0; mesh && d < shape.size() && d < sharding.dims.size();
       ++d) {
    int64_t index = 0, parts = 1;
    for (int32_t a : sharding.dims[d]) {
      int64_t n = loom_mesh_axis_size(mesh, a);
      index = index * n + loom_mesh_coordinate(mesh, a);
      parts *= n;
    }
    offset[d] = index * (shape[d] / parts);
  }
  return offset;
}

loom_status_t loom::program::gatherGlobal(loom_mesh_t mesh,
                                          const Sharding &sh,
                                          loom_dtype_t dtype,
                                          const std::vector<int64_t> &local,
                                          const std::vector<int64_t> &global,
                                          char *data, char *out) {
  int64_t count = program::numElements(local);
  size_t bytes = loom_dtype_size(dtype);
  if (!sh.partial.empty())
    if (loom_status_t s = loom_all_reduce(
            mesh, sh.partial.data(), static_cast<int32_t>(sh.partial.size()),
            dtype, sh.partialKind, data, data, count))
      return s;
  std::vector<int32_t> axes;
  for (const auto &d : sh.dims)
    axes.insert(axes.end(), d.begin(), d.end());
  if (axes.empty()) {
    std::memcpy(out, data, count * bytes);
    return nullptr;
  }
  int64_t group = 1;
  for (int32_t a : axes)
    group *= loom_mesh_axis_size(mesh, a);
  std::vector<char> blocks(count * bytes * group);
  if (loom_status_t s =
          loom_all_gather(mesh, axes.data(), static_cast<int32_t>(axes.size()),
                          dtype, data, blocks.data(), count))
    return s;
  std::vector<int64_t> zeros(local.size(), 0);
  for (int64_t k = 0; k < group; ++k) {
    // Member k's coordinates on `axes`, then its block per dimension.
    std::vector<int64_t> coord(axes.size());
    int64_t rest = k;
    for (int64_t i = int64_t(axes.size()) - 1; i >= 0; --i) {
      int64_t n = loom_mesh_axis_size(mesh, axes[i]);
      coord[i] = rest % n;
      rest /= n;
    }
    std::vector<int64_t> offset;
    size_t next = 0;
    for (size_t d = 0; d < local.size(); ++d) {
      int64_t index = 0;
      for (size_t j = 0; d < sh.dims.size() && j < sh.dims[d].size();
           ++j, ++next)
        index = index * loom_mesh_axis_size(mesh, axes[next]) + coord[next];
      offset.push_back(index * local[d]);
    }
    copyBlock(blocks.data() + k * count * bytes, local, zeros, out, global,
              offset, local, bytes);
  }
  return nullptr;
}
