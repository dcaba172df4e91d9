//===- BucketAllReduce.cpp - Combine all-reduces into buckets -------------===//
//
// Data parallelism all-reduces every gradient; one collective per tensor
// pays the latency once per tensor. Like PyTorch DDP and Horovod, this pass
// fuses them into buckets of up to `bucket-bytes`: each all_reduce first
// moves up to just after its operand is computed (gradients are then
// adjacent, produced by the backward pass), then runs of compatible ones
// (same mesh, axes and reduction) become one variadic all_reduce placed at
// the last of them, as long as no result is used before that point.
//
// Partitioning defers a gradient's all_reduce past the optimizer's scaling
// of it (a partial sum times a scalar is still a partial sum), which puts
// optimizer work between the gradients. In a partitioned function a scalar
// that is not itself reduced holds the same value on every device, so
// sum(x) * s == sum(x * s): the all_reduce moves back before such a scaling
// (mul or div by a rank-0 value, neg) to keep the gradients adjacent.
//
// A planned step reduces a gradient where it is made, which may be before a
// relayout (the gradient of a weight read transposed is transposed back).
// A relayout moves elements and reduces none, so it commutes with any
// all-reduce: transpose(all_reduce(x)) becomes all_reduce(transpose(x)),
// bit for bit, and the gradients stay adjacent.
//
//===----------------------------------------------------------------------===//

#include "loom/Dialect/Loom/Utils/Utils.h"
#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Sharding/Buckets.h"
#include "loom/Sharding/Passes.h"
#include "llvm/ADT/MapVector.h"

#include <tuple>
#include "loom/Support/Debug.h"

#define DEBUG_TYPE "loom-bucket-all-reduce"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMBUCKETALLREDUCE
#include "loom/Sharding/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {


