//===- OnnxImporter.cpp - ONNX graph -> loom: values and the driver --------===//

#include "OnnxImporter.h"
#include "OnnxLoader.h"
#include "loom/Target/ONNX/OnnxTensor.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <set>
#include "loom/Support/Debug.h"

#define DEBUG_TYPE "loom-import-onnx"

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::onnx_import;

//===----------------------------------------------------------------------===//
// Importer
//===----------------------------------------------------------------------===//

Importer::Importer(MLIRContext *ctx, const onnx::ModelProto &model,
                   const OnnxImportOptions &options, StringRef modelPath)
    : ctx(ctx), model(model), graph(model.graph()), options(options),
      modelPath(modelPath.str()),
      defaultOpset(std::max(onnx_import::defaultOpset(model), options.minimumOpset)),
      b(ctx), currentLoc(UnknownLoc::get(ctx)) {
  modelDir = llvm::sys::path::parent_path(modelPath).str();
  if (modelDir.empty())
    modelDir = ".";
  registerElementwiseOps(ops);
  registerNNOps(ops);
  registerShapeOps(ops);
  registerResamplingOps(ops);
  registerRecurrentOps(ops);
  registerLoopOps(ops);
  registerTrainingOps(ops);
  addNames(graph);
  // BatchNormalization's mean and variance inputs are running statistics.
  for (const auto &node : graph.node())
    if (node.op_type() == "BatchNormalization")
      for (int i = 3; i < std::min(node.input_size(), 5); ++i)
        buffers.insert(node.input(i));
}

InFlightDiagnostic Importer::error(const Node &node) {
  InFlightDiagnostic diag = emitError(currentLoc);
  diag << "ONNX node '" << (&node == currentNode ? currentName : node.name())
       << "' (" << node.op_type();
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    diag << " in domain '" << node.domain() << "'";
  diag << ", opset " << defaultOpset << "): ";
  return diag;
}

std::optional<RankedTensorType> Importer::onnxType(StringRef name) {
  auto it = types.find(name);
  if (it == types.end() || !it->second->has_tensor_type())
    return std::nullopt;
  const auto &tensorType = it->second->tensor_type();
  Type element = convertElementType(ctx, tensorType.elem_type());
  if (!element || !tensorType.has_shape())
    return std::nullopt;
  SmallVector<int64_t> shape;
  for (const auto &dim : tensorType.shape().dim()) {
    if (!dim.has_dim_value() || dim.dim_value() < 0)
      return std::nullopt;
    shape.push_back(dim.dim_value());
  }
  return RankedTensorType::get(shape, element);
}

FailureOr<RankedTensorType> Importer::inputType(const Node &node, int i) {
  if (!hasInput(node, i))
    return error(node) << "input #" << i << " is missing";
  StringRef name = node.input(i);
  if (auto it = values.find(name); it != values.end())
    return typeOf(it->second);
  if (auto it = consts.find(name); it != consts.end())
    return cast<RankedTensorType>(it->second.getType());
  if (auto it = initializers.find(name); it != initializers.end()) {
    std::string reason;
    Type element = convertElementType(ctx, it->second->data_type(), &reason);
    if (!element)
      return error(node) << "initializer '" << name << "': " << reason;
    SmallVector<int64_t> shape;
    if (!validDims(*it->second, shape, reason))
      return error(node) << reason;
    return RankedTensorType::get(shape, element);
  }
  if (std::optional<RankedTensorType> type = onnxType(name))
    return *type;
  return error(node) << "the type of input '" << name << "' is unknown";
}

FailureOr<DenseElementsAttr> Importer::initializerConst(StringRef name) {
  auto it = initializers.find(name);
  if (it == initializers.end())
    return failure();
  FailureOr<ElementsAttr> attr = tensorAttr(*it->second, /*allowResource=*/false);
  if (failed(attr))
    return failure();
  return cast<DenseElementsAttr>(*attr);
}

