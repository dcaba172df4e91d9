//===- OnnxNNOps.cpp - ONNX contractions, windows, norms, losses -> loom ---===//

#include "OnnxImporter.h"

#include <numeric>

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::onnx_import;

namespace {

Type elementOf(Value v) { return Importer::typeOf(v).getElementType(); }
ArrayRef<int64_t> shapeOf(Value v) { return Importer::typeOf(v).getShape(); }

//===----------------------------------------------------------------------===//
// MatMul, Gemm
//===----------------------------------------------------------------------===//

LogicalResult importMatMul(Importer &imp, const Node &node) {
  LOOM_TRY(Value a, imp.operand(node, 0));
  LOOM_TRY(Value c, imp.operand(node, 1));
  SmallVector<int64_t> as(shapeOf(a)), bs(shapeOf(c));
  if (as.empty() || bs.empty())
    return imp.error(node) << "MatMul operands must have rank >= 1";
  // numpy matmul: a vector operand gains a dimension that is dropped again.
  bool aVec = as.size() == 1, bVec = bs.size() == 1;
  // [..., M, K] x [K, N] (a Linear layer on a batch): one [B*M, K] x [K, N]
  // product instead of broadcasting the weights over the batch.
  if (as.size() > 2 && bs.size() == 2) {
    int64_t rows = 1;
    for (int64_t d : ArrayRef<int64_t>(as).drop_back())
      rows *= d;
    Value flat = imp.reshape(a, {rows, as.back()});
    Value r = DotGeneralOp::create(imp.builder(), imp.loc(), flat, c);
    SmallVector<int64_t> out(as);
    out.back() = bs.back();
    return imp.setResult(node, 0, imp.reshape(r, out));
  }
  if (aVec)
    as.insert(as.begin(), 1);
  if (bVec)
    bs.push_back(1);
  ArrayRef<int64_t> aBatch = ArrayRef<int64_t>(as).drop_back(2);
  ArrayRef<int64_t> bBatch = ArrayRef<int64_t>(bs).drop_back(2);
  FailureOr<SmallVector<int64_t>> batch = broadcastShape(aBatch, bBatch);
  if (failed(batch))
    return imp.error(node) << "batch dimensions of " << a.getType() << " and "
                           << c.getType() << " do not broadcast";
  SmallVector<int64_t> aFull(*batch), bFull(*batch);
  aFull.append({as[as.size() - 2], as.back()});
  bFull.append({bs[bs.size() - 2], bs.back()});
  a = imp.broadcastTo(imp.reshape(a, as), aFull);
  c = imp.broadcastTo(imp.reshape(c, bs), bFull);
  Value r = DotGeneralOp::create(imp.builder(), imp.loc(), a, c);
  SmallVector<int64_t> out(*batch);
  if (!aVec)
    out.push_back(aFull[aFull.size() - 2]);
  if (!bVec)
    out.push_back(bFull.back());
  return imp.setResult(node, 0, imp.reshape(r, out));
}

LogicalResult importGemm(Importer &imp, const Node &node) {
  LOOM_TRY(Value a, imp.operand(node, 0));
  LOOM_TRY(Value c, imp.operand(node, 1));
  LOOM_TRY(Value bias, imp.optionalOperand(node, 2));
  OpBuilder &b = imp.builder();
  bool transA = imp.attrInt(node, "transA", 0) != 0;
  bool transB = imp.attrInt(node, "transB", 0) != 0;
  double alpha = imp.attrFloat(node, "alpha", 1.0f);
  double beta = imp.attrFloat(node, "beta", 1.0f);
  RankedTensorType at = Importer::typeOf(a), ct = Importer::typeOf(c);
  if (at.getRank() != 2 || ct.getRank() != 2)
    return imp.error(node) << "A and B must be matrices";
  int64_t ka = at.getDimSize(transA ? 0 : 1), kc = ct.getDimSize(transB ? 1 : 0);
  if (ka != kc)
    return imp.error(node) << "A " << at << (transA ? " (transposed)" : "")
                           << " and B " << ct << (transB ? " (transposed)" : "")
                           << " do not agree on the contracted size (" << ka
                           << " vs " << kc << ")";
  // Transposes become the choice of contracting dimensions.
  Value r = DotGeneralOp::create(
      b, imp.loc(), a, c, b.getDenseI64ArrayAttr({}),
      b.getDenseI64ArrayAttr({}), b.getDenseI64ArrayAttr({transA ? 0 : 1}),
      b.getDenseI64ArrayAttr({transB ? 1 : 0}));
  Type element = elementOf(r);
  if (alpha != 1.0)
    r = MulOp::create(b, imp.loc(), r, imp.scalar(element, alpha));
  if (bias && beta != 0.0) {
    if (beta != 1.0)
      bias = MulOp::create(b, imp.loc(), bias, imp.scalar(element, beta));
    r = AddOp::create(b, imp.loc(), r, bias);
  }
  return imp.setResult(node, 0, r);
}

//===----------------------------------------------------------------------===//
// Windows
//===----------------------------------------------------------------------===//

/// Kernel, strides, dilations and explicit pads of a Conv/Pool node,
/// resolving auto_pad and (for pooling) ceil_mode.
struct Window {
  SmallVector<int64_t> kernel, strides, dilations, pads;
};

FailureOr<Window> windowOf(Importer &imp, const Node &node,
                           ArrayRef<int64_t> inputShape,
                           ArrayRef<int64_t> kernel, bool ceilMode) {
  int64_t k = inputShape.size() - 2;
  if (k < 1 || k > 3)
    return imp.error(node) << "inputs with " << k
                           << " spatial dimensions are not supported (1 to 3)";
  Window w;
  w.kernel.assign(kernel.begin(), kernel.end());
  w.strides = imp.attrInts(node, "strides");
  w.dilations = imp.attrInts(node, "dilations");
  w.pads = imp.attrInts(node, "pads");
  if (w.strides.empty())
    w.strides.assign(k, 1);
  if (w.dilations.empty())
    w.dilations.assign(k, 1);
  if (w.pads.empty())
    w.pads.assign(2 * k, 0);
  if (static_cast<int64_t>(w.kernel.size()) != k ||
      static_cast<int64_t>(w.strides.size()) != k ||
      static_cast<int64_t>(w.dilations.size()) != k ||
      static_cast<int64_t>(w.pads.size()) != 2 * k)
    return imp.error(node) << "kernel_shape, strides, dilations and pads do "
                              "not match "
                           << k << " spatial dimensions";
  std::string autoPad = imp.attrString(node, "auto_pad", "NOTSET");
  if (autoPad == "VALID") {
    w.pads.assign(2 * k, 0);
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (int64_t i = 0; i < k; ++i) {
      int64_t in = inputShape[2 + i];
      int64_t out = (in + w.strides[i] - 1) / w.strides[i];
      int64_t effective = (w.kernel[i] - 1) * w.dilations[i] + 1;
      int64_t total =
          std::max<int64_t>(0, (out - 1) * w.strides[i] + effective - in);
      int64_t small = total / 2, large = total - small;
      w.pads[i] = autoPad == "SAME_UPPER" ? small : large;
      w.pads[k + i] = autoPad == "SAME_UPPER" ? large : small;
    }
  } else if (autoPad != "NOTSET") {
    return imp.error(node) << "auto_pad '" << autoPad << "' is not supported";
  }
  if (ceilMode) {
    // Extend the end padding so that floor division yields the ceil output.
    for (int64_t i = 0; i < k; ++i) {
      int64_t in = inputShape[2 + i] + w.pads[i] + w.pads[k + i];
      int64_t effective = (w.kernel[i] - 1) * w.dilations[i] + 1;
      int64_t span = in - effective;
      int64_t out = (span + w.strides[i] - 1) / w.strides[i] + 1;
      // The last window must start inside the input or the begin padding.
      if ((out - 1) * w.strides[i] >= inputShape[2 + i] + w.pads[i])
        --out;
      w.pads[k + i] += std::max<int64_t>(
          0, (out - 1) * w.strides[i] + effective - in);
    }
  }
  return w;
}

LogicalResult importConv(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  LOOM_TRY(Value w, imp.operand(node, 1));
  LOOM_TRY(Value bias, imp.optionalOperand(node, 2));
  OpBuilder &b = imp.builder();
  ArrayRef<int64_t> ws = shapeOf(w);
  SmallVector<int64_t> kernel = imp.attrInts(node, "kernel_shape");
  if (kernel.empty())
    kernel.assign(ws.begin() + std::min<size_t>(2, ws.size()), ws.end());
  LOOM_TRY(Window win, windowOf(imp, node, shapeOf(x), kernel, false));
  if (ArrayRef<int64_t>(ws).drop_front(2) != ArrayRef<int64_t>(win.kernel))
    return imp.error(node) << "kernel_shape does not match the weights "
                           << w.getType();
  Value y = ConvOp::create(b, imp.loc(), x, w,
                           b.getDenseI64ArrayAttr(win.strides),
                           b.getDenseI64ArrayAttr(win.pads),
                           b.getDenseI64ArrayAttr(win.dilations),
                           b.getI64IntegerAttr(imp.attrInt(node, "group", 1)));
  if (bias)
    y = imp.addChannelBias(y, bias);
  return imp.setResult(node, 0, y);
}

LogicalResult importMaxPool(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  OpBuilder &b = imp.builder();
  LOOM_TRY(Window win, windowOf(imp, node, shapeOf(x),
                                imp.attrInts(node, "kernel_shape"),
                                imp.attrInt(node, "ceil_mode", 0) != 0));
  auto kernel = b.getDenseI64ArrayAttr(win.kernel);
  auto strides = b.getDenseI64ArrayAttr(win.strides);
  auto pads = b.getDenseI64ArrayAttr(win.pads);
  auto dilations = b.getDenseI64ArrayAttr(win.dilations);
  if (failed(imp.setResult(node, 0,
                           MaxPoolOp::create(b, imp.loc(), x, kernel, strides,
                                             pads, dilations))))
    return failure();
  if (!imp.wantsOutput(node, 1))
    return success();
  bool columnMajor = imp.attrInt(node, "storage_order", 0) != 0;
  return imp.setResult(node, 1,
                       MaxPoolIndicesOp::create(
                           b, imp.loc(), x, kernel, strides, pads, dilations,
                           columnMajor ? b.getUnitAttr() : UnitAttr()));
}

LogicalResult importAveragePool(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  OpBuilder &b = imp.builder();
  bool countPad = imp.attrInt(node, "count_include_pad", 0) != 0;
  bool ceilMode = imp.attrInt(node, "ceil_mode", 0) != 0;
  LOOM_TRY(Window plain, windowOf(imp, node, shapeOf(x),
                                  imp.attrInts(node, "kernel_shape"), false));
  LOOM_TRY(Window win, windowOf(imp, node, shapeOf(x),
                                imp.attrInts(node, "kernel_shape"), ceilMode));
  if (countPad && win.pads != plain.pads)
    return imp.error(node) << "ceil_mode with count_include_pad and windows "
                              "that run past the padding is not supported";
  return imp.setResult(
      node, 0,
      AvgPoolOp::create(b, imp.loc(), x, b.getDenseI64ArrayAttr(win.kernel),
                        b.getDenseI64ArrayAttr(win.strides),
                        b.getDenseI64ArrayAttr(win.pads),
                        countPad ? b.getUnitAttr() : UnitAttr()));
}

template <typename ReduceOpTy>
LogicalResult importGlobalPool(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  int64_t rank = Importer::typeOf(x).getRank();
  if (rank < 3)
    return imp.error(node) << "the input must be [N, C, D1, ...]";
  SmallVector<int64_t> dims;
  for (int64_t d = 2; d < rank; ++d)
    dims.push_back(d);
  OpBuilder &b = imp.builder();
  return imp.setResult(node, 0,
                       ReduceOpTy::create(b, imp.loc(), x,
                                          b.getDenseI64ArrayAttr(dims),
                                          b.getUnitAttr()));
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

LogicalResult importBatchNorm(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  LOOM_TRY(Value scale, imp.operand(node, 1));
  LOOM_TRY(Value bias, imp.operand(node, 2));
  LOOM_TRY(Value mean, imp.operand(node, 3));
  LOOM_TRY(Value var, imp.operand(node, 4));
  OpBuilder &b = imp.builder();
  auto epsilon = b.getF64FloatAttr(imp.attrFloat(node, "epsilon", 1e-5f));
  if (imp.attrInt(node, "training_mode", 0) == 0) {
    if (imp.wantsOutput(node, 1) || imp.wantsOutput(node, 2))
      return imp.error(node) << "running statistics outputs need "
                                "training_mode = 1";
    return imp.setResult(node, 0,
                         BatchNormInferenceOp::create(b, imp.loc(), x, scale,
                                                      bias, mean, var, epsilon));
  }
  auto bn = BatchNormTrainingOp::create(b, imp.loc(), x, scale, bias, epsilon);
  double momentum = imp.attrFloat(node, "momentum", 0.9f);
  Type element = elementOf(x);
  auto update = [&](Value running, Value batch) -> Value {
    Value keep = MulOp::create(b, imp.loc(), running, imp.scalar(element, momentum));
    Value add = MulOp::create(b, imp.loc(), batch, imp.scalar(element, 1.0 - momentum));
    return AddOp::create(b, imp.loc(), keep, add);
  };
  if (failed(imp.setResult(node, 0, bn.getResult())))
    return failure();
  if (imp.wantsOutput(node, 1) &&
      failed(imp.setResult(node, 1, update(mean, bn.getBatchMean()))))
    return failure();
  if (imp.wantsOutput(node, 2) &&
      failed(imp.setResult(node, 2, update(var, bn.getBatchVariance()))))
    return failure();
  return success();
}

/// (x - mean) / sqrt(var + eps) over `dims`, keeping dims; also returns the
/// mean and 1/sqrt(var + eps).
struct Normalized {
  Value y, mean, invStd;
};

Normalized normalize(Importer &imp, Value x, ArrayRef<int64_t> dims,
                     double epsilon) {
  OpBuilder &b = imp.builder();
  Location loc = imp.loc();
  auto dimsAttr = b.getDenseI64ArrayAttr(dims);
  Value mean = ReduceMeanOp::create(b, loc, x, dimsAttr, b.getUnitAttr());
  Value centered = SubOp::create(b, loc, x, mean);
  Value sq = MulOp::create(b, loc, centered, centered);
  Value var = ReduceMeanOp::create(b, loc, sq, dimsAttr, b.getUnitAttr());
  Value invStd = RsqrtOp::create(
      b, loc, AddOp::create(b, loc, var, imp.scalar(elementOf(x), epsilon)));
  return {MulOp::create(b, loc, centered, invStd), mean, invStd};
}

LogicalResult importInstanceNorm(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  LOOM_TRY(Value scale, imp.operand(node, 1));
  LOOM_TRY(Value bias, imp.operand(node, 2));
  int64_t rank = Importer::typeOf(x).getRank();
  if (rank < 3)
    return imp.error(node) << "the input must be [N, C, D1, ...]";
  SmallVector<int64_t> dims;
  for (int64_t d = 2; d < rank; ++d)
    dims.push_back(d);
  Normalized n = normalize(imp, x, dims, imp.attrFloat(node, "epsilon", 1e-5f));
  SmallVector<int64_t> cShape(rank - 1, 1);
  cShape[0] = shapeOf(x)[1];
  OpBuilder &b = imp.builder();
  Value y = MulOp::create(b, imp.loc(), n.y, imp.reshape(scale, cShape));
  y = AddOp::create(b, imp.loc(), y, imp.reshape(bias, cShape));
  return imp.setResult(node, 0, y);
}

LogicalResult importLayerNorm(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  LOOM_TRY(Value scale, imp.operand(node, 1));
  LOOM_TRY(Value bias, imp.optionalOperand(node, 2));
  OpBuilder &b = imp.builder();
  RankedTensorType type = Importer::typeOf(x);
  LOOM_TRY(int64_t axis, imp.normalizeAxis(node, imp.attrInt(node, "axis", -1),
                                           type.getRank()));
  double epsilon = imp.attrFloat(node, "epsilon", 1e-5f);
  Type element = type.getElementType();
  // stash_type = 1: statistics in f32 even for f16/bf16 inputs.
  Type compute = element;
  if (imp.attrInt(node, "stash_type", 1) == 1 && !element.isF64())
    compute = b.getF32Type();
  ArrayRef<int64_t> normShape = type.getShape().drop_front(axis);
  Value xc = imp.castTo(x, compute);
  Value s = imp.broadcastTo(imp.castTo(scale, compute), normShape);
  Value bb = bias ? imp.broadcastTo(imp.castTo(bias, compute), normShape)
                  : imp.constant(DenseElementsAttr::get(
                        RankedTensorType::get(normShape, compute),
                        b.getZeroAttr(compute)));
  if (!imp.wantsOutput(node, 1) && !imp.wantsOutput(node, 2)) {
    Value y = LayerNormOp::create(b, imp.loc(), xc, s, bb,
                                  b.getI64IntegerAttr(axis),
                                  b.getF64FloatAttr(epsilon));
    return imp.setResult(node, 0, imp.castTo(y, element));
  }
  SmallVector<int64_t> dims;
  for (int64_t d = axis; d < type.getRank(); ++d)
    dims.push_back(d);
  Normalized n = normalize(imp, xc, dims, epsilon);
  Value y = AddOp::create(b, imp.loc(), MulOp::create(b, imp.loc(), n.y, s), bb);
  if (failed(imp.setResult(node, 0, imp.castTo(y, element))))
    return failure();
  if (failed(imp.setResult(node, 1, n.mean)) ||
      failed(imp.setResult(node, 2, n.invStd)))
    return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// Reduced dimensions of a Reduce* node (sorted), from the `axes` attribute
/// or input 1; empty axes mean all (or none, with noop_with_empty_axes).
FailureOr<SmallVector<int64_t>> reduceDims(Importer &imp, const Node &node,
                                           int64_t rank, bool &noop) {
  SmallVector<int64_t> axes;
  if (imp.hasInput(node, 1)) {
    LOOM_TRY(axes, imp.constInts(node, 1, "axes"));
  } else {
    axes = imp.attrInts(node, "axes");
  }
  noop = false;
  if (axes.empty()) {
    if (imp.attrInt(node, "noop_with_empty_axes", 0) != 0) {
      noop = true;
      return axes;
    }
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
    return axes;
  }
  for (int64_t &a : axes) {
    LOOM_TRY(a, imp.normalizeAxis(node, a, rank));
  }
  llvm::sort(axes);
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

enum class ReduceKind { Sum, Mean, Max, Min, Prod, L1, L2, SumSquare, LogSum, LogSumExp };

template <ReduceKind kind>
LogicalResult importReduce(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  int64_t rank = Importer::typeOf(x).getRank();
  bool noop;
  LOOM_TRY(SmallVector<int64_t> dims, reduceDims(imp, node, rank, noop));
  OpBuilder &b = imp.builder();
  Location loc = imp.loc();
  bool keep = imp.attrInt(node, "keepdims", 1) != 0;
  auto dimsAttr = b.getDenseI64ArrayAttr(dims);
  UnitAttr keepAttr = keep ? b.getUnitAttr() : UnitAttr();
  auto sum = [&](Value v, UnitAttr k) -> Value {
    return ReduceSumOp::create(b, loc, v, dimsAttr, k);
  };
  Value r;
  if (noop)
    return imp.setResult(node, 0, x);
  switch (kind) {
  case ReduceKind::Sum:
    r = sum(x, keepAttr);
    break;
  case ReduceKind::Mean:
    r = ReduceMeanOp::create(b, loc, x, dimsAttr, keepAttr);
    break;
  case ReduceKind::Max:
    r = ReduceMaxOp::create(b, loc, x, dimsAttr, keepAttr);
    break;
  case ReduceKind::Min:
    r = ReduceMinOp::create(b, loc, x, dimsAttr, keepAttr);
    break;
  case ReduceKind::Prod:
    r = ReduceProdOp::create(b, loc, x, dimsAttr, keepAttr);
    break;
  case ReduceKind::L1:
    r = sum(AbsOp::create(b, loc, x), keepAttr);
    break;
  case ReduceKind::L2:
    r = SqrtOp::create(b, loc, sum(MulOp::create(b, loc, x, x), keepAttr));
    break;
  case ReduceKind::SumSquare:
    r = sum(MulOp::create(b, loc, x, x), keepAttr);
    break;
  case ReduceKind::LogSum:
    r = LogOp::create(b, loc, sum(x, keepAttr));
    break;
  case ReduceKind::LogSumExp: {
    // max + log(sum(exp(x - max))), stable for large inputs.
    Value m = ReduceMaxOp::create(b, loc, x, dimsAttr, b.getUnitAttr());
    Value e = ExpOp::create(b, loc, SubOp::create(b, loc, x, m));
    Value s = LogOp::create(b, loc, sum(e, b.getUnitAttr()));
    r = AddOp::create(b, loc, s, m);
    if (!keep) {
      SmallVector<int64_t> shape;
      for (auto [d, size] : llvm::enumerate(shapeOf(x)))
        if (!llvm::is_contained(dims, static_cast<int64_t>(d)))
          shape.push_back(size);
      r = imp.reshape(r, shape);
    }
    break;
  }
  }
  return imp.setResult(node, 0, r);
}

//===----------------------------------------------------------------------===//
// Dropout and losses
//===----------------------------------------------------------------------===//

LogicalResult importDropout(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  OpBuilder &b = imp.builder();
  double ratio = 0.5;
  if (imp.hasInput(node, 1)) {
    LOOM_TRY(ratio, imp.constScalar(node, 1, "ratio"));
  }
  bool training = false;
  if (imp.hasInput(node, 2)) {
    LOOM_TRY(double t, imp.constScalar(node, 2, "training_mode"));
    training = t != 0;
  }
  RankedTensorType type = Importer::typeOf(x);
  if (!training || ratio == 0.0) {
    if (failed(imp.setResult(node, 0, x)))
      return failure();
    if (imp.wantsOutput(node, 1))
      return imp.setResult(node, 1,
                           imp.constant(DenseElementsAttr::get(
                               type.clone(b.getI1Type()), true)));
    return success();
  }
  Value seed = imp.constant(DenseElementsAttr::get(
      RankedTensorType::get({}, b.getI64Type()),
      static_cast<int64_t>(imp.attrInt(node, "seed", 0))));
  auto op = DropoutOp::create(b, imp.loc(), x, seed, b.getF64FloatAttr(ratio));
  if (failed(imp.setResult(node, 0, op.getResult())))
    return failure();
  return imp.setResult(node, 1, op.getMask());
}

FailureOr<LossReduction> lossReduction(Importer &imp, const Node &node) {
  std::string r = imp.attrString(node, "reduction", "mean");
  if (r == "mean")
    return LossReduction::mean;
  if (r == "sum")
    return LossReduction::sum;
  if (r == "none")
    return LossReduction::none;
  return imp.error(node) << "reduction '" << r << "' is not supported";
}

template <typename LossOp>
LogicalResult importClassLoss(Importer &imp, const Node &node) {
  LOOM_TRY(Value scores, imp.operand(node, 0));
  LOOM_TRY(Value labels, imp.operand(node, 1));
  LOOM_TRY(Value weight, imp.optionalOperand(node, 2));
  LOOM_TRY(LossReduction reduction, lossReduction(imp, node));
  OpBuilder &b = imp.builder();
  IntegerAttr ignore;
  if (imp.hasAttr(node, "ignore_index"))
    ignore = b.getI64IntegerAttr(imp.attrInt(node, "ignore_index", 0));
  Value loss = LossOp::create(b, imp.loc(), scores, labels, weight, reduction,
                              ignore);
  if (failed(imp.setResult(node, 0, loss)))
    return failure();
  if (imp.wantsOutput(node, 1))
    return imp.setResult(node, 1,
                         LogSoftmaxOp::create(b, imp.loc(), scores,
                                              b.getI64IntegerAttr(1)));
  return success();
}

} // namespace

void mlir::loom::onnx_import::registerNNOps(OpTable &t) {
  t["MatMul"] = {importMatMul, {}};
  t["Gemm"] = {importGemm, {"alpha", "beta", "transA", "transB"}};
  t["Conv"] = {importConv,
               {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}};
  t["MaxPool"] = {importMaxPool,
                  {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads",
                   "storage_order", "strides"}};
  t["AveragePool"] = {importAveragePool,
                      {"auto_pad", "ceil_mode", "count_include_pad",
                       "kernel_shape", "pads", "strides"}};
  t["GlobalAveragePool"] = {importGlobalPool<ReduceMeanOp>, {}};
  t["GlobalMaxPool"] = {importGlobalPool<ReduceMaxOp>, {}};
  t["BatchNormalization"] = {importBatchNorm,
                             {"epsilon", "momentum", "training_mode"}};
  t["InstanceNormalization"] = {importInstanceNorm, {"epsilon"}};
  t["LayerNormalization"] = {importLayerNorm, {"axis", "epsilon", "stash_type"}};
  std::vector<std::string> reduceAttrs = {"axes", "keepdims",
                                          "noop_with_empty_axes"};
  t["ReduceSum"] = {importReduce<ReduceKind::Sum>, reduceAttrs};
  t["ReduceMean"] = {importReduce<ReduceKind::Mean>, reduceAttrs};
  t["ReduceMax"] = {importReduce<ReduceKind::Max>, reduceAttrs};
  t["ReduceMin"] = {importReduce<ReduceKind::Min>, reduceAttrs};
  t["ReduceProd"] = {importReduce<ReduceKind::Prod>, reduceAttrs};
  t["ReduceL1"] = {importReduce<ReduceKind::L1>, reduceAttrs};
  t["ReduceL2"] = {importReduce<ReduceKind::L2>, reduceAttrs};
  t["ReduceSumSquare"] = {importReduce<ReduceKind::SumSquare>, reduceAttrs};
  t["ReduceLogSum"] = {importReduce<ReduceKind::LogSum>, reduceAttrs};
  t["ReduceLogSumExp"] = {importReduce<ReduceKind::LogSumExp>, reduceAttrs};
  t["Dropout"] = {importDropout, {"seed"}};
  t["SoftmaxCrossEntropyLoss"] = {importClassLoss<CrossEntropyOp>,
                                  {"ignore_index", "reduction"}};
  t["NegativeLogLikelihoodLoss"] = {importClassLoss<NllLossOp>,
                                    {"ignore_index", "reduction"}};
}
