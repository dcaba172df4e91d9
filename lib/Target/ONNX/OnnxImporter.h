//===- OnnxImporter.h - ONNX graph -> loom (internal) -----------*- C++ -*-===//
//
// The importer walks a checked, shape-inferred graph in order. Every ONNX
// value is either an SSA value or a constant known at import time (an
// initializer, a Constant node, or the folded result of a shape
// computation); constants become SSA values only when an op consumes them
// as data. Float initializers consumed as data become loom.parameter
// symbols bound to function arguments.
//
// Handlers (Onnx*Ops.cpp) map one node each. They read inputs with
// operand()/constInts(), attributes with the attr*() helpers, and bind
// outputs with setResult(), which checks the type against ONNX's shape
// inference so an importer bug cannot silently change a shape.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_LIB_TARGET_ONNX_ONNXIMPORTER_H
#define LOOM_LIB_TARGET_ONNX_ONNXIMPORTER_H

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "OnnxLoader.h"
#include "loom/Target/ONNX/ImportONNX.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "onnx/onnx_pb.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <functional>
#include <limits>
#include <optional>

/// `LOOM_TRY(Value v, importer.operand(node, 0));` declares `v` from a
/// FailureOr, returning failure() from the enclosing function on error.
#define LOOM_TRY_CONCAT_(a, b) a##b
#define LOOM_TRY_NAME_(line) LOOM_TRY_CONCAT_(loomTryResult, line)
#define LOOM_TRY(decl, expr)                                                   \
  auto LOOM_TRY_NAME_(__LINE__) = (expr);                                      \
  if (::mlir::failed(LOOM_TRY_NAME_(__LINE__)))                                \
    return ::mlir::failure();                                                  \
  decl = std::move(*LOOM_TRY_NAME_(__LINE__))

