//===- ContiguousLanes.cpp - 16 contiguous bytes per elementwise thread ---===//
//
// See the pass description (Passes.td). Before flattening:
//
//   scf.parallel (%i, %j) = (0, 0) to (8192, 1024) {
//     %x = memref.load %a[%i, %j] : memref<8192x1024xbf16>
//     memref.store %y, %b[%i, %j]
//   }
//   // becomes (V = 8)
//   scf.parallel (%i, %jv) = (0, 0) to (8192, 128) {
//     %a16 = memref.assume_alignment %a, 16
//     %j0 = %jv * 8 + 0 ... %j7 = %jv * 8 + 7
//     (the body eight times, at %j0 ... %j7)
//   }
//
//===----------------------------------------------------------------------===//

#include "loom/Codegen/CUDA/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMGPUCONTIGUOUSLANES
#include "loom/Codegen/CUDA/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

constexpr int64_t kBytes = 16;

/// Whether `type`'s rows start `align`-byte aligned when its buffer does
/// (16): unit innermost stride, static offset and outer strides that keep
/// that alignment.
bool alignedRows(MemRefType type, int64_t align = kBytes) {
  if (!type.getElementType().isIntOrFloat())
    return false; // index, complex: no byte width to vectorize by
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) || strides.empty() ||
      strides.back() != 1 || ShapedType::isDynamic(offset))
    return false;
  int64_t bytes = type.getElementTypeBitWidth() / 8;
  if (bytes == 0 || (offset * bytes) % align)
    return false;
  for (int64_t s : ArrayRef<int64_t>(strides).drop_back())
    if (ShapedType::isDynamic(s) || (s * bytes) % align)
      return false;
  return true;
}

/// A load's or store's buffer and indices; nullopt for any other op.
std::optional<std::pair<Value, ValueRange>> accessOf(Operation *op) {
  if (auto load = dyn_cast<memref::LoadOp>(op))
    return std::make_pair(load.getMemRef(), ValueRange(load.getIndices()));
  if (auto store = dyn_cast<memref::StoreOp>(op))
    return std::make_pair(store.getMemRef(), ValueRange(store.getIndices()));
  return std::nullopt;
}

