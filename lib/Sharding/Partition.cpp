//===- Partition.cpp - The global program becomes the per-device program --===//
//
// Every value has a sharding (loom-propagate-sharding). For each op, the
// factor sharding is read off its results (split factors) and operands
// (reduction factors); operands are resharded to what that needs, the op is
// cloned with local types, and its results are recorded with their actual
// sharding (partial where a reduction factor is split). Resharding emits the
// fewest collectives the two shardings allow: reduce_scatter for a partial
// value that becomes split, all_reduce for the rest of the partial axes,
// all_to_all for an axis moving between dimensions, all_gather for axes
// that go away, all_slice for axes that appear.
//
// A planned step (loom.factors) is partitioned as the planner priced it:
// planned ops split by the plan, their gradient rules (loom.vjp_of) on the
// forward op's layouts, and the gradients of a value (loom.cotangent)
// that come back in one layout added where they are and resharded to the
// value's layout once (Megatron-LM's one all-reduce for Q, K and V).
//
// Afterwards, work moves onto slices (computeOnSlices): an op whose only
// users are one all_slice runs on slices of its operands instead, and an
// all_reduce whose only users are one all_slice becomes a reduce_scatter.
// That is how ZeRO's gradients are reduce-scattered once and the optimizer
// runs on shards, whatever chain of elementwise ops lies between.
//
//===----------------------------------------------------------------------===//

#include "loom/Dialect/Loom/Utils/Utils.h"
#include "loom/Sharding/Propagation.h"
#include "loom/Sharding/FactorSharding.h"
#include "loom/Sharding/Reshard.h"
#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Sharding/Passes.h"
#include "loom/Support/Debug.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/Support/FormatVariadic.h"

#define DEBUG_TYPE "loom-partition"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMPARTITION
#include "loom/Sharding/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {


void computeOnSlices(Block &block);

struct Sharded {
  Value value;            // local
  ShardingAttr sharding;  // of the global value it holds a piece of
};

class Partitioner {
public:
  Partitioner(MeshOp mesh, OpBuilder &b, bool dropoutOnRows = false)
      : mesh(mesh), b(b), dropoutOnRows(dropoutOnRows) {}

  /// Collectives taking `v` (global type `global`) from sharding `from` to
  /// `to`: the resharding library's steps (Reshard.h).
  FailureOr<Value> reshard(Location loc, Value v, ShardingAttr from,
                           ShardingAttr to, RankedTensorType global);
  LogicalResult partition(func::FuncOp fn, const PropagationResult &plan);

private:
  LogicalResult partitionOp(Operation *op, const PropagationResult &plan);
  FactorSharding chooseFactors(Operation *op, const ShardingRule &rule,
                               const PropagationResult &plan);
  Value rescaleMeans(Location loc, Value result, const FactorSharding &fs);
  /// A dropout the plan runs on this device's block of rows: its seed
  /// offset so that the block draws the whole tensor's mask for those rows.
  void offsetDropoutSeed(DropoutOp op, FactorSharding &fs,
                         const ShardingRule &rule);
  void copyWhole(Operation *op);
  /// `op` cloned with `map`, without the attributes that describe the
  /// global program (shardings, the plan's factors, autodiff's numbers).
  Operation *cloneLocal(Operation *op, IRMapping &map);

  /// Operand `i` of `op` as this device holds it. The ops of a gradient
  /// rule (loom.vjp_of) of a planned op (loom.factors) read the forward
  /// op's operands as the forward op read them (resharded for it) and its
  /// results before they were resolved: the planner prices a backward pass
  /// on the forward op's factors, and this is what makes the program do
  /// so. Function arguments are read from storage again. The gradient of
  /// a forward result comes back to the layout the forward op made it in
  /// (the transpose of resolving it), once.
  Sharded input(Operation *op, unsigned i);

  MeshOp mesh;
  OpBuilder &b;
  /// A dropout whose input is split along its first dimension only runs on
  /// its block of rows (tagged loom.micro_batch_rows) instead of the whole
  /// tensor: micro-batches, whose step offsets the mask per block.
  bool dropoutOnRows = false;
  DenseMap<Value, Sharded> local;
  /// Per forward op number (loom.op_id): the op, its operands as resharded
  /// for it and its results as it produced them.
  struct Forward {
    Operation *op = nullptr;
    SmallVector<Sharded> operands, results;
  };
  DenseMap<int64_t, Forward> forward;
  /// Gradients of forward results, in the layout the forward op made them.
  DenseMap<Value, Sharded> unresolved;
  /// Whether `g`, a gradient of a forward value (loom.cotangent) or a sum
  /// of them, is only added to more of that value's gradients.
  bool summedLater(Value g) const;
  /// A sum of gradients of one forward value (AddOp), `op` being its last
  /// or not (summedLater).
  LogicalResult sumGradients(Operation *op, Value primal);
  /// Gradients of one forward value not yet summed: one per layout they
  /// came back in (partial sums included), those alike added already.
  DenseMap<Value, SmallVector<Sharded, 2>> pendingSums;
  /// The step was planned (its ops carry loom.factors).
  bool planned = false;
};

