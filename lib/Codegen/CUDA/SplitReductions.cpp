//===- SplitReductions.cpp - Long reductions in two deterministic stages --===//
//
// A reduction that one GPU thread walks alone (a softmax or cross-entropy row
// over a vocabulary of 51,200, a column sum over 8,192 tokens, the loss mean)
// is latency-bound: few threads, each a long dependent chain of loads. This
// splits such a linalg.generic in two, as XLA's tree-reduction rewriter and
// IREE's split-reduction do:
//
//   stage 1: partial[t, p] = combine over k of f(x[p, k*T + t])   (T lanes)
//   stage 2: out[p] = combine(out[p], partial[0, p], ..., partial[T-1, p])
//
// Both stages are ordinary linalg ops (every later pass, and the CPU
// emulation of the loop structure, treats them as any other), every lane's
// order is fixed (two runs give the same bits), and stage 1 has T times as
// many threads whose loads are coalesced: adjacent threads read adjacent
// elements (lanes last for a row reduction, the output's dimensions last for
// a column reduction).
//
//===----------------------------------------------------------------------===//

#include "loom/Codegen/CUDA/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

#include <algorithm>

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMGPUSPLITREDUCTIONS
#include "loom/Codegen/CUDA/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

/// The identity of a combiner the split knows (null: not one).
TypedAttr identityOf(Operation *combiner, Type type) {
  auto f = dyn_cast<FloatType>(type);
  if (!f)
    return {};
  const llvm::fltSemantics &sem = f.getFloatSemantics();
  if (isa<arith::AddFOp>(combiner)) // -0 + x == x for every x, +0 included
    return FloatAttr::get(f, llvm::APFloat::getZero(sem, /*Negative=*/true));
  if (isa<arith::MulFOp>(combiner))
    return FloatAttr::get(f, llvm::APFloat::getOne(sem));
  if (isa<arith::MaximumFOp, arith::MaxNumFOp>(combiner))
    return FloatAttr::get(f, llvm::APFloat::getInf(sem, /*Negative=*/true));
  if (isa<arith::MinimumFOp, arith::MinNumFOp>(combiner))
    return FloatAttr::get(f, llvm::APFloat::getInf(sem, /*Negative=*/false));
  return {};
}

/// Dimensions [at, at + size) of a rank-`rank` memref as one, the others
/// kept: the reassociation that collapses a reduction group.
SmallVector<ReassociationIndices> groupCollapse(int64_t rank, int64_t at,
                                                int64_t size) {
  SmallVector<ReassociationIndices> reassoc;
  for (int64_t j = 0; j < rank; ++j)
    if (j < at || j >= at + size)
      reassoc.push_back({j});
    else if (j == at)
      reassoc.push_back(llvm::to_vector(llvm::seq<int64_t>(at, at + size)));
  return reassoc;
}

/// What a generic must be for the split: buffers, one output not indexed
/// by any reduction dimension, its body `combine(out, f(ins))`, static
/// reduction extents. The split group is the longest run of trailing
/// reduction dimensions (in loop order) that each input indexes all
/// together (consecutive, in loop order) or not at all; the reductions
/// before it (`outer`: a batch norm's batch dimension, read apart from its
/// spatial ones by the channel between) must be read as plain dimensions,
/// and stay reductions of stage 1, walked by every lane.
struct Candidate {
  SmallVector<unsigned> reductions, parallels, outer;
  /// The group's elements, and how many times each lane walks its share
  /// (the outer reductions' extent).
  int64_t extent = 1, outerExtent = 1;
  /// How many output elements (threads of stage 2).
  int64_t outputs = 1;
  /// Whether stage 1 runs the outer reductions as parallel dimensions
  /// (one partial result per outer index and lane), for when the outputs
  /// times the lanes are too few threads to fill the GPU.
  bool outerParallel = false;
  Operation *combiner = nullptr;
  bool outFirst = true; // combine(out, value) rather than combine(value, out)
  /// Per input: the result position where the group starts (-1: it does
  /// not read it).
  SmallVector<int> groupAt;
};

