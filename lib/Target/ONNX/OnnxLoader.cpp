//===- OnnxLoader.cpp - Load, check, upgrade, infer an ONNX model ---------===//

#include "OnnxLoader.h"
#include "OnnxShapeInference.h"
#include "OnnxImporter.h"

#include "llvm/Support/Path.h"

#include "onnx/checker.h"
#include <map>
#include <set>
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"

#include <algorithm>
#include <exception>
#include <sstream>

using namespace mlir::loom::onnx_import;

int64_t mlir::loom::onnx_import::defaultOpset(const onnx::ModelProto &model) {
  for (const auto &opset : model.opset_import())
    if (opset.domain().empty() || opset.domain() == "ai.onnx")
      return opset.version();
  return -1;
}

namespace {

/// Runs `fn`, turning an exception into `error` (prefixed by `stage`).
template <typename Fn>
bool guarded(const char *stage, std::string &error, Fn &&fn) {
  try {
    fn();
    return true;
  } catch (const std::exception &e) {
    error = std::string(stage) + ": " + e.what();
  } catch (...) {
    error = std::string(stage) + ": unknown error";
  }
  return false;
}

/// The largest rank a value may declare or an operand may hold entries for
/// (a target shape, axes, pads: twice that for pads). ONNX 1.12's inference
/// makes an output of that rank: an Expand whose shape input is declared
/// 2^31 - 1 long hung it; a graph input of a million dimensions costs its
/// inference and Loom's types as much.
constexpr int64_t kMaxRank = 64;

/// The rank and sizes a value declares: rank at most kMaxRank, sizes >= 0,
/// at most 2^31 - 1 each and 2^46 in all. They bound the work ONNX's shape
/// inference and Loom do (ONNX 1.12's pooling inference loops over a
/// dimension: 2^40 hung it). Returns the problem, or "".
template <typename Dims>
std::string checkSizes(const std::string &name, int64_t rank,
                       const Dims &dims) {
  using mlir::loom::onnx_import::Importer;
  const int64_t kMaxDim = Importer::kMaxSize,
                kMaxElements = Importer::kMaxElements;
  if (rank > kMaxRank)
    return "value '" + name + "' has rank " + std::to_string(rank) +
           "; Loom supports ranks up to " + std::to_string(kMaxRank);
  double elements = 1;
  for (int64_t d : dims) {
    if (d < 0)
      return "value '" + name + "' has a dimension of size " +
             std::to_string(d) + " (sizes are >= 0)";
    if (d > kMaxDim)
      return "value '" + name + "' has a dimension of size " +
             std::to_string(d) + "; Loom supports sizes up to 2^31 - 1";
    elements *= double(d);
  }
  if (elements > double(kMaxElements))
    return "value '" + name + "' has more than 2^46 elements";
  return "";
}

using Ranks = std::map<std::string, int>;

std::string nodeName(int i, const onnx::NodeProto &node) {
  return "node " + std::to_string(i) + " ('" + node.name() + "', " +
         node.op_type() + "): ";
}

/// Convolutions and pools: ONNX 1.12's shape inference divides by strides
/// and indexes by rank without checking (SIGFPE, SIGSEGV).
std::string checkWindowed(int i, const onnx::NodeProto &node, Ranks &ranks) {
  static const std::set<std::string> windowed = {
      "Conv",        "ConvInteger", "QLinearConv", "ConvTranspose",
      "MaxPool",     "AveragePool", "LpPool",      "MaxUnpool"};
  if (!windowed.count(node.op_type()))
    return "";
  bool known = node.input_size() > 0 && ranks.count(node.input(0));
  int spatial = known ? ranks[node.input(0)] - 2 : -1;
  if (known && spatial < 1)
    return nodeName(i, node) + "input '" + node.input(0) + "' has rank " +
           std::to_string(spatial + 2) +
           "; it needs a batch, a channel and spatial dimensions";
  bool conv = node.op_type().find("Conv") != std::string::npos;
  int w = node.op_type() == "QLinearConv" ? 3 : 1;
  if (conv && known && node.input_size() > w && ranks.count(node.input(w)) &&
      ranks[node.input(w)] != spatial + 2)
    return nodeName(i, node) + "the weight '" + node.input(w) + "' has rank " +
           std::to_string(ranks[node.input(w)]) + ", the input " +
           std::to_string(spatial + 2);
  for (const auto &a : node.attribute()) {
    if (a.name() == "group" && a.i() < 1)
      return nodeName(i, node) + "group = " + std::to_string(a.i()) +
             " must be positive";
    bool positive = a.name() == "strides" || a.name() == "dilations" ||
                    a.name() == "kernel_shape" || a.name() == "output_shape";
    bool pads = a.name() == "pads";
    if (!positive && !pads && a.name() != "output_padding")
      continue;
    // At most Loom's largest size: the window arithmetic of the importer
    // and of ONNX's inference (products of two such values) stays in int64.
    const int64_t kMaxWindow = mlir::loom::onnx_import::Importer::kMaxSize;
    for (int64_t v : a.ints()) {
      if (positive ? v < 1 : v < 0)
        return nodeName(i, node) + a.name() + " holds " + std::to_string(v) +
               (positive ? "; they must be positive" : "; they must be >= 0");
      if (v > kMaxWindow)
        return nodeName(i, node) + a.name() + " holds " + std::to_string(v) +
               "; Loom supports window sizes up to 2^31 - 1";
    }
    if (a.name() == "output_shape")
      continue; // its spatial sizes, or all of them: checked on import
    size_t want = size_t(std::max(spatial, 0)) * (pads ? 2 : 1);
    if (known && a.ints_size() && size_t(a.ints_size()) != want)
      return nodeName(i, node) + a.name() + " has " +
             std::to_string(a.ints_size()) + " values; " +
             std::to_string(want) + " for " + std::to_string(spatial) +
             " spatial dimensions";
  }
  return "";
}

/// Operands whose length is a rank (a target shape, axes, pads, sizes):
/// at most kMaxRank entries (twice that for pads). `lengths` holds the
/// declared length of every rank-1 value that has one.
std::string checkShapeOperands(int i, const onnx::NodeProto &node,
                               const std::map<std::string, int64_t> &lengths) {
  static const std::map<std::string, std::vector<int>> operands = {
      {"Expand", {1}},   {"Reshape", {1}}, {"ConstantOfShape", {0}},
      {"Unsqueeze", {1}}, {"Squeeze", {1}}, {"Tile", {1}},
      {"Pad", {1}},      {"Slice", {1, 2, 3, 4}}, {"Resize", {1, 2, 3}},
      {"Upsample", {1}}, {"ReduceSum", {1}}, {"ReduceMean", {1}},
      {"ReduceMax", {1}}, {"ReduceMin", {1}}, {"ReduceProd", {1}},
      {"ReduceL2", {1}}};
  auto it = operands.find(node.op_type());
  if (it == operands.end())
    return "";
  for (int k : it->second) {
    if (k >= node.input_size() || !lengths.count(node.input(k)))
      continue;
    int64_t n = lengths.at(node.input(k)),
            most = node.op_type() == "Pad" ? 2 * kMaxRank : kMaxRank;
    if (n > most)
      return nodeName(i, node) + "input " + std::to_string(k) + " ('" +
             node.input(k) + "') holds " + std::to_string(n) +
             " entries, one per dimension; Loom supports ranks up to " +
             std::to_string(kMaxRank);
  }
  return "";
}

/// An axis within the first input's rank (LayerNormalization's inference
/// in ONNX 1.12 indexes by it unchecked); MaxUnpool's indices of X's rank
/// (its inference reads past them otherwise).
std::string checkAxes(int i, const onnx::NodeProto &node, Ranks &ranks) {
  static const std::set<std::string> axial = {
      "LayerNormalization", "Softmax", "LogSoftmax", "Hardmax", "Gather",
      "GatherElements",     "ArgMax",  "ArgMin",     "Split",   "Concat",
      "Flatten"};
  bool known = node.input_size() > 0 && ranks.count(node.input(0));
  if (axial.count(node.op_type()) && known)
    for (const auto &a : node.attribute()) {
      if (a.name() != "axis" || a.type() != onnx::AttributeProto::INT)
        continue;
      int64_t r = ranks[node.input(0)],
              hi = node.op_type() == "Flatten" ? r : r - 1;
      if (a.i() < -r || a.i() > hi)
        return nodeName(i, node) + "axis " + std::to_string(a.i()) +
               " is outside [" + std::to_string(-r) + ", " +
               std::to_string(hi) + "] for input '" + node.input(0) +
               "' of rank " + std::to_string(r);
    }
  if (node.op_type() == "MaxUnpool" && node.input_size() >= 2 && known &&
      ranks.count(node.input(1)) &&
      ranks[node.input(0)] != ranks[node.input(1)])
    return nodeName(i, node) + "the indices '" + node.input(1) + "' (rank " +
           std::to_string(ranks[node.input(1)]) +
           ") must have the shape of X '" + node.input(0) + "' (rank " +
           std::to_string(ranks[node.input(0)]) + ")";
  return "";
}

/// What ONNX's checker, shape inference and version converter assume and
/// do not check, checked first: every value the top-level graph reads is
/// defined before it is read (by a graph input, an initializer or an
/// earlier node: a graph output no node produces crashed the converter),
/// declared sizes are in range, and the attributes and ranks of the ops
/// whose inference crashed on hostile files (checkWindowed, checkAxes).
bool checkGraphValues(const onnx::GraphProto &graph, std::string &error) {
  std::set<std::string> defined;
  Ranks ranks; // known before shape inference
  std::map<std::string, int64_t> lengths; // of rank-1 values
  auto note = [&](const onnx::ValueInfoProto &v) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape())
      return;
    ranks[v.name()] = v.type().tensor_type().shape().dim_size();
    if (ranks[v.name()] == 1 &&
        v.type().tensor_type().shape().dim(0).has_dim_value())
      lengths[v.name()] = v.type().tensor_type().shape().dim(0).dim_value();
    std::vector<int64_t> dims;
    for (const auto &d : v.type().tensor_type().shape().dim())
      if (d.has_dim_value())
        dims.push_back(d.dim_value());
    if (error.empty())
      error = checkSizes(v.name(), v.type().tensor_type().shape().dim_size(),
                         dims);
  };
  for (const auto &v : graph.input())
    note(v);
  for (const auto &v : graph.value_info())
    note(v);
  for (const auto &v : graph.output())
    note(v);
  for (const auto &t : graph.initializer()) {
    ranks[t.name()] = t.dims_size();
    if (t.dims_size() == 1)
      lengths[t.name()] = t.dims(0);
    if (error.empty())
      error = checkSizes(t.name(), t.dims_size(), t.dims());
  }
  if (!error.empty())
    return false;
  for (const auto &v : graph.input())
    defined.insert(v.name());
  for (const auto &t : graph.initializer())
    defined.insert(t.name());
  for (const auto &t : graph.sparse_initializer())
    defined.insert(t.values().name());
  for (int i = 0; i < graph.node_size(); ++i) {
    const onnx::NodeProto &node = graph.node(i);
    for (const std::string &in : node.input())
      if (!in.empty() && !defined.count(in)) {
        error = nodeName(i, node).substr(0, nodeName(i, node).size() - 2) +
                " reads '" + in +
                "', which no graph input, initializer or earlier node defines";
        return false;
      }
    error = checkWindowed(i, node, ranks);
    if (error.empty())
      error = checkAxes(i, node, ranks);
    if (error.empty())
      error = checkShapeOperands(i, node, lengths);
    if (!error.empty())
      return false;
    for (const std::string &out : node.output())
      if (!out.empty())
        defined.insert(out);
  }
  for (const auto &v : graph.output())
    if (!defined.count(v.name())) {
      error = "graph output '" + v.name() +
              "' is not produced by any node, graph input or initializer";
      return false;
    }
  return true;
}

