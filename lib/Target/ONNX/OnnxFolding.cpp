//===- OnnxFolding.cpp - Import-time evaluation of shape computations -----===//
//
// Exporters compute shapes at run time (Shape -> Gather -> Concat ->
// Reshape). With static shapes these are constants; folding them here lets
// handlers read reshape targets, slice bounds, pads and axes as numbers.
// Float arithmetic is folded in the element type's own precision (f32 in
// float, f64 in double) and not at all for f16/bf16.
//
//===----------------------------------------------------------------------===//

#include "OnnxImporter.h"

#include "mlir/IR/BuiltinTypes.h"
#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::onnx_import;

//===----------------------------------------------------------------------===//
// Shape helpers shared with the handlers
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<int64_t>>
mlir::loom::onnx_import::reshapeTarget(ArrayRef<int64_t> input,
                                       ArrayRef<int64_t> target,
                                       bool allowZero, std::string &error) {
  SmallVector<int64_t> shape(target);
  int64_t inferred = -1, known = 1;
  int64_t total = 1;
  for (int64_t d : input)
    total *= d;
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (d == 0 && !allowZero) {
      if (i >= input.size()) {
        error = "shape entry " + std::to_string(i) +
                " is 0 (copy) but the input has rank " +
                std::to_string(input.size());
        return failure();
      }
      d = input[i];
    }
    if (d == -1) {
      if (inferred >= 0) {
        error = "the shape has more than one -1";
        return failure();
      }
      inferred = i;
      continue;
    }
    if (d < 0) {
      error = "shape entry " + std::to_string(d) + " is negative";
      return failure();
    }
    if (d != 0 && known > std::numeric_limits<int64_t>::max() / d) {
      error = "the shape's element count overflows 64 bits";
      return failure();
    }
    known *= d;
  }
  if (inferred >= 0) {
    if (known == 0 || total % known != 0) {
      error = "cannot infer the -1 entry: " + std::to_string(total) +
              " elements do not divide into blocks of " + std::to_string(known);
      return failure();
    }
    shape[inferred] = total / known;
    known *= shape[inferred];
  }
  if (known != total) {
    error = "cannot reshape " + std::to_string(total) + " elements into " +
            std::to_string(known);
    return failure();
  }
  return shape;
}

FailureOr<SmallVector<int64_t>>
mlir::loom::onnx_import::broadcastShape(ArrayRef<int64_t> a,
                                        ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x != y && x != 1 && y != 1)
      return failure();
    out[i] = x == 1 ? y : x;
  }
  return out;
}

SliceRange mlir::loom::onnx_import::normalizeSlice(int64_t start, int64_t end,
                                                   int64_t step, int64_t size) {
  auto clampIndex = [&](int64_t v, int64_t lo, int64_t hi) {
    if (v < 0)
      v += size;
    return std::min(std::max(v, lo), hi);
  };
  SliceRange r{0, 0, step, 0};
  if (step > 0) {
    r.start = clampIndex(start, 0, size);
    r.end = clampIndex(end, 0, size);
    r.count = r.end > r.start ? (r.end - r.start + step - 1) / step : 0;
  } else {
    r.start = clampIndex(start, 0, size - 1);
    r.end = clampIndex(end, -1, size - 1);
    // An end below -size means "through index 0".
    if (end < -size)
      r.end = -1;
    r.count = r.start > r.end ? (r.start - r.end - step - 1) / (-step) : 0;
  }
  return r;
}

//===----------------------------------------------------------------------===//
// Host tensors
//===----------------------------------------------------------------------===//

namespace {

constexpr int64_t kMaxFoldElements = 1 << 16;

/// The element count of `shape` when it is at most kMaxFoldElements, counted
/// with overflow checks (a shape from the file, as Expand's or a splat's, may
/// be [3, 2^62], whose plain product wraps); none otherwise.
std::optional<int64_t> foldableCount(ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0 || (d != 0 && count > kMaxFoldElements / d))
      return std::nullopt;
    count *= d;
  }
  if (count > kMaxFoldElements)
    return std::nullopt;
  return count;
}

struct Host {
  SmallVector<int64_t> shape;
  Type element;
  SmallVector<double> f;  // float elements
  SmallVector<int64_t> i; // integer and boolean elements

  bool isFloat() const { return isa<FloatType>(element); }
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  double getF(int64_t k) const { return isFloat() ? f[k] : double(i[k]); }
  int64_t getI(int64_t k) const { return isFloat() ? int64_t(f[k]) : i[k]; }