/// Whether every input reads `group` (trailing reductions) consecutively
/// in loop order or not at all, and `outer` only as plain dimensions; sets
/// `groupAt`.
bool groupsRead(linalg::GenericOp op, ArrayRef<unsigned> group,
                ArrayRef<unsigned> outer, SmallVectorImpl<int> &groupAt) {
  groupAt.clear();
  for (OpOperand *in : op.getDpsInputOperands()) {
    AffineMap map = op.getMatchingIndexingMap(in);
    int at = -1;
    for (auto [j, e] : llvm::enumerate(map.getResults())) {
      auto d = dyn_cast<AffineDimExpr>(e);
      bool inGroup = false, inOuter = false;
      for (unsigned r : group)
        inGroup |= e.isFunctionOfDim(r);
      for (unsigned r : outer)
        inOuter |= e.isFunctionOfDim(r);
      if (inOuter && (inGroup || !d))
        return false;
      if (!inGroup)
        continue;
      // A group dimension only as itself, the group in loop order.
      if (!d || (at < 0 && d.getPosition() != group.front()))
        return false;
      if (at < 0)
        at = int(j);
      if (int(j) - at >= int(group.size()) ||
          d.getPosition() != group[j - at])
        return false;
    }
    if (at >= 0) {
      if (at + group.size() > map.getNumResults() ||
          map.getResult(at + group.size() - 1) !=
              getAffineDimExpr(group.back(), op.getContext()))
        return false;
      if (group.size() > 1) {
        auto type = cast<MemRefType>(in->get().getType());
        if (!memref::CollapseShapeOp::isGuaranteedCollapsible(
                type, groupCollapse(type.getRank(), at, group.size())))
          return false;
      }
    }
    groupAt.push_back(at);
  }
  return true;
}

bool match(linalg::GenericOp op, Candidate &c) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1)
    return false;
  SmallVector<unsigned> all;
  for (auto [i, t] : llvm::enumerate(op.getIteratorTypesArray()))
    (t == utils::IteratorType::reduction ? all : c.parallels)
        .push_back(unsigned(i));
  if (all.empty())
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  for (unsigned r : all)
    if (ShapedType::isDynamic(ranges[r]))
      return false;
  for (unsigned p : c.parallels)
    c.outputs *= ShapedType::isDynamic(ranges[p]) ? 1 << 20 : ranges[p];
  Block &body = op.getRegion().front();
  BlockArgument out = body.getArgument(op.getNumDpsInputs());
  Value yielded = body.getTerminator()->getOperand(0);
  c.combiner = yielded.getDefiningOp();
  if (!c.combiner || c.combiner->getBlock() != &body ||
      c.combiner->getNumOperands() != 2 ||
      !identityOf(c.combiner, out.getType()) || !out.hasOneUse() ||
      out.use_begin()->getOwner() != c.combiner)
    return false;
  c.outFirst = c.combiner->getOperand(0) == out;
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (!outMap.isProjectedPermutation())
    return false;
  for (unsigned r : all)
    if (outMap.isFunctionOfDim(r))
      return false;
  // The longest trailing group the inputs read together.
  for (size_t size = all.size(); size >= 1; --size) {
    ArrayRef<unsigned> group = ArrayRef<unsigned>(all).take_back(size);
    ArrayRef<unsigned> outer = ArrayRef<unsigned>(all).drop_back(size);
    if (!groupsRead(op, group, outer, c.groupAt))
      continue;
    c.reductions.assign(group.begin(), group.end());
    c.outer.assign(outer.begin(), outer.end());
    for (unsigned r : group)
      c.extent *= ranges[r];
    for (unsigned r : outer)
      c.outerExtent *= ranges[r];
    return true;
  }
  return false;
}

