//===- OnnxShapeOps.cpp - ONNX data movement ops -> loom ------------------===//
//
// Shape arguments (reshape targets, axes, slice bounds, pads, repeats) must
// be known at import time; they usually are, after folding.
//
//===----------------------------------------------------------------------===//

#include "OnnxImporter.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::onnx_import;

namespace {

ArrayRef<int64_t> shapeOf(Value v) { return Importer::typeOf(v).getShape(); }

LogicalResult importReshape(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  LOOM_TRY(SmallVector<int64_t> target, imp.constInts(node, 1, "shape"));
  std::string error;
  FailureOr<SmallVector<int64_t>> shape = reshapeTarget(
      shapeOf(x), target, imp.attrInt(node, "allowzero", 0) != 0, error);
  if (failed(shape))
    return imp.error(node) << "cannot reshape " << x.getType() << ": " << error;
  return imp.setResult(node, 0, imp.reshape(x, *shape));
}

LogicalResult importFlatten(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  int64_t rank = shapeOf(x).size();
  int64_t axis = imp.attrInt(node, "axis", 1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis > rank)
    return imp.error(node) << "axis " << imp.attrInt(node, "axis", 1)
                           << " is out of range for rank " << rank;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d)
    (d < axis ? outer : inner) *= shapeOf(x)[d];
  return imp.setResult(node, 0, imp.reshape(x, {outer, inner}));
}

LogicalResult importTranspose(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  int64_t rank = shapeOf(x).size();
  SmallVector<int64_t> perm = imp.attrInts(node, "perm");
  if (perm.empty())
    for (int64_t d = rank - 1; d >= 0; --d)
      perm.push_back(d);
  OpBuilder &b = imp.builder();
  return imp.setResult(node, 0,
                       TransposeOp::create(b, imp.loc(), x,
                                           b.getDenseI64ArrayAttr(perm)));
}

/// Axes from input 1 (opset >= 13) or the `axes` attribute.
FailureOr<SmallVector<int64_t>> axesOf(Importer &imp, const Node &node) {
  if (imp.hasInput(node, 1))
    return imp.constInts(node, 1, "axes");
  return imp.attrInts(node, "axes");
}

LogicalResult importSqueeze(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  LOOM_TRY(SmallVector<int64_t> axes, axesOf(imp, node));
  ArrayRef<int64_t> in = shapeOf(x);
  int64_t rank = in.size();
  for (int64_t &a : axes) {
    if (rank == 0)
      return imp.error(node) << "a scalar (rank 0) has no axis " << a;
    LOOM_TRY(a, imp.normalizeAxis(node, a, rank));
    if (in[a] != 1)
      return imp.error(node) << "cannot squeeze dimension " << a << " of size "
                             << in[a];
  }
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d)
    if (axes.empty() ? in[d] != 1 : !llvm::is_contained(axes, d))
      shape.push_back(in[d]);
  return imp.setResult(node, 0, imp.reshape(x, shape));
}

LogicalResult importUnsqueeze(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  LOOM_TRY(SmallVector<int64_t> axes, axesOf(imp, node));
  int64_t outRank = shapeOf(x).size() + axes.size();
  for (int64_t &a : axes) {
    LOOM_TRY(a, imp.normalizeAxis(node, a, outRank));
  }
  llvm::sort(axes);
  SmallVector<int64_t> shape(shapeOf(x));
  for (int64_t a : axes)
    shape.insert(shape.begin() + a, 1);
  return imp.setResult(node, 0, imp.reshape(x, shape));
}

LogicalResult importConcat(Importer &imp, const Node &node) {
  SmallVector<Value> inputs;
  for (int i = 0; i < node.input_size(); ++i) {
    LOOM_TRY(Value v, imp.operand(node, i));
    inputs.push_back(v);
  }
  if (inputs.empty())
    return imp.error(node) << "needs at least one input";
  int64_t rank = shapeOf(inputs[0]).size();
  LOOM_TRY(int64_t axis, imp.normalizeAxis(node, imp.attrInt(node, "axis", 0), rank));
  // Zero-sized inputs contribute nothing (and loom tensors keep them fine).
  OpBuilder &b = imp.builder();
  return imp.setResult(node, 0,
                       ConcatOp::create(b, imp.loc(), inputs,
                                        b.getI64IntegerAttr(axis)));
}