FailureOr<DenseElementsAttr> Importer::constInput(const Node &node, int i,
                                                  StringRef what) {
  if (!hasInput(node, i))
    return error(node) << what << " (input #" << i << ") is missing";
  StringRef name = node.input(i);
  if (auto it = consts.find(name); it != consts.end())
    return it->second;
  if (initializers.count(name))
    return initializerConst(name);
  // A graph input whose value the caller gave for compilation.
  if (auto it = options.specializedInputs.find(name.str());
      it != options.specializedInputs.end() &&
      !isa<FloatType>(it->second.getElementType()))
    return it->second;
  return error(node) << what << " (input '" << name
                     << "') must be known when the model is imported; Loom "
                        "compiles static shapes only";
}

bool Importer::knownInput(const Node &node, int i) const {
  if (!hasInput(node, i))
    return false;
  StringRef name = node.input(i);
  if (consts.count(name) || initializers.count(name))
    return true;
  auto it = options.specializedInputs.find(name.str());
  return it != options.specializedInputs.end() &&
         !isa<FloatType>(it->second.getElementType());
}

void Importer::addNames(const onnx::GraphProto &g) {
  for (const auto &init : g.initializer())
    initializers[init.name()] = &init;
  for (const auto &vi : g.input())
    types[vi.name()] = &vi.type();
  for (const auto &vi : g.value_info())
    types[vi.name()] = &vi.type();
  for (const auto &vi : g.output())
    types[vi.name()] = &vi.type();
}

LogicalResult Importer::importSubgraph(const onnx::GraphProto &g) {
  addNames(g);
  const Node *outer = currentNode;
  std::string outerName = currentName;
  Location outerLoc = currentLoc;
  for (auto [index, node] : llvm::enumerate(g.node()))
    if (failed(importNode(node, int(index))))
      return failure();
  currentNode = outer;
  currentName = outerName;
  currentLoc = outerLoc;
  return success();
}

FailureOr<Value> Importer::valueNamed(StringRef name) {
  return materialize(name, currentNode);
}

FailureOr<SmallVector<int64_t>> Importer::constInts(const Node &node, int i,
                                                    StringRef what) {
  FailureOr<DenseElementsAttr> attr = constInput(node, i, what);
  if (failed(attr))
    return failure();
  if (!attr->getElementType().isInteger())
    return error(node) << what << " must be an integer tensor";
  SmallVector<int64_t> out;
  bool isUnsigned = attr->getElementType().isUnsignedInteger();
  for (const APInt &v : attr->getValues<APInt>())
    out.push_back(isUnsigned ? static_cast<int64_t>(v.getZExtValue())
                             : v.getSExtValue());
  return out;
}

FailureOr<double> Importer::constScalar(const Node &node, int i,
                                        StringRef what) {
  FailureOr<DenseElementsAttr> attr = constInput(node, i, what);
  if (failed(attr))
    return failure();
  if (attr->getNumElements() != 1)
    return error(node) << what << " must have one element";
  if (isa<FloatType>(attr->getElementType()))
    return (*attr->getValues<APFloat>().begin()).convertToDouble();
  return static_cast<double>((*attr->getValues<APInt>().begin()).getSExtValue());
}