  static Host from(DenseElementsAttr attr) {
    Host h;
    h.shape.assign(attr.getType().getShape().begin(),
                   attr.getType().getShape().end());
    h.element = attr.getElementType();
    if (h.isFloat()) {
      for (const APFloat &v : attr.getValues<APFloat>())
        h.f.push_back(v.convertToDouble());
    } else if (h.element.isInteger(1)) {
      for (bool v : attr.getValues<bool>())
        h.i.push_back(v);
    } else {
      bool isUnsigned = h.element.isUnsignedInteger();
      for (const APInt &v : attr.getValues<APInt>())
        h.i.push_back(isUnsigned ? static_cast<int64_t>(v.getZExtValue())
                                 : v.getSExtValue());
    }
    return h;
  }

  /// A zero tensor of `shape`, or none when it would hold more than
  /// kMaxFoldElements.
  static std::optional<Host> like(ArrayRef<int64_t> shape, Type element) {
    std::optional<int64_t> count = foldableCount(shape);
    if (!count)
      return std::nullopt;
    Host h;
    h.shape.assign(shape.begin(), shape.end());
    h.element = element;
    if (h.isFloat())
      h.f.resize(*count);
    else
      h.i.resize(*count);
    return h;
  }

  void set(int64_t k, double v) {
    if (isFloat())
      f[k] = v;
    else
      i[k] = saturatingInt(v);
  }
  void copyFrom(int64_t k, const Host &src, int64_t srcK) {
    if (isFloat())
      f[k] = src.f[srcK];
    else
      i[k] = src.i[srcK];
  }

  DenseElementsAttr toAttr() const {
    auto type = RankedTensorType::get(shape, element);
    if (element.isInteger(1)) {
      SmallVector<bool> bits(i.begin(), i.end());
      return DenseElementsAttr::get(type, bits);
    }
    if (auto ft = dyn_cast<FloatType>(element)) {
      SmallVector<APFloat> vals;
      for (double v : f) {
        APFloat a(v);
        bool lost;
        a.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
        vals.push_back(a);
      }
      return DenseElementsAttr::get(type, vals);
    }
    SmallVector<APInt> vals;
    for (int64_t v : i)
      vals.push_back(APInt(element.getIntOrFloatBitWidth(), v,
                           /*isSigned=*/!element.isUnsignedInteger(),
                           /*implicitTrunc=*/true));
    return DenseElementsAttr::get(type, vals);
  }
};

SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> s(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    s[d] = s[d + 1] * shape[d + 1];
  return s;
}

/// Linear index into a tensor of `shape` broadcast to `out`.
int64_t broadcastIndex(ArrayRef<int64_t> outIndex, ArrayRef<int64_t> shape) {
  int64_t offset = outIndex.size() - shape.size();
  int64_t idx = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    idx = idx * shape[d] + (shape[d] == 1 ? 0 : outIndex[offset + d]);
  return idx;
}

void unravel(int64_t k, ArrayRef<int64_t> shape, SmallVectorImpl<int64_t> &idx) {
  idx.assign(shape.size(), 0);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    idx[d] = k % shape[d];
    k /= shape[d];
  }
}

using Results = std::optional<SmallVector<DenseElementsAttr>>;

Results one(const Host &h) { return SmallVector<DenseElementsAttr>{h.toAttr()}; }

/// Elementwise op over broadcast inputs. Integer inputs go through `fnI`
/// (exact int64 arithmetic), float inputs through `fnF`.
template <typename FnF, typename FnI>
Results elementwise(ArrayRef<Host> in, Type outElement, FnF fnF, FnI fnI) {
  SmallVector<int64_t> shape;
  bool allInt = true;
  for (const Host &h : in) {
    FailureOr<SmallVector<int64_t>> s = broadcastShape(shape, h.shape);
    if (failed(s))
      return std::nullopt;
    shape = *s;
    allInt &= !h.isFloat();
  }
  std::optional<Host> made = Host::like(shape, outElement);
  if (!made)
    return std::nullopt;
  Host &out = *made;
  SmallVector<int64_t> idx;
  SmallVector<double> argsF(in.size());
  SmallVector<int64_t> argsI(in.size());
  for (int64_t k = 0; k < out.numel(); ++k) {
    unravel(k, shape, idx);
    for (size_t j = 0; j < in.size(); ++j) {
      int64_t src = broadcastIndex(idx, in[j].shape);
      if (allInt)
        argsI[j] = in[j].i[src];
      else
        argsF[j] = in[j].getF(src);
    }
    if (allInt) {
      int64_t v = fnI(ArrayRef<int64_t>(argsI));
      if (out.isFloat())
        out.f[k] = static_cast<double>(v);
      else
        out.i[k] = v;
    } else {
      out.set(k, fnF(ArrayRef<double>(argsF)));
    }
  }
  return one(out);
}