/// A static slice of `x` along `axis`: [start, start + count * step).
Value sliceAxis(Importer &imp, Value x, int64_t axis, int64_t start,
                int64_t count, int64_t step) {
  ArrayRef<int64_t> shape = shapeOf(x);
  SmallVector<int64_t> starts(shape.size(), 0), limits(shape), steps(shape.size(), 1);
  starts[axis] = start;
  limits[axis] = count == 0 ? start : start + (count - 1) * step + 1;
  steps[axis] = step;
  OpBuilder &b = imp.builder();
  return SliceOp::create(b, imp.loc(), x, b.getDenseI64ArrayAttr(starts),
                         b.getDenseI64ArrayAttr(limits),
                         b.getDenseI64ArrayAttr(steps));
}

LogicalResult importSplit(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  int64_t rank = shapeOf(x).size();
  if (rank == 0)
    return imp.error(node) << "cannot split a scalar (rank 0)";
  LOOM_TRY(int64_t axis, imp.normalizeAxis(node, imp.attrInt(node, "axis", 0), rank));
  int64_t size = shapeOf(x)[axis];
  SmallVector<int64_t> split;
  if (imp.hasInput(node, 1)) {
    LOOM_TRY(split, imp.constInts(node, 1, "split"));
  } else {
    split = imp.attrInts(node, "split");
  }
  int64_t n = node.output_size();
  if (split.empty()) {
    if (size % n != 0)
      return imp.error(node) << "cannot split dimension " << axis << " of size "
                             << size << " into " << n << " equal parts";
    split.assign(n, size / n);
  }
  if (static_cast<int64_t>(split.size()) != n)
    return imp.error(node) << "split has " << split.size()
                           << " entries for " << n << " outputs";
  int64_t offset = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (failed(imp.setResult(node, i,
                             sliceAxis(imp, x, axis, offset, split[i], 1))))
      return failure();
    offset += split[i];
  }
  if (offset != size)
    return imp.error(node) << "split sizes add up to " << offset
                           << " but dimension " << axis << " has " << size;
  return success();
}

LogicalResult importSlice(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  LOOM_TRY(SmallVector<int64_t> starts, imp.constInts(node, 1, "starts"));
  LOOM_TRY(SmallVector<int64_t> ends, imp.constInts(node, 2, "ends"));
  SmallVector<int64_t> axes, steps;
  int64_t rank = shapeOf(x).size();
  if (imp.hasInput(node, 3)) {
    LOOM_TRY(axes, imp.constInts(node, 3, "axes"));
  } else {
    for (int64_t d = 0; d < static_cast<int64_t>(starts.size()); ++d)
      axes.push_back(d);
  }
  if (imp.hasInput(node, 4)) {
    LOOM_TRY(steps, imp.constInts(node, 4, "steps"));
  } else {
    steps.assign(starts.size(), 1);
  }
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return imp.error(node) << "starts, ends, axes and steps differ in length";
  SmallVector<int64_t> lo(rank, 0), hi(shapeOf(x)), st(rank, 1);
  SmallVector<std::pair<int64_t, SliceRange>> reversed;
  for (size_t j = 0; j < axes.size(); ++j) {
    if (rank == 0)
      return imp.error(node) << "a scalar (rank 0) has no axis " << axes[j];
    LOOM_TRY(int64_t a, imp.normalizeAxis(node, axes[j], rank));
    if (steps[j] == 0)
      return imp.error(node) << "step 0 on axis " << a;
    SliceRange r = normalizeSlice(starts[j], ends[j], steps[j], shapeOf(x)[a]);
    if (steps[j] > 0) {
      lo[a] = r.start;
      hi[a] = r.count == 0 ? r.start : r.start + (r.count - 1) * r.step + 1;
      st[a] = r.step;
    } else {
      reversed.push_back({a, r});
    }
  }
  OpBuilder &b = imp.builder();
  Value y = SliceOp::create(b, imp.loc(), x, b.getDenseI64ArrayAttr(lo),
                            b.getDenseI64ArrayAttr(hi),
                            b.getDenseI64ArrayAttr(st));
  // Negative steps: gather the selected indices in order.
  for (auto [a, r] : reversed) {
    if (failed(imp.checkIndexCount(node, r.count,
                                   "a negative step on axis " +
                                       std::to_string(a))))
      return failure();
    SmallVector<int64_t> indices;
    for (int64_t k = 0; k < r.count; ++k)
      indices.push_back(r.start + k * r.step);
    y = imp.gatherIndices(y, indices, a);
  }
  return imp.setResult(node, 0, y);
}