struct SplitReductionsPass
    : loom::impl::LoomGpuSplitReductionsBase<SplitReductionsPass> {
  using Base::Base;

  /// The lanes for a reduction group of `extent` elements that each lane
  /// walks `outer` times (the outer reductions' extent): the most (a power
  /// of two, at most `maxLanes`) dividing it with `minPerLane` elements
  /// each; with outer reductions, failing that, the largest divisor of at
  /// least 16 (a batch norm's 14 x 14 = 196 per image); 0: none.
  int64_t lanesFor(int64_t extent, int64_t outer) const {
    for (int64_t t = maxLanes; t >= 16; t /= 2)
      if (extent % t == 0 && outer * (extent / t) >= minPerLane)
        return t;
    if (outer > 1)
      for (int64_t t = std::min<int64_t>(maxLanes, extent); t >= 16; --t)
        if (extent % t == 0 && outer * (extent / t) >= minPerLane)
          return t;
    return 0;
  }

  /// With the outer reductions parallel (each thread one outer index and
  /// one lane): the most lanes dividing the group with `minPerLane`
  /// elements each and at most `maxThreads` threads in all (a power of two
  /// if one fits, else any divisor); 0: none.
  int64_t outerParallelLanesFor(const Candidate &c) const {
    auto fits = [&](int64_t t) {
      return c.extent % t == 0 && c.extent / t >= minPerLane &&
             c.outputs * c.outerExtent * t <= maxThreads;
    };
    for (int64_t t = maxLanes; t >= 1; t /= 2)
      if (fits(t))
        return t;
    for (int64_t t = std::min<int64_t>(maxLanes, c.extent); t >= 1; --t)
      if (fits(t))
        return t;
    return 0;
  }

  /// A later stage's lanes (its partial results as the reduction): the
  /// most (a power of two, at least 4) leaving each lane at least 32, so
  /// that the stage after it combines few.
  static int64_t laterStageLanesFor(int64_t extent) {
    for (int64_t t = extent / 32; t >= 4; --t)
      if (llvm::isPowerOf2_64(t) && extent % t == 0)
        return t;
    return 0;
  }

  void runOnOperation() override {
    SmallVector<linalg::GenericOp> ops;
    getOperation().walk([&](linalg::GenericOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp op : ops) {
      Candidate c;
      if (!match(op, c))
        continue;
      int64_t lanes = lanesFor(c.extent, c.outerExtent);
      // Too few threads with the outer reductions walked by every lane (a
      // batch norm's 64 channels x 64 lanes at 56 x 56): each outer index
      // gets threads of its own, and the partial results are combined in
      // further stages.
      if (!c.outer.empty() && (!lanes || c.outputs * lanes < minThreads)) {
        // Only where that makes enough threads (a small batch norm keeps
        // its two kernels).
        int64_t t = outerParallelLanesFor(c);
        if (t && c.outputs * c.outerExtent * t >= minThreads) {
          c.outerParallel = true;
          lanes = t;
        }
      }
      if (!lanes)
        continue;
      linalg::GenericOp next = split(rewriter, op, c, lanes);
      // A combine of many partial results (the outer indices times the
      // lanes) is split again, until each thread combines few.
      while (next) {
        Candidate later;
        if (!match(next, later) || later.extent < 256)
          break;
        int64_t t = laterStageLanesFor(later.extent);
        if (!t)
          break;
        next = split(rewriter, next, later, t);
      }
    }
  }

  /// Splits `op` (stage 1 with `lanes` lanes, then stage 2) and returns
  /// stage 2.
  linalg::GenericOp split(IRRewriter &rewriter, linalg::GenericOp op,
                          const Candidate &c, int64_t lanes) const;
};

/// A partial result needs no fill with the combiner's identity (a kernel
/// per split): the first iteration of `stage`'s reductions yields its
/// element as it is instead of combining it with what the buffer holds,
/// which is the same value (-0 + v, 1 * v, max(-inf, v), min(+inf, v) are
/// v, NaN included: a maxnum or minnum over the lane keeps dropping it as
/// before).
void takeFirstElement(RewriterBase &rewriter, linalg::GenericOp stage,
                      bool outFirst) {
  Operation *yield = stage.getRegion().front().getTerminator();
  Operation *combiner = yield->getOperand(0).getDefiningOp();
  Value value = combiner->getOperand(outFirst ? 1 : 0);
  Location loc = yield->getLoc();
  rewriter.setInsertionPoint(yield);
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0), first;
  for (auto [i, t] : llvm::enumerate(stage.getIteratorTypesArray())) {
    if (t != utils::IteratorType::reduction)
      continue;
    Value atZero = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::eq,
        linalg::IndexOp::create(rewriter, loc, i), zero);
    first = first ? arith::AndIOp::create(rewriter, loc, first, atZero)
                  : atZero;
  }
  Value result = arith::SelectOp::create(rewriter, loc, first, value,
                                         combiner->getResult(0));
  rewriter.modifyOpInPlace(yield, [&] { yield->setOperand(0, result); });
}

