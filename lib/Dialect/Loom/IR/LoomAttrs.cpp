//===- LoomAttrs.cpp - Loom attributes ------------------------------------===//

#include "loom/Dialect/Loom/IR/LoomAttrs.h"
#include "loom/Dialect/Loom/IR/LoomDialect.h"
#include "loom/Dialect/Loom/IR/LoomOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include <charconv>

using namespace mlir;
using namespace mlir::loom;

#include "loom/Dialect/Loom/IR/LoomEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "loom/Dialect/Loom/IR/LoomAttrs.cpp.inc"

void LoomDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "loom/Dialect/Loom/IR/LoomAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// MeshAxisAttr
//===----------------------------------------------------------------------===//

LogicalResult
MeshAxisAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                     StringAttr name, int64_t size, FloatAttr bandwidth,
                     FloatAttr latency) {
  if (!name || name.getValue().empty())
    return emitError() << "mesh axis needs a non-empty name";
  if (size < 1)
    return emitError() << "mesh axis \"" << name.getValue()
                       << "\" must have a positive size, got " << size;
  if (bandwidth && !(bandwidth.getValueAsDouble() > 0))
    return emitError() << "mesh axis \"" << name.getValue()
                       << "\" must have a positive bandwidth (bytes/s)";
  if (latency && !(latency.getValueAsDouble() >= 0))
    return emitError() << "mesh axis \"" << name.getValue()
                       << "\" must have a non-negative latency (s)";
  return success();
}

/// Shortest text that parses back to `value` as an MLIR float literal
/// (which needs a '.').
static std::string formatFloat(double value) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  std::string s(buf, ec == std::errc() ? end : buf);
  if (s.find('.') == std::string::npos) {
    size_t e = s.find_first_of("eE");
    s.insert(e == std::string::npos ? s.size() : e, ".0");
  }
  return s;
}

void MeshAxisAttr::printBody(AsmPrinter &printer) const {
  printer << "\"" << getName().getValue() << "\"=" << getSize();
  if (!getBandwidth() && !getLatency())
    return;
  printer << " {";
  bool first = true;
  if (FloatAttr bw = getBandwidth()) {
    printer << "bandwidth = " << formatFloat(bw.getValueAsDouble());
    first = false;
  }
  if (FloatAttr lat = getLatency()) {
    if (!first)
      printer << ", ";
    printer << "latency = " << formatFloat(lat.getValueAsDouble());
  }
  printer << "}";
}

MeshAxisAttr MeshAxisAttr::parseBody(AsmParser &parser) {
  MLIRContext *ctx = parser.getContext();
  SMLoc loc = parser.getCurrentLocation();
  std::string name;
  int64_t size;
  if (parser.parseString(&name) || parser.parseEqual() ||
      parser.parseInteger(size))
    return {};
  FloatAttr bandwidth, latency;
  if (succeeded(parser.parseOptionalLBrace())) {
    auto parseProp = [&]() -> ParseResult {
      StringRef key;
      SMLoc keyLoc = parser.getCurrentLocation();
      double value;
      if (parser.parseKeyword(&key) || parser.parseEqual() ||
          parser.parseFloat(value))
        return failure();
      auto attr = FloatAttr::get(Float64Type::get(ctx), value);
      if (key == "bandwidth")
        bandwidth = attr;
      else if (key == "latency")
        latency = attr;
      else
        return parser.emitError(keyLoc)
               << "unknown mesh axis property '" << key
               << "' (expected 'bandwidth' or 'latency')";
      return success();
    };
    if (parser.parseCommaSeparatedList(parseProp) || parser.parseRBrace())
      return {};
  }
  return MeshAxisAttr::getChecked(
      [&] { return parser.emitError(loc); }, ctx, StringAttr::get(ctx, name),
      size, bandwidth, latency);
}

void MeshAxisAttr::print(AsmPrinter &printer) const {
  printer << "<";
  printBody(printer);
  printer << ">";
}

Attribute MeshAxisAttr::parse(AsmParser &parser, Type) {
  if (parser.parseLess())
    return {};
  MeshAxisAttr attr = parseBody(parser);
  if (!attr || parser.parseGreater())
    return {};
  return attr;
}