/// The same function for both paths.
template <typename Fn>
Results elementwise(ArrayRef<Host> in, Type outElement, Fn fn) {
  return elementwise(
      in, outElement, [&](ArrayRef<double> a) { return fn(a); },
      [&](ArrayRef<int64_t> a) {
        SmallVector<double> d(a.begin(), a.end());
        return saturatingInt(fn(ArrayRef<double>(d)));
      });
}

/// Arithmetic is folded only where the result is exact in the element type.
bool foldableArithmetic(Type element) {
  // Unsigned arithmetic wraps differently; leave it to run time.
  return element.isSignlessInteger() || element.isF32() || element.isF64();
}

double roundTo(Type element, double v) {
  if (element.isF32())
    return static_cast<double>(static_cast<float>(v));
  return v;
}

/// Constant: its value (sparse and string constants are not folded; the
/// handler reports them).
Results foldConstant(Importer &importer, const Node &node) {
  MLIRContext *ctx = importer.context();
  if (const auto *a = importer.attr(node, "value")) {
    FailureOr<ElementsAttr> attr = importer.tensorAttr(a->t(), false);
    if (failed(attr))
      return std::nullopt;
    return SmallVector<DenseElementsAttr>{cast<DenseElementsAttr>(*attr)};
  }
  Builder b(ctx);
  if (const auto *a = importer.attr(node, "value_float"))
    return SmallVector<DenseElementsAttr>{DenseElementsAttr::get(
        RankedTensorType::get({}, b.getF32Type()), a->f())};
  if (const auto *a = importer.attr(node, "value_int"))
    return SmallVector<DenseElementsAttr>{DenseElementsAttr::get(
        RankedTensorType::get({}, b.getI64Type()), a->i())};
  if (const auto *a = importer.attr(node, "value_floats")) {
    SmallVector<float> v(a->floats().begin(), a->floats().end());
    return SmallVector<DenseElementsAttr>{DenseElementsAttr::get(
        RankedTensorType::get({(int64_t)v.size()}, b.getF32Type()),
        ArrayRef<float>(v))};
  }
  if (const auto *a = importer.attr(node, "value_ints")) {
    SmallVector<int64_t> v(a->ints().begin(), a->ints().end());
    return SmallVector<DenseElementsAttr>{DenseElementsAttr::get(
        RankedTensorType::get({(int64_t)v.size()}, b.getI64Type()),
        ArrayRef<int64_t>(v))};
  }
  return std::nullopt; // sparse/string constants: the handler reports it
}

/// Shape and Size of a statically shaped input.
Results foldShapeOf(Importer &importer, const Node &node) {
  StringRef op = node.op_type();
  MLIRContext *ctx = importer.context();
  FailureOr<RankedTensorType> type = importer.inputType(node, 0);
  if (failed(type))
    return std::nullopt;
  Builder b(ctx);
  if (op == "Size")
    return SmallVector<DenseElementsAttr>{DenseElementsAttr::get(
        RankedTensorType::get({}, b.getI64Type()),
        static_cast<int64_t>(type->getNumElements()))};
  int64_t rank = type->getRank();
  int64_t start = importer.attrInt(node, "start", 0);
  int64_t end = importer.attrInt(node, "end", rank);
  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  SmallVector<int64_t> dims;
  for (int64_t d = start; d < end; ++d)
    dims.push_back(type->getDimSize(d));
  return SmallVector<DenseElementsAttr>{DenseElementsAttr::get(
      RankedTensorType::get({(int64_t)dims.size()}, b.getI64Type()),
      ArrayRef<int64_t>(dims))};
}