LogicalResult importGather(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  LOOM_TRY(Value indices, imp.operand(node, 1));
  int64_t rank = shapeOf(x).size();
  LOOM_TRY(int64_t axis, imp.normalizeAxis(node, imp.attrInt(node, "axis", 0), rank));
  OpBuilder &b = imp.builder();
  return imp.setResult(node, 0,
                       GatherOp::create(b, imp.loc(), x, indices,
                                        b.getI64IntegerAttr(axis)));
}

LogicalResult importExpand(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  LOOM_TRY(SmallVector<int64_t> target, imp.constInts(node, 1, "shape"));
  FailureOr<SmallVector<int64_t>> shape = broadcastShape(shapeOf(x), target);
  if (failed(shape))
    return imp.error(node) << x.getType() << " does not broadcast to the shape ["
                           << llvm::make_range(target.begin(), target.end())
                           << "]";
  return imp.setResult(node, 0, imp.broadcastTo(x, *shape));
}

LogicalResult importTile(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  LOOM_TRY(SmallVector<int64_t> repeats, imp.constInts(node, 1, "repeats"));
  ArrayRef<int64_t> in = shapeOf(x);
  if (repeats.size() != in.size())
    return imp.error(node) << "repeats has " << repeats.size()
                           << " entries for rank " << in.size();
  // [d0, d1] -> [1, d0, 1, d1] -> broadcast [r0, d0, r1, d1] -> [r0*d0, r1*d1].
  SmallVector<int64_t> interleaved, expanded, out;
  for (auto [d, r] : llvm::zip(in, repeats)) {
    if (r < 0)
      return imp.error(node) << "repeats must be non-negative";
    interleaved.append({1, d});
    expanded.append({r, d});
    out.push_back(r * d);
  }
  Value y = imp.broadcastTo(imp.reshape(x, interleaved), expanded);
  return imp.setResult(node, 0, imp.reshape(y, out));
}

/// The input index output position `j` of an axis of `n` elements padded
/// by `low` in front reads: `reflect` mirrors about the edge elements
/// (numpy's 'reflect', the edge not repeated), `edge` repeats them, `wrap`
/// continues periodically. A negative pad crops.
int64_t paddedSource(StringRef mode, int64_t j, int64_t low, int64_t n) {
  int64_t i = j - low;
  if (mode == "edge")
    return std::clamp<int64_t>(i, 0, n - 1);
  if (mode == "wrap")
    return ((i % n) + n) % n;
  if (n == 1)
    return 0;
  int64_t period = 2 * (n - 1);
  i = ((i % period) + period) % period;
  return i < n ? i : period - i;
}

LogicalResult importPad(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  std::string mode = imp.attrString(node, "mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" &&
      mode != "wrap")
    return imp.error(node) << "pad mode '" << mode
                           << "' is not supported (constant, reflect, edge, "
                              "wrap)";
  LOOM_TRY(SmallVector<int64_t> pads, imp.constInts(node, 1, "pads"));
  int64_t rank = shapeOf(x).size();
  if (static_cast<int64_t>(pads.size()) != 2 * rank)
    return imp.error(node) << "pads has " << pads.size() << " entries for rank "
                           << rank;
  if (mode != "constant") {
    // Each padded axis is one gather of the input positions its outputs
    // read (the gradient: a scatter-add, so an edge element read by the
    // padding gets those gradients too).
    Value y = x;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t low = pads[d], high = pads[rank + d], n = shapeOf(x)[d];
      if (low == 0 && high == 0)
        continue;
      if (n == 0 || n + low + high <= 0)
        return imp.error(node) << "pads " << low << ", " << high
                               << " leave nothing of axis " << d << " ("
                               << n << " elements)";
      SmallVector<int64_t> indices;
      for (int64_t j = 0; j < n + low + high; ++j)
        indices.push_back(paddedSource(mode, j, low, n));
      y = imp.gatherIndices(y, indices, d);
    }
    return imp.setResult(node, 0, y);
  }
  double value = 0;
  if (imp.hasInput(node, 2)) {
    LOOM_TRY(value, imp.constScalar(node, 2, "constant_value"));
  }
  ArrayRef<int64_t> all(pads);
  LOOM_TRY(Value y, imp.padOrCrop(node, x, all.take_front(rank),
                                  all.drop_front(rank), value));
  return imp.setResult(node, 0, y);
}