/// The forward value `g` is the gradient of (a loom.cotangent, or a sum of
/// them), or null.
static Value gradientOf(Value g) {
  if (auto c = g.getDefiningOp<CotangentOp>())
    return c.getPrimal();
  if (auto add = g.getDefiningOp<AddOp>();
      add && !add->hasAttr(LoomDialect::kVjpOfAttrName)) {
    Value a = gradientOf(add->getOperand(0));
    if (a && a == gradientOf(add->getOperand(1)))
      return a;
  }
  return {};
}

/// An AddOp summing gradients of one forward value: its primal, or null.
static Value sumOfGradients(Operation *op) {
  if (!isa<AddOp>(op) || op->hasAttr(LoomDialect::kVjpOfAttrName))
    return {};
  return gradientOf(op->getResult(0));
}

bool Partitioner::summedLater(Value g) const {
  if (!planned || !g.hasOneUse())
    return false;
  Value primal = gradientOf(g);
  return primal && sumOfGradients(*g.user_begin()) == primal;
}

// The planner prices the gradients of a value as summed per layout before
// they are resharded (planner::summedGradient): Q, K and V read one
// activation and their partial gradients are added, then all-reduced once,
// as Megatron-LM does. Gradients in different layouts are each brought to
// the value's layout, once, where the sum is complete.
LogicalResult Partitioner::sumGradients(Operation *op, Value primal) {
  Location loc = op->getLoc();
  auto take = [&](Value v) -> SmallVector<Sharded, 2> {
    if (auto it = pendingSums.find(v); it != pendingSums.end()) {
      SmallVector<Sharded, 2> groups = std::move(it->second);
      pendingSums.erase(it);
      return groups;
    }
    return {local.lookup(v)};
  };
  SmallVector<Sharded, 2> groups = take(op->getOperand(0));
  SmallVector<Sharded, 2> more = take(op->getOperand(1));
  if (llvm::any_of(groups, [](const Sharded &g) { return !g.value; }) ||
      llvm::any_of(more, [](const Sharded &g) { return !g.value; }))
    return op->emitError("a gradient summed here was not partitioned");
  for (Sharded g : more) {
    bool summable = !g.sharding.isPartial() ||
                    g.sharding.getPartialKind() == ReductionKind::sum;
    Sharded *alike = nullptr;
    for (Sharded &h : groups)
      if (summable && h.sharding == g.sharding)
        alike = &h;
    if (alike)
      alike->value = AddOp::create(b, loc, alike->value, g.value);
    else
      groups.push_back(g);
  }
  Value result = op->getResult(0);
  if (summedLater(result)) {
    pendingSums[result] = std::move(groups);
    return success();
  }
  Sharded p = local.lookup(primal);
  if (!p.value)
    return op->emitError("the value these gradients are of was not partitioned");
  // A weight's micro-batches' gradients that came back alike: their sum,
  // as it is (see CotangentOp above).
  if (isa<BlockArgument>(primal) && groups.size() == 1) {
    local[result] = groups.front();
    return success();
  }
  ShardingAttr to = withPartial(p.sharding, {});
  Value sum;
  for (Sharded &g : groups) {
    FailureOr<Value> v = reshard(loc, g.value, g.sharding, to,
                                 cast<RankedTensorType>(result.getType()));
    if (failed(v))
      return failure();
    sum = sum ? AddOp::create(b, loc, sum, *v).getResult() : *v;
  }
  local[result] = {sum, to};
  return success();
}

/// Whether `v` is an argument bound to a trainable parameter (a weight the
/// planner prices gathering again for the backward pass: regatheredReshard).
static bool isTrainableWeight(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  auto fn = arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp())
                : func::FuncOp();
  if (!fn)
    return false;
  ParameterOp p = boundParameter(fn, arg.getArgNumber());
  return p && p.getTrainable();
}

/// Marks the collectives that took `from` to `v` (one resharding's steps, a
/// chain through first operands) as a weight's gather for the backward pass.
static void markRegather(Value v, Value from) {
  while (v != from) {
    Operation *def = v.getDefiningOp();
    if (!def || def->getNumOperands() == 0)
      return;
    if (isa<CollectiveOpInterface>(def))
      def->setAttr(LoomDialect::kRegatherAttrName,
                   UnitAttr::get(def->getContext()));
    v = def->getOperand(0);
  }
}

