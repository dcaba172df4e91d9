//===- HostTensor.h - A tensor in host memory -------------------*- C++ -*-===//

#ifndef LOOM_EXECUTION_HOSTTENSOR_H
#define LOOM_EXECUTION_HOSTTENSOR_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <memory>
#include <string>

namespace mlir::loom {

/// A statically shaped tensor in 64-byte aligned host memory, laid out
/// row-major with one byte per i1 element (as compiled code expects).
class HostTensor {
public:
  HostTensor() = default;
  /// Zero-filled.
  explicit HostTensor(RankedTensorType type);

  RankedTensorType getType() const { return type; }
  Type getElementType() const { return type.getElementType(); }
  llvm::ArrayRef<int64_t> getShape() const { return type.getShape(); }
  int64_t getNumElements() const { return type.getNumElements(); }
  static int64_t elementBytes(Type element);
  size_t byteSize() const { return size; }
  char *data() { return storage.get(); }
  const char *data() const { return storage.get(); }
  explicit operator bool() const { return static_cast<bool>(type); }

  /// Element `i` converted to double (integers exactly up to 2^53).
  double getAsDouble(int64_t i) const;
  /// Element `i` as a signed/unsigned integer, for integer and i1 types.
  int64_t getAsInt(int64_t i) const;
  void setFromDouble(int64_t i, double v);

  /// The elements of a dense or dense_resource attribute.
  static std::optional<HostTensor> fromAttr(ElementsAttr attr,
                                            std::string &error);
  /// Raw little-endian bytes (one byte per i1).
  static std::optional<HostTensor> fromBytes(RankedTensorType type,
                                             llvm::ArrayRef<char> bytes,
                                             std::string &error);
  /// A copy converted to `element` (for inputs given in a wider type).
  HostTensor convertTo(Type element) const;
  HostTensor clone() const;

private:
  RankedTensorType type;
  size_t size = 0;
  std::shared_ptr<char> storage;
};

} // namespace mlir::loom

#endif // LOOM_EXECUTION_HOSTTENSOR_H