/// If: with a condition known at import time (a constant, or an input
/// given with --specialize-inputs), the branch it selects is imported in
/// place; otherwise both branches are imported and each output selected
/// from them (loom.select), which needs them side-effect free (ONNX ops
/// are) and of one type, and computes both (training flows through the
/// branch taken, as a select's gradient does).
LogicalResult importIf(Importer &imp, const Node &node) {
  const onnx::AttributeProto *thenBranch = imp.attr(node, "then_branch");
  const onnx::AttributeProto *elseBranch = imp.attr(node, "else_branch");
  if (!thenBranch || !elseBranch || !thenBranch->has_g() ||
      !elseBranch->has_g())
    return imp.error(node) << "needs then_branch and else_branch graphs";
  const onnx::GraphProto &thenGraph = thenBranch->g(), &elseGraph = elseBranch->g();
  if (thenGraph.output_size() != node.output_size() ||
      elseGraph.output_size() != node.output_size())
    return imp.error(node) << "its branches have " << thenGraph.output_size()
                           << " and " << elseGraph.output_size()
                           << " outputs for " << node.output_size();
  auto bind = [&](const onnx::GraphProto &g, int i) -> LogicalResult {
    StringRef name = g.output(i).name();
    if (std::optional<DenseElementsAttr> c = imp.constNamed(name))
      return imp.setConstResult(node, i, *c);
    LOOM_TRY(Value v, imp.valueNamed(name));
    return imp.setResult(node, i, v);
  };
  if (imp.knownInput(node, 0)) {
    LOOM_TRY(DenseElementsAttr cond, imp.constInput(node, 0, "cond"));
    if (cond.getNumElements() != 1)
      return imp.error(node) << "cond has " << cond.getNumElements()
                             << " elements, not one";
    bool taken = cond.getElementType().isInteger(1)
                     ? *cond.value_begin<bool>()
                     : !(*cond.value_begin<APInt>()).isZero();
    const onnx::GraphProto &g = taken ? thenGraph : elseGraph;
    if (failed(imp.importSubgraph(g)))
      return failure();
    for (int i = 0; i < node.output_size(); ++i)
      if (failed(bind(g, i)))
        return failure();
    return success();
  }
  LOOM_TRY(Value cond, imp.operand(node, 0));
  auto condType = cast<RankedTensorType>(cond.getType());
  if (condType.getNumElements() != 1 || !condType.getElementType().isInteger(1))
    return imp.error(node) << "cond must be one boolean, not " << condType;
  if (failed(imp.importSubgraph(thenGraph)) ||
      failed(imp.importSubgraph(elseGraph)))
    return failure();
  OpBuilder &b = imp.builder();
  for (int i = 0; i < node.output_size(); ++i) {
    LOOM_TRY(Value a, imp.valueNamed(thenGraph.output(i).name()));
    LOOM_TRY(Value c, imp.valueNamed(elseGraph.output(i).name()));
    if (a.getType() != c.getType())
      return imp.error(node)
             << "its condition is known only when the model runs, and output "
             << i << " is " << a.getType() << " in one branch and "
             << c.getType()
             << " in the other (Loom computes both and selects; give the "
                "condition with --specialize-inputs to import one branch)";
    auto type = cast<RankedTensorType>(a.getType());
    Value mask = imp.broadcastTo(imp.reshape(cond, {}), type.getShape());
    if (failed(imp.setResult(node, i, SelectOp::create(b, imp.loc(), mask, a, c))))
      return failure();
  }
  return success();
}

