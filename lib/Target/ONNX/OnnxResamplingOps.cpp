//===- OnnxResamplingOps.cpp - Resize, Upsample, ConvTranspose ------------===//
//
// Ops that change spatial resolution, built from loom ops that already have
// gradients and sharding rules: nearest-neighbour resizing gathers the
// source index of every output position (ONNX's coordinate transformation
// and rounding, evaluated at import), and a transposed convolution is the
// convolution of the zero-dilated input with the flipped, transposed kernel.
//
//===----------------------------------------------------------------------===//

#include "OnnxImporter.h"

#include "loom/Dialect/Loom/Utils/Utils.h"

#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::onnx_import;

namespace {

ArrayRef<int64_t> shapeOf(Value v) { return Importer::typeOf(v).getShape(); }

/// The source index ONNX's nearest mode reads for output position `i`.
int64_t nearestSource(int64_t i, int64_t in, int64_t out, double scale,
                      StringRef transform, StringRef rounding) {
  double x;
  if (transform == "half_pixel")
    x = (i + 0.5) / scale - 0.5;
  else if (transform == "pytorch_half_pixel")
    x = out > 1 ? (i + 0.5) / scale - 0.5 : 0.0;
  else if (transform == "align_corners")
    x = out > 1 ? i * double(in - 1) / double(out - 1) : 0.0;
  else if (transform == "tf_half_pixel_for_nn")
    x = (i + 0.5) / scale;
  else // asymmetric
    x = i / scale;
  double r;
  if (rounding == "floor")
    r = std::floor(x);
  else if (rounding == "ceil")
    r = std::ceil(x);
  else if (rounding == "round_prefer_ceil")
    r = std::floor(x + 0.5);
  else // round_prefer_floor
    r = x - std::floor(x) == 0.5 ? std::floor(x) : std::round(x);
  return std::clamp<int64_t>(saturatingInt(r), 0, in - 1);
}

/// Resize (opset 10+: X, [roi,] scales or sizes) and Upsample (scales as an
/// attribute or input 1), nearest mode.
LogicalResult importResize(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  ArrayRef<int64_t> in = shapeOf(x);
  int64_t rank = in.size();
  std::string mode = imp.attrString(node, "mode", "nearest");
  if (mode != "nearest")
    return imp.error(node) << "mode '" << mode
                           << "' is not supported (nearest is)";
  bool upsample = node.op_type() == "Upsample";
  std::string transform =
      upsample || imp.opset() < 11
          ? "asymmetric"
          : imp.attrString(node, "coordinate_transformation_mode",
                           "half_pixel");
  std::string rounding = upsample || imp.opset() < 11
                             ? "floor"
                             : imp.attrString(node, "nearest_mode",
                                              "round_prefer_floor");
  if (imp.hasAttr(node, "axes") ||
      imp.attrString(node, "keep_aspect_ratio_policy", "stretch") != "stretch")
    return imp.error(node) << "axes and keep_aspect_ratio_policy are not "
                              "supported";
  SmallVector<double> scales;
  SmallVector<int64_t> out;
  int scalesInput = upsample || imp.opset() < 11 ? 1 : 2;
  if (upsample && imp.hasAttr(node, "scales")) {
    for (float s : imp.attrFloats(node, "scales"))
      scales.push_back(s);
  } else if (imp.hasInput(node, scalesInput)) {
    LOOM_TRY(DenseElementsAttr s, imp.constInput(node, scalesInput, "scales"));
    for (APFloat v : s.getValues<APFloat>())
      scales.push_back(v.convertToDouble());
  }
  if (scales.empty() && !upsample && imp.hasInput(node, 3)) {
    LOOM_TRY(out, imp.constInts(node, 3, "sizes"));
    for (int64_t d = 0; d < std::min<int64_t>(rank, out.size()); ++d)
      scales.push_back(double(out[d]) / double(in[d]));
  } else {
    for (int64_t d = 0; d < std::min<int64_t>(rank, scales.size()); ++d) {
      // In double, checked before it becomes a size (NaN, inf, 1e30).
      double size = std::floor(double(in[d]) * scales[d]);
      if (!(size >= 0 && size <= double(INT32_MAX)))
        return imp.error(node) << "scale " << scales[d] << " gives dimension "
                               << d << " (size " << in[d] << ") a size of "
                               << size << "; sizes are 0 to 2^31 - 1";
      out.push_back(static_cast<int64_t>(size));
    }
  }
  if (int64_t(scales.size()) != rank || int64_t(out.size()) != rank)
    return imp.error(node) << "needs " << rank
                           << " scales or sizes (one per dimension)";
  Value y = x;
  for (int64_t d = 0; d < rank; ++d) {
    if (out[d] == in[d] && scales[d] == 1.0)
      continue;
    if (out[d] <= 0)
      return imp.error(node) << "dimension " << d << " would be empty";
    if (in[d] <= 0)
      return imp.error(node) << "dimension " << d
                             << " of the input is empty: nothing to resize";
    if (failed(imp.checkIndexCount(
            node, out[d], "resizing dimension " + std::to_string(d))))
      return failure();
    SmallVector<int64_t> source;
    for (int64_t i = 0; i < out[d]; ++i)
      source.push_back(
          nearestSource(i, in[d], out[d], scales[d], transform, rounding));
    y = imp.gatherIndices(y, source, d);
  }
  return imp.setResult(node, 0, y);
}

/// ConvTranspose (group 1): insert stride - 1 zeros between input
/// positions, pad by dilation * (kernel - 1) minus the pads (plus
/// output_padding at the end), and convolve with the kernel flipped in every
/// spatial dimension and its two channel dimensions swapped.
LogicalResult importConvTranspose(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  LOOM_TRY(Value w, imp.operand(node, 1));
  LOOM_TRY(Value bias, imp.optionalOperand(node, 2));
  OpBuilder &b = imp.builder();
  Location loc = imp.loc();
  SmallVector<int64_t> xs(shapeOf(x)), ws(shapeOf(w));
  int64_t k = xs.size() - 2;
  if (k < 1 || k > 3 || ws.size() != xs.size())
    return imp.error(node) << "needs 1 to 3 spatial dimensions, input "
                           << x.getType() << " and weights " << w.getType();
  if (imp.attrInt(node, "group", 1) != 1)
    return imp.error(node) << "group > 1 is not supported";
  SmallVector<int64_t> kernel = imp.attrInts(node, "kernel_shape");
  if (!kernel.empty() &&
      ArrayRef<int64_t>(kernel) != ArrayRef<int64_t>(ws).drop_front(2))
    return imp.error(node) << "kernel_shape does not match the weights "
                           << w.getType();
  std::string autoPad = imp.attrString(node, "auto_pad", "NOTSET");
  if (autoPad != "NOTSET" && autoPad != "VALID" && autoPad != "SAME_UPPER" &&
      autoPad != "SAME_LOWER")
    return imp.error(node) << "auto_pad '" << autoPad << "' is not supported";
  auto ints = [&](StringRef name, int64_t n, int64_t dflt) {
    SmallVector<int64_t> v = imp.attrInts(node, name);
    if (v.empty())
      v.assign(n, dflt);
    return v;
  };
  SmallVector<int64_t> strides = ints("strides", k, 1),
                       dilations = ints("dilations", k, 1),
                       pads = ints("pads", 2 * k, 0),
                       outPad = ints("output_padding", k, 0);
  if (autoPad == "VALID")
    pads.assign(2 * k, 0);
  if (int64_t(strides.size()) != k || int64_t(dilations.size()) != k ||
      int64_t(pads.size()) != 2 * k || int64_t(outPad.size()) != k)
    return imp.error(node) << "strides, dilations, pads and output_padding "
                              "do not match "
                           << k << " spatial dimensions";
  // output_shape (or SAME_*: input * stride) fixes the pads (ONNX's rule:
  // the odd unit of padding goes to the end for SAME_UPPER, else first).
  SmallVector<int64_t> outShape = imp.attrInts(node, "output_shape");
  if (outShape.empty() && autoPad.rfind("SAME", 0) == 0)
    for (int64_t i = 0; i < k; ++i)
      outShape.push_back(xs[2 + i] * strides[i]);
  if (int64_t(outShape.size()) == k + 2)
    outShape.erase(outShape.begin(), outShape.begin() + 2);
  if (!outShape.empty()) {
    if (int64_t(outShape.size()) != k)
      return imp.error(node) << "output_shape does not match " << k
                             << " spatial dimensions";
    for (int64_t i = 0; i < k; ++i) {
      int64_t total = strides[i] * (xs[2 + i] - 1) + outPad[i] +
                      (ws[2 + i] - 1) * dilations[i] + 1 - outShape[i];
      // Negative: the output is larger (the extra at the end, as ONNX's
      // reference rounds total / 2 down).
      int64_t half = llvm::divideFloorSigned(total, int64_t(2));
      pads[i] = autoPad == "SAME_UPPER" ? half : total - half;
      pads[k + i] = total - pads[i];
    }
  }
  Type element = Importer::typeOf(x).getElementType();
  for (int64_t i = 0; i < k; ++i) {
    int64_t d = 2 + i, s = strides[i];
    if (s < 1)
      return imp.error(node) << "stride " << s << " is not supported";
    if (s > 1) {
      // [.., H, ..] -> [.., H, s, ..] (zeros after each element) -> [.., H*s]
      // -> the first (H - 1) * s + 1.
      SmallVector<int64_t> col(xs);
      col.insert(col.begin() + d + 1, 1);
      Value one = imp.reshape(x, col);
      SmallVector<int64_t> zerosShape(col);
      zerosShape[d + 1] = s - 1;
      Value zeros = imp.constant(DenseElementsAttr::get(
          RankedTensorType::get(zerosShape, element),
          scalarAttr(element, 0.0)));
      Value spread = ConcatOp::create(b, loc, ValueRange{one, zeros},
                                      b.getI64IntegerAttr(d + 1));
      SmallVector<int64_t> flat(xs);
      flat[d] = xs[d] * s;
      x = imp.reshape(spread, flat);
      SmallVector<int64_t> start(flat.size(), 0), limit(flat),
          step(flat.size(), 1);
      limit[d] = (xs[d] - 1) * s + 1;
      x = SliceOp::create(b, loc, x, b.getDenseI64ArrayAttr(start),
                          b.getDenseI64ArrayAttr(limit),
                          b.getDenseI64ArrayAttr(step));
      xs[d] = limit[d];
    }
  }
  // Pads of the equivalent convolution; negative ones crop.
  SmallVector<int64_t> low(xs.size(), 0), high(xs.size(), 0);
  for (int64_t i = 0; i < k; ++i) {
    int64_t d = 2 + i, reach = dilations[i] * (ws[d] - 1);
    low[d] = reach - pads[i];
    high[d] = reach - pads[k + i] + outPad[i];
    if (xs[d] + std::min<int64_t>(low[d], 0) + std::min<int64_t>(high[d], 0) <= 0)
      return imp.error(node) << "pads remove all of spatial dimension " << i;
  }
  LOOM_TRY(x, imp.padOrCrop(node, x, low, high, 0.0));
  // [Ci, Co, k...] -> [Co, Ci, k...], each spatial dimension reversed.
  SmallVector<int64_t> perm = {1, 0};
  for (int64_t i = 0; i < k; ++i)
    perm.push_back(2 + i);
  Value filter = TransposeOp::create(b, loc, w, perm);
  for (int64_t i = 0; i < k; ++i) {
    int64_t size = ws[2 + i];
    if (failed(imp.checkIndexCount(node, size,
                                   "reversing the kernel's spatial "
                                   "dimension " +
                                       std::to_string(i))))
      return failure();
    SmallVector<int64_t> reversed;
    for (int64_t j = size - 1; j >= 0; --j)
      reversed.push_back(j);
    filter = imp.gatherIndices(filter, reversed, 2 + i);
  }
  SmallVector<int64_t> ones(k, 1), zeros(2 * k, 0);
  Value y = ConvOp::create(b, loc, x, filter, b.getDenseI64ArrayAttr(ones),
                           b.getDenseI64ArrayAttr(zeros),
                           b.getDenseI64ArrayAttr(dilations),
                           b.getI64IntegerAttr(1));
  if (bias)
    y = imp.addChannelBias(y, bias);
  return imp.setResult(node, 0, y);
}

} // namespace

void mlir::loom::onnx_import::registerResamplingOps(OpTable &t) {
  t["Resize"] = {importResize,
                 {"mode", "coordinate_transformation_mode", "nearest_mode",
                  "cubic_coeff_a", "exclude_outside", "extrapolation_value",
                  "antialias", "axes", "keep_aspect_ratio_policy"}};
  t["Upsample"] = {importResize, {"mode", "scales"}};
  t["ConvTranspose"] = {importConvTranspose,
                        {"auto_pad", "dilations", "group", "kernel_shape",
                         "output_padding", "output_shape", "pads", "strides"}};
}