FailureOr<Value> Importer::parameterFor(const onnx::TensorProto &init) {
  std::string reason;
  Type element = convertElementType(ctx, init.data_type(), &reason);
  if (!element)
    return emitError(currentLoc) << "initializer '" << init.name() << "': "
                                 << reason;
  SmallVector<int64_t> shape;
  if (!validDims(init, shape, reason))
    return emitError(currentLoc) << reason;
  auto type = RankedTensorType::get(shape, element);

  Attribute initial;
  if (init.data_location() == onnx::TensorProto::EXTERNAL) {
    // Keep the bytes in the side file; check now that they are there.
    ExternalData external;
    uint64_t bytes =
        uint64_t(type.getNumElements()) *
        (element.isInteger(1) ? 1 : element.getIntOrFloatBitWidth() / 8);
    if (!resolveExternalData(init, modelDir, bytes, external, reason))
      return emitError(currentLoc) << reason;
    initial = ExternalDataAttr::get(ctx, StringAttr::get(ctx, external.path),
                                    external.offset);
  } else {
    FailureOr<ElementsAttr> attr = tensorAttr(init, /*allowResource=*/true);
    if (failed(attr))
      return failure();
    initial = *attr;
  }

  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(fn);
  bool trainable = isa<FloatType>(element) && !buffers.contains(init.name());
  auto param = ParameterOp::create(
      b, NameLoc::get(StringAttr::get(ctx, init.name()), fileLoc()),
      b.getStringAttr(init.name()), TypeAttr::get(type), initial,
      trainable ? b.getUnitAttr() : UnitAttr(), /*state_of=*/nullptr);
  Block &entry = fn.getBody().front();
  BlockArgument arg = entry.addArgument(type, param.getLoc());
  NamedAttrList attrs;
  attrs.set(LoomDialect::kParamAttrName, FlatSymbolRefAttr::get(param));
  argAttrs.push_back(attrs);
  return Value(arg);
}

FailureOr<Value> Importer::materialize(StringRef name, const Node *user) {
  if (auto it = values.find(name); it != values.end())
    return it->second;
  Value value;
  if (auto it = consts.find(name); it != consts.end()) {
    DenseElementsAttr dense = it->second;
    ElementsAttr attr = dense;
    if (!dense.isSplat() && dense.getNumElements() > options.inlineElementLimit &&
        !dense.getElementType().isInteger(1)) {
      ArrayRef<char> raw = dense.getRawData();
      attr = DenseResourceElementsAttr::get(
          dense.getType(), sanitizeBlobName(name),
          HeapAsmResourceBlob::allocateAndCopyWithAlign(raw, alignof(uint64_t)));
    }
    value = ConstantOp::create(b, currentLoc, attr);
  } else if (auto it = initializers.find(name); it != initializers.end()) {
    std::string reason;
    Type element = convertElementType(ctx, it->second->data_type(), &reason);
    if (element && isa<FloatType>(element)) {
      FailureOr<Value> param = parameterFor(*it->second);
      if (failed(param))
        return failure();
      value = *param;
    } else {
      // Integer and boolean initializers are constants (indices, masks).
      FailureOr<ElementsAttr> attr = tensorAttr(*it->second, true);
      if (failed(attr))
        return failure();
      value = ConstantOp::create(b, currentLoc, *attr);
    }
  } else {
    if (user)
      return error(*user) << "input '" << name << "' is not defined";
    return emitError(currentLoc) << "value '" << name << "' is not defined";
  }
  values[name] = value;
  return value;
}

FailureOr<Value> Importer::operand(const Node &node, int i) {
  if (!hasInput(node, i))
    return error(node) << "input #" << i << " is missing";
  return materialize(node.input(i), &node);
}

FailureOr<Value> Importer::optionalOperand(const Node &node, int i) {
  if (!hasInput(node, i))
    return Value();
  return materialize(node.input(i), &node);
}

FailureOr<Value> Importer::configOperand(const Node &node, int i) {
  if (!hasInput(node, i))
    return Value();
  StringRef name = node.input(i);
  if (!values.count(name) && initializers.count(name)) {
    LOOM_TRY(DenseElementsAttr attr, initializerConst(name));
    return constant(attr);
  }
  return materialize(name, &node);
}

