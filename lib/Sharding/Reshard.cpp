//===- Reshard.cpp - The one way Loom moves a value between shardings -----===//

#include "loom/Sharding/Reshard.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::loom;

using Axes = AxisSharding::Axes;

//===----------------------------------------------------------------------===//
// AxisSharding
//===----------------------------------------------------------------------===//

bool AxisSharding::isReplicated() const {
  return partial.empty() &&
         llvm::all_of(dims, [](const Axes &d) { return d.empty(); });
}

uint64_t AxisSharding::usedMask() const {
  uint64_t m = 0;
  for (const Axes &d : dims)
    for (int a : d)
      m |= uint64_t(1) << a;
  return m;
}

uint64_t AxisSharding::partialMask() const {
  uint64_t m = 0;
  for (int a : partial)
    m |= uint64_t(1) << a;
  return m;
}

static int64_t product(ArrayRef<int> axes, ArrayRef<int64_t> axisSizes) {
  int64_t n = 1;
  for (int a : axes)
    n *= axisSizes[a];
  return n;
}

int64_t AxisSharding::numShards(ArrayRef<int64_t> axisSizes) const {
  int64_t n = 1;
  for (const Axes &d : dims)
    n *= product(d, axisSizes);
  return n;
}

SmallVector<int64_t, 4>
AxisSharding::localShape(ArrayRef<int64_t> shape,
                         ArrayRef<int64_t> axisSizes) const {
  SmallVector<int64_t, 4> local(shape);
  for (auto [d, axes] : llvm::enumerate(dims))
    local[d] /= product(axes, axisSizes);
  return local;
}