/// Input `v` with its reduction group (at `at`, `size` dimensions) as two
/// dimensions [extent / lanes, lanes].
Value laneView(OpBuilder &b, Location loc, Value v, int at, size_t size,
               int64_t extent, int64_t lanes) {
  auto type = cast<MemRefType>(v.getType());
  int64_t rank = type.getRank();
  if (size > 1) {
    v = memref::CollapseShapeOp::create(b, loc, v,
                                        groupCollapse(rank, at, int64_t(size)));
    type = cast<MemRefType>(v.getType());
    rank = type.getRank();
  }
  SmallVector<ReassociationIndices> reassoc;
  SmallVector<int64_t> shape;
  for (int64_t j = 0, o = 0; j < rank; ++j) {
    if (j == at) {
      reassoc.push_back({o, o + 1});
      shape.append({extent / lanes, lanes});
      o += 2;
    } else {
      reassoc.push_back({o++});
      shape.push_back(type.getDimSize(j));
    }
  }
  return memref::ExpandShapeOp::create(b, loc, shape, v, reassoc);
}

/// Stage 2 of splitting `op` (candidate `c`): out = combine(out, partial
/// ...) over the partial results' last `k` dimensions (row) or first
/// (otherwise), in order.
linalg::GenericOp combineStage(RewriterBase &rewriter, linalg::GenericOp op,
                               const Candidate &c, Value partial, bool row,
                               unsigned k) {
  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  unsigned n = c.parallels.size();
  Value out = op.getDpsInitOperand(0)->get();
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  SmallVector<AffineExpr> outResults;
  SmallVector<AffineExpr> dim2(op.getNumLoops());
  for (auto [i, p] : llvm::enumerate(c.parallels))
    dim2[p] = getAffineDimExpr(unsigned(i), ctx);
  for (unsigned r : c.reductions)
    dim2[r] = getAffineConstantExpr(0, ctx);
  for (unsigned r : c.outer)
    dim2[r] = getAffineConstantExpr(0, ctx);
  for (AffineExpr e : outMap.getResults())
    outResults.push_back(e.replaceDims(dim2));
  SmallVector<AffineExpr> partial2 = outResults, reduced;
  for (unsigned i = 0; i < k; ++i)
    reduced.push_back(getAffineDimExpr(n + i, ctx));
  partial2.insert(row ? partial2.end() : partial2.begin(), reduced.begin(),
                  reduced.end());
  SmallVector<utils::IteratorType> iterators2(n + k,
                                              utils::IteratorType::parallel);
  for (unsigned i = n; i < n + k; ++i)
    iterators2[i] = utils::IteratorType::reduction;
  Operation *combiner = c.combiner;
  bool outFirst = c.outFirst;
  return linalg::GenericOp::create(
      rewriter, loc, TypeRange{}, ValueRange{partial}, ValueRange{out},
      {AffineMap::get(n + k, 0, partial2, ctx),
       AffineMap::get(n + k, 0, outResults, ctx)},
      iterators2, [&](OpBuilder &b, Location l, ValueRange args) {
        IRMapping map;
        map.map(combiner->getOperand(outFirst ? 0 : 1), args[1]);
        map.map(combiner->getOperand(outFirst ? 1 : 0), args[0]);
        Operation *copy = b.clone(*combiner, map);
        linalg::YieldOp::create(b, l, copy->getResult(0));
      });
}