LogicalResult Importer::setResult(const Node &node, int i, Value value) {
  if (!wantsOutput(node, i))
    return success();
  StringRef name = node.output(i);
  // A builder that reported an error (above) made a placeholder type.
  if (errorCount != 0)
    return failure();
  // The limits of the graph's declared sizes hold for every value: a shape
  // from the file (Expand to [2^62 + 1, 2^62 + 1]) must not reach the
  // compiler, whose byte counts would wrap.
  auto type = dyn_cast<RankedTensorType>(value.getType());
  int64_t elements = 1;
  for (int64_t d : type ? type.getShape() : ArrayRef<int64_t>()) {
    if (d < 0 || d > kMaxSize || (d != 0 && elements > kMaxElements / d))
      return error(node) << "output '" << name << "' would be " << type
                         << "; Loom supports sizes from 0 to 2^31 - 1 and up "
                            "to 2^46 elements";
    elements *= d;
  }
  if (std::optional<RankedTensorType> expected = onnxType(name)) {
    if (*expected != value.getType())
      return error(node) << "output '" << name << "' would have type "
                         << value.getType()
                         << " but ONNX shape inference gives " << *expected
                         << " (importer bug; please report)";
  }
  values[name] = value;
  return success();
}

LogicalResult Importer::setConstResult(const Node &node, int i,
                                       DenseElementsAttr value) {
  if (!wantsOutput(node, i))
    return success();
  StringRef name = node.output(i);
  if (std::optional<RankedTensorType> expected = onnxType(name)) {
    if (*expected != value.getType())
      return error(node) << "output '" << name << "' folds to type "
                         << value.getType()
                         << " but ONNX shape inference gives " << *expected
                         << " (importer bug; please report)";
  }
  consts[name] = value;
  return success();
}

const onnx::AttributeProto *Importer::attr(const Node &node,
                                           StringRef name) const {
  for (const auto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

bool Importer::hasAttr(const Node &node, StringRef name) const {
  return attr(node, name) != nullptr;
}

int64_t Importer::attrInt(const Node &node, StringRef name,
                          int64_t dflt) const {
  const onnx::AttributeProto *a = attr(node, name);
  return a ? a->i() : dflt;
}

float Importer::attrFloat(const Node &node, StringRef name, float dflt) const {
  const onnx::AttributeProto *a = attr(node, name);
  return a ? a->f() : dflt;
}

std::string Importer::attrString(const Node &node, StringRef name,
                                 StringRef dflt) const {
  const onnx::AttributeProto *a = attr(node, name);
  return a ? a->s() : dflt.str();
}

SmallVector<int64_t> Importer::attrInts(const Node &node,
                                        StringRef name) const {
  const onnx::AttributeProto *a = attr(node, name);
  if (!a)
    return {};
  return SmallVector<int64_t>(a->ints().begin(), a->ints().end());
}

SmallVector<float> Importer::attrFloats(const Node &node,
                                        StringRef name) const {
  const onnx::AttributeProto *a = attr(node, name);
  if (!a)
    return {};
  return SmallVector<float>(a->floats().begin(), a->floats().end());
}

FailureOr<int64_t> Importer::normalizeAxis(const Node &node, int64_t axis,
                                           int64_t rank) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1))
    return error(node) << "axis " << axis << " is out of range for rank "
                       << rank;
  return axis < 0 ? axis + rank : axis;
}

//===----------------------------------------------------------------------===//
// Op building helpers
//===----------------------------------------------------------------------===//

Value Importer::scalar(Type elementType, double value) {
  return createSplat(b, currentLoc, RankedTensorType::get({}, elementType),
                     value);
}

Value Importer::constant(ElementsAttr value) {
  return ConstantOp::create(b, currentLoc, value);
}

// Once a builder reported an error the node fails (importNode checks
// errorCount), but its handler runs on with a `tensor<none>` placeholder:
// the helpers below then build nothing more from it and return their input.

Value Importer::reshape(Value v, ArrayRef<int64_t> shape) {
  RankedTensorType type = typeOf(v);
  if (errorCount != 0 || type.getShape() == shape)
    return v;
  return ReshapeOp::create(b, currentLoc, type.clone(shape), v);
}

Value Importer::gatherIndices(Value v, ArrayRef<int64_t> indices,
                              int64_t axis) {
  if (errorCount != 0)
    return v;
  Value idx = constant(DenseElementsAttr::get(
      RankedTensorType::get({static_cast<int64_t>(indices.size())},
                            b.getI64Type()),
      indices));
  return GatherOp::create(b, currentLoc, v, idx, b.getI64IntegerAttr(axis));
}