struct BucketAllReducePass
    : loom::impl::LoomBucketAllReduceBase<BucketAllReducePass> {
  using LoomBucketAllReduceBase::LoomBucketAllReduceBase;

  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp fn) {
      if (!fn.isExternal() && fn.getBody().hasOneBlock())
        bucket(fn.getBody().front(),
               fn->hasAttr(LoomDialect::kPartitionedAttrName));
    });
  }

  /// `x` when the single input of `ar` is f(x) of x's type, used only by
  /// `ar`, for an op f linear in x (its sharding rule), position for
  /// position, whose other operands are rank 0: a scaling such as `x * s`,
  /// `x / s` or `-x`. Then
  /// all_reduce(f(x)) = f(all_reduce(x)) since s is the same everywhere.
  static Value scaledOperand(AllReduceOp ar) {
    if (ar.getInputs().size() != 1 || ar.getReduction() != ReductionKind::sum)
      return {};
    Value in = ar.getInputs().front();
    Operation *def = in.getDefiningOp();
    auto iface = dyn_cast_or_null<ShardingRuleOpInterface>(def);
    if (!iface || !in.hasOneUse() || def->getBlock() != ar->getBlock())
      return {};
    ShardingRule rule = iface.getShardingRule();
    SmallVector<unsigned> linear;
    if (rule.getLinearity() == Linearity::Joint && def->getNumOperands() == 1)
      linear.push_back(0);
    else if (rule.getLinearity() == Linearity::PerOperand)
      llvm::append_range(linear, rule.getLinearOperands());
    for (unsigned k : linear) {
      Value x = def->getOperand(k);
      bool othersScalar = llvm::all_of(
          llvm::enumerate(def->getOperands()), [&](auto it) {
            return it.index() == k ||
                   cast<RankedTensorType>(it.value().getType()).getRank() == 0;
          });
      // Position for position (x's dimensions are the result's, not
      // permuted), so bucketing keeps the gradient's layout.
      bool sameLayout = rule.getOperands()[k] == rule.getResults()[0];
      if (x.getType() == in.getType() && othersScalar && sameLayout)
        return x;
    }
    return {};
  }

  /// all_reduce(x * s) -> all_reduce(x) * s, repeatedly.
  static void reduceBeforeScaling(Block &block) {
    for (auto ar : llvm::to_vector(block.getOps<AllReduceOp>())) {
      while (Value x = scaledOperand(ar)) {
        Operation *scale = ar.getInputs().front().getDefiningOp();
        ar->moveBefore(scale);
        Value reduced = ar.getResult(0);
        reduced.replaceAllUsesWith(scale->getResult(0));
        ar->setOperand(0, x);
        reduced.setType(x.getType());
        scale->replaceUsesOfWith(x, reduced);
      }
    }
  }

  /// r = all_reduce(x); y = relayout(r) -> y' = relayout(x); all_reduce(y'),
  /// repeatedly, when the relayout is r's only use.
  static void reduceAfterRelayout(Block &block) {
    for (auto ar : llvm::to_vector(block.getOps<AllReduceOp>())) {
      while (ar.getInputs().size() == 1 && ar.getResult(0).hasOneUse()) {
        Operation *relayout = *ar.getResult(0).getUsers().begin();
        if (!isa<TransposeOp, ReshapeOp>(relayout) ||
            relayout->getBlock() != &block)
          break;
        Value reduced = ar.getResult(0), out = relayout->getResult(0);
        relayout->moveBefore(ar);
        relayout->setOperand(0, ar.getInputs().front());
        out.replaceAllUsesWith(reduced);
        ar->setOperand(0, out);
        reduced.setType(out.getType());
      }
    }
  }

  void bucket(Block &block, bool partitioned) {
    if (partitioned) {
      reduceBeforeScaling(block);
      reduceAfterRelayout(block);
    }
    // 1. Each all_reduce as early as its operands allow.
    for (auto ar : llvm::to_vector(block.getOps<AllReduceOp>())) {
      Operation *latest = nullptr;
      for (Value v : ar.getInputs())
        if (Operation *def = v.getDefiningOp())
          if (def->getBlock() == &block &&
              (!latest || latest->isBeforeInBlock(def)))
            latest = def;
      if (latest)
        ar->moveAfter(latest);
      else
        ar->moveBefore(&block.front());
    }
    // 2. Compatible all_reduces (same mesh, axes and reduction) join one
    // open bucket per kind, placed at its last member; a member whose
    // result is used before the next one closes the bucket, as does size.
    // The sizes follow the one bucket rule (Buckets.h), which the planner
    // prices.
    struct Bucket {
      explicit Bucket(BucketFiller filler) : filler(filler) {}
      SmallVector<AllReduceOp> members;
      BucketFiller filler;
    };
    using Key = std::tuple<Attribute, Attribute, unsigned>;
    llvm::MapVector<Key, Bucket> open;
    auto flush = [&](Bucket &bucket) {
      LLVM_DEBUG(if (!bucket.members.empty()) llvm::dbgs()
                 << "bucket of " << bucket.members.size() << " all_reduces, "
                 << bucket.filler.bytesHeld() << " bytes\n");
      if (bucket.members.size() > 1) {
        AllReduceOp last = bucket.members.back();
        OpBuilder b(last);
        SmallVector<Value> inputs;
        SmallVector<Type> types;
        for (AllReduceOp ar : bucket.members)
          for (Value v : ar.getInputs()) {
            inputs.push_back(v);
            types.push_back(v.getType());
          }
        auto fused = AllReduceOp::create(b, last.getLoc(), types, inputs,
                                         last.getMeshAttr(), last.getAxes(),
                                         last.getReductionAttr());
        unsigned next = 0;
        for (AllReduceOp ar : bucket.members) {
          for (Value r : ar.getResults())
            r.replaceAllUsesWith(fused.getResult(next++));
          ar.erase();
        }
      }
      bucket.members.clear();
      bucket.filler.close();
    };
    for (auto ar : llvm::to_vector(block.getOps<AllReduceOp>())) {
      int64_t bytes = 0;
      for (Value v : ar.getInputs())
        bytes += loom::tensorBytes(v.getType());
      Key key(ar.getMeshAttr(), ar.getAxes(),
              static_cast<unsigned>(ar.getReduction()));
      Bucket &bucket =
          open.try_emplace(key, BucketFiller(double(bucketBytes),
                                             double(firstBucketBytes)))
              .first->second;
      bool fits = !bucket.filler.closesBefore(double(bytes));
      // Earlier results must not be used before this one runs.
      for (AllReduceOp member : bucket.members)
        for (Operation *user : member->getUsers())
          if (user->getBlock() == &block && user->isBeforeInBlock(ar))
            fits = false;
      if (!fits)
        flush(bucket);
      bucket.members.push_back(ar);
      // The first bucket of a kind closes as soon as it holds
      // first-bucket-bytes, so that its reduction can start while the
      // backward pass goes on.
      if (bucket.filler.add(double(bytes)))
        flush(bucket);
    }
    for (auto &entry : open)
      flush(entry.second);
  }
};

} // namespace