linalg::GenericOp SplitReductionsPass::split(IRRewriter &rewriter,
                                             linalg::GenericOp op,
                                             const Candidate &c,
                                             int64_t lanes) const {
  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  rewriter.setInsertionPoint(op);
  unsigned n = c.parallels.size();
  // New loops: a row reduction (its first reading input's group innermost)
  // puts the lanes after the output's dimensions, so adjacent threads read
  // adjacent elements; otherwise the lanes come first.
  bool row = false;
  for (auto [i, in] : llvm::enumerate(op.getDpsInputOperands()))
    if (c.groupAt[i] >= 0) {
      row = c.groupAt[i] + c.reductions.size() ==
            op.getMatchingIndexingMap(in).getNumResults();
      break;
    }
  // Loops: the output's and the lanes (parallel), the outer reductions,
  // the step along the group. With the outer reductions parallel: the
  // output's, the outer ones and the lanes for a row reduction (the lanes
  // innermost); the outer ones, the lanes and the output's otherwise; then
  // the step.
  unsigned m = c.outer.size(), loops = n + 2 + m;
  unsigned lanePos = row ? n : 0, stepPos = n + 1 + m;
  unsigned outerAt = n + 1, parallelAt = row ? 0 : 1;
  if (c.outerParallel) {
    lanePos = row ? n + m : m;
    outerAt = row ? n : 0;
    parallelAt = row ? 0 : m + 1;
  }
  SmallVector<AffineExpr> dimOf(op.getNumLoops());
  for (auto [i, p] : llvm::enumerate(c.parallels))
    dimOf[p] = getAffineDimExpr(unsigned(i) + parallelAt, ctx);
  for (auto [i, r] : llvm::enumerate(c.outer))
    dimOf[r] = getAffineDimExpr(outerAt + unsigned(i), ctx);
  AffineExpr lane = getAffineDimExpr(lanePos, ctx);
  AffineExpr step = getAffineDimExpr(stepPos, ctx);
  for (unsigned r : c.reductions)
    dimOf[r] = getAffineConstantExpr(0, ctx); // not read: checked by match

  // Stage 1's operands and maps.
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (auto [i, in] : llvm::enumerate(op.getDpsInputOperands())) {
    AffineMap map = op.getMatchingIndexingMap(in);
    SmallVector<AffineExpr> results;
    int at = c.groupAt[i];
    for (auto [j, e] : llvm::enumerate(map.getResults())) {
      if (at >= 0 && int(j) >= at && int(j) < at + int(c.reductions.size())) {
        if (int(j) == at)
          results.append({step, lane});
        continue;
      }
      results.push_back(e.replaceDims(dimOf));
    }
    inputs.push_back(at < 0 ? in->get()
                            : laneView(rewriter, loc, in->get(), at,
                                       c.reductions.size(), c.extent, lanes));
    maps.push_back(AffineMap::get(loops, 0, results, ctx));
  }
  Value out = op.getDpsInitOperand(0)->get();
  auto outType = cast<MemRefType>(out.getType());
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  // The partial sums in the threads' order: [out..., lanes] for a row
  // reduction, [lanes, out...] otherwise (each thread's accumulator next
  // to its neighbours').
  // With the outer reductions parallel, they are dimensions of the partial
  // results too, before the lanes: [out..., outer..., lanes] or
  // [outer..., lanes, out...].
  SmallVector<AffineExpr> partialResults;
  SmallVector<int64_t> partialShape;
  for (AffineExpr e : outMap.getResults())
    partialResults.push_back(e.replaceDims(dimOf));
  llvm::append_range(partialShape, outType.getShape());
  SmallVector<AffineExpr> laneResults;
  SmallVector<int64_t> laneShape;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (c.outerParallel)
    for (unsigned r : c.outer) {
      laneResults.push_back(dimOf[r]);
      laneShape.push_back(ranges[r]);
    }
  laneResults.push_back(lane);
  laneShape.push_back(lanes);
  partialResults.insert(row ? partialResults.end() : partialResults.begin(),
                        laneResults.begin(), laneResults.end());
  partialShape.insert(row ? partialShape.end() : partialShape.begin(),
                      laneShape.begin(), laneShape.end());
  auto partialType = MemRefType::get(partialShape, outType.getElementType());
  Value partial = memref::AllocOp::create(rewriter, loc, partialType);
  maps.push_back(AffineMap::get(loops, 0, partialResults, ctx));
  SmallVector<utils::IteratorType> iterators(loops,
                                             utils::IteratorType::parallel);
  for (unsigned i = c.outerParallel ? stepPos : n + 1; i < loops; ++i)
    iterators[i] = utils::IteratorType::reduction;

  auto stage1 = linalg::GenericOp::create(rewriter, loc, TypeRange{}, inputs,
                                          ValueRange{partial}, maps, iterators);
  // The body as it was, each loop index renumbered; a reduction index is
  // rebuilt from (step, lane) and the other reductions' extents.
  rewriter.cloneRegionBefore(op.getRegion(), stage1.getRegion(),
                             stage1.getRegion().end());
  SmallVector<linalg::IndexOp> indices;
  stage1.getRegion().walk([&](linalg::IndexOp i) { indices.push_back(i); });
  for (linalg::IndexOp index : indices) {
    rewriter.setInsertionPoint(index);
    unsigned d = index.getDim();
    if (!llvm::is_contained(c.reductions, d)) {
      rewriter.replaceOpWithNewOp<linalg::IndexOp>(
          index, cast<AffineDimExpr>(dimOf[d]).getPosition());
      continue;
    }
    // flat = step * lanes + lane over the group; this dimension's index is
    // (flat / inner) % extent, inner the product of the later extents.
    Location l = index.getLoc();
    Value s = linalg::IndexOp::create(rewriter, l, stepPos);
    Value t = linalg::IndexOp::create(rewriter, l, lanePos);
    Value flat = arith::AddIOp::create(
        rewriter, l,
        arith::MulIOp::create(rewriter, l, s,
                              arith::ConstantIndexOp::create(rewriter, l, lanes)),
        t);
    int64_t inner = 1;
    for (unsigned r : llvm::reverse(c.reductions)) {
      if (r == d)
        break;
      inner *= ranges[r];
    }
    Value v = arith::DivUIOp::create(
        rewriter, l, flat, arith::ConstantIndexOp::create(rewriter, l, inner));
    v = arith::RemUIOp::create(
        rewriter, l, v, arith::ConstantIndexOp::create(rewriter, l, ranges[d]));
    rewriter.replaceOp(index, v);
  }
  takeFirstElement(rewriter, stage1, c.outFirst);

  // Stage 2: out = combine(out, partial[0]), ..., partial[lanes - 1] (the
  // partial results of each outer index in turn, if they are parallel).
  rewriter.setInsertionPoint(op);
  linalg::GenericOp stage2 =
      combineStage(rewriter, op, c, partial, row, laneResults.size());
  memref::DeallocOp::create(rewriter, loc, partial);
  rewriter.eraseOp(op);
  return stage2;
}

} // namespace