/// OnnxImportOptions::dataShapes: the data's shape fills the dimensions
/// the model leaves open and must agree with the others.
bool bindDataShapes(onnx::GraphProto &graph,
                    const std::set<std::string> &initializers,
                    const mlir::loom::OnnxImportOptions &options,
                    std::string &error) {
  for (const auto &[name, dims] : options.dataShapes) {
    if (options.inputShapes.count(name) || initializers.count(name))
      continue;
    for (auto &input : *graph.mutable_input()) {
      if (input.name() != name || !input.type().has_tensor_type())
        continue;
      auto *tensorType = input.mutable_type()->mutable_tensor_type();
      if (!tensorType->has_shape()) {
        for (int64_t d : dims)
          tensorType->mutable_shape()->add_dim()->set_dim_value(d);
        continue;
      }
      auto *shape = tensorType->mutable_shape();
      std::ostringstream os;
      if (shape->dim_size() != static_cast<int>(dims.size())) {
        os << "the data given for graph input '" << name << "' has rank "
           << dims.size() << ", the input has rank " << shape->dim_size();
        error = os.str();
        return false;
      }
      for (int i = 0; i < shape->dim_size(); ++i) {
        auto *dim = shape->mutable_dim(i);
        if (dim->has_dim_value() && dim->dim_value() != dims[i]) {
          os << "the data given for graph input '" << name << "' has "
             << dims[i] << " in dimension " << i << ", the input has "
             << dim->dim_value();
          error = os.str();
          return false;
        }
        dim->set_dim_value(dims[i]);
      }
    }
  }
  return true;
}