namespace mlir::loom::onnx_import {

/// `v` as an int64, saturated (NaN is 0): a double from a file (a scale, a
/// Range's bounds, a cast constant) may be 1e30, and converting that to an
/// integer is undefined.
inline int64_t saturatingInt(double v) {
  constexpr double kTop = 9223372036854775808.0; // 2^63
  if (!(v == v))
    return 0;
  if (v >= kTop)
    return std::numeric_limits<int64_t>::max();
  if (v <= -kTop)
    return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

class Importer;
using Node = onnx::NodeProto;
using Handler = LogicalResult (*)(Importer &, const Node &);

/// How an ONNX op type is imported.
struct OpEntry {
  Handler handler;
  /// Attributes the handler understands; any other attribute is an error.
  std::vector<std::string> attributes;
};

/// Registration of handlers by op type (default domain).
using OpTable = llvm::StringMap<OpEntry>;
void registerElementwiseOps(OpTable &table);
void registerNNOps(OpTable &table);
void registerShapeOps(OpTable &table);
void registerResamplingOps(OpTable &table);
/// LSTM, GRU, RNN (OnnxRecurrentOps.cpp).
void registerRecurrentOps(OpTable &table);
/// Scan and Loop, unrolled (OnnxLoopOps.cpp).
void registerLoopOps(OpTable &table);

/// Validates a TensorProto's dims (non-negative, a size that fits in
/// memory) into `shape`.
bool validDims(const onnx::TensorProto &tensor, SmallVectorImpl<int64_t> &shape,
               std::string &error);
/// Where an EXTERNAL tensor's bytes are: `location` resolved under the
/// model's directory, `offset` and `length` (-1: not given).
struct ExternalData {
  std::string path;
  int64_t offset = 0, length = -1;
};
/// Reads `tensor`'s external_data entries: the location must be a relative
/// path of an existing file that stays inside `modelDir` (after `..` and
/// symbolic links), offset and length non-negative decimal integers, and
/// the file must hold `bytes` bytes from the offset (and length, if given,
/// must be `bytes`; kUnknownBytes: not checked). Errors name the tensor and
/// what is wrong.
constexpr uint64_t kUnknownBytes = ~uint64_t(0);
bool resolveExternalData(const onnx::TensorProto &tensor, StringRef modelDir,
                         uint64_t bytes, ExternalData &out, std::string &error);
/// Little-endian bytes of a tensor's elements, wherever the proto keeps
/// them (raw_data, typed fields, or an external file under `modelDir`).
FailureOr<std::vector<char>> tensorBytes(const onnx::TensorProto &tensor,
                                         Type elementType, int64_t numElements,
                                         StringRef modelDir,
                                         std::string &error);
/// A dense_resource blob name from a tensor name.
std::string sanitizeBlobName(StringRef name);
/// ai.onnx.preview.training ops, keyed "ai.onnx.preview.training.<op>".
void registerTrainingOps(OpTable &table);

/// ONNX Reshape's target shape: 0 copies the input dimension (unless
/// `allowZero`), -1 is inferred. Fails with a message.
FailureOr<SmallVector<int64_t>> reshapeTarget(ArrayRef<int64_t> input,
                                              ArrayRef<int64_t> target,
                                              bool allowZero,
                                              std::string &error);
/// Numpy broadcast of two shapes; fails if incompatible.
FailureOr<SmallVector<int64_t>> broadcastShape(ArrayRef<int64_t> a,
                                               ArrayRef<int64_t> b);
/// ONNX Slice parameters for one axis, clamped as the spec says.
struct SliceRange {
  int64_t start, end, step, count;
};
SliceRange normalizeSlice(int64_t start, int64_t end, int64_t step,
                          int64_t size);

/// Element type of an ONNX TensorProto data type, or null (with a reason).
Type convertElementType(MLIRContext *ctx, int32_t dataType,
                        std::string *reason = nullptr);
/// Host-side evaluation of shape computations; null when `node` is not
/// foldable or the result would be large. Results are one per output.
std::optional<SmallVector<DenseElementsAttr>>
foldNode(Importer &importer, const Node &node,
         ArrayRef<DenseElementsAttr> inputs);

class Importer {
public:
  Importer(MLIRContext *ctx, const onnx::ModelProto &model,
           const OnnxImportOptions &options, StringRef modelPath);
  OwningOpRef<ModuleOp> run();

  //===--------------------------------------------------------------------===//
  // For handlers
  //===--------------------------------------------------------------------===//

  OpBuilder &builder() { return b; }
  MLIRContext *context() { return ctx; }
  Location loc() const { return currentLoc; }
  int64_t opset() const { return defaultOpset; }

  /// An error at the current node, prefixed with the node's identity.
  InFlightDiagnostic error(const Node &node);

  bool hasInput(const Node &node, int i) const {
    return i < node.input_size() && !node.input(i).empty();
  }
  /// Input `i` as an SSA value (materializing constants and parameters).
  FailureOr<Value> operand(const Node &node, int i);
  /// The value of tensor `name` (an attribute naming a tensor, as
  /// Gradient's `y`).
  FailureOr<Value> valueNamed(const Node &node, StringRef name) {
    return materialize(name, &node);
  }
  /// Input `i` if present, else a null Value.
  FailureOr<Value> optionalOperand(const Node &node, int i);
  /// Optional input `i` that configures the op (Clip bounds, ...): a known
  /// initializer becomes a constant here, never a trainable parameter.
  FailureOr<Value> configOperand(const Node &node, int i);
  /// Input `i`, which must be known at import time.
  FailureOr<DenseElementsAttr> constInput(const Node &node, int i,
                                          StringRef what);
  FailureOr<SmallVector<int64_t>> constInts(const Node &node, int i,
                                            StringRef what);
  FailureOr<double> constScalar(const Node &node, int i, StringRef what);
  /// The ONNX type of input `i` (from the graph's inferred types).
  FailureOr<RankedTensorType> inputType(const Node &node, int i);
  bool wantsOutput(const Node &node, int i) const {
    return i < node.output_size() && !node.output(i).empty();
  }

  /// Whether input `i` is known at import time (constInput succeeds).
  bool knownInput(const Node &node, int i) const;
  /// Imports the nodes of `g` (a branch of If) into the current function:
  /// its initializers and inferred types join the graph's, and its nodes
  /// read the enclosing graph's values by name.
  LogicalResult importSubgraph(const onnx::GraphProto &g);
  /// The value named `name` (a subgraph's output), materialized.
  FailureOr<Value> valueNamed(StringRef name);
  /// A subgraph input (a Scan or Loop body's) bound to `value` or to a
  /// constant for the iteration about to be imported.
  void bindValue(StringRef name, Value value) {
    consts.erase(name);
    values[name] = value;
  }
  void bindConst(StringRef name, DenseElementsAttr value) {
    values.erase(name);
    consts[name] = value;
  }
  /// Forgets what a subgraph's value held (before the next iteration of a
  /// body binds it again).
  void forget(StringRef name) {
    values.erase(name);
    consts.erase(name);
  }
  /// The constant named `name`, if it is one.
  std::optional<DenseElementsAttr> constNamed(StringRef name) const {
    if (auto it = consts.find(name); it != consts.end())
      return it->second;
    return std::nullopt;
  }

  /// Binds output `i`; fails if ONNX inferred a different type.
  LogicalResult setResult(const Node &node, int i, Value value);
  LogicalResult setConstResult(const Node &node, int i, DenseElementsAttr value);

  bool hasAttr(const Node &node, StringRef name) const;
  const onnx::AttributeProto *attr(const Node &node, StringRef name) const;
  int64_t attrInt(const Node &node, StringRef name, int64_t dflt) const;
  float attrFloat(const Node &node, StringRef name, float dflt) const;
  std::string attrString(const Node &node, StringRef name,
                         StringRef dflt) const;
  SmallVector<int64_t> attrInts(const Node &node, StringRef name) const;
  SmallVector<float> attrFloats(const Node &node, StringRef name) const;

  /// Converts a TensorProto (initializer or attribute) to an elements
  /// attribute, as dense_resource when large and `allowResource`.
  FailureOr<ElementsAttr> tensorAttr(const onnx::TensorProto &tensor,
                                     bool allowResource);

  //===--------------------------------------------------------------------===//
  // Op building helpers
  //===--------------------------------------------------------------------===//

  /// A scalar (rank-0) constant of element type `elementType`.
  Value scalar(Type elementType, double value);
  /// A constant from an elements attribute.
  Value constant(ElementsAttr value);
  Value reshape(Value v, ArrayRef<int64_t> shape);
  /// The entries `indices` of `v` along `axis`, in that order (a gather of
  /// constant indices).
  Value gatherIndices(Value v, ArrayRef<int64_t> indices, int64_t axis);
  /// The most indices `gatherIndices` takes: the list and its constant are
  /// built here, so their size (a dimension from the file) is bounded.
  static constexpr int64_t kMaxIndices = int64_t(1) << 24;
  /// The largest size and element count of any value: the graph's declared
  /// sizes (OnnxLoader.cpp) and every value the importer builds; the
  /// dialect's (IR input has the same).
  static constexpr int64_t kMaxSize = ::mlir::loom::kMaxDimSize,
                           kMaxElements = ::mlir::loom::kMaxElements;
  /// Fails, naming `node` and `what` needs them, when `count` indices are
  /// more than kMaxIndices.
  LogicalResult checkIndexCount(const Node &node, int64_t count,
                                StringRef what);
  /// `v` padded by `low`/`high` per dimension with `value`; negative
  /// amounts crop. Fails (naming `node`) when a crop removes more than a
  /// dimension holds.
  FailureOr<Value> padOrCrop(const Node &node, Value v, ArrayRef<int64_t> low,
                             ArrayRef<int64_t> high, double value);
  /// `y` (batch, channels, spatial...) plus a per-channel `bias` [C].
  Value addChannelBias(Value y, Value bias);
  /// Numpy-broadcasts `v` to `shape` (aligned at the trailing dimension).
  Value broadcastTo(Value v, ArrayRef<int64_t> shape);
  Value castTo(Value v, Type elementType);

  static RankedTensorType typeOf(Value v) {
    return cast<RankedTensorType>(v.getType());
  }
  /// Normalizes a possibly negative axis; fails if out of range.
  FailureOr<int64_t> normalizeAxis(const Node &node, int64_t axis,
                                   int64_t rank);

private:
  /// `g`'s initializers and the types ONNX inferred for its values.
  void addNames(const onnx::GraphProto &g);
  LogicalResult importInitializers();
  LogicalResult importInputs();
  LogicalResult importNode(const Node &node, int index);
  LogicalResult importOpaque(const Node &node);
  LogicalResult importOutputs();
  FailureOr<Value> materialize(StringRef name, const Node *user);
  FailureOr<Value> parameterFor(const onnx::TensorProto &init);
  std::optional<RankedTensorType> onnxType(StringRef name);
  Location fileLoc();
  FailureOr<DenseElementsAttr> initializerConst(StringRef name);

  MLIRContext *ctx;
  const onnx::ModelProto &model;
  const onnx::GraphProto &graph;
  const OnnxImportOptions &options;
  std::string modelPath, modelDir;
  int64_t defaultOpset;
  OpBuilder b;
  Location currentLoc;
  const Node *currentNode = nullptr;
  /// The node's name, or OpType_index for unnamed nodes.
  std::string currentName;
  OwningOpRef<ModuleOp> module;
  func::FuncOp fn;
  OpTable ops;
  int errorCount = 0;

  /// Attributes of the function's arguments, in order.
  SmallVector<NamedAttrList> argAttrs;
  llvm::StringMap<Value> values;
  llvm::StringMap<DenseElementsAttr> consts;
  llvm::StringMap<const onnx::TensorProto *> initializers;
  llvm::StringMap<const onnx::TypeProto *> types;
  /// Values that BatchNormalization reads as running statistics: their
  /// initializers are buffers, not trainable weights.
  llvm::StringSet<> buffers;
};

} // namespace mlir::loom::onnx_import

#endif // LOOM_LIB_TARGET_ONNX_ONNXIMPORTER_H
