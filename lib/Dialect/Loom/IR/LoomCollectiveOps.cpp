//===- LoomCollectiveOps.cpp - Verifiers and rules of the collectives -----===//

#include "loom/Dialect/Loom/IR/LoomOps.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::loom;

/// Checks the mesh and axes of a collective and returns the group size.
static FailureOr<int64_t> verifyGroup(Operation *op, FlatSymbolRefAttr meshRef,
                                      ArrayAttr axes) {
  auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(op, meshRef);
  if (!mesh)
    return op->emitOpError("names ") << meshRef << ", which is not a loom.mesh";
  if (axes.empty())
    return op->emitOpError("needs at least one mesh axis");
  llvm::StringSet<> seen;
  int64_t size = 1;
  for (Attribute a : axes) {
    StringRef name = cast<StringAttr>(a).getValue();
    MeshAxisAttr axis = mesh.getAxis(name);
    if (!axis)
      return op->emitOpError("axis \"")
             << name << "\" is not an axis of mesh " << meshRef;
    if (!seen.insert(name).second)
      return op->emitOpError("axis \"") << name << "\" appears twice";
    size *= axis.getSize();
  }
  return size;
}

static int64_t groupSizeOf(Operation *op, FlatSymbolRefAttr meshRef,
                           ArrayAttr axes) {
  auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(op, meshRef);
  int64_t size = 1;
  if (!mesh)
    return size;
  for (Attribute a : axes)
    if (MeshAxisAttr axis = mesh.getAxis(cast<StringAttr>(a).getValue()))
      size *= axis.getSize();
  return size;
}

static LogicalResult verifyDim(Operation *op, int64_t dim, int64_t rank,
                               StringRef what) {
  if (dim < 0 || dim >= rank)
    return op->emitOpError()
           << what << " " << dim << " is out of range for rank " << rank;
  return success();
}

/// `out` equals `in` except dimension `dim`, which must be `in * mul / div`.
static LogicalResult verifyScaledDim(Operation *op, RankedTensorType in,
                                     RankedTensorType out, int64_t dim,
                                     int64_t mul, int64_t div) {
  if (in.getElementType() != out.getElementType())
    return op->emitOpError("changes the element type from ")
           << in.getElementType() << " to " << out.getElementType();
  if (in.getRank() != out.getRank())
    return op->emitOpError("changes the rank from ")
           << in.getRank() << " to " << out.getRank();
  for (int64_t d = 0; d < in.getRank(); ++d) {
    int64_t want = in.getDimSize(d);
    if (d == dim) {
      if (want * mul % div != 0)
        return op->emitOpError("dimension ")
               << d << " (size " << want << ") does not divide into " << div
               << " blocks";
      want = want * mul / div;
    }
    if (out.getDimSize(d) != want)
      return op->emitOpError("result dimension ")
             << d << " should be " << want << ", got " << out.getDimSize(d);
  }
  return success();
}

static int64_t bytesOf(Type type) {
  auto t = cast<RankedTensorType>(type);
  Type e = t.getElementType();
  return t.getNumElements() * std::max<int64_t>(8, e.getIntOrFloatBitWidth()) / 8;
}

// What each collective is, and the buffer its byte formula is stated for.
#define LOOM_COLLECTIVE(OP, KIND, BUFFER)                                      \
  int64_t OP::getGroupSize() {                                                 \
    return groupSizeOf(*this, getMeshAttr(), getAxes());                       \
  }                                                                            \
  CollectiveKind OP::getCollectiveKind() { return CollectiveKind::KIND; }      \
  int64_t OP::getBufferBytes() { return BUFFER; }
LOOM_COLLECTIVE(AllGatherOp, AllGather, bytesOf(getType()))
LOOM_COLLECTIVE(ReduceScatterOp, ReduceScatter, bytesOf(getInput().getType()))
LOOM_COLLECTIVE(AllToAllOp, AllToAll, bytesOf(getInput().getType()))
LOOM_COLLECTIVE(AllSliceOp, AllSlice, bytesOf(getInput().getType()))
LOOM_COLLECTIVE(SendRecvOp, SendRecv, bytesOf(getInput().getType()))
LOOM_COLLECTIVE(AllReduceOp, AllReduce, [this] {
  int64_t total = 0;
  for (Value v : getInputs())
    total += bytesOf(v.getType());
  return total;
}())
#undef LOOM_COLLECTIVE

LogicalResult SendRecvOp::verify() {
  FailureOr<int64_t> n = verifyGroup(*this, getMeshAttr(), getAxes());
  if (failed(n))
    return failure();
  auto offset = static_cast<int64_t>(getOffset());
  if (offset == 0 || offset <= -*n || offset >= *n)
    return emitOpError("offset ")
           << offset << " must be nonzero and within (-" << *n << ", "
           << *n << "), the group size";
  return success();
}

LogicalResult AllReduceOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one operand");
  return verifyGroup(*this, getMeshAttr(), getAxes());
}

LogicalResult AllGatherOp::verify() {
  FailureOr<int64_t> n = verifyGroup(*this, getMeshAttr(), getAxes());
  if (failed(n) || failed(verifyDim(*this, static_cast<int64_t>(getDim()), getInput().getType().getRank(), "dim")))
    return failure();
  return verifyScaledDim(*this, getInput().getType(), getType(),
                         static_cast<int64_t>(getDim()), *n,
                         1);
}

LogicalResult ReduceScatterOp::verify() {
  FailureOr<int64_t> n = verifyGroup(*this, getMeshAttr(), getAxes());
  if (failed(n) || failed(verifyDim(*this, static_cast<int64_t>(getDim()), getInput().getType().getRank(), "dim")))
    return failure();
  return verifyScaledDim(*this, getInput().getType(), getType(), getDim(), 1,
                         *n);
}

LogicalResult AllSliceOp::verify() {
  FailureOr<int64_t> n = verifyGroup(*this, getMeshAttr(), getAxes());
  if (failed(n) || failed(verifyDim(*this, static_cast<int64_t>(getDim()), getInput().getType().getRank(), "dim")))
    return failure();
  return verifyScaledDim(*this, getInput().getType(), getType(), getDim(), 1,
                         *n);
}

LogicalResult AllToAllOp::verify() {
  FailureOr<int64_t> n = verifyGroup(*this, getMeshAttr(), getAxes());
  RankedTensorType in = getInput().getType(), out = getType();
  auto split = static_cast<int64_t>(getSplitDim());
  auto concat = static_cast<int64_t>(getConcatDim());
  if (failed(n) ||
      failed(verifyDim(*this, split, in.getRank(), "split_dim")) ||
      failed(verifyDim(*this, concat, in.getRank(), "concat_dim")))
    return failure();
  if (split == concat)
    return verifyScaledDim(*this, in, out, split, 1, 1);
  // Split one dimension, then grow the other.
  SmallVector<int64_t> mid(in.getShape());
  if (mid[split] % *n != 0)
    return emitOpError("split dimension ")
           << split << " (size " << mid[split] << ") does not divide into "
           << *n << " blocks";
  mid[split] /= *n;
  return verifyScaledDim(*this, in.clone(mid), out, concat, *n, 1);
}