/// Elementwise arithmetic, comparisons, casts, Range and constants of a
/// shape on known inputs.
Results foldArithmetic(Importer &importer, const Node &node,
                       ArrayRef<DenseElementsAttr> inputs,
                       ArrayRef<Host> in) {
  StringRef op = node.op_type();
  MLIRContext *ctx = importer.context();
  auto present = [&](size_t k) { return k < in.size() && in[k].element; };

  if (op == "Identity")
    return SmallVector<DenseElementsAttr>{inputs[0]};

  if (op == "ConstantOfShape") {
    Builder b(ctx);
    Attribute value = FloatAttr::get(b.getF32Type(), 0.0);
    if (const auto *a = importer.attr(node, "value")) {
      FailureOr<ElementsAttr> attr = importer.tensorAttr(a->t(), false);
      if (failed(attr) || cast<DenseElementsAttr>(*attr).getNumElements() != 1)
        return std::nullopt;
      value = cast<DenseElementsAttr>(*attr).getSplatValue<Attribute>();
    }
    auto type = RankedTensorType::get(in[0].i, cast<TypedAttr>(value).getType());
    return SmallVector<DenseElementsAttr>{DenseElementsAttr::get(type, value)};
  }

  if (op == "Cast") {
    Type to = convertElementType(ctx, importer.attrInt(node, "to", 0));
    if (!to || !present(0))
      return std::nullopt;
    std::optional<Host> made = Host::like(in[0].shape, to);
    if (!made)
      return std::nullopt;
    Host &out = *made;
    for (int64_t k = 0; k < out.numel(); ++k) {
      double v = in[0].getF(k);
      if (to.isInteger(1))
        v = v != 0;
      else if (!isa<FloatType>(to))
        v = std::trunc(v);
      out.set(k, roundTo(to, v));
    }
    return one(out);
  }

  auto binaryArith = [&](auto fnF, auto fnI) -> Results {
    if (!present(0) || !present(1) || !foldableArithmetic(in[0].element))
      return std::nullopt;
    Type element = in[0].element;
    return elementwise(
        in, element,
        [&](ArrayRef<double> a) { return roundTo(element, fnF(a[0], a[1])); },
        [&](ArrayRef<int64_t> a) { return fnI(a[0], a[1]); });
  };
  if (op == "Add")
    return binaryArith([](double a, double b) { return a + b; },
                       [](int64_t a, int64_t b) {
                         // Integers wrap, as at run time (signed overflow
                         // in C++ is undefined: libFuzzer found a Mul).
                         return int64_t(uint64_t(a) + uint64_t(b));
                       });
  if (op == "Sub")
    return binaryArith([](double a, double b) { return a - b; },
                       [](int64_t a, int64_t b) {
                         return int64_t(uint64_t(a) - uint64_t(b));
                       });
  if (op == "Mul")
    return binaryArith([](double a, double b) { return a * b; },
                       [](int64_t a, int64_t b) {
                         return int64_t(uint64_t(a) * uint64_t(b));
                       });
  if (op == "Div") {
    if (present(1) && !isa<FloatType>(in[1].element) &&
        llvm::is_contained(in[1].i, 0))
      return std::nullopt; // integer division by zero: leave it to run time
    return binaryArith([](double a, double b) { return a / b; },
                       [](int64_t a, int64_t b) {
                         // INT64_MIN / -1 wraps to INT64_MIN.
                         return b == -1 ? int64_t(0 - uint64_t(a)) : a / b;
                       });
  }
  if ((op == "Max" || op == "Min") && in.size() == 2 && present(0) &&
      present(1) && foldableArithmetic(in[0].element)) {
    bool isMax = op == "Max";
    return binaryArith(
        [&](double a, double b) { return isMax ? std::max(a, b) : std::min(a, b); },
        [&](int64_t a, int64_t b) { return isMax ? std::max(a, b) : std::min(a, b); });
  }
  if (op == "Neg" && present(0) && foldableArithmetic(in[0].element))
    return elementwise(
        in, in[0].element, [](ArrayRef<double> a) { return -a[0]; },
        [](ArrayRef<int64_t> a) { return -a[0]; });
  if (op == "Abs" && present(0) && foldableArithmetic(in[0].element))
    return elementwise(
        in, in[0].element, [](ArrayRef<double> a) { return std::fabs(a[0]); },
        [](ArrayRef<int64_t> a) { return a[0] < 0 ? -a[0] : a[0]; });

  Type i1 = IntegerType::get(ctx, 1);
  auto compare = [&](auto fn) -> Results {
    if (!present(0) || !present(1))
      return std::nullopt;
    return elementwise(in, i1, [&](ArrayRef<double> a) {
      return fn(a[0], a[1]) ? 1.0 : 0.0;
    });
  };
  if (op == "Equal")
    return compare([](double a, double b) { return a == b; });
  if (op == "Less")
    return compare([](double a, double b) { return a < b; });
  if (op == "Greater")
    return compare([](double a, double b) { return a > b; });
  if (op == "LessOrEqual")
    return compare([](double a, double b) { return a <= b; });
  if (op == "GreaterOrEqual")
    return compare([](double a, double b) { return a >= b; });
  if (op == "And")
    return compare([](double a, double b) { return a != 0 && b != 0; });
  if (op == "Or")
    return compare([](double a, double b) { return a != 0 || b != 0; });
  if (op == "Not" && present(0))
    return elementwise(in, i1, [](ArrayRef<double> a) { return a[0] == 0 ? 1.0 : 0.0; });
  if (op == "Where" && present(0) && present(1) && present(2))
    return elementwise(
        in, in[1].element,
        [](ArrayRef<double> a) { return a[0] != 0 ? a[1] : a[2]; },
        [](ArrayRef<int64_t> a) { return a[0] != 0 ? a[1] : a[2]; });

  if (op == "Range" && present(0) && present(1) && present(2)) {
    double start = in[0].getF(0), limit = in[1].getF(0), delta = in[2].getF(0);
    if (delta == 0)
      return std::nullopt;
    int64_t n = std::max<int64_t>(
        saturatingInt(std::ceil((limit - start) / delta)), 0);
    if (n > kMaxFoldElements)
      return std::nullopt;
    std::optional<Host> made = Host::like({n}, in[0].element);
    if (!made)
      return std::nullopt;
    Host &out = *made;
    for (int64_t k = 0; k < n; ++k)
      out.set(k, roundTo(in[0].element, start + k * delta));
    return one(out);
  }
  return std::nullopt;
}