LogicalResult Importer::checkIndexCount(const Node &node, int64_t count,
                                       StringRef what) {
  if (count <= kMaxIndices)
    return success();
  return error(node) << what << " needs a list of " << count
                     << " indices, more than Loom builds at import (at most "
                     << kMaxIndices << ")";
}

FailureOr<Value> Importer::padOrCrop(const Node &node, Value v,
                                     ArrayRef<int64_t> low,
                                     ArrayRef<int64_t> high, double value) {
  ArrayRef<int64_t> shape = typeOf(v).getShape();
  int64_t rank = shape.size();
  if (errorCount != 0)
    return failure();
  if (low.size() < size_t(rank) || high.size() < size_t(rank))
    return error(node) << "pads give " << low.size() << " and " << high.size()
                       << " sizes for a value of rank " << rank;
  SmallVector<int64_t> lo(rank), hi(rank), start(rank), limit(shape),
      stride(rank, 1);
  bool crop = false;
  for (int64_t d = 0; d < rank; ++d) {
    lo[d] = std::max<int64_t>(low[d], 0);
    hi[d] = std::max<int64_t>(high[d], 0);
    if (low[d] < 0 || high[d] < 0) {
      crop = true;
      start[d] = std::max<int64_t>(-low[d], 0);
      limit[d] = shape[d] - std::max<int64_t>(-high[d], 0);
      if (limit[d] < start[d])
        return error(node) << "negative pads remove more than dimension " << d
                           << " holds";
    }
  }
  if (crop)
    v = SliceOp::create(b, currentLoc, v, b.getDenseI64ArrayAttr(start),
                        b.getDenseI64ArrayAttr(limit),
                        b.getDenseI64ArrayAttr(stride));
  return Value(PadOp::create(b, currentLoc, v, b.getDenseI64ArrayAttr(lo),
                             b.getDenseI64ArrayAttr(hi),
                             scalarAttr(typeOf(v).getElementType(), value)));
}

Value Importer::addChannelBias(Value y, Value bias) {
  if (errorCount != 0)
    return y;
  if (typeOf(y).getRank() < 2 || typeOf(bias).getRank() != 1) {
    emitError(currentLoc) << "the bias " << bias.getType()
                          << " must have rank 1 and the output "
                          << y.getType() << " a channel dimension";
    return y;
  }
  SmallVector<int64_t> shape(typeOf(y).getRank() - 1, 1);
  shape[0] = typeOf(bias).getDimSize(0);
  return AddOp::create(b, currentLoc, y, reshape(bias, shape));
}

Value Importer::broadcastTo(Value v, ArrayRef<int64_t> shape) {
  RankedTensorType type = typeOf(v);
  if (errorCount != 0 || type.getShape() == shape)
    return v;
  int64_t offset = shape.size() - type.getRank();
  SmallVector<int64_t> dims;
  for (int64_t i = 0; i < type.getRank(); ++i)
    dims.push_back(offset + i);
  return BroadcastOp::create(b, currentLoc, type.clone(shape), v,
                             b.getDenseI64ArrayAttr(dims));
}