Sharded Partitioner::input(Operation *op, unsigned i) {
  Value o = op->getOperand(i);
  // Parameters and data are read from storage again (as FSDP gathers a
  // weight again for the backward pass rather than keeping it).
  if (isa<BlockArgument>(o))
    return local.lookup(o);
  if (auto id = op->getAttrOfType<IntegerAttr>(LoomDialect::kVjpOfAttrName))
    if (auto it = forward.find(id.getInt()); it != forward.end()) {
      const Forward &f = it->second;
      for (auto [k, v] : llvm::enumerate(f.op->getOperands()))
        if (v == o && k < f.operands.size() && f.operands[k].value)
          return f.operands[k];
      Value primal = gradientOf(o);
      for (auto [r, v] : llvm::enumerate(f.op->getResults())) {
        if (r >= f.results.size() || !f.results[r].value)
          continue;
        if (v == o)
          return f.results[r];
        if (v != primal)
          continue;
        if (auto done = unresolved.find(o); done != unresolved.end())
          return done->second;
        Sharded g = local.lookup(o);
        ShardingAttr to = withPartial(f.results[r].sharding, {});
        FailureOr<Value> back = reshard(o.getLoc(), g.value, g.sharding, to,
                                        cast<RankedTensorType>(o.getType()));
        if (failed(back))
          return g;
        return unresolved[o] = {*back, to};
      }
    }
  return local.lookup(o);
}

FailureOr<Value> Partitioner::reshard(Location loc, Value v, ShardingAttr from,
                                      ShardingAttr to,
                                      RankedTensorType global) {
  return buildReshard(b, loc, v, from, to, global, mesh);
}

/// Whether operand `i` of `op` reads a parameter, directly or through
/// relayout ops (transpose, reshape, cast).
static bool readsParameter(Operation *op, unsigned i) {
  Value v = op->getOperand(i);
  while (Operation *def = v.getDefiningOp()) {
    if (!def->hasTrait<OpTrait::loom::Relayout>())
      break;
    v = def->getOperand(0);
  }
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || !isa<func::FuncOp>(arg.getOwner()->getParentOp()))
    return false;
  auto fn = cast<func::FuncOp>(arg.getOwner()->getParentOp());
  return static_cast<bool>(
      fn.getArgAttr(arg.getArgNumber(), LoomDialect::kParamAttrName));
}

/// Computes where the data is: the split of the operands as they are (the
/// largest first; parameters last, so that computation follows the
/// activations and a parameter split for storage only, ZeRO-3, is gathered
/// rather than the activations), then reduction factors (partial results,
/// resharded to what users need), then the plan's result sharding for
/// factors nothing split yet. Ops whose semantics involve global positions
/// see whole tensors (ShardingRule::needsWholeTensors).
/// Whether `fs` splits operand 0 along its first dimension and no other:
/// a device's block is then a contiguous range of the tensor's elements.
static bool splitsRowsOnly(FactorSharding &fs, const ShardingRule &rule,
                           MLIRContext *ctx) {
  ShardingAttr s = fs.project(rule.getOperands()[0], false, ctx);
  if (s.getRank() == 0 || s.getDimAxes(0).empty())
    return false;
  for (int64_t d = 1; d < s.getRank(); ++d)
    if (!s.getDimAxes(d).empty())
      return false;
  return true;
}