LogicalResult importDepthToSpace(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  ArrayRef<int64_t> s = shapeOf(x);
  int64_t bs = imp.attrInt(node, "blocksize", 0);
  if (s.size() != 4 || bs < 1 || s[1] % (bs * bs) != 0)
    return imp.error(node) << "needs an [N, C, H, W] input with C divisible by "
                              "blocksize^2";
  std::string mode = imp.attrString(node, "mode", "DCR");
  int64_t n = s[0], c = s[1] / (bs * bs), h = s[2], w = s[3];
  OpBuilder &b = imp.builder();
  Value y;
  if (mode == "DCR") {
    y = imp.reshape(x, {n, bs, bs, c, h, w});
    y = TransposeOp::create(b, imp.loc(), y,
                            b.getDenseI64ArrayAttr({0, 3, 4, 1, 5, 2}));
  } else if (mode == "CRD") {
    y = imp.reshape(x, {n, c, bs, bs, h, w});
    y = TransposeOp::create(b, imp.loc(), y,
                            b.getDenseI64ArrayAttr({0, 1, 4, 2, 5, 3}));
  } else {
    return imp.error(node) << "mode '" << mode << "' is not supported";
  }
  return imp.setResult(node, 0, imp.reshape(y, {n, c, h * bs, w * bs}));
}

LogicalResult importSpaceToDepth(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  ArrayRef<int64_t> s = shapeOf(x);
  int64_t bs = imp.attrInt(node, "blocksize", 0);
  if (s.size() != 4 || bs < 1 || s[2] % bs != 0 || s[3] % bs != 0)
    return imp.error(node) << "needs an [N, C, H, W] input with H and W "
                              "divisible by blocksize";
  int64_t n = s[0], c = s[1], h = s[2] / bs, w = s[3] / bs;
  OpBuilder &b = imp.builder();
  Value y = imp.reshape(x, {n, c, h, bs, w, bs});
  y = TransposeOp::create(b, imp.loc(), y,
                          b.getDenseI64ArrayAttr({0, 3, 5, 1, 2, 4}));
  return imp.setResult(node, 0, imp.reshape(y, {n, c * bs * bs, h, w}));
}