Value Importer::castTo(Value v, Type elementType) {
  RankedTensorType type = typeOf(v);
  if (errorCount != 0 || type.getElementType() == elementType)
    return v;
  return CastOp::create(b, currentLoc, type.clone(elementType), v);
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

LogicalResult Importer::importInputs() {
  Block &entry = fn.getBody().front();
  for (const auto &input : graph.input()) {
    if (initializers.count(input.name()))
      continue; // IR < 4 lists initializers as inputs too.
    currentLoc = NameLoc::get(b.getStringAttr(input.name()), fileLoc());
    if (!input.type().has_tensor_type())
      return emitError(currentLoc)
             << "graph input '" << input.name()
             << "' is not a tensor (sequences, maps and optionals are not "
                "supported)";
    const auto &tensorType = input.type().tensor_type();
    std::string reason;
    Type element = convertElementType(ctx, tensorType.elem_type(), &reason);
    if (!element)
      return emitError(currentLoc)
             << "graph input '" << input.name() << "': " << reason;
    if (!tensorType.has_shape())
      return emitError(currentLoc)
             << "graph input '" << input.name()
             << "' has no shape; give one with --input-shape "
             << input.name() << "=D0xD1x...";
    SmallVector<int64_t> shape;
    for (const auto &dim : tensorType.shape().dim()) {
      if (!dim.has_dim_value())
        return emitError(currentLoc)
               << "graph input '" << input.name() << "' has symbolic dimension '"
               << (dim.has_dim_param() ? dim.dim_param() : "?")
               << "'; Loom compiles static shapes: bind it with --input-shape "
               << input.name() << "=D0xD1x...";
      if (dim.dim_value() < 0)
        return emitError(currentLoc)
               << "graph input '" << input.name() << "' has dimension "
               << shape.size() << " of size " << dim.dim_value()
               << " (sizes are >= 0)";
      shape.push_back(dim.dim_value());
    }
    auto type = RankedTensorType::get(shape, element);
    auto special = options.specializedInputs.find(input.name());
    if (special != options.specializedInputs.end() &&
        special->second.getType() != type)
      return emitError(currentLoc)
             << "the value given for graph input '" << input.name()
             << "' has type " << special->second.getType() << ", expected "
             << type;
    BlockArgument arg = entry.addArgument(type, currentLoc);
    values[input.name()] = arg;
    NamedAttrList attrs;
    attrs.set(LoomDialect::kNameAttrName, b.getStringAttr(input.name()));
    argAttrs.push_back(attrs);
  }
  return success();
}

LogicalResult Importer::importOpaque(const Node &node) {
  SmallVector<Value> inputs;
  for (int i = 0; i < node.input_size(); ++i) {
    if (node.input(i).empty())
      continue;
    FailureOr<Value> v = operand(node, i);
    if (failed(v))
      return failure();
    inputs.push_back(*v);
  }
  SmallVector<Type> resultTypes;
  for (const std::string &output : node.output()) {
    std::optional<RankedTensorType> type = onnxType(output);
    if (!type)
      return error(node) << "is not supported, and ONNX shape inference gives "
                            "no static type for its output '"
                         << output << "', so it cannot be kept as loom.opaque";
    resultTypes.push_back(*type);
  }
  SmallVector<NamedAttribute> attrs;
  for (const auto &a : node.attribute()) {
    Attribute value;
    switch (a.type()) {
    case onnx::AttributeProto::INT:
      value = b.getI64IntegerAttr(a.i());
      break;
    case onnx::AttributeProto::FLOAT:
      value = b.getF32FloatAttr(a.f());
      break;
    case onnx::AttributeProto::STRING:
      value = b.getStringAttr(a.s());
      break;
    case onnx::AttributeProto::INTS:
      value = b.getI64ArrayAttr(SmallVector<int64_t>(a.ints().begin(), a.ints().end()));
      break;
    case onnx::AttributeProto::FLOATS:
      value = b.getF32ArrayAttr(SmallVector<float>(a.floats().begin(), a.floats().end()));
      break;
    default:
      value = b.getStringAttr("<" + onnx::AttributeProto::AttributeType_Name(a.type()) + ">");
    }
    attrs.push_back(b.getNamedAttr(a.name(), value));
  }
  std::string opName = node.domain().empty() ? node.op_type()
                                             : node.domain() + "." + node.op_type();
  auto op = OpaqueOp::create(b, currentLoc, resultTypes, b.getStringAttr(opName),
                             b.getDictionaryAttr(attrs), inputs);
  for (auto [i, result] : llvm::enumerate(op.getResults()))
    if (failed(setResult(node, i, result)))
      return failure();
  return success();
}

LogicalResult Importer::importNode(const Node &node, int index) {
  std::string name = node.name().empty()
                         ? node.op_type() + "_" + std::to_string(index)
                         : node.name();
  // node name ( op type ( model file ) ): IR dumps name the node, and
  // diagnostics print as "model.onnx:0:0: error: ...".
  currentLoc = NameLoc::get(
      b.getStringAttr(name),
      NameLoc::get(b.getStringAttr(node.op_type()), fileLoc()));
  currentNode = &node;
  currentName = name;
  LLVM_DEBUG(llvm::dbgs() << "node " << index << ": " << node.op_type() << " '"
                          << name << "'\n");

  bool defaultDomain = node.domain().empty() || node.domain() == "ai.onnx";
  auto it = defaultDomain ? ops.find(node.op_type())
            : node.domain() == kTrainingDomain
                ? ops.find(node.domain() + "." + node.op_type())
                : ops.end();
  if (it == ops.end()) {
    if (options.allowUnsupported)
      return importOpaque(node);
    return error(node) << "this op is not supported by Loom's importer "
                          "(--allow-unsupported keeps it as loom.opaque)";
  }
  for (const auto &a : node.attribute())
    if (!llvm::is_contained(it->second.attributes, a.name()))
      return error(node) << "attribute '" << a.name()
                         << "' is not supported";

  // Fold shape computations whose inputs are all known.
  SmallVector<DenseElementsAttr> known;
  bool allKnown = true;
  for (int i = 0; i < node.input_size() && allKnown; ++i) {
    if (node.input(i).empty()) {
      known.push_back({});
      continue;
    }
    StringRef in = node.input(i);
    if (auto c = consts.find(in); c != consts.end()) {
      known.push_back(c->second);
      continue;
    }
    if (auto special = options.specializedInputs.find(in.str());
        special != options.specializedInputs.end() &&
        !isa<FloatType>(special->second.getElementType())) {
      known.push_back(special->second);
      continue;
    }
    auto init = initializers.find(in);
    if (init != initializers.end()) {
      Type element = convertElementType(ctx, init->second->data_type());
      // Float initializers are trainable weights: never fold them away.
      if (element && !isa<FloatType>(element)) {
        FailureOr<DenseElementsAttr> attr = initializerConst(in);
        if (failed(attr))
          return failure();
        known.push_back(*attr);
        continue;
      }
    }
    allKnown = false;
  }
  if (allKnown || node.op_type() == "Shape" || node.op_type() == "Size") {
    if (!allKnown)
      known.clear();
    if (auto folded = foldNode(*this, node, known)) {
      for (auto [i, attr] : llvm::enumerate(*folded))
        if (failed(setConstResult(node, i, attr)))
          return failure();
      return success();
    }
  }

  if (failed(it->second.handler(*this, node)) || errorCount != 0)
    return failure();
  for (int i = 0; i < node.output_size(); ++i)
    if (wantsOutput(node, i) && !values.count(node.output(i)) &&
        !consts.count(node.output(i)))
      return error(node) << "output '" << node.output(i)
                         << "' is not produced by the importer";
  return success();
}

LogicalResult Importer::importOutputs() {
  SmallVector<Value> results;
  SmallVector<Attribute> resultAttrs;
  for (const auto &output : graph.output()) {
    currentLoc = NameLoc::get(b.getStringAttr(output.name()), fileLoc());
    if (!output.type().has_tensor_type())
      return emitError(currentLoc) << "graph output '" << output.name()
                                   << "' is not a tensor";
    FailureOr<Value> v = materialize(output.name(), nullptr);
    if (failed(v))
      return failure();
    results.push_back(*v);
  }
  func::ReturnOp::create(b, currentLoc, results);
  Block &entry = fn.getBody().front();
  fn.setFunctionType(b.getFunctionType(entry.getArgumentTypes(),
                                       ValueRange(results).getTypes()));
  SmallVector<DictionaryAttr> args;
  for (NamedAttrList &attrs : argAttrs)
    args.push_back(attrs.getDictionary(ctx));
  fn.setAllArgAttrs(args);
  for (auto [i, output] : llvm::enumerate(graph.output()))
    fn.setResultAttr(i, LoomDialect::kNameAttrName,
                     b.getStringAttr(output.name()));
  return success();
}

Location Importer::fileLoc() {
  return FileLineColLoc::get(ctx, modelPath, 0, 0);
}

OwningOpRef<ModuleOp> Importer::run() {
  // Builders report invalid operands as diagnostics (see LoomOps.cpp);
  // count errors so that the import stops at the first bad node.
  // An error from a builder or a type inference names no node: a note
  // says which one was being imported.
  ScopedDiagnosticHandler counter(ctx, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error) {
      ++errorCount;
      if (currentNode && !StringRef(diag.str()).starts_with("ONNX node '"))
        diag.attachNote() << "in ONNX node '" << currentName << "' ("
                          << currentNode->op_type() << ", opset "
                          << defaultOpset << ")";
    }
    return failure(); // let the next handler print it
  });
  module = ModuleOp::create(fileLoc());
  b.setInsertionPointToEnd(module->getBody());
  fn = func::FuncOp::create(b, fileLoc(), options.functionName,
                            b.getFunctionType({}, {}));
  b.setInsertionPointToStart(fn.addEntryBlock());

  if (failed(importInputs()))
    return nullptr;
  for (auto [index, node] : llvm::enumerate(graph.node()))
    if (failed(importNode(node, index)) || errorCount != 0)
      return nullptr;
  if (failed(importOutputs()))
    return nullptr;
  if (failed(mlir::verify(*module)))
    return nullptr;
  return std::move(module);
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