FactorSharding Partitioner::chooseFactors(Operation *op,
                                          const ShardingRule &rule,
                                          const PropagationResult &plan) {
  FactorSharding fs(rule, mesh);
  // The planner's choice, when it made one (loom.factors).
  if (auto planned = op->getAttrOfType<ArrayAttr>(LoomDialect::kFactorsAttrName);
      planned && int64_t(planned.size()) == rule.getNumFactors()) {
    for (auto [f, axes] : llvm::enumerate(planned))
      for (Attribute a : cast<ArrayAttr>(axes)) {
        StringRef name = cast<StringAttr>(a).getValue();
        fs.axes[f].push_back(name);
        fs.used.insert(name);
      }
    // The planner only prices splits a block layout can hold; one that is
    // not would compute on strided data and give wrong numbers.
    if (fs.legalize())
      op->emitWarning()
          << "loom-partition: the plan splits a minor factor of a "
             "dimension whose major factor is whole; partitioned with "
             "that factor whole instead (the plan's cost for this op is off)";
    // A dropout's mask is drawn by position in the whole tensor: split on
    // its rows only (a data-parallel preset's), each device draws its
    // rows' part of it (offsetDropoutSeed); any other split would draw
    // another mask, so the dropout runs whole.
    if (isa<DropoutOp>(op) && rule.needsWholeTensors() && !fs.used.empty() &&
        !splitsRowsOnly(fs, rule, op->getContext())) {
      fs.axes.assign(rule.getNumFactors(), {});
      fs.used.clear();
    }
    return fs;
  }
  SmallVector<unsigned> order;
  for (unsigned i = 0; i < op->getNumOperands(); ++i)
    order.push_back(i);
  auto elements = [&](unsigned i) {
    auto t = dyn_cast<RankedTensorType>(op->getOperand(i).getType());
    return t ? t.getNumElements() : 0;
  };
  llvm::stable_sort(order, [&](unsigned a, unsigned b) {
    bool pa = readsParameter(op, a), pb = readsParameter(op, b);
    if (pa != pb)
      return !pa;
    return elements(a) > elements(b);
  });
  for (unsigned i : order)
    fs.absorb(rule.getOperands()[i], input(op, i).sharding,
              {FactorKind::Parallel});
  for (unsigned i : order)
    fs.absorb(rule.getOperands()[i], input(op, i).sharding,
              {FactorKind::Reduction});
  fs.legalize();
  // In a planned step, the ops the plan did not split (gradient rules,
  // sums of gradients, the optimizer update) compute on what their
  // operands bring: the forward ops' layouts and the planned storage of
  // parameters and optimizer state. Propagation's guesses for their results
  // come from the global program, where a gradient rule reads a forward
  // value as it was stored rather than as the forward op read it.
  if (!planned)
    for (auto [i, r] : llvm::enumerate(op->getResults()))
      fs.absorb(rule.getResults()[i], plan.shardings.lookup(r),
                {FactorKind::Parallel});
  fs.legalize();
  if (rule.needsWholeTensors() &&
      !(dropoutOnRows && isa<DropoutOp>(op) &&
        splitsRowsOnly(fs, rule, op->getContext()))) {
    fs.axes.assign(rule.getNumFactors(), {});
    fs.used.clear();
  }
  return fs;
}

/// Device k of the row split (the axes of dimension 0, in their order)
/// holds elements [k * local, (k + 1) * local) of the whole tensor, whose
/// mask is counter-based (element i's counter is seed + (i + 1) *
/// kIndexMultiplier): its seed is raised by k * local * kIndexMultiplier,
/// picked from a constant by this device's slice of it (loom.all_slice: no
/// communication). Without it every device drew the first block's mask:
/// the same mask on every data-parallel rank, not the single device's.
void Partitioner::offsetDropoutSeed(DropoutOp op, FactorSharding &fs,
                                    const ShardingRule &rule) {
  MLIRContext *ctx = op.getContext();
  ShardingAttr s = fs.project(rule.getOperands()[0], false, ctx);
  SmallVector<StringRef> axes = s.getDimAxes(0);
  int64_t blocks = 1;
  SmallVector<Attribute> names;
  for (StringRef axis : axes) {
    blocks *= fs.axisSize(axis);
    names.push_back(StringAttr::get(ctx, axis));
  }
  uint64_t local = cast<RankedTensorType>(op.getInput().getType()).getNumElements();
  Type i64 = IntegerType::get(ctx, 64);
  SmallVector<APInt> offsets;
  for (int64_t k = 0; k < blocks; ++k)
    offsets.push_back(APInt(64, uint64_t(k) * local * DropoutOp::kIndexMultiplier));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(op);
  Location loc = op.getLoc();
  Value all = ConstantOp::create(
      b, loc, DenseElementsAttr::get(RankedTensorType::get({blocks}, i64), offsets));
  Value mine = AllSliceOp::create(
      b, loc, RankedTensorType::get({1}, i64), all,
      FlatSymbolRefAttr::get(mesh.getSymNameAttr()), b.getArrayAttr(names),
      b.getI64IntegerAttr(0));
  Value offset = ReshapeOp::create(b, loc, RankedTensorType::get({}, i64), mine);
  op.getSeedMutable().assign(AddOp::create(b, loc, op.getSeed(), offset));
}

/// Means over split dimensions: each device's mean, divided by the number
/// of shards, sums to the global mean (the rule's `averaged` factors).
Value Partitioner::rescaleMeans(Location loc, Value result,
                                const FactorSharding &fs) {
  int64_t shards = 1;
  for (int64_t f = 0, e = fs.rule.getNumFactors(); f < e; ++f)
    if (fs.rule.getFactor(f).averaged)
      shards *= fs.shards(f);
  if (shards == 1)
    return result;
  auto t = cast<RankedTensorType>(result.getType());
  auto scalarType = RankedTensorType::get({}, t.getElementType());
  Value c = ConstantOp::create(
      b, loc,
      DenseElementsAttr::get(
          scalarType, FloatAttr::get(t.getElementType(),
                                     1.0 / static_cast<double>(shards))));
  return MulOp::create(b, loc, result, c);
}