bool bindInputShapes(onnx::ModelProto &model,
                     const mlir::loom::OnnxImportOptions &options,
                     std::string &error) {
  onnx::GraphProto *graph = model.mutable_graph();
  std::set<std::string> initializers;
  for (const auto &init : graph->initializer())
    initializers.insert(init.name());
  for (const auto &[name, dims] : options.inputShapes) {
    onnx::ValueInfoProto *input = nullptr;
    for (auto &candidate : *graph->mutable_input())
      if (candidate.name() == name && !initializers.count(name))
        input = &candidate;
    if (!input) {
      std::ostringstream os;
      os << "--input-shape names '" << name
         << "', which is not a graph input; inputs are:";
      for (const auto &candidate : graph->input())
        if (!initializers.count(candidate.name()))
          os << " '" << candidate.name() << "'";
      error = os.str();
      return false;
    }
    if (!input->type().has_tensor_type()) {
      error = "--input-shape: graph input '" + name + "' is not a tensor";
      return false;
    }
    auto *tensorType = input->mutable_type()->mutable_tensor_type();
    if (tensorType->has_shape() &&
        tensorType->shape().dim_size() != static_cast<int>(dims.size())) {
      std::ostringstream os;
      os << "--input-shape gives " << dims.size() << " dimensions for '" << name
         << "', which has rank " << tensorType->shape().dim_size();
      error = os.str();
      return false;
    }
    auto *shape = tensorType->mutable_shape();
    shape->clear_dim();
    for (int64_t d : dims)
      shape->add_dim()->set_dim_value(d);
  }
  return bindDataShapes(*graph, initializers, options, error);
}