LogicalResult importTrilu(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  int64_t k = 0;
  if (imp.hasInput(node, 1)) {
    LOOM_TRY(double kk, imp.constScalar(node, 1, "k"));
    k = saturatingInt(kk);
  }
  ArrayRef<int64_t> s = shapeOf(x);
  if (s.size() < 2)
    return imp.error(node) << "the input must have rank >= 2";
  bool upper = imp.attrInt(node, "upper", 1) != 0;
  int64_t rows = s[s.size() - 2], cols = s.back();
  // The mask is a constant built here: its size is bounded (2^26 covers an
  // 8192 x 8192 causal mask).
  constexpr int64_t kMaxMask = int64_t(1) << 26;
  if (rows > 0 && cols > kMaxMask / rows)
    return imp.error(node) << "a " << rows << " x " << cols
                           << " matrix is too large for Trilu's mask (at most "
                           << kMaxMask << " elements)";
  SmallVector<bool> mask;
  mask.reserve(size_t(rows * cols));
  // An empty matrix has no mask: 2^31 - 1 rows of 0 columns must not cost
  // 2^31 iterations (a libFuzzer timeout).
  for (int64_t i = 0; cols > 0 && i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      mask.push_back(upper ? j - i >= k : j - i <= k);
  OpBuilder &b = imp.builder();
  Value m = imp.constant(DenseElementsAttr::get(
      RankedTensorType::get({rows, cols}, b.getI1Type()), mask));
  Value zero = imp.scalar(Importer::typeOf(x).getElementType(), 0);
  return imp.setResult(node, 0, SelectOp::create(b, imp.loc(), m, x, zero));
}

LogicalResult importOneHot(Importer &imp, const Node &node) {
  LOOM_TRY(Value indices, imp.operand(node, 0));
  LOOM_TRY(double depthValue, imp.constScalar(node, 1, "depth"));
  LOOM_TRY(Value values, imp.operand(node, 2));
  OpBuilder &b = imp.builder();
  int64_t depth = saturatingInt(depthValue);
  if (depth < 1)
    return imp.error(node) << "depth " << depthValue << " must be positive";
  if (failed(imp.checkIndexCount(node, depth, "a depth of " +
                                                  std::to_string(depth))))
    return failure();
  int64_t outRank = shapeOf(indices).size() + 1;
  LOOM_TRY(int64_t axis, imp.normalizeAxis(node, imp.attrInt(node, "axis", -1), outRank));
  if (shapeOf(values) != ArrayRef<int64_t>{2})
    return imp.error(node) << "values must be [off_value, on_value]";
  Value idx = imp.castTo(indices, b.getI64Type());
  Type i64 = b.getI64Type();
  // Negative indices count from the end.
  Value isNeg = CompareOp::create(b, imp.loc(), CompareDirection::lt, idx,
                                  imp.scalar(i64, 0));
  idx = SelectOp::create(b, imp.loc(), isNeg,
                         AddOp::create(b, imp.loc(), idx, imp.scalar(i64, depth)),
                         idx);
  SmallVector<int64_t> idxShape(shapeOf(indices));
  idxShape.insert(idxShape.begin() + axis, 1);
  idx = imp.reshape(idx, idxShape);
  SmallVector<int64_t> iotaShape(outRank, 1);
  iotaShape[axis] = depth;
  SmallVector<int64_t> iota;
  for (int64_t i = 0; i < depth; ++i)
    iota.push_back(i);
  Value range = imp.constant(DenseElementsAttr::get(
      RankedTensorType::get(iotaShape, i64), ArrayRef<int64_t>(iota)));
  Value hit = CompareOp::create(b, imp.loc(), CompareDirection::eq, idx, range);
  Value off = imp.reshape(sliceAxis(imp, values, 0, 0, 1, 1), {});
  Value on = imp.reshape(sliceAxis(imp, values, 0, 1, 1, 1), {});
  return imp.setResult(node, 0, SelectOp::create(b, imp.loc(), hit, on, off));
}

/// Ops that fold whenever their inputs are known; reaching the handler
/// means an input is not.
LogicalResult importNeedsConstants(Importer &imp, const Node &node) {
  for (int i = 0; i < node.input_size(); ++i)
    if (imp.hasInput(node, i) && failed(imp.constInput(node, i, "input")))
      return failure();
  return imp.error(node) << "could not be evaluated at import time";
}

} // namespace

void mlir::loom::onnx_import::registerShapeOps(OpTable &t) {
  t["Reshape"] = {importReshape, {"allowzero"}};
  t["Flatten"] = {importFlatten, {"axis"}};
  t["Transpose"] = {importTranspose, {"perm"}};
  t["Squeeze"] = {importSqueeze, {"axes"}};
  t["Unsqueeze"] = {importUnsqueeze, {"axes"}};
  t["Concat"] = {importConcat, {"axis"}};
  t["Split"] = {importSplit, {"axis", "split"}};
  t["Slice"] = {importSlice, {}};
  t["Gather"] = {importGather, {"axis"}};
  t["Expand"] = {importExpand, {}};
  t["Tile"] = {importTile, {}};
  t["Pad"] = {importPad, {"mode"}};
  t["If"] = {importIf, {"then_branch", "else_branch"}};
  t["DepthToSpace"] = {importDepthToSpace, {"blocksize", "mode"}};
  t["SpaceToDepth"] = {importSpaceToDepth, {"blocksize"}};
  t["Trilu"] = {importTrilu, {"upper"}};
  t["OneHot"] = {importOneHot, {"axis"}};
  t["Shape"] = {importNeedsConstants, {"start", "end"}};
  t["Size"] = {importNeedsConstants, {}};
  t["Constant"] = {importNeedsConstants,
                   {"value", "value_float", "value_floats", "value_int",
                    "value_ints"}};
  t["ConstantOfShape"] = {importNeedsConstants, {"value"}};
  t["Range"] = {importNeedsConstants, {}};
}