OwningOpRef<ModuleOp>
mlir::loom::importOnnxModel(StringRef bytes, StringRef modelPath,
                            MLIRContext *context,
                            const OnnxImportOptions &options) {
  context->loadDialect<LoomDialect, func::FuncDialect>();
  onnx::ModelProto model;
  std::string error;
  Location fileLoc = FileLineColLoc::get(context, modelPath, 0, 0);
  if (!loadOnnxModel(bytes, modelPath, options, model, error)) {
    emitError(fileLoc) << error;
    return nullptr;
  }
  return Importer(context, model, options, modelPath).run();
}

OwningOpRef<ModuleOp>
mlir::loom::importOnnxFile(StringRef path, MLIRContext *context,
                           const OnnxImportOptions &options) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    emitError(FileLineColLoc::get(context, path, 0, 0))
        << "cannot read " << path << ": " << buffer.getError().message();
    return nullptr;
  }
  return importOnnxModel((*buffer)->getBuffer(), path, context, options);
}

std::vector<std::string> mlir::loom::onnxGraphInputNames(StringRef bytes,
                                                         std::string &error) {
  onnx::ModelProto model;
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    error = "not a valid ONNX model";
    return {};
  }
  std::set<std::string> inits;
  for (const auto &init : model.graph().initializer())
    inits.insert(init.name());
  std::vector<std::string> names;
  for (const auto &input : model.graph().input())
    if (!inits.count(input.name()))
      names.push_back(input.name());
  return names;
}

std::string mlir::loom::parseOnnxInputShape(StringRef spec,
                                            OnnxImportOptions &options) {
  auto [name, dims] = spec.rsplit('=');
  if (name.empty() || dims.empty() || !spec.contains('='))
    return "--input-shape expects NAME=D0xD1x..., got '" + spec.str() + "'";
  std::vector<int64_t> shape;
  if (dims != "scalar") {
    SmallVector<StringRef> parts;
    dims.split(parts, 'x');
    for (StringRef part : parts) {
      int64_t d;
      if (part.getAsInteger(10, d) || d < 0)
        return "--input-shape: '" + part.str() + "' in '" + spec.str() +
               "' is not a dimension size";
      shape.push_back(d);
    }
  }
  options.inputShapes[name.str()] = shape;
  return "";
}
