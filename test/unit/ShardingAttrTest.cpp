//===- ShardingAttrTest.cpp - #loom.sharding and loom.mesh ------------------===//

#include "TestUtils.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;
using namespace mlir::loom;

namespace {

class ShardingAttrTest : public loom_test::LoomTest {};

TEST_F(ShardingAttrTest, BuildQueryAndPrint) {
  auto sharding = ShardingAttr::get(&context, "cluster", {{"dp", "tp"}, {}},
                                    {"pp"}, ReductionKind::max);
  EXPECT_EQ(sharding.getRank(), 2);
  EXPECT_EQ(sharding.getDimAxes(0), (SmallVector<StringRef>{"dp", "tp"}));
  EXPECT_TRUE(sharding.getDimAxes(1).empty());
  EXPECT_TRUE(sharding.isPartial());
  EXPECT_FALSE(sharding.isFullyReplicated());
  std::string text;
  llvm::raw_string_ostream os(text);
  os << Attribute(sharding);
  EXPECT_EQ(text, "#loom.sharding<@cluster, [{\"dp\", \"tp\"}, {}], "
                  "partial = max {\"pp\"}>");
  // Parsing the printed form gives the same (uniqued) attribute.
  EXPECT_EQ(parseAttribute(text, &context), Attribute(sharding));

  auto replicated = ShardingAttr::get(&context, "cluster", {{}, {}, {}});
  EXPECT_TRUE(replicated.isFullyReplicated());
}

TEST_F(ShardingAttrTest, GetCheckedRejectsRepeatedAxes) {
  std::string error;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    error = diag.str();
    return success();
  });
  Builder b(&context);
  auto attr = ShardingAttr::getChecked(
      [&] { return emitError(UnknownLoc::get(&context)); }, &context,
      FlatSymbolRefAttr::get(&context, "m"),
      b.getArrayAttr({b.getStrArrayAttr({"x"}), b.getStrArrayAttr({"x"})}),
      b.getArrayAttr({}), ReductionKind::sum);
  EXPECT_FALSE(attr);
  EXPECT_EQ(error,
            "mesh axis \"x\" is used more than once in a sharding");
}

TEST_F(ShardingAttrTest, VerifyForChecksMeshRankAndDivisibility) {
  parse(R"mlir(
    loom.mesh @m ["dp"=2, "tp"=4]
    func.func @f(%x: tensor<8x6xf32>) {
      return
    }
  )mlir");
  auto fn = first<func::FuncOp>();
  Type type = fn.getArgumentTypes()[0];
  std::string error;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    error = diag.str();
    return success();
  });

  EXPECT_TRUE(succeeded(ShardingAttr::get(&context, "m", {{"dp", "tp"}, {}})
                            .verifyFor(type, fn, "x")));
  EXPECT_TRUE(failed(ShardingAttr::get(&context, "m", {{}, {"tp"}})
                         .verifyFor(type, fn, "x")));
  EXPECT_EQ(error, "'func.func' op sharding of x splits dimension 1 of size "
                   "6 over 4 devices (\"tp\"=4), which does not divide it");
  EXPECT_TRUE(failed(ShardingAttr::get(&context, "m", {{"sp"}, {}})
                         .verifyFor(type, fn, "x")));
  EXPECT_EQ(error, "'func.func' op sharding of x uses unknown axis \"sp\"; "
                   "mesh @m has \"dp\", \"tp\"");
  EXPECT_TRUE(failed(ShardingAttr::get(&context, "m", {{"dp"}})
                         .verifyFor(type, fn, "x")));
  EXPECT_TRUE(failed(ShardingAttr::get(&context, "nowhere", {{}, {}})
                         .verifyFor(type, fn, "x")));
}

TEST_F(ShardingAttrTest, MeshQueries) {
  parse(R"mlir(loom.mesh @m ["dp"=2, "tp"=4 {bandwidth = 4.5e11}])mlir");
  auto mesh = first<MeshOp>();
  EXPECT_EQ(mesh.getNumDevices(), 8);
  EXPECT_EQ(mesh.getAxisIndex("tp"), 1);
  EXPECT_EQ(mesh.getAxisIndex("pp"), -1);
  ASSERT_TRUE(mesh.getAxis("tp").getBandwidth());
  EXPECT_DOUBLE_EQ(mesh.getAxis("tp").getBandwidth().getValueAsDouble(), 4.5e11);
  EXPECT_FALSE(mesh.getAxis("dp").getLatency());
}

} // namespace
