//===- HostTensor.cpp - A tensor in host memory ---------------------------===//

#include "loom/Execution/HostTensor.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/Support/FormatVariadic.h"
#include <cstdlib>
#include <cstring>

using namespace mlir;
using namespace mlir::loom;

int64_t HostTensor::elementBytes(Type element) {
  if (element.isInteger(1))
    return 1;
  return element.getIntOrFloatBitWidth() / 8;
}

HostTensor::HostTensor(RankedTensorType type) : type(type) {
  size = static_cast<size_t>(type.getNumElements() *
                             elementBytes(type.getElementType()));
  size_t allocated = std::max<size_t>(64, (size + 63) / 64 * 64);
  storage = std::shared_ptr<char>(
      static_cast<char *>(std::aligned_alloc(64, allocated)), std::free);
  std::memset(storage.get(), 0, allocated);
}

template <typename T>
static T load(const char *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <typename T>
static void store(char *p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

static const llvm::fltSemantics *semanticsOf(Type t) {
  if (t.isF16())
    return &llvm::APFloat::IEEEhalf();
  if (t.isBF16())
    return &llvm::APFloat::BFloat();
  return nullptr;
}

double HostTensor::getAsDouble(int64_t i) const {
  Type t = getElementType();
  const char *p = data() + i * elementBytes(t);
  if (t.isF32())
    return load<float>(p);
  if (t.isF64())
    return load<double>(p);
  if (const llvm::fltSemantics *sem = semanticsOf(t))
    return llvm::APFloat(*sem, llvm::APInt(16, load<uint16_t>(p)))
        .convertToDouble();
  if (t.isUnsignedInteger())
    return static_cast<double>(static_cast<uint64_t>(getAsInt(i)));
  return static_cast<double>(getAsInt(i));
}

int64_t HostTensor::getAsInt(int64_t i) const {
  Type t = getElementType();
  const char *p = data() + i * elementBytes(t);
  if (isa<FloatType>(t))
    return static_cast<int64_t>(getAsDouble(i));
  bool u = t.isUnsignedInteger() || t.isInteger(1);
  switch (elementBytes(t)) {
  case 1:
    return u ? int64_t(load<uint8_t>(p)) : int64_t(load<int8_t>(p));
  case 2:
    return u ? int64_t(load<uint16_t>(p)) : int64_t(load<int16_t>(p));
  case 4:
    return u ? int64_t(load<uint32_t>(p)) : int64_t(load<int32_t>(p));
  default:
    return load<int64_t>(p);
  }
}

void HostTensor::setFromDouble(int64_t i, double v) {
  Type t = getElementType();
  char *p = data() + i * elementBytes(t);
  if (t.isF32())
    return store<float>(p, static_cast<float>(v));
  if (t.isF64())
    return store<double>(p, v);
  if (const llvm::fltSemantics *sem = semanticsOf(t)) {
    llvm::APFloat f(v);
    bool lost;
    f.convert(*sem, llvm::APFloat::rmNearestTiesToEven, &lost);
    return store<uint16_t>(p, static_cast<uint16_t>(
                                  f.bitcastToAPInt().getZExtValue()));
  }
  if (t.isInteger(1))
    return store<uint8_t>(p, v != 0);
  int64_t x = static_cast<int64_t>(v);
  switch (elementBytes(t)) {
  case 1:
    return store<int8_t>(p, static_cast<int8_t>(x));
  case 2:
    return store<int16_t>(p, static_cast<int16_t>(x));
  case 4:
    return store<int32_t>(p, static_cast<int32_t>(x));
  default:
    return store<int64_t>(p, x);
  }
}

std::optional<HostTensor> HostTensor::fromBytes(RankedTensorType type,
                                                llvm::ArrayRef<char> bytes,
                                                std::string &error) {
  HostTensor t(type);
  if (bytes.size() != t.byteSize()) {
    error = llvm::formatv("{0} bytes given for {1}, which needs {2}",
                          bytes.size(), type, t.byteSize())
                .str();
    return std::nullopt;
  }
  if (!bytes.empty()) // an empty tensor's data may be null
    std::memcpy(t.data(), bytes.data(), bytes.size());
  return t;
}

std::optional<HostTensor> HostTensor::fromAttr(ElementsAttr attr,
                                               std::string &error) {
  auto type = cast<RankedTensorType>(attr.getType());
  HostTensor t(type);
  int64_t width = elementBytes(type.getElementType());
  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    if (type.getElementType().isInteger(1)) {
      int64_t i = 0;
      for (bool b : dense.getValues<bool>())
        t.data()[i++] = b;
      return t;
    }
    ArrayRef<char> raw = dense.getRawData();
    if (dense.isSplat()) {
      for (int64_t i = 0, n = t.getNumElements(); i < n; ++i)
        std::memcpy(t.data() + i * width, raw.data(), width);
      return t;
    }
    std::memcpy(t.data(), raw.data(), t.byteSize());
    return t;
  }
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob) {
      error = "the data of dense_resource<" +
              resource.getRawHandle().getKey().str() + "> is not loaded";
      return std::nullopt;
    }
    ArrayRef<char> data = blob->getData();
    if (data.size() != t.byteSize()) {
      error = llvm::formatv("dense_resource<{0}> has {1} bytes, {2} needs {3}",
                            resource.getRawHandle().getKey(), data.size(),
                            type, t.byteSize())
                  .str();
      return std::nullopt;
    }
    std::memcpy(t.data(), data.data(), data.size());
    return t;
  }
  error = "unsupported elements attribute";
  return std::nullopt;
}

HostTensor HostTensor::convertTo(Type element) const {
  HostTensor out(RankedTensorType::get(type.getShape(), element));
  for (int64_t i = 0, n = getNumElements(); i < n; ++i) {
    if (isa<FloatType>(element) || isa<FloatType>(getElementType()))
      out.setFromDouble(i, getAsDouble(i));
    else
      out.setFromDouble(i, static_cast<double>(getAsInt(i)));
  }
  return out;
}

HostTensor HostTensor::clone() const {
  HostTensor out(type);
  std::memcpy(out.data(), data(), size);
  return out;
}