int64_t ReshardStep::bufferElements() const {
  ArrayRef<int64_t> shape =
      kind == CollectiveKind::AllGather ? outShape : inShape;
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

//===----------------------------------------------------------------------===//
// planReshard
//===----------------------------------------------------------------------===//

namespace {

/// The state of a resharding in progress: the current sharding and local
/// shape, and the steps so far.
struct Planner {
  ArrayRef<int64_t> axisSizes;
  SmallVector<Axes, 4> cur, want;
  SmallVector<int64_t, 4> shape; // local
  SmallVector<ReshardStep> steps;

  ReshardStep &step(CollectiveKind kind, ArrayRef<int> axes, int64_t dim) {
    ReshardStep s;
    s.kind = kind;
    s.axes.assign(axes.begin(), axes.end());
    s.dim = dim;
    s.inShape = shape;
    steps.push_back(std::move(s));
    return steps.back();
  }
  void done(ReshardStep &s) { s.outShape = shape; }

  static bool isPrefix(ArrayRef<int> prefix, ArrayRef<int> of) {
    return of.size() >= prefix.size() &&
           of.take_front(prefix.size()) == prefix;
  }

  /// 1. Partial axes: reduce-scatter into a dimension whose next wanted
  /// axes they are (one reduce_scatter over all of them, in that order),
  /// all-reduce the rest.
  void reducePartial(const AxisSharding &from, const AxisSharding &to) {
    Axes reduce;
    for (int a : from.partial)
      if (!llvm::is_contained(to.partial, a))
        reduce.push_back(a);
    for (int64_t d = 0, e = cur.size(); d < e && !reduce.empty(); ++d) {
      if (!isPrefix(cur[d], want[d]))
        continue;
      Axes scatter;
      for (int a : ArrayRef<int>(want[d]).drop_front(cur[d].size())) {
        if (!llvm::is_contained(reduce, a))
          break;
        scatter.push_back(a);
      }
      if (scatter.empty() || shape[d] % product(scatter, axisSizes) != 0)
        continue;
      ReshardStep &s = step(CollectiveKind::ReduceScatter, scatter, d);
      s.reduction = from.reduction;
      shape[d] /= product(scatter, axisSizes);
      llvm::append_range(cur[d], scatter);
      llvm::erase_if(reduce, [&](int a) { return llvm::is_contained(scatter, a); });
      done(s);
    }
    if (!reduce.empty()) {
      ReshardStep &s = step(CollectiveKind::AllReduce, reduce, -1);
      s.reduction = from.reduction;
      done(s);
    }
  }

  /// 2. An axis leaving the end of one dimension for the end of another.
  void moveAxes() {
    for (int64_t d1 = 0, e = cur.size(); d1 < e; ++d1) {
      if (cur[d1].empty())
        continue;
      int a = cur[d1].back();
      ArrayRef<int> kept = ArrayRef<int>(cur[d1]).drop_back();
      if (llvm::is_contained(want[d1], a) || !isPrefix(kept, want[d1]))
        continue;
      for (int64_t d2 = 0; d2 < e; ++d2) {
        // d2 wants `a` right after what it holds (more axes may follow:
        // they are sliced at the end).
        if (d2 == d1 || want[d2].size() <= cur[d2].size() ||
            want[d2][cur[d2].size()] != a || !isPrefix(cur[d2], want[d2]) ||
            shape[d2] % axisSizes[a] != 0)
          continue;
        ReshardStep &s = step(CollectiveKind::AllToAll, {a}, d2);
        s.concatDim = d1;
        shape[d2] /= axisSizes[a];
        shape[d1] *= axisSizes[a];
        cur[d1].pop_back();
        cur[d2].push_back(a);
        done(s);
        break;
      }
    }
  }

  /// 3. Gather each dimension's axes past the common prefix.
  void gather() {
    for (int64_t d = 0, e = cur.size(); d < e; ++d) {
      size_t k = 0;
      while (k < cur[d].size() && k < want[d].size() && cur[d][k] == want[d][k])
        ++k;
      if (k == cur[d].size())
        continue;
      Axes gone(cur[d].begin() + k, cur[d].end());
      ReshardStep &s = step(CollectiveKind::AllGather, gone, d);
      shape[d] *= product(gone, axisSizes);
      cur[d].resize(k);
      done(s);
    }
  }

  /// 4. Slice for the axes that appear.
  LogicalResult slice(std::string *error) {
    for (int64_t d = 0, e = cur.size(); d < e; ++d) {
      if (want[d].size() == cur[d].size())
        continue;
      Axes added(want[d].begin() + cur[d].size(), want[d].end());
      int64_t n = product(added, axisSizes);
      if (shape[d] % n != 0) {
        if (error) {
          llvm::raw_string_ostream os(*error);
          os << "cannot split dimension " << d << " (size " << shape[d]
             << " per device) over " << n << " devices";
        }
        return failure();
      }
      ReshardStep &s = step(CollectiveKind::AllSlice, added, d);
      shape[d] /= n;
      cur[d] = want[d];
      done(s);
    }
    return success();
  }
};

} // namespace

FailureOr<SmallVector<ReshardStep>>
mlir::loom::planReshard(const AxisSharding &from, const AxisSharding &to,
                        ArrayRef<int64_t> shape, ArrayRef<int64_t> axisSizes,
                        std::string *error) {
  assert(from.getRank() == int64_t(shape.size()) &&
         to.getRank() == int64_t(shape.size()) && "rank mismatch");
  if (from.dims == to.dims && from.partial.empty() && to.partial.empty())
    return SmallVector<ReshardStep>();
  if (from == to)
    return SmallVector<ReshardStep>();
  for (int a : to.partial)
    if (!llvm::is_contained(from.partial, a) ||
        from.reduction != to.reduction) {
      if (error)
        *error = "a value cannot become partial";
      return failure();
    }
  Planner p;
  p.axisSizes = axisSizes;
  p.cur.assign(from.dims.begin(), from.dims.end());
  p.want.assign(to.dims.begin(), to.dims.end());
  p.shape = from.localShape(shape, axisSizes);
  p.reducePartial(from, to);
  p.moveAxes();
  p.gather();
  if (failed(p.slice(error)))
    return failure();
  return std::move(p.steps);
}

//===----------------------------------------------------------------------===//
// IR
//===----------------------------------------------------------------------===//

SmallVector<int64_t> mlir::loom::axisSizes(MeshOp mesh) {
  SmallVector<int64_t> sizes;
  for (Attribute a : mesh.getAxes())
    sizes.push_back(cast<MeshAxisAttr>(a).getSize());
  return sizes;
}

static int axisIndex(MeshOp mesh, StringRef name) {
  for (auto [i, a] : llvm::enumerate(mesh.getAxes()))
    if (cast<MeshAxisAttr>(a).getName().getValue() == name)
      return i;
  llvm_unreachable("sharding names an axis the mesh lacks (verified)");
}

AxisSharding mlir::loom::toAxisSharding(ShardingAttr s, MeshOp mesh) {
  AxisSharding out(s.getRank());
  for (int64_t d = 0; d < s.getRank(); ++d)
    for (StringRef a : s.getDimAxes(d))
      out.dims[d].push_back(axisIndex(mesh, a));
  for (StringRef a : s.getPartialAxisNames())
    out.partial.push_back(axisIndex(mesh, a));
  out.reduction = s.getPartialKind();
  return out;
}

static StringRef axisName(MeshOp mesh, int a) {
  return cast<MeshAxisAttr>(mesh.getAxes()[a]).getName().getValue();
}

ShardingAttr mlir::loom::toShardingAttr(const AxisSharding &s, MeshOp mesh) {
  SmallVector<SmallVector<StringRef>> dims;
  for (const Axes &d : s.dims) {
    dims.emplace_back();
    for (int a : d)
      dims.back().push_back(axisName(mesh, a));
  }
  SmallVector<StringRef> partial;
  for (int a : s.partial)
    partial.push_back(axisName(mesh, a));
  return ShardingAttr::get(mesh.getContext(), mesh.getSymName(), dims, partial,
                           s.reduction);
}

Value mlir::loom::buildReshardSteps(OpBuilder &b, Location loc, Value local,
                                    ArrayRef<ReshardStep> steps, MeshOp mesh) {
  MLIRContext *ctx = b.getContext();
  auto meshRef = FlatSymbolRefAttr::get(mesh.getSymNameAttr());
  Value v = local;
  for (const ReshardStep &s : steps) {
    auto type = cast<RankedTensorType>(v.getType()).clone(s.outShape);
    SmallVector<StringRef> names;
    for (int a : s.axes)
      names.push_back(axisName(mesh, a));
    ArrayAttr axes = b.getStrArrayAttr(names);
    auto reduction = ReductionKindAttr::get(ctx, s.reduction);
    switch (s.kind) {
    case CollectiveKind::AllReduce:
      v = AllReduceOp::create(b, loc, TypeRange{type}, ValueRange{v}, meshRef,
                              axes, reduction)
              .getResult(0);
      break;
    case CollectiveKind::ReduceScatter:
      v = ReduceScatterOp::create(b, loc, type, v, meshRef, axes,
                                  b.getI64IntegerAttr(s.dim), reduction);
      break;
    case CollectiveKind::AllToAll:
      v = AllToAllOp::create(b, loc, type, v, meshRef, axes,
                             b.getI64IntegerAttr(s.dim),
                             b.getI64IntegerAttr(s.concatDim));
      break;
    case CollectiveKind::AllGather:
      v = AllGatherOp::create(b, loc, type, v, meshRef, axes,
                              b.getI64IntegerAttr(s.dim));
      break;
    case CollectiveKind::AllSlice:
      v = AllSliceOp::create(b, loc, type, v, meshRef, axes,
                             b.getI64IntegerAttr(s.dim));
      break;
    case CollectiveKind::SendRecv:
      llvm_unreachable("resharding never sends point to point");
    }
  }
  return v;
}

FailureOr<Value> mlir::loom::buildReshard(OpBuilder &b, Location loc,
                                          Value local, ShardingAttr from,
                                          ShardingAttr to,
                                          RankedTensorType global,
                                          MeshOp mesh) {
  if (from == to)
    return local;
  std::string error;
  FailureOr<SmallVector<ReshardStep>> steps =
      planReshard(toAxisSharding(from, mesh), toAxisSharding(to, mesh),
                  global.getShape(), axisSizes(mesh), &error);
  if (failed(steps))
    return emitError(loc) << "cannot reshard " << from << " to " << to << ": "
                          << error;
  return buildReshardSteps(b, loc, local, *steps, mesh);
}

std::string mlir::loom::describe(const AxisSharding &s,
                                 llvm::function_ref<StringRef(int)> name) {
  std::string out;
  llvm::raw_string_ostream os(out);
  auto axes = [&](ArrayRef<int> list) {
    os << "{";
    llvm::interleaveComma(list, os, [&](int a) { os << '"' << name(a) << '"'; });
    os << "}";
  };
  os << "[";
  llvm::interleaveComma(s.dims, os, axes);
  os << "]";
  if (!s.partial.empty()) {
    os << " partial " << stringifyReductionKind(s.reduction) << " ";
    axes(s.partial);
  }
  return out;
}

std::string mlir::loom::describe(const AxisSharding &s, MeshOp mesh) {
  return describe(s, [&](int a) { return axisName(mesh, a); });
}

std::string mlir::loom::describe(const ReshardStep &step, MeshOp mesh) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << collectiveName(step.kind) << " [";
  llvm::interleaveComma(step.axes, os,
                        [&](int a) { os << axisName(mesh, a); });
  os << "]";
  if (step.kind == CollectiveKind::AllToAll)
    os << " split " << step.dim << " concat " << step.concatDim;
  else if (step.dim >= 0)
    os << " dim " << step.dim;
  return out;
}