/// Whether shape inference found the rank of `name` (a graph input, an
/// initializer or a value_info entry).
bool hasKnownRank(const onnx::GraphProto &graph, const std::string &name) {
  auto known = [&](const onnx::ValueInfoProto &v) {
    return v.name() == name && v.type().has_tensor_type() &&
           v.type().tensor_type().has_shape();
  };
  for (const auto &init : graph.initializer())
    if (init.name() == name)
      return true;
  return std::any_of(graph.input().begin(), graph.input().end(), known) ||
         std::any_of(graph.value_info().begin(), graph.value_info().end(),
                     known) ||
         std::any_of(graph.output().begin(), graph.output().end(), known);
}

/// Before opset 13, Softmax and LogSoftmax flatten their input to 2-D at
/// `axis` (default 1). ONNX's version converter rewrites them only when it
/// knows the input's shape ("Version conversion for Softmax failed because
/// input shape is unknown", e.g. after a Reshape to a computed shape, which
/// ONNX Runtime runs). Those are spelled out here, in ops whose conversion
/// needs no shape: Flatten(axis), the 2-D (log-)softmax over dimension 1 as
/// ReduceMax, Sub, Exp, ReduceSum and Div (Log, Sub), and a Reshape back to
/// Shape(input). Returns how many nodes were rewritten.
int expandLegacySoftmax(onnx::GraphProto &graph) {
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  int rewritten = 0;
  for (const onnx::NodeProto &node : graph.node()) {
    bool legacy = (node.domain().empty() || node.domain() == "ai.onnx") &&
                  (node.op_type() == "Softmax" ||
                   node.op_type() == "LogSoftmax") &&
                  node.input_size() == 1 && node.output_size() == 1 &&
                  !hasKnownRank(graph, node.input(0));
    if (!legacy) {
      *nodes.Add() = node;
      continue;
    }
    int64_t axis = 1;
    for (const auto &a : node.attribute())
      if (a.name() == "axis")
        axis = a.i();
    const std::string &x = node.input(0), &y = node.output(0);
    std::string p = y + "__loom_legacy_" + node.op_type() + "_";
    auto add = [&](const char *op, std::vector<std::string> in,
                   const std::string &out) -> onnx::NodeProto & {
      onnx::NodeProto &n = *nodes.Add();
      n.set_op_type(op);
      n.set_name(p + op);
      for (const std::string &i : in)
        n.add_input(i);
      n.add_output(out);
      return n;
    };
    auto reduce = [&](const char *op, const std::string &in,
                      const std::string &out) {
      onnx::NodeProto &n = add(op, {in}, out);
      onnx::AttributeProto *axes = n.add_attribute();
      axes->set_name("axes");
      axes->set_type(onnx::AttributeProto::INTS);
      axes->add_ints(1);
      onnx::AttributeProto *keep = n.add_attribute();
      keep->set_name("keepdims");
      keep->set_type(onnx::AttributeProto::INT);
      keep->set_i(1);
    };
    onnx::AttributeProto *flattenAxis =
        add("Flatten", {x}, p + "flat").add_attribute();
    flattenAxis->set_name("axis");
    flattenAxis->set_type(onnx::AttributeProto::INT);
    flattenAxis->set_i(axis);
    reduce("ReduceMax", p + "flat", p + "max");
    add("Sub", {p + "flat", p + "max"}, p + "shifted");
    add("Exp", {p + "shifted"}, p + "exp");
    reduce("ReduceSum", p + "exp", p + "sum");
    if (node.op_type() == "Softmax") {
      add("Div", {p + "exp", p + "sum"}, p + "2d");
    } else {
      add("Log", {p + "sum"}, p + "logsum");
      add("Sub", {p + "shifted", p + "logsum"}, p + "2d");
    }
    add("Shape", {x}, p + "shape");
    add("Reshape", {p + "2d", p + "shape"}, y);
    ++rewritten;
  }
  if (rewritten)
    graph.mutable_node()->Swap(&nodes);
  return rewritten;
}

} // namespace