/// Slice of known data by known starts, ends, axes and steps.
Results foldSlice(ArrayRef<Host> in) {
  auto present = [&](size_t k) { return k < in.size() && in[k].element; };
  const Host &x = in[0];
  int64_t rank = x.shape.size();
  SmallVector<int64_t> starts = in[1].i, ends = in[2].i;
  SmallVector<int64_t> axes, steps;
  if (present(3))
    axes = in[3].i;
  else
    for (int64_t d = 0; d < static_cast<int64_t>(starts.size()); ++d)
      axes.push_back(d);
  if (present(4))
    steps = in[4].i;
  else
    steps.assign(starts.size(), 1);
  SmallVector<SliceRange> ranges;
  for (int64_t d = 0; d < rank; ++d)
    ranges.push_back({0, x.shape[d], 1, x.shape[d]});
  for (size_t j = 0; j < axes.size(); ++j) {
    int64_t a = axes[j] < 0 ? axes[j] + rank : axes[j];
    if (a < 0 || a >= rank || steps[j] == 0)
      return std::nullopt;
    ranges[a] = normalizeSlice(starts[j], ends[j], steps[j], x.shape[a]);
  }
  SmallVector<int64_t> shape;
  for (const SliceRange &r : ranges)
    shape.push_back(r.count);
  std::optional<Host> made = Host::like(shape, x.element);
  if (!made)
    return std::nullopt;
  Host &out = *made;
  SmallVector<int64_t> idx, strides = stridesOf(x.shape);
  for (int64_t k = 0; k < out.numel(); ++k) {
    unravel(k, shape, idx);
    int64_t src = 0;
    for (int64_t d = 0; d < rank; ++d)
      src += (ranges[d].start + idx[d] * ranges[d].step) * strides[d];
    out.copyFrom(k, x, src);
  }
  return one(out);
}