Operation *Partitioner::cloneLocal(Operation *op, IRMapping &map) {
  Operation *copy = b.clone(*op, map);
  for (StringRef name :
       {LoomDialect::kShardingAttrName, LoomDialect::kFactorsAttrName,
        LoomDialect::kOpIdAttrName, LoomDialect::kVjpOfAttrName})
    copy->removeAttr(name);
  return copy;
}

/// Copies an op the partitioner cannot split (no rule, no results, a
/// constant): it computes on whole values, replicated on every device.
void Partitioner::copyWhole(Operation *op) {
  IRMapping map;
  for (Value o : op->getOperands())
    if (auto it = local.find(o); it != local.end())
      map.map(o, it->second.value);
  Operation *copy = cloneLocal(op, map);
  for (auto [r, c] : llvm::zip(op->getResults(), copy->getResults()))
    if (auto t = dyn_cast<RankedTensorType>(r.getType()))
      local[r] = {c, replicated(mesh, t.getRank())};
}

LogicalResult Partitioner::partitionOp(Operation *op,
                                       const PropagationResult &plan) {
  Location loc = op->getLoc();
  if (isa<ConstantOp>(op) || op->getNumResults() == 0 ||
      !isa<ShardingRuleOpInterface>(op)) {
    copyWhole(op);
    return success();
  }
  if (auto constraint = dyn_cast<ShardingConstraintOp>(op)) {
    Sharded in = local.lookup(constraint.getInput());
    FailureOr<Value> v = reshard(loc, in.value, in.sharding,
                                 constraint.getSharding(),
                                 constraint.getInput().getType());
    if (failed(v))
      return failure();
    local[constraint.getResult()] = {*v, constraint.getSharding()};
    return success();
  }
  // A gradient goes to the layout of the value it is the gradient of (as
  // the planner prices the transpose of the forward resharding), once.
  if (auto cot = dyn_cast<CotangentOp>(op)) {
    Sharded g = local.lookup(cot.getGradient());
    Sharded primal = local.lookup(cot.getPrimal());
    if (!g.value || !primal.value)
      return op->emitError("gradient or primal value was not partitioned");
    if (summedLater(cot.getResult())) {
      pendingSums[cot.getResult()] = {g};
      return success();
    }
    // A weight's gradient stays as it came back (a partial sum, say): its
    // reader, the optimizer's update, reduces it into the layout it keeps
    // the weight's state in (ZeRO: a reduce-scatter).
    if (isa<BlockArgument>(cot.getPrimal())) {
      local[cot.getResult()] = g;
      return success();
    }
    ShardingAttr to = withPartial(primal.sharding, {});
    FailureOr<Value> v = reshard(loc, g.value, g.sharding, to,
                                 cot.getGradient().getType());
    if (failed(v))
      return failure();
    local[cot.getResult()] = {*v, to};
    return success();
  }
  if (Value primal = planned ? sumOfGradients(op) : Value())
    return sumGradients(op, primal);
  ShardingRule rule = cast<ShardingRuleOpInterface>(op).getShardingRule();
  FactorSharding fs = chooseFactors(op, rule, plan);

  // A linear op on partial sums may stay partial when the plan says so.
  SmallVector<ShardingAttr> actual;
  for (unsigned i = 0; i < op->getNumOperands(); ++i)
    actual.push_back(input(op, i).sharding);
  SmallVector<StringRef> keepPartial = linearPartial(rule, actual);
  ShardingAttr planned =
      op->getNumResults() ? plan.shardings.lookup(op->getResult(0)) : nullptr;
  if (!planned || !planned.isPartial() ||
      planned.getPartialAxisNames() != keepPartial)
    keepPartial.clear();
  for (StringRef a : keepPartial)
    if (fs.used.contains(a))
      keepPartial.clear();

  IRMapping map;
  Forward *fwd = nullptr;
  if (auto id = op->getAttrOfType<IntegerAttr>(LoomDialect::kOpIdAttrName);
      id && op->hasAttr(LoomDialect::kFactorsAttrName)) {
    fwd = &forward[id.getInt()];
    *fwd = Forward{op, {}, {}};
  }
  for (auto [i, o] : llvm::enumerate(op->getOperands())) {
    Sharded in = input(op, i);
    if (!in.value)
      return op->emitError("operand #") << i << " was not partitioned";
    ShardingAttr need =
        fs.project(rule.getOperands()[i], false, op->getContext());
    if (!keepPartial.empty() && in.sharding.isPartial())
      need = withPartial(need, keepPartial);
    FailureOr<Value> v = reshard(loc, in.value, in.sharding, need,
                                 cast<RankedTensorType>(o.getType()));
    if (failed(v))
      return failure();
    if (op->hasAttr(LoomDialect::kVjpOfAttrName) && isTrainableWeight(o))
      markRegather(*v, in.value);
    map.map(o, *v);
    if (fwd)
      fwd->operands.push_back({*v, need});
  }
  Operation *copy = cloneLocal(op, map);
  SmallVector<ShardingAttr> resultShardings;
  for (auto [i, r] : llvm::enumerate(op->getResults())) {
    ShardingAttr s = fs.project(rule.getResults()[i], true, op->getContext());
    if (!keepPartial.empty() && !s.isPartial())
      s = withPartial(s, keepPartial);
    FailureOr<RankedTensorType> t =
        localType(cast<RankedTensorType>(r.getType()), s, mesh, loc,
                  "result #" + Twine(i));
    if (failed(t))
      return failure();
    copy->getResult(i).setType(*t);
    resultShardings.push_back(s);
  }
  // Attributes that name global sizes.
  cast<ShardingRuleOpInterface>(copy).adaptToLocalTypes(op->getOperandTypes());
  if (!dropoutOnRows && isa<DropoutOp>(copy) && !fs.used.empty())
    offsetDropoutSeed(cast<DropoutOp>(copy), fs, rule);
  if (dropoutOnRows && isa<DropoutOp>(copy) && rule.needsWholeTensors() &&
      !fs.used.empty())
    copy->setAttr(
        LoomDialect::kMicroBatchRowsAttrName,
        b.getI64IntegerAttr(cast<RankedTensorType>(copy->getOperand(0).getType())
                                .getNumElements()));
  LLVM_DEBUG(llvm::dbgs() << "partition " << op->getName() << ": "
                          << (resultShardings.empty()
                                  ? std::string("-")
                                  : llvm::formatv("{0}", resultShardings[0])
                                        .str())
                          << "\n");
  bool byPlan = op->hasAttr(LoomDialect::kFactorsAttrName);
  for (auto [i, r] : llvm::enumerate(op->getResults())) {
    Value v = i == 0 ? rescaleMeans(loc, copy->getResult(0), fs)
                     : copy->getResult(i);
    ShardingAttr s = resultShardings[i];
    if (fwd)
      fwd->results.push_back({v, s});
    // A planned op's results become what the plan says right here (partial
    // results reduced or scattered as priced), not at each user.
    ShardingAttr want = plan.shardings.lookup(r);
    if (byPlan && want && !want.isPartial() && want != s) {
      FailureOr<Value> resolved =
          reshard(loc, v, s, want, cast<RankedTensorType>(r.getType()));
      if (failed(resolved))
        return failure();
      v = *resolved;
      s = want;
    }
    local[r] = {v, s};
  }
  return success();
}