//===----------------------------------------------------------------------===//
// ShardingAttr
//===----------------------------------------------------------------------===//

ShardingAttr ShardingAttr::get(MLIRContext *ctx, StringRef mesh,
                               ArrayRef<SmallVector<StringRef>> dims,
                               ArrayRef<StringRef> partialAxes,
                               ReductionKind partialKind) {
  Builder b(ctx);
  SmallVector<Attribute> dimAttrs;
  for (const SmallVector<StringRef> &axes : dims)
    dimAttrs.push_back(b.getStrArrayAttr(axes));
  return get(ctx, FlatSymbolRefAttr::get(ctx, mesh), b.getArrayAttr(dimAttrs),
             b.getStrArrayAttr(partialAxes), partialKind);
}

SmallVector<StringRef> ShardingAttr::getDimAxes(int64_t dim) const {
  SmallVector<StringRef> axes;
  for (Attribute a : cast<ArrayAttr>(getDims()[dim]))
    axes.push_back(cast<StringAttr>(a).getValue());
  return axes;
}

SmallVector<StringRef> ShardingAttr::getPartialAxisNames() const {
  SmallVector<StringRef> axes;
  for (Attribute a : getPartialAxes())
    axes.push_back(cast<StringAttr>(a).getValue());
  return axes;
}

bool ShardingAttr::isFullyReplicated() const {
  if (isPartial())
    return false;
  return llvm::all_of(getDims(), [](Attribute a) {
    return cast<ArrayAttr>(a).empty();
  });
}

LogicalResult
ShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                     FlatSymbolRefAttr mesh, ArrayAttr dims,
                     ArrayAttr partialAxes, ReductionKind partialKind) {
  if (!mesh)
    return emitError() << "sharding needs a mesh";
  llvm::DenseSet<StringAttr> seen;
  auto checkAxis = [&](Attribute a) -> LogicalResult {
    auto name = dyn_cast<StringAttr>(a);
    if (!name)
      return emitError() << "sharding axes must be strings";
    if (!seen.insert(name).second)
      return emitError() << "mesh axis \"" << name.getValue()
                         << "\" is used more than once in a sharding";
    return success();
  };
  for (Attribute dim : dims) {
    auto axes = dyn_cast<ArrayAttr>(dim);
    if (!axes)
      return emitError() << "each sharded dimension must be a list of axes";
    for (Attribute a : axes)
      if (failed(checkAxis(a)))
        return failure();
  }
  for (Attribute a : partialAxes)
    if (failed(checkAxis(a)))
      return failure();
  return success();
}

static void printAxisList(AsmPrinter &printer, ArrayAttr axes) {
  printer << "{";
  llvm::interleaveComma(axes, printer, [&](Attribute a) {
    printer << "\"" << cast<StringAttr>(a).getValue() << "\"";
  });
  printer << "}";
}

static ParseResult parseAxisList(AsmParser &parser,
                                 SmallVectorImpl<Attribute> &axes) {
  return parser.parseCommaSeparatedList(
      AsmParser::Delimiter::Braces, [&]() -> ParseResult {
        std::string name;
        if (parser.parseString(&name))
          return failure();
        axes.push_back(StringAttr::get(parser.getContext(), name));
        return success();
      });
}

void ShardingAttr::print(AsmPrinter &printer) const {
  printer << "<";
  printer.printAttributeWithoutType(getMesh());
  printer << ", [";
  llvm::interleaveComma(getDims(), printer, [&](Attribute dim) {
    printAxisList(printer, cast<ArrayAttr>(dim));
  });
  printer << "]";
  if (isPartial()) {
    printer << ", partial = " << stringifyReductionKind(getPartialKind())
            << " ";
    printAxisList(printer, getPartialAxes());
  }
  printer << ">";
}

