//===- ReshardTest.cpp - The planner pays for what the partitioner emits ---===//
//
// For every pair of shardings of an 8x8 f32 tensor on a 2x2 and a 2x2x2
// mesh (every assignment of axes to dimensions in every order, sources
// also partial over the axes they leave free), the planner's price of the
// resharding (Costs::reshardBytes) equals the bytes each device sends in
// the collectives loom-partition emits for it (buildReshard, counted by
// CollectiveOpInterface::getBytesSent), and the emitted program ends in
// the target's local type.
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include "loom/Planner/CostModel.h"
#include "loom/Sharding/FactorSharding.h"
#include "loom/Sharding/Reshard.h"

#include <functional>

using namespace mlir;
using namespace mlir::loom;

namespace {

/// Every sharding of a rank-`rank` tensor: each axis on no dimension or on
/// one, in every order within a dimension.
std::vector<AxisSharding> allShardings(int rank, int axes) {
  std::vector<AxisSharding> out;
  AxisSharding s(rank);
  std::function<void(int)> rec = [&](int a) {
    if (a == axes) {
      // Every order of each dimension's axes.
      std::function<void(int, AxisSharding)> perms = [&](int d,
                                                         AxisSharding t) {
        if (d == rank) {
          out.push_back(t);
          return;
        }
        llvm::sort(t.dims[d]);
        do
          perms(d + 1, t);
        while (std::next_permutation(t.dims[d].begin(), t.dims[d].end()));
      };
      perms(0, s);
      return;
    }
    rec(a + 1);
    for (int d = 0; d < rank; ++d) {
      s.dims[d].push_back(a);
      rec(a + 1);
      s.dims[d].pop_back();
    }
  };
  rec(0);
  return out;
}

class ReshardTest : public loom_test::LoomTest {
protected:
  void checkMesh(StringRef meshIr, ArrayRef<int64_t> sizes) {
    ModuleOp m = parse(meshIr);
    ASSERT_TRUE(m);
    MeshOp mesh = first<MeshOp>();
    planner::MeshShape shape;
    for (auto [a, size] : llvm::enumerate(sizes)) {
      shape.sizes.push_back(size);
      shape.names.push_back(
          cast<MeshAxisAttr>(mesh.getAxes()[a]).getName().str());
      shape.links.push_back({1e9, 1e-6, "test"});
    }
    planner::DeviceSpec device;
    planner::Costs costs(device, shape);
    auto global = RankedTensorType::get({8, 8}, Float32Type::get(&context));
    std::vector<AxisSharding> targets = allShardings(2, sizes.size());
    std::vector<AxisSharding> sources;
    for (const AxisSharding &t : targets) {
      sources.push_back(t);
      // Also partial over every nonempty set of the axes it leaves free.
      uint64_t freeAxes = ~t.usedMask() & ((uint64_t(1) << sizes.size()) - 1);
      for (uint64_t sub = freeAxes; sub; sub = (sub - 1) & freeAxes) {
        AxisSharding p = t;
        p.partial = planner::axesOf(sub);
        sources.push_back(p);
      }
    }
    OpBuilder b(&context);
    b.setInsertionPointToEnd(m.getBody());
    int pairs = 0, moving = 0;
    for (const AxisSharding &from : sources)
      for (const AxisSharding &to : targets) {
        ShardingAttr fromAttr = toShardingAttr(from, mesh);
        ShardingAttr toAttr = toShardingAttr(to, mesh);
        FailureOr<RankedTensorType> in =
            localType(global, fromAttr, mesh, b.getUnknownLoc(), "in");
        FailureOr<RankedTensorType> want =
            localType(global, toAttr, mesh, b.getUnknownLoc(), "out");
        ASSERT_TRUE(succeeded(in) && succeeded(want));
        auto fn = func::FuncOp::create(
            b, b.getUnknownLoc(), "f" + std::to_string(pairs),
            FunctionType::get(&context, {*in}, {}));
        Block *entry = fn.addEntryBlock();
        OpBuilder body = OpBuilder::atBlockEnd(entry);
        FailureOr<Value> out =
            buildReshard(body, b.getUnknownLoc(), entry->getArgument(0),
                         fromAttr, toAttr, global, mesh);
        ASSERT_TRUE(succeeded(out)) << describe(from, mesh) << " -> "
                                    << describe(to, mesh);
        EXPECT_EQ(out->getType(), *want);
        double emitted = 0;
        fn.walk([&](CollectiveOpInterface op) { emitted += op.getBytesSent(); });
        double priced = costs.reshardBytes(from, to, global.getShape(), 4);
        EXPECT_DOUBLE_EQ(priced, emitted)
            << describe(from, mesh) << " -> " << describe(to, mesh);
        moving += emitted > 0;
        ++pairs;
        fn.erase();
      }
    // Enough pairs to mean something, and most of them move data.
    EXPECT_GT(pairs, 100);
    EXPECT_GT(moving, pairs / 2);
  }
};

TEST_F(ReshardTest, PlannerPriceEqualsEmittedBytes2x2) {
  checkMesh(R"(loom.mesh @m ["x"=2, "y"=2])", {2, 2});
}

TEST_F(ReshardTest, PlannerPriceEqualsEmittedBytes2x2x2) {
  checkMesh(R"(loom.mesh @m ["a"=2, "b"=2, "c"=2])", {2, 2, 2});
}

// The disagreement that motivated one library: an axis-order change used
// to cost nothing in the planner while the partitioner gathered and
// sliced.
TEST_F(ReshardTest, AxisOrderChangeIsPaidFor) {
  planner::MeshShape shape;
  shape.sizes = {2, 2};
  shape.names = {"tp", "dp"};
  shape.links = {{1e9, 0, "a"}, {1e9, 0, "b"}};
  planner::DeviceSpec device;
  planner::Costs costs(device, shape);
  AxisSharding from(1), to(1);
  from.dims[0] = {0, 1};
  to.dims[0] = {1, 0};
  // All-gather of 8 floats over 4 devices: 3/4 of 32 bytes.
  EXPECT_DOUBLE_EQ(costs.reshardBytes(from, to, {8}, 4), 24);
  EXPECT_GT(costs.reshard(from, to, {8}, 4), 0);
}

} // namespace