/// The ops partitioning `op` made (after `last` in `block`: the reshards of
/// its operands, its copy, the reshards of its results) run on its pipeline
/// stage and in its phase.
static void inheritPipelineTags(Operation *op, Operation *last, Block &block) {
  Attribute stage = op->getAttr(LoomDialect::kStageAttrName);
  Attribute phase = op->getAttr(LoomDialect::kPhaseAttrName);
  if (!stage && !phase)
    return;
  for (Operation &made : llvm::make_range(
           last ? std::next(last->getIterator()) : block.begin(), block.end())) {
    if (stage && !made.hasAttr(LoomDialect::kStageAttrName))
      made.setAttr(LoomDialect::kStageAttrName, stage);
    if (phase && !made.hasAttr(LoomDialect::kPhaseAttrName))
      made.setAttr(LoomDialect::kPhaseAttrName, phase);
  }
}

LogicalResult Partitioner::partition(func::FuncOp fn,
                                     const PropagationResult &plan) {
  MLIRContext *ctx = fn.getContext();
  planned = fn.walk([](Operation *op) {
                return op->hasAttr(LoomDialect::kFactorsAttrName)
                           ? WalkResult::interrupt()
                           : WalkResult::advance();
              }).wasInterrupted();
  // Signature: local types of the arguments and results.
  SmallVector<Type> argTypes, resultTypes;
  SmallVector<ShardingAttr> argShardings, resultShardings;
  for (BlockArgument arg : fn.getArguments()) {
    auto t = cast<RankedTensorType>(arg.getType());
    ShardingAttr s = plan.shardings.lookup(arg);
    if (!s)
      s = replicated(mesh, t.getRank());
    FailureOr<RankedTensorType> lt =
        localType(t, s, mesh, fn.getLoc(),
                  "argument '" + loom::argumentName(fn, arg.getArgNumber()) +
                      "'");
    if (failed(lt))
      return failure();
    argTypes.push_back(*lt);
    argShardings.push_back(s);
  }
  auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    auto t = cast<RankedTensorType>(v.getType());
    ShardingAttr s = fn.getResultAttrOfType<ShardingAttr>(
        i, LoomDialect::kShardingAttrName);
    if (!s)
      s = replicated(mesh, t.getRank());
    if (s.isPartial())
      return fn.emitError("result #") << i << " is declared partial (" << s
                                      << "); results must be whole values";
    FailureOr<RankedTensorType> lt =
        localType(t, s, mesh, fn.getLoc(), "result #" + Twine(i));
    if (failed(lt))
      return failure();
    resultTypes.push_back(*lt);
    resultShardings.push_back(s);
  }

  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointAfter(fn);
  auto newFn = func::FuncOp::create(
      b, fn.getLoc(), fn.getSymName(),
      FunctionType::get(ctx, argTypes, resultTypes));
  // (Null when there are none: the setters must not see it.)
  if (ArrayAttr argAttrs = fn.getAllArgAttrs())
    newFn.setAllArgAttrs(argAttrs);
  if (ArrayAttr resultAttrs = fn.getAllResultAttrs())
    newFn.setAllResultAttrs(resultAttrs);
  for (NamedAttribute attr : fn->getDiscardableAttrs())
    newFn->setAttr(attr.getName(), attr.getValue());
  Block *entry = newFn.addEntryBlock();
  for (auto [i, arg] : llvm::enumerate(fn.getArguments())) {
    local[arg] = {entry->getArgument(i), argShardings[i]};
    newFn.setArgAttr(i, LoomDialect::kShardingAttrName, argShardings[i]);
  }
  b.setInsertionPointToEnd(entry);
  for (Operation &op : fn.getBody().front().without_terminator()) {
    Operation *last = entry->empty() ? nullptr : &entry->back();
    if (failed(partitionOp(&op, plan))) {
      newFn.erase();
      return failure();
    }
    inheritPipelineTags(&op, last, *entry);
  }
  SmallVector<Value> results;
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    Sharded s = local.lookup(v);
    Operation *last = entry->empty() ? nullptr : &entry->back();
    FailureOr<Value> r = reshard(ret.getLoc(), s.value, s.sharding,
                                 resultShardings[i],
                                 cast<RankedTensorType>(v.getType()));
    if (failed(r)) {
      newFn.erase();
      return failure();
    }
    if (Operation *def = v.getDefiningOp())
      inheritPipelineTags(def, last, *entry);
    results.push_back(*r);
    newFn.setResultAttr(i, LoomDialect::kShardingAttrName, resultShardings[i]);
  }
  func::ReturnOp::create(b, ret.getLoc(), results);
  newFn->setAttr(LoomDialect::kPartitionedAttrName,
                 FlatSymbolRefAttr::get(mesh.getSymNameAttr()));
  fn.erase();
  computeOnSlices(newFn.getBody().front());
  return success();
}