Attribute ShardingAttr::parse(AsmParser &parser, Type) {
  MLIRContext *ctx = parser.getContext();
  SMLoc loc = parser.getCurrentLocation();
  FlatSymbolRefAttr mesh;
  if (parser.parseLess() || parser.parseAttribute(mesh) || parser.parseComma())
    return {};
  SmallVector<Attribute> dims;
  if (parser.parseCommaSeparatedList(
          AsmParser::Delimiter::Square, [&]() -> ParseResult {
            SmallVector<Attribute> axes;
            if (parseAxisList(parser, axes))
              return failure();
            dims.push_back(ArrayAttr::get(ctx, axes));
            return success();
          }))
    return {};
  SmallVector<Attribute> partialAxes;
  ReductionKind kind = ReductionKind::sum;
  if (succeeded(parser.parseOptionalComma())) {
    StringRef kindName;
    SMLoc kindLoc;
    if (parser.parseKeyword("partial") || parser.parseEqual() ||
        (kindLoc = parser.getCurrentLocation(),
         parser.parseKeyword(&kindName)))
      return {};
    std::optional<ReductionKind> parsed = symbolizeReductionKind(kindName);
    if (!parsed) {
      parser.emitError(kindLoc)
          << "unknown partial reduction '" << kindName
          << "' (expected sum, max or min)";
      return {};
    }
    kind = *parsed;
    if (parseAxisList(parser, partialAxes))
      return {};
    if (partialAxes.empty()) {
      parser.emitError(kindLoc) << "'partial' needs at least one mesh axis";
      return {};
    }
  }
  if (parser.parseGreater())
    return {};
  return ShardingAttr::getChecked([&] { return parser.emitError(loc); }, ctx,
                                  mesh, ArrayAttr::get(ctx, dims),
                                  ArrayAttr::get(ctx, partialAxes), kind);
}

LogicalResult ShardingAttr::verifyFor(Type type, Operation *anchor,
                                      StringRef what) const {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return anchor->emitOpError("has a sharding on ")
           << what << ", which is not a ranked tensor: " << type;
  auto mesh =
      SymbolTable::lookupNearestSymbolFrom<MeshOp>(anchor, getMesh());
  if (!mesh)
    return anchor->emitOpError("sharding of ")
           << what << " names " << getMesh()
           << ", which is not a loom.mesh in scope";
  if (getRank() != tensor.getRank())
    return anchor->emitOpError("sharding of ")
           << what << " has " << getRank() << " dimensions but the value has "
           << tensor.getRank() << " (" << type << ")";
  auto knownAxis = [&](StringRef axis) -> LogicalResult {
    if (mesh.getAxis(axis))
      return success();
    InFlightDiagnostic diag = anchor->emitOpError("sharding of ")
                              << what << " uses unknown axis \"" << axis
                              << "\"; mesh " << getMesh() << " has ";
    llvm::interleaveComma(mesh.getAxes(), diag, [&](Attribute a) {
      diag << "\"" << cast<MeshAxisAttr>(a).getName().getValue() << "\"";
    });
    return diag;
  };
  for (int64_t d = 0; d < getRank(); ++d) {
    int64_t devices = 1;
    for (StringRef axis : getDimAxes(d)) {
      if (failed(knownAxis(axis)))
        return failure();
      devices *= mesh.getAxis(axis).getSize();
    }
    if (tensor.getDimSize(d) % devices != 0) {
      InFlightDiagnostic diag = anchor->emitOpError("sharding of ")
                                << what << " splits dimension " << d
                                << " of size " << tensor.getDimSize(d)
                                << " over " << devices << " devices (";
      llvm::interleave(
          getDimAxes(d), diag,
          [&](StringRef a) {
            diag << "\"" << a << "\"=" << mesh.getAxis(a).getSize();
          },
          " x ");
      return diag << "), which does not divide it";
    }
  }
  for (StringRef axis : getPartialAxisNames())
    if (failed(knownAxis(axis)))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// ExternalDataAttr
//===----------------------------------------------------------------------===//

LogicalResult
ExternalDataAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                         StringAttr path, int64_t offset) {
  if (!path || path.getValue().empty())
    return emitError() << "external data needs a file path";
  if (offset < 0)
    return emitError() << "external data offset must be non-negative, got "
                       << offset;
  return success();
}