bool mlir::loom::onnx_import::loadOnnxModel(llvm::StringRef bytes,
                                            llvm::StringRef modelPath,
                                            const OnnxImportOptions &options,
                                            onnx::ModelProto &model,
                                            std::string &error) {
  if (bytes.size() > static_cast<size_t>(INT32_MAX)) {
    error = "the model is larger than 2 GiB; store its weights as ONNX "
            "external data";
    return false;
  }
  if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    error = "not a valid ONNX model: the protobuf could not be parsed "
            "(truncated or not an ONNX file)";
    return false;
  }
  if (!model.has_graph()) {
    error = "not a valid ONNX model: it has no graph";
    return false;
  }
  int64_t opset = defaultOpset(model);
  if (opset < 0) {
    // Graphs of training ops only (ONNX's Adam/Momentum tests) need no
    // default-domain opset.
    bool trainingOnly = model.graph().node_size() > 0;
    for (const auto &node : model.graph().node())
      trainingOnly &= node.domain() == kTrainingDomain;
    if (!trainingOnly) {
      error = "the model imports no version of the default ONNX opset "
              "(opset_import has no entry for domain \"\" or \"ai.onnx\")";
      return false;
    }
    opset = options.minimumOpset;
  }
  int64_t maxOpset = onnx::OpSchemaRegistry::DomainToVersionRange::Instance()
                         .Map()
                         .at(onnx::ONNX_DOMAIN)
                         .second;
  if (opset > maxOpset) {
    error = "the model uses opset " + std::to_string(opset) +
            " of the default ONNX domain; this build of ONNX (1.12) knows "
            "opsets up to " +
            std::to_string(maxOpset);
    return false;
  }
  if (!bindInputShapes(model, options, error) ||
      !checkGraphValues(model.graph(), error))
    return false;
  // The checker finds external data files relative to the model's path only
  // when given the path (ONNX 1.12 has no model-directory option otherwise).
  // Its locations are checked first, so that no file outside the model's
  // directory is opened, not even by the checker.
  bool external = false;
  std::string modelDir = llvm::sys::path::parent_path(modelPath).str();
  for (const auto &init : model.graph().initializer()) {
    if (init.data_location() != onnx::TensorProto::EXTERNAL)
      continue;
    external = true;
    ExternalData where;
    if (!resolveExternalData(init, modelDir, kUnknownBytes, where, error))
      return false;
  }
  // Inference, and the ranks it inferred checked as declared ones are: an
  // Expand whose target shape is derived (Reshape, Concat) can be given an
  // output of any rank. (Inferred sizes are checked where the importer
  // builds each node's results, with the node named.)
  auto infer = [&] {
    if (!inferShapes(model, error))
      return false;
    const onnx::GraphProto &g = model.graph();
    for (const auto *values : {&g.value_info(), &g.output()})
      for (const onnx::ValueInfoProto &v : *values) {
        if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape())
          continue;
        std::string wrong = checkSizes(
            v.name(), v.type().tensor_type().shape().dim_size(),
            std::vector<int64_t>());
        if (!wrong.empty()) {
          error = "ONNX's shape inference gives a value Loom cannot take: " + wrong;
          return false;
        }
      }
    return true;
  };
  if (!guarded("ONNX checker", error, [&] {
        if (external && !modelPath.empty())
          onnx::checker::check_model(modelPath.str());
        else
          onnx::checker::check_model(model);
      }))
    return false;
  if (!infer())
    return false;
  if (opset < options.minimumOpset) {
    if (opset < 13 && options.minimumOpset >= 13 &&
        expandLegacySoftmax(*model.mutable_graph()) && !infer())
      return false;
    // In the shape inference helper's process: the converter's adapters
    // crash on malformed models too.
    if (!convertVersion(model, static_cast<int>(options.minimumOpset),
                        error)) {
      error = "cannot upgrade the model from opset " + std::to_string(opset) +
              " to " + std::to_string(options.minimumOpset) + ": " + error;
      return false;
    }
    if (!infer())
      return false;
  }
  return true;
}