//===----------------------------------------------------------------------===//
// Computing on slices
//===----------------------------------------------------------------------===//

/// Ops that compute a block of their result from the same block of their
/// operands along any parallel factor (Loom_ComputesOnSlices).
bool sliceable(Operation *op) {
  return op->getNumResults() == 1 && op->getNumRegions() == 0 &&
         op->hasTrait<OpTrait::loom::ComputesOnSlices>();
}

/// The all_slices that are all of `v`'s users, when they all agree.
SmallVector<AllSliceOp> uniformSlices(Value v) {
  SmallVector<AllSliceOp> slices;
  for (Operation *user : v.getUsers()) {
    auto s = dyn_cast<AllSliceOp>(user);
    if (!s)
      return {};
    if (!slices.empty() && (s.getAxes() != slices.front().getAxes() ||
                            s.getDim() != slices.front().getDim() ||
                            s.getMeshAttr() != slices.front().getMeshAttr()))
      return {};
    if (!llvm::is_contained(slices, s))
      slices.push_back(s);
  }
  return slices;
}

/// One step of moving work onto slices at `slice`; true if it changed IR.
bool sliceEarlier(AllSliceOp slice) {
  Value in = slice.getInput();
  Operation *def = in.getDefiningOp();
  if (!def)
    return false;
  SmallVector<AllSliceOp> slices = uniformSlices(in);
  if (slices.empty())
    return false;
  auto dim = static_cast<int64_t>(slice.getDim());
  OpBuilder b(def);
  Value replacement;
  if (auto ar = dyn_cast<AllReduceOp>(def)) {
    // all_slice(all_reduce(x)) over a subset of its axes: the steps
    // planReshard takes from x, partial over the all_reduce's axes, to
    // the slice (reduce_scatter over the slice's axes, all_reduce over the
    // others), the steps the planner prices (Costs::reshard), so the
    // reduce-scatter formed here is the one it priced.
    if (ar.getInputs().size() != 1)
      return false;
    for (Attribute a : slice.getAxes())
      if (!llvm::is_contained(ar.getAxes(), a))
        return false;
    auto mesh = SymbolTable::lookupNearestSymbolFrom<MeshOp>(
        slice, slice.getMeshAttr());
    if (!mesh)
      return false;
    Value x = ar.getInputs().front();
    auto local = cast<RankedTensorType>(x.getType());
    auto names = [](ArrayAttr axes) {
      SmallVector<StringRef> out;
      for (Attribute a : axes)
        out.push_back(cast<StringAttr>(a).getValue());
      return out;
    };
    SmallVector<SmallVector<StringRef>> whole(local.getRank()), sliced(whole);
    sliced[dim] = names(slice.getAxes());
    MLIRContext *ctx = slice.getContext();
    AxisSharding from = toAxisSharding(
        ShardingAttr::get(ctx, mesh.getSymName(), whole,
                          names(ar.getAxes()), ar.getReduction()),
        mesh);
    AxisSharding to = toAxisSharding(
        ShardingAttr::get(ctx, mesh.getSymName(), sliced), mesh);
    FailureOr<SmallVector<ReshardStep>> steps =
        planReshard(from, to, local.getShape(), axisSizes(mesh));
    // Only where a reduce_scatter forms (else the steps are this pair
    // again) and the steps end in the slice's shape.
    if (failed(steps) || steps->empty() ||
        steps->front().kind != CollectiveKind::ReduceScatter ||
        ArrayRef<int64_t>(steps->back().outShape) !=
            slice.getType().getShape())
      return false;
    replacement = buildReshardSteps(b, ar.getLoc(), x, *steps, mesh);
  } else {
    if (!sliceable(def))
      return false;
    ShardingRule rule = cast<ShardingRuleOpInterface>(def).getShardingRule();
    ArrayRef<int64_t> fs = rule.getResults()[0][dim];
    if (fs.size() != 1 ||
        rule.getFactor(fs[0]).kind != FactorKind::Parallel)
      return false;
    int64_t f = fs[0];
    SmallVector<Value> operands;
    for (auto [i, o] : llvm::enumerate(def->getOperands())) {
      const TensorFactors &dims = rule.getOperands()[i];
      int64_t at = -1;
      for (auto [d, factors] : llvm::enumerate(dims)) {
        if (!llvm::is_contained(factors, f))
          continue;
        if (factors.size() != 1)
          return false;
        at = static_cast<int64_t>(d);
      }
      if (at < 0) {
        operands.push_back(o);
        continue;
      }
      auto t = cast<RankedTensorType>(o.getType());
      SmallVector<int64_t> shape(t.getShape());
      shape[at] = slice.getType().getDimSize(dim);
      auto moved = AllSliceOp::create(b, slice.getLoc(), t.clone(shape), o,
                                      slice.getMeshAttr(), slice.getAxes(),
                                      b.getI64IntegerAttr(at));
      // Runs where the op it feeds runs.
      for (StringRef tag :
           {LoomDialect::kStageAttrName, LoomDialect::kPhaseAttrName})
        if (Attribute a = def->getAttr(tag))
          moved->setAttr(tag, a);
      operands.push_back(moved);
    }
    IRMapping map;
    map.map(def->getOperands(), operands);
    Operation *copy = b.clone(*def, map);
    copy->getResult(0).setType(slice.getType());
    replacement = copy->getResult(0);
  }
  for (AllSliceOp s : slices) {
    s.getResult().replaceAllUsesWith(replacement);
    s.erase();
  }
  def->erase();
  return true;
}