/// Data movement on known tensors: Reshape, (Un)squeeze, Concat, Gather,
/// Slice, Expand.
Results foldMovement(Importer &importer, const Node &node, ArrayRef<Host> in) {
  StringRef op = node.op_type();
  auto present = [&](size_t k) { return k < in.size() && in[k].element; };
  if (!present(0))
    return std::nullopt;
  const Host &x = in[0];
  int64_t rank = x.shape.size();

  if (op == "Reshape" && present(1)) {
    std::string error;
    FailureOr<SmallVector<int64_t>> shape = reshapeTarget(
        x.shape, in[1].i, importer.attrInt(node, "allowzero", 0) != 0, error);
    if (failed(shape))
      return std::nullopt;
    Host out = x;
    out.shape = *shape;
    return one(out);
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    SmallVector<int64_t> axes = present(1) ? in[1].i : importer.attrInts(node, "axes");
    Host out = x;
    if (op == "Unsqueeze") {
      int64_t outRank = rank + axes.size();
      for (int64_t &a : axes)
        if (a < 0)
          a += outRank;
      llvm::sort(axes);
      for (int64_t a : axes) {
        if (a < 0 || a > static_cast<int64_t>(out.shape.size()))
          return std::nullopt;
        out.shape.insert(out.shape.begin() + a, 1);
      }
    } else {
      if (axes.empty()) {
        out.shape.clear();
        for (int64_t d : x.shape)
          if (d != 1)
            out.shape.push_back(d);
      } else {
        for (int64_t &a : axes)
          if (a < 0)
            a += rank;
        out.shape.clear();
        for (int64_t d = 0; d < rank; ++d)
          if (!llvm::is_contained(axes, d))
            out.shape.push_back(x.shape[d]);
      }
    }
    return one(out);
  }
  if (op == "Concat") {
    int64_t axis = importer.attrInt(node, "axis", 0);
    if (axis < 0)
      axis += rank;
    if (axis < 0 || axis >= rank)
      return std::nullopt;
    SmallVector<int64_t> shape = x.shape;
    shape[axis] = 0;
    // Not folded unless the inputs agree off the axis and in element type
    // (the op's import then says what is wrong).
    for (const Host &h : in) {
      if (!h.element || h.element != x.element ||
          h.shape.size() != x.shape.size())
        return std::nullopt;
      for (int64_t d = 0; d < rank; ++d)
        if (d != axis && h.shape[d] != x.shape[d])
          return std::nullopt;
      shape[axis] += h.shape[axis];
    }
    std::optional<Host> made = Host::like(shape, x.element);
    if (!made)
      return std::nullopt;
    Host &out = *made;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d)
      outer *= shape[d];
    for (int64_t d = axis + 1; d < rank; ++d)
      inner *= shape[d];
    int64_t k = 0;
    for (int64_t o = 0; o < outer; ++o)
      for (const Host &h : in)
        for (int64_t j = 0; j < h.shape[axis] * inner; ++j)
          out.copyFrom(k++, h, o * h.shape[axis] * inner + j);
    return one(out);
  }
  if (op == "Gather" && present(1)) {
    int64_t axis = importer.attrInt(node, "axis", 0);
    if (axis < 0)
      axis += rank;
    if (axis < 0 || axis >= rank)
      return std::nullopt;
    const Host &idx = in[1];
    SmallVector<int64_t> shape(x.shape.begin(), x.shape.begin() + axis);
    llvm::append_range(shape, idx.shape);
    shape.append(x.shape.begin() + axis + 1, x.shape.end());
    std::optional<Host> made = Host::like(shape, x.element);
    if (!made)
      return std::nullopt;
    Host &out = *made;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d)
      outer *= x.shape[d];
    for (int64_t d = axis + 1; d < rank; ++d)
      inner *= x.shape[d];
    int64_t k = 0;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < idx.numel(); ++j) {
        int64_t row = idx.i[j] < 0 ? idx.i[j] + x.shape[axis] : idx.i[j];
        if (row < 0 || row >= x.shape[axis])
          return std::nullopt;
        for (int64_t t = 0; t < inner; ++t)
          out.copyFrom(k++, x, (o * x.shape[axis] + row) * inner + t);
      }
    return one(out);
  }
  if (op == "Slice" && present(1) && present(2))
    return foldSlice(in);
  if (op == "Expand" && present(1)) {
    FailureOr<SmallVector<int64_t>> shape = broadcastShape(x.shape, in[1].i);
    if (failed(shape))
      return std::nullopt;
    std::optional<Host> target = Host::like(*shape, x.element);
    if (!target)
      return std::nullopt;
    return elementwise(
        {x, *target}, x.element,
        [](ArrayRef<double> a) { return a[0]; },
        [](ArrayRef<int64_t> a) { return a[0]; });
  }
  return std::nullopt;
}

} // namespace

std::optional<SmallVector<DenseElementsAttr>>
mlir::loom::onnx_import::foldNode(Importer &importer, const Node &node,
                                  ArrayRef<DenseElementsAttr> inputs) {
  StringRef op = node.op_type();
  if (op == "Constant")
    return foldConstant(importer, node);
  if (op == "Shape" || op == "Size")
    return foldShapeOf(importer, node);
  SmallVector<Host> in;
  for (DenseElementsAttr attr : inputs) {
    if (!attr) {
      in.push_back(Host());
      continue;
    }
    // A splat of shape [3, 2^62] would otherwise size the copy below.
    if (!foldableCount(attr.getType().getShape()))
      return std::nullopt;
    in.push_back(Host::from(attr));
  }
  if (Results r = foldArithmetic(importer, node, inputs, in))
    return r;
  return foldMovement(importer, node, in);
}
