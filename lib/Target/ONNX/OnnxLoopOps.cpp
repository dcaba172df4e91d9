//===- OnnxLoopOps.cpp - ONNX Scan and Loop, unrolled ---------------------===//
//
// Scan and Loop import their body once per iteration: each iteration binds
// the body's inputs (the carried values, the scan inputs' slices, Loop's
// iteration number as a constant) and imports its nodes, whose results
// feed the next. The number of iterations must be known at import: a
// Scan's is its inputs' length along the scan axis; a Loop's is its trip
// count (an initializer, a constant, or a graph input given with
// --specialize-inputs) and its condition, which must be known at import
// at every iteration (a loop that stops on a value computed when the model
// runs is refused by name). The CPU pipeline compiles the iterations'
// equal loops once.
//
//===----------------------------------------------------------------------===//

#include "OnnxImporter.h"

#include "loom/Dialect/Loom/Utils/Utils.h"

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::onnx_import;

namespace {

/// The most iterations a body is imported for.
constexpr int64_t kMaxIterations = int64_t(1) << 16;

const onnx::GraphProto *bodyOf(Importer &imp, const Node &node) {
  const onnx::AttributeProto *body = imp.attr(node, "body");
  return body && body->has_g() ? &body->g() : nullptr;
}

/// Forgets every value `body` defines (its inputs and its nodes' outputs)
/// before an iteration binds them again.
void forgetBody(Importer &imp, const onnx::GraphProto &body) {
  for (const auto &in : body.input())
    imp.forget(in.name());
  for (const auto &node : body.node())
    for (const std::string &out : node.output())
      imp.forget(out);
}

/// Element `index` of `v` along `axis`, that axis removed.
Value element(Importer &imp, Value v, int64_t axis, int64_t index) {
  OpBuilder &b = imp.builder();
  ArrayRef<int64_t> shape = Importer::typeOf(v).getShape();
  SmallVector<int64_t> start(shape.size(), 0), limit(shape), stride(shape.size(), 1);
  start[axis] = index;
  limit[axis] = index + 1;
  Value s = SliceOp::create(b, imp.loc(), v, b.getDenseI64ArrayAttr(start),
                            b.getDenseI64ArrayAttr(limit),
                            b.getDenseI64ArrayAttr(stride));
  SmallVector<int64_t> squeezed(shape);
  squeezed.erase(squeezed.begin() + axis);
  return imp.reshape(s, squeezed);
}

/// `parts` (of one shape) stacked along a new `axis`.
Value stack(Importer &imp, ArrayRef<Value> parts, int64_t axis) {
  OpBuilder &b = imp.builder();
  SmallVector<Value> expanded;
  for (Value p : parts) {
    SmallVector<int64_t> shape(Importer::typeOf(p).getShape());
    shape.insert(shape.begin() + axis, 1);
    expanded.push_back(imp.reshape(p, shape));
  }
  if (expanded.size() == 1)
    return expanded.front();
  return ConcatOp::create(b, imp.loc(), expanded, b.getI64IntegerAttr(axis));
}

/// A body output after an iteration, as a value.
FailureOr<Value> bodyOutput(Importer &imp, const onnx::GraphProto &body,
                            int i) {
  return imp.valueNamed(body.output(i).name());
}

/// A Scan's axes and directions (1: reverse) for its scan inputs and
/// outputs.
struct ScanSpec {
  SmallVector<int64_t> inAxes, inReverse, outAxes, outReverse;
};

/// One Scan over `scans` (each with its axis and direction), carrying
/// `states`; fills the final states and the stacked scan outputs.
LogicalResult runScan(Importer &imp, const Node &node,
                      const onnx::GraphProto &body, SmallVector<Value> states,
                      ArrayRef<Value> scans, const ScanSpec &spec,
                      SmallVectorImpl<Value> &finalStates,
                      SmallVectorImpl<Value> &scanOutputs) {
  size_t n = states.size(), m = scans.size();
  if (body.input_size() != static_cast<int>(n + m) ||
      body.output_size() < static_cast<int>(n))
    return imp.error(node) << "its body takes " << body.input_size()
                           << " inputs and gives " << body.output_size()
                           << " outputs for " << n << " state(s) and " << m
                           << " scan input(s)";
  int64_t length = -1;
  for (auto [i, v] : llvm::enumerate(scans)) {
    int64_t len = Importer::typeOf(v).getDimSize(spec.inAxes[i]);
    if (length >= 0 && len != length)
      return imp.error(node) << "its scan inputs have lengths " << length
                             << " and " << len << " along their scan axes";
    length = len;
  }
  if (length <= 0)
    return imp.error(node) << "scans no elements (length " << length
                           << "); Loom imports scans of at least one";
  if (length > kMaxIterations)
    return imp.error(node) << "scans " << length << " elements; Loom unrolls "
                           << "at most " << kMaxIterations;
  size_t k = body.output_size() - n;
  SmallVector<SmallVector<Value>> outs(k, SmallVector<Value>(length));
  for (int64_t t = 0; t < length; ++t) {
    forgetBody(imp, body);
    for (size_t i = 0; i < n; ++i)
      imp.bindValue(body.input(i).name(), states[i]);
    for (size_t i = 0; i < m; ++i) {
      int64_t at = spec.inReverse[i] ? length - 1 - t : t;
      imp.bindValue(body.input(n + i).name(),
                    element(imp, scans[i], spec.inAxes[i], at));
    }
    if (failed(imp.importSubgraph(body)))
      return failure();
    for (size_t i = 0; i < n; ++i) {
      LOOM_TRY(states[i], bodyOutput(imp, body, i));
    }
    for (size_t j = 0; j < k; ++j) {
      LOOM_TRY(Value y, bodyOutput(imp, body, n + j));
      outs[j][spec.outReverse[j] ? length - 1 - t : t] = y;
    }
  }
  finalStates.assign(states.begin(), states.end());
  for (size_t j = 0; j < k; ++j)
    scanOutputs.push_back(stack(imp, outs[j], spec.outAxes[j]));
  return success();
}

/// An attribute list of `count` entries (default 0), axes normalized
/// against `ranks`.
FailureOr<SmallVector<int64_t>> listAttr(Importer &imp, const Node &node,
                                         StringRef name, size_t count,
                                         ArrayRef<int64_t> ranks) {
  SmallVector<int64_t> v = imp.attrInts(node, name);
  if (v.empty())
    v.assign(count, 0);
  if (v.size() != count)
    return imp.error(node) << name << " has " << v.size() << " entries for "
                           << count;
  for (size_t i = 0; i < count && !ranks.empty(); ++i) {
    FailureOr<int64_t> axis = imp.normalizeAxis(node, v[i], ranks[i]);
    if (failed(axis))
      return failure();
    v[i] = *axis;
  }
  for (size_t i = 0; i < count && ranks.empty(); ++i)
    if (v[i] != 0 && v[i] != 1)
      return imp.error(node) << name << " entries are 0 (forward) or 1 "
                                        "(reverse), not "
                             << v[i];
  return v;
}

LogicalResult importScan(Importer &imp, const Node &node) {
  // (Models of opset 8, whose Scan has a batch axis and sequence_lens, are
  // upgraded to opset 13 by the loader first.)
  const onnx::GraphProto *body = bodyOf(imp, node);
  if (!body)
    return imp.error(node) << "needs a body graph";
  int64_t m = imp.attrInt(node, "num_scan_inputs", -1);
  int64_t total = node.input_size();
  if (m < 1 || m > total)
    return imp.error(node) << "num_scan_inputs " << m << " does not fit its "
                           << total << " inputs";
  int64_t n = total - m;
  SmallVector<Value> states, scans;
  for (int64_t i = 0; i < total; ++i) {
    LOOM_TRY(Value v, imp.operand(node, i));
    (i < n ? states : scans).push_back(v);
  }
  size_t k = body->output_size() > n ? body->output_size() - n : 0;
  SmallVector<int64_t> inRanks, outRanks;
  for (Value v : scans)
    inRanks.push_back(Importer::typeOf(v).getRank());
  for (size_t j = 0; j < k; ++j) {
    // A scan output is its body output with the scan axis added.
    const onnx::TypeProto &t = body->output(n + j).type();
    if (!t.has_tensor_type() || !t.tensor_type().has_shape())
      return imp.error(node) << "its body's output '" << body->output(n + j).name()
                             << "' has no declared shape";
    outRanks.push_back(t.tensor_type().shape().dim_size() + 1);
  }
  ScanSpec spec;
  LOOM_TRY(spec.inAxes, listAttr(imp, node, "scan_input_axes", m, inRanks));
  LOOM_TRY(spec.inReverse, listAttr(imp, node, "scan_input_directions", m, {}));
  LOOM_TRY(spec.outAxes, listAttr(imp, node, "scan_output_axes", k, outRanks));
  LOOM_TRY(spec.outReverse,
           listAttr(imp, node, "scan_output_directions", k, {}));
  SmallVector<Value> finalStates, scanOutputs;
  if (failed(runScan(imp, node, *body, states, scans, spec, finalStates,
                     scanOutputs)))
    return failure();
  for (auto [i, v] : llvm::enumerate(llvm::concat<Value>(finalStates, scanOutputs)))
    if (failed(imp.setResult(node, i, v)))
      return failure();
  return success();
}

/// A known boolean (or integer) scalar's truth.
FailureOr<bool> truth(Importer &imp, const Node &node, DenseElementsAttr c,
                      StringRef what) {
  if (c.getNumElements() != 1)
    return imp.error(node) << what << " has " << c.getNumElements()
                           << " elements, not one";
  if (c.getElementType().isInteger(1))
    return *c.value_begin<bool>();
  if (c.getElementType().isInteger())
    return !(*c.value_begin<APInt>()).isZero();
  return imp.error(node) << what << " is not a boolean";
}

LogicalResult importLoop(Importer &imp, const Node &node) {
  const onnx::GraphProto *body = bodyOf(imp, node);
  if (!body)
    return imp.error(node) << "needs a body graph";
  int64_t n = node.input_size() - 2;
  if (n < 0 || body->input_size() != n + 2 || body->output_size() < n + 1)
    return imp.error(node) << "its body takes " << body->input_size()
                           << " inputs and gives " << body->output_size()
                           << " outputs for " << std::max<int64_t>(n, 0)
                           << " carried value(s)";
  if (!imp.hasInput(node, 0))
    return imp.error(node) << "has no trip count; Loom unrolls loops whose "
                              "trip count is known at import";
  if (!imp.knownInput(node, 0))
    return imp.error(node) << "its trip count '" << node.input(0)
                           << "' is known only when the model runs (give it "
                              "with --specialize-inputs; Loom unrolls loops)";
  LOOM_TRY(SmallVector<int64_t> trips, imp.constInts(node, 0, "trip count"));
  if (trips.size() != 1 || trips[0] < 0)
    return imp.error(node) << "trip count must be one non-negative integer";
  if (trips[0] > kMaxIterations)
    return imp.error(node) << "trip count " << trips[0] << "; Loom unrolls "
                           << "at most " << kMaxIterations << " iterations";
  bool running = true;
  if (imp.hasInput(node, 1)) {
    if (!imp.knownInput(node, 1))
      return imp.error(node) << "its condition '" << node.input(1)
                             << "' is known only when the model runs (give "
                                "it with --specialize-inputs; Loom unrolls "
                                "loops)";
    LOOM_TRY(DenseElementsAttr c, imp.constInput(node, 1, "cond"));
    LOOM_TRY(running, truth(imp, node, c, "cond"));
  }
  SmallVector<Value> carried;
  for (int64_t i = 0; i < n; ++i) {
    LOOM_TRY(Value v, imp.operand(node, 2 + i));
    carried.push_back(v);
  }
  size_t k = body->output_size() - n - 1;
  SmallVector<SmallVector<Value>> outs(k);
  MLIRContext *ctx = imp.context();
  for (int64_t it = 0; it < trips[0] && running; ++it) {
    forgetBody(imp, *body);
    imp.bindConst(body->input(0).name(),
                  DenseElementsAttr::get(
                      RankedTensorType::get({}, IntegerType::get(ctx, 64)),
                      APInt(64, it)));
    imp.bindConst(body->input(1).name(),
                  DenseElementsAttr::get(
                      RankedTensorType::get({}, IntegerType::get(ctx, 1)),
                      true));
    for (int64_t i = 0; i < n; ++i)
      imp.bindValue(body->input(2 + i).name(), carried[i]);
    if (failed(imp.importSubgraph(*body)))
      return failure();
    std::optional<DenseElementsAttr> cond =
        imp.constNamed(body->output(0).name());
    if (!cond)
      return imp.error(node)
             << "its body's condition '" << body->output(0).name()
             << "' is computed when the model runs; Loom unrolls loops whose "
                "iterations are known at import";
    LOOM_TRY(running, truth(imp, node, *cond, "the body's condition"));
    for (int64_t i = 0; i < n; ++i) {
      LOOM_TRY(carried[i], bodyOutput(imp, *body, 1 + i));
    }
    for (size_t j = 0; j < k; ++j) {
      LOOM_TRY(Value y, bodyOutput(imp, *body, 1 + n + j));
      if (!outs[j].empty() && y.getType() != outs[j].front().getType())
        return imp.error(node) << "scan output " << j << " is "
                               << outs[j].front().getType() << " in one "
                               << "iteration and " << y.getType()
                               << " in another";
      outs[j].push_back(y);
    }
  }
  for (int64_t i = 0; i < n; ++i)
    if (failed(imp.setResult(node, i, carried[i])))
      return failure();
  for (size_t j = 0; j < k; ++j) {
    if (outs[j].empty())
      return imp.error(node) << "runs no iteration and has scan outputs (an "
                                "empty tensor); not supported";
    if (failed(imp.setResult(node, n + j, stack(imp, outs[j], 0))))
      return failure();
  }
  return success();
}

} // namespace

void mlir::loom::onnx_import::registerLoopOps(OpTable &t) {
  t["Scan"] = {importScan,
               {"body", "num_scan_inputs", "scan_input_axes",
                "scan_input_directions", "scan_output_axes",
                "scan_output_directions"}};
  t["Loop"] = {importLoop, {"body"}};
}