void computeOnSlices(Block &block) {
  bool changed = true;
  while (changed) {
    changed = false;
    for (AllSliceOp slice : llvm::to_vector(block.getOps<AllSliceOp>()))
      if (slice->getBlock() && sliceEarlier(slice)) {
        changed = true;
        break; // the op list changed
      }
  }
}

struct PartitionPass : loom::impl::LoomPartitionBase<PartitionPass> {
  using LoomPartitionBase::LoomPartitionBase;
  void runOnOperation() override {
    FailureOr<ShardedFunction> step =
        lookupShardedFunction(getOperation(), function, getArgument());
    if (failed(step) ||
        failed(loom::verifySingleBlock(step->fn, getArgument())))
      return signalPassFailure();
    shardUpdatesLikeParameters(step->fn);
    PropagationResult plan = propagate(step->fn, step->mesh);
    OpBuilder b(&getContext());
    Partitioner partitioner(step->mesh, b);
    if (failed(partitioner.partition(step->fn, plan)))
      return signalPassFailure();
  }
};

} // namespace

LogicalResult mlir::loom::partitionFunction(func::FuncOp fn, MeshOp mesh,
                                            const PropagationResult &plan,
                                            bool dropoutOnRows) {
  OpBuilder b(fn.getContext());
  Partitioner partitioner(mesh, b, dropoutOnRows);
  return partitioner.partition(fn, plan);
}