/// The lanes per thread for `loop`, or 0 where it does not qualify (or
/// accesses nothing along the innermost index).
int64_t lanesFor(scf::ParallelOp loop) {
  int64_t rank = loop.getNumLoops();
  for (int64_t d = 0; d < rank; ++d)
    if (getConstantIntValue(loop.getLowerBound()[d]) != 0 ||
        getConstantIntValue(loop.getStep()[d]) != 1 ||
        !getConstantIntValue(loop.getUpperBound()[d]))
      return 0;
  int64_t extent = *getConstantIntValue(loop.getUpperBound().back());
  Value inner = loop.getInductionVars().back();
  // Everything the innermost index flows into.
  SetVector<Operation *> slice;
  getForwardSlice(inner, &slice);
  int64_t minBytes = kBytes;
  bool ok = true;
  SmallVector<MemRefType> contiguous;
  loop.getBody()->walk([&](Operation *op) {
    if (op->getNumRegions() || (!isMemoryEffectFree(op) &&
                                !isa<memref::LoadOp, memref::StoreOp>(op))) {
      ok = false;
      return WalkResult::interrupt();
    }
    std::optional<std::pair<Value, ValueRange>> access = accessOf(op);
    if (!access)
      return WalkResult::advance();
    auto [memref, indices] = *access;
    auto type = cast<MemRefType>(memref.getType());
    bool along = !indices.empty() && indices.back() == inner;
    for (Value index : along ? indices.drop_back() : indices)
      if (index == inner || (index.getDefiningOp() &&
                             slice.contains(index.getDefiningOp()))) {
        // A transposed or computed use of the innermost index: a load is
        // made once per lane (an im2col kernel's window read, x[.., ow +
        // kw]), sharing the thread's index arithmetic; a store would not
        // be one vector.
        if (isa<memref::LoadOp>(op))
          return WalkResult::advance();
        ok = false;
        return WalkResult::interrupt();
      }
    if (!along) {
      // A store every lane would repeat (a race on one element) is not
      // an elementwise kernel.
      if (isa<memref::StoreOp>(op)) {
        ok = false;
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    }
    // Its other indices must be known where the vector access is made:
    // the loop's indices or values from outside the loop.
    for (Value index : indices.drop_back())
      if (Operation *def = index.getDefiningOp();
          def && loop->isAncestor(def)) {
        ok = false;
        return WalkResult::interrupt();
      }
    if (!alignedRows(type, type.getElementTypeBitWidth() / 8)) {
      ok = false;
      return WalkResult::interrupt();
    }
    minBytes = std::min<int64_t>(minBytes, type.getElementTypeBitWidth() / 8);
    contiguous.push_back(type);
    return WalkResult::advance();
  });
  if (!ok || contiguous.empty())
    return 0;
  // The most lanes that divide the rows and keep each vector aligned to
  // its size (rows of 14 floats: 2 lanes, 8-byte vectors).
  auto fits = [&](int64_t lanes) {
    if (extent % lanes)
      return false;
    for (MemRefType type : contiguous)
      if (!alignedRows(type, std::min<int64_t>(
                                 kBytes, lanes * (type.getElementTypeBitWidth() / 8))))
        return false;
    return true;
  };
  int64_t lanes = kBytes / minBytes;
  while (lanes > 1 && !fits(lanes))
    lanes /= 2;
  return lanes > 1 ? lanes : 0;
}

/// The load's or store's buffer and indices when it accesses `memref`s
/// along the innermost index (contiguous), else null.
std::optional<std::pair<Value, ValueRange>>
contiguousAccess(Operation *op, Value inner) {
  std::optional<std::pair<Value, ValueRange>> access = accessOf(op);
  if (!access || access->second.empty() || access->second.back() != inner)
    return std::nullopt;
  return access;
}

void spread(scf::ParallelOp loop, int64_t lanes, bool assumeAlignment) {
  OpBuilder b(loop);
  Location loc = loop.getLoc();
  SmallVector<Value> ubs(loop.getUpperBound());
  int64_t extent = *getConstantIntValue(ubs.back());
  ubs.back() = arith::ConstantIndexOp::create(b, loc, extent / lanes);
  auto wide = scf::ParallelOp::create(b, loc, loop.getLowerBound(), ubs,
                                      loop.getStep());
  b.setInsertionPointToStart(wide.getBody());
  IRMapping base;
  for (auto [from, to] :
       llvm::zip(loop.getInductionVars(), wide.getInductionVars()))
    base.map(from, to);
  Value inner = loop.getInductionVars().back();
  auto nsw = arith::IntegerOverflowFlags::nsw | arith::IntegerOverflowFlags::nuw;
  Value scaled = arith::MulIOp::create(
      b, loc, wide.getInductionVars().back(),
      arith::ConstantIndexOp::create(b, loc, lanes), nsw);
  // A vector of `lanes` elements of b bytes starts at a multiple of
  // lanes * b bytes from a 16-byte aligned row: that (a power of two), at
  // most 16, is its alignment (8 bf16 lanes: 16; 4 when a row of 12 bf16
  // allowed only 4 lanes: 8).
  auto alignOf = [&](Type element) -> llvm::MaybeAlign {
    if (!assumeAlignment)
      return std::nullopt;
    return llvm::Align(std::min<uint64_t>(
        kBytes, uint64_t(lanes) * (element.getIntOrFloatBitWidth() / 8)));
  };
  auto vectorIndices = [&](ValueRange indices) {
    SmallVector<Value> out;
    for (Value v : indices.drop_back())
      out.push_back(base.lookupOrDefault(v));
    out.push_back(scaled);
    return out;
  };
  // One vector load per contiguous load, all before any store (the lanes'
  // loads of a buffer are one 16-byte access; `align` is the promise that
  // every device buffer is 16-byte aligned and rows keep it).
  Block *body = loop.getBody();
  DenseMap<Operation *, Value> vectors;
  for (Operation &op : body->without_terminator())
    if (auto access = contiguousAccess(&op, inner); access && isa<memref::LoadOp>(op)) {
      auto type = VectorType::get({lanes}, op.getResult(0).getType());
      vectors[&op] = vector::LoadOp::create(
          b, loc, type, access->first, vectorIndices(access->second),
          /*nontemporal=*/false, alignOf(type.getElementType()));
    }
  // The body once per lane, reading its element of each vector and
  // collecting the values each contiguous store writes.
  DenseMap<Operation *, SmallVector<Value>> stored;
  for (int64_t lane = 0; lane < lanes; ++lane) {
    IRMapping map = base;
    map.map(inner, arith::AddIOp::create(
                       b, loc, scaled,
                       arith::ConstantIndexOp::create(b, loc, lane), nsw));
    for (Operation &op : body->without_terminator()) {
      if (Value v = vectors.lookup(&op)) {
        map.map(op.getResult(0), vector::ExtractOp::create(b, loc, v, lane));
        continue;
      }
      if (auto store = dyn_cast<memref::StoreOp>(op);
          store && contiguousAccess(&op, inner)) {
        stored[&op].push_back(map.lookupOrDefault(store.getValueToStore()));
        continue;
      }
      b.clone(op, map);
    }
  }
  // One vector store per contiguous store, after everything else.
  for (Operation &op : body->without_terminator())
    if (auto it = stored.find(&op); it != stored.end()) {
      auto store = cast<memref::StoreOp>(op);
      auto type = VectorType::get({lanes}, store.getValueToStore().getType());
      Value v = vector::FromElementsOp::create(b, loc, type, it->second);
      vector::StoreOp::create(b, loc, v, store.getMemRef(),
                              vectorIndices(store.getIndices()),
                              /*nontemporal=*/false,
                              alignOf(type.getElementType()));
    }
  loop.erase();
}

struct ContiguousLanesPass
    : loom::impl::LoomGpuContiguousLanesBase<ContiguousLanesPass> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<scf::ParallelOp> loops;
    getOperation().walk([&](scf::ParallelOp loop) {
      if (!loop->getParentOfType<scf::ParallelOp>() &&
          loop.getNumReductions() == 0)
        loops.push_back(loop);
    });
    for (scf::ParallelOp loop : loops) {
      if (int64_t lanes = lanesFor(loop))
        spread(loop, lanes, assumeAlignment);
    }
  }
};

} // namespace
