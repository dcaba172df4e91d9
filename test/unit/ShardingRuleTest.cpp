//===- ShardingRuleTest.cpp - Factor rules of loom ops ----------------------===//
//
// Checks rules structurally (which factor each dimension gets, its kind and
// size) and by their printed form, which is what users read.
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

using namespace mlir;
using namespace mlir::loom;

namespace {

class ShardingRuleTest : public loom_test::LoomTest {
protected:
  /// Parses one function body and returns the rule of its first op OpTy,
  /// after checking the rule against the op's types.
  template <typename OpTy>
  ShardingRule ruleOf(StringRef args, StringRef body) {
    std::string ir = ("func.func @f(" + args + ") {\n" + body + "\n  return\n}").str();
    parse(ir);
    OpTy op = first<OpTy>();
    ShardingRule rule = op.getShardingRule();
    EXPECT_TRUE(succeeded(rule.verify(op))) << rule.str();
    return rule;
  }
};

TEST_F(ShardingRuleTest, MatmulContractsOverK) {
  ShardingRule rule = ruleOf<DotGeneralOp>(
      "%a: tensor<8x16xf32>, %b: tensor<16x32xf32>",
      "%0 = loom.dot_general %a, %b contracting_dims = [1] x [0] "
      ": (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>");
  EXPECT_EQ(rule.str(), "([i, j], [j, k]) -> ([i, k]) {i=8, j=16, k=32} "
                        "reduction={j:sum}");
  ASSERT_EQ(rule.getNumFactors(), 3);
  EXPECT_EQ(rule.getFactor(1).kind, FactorKind::Reduction);
  EXPECT_EQ(rule.getFactor(1).reduction, ReductionKind::sum);
  EXPECT_EQ(rule.getFactor(0).kind, FactorKind::Parallel);
  EXPECT_EQ(rule.getFactor(2).kind, FactorKind::Parallel);
}

TEST_F(ShardingRuleTest, AttentionScoresShareBatchAndHeads) {
  ShardingRule rule = ruleOf<DotGeneralOp>(
      "%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>",
      "%0 = loom.dot_general %q, %k batching_dims = [0, 1] x [0, 1] "
      "contracting_dims = [3] x [3] : (tensor<2x4x8x16xf32>, "
      "tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32>");
  EXPECT_EQ(rule.str(), "([i, j, k, l], [i, j, m, l]) -> ([i, j, k, m]) "
                        "{i=2, j=4, k=8, l=16, m=8} reduction={l:sum}");
}

TEST_F(ShardingRuleTest, BroadcastDimensionsGetNoFactor) {
  ShardingRule rule = ruleOf<AddOp>(
      "%a: tensor<4x1x8xf32>, %b: tensor<3x1xf32>",
      "%0 = loom.add %a, %b : (tensor<4x1x8xf32>, tensor<3x1xf32>) -> "
      "tensor<4x3x8xf32>");
  EXPECT_EQ(rule.str(), "([i, 1, k], [j, 1]) -> ([i, j, k]) {i=4, j=3, k=8}");
  EXPECT_TRUE(rule.getOperands()[1][1].empty());
}

TEST_F(ShardingRuleTest, ReduceKeepdimsAndMax) {
  ShardingRule sum = ruleOf<ReduceSumOp>(
      "%x: tensor<4x8x16xf32>",
      "%0 = loom.reduce_sum %x dims = [1] keepdims : (tensor<4x8x16xf32>) -> "
      "tensor<4x1x16xf32>");
  EXPECT_EQ(sum.str(),
            "([i, j, k]) -> ([i, 1, k]) {i=4, j=8, k=16} reduction={j:sum}");
  ShardingRule max = ruleOf<ReduceMaxOp>(
      "%x: tensor<4x8xf32>", "%0 = loom.reduce_max %x dims = [0, 1] : "
                             "(tensor<4x8xf32>) -> tensor<f32>");
  EXPECT_EQ(max.str(), "([i, j]) -> ([]) {i=4, j=8} reduction={i:max, j:max}");
}

TEST_F(ShardingRuleTest, ReshapeSplitsAndMergesAlignedDimensions) {
  // [8, 128, 768] -> [8, 128, 12, 64]: heads split off the hidden size.
  ShardingRule heads = ruleOf<ReshapeOp>(
      "%x: tensor<8x128x768xf32>", "%0 = loom.reshape %x : "
                                   "(tensor<8x128x768xf32>) -> "
                                   "tensor<8x128x12x64xf32>");
  EXPECT_EQ(heads.str(), "([i, j, k*l]) -> ([i, j, k, l]) "
                         "{i=8, j=128, k=12, l=64}");
  // [2, 3, 4] -> [6, 4] merges the first two.
  ShardingRule merge = ruleOf<ReshapeOp>(
      "%x: tensor<2x3x4xf32>",
      "%0 = loom.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>");
  EXPECT_EQ(merge.str(), "([i, j, k]) -> ([i*j, k]) {i=2, j=3, k=4}");
  // Size-1 dimensions disappear.
  ShardingRule ones = ruleOf<ReshapeOp>(
      "%x: tensor<4x1x6xf32>",
      "%0 = loom.reshape %x : (tensor<4x1x6xf32>) -> tensor<24xf32>");
  EXPECT_EQ(ones.str(), "([i, 1, j]) -> ([i*j]) {i=4, j=6}");
}

TEST_F(ShardingRuleTest, ReshapeThatDoesNotFactorIsReplicated) {
  // [6, 4] -> [4, 6]: only the common major factor 2 can be split.
  ShardingRule rule = ruleOf<ReshapeOp>(
      "%x: tensor<6x4xf32>",
      "%0 = loom.reshape %x : (tensor<6x4xf32>) -> tensor<4x6xf32>");
  EXPECT_EQ(rule.str(), "([i*k, l]) -> ([i*j, m]) {i=2, j=2, k=3, l=4, m=6} "
                        "replicated={j, k, l, m}");
}

TEST_F(ShardingRuleTest, TransposePermutesFactors) {
  ShardingRule rule = ruleOf<TransposeOp>(
      "%x: tensor<2x3x4xf32>",
      "%0 = loom.transpose %x permutation = [2, 0, 1] : (tensor<2x3x4xf32>) "
      "-> tensor<4x2x3xf32>");
  EXPECT_EQ(rule.str(), "([i, j, k]) -> ([k, i, j]) {i=2, j=3, k=4}");
}

TEST_F(ShardingRuleTest, SoftmaxAxisIsReplicated) {
  ShardingRule rule = ruleOf<SoftmaxOp>(
      "%x: tensor<4x8xf32>", "%0 = loom.softmax %x axis = 1 : tensor<4x8xf32>");
  EXPECT_EQ(rule.str(), "([i, j]) -> ([i, j]) {i=4, j=8} replicated={j}");
}

TEST_F(ShardingRuleTest, LayerNormSharesNormalizedFactorsWithParameters) {
  ShardingRule rule = ruleOf<LayerNormOp>(
      "%x: tensor<4x8x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>",
      "%0 = loom.layer_norm %x, %g, %b axis = 2 epsilon = 1.0e-5 : "
      "(tensor<4x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> "
      "tensor<4x8x16xf32>");
  EXPECT_EQ(rule.str(), "([i, j, k], [k], [k]) -> ([i, j, k]) "
                        "{i=4, j=8, k=16} replicated={k}");
}

TEST_F(ShardingRuleTest, ConvSplitsBatchAndFiltersReducesChannels) {
  ShardingRule rule = ruleOf<ConvOp>(
      "%x: tensor<8x3x32x32xf32>, %w: tensor<16x3x3x3xf32>",
      "%0 = loom.conv %x, %w strides = [1, 1] padding = [1, 1, 1, 1] "
      "dilations = [1, 1] groups = 1 : (tensor<8x3x32x32xf32>, "
      "tensor<16x3x3x3xf32>) -> tensor<8x16x32x32xf32>");
  EXPECT_EQ(rule.str(),
            "([i, k, l, m], [j, k, n, o]) -> ([i, j, p, q]) "
            "{i=8, j=16, k=3, l=32, m=32, n=3, o=3, p=32, q=32} "
            "reduction={k:sum} replicated={l, m, n, o, p, q}");
}

TEST_F(ShardingRuleTest, GatherKeepsTableRowsWhole) {
  ShardingRule rule = ruleOf<GatherOp>(
      "%t: tensor<100x16xf32>, %i: tensor<4x8xi64>",
      "%0 = loom.gather %t[%i] axis = 0 : (tensor<100x16xf32>, "
      "tensor<4x8xi64>) -> tensor<4x8x16xf32>");
  EXPECT_EQ(rule.str(), "([i, l], [j, k]) -> ([j, k, l]) "
                        "{i=100, j=4, k=8, l=16} replicated={i}");
}

TEST_F(ShardingRuleTest, CrossEntropyReducesOverSamples) {
  ShardingRule mean = ruleOf<CrossEntropyOp>(
      "%x: tensor<8x10xf32>, %l: tensor<8xi64>",
      "%0 = loom.cross_entropy %x, %l reduction = mean : "
      "(tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>");
  EXPECT_EQ(mean.str(), "([i, j], [i]) -> ([]) {i=8, j=10} "
                        "reduction={i:sum} replicated={j}");
  ShardingRule none = ruleOf<CrossEntropyOp>(
      "%x: tensor<8x10xf32>, %l: tensor<8xi64>, %w: tensor<10xf32>",
      "%0 = loom.cross_entropy %x, %l weight = %w reduction = none : "
      "(tensor<8x10xf32>, tensor<8xi64>, tensor<10xf32>) -> tensor<8xf32>");
  EXPECT_EQ(none.str(),
            "([i, j], [i], [j]) -> ([i]) {i=8, j=10} replicated={j}");
}

TEST_F(ShardingRuleTest, ConcatAndSliceKeepChangedDimensionsWhole) {
  ShardingRule concat = ruleOf<ConcatOp>(
      "%a: tensor<4x2xf32>, %b: tensor<4x3xf32>",
      "%0 = loom.concat %a, %b axis = 1 : (tensor<4x2xf32>, tensor<4x3xf32>) "
      "-> tensor<4x5xf32>");
  EXPECT_EQ(concat.str(), "([i, j], [i, k]) -> ([i, l]) {i=4, j=2, k=3, l=5} "
                          "replicated={j, k, l}");
  ShardingRule slice = ruleOf<SliceOp>(
      "%x: tensor<4x8xf32>",
      "%0 = loom.slice %x [0:4, 2:8:2] : (tensor<4x8xf32>) -> tensor<4x3xf32>");
  EXPECT_EQ(slice.str(), "([i, j]) -> ([i, k]) {i=4, j=8, k=3} "
                         "replicated={j, k}");
}

TEST_F(ShardingRuleTest, BroadcastOpNewDimensionsOnlyInResult) {
  ShardingRule rule = ruleOf<BroadcastOp>(
      "%x: tensor<8xf32>",
      "%0 = loom.broadcast %x dims = [1] : (tensor<8xf32>) -> tensor<4x8xf32>");
  EXPECT_EQ(rule.str(), "([j]) -> ([i, j]) {i=4, j=8}");
}

TEST_F(ShardingRuleTest, DropoutSplitsFreelyAndSeedIsScalar) {
  ShardingRule rule = ruleOf<DropoutOp>(
      "%x: tensor<4x8xf32>, %s: tensor<i64>",
      "%0, %1 = loom.dropout %x, %s ratio = 0.5 : (tensor<4x8xf32>, "
      "tensor<i64>) -> (tensor<4x8xf32>, tensor<4x8xi1>)");
  EXPECT_EQ(rule.str(), "([i, j], []) -> ([i, j], [i, j]) {i=4, j=8}");
}

TEST_F(ShardingRuleTest, VerifyRejectsInconsistentRules) {
  parse("func.func @f(%x: tensor<4x8xf32>) {\n"
        "  %0 = loom.exp %x : tensor<4x8xf32>\n  return\n}");
  ExpOp op = first<ExpOp>();
  ShardingRule wrongSize;
  int64_t i = wrongSize.addFactor(4, FactorKind::Parallel);
  int64_t j = wrongSize.addFactor(7, FactorKind::Parallel);
  wrongSize.addOperand({{i}, {j}});
  wrongSize.addResult({{i}, {j}});
  ScopedDiagnosticHandler silence(&context, [](Diagnostic &) { return success(); });
  EXPECT_TRUE(failed(wrongSize.verify(op)));

  ShardingRule reductionInResult;
  i = reductionInResult.addFactor(4, FactorKind::Parallel);
  j = reductionInResult.addFactor(8, FactorKind::Reduction);
  reductionInResult.addOperand({{i}, {j}});
  reductionInResult.addResult({{i}, {j}});
  EXPECT_TRUE(failed(reductionInResult.verify(op)));

  ShardingRule unused;
  i = unused.addFactor(4, FactorKind::Parallel);
  j = unused.addFactor(8, FactorKind::Parallel);
  unused.addFactor(3, FactorKind::Parallel);
  unused.addOperand({{i}, {j}});
  unused.addResult({{i}, {j}});
  EXPECT_TRUE(failed(unused.verify(op)));
}

//===----------------------------------------------------------------------===//
// What passes ask of a rule instead of listing op kinds
//===----------------------------------------------------------------------===//

TEST_F(ShardingRuleTest, ContractionsCountTwoFlopsPerPoint) {
  ShardingRule dot = ruleOf<DotGeneralOp>(
      "%a: tensor<8x16xf32>, %b: tensor<16x32xf32>",
      "%0 = loom.dot_general %a, %b contracting_dims = [1] x [0] "
      ": (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>");
  EXPECT_TRUE(dot.isContraction());
  EXPECT_DOUBLE_EQ(dot.getFlops(), 2.0 * 8 * 16 * 32);
  ShardingRule add = ruleOf<AddOp>("%a: tensor<4x8xf32>",
                                   "%0 = loom.add %a, %a : tensor<4x8xf32>");
  EXPECT_FALSE(add.isContraction());
  EXPECT_DOUBLE_EQ(add.getFlops(), 32);
}

TEST_F(ShardingRuleTest, ConvolutionFlopsAreMultiplyAccumulates) {
  // N=2, F=8, C=3, kernel 3x3, output 4x4: 2 * 2*8*3*9*16.
  ShardingRule rule = ruleOf<ConvOp>(
      "%x: tensor<2x3x6x6xf32>, %w: tensor<8x3x3x3xf32>",
      "%0 = loom.conv %x, %w strides = [1, 1] padding = [0, 0, 0, 0] "
      "dilations = [1, 1] groups = 1 : (tensor<2x3x6x6xf32>, "
      "tensor<8x3x3x3xf32>) -> tensor<2x8x4x4xf32>");
  EXPECT_TRUE(rule.isContraction());
  EXPECT_DOUBLE_EQ(rule.getFlops(), 2.0 * 2 * 8 * 3 * 9 * 16);
}

TEST_F(ShardingRuleTest, GlobalPositionsNeedWholeTensors) {
  ShardingRule rule = ruleOf<DropoutOp>(
      "%x: tensor<4x8xf32>, %s: tensor<i64>",
      "%0:2 = loom.dropout %x, %s ratio = 0.5 : (tensor<4x8xf32>, "
      "tensor<i64>) -> (tensor<4x8xf32>, tensor<4x8xi1>)");
  EXPECT_TRUE(rule.needsWholeTensors());
  ShardingRule relu = ruleOf<ReluOp>("%x: tensor<4x8xf32>",
                                     "%0 = loom.relu %x : tensor<4x8xf32>");
  EXPECT_FALSE(relu.needsWholeTensors());
}

TEST_F(ShardingRuleTest, MeansAreAveragedFactors) {
  ShardingRule mean = ruleOf<ReduceMeanOp>(
      "%x: tensor<4x8xf32>",
      "%0 = loom.reduce_mean %x dims = [1] : (tensor<4x8xf32>) -> "
      "tensor<4xf32>");
  EXPECT_FALSE(mean.getFactor(0).averaged);
  EXPECT_TRUE(mean.getFactor(1).averaged);
  ShardingRule sum = ruleOf<ReduceSumOp>(
      "%x: tensor<4x8xf32>",
      "%0 = loom.reduce_sum %x dims = [1] : (tensor<4x8xf32>) -> "
      "tensor<4xf32>");
  EXPECT_FALSE(sum.getFactor(1).averaged);
}

TEST_F(ShardingRuleTest, GloballyNormalizedLossesKeepSamplesWhole) {
  ShardingRule plain = ruleOf<CrossEntropyOp>(
      "%x: tensor<4x10xf32>, %l: tensor<4xi64>",
      "%0 = loom.cross_entropy %x, %l reduction = mean : (tensor<4x10xf32>, "
      "tensor<4xi64>) -> tensor<f32>");
  EXPECT_EQ(plain.getFactor(0).kind, FactorKind::Reduction);
  EXPECT_TRUE(plain.getFactor(0).averaged);
  ShardingRule ignoring = ruleOf<CrossEntropyOp>(
      "%x: tensor<4x10xf32>, %l: tensor<4xi64>",
      "%0 = loom.cross_entropy %x, %l reduction = mean ignore_index = 0 : "
      "(tensor<4x10xf32>, tensor<4xi64>) -> tensor<f32>");
  EXPECT_EQ(ignoring.getFactor(0).kind, FactorKind::Replicated);
}

TEST_F(ShardingRuleTest, LinearityOfPartialSums) {
  ShardingRule mul = ruleOf<MulOp>("%a: tensor<4xf32>",
                                   "%0 = loom.mul %a, %a : tensor<4xf32>");
  EXPECT_EQ(mul.getLinearity(), Linearity::PerOperand);
  EXPECT_EQ(mul.getLinearOperands(), ArrayRef<unsigned>({0, 1}));
  ShardingRule div = ruleOf<DivOp>("%a: tensor<4xf32>",
                                   "%0 = loom.div %a, %a : tensor<4xf32>");
  EXPECT_EQ(div.getLinearOperands(), ArrayRef<unsigned>({0}));
  ShardingRule add = ruleOf<AddOp>("%a: tensor<4xf32>",
                                   "%0 = loom.add %a, %a : tensor<4xf32>");
  EXPECT_EQ(add.getLinearity(), Linearity::Joint);
  ShardingRule exp = ruleOf<ExpOp>("%a: tensor<4xf32>",
                                   "%0 = loom.exp %a : tensor<4xf32>");
  EXPECT_EQ(exp.getLinearity(), Linearity::None);
  ShardingRule toInt = ruleOf<CastOp>(
      "%a: tensor<4xf32>", "%0 = loom.cast %a : tensor<4xf32> to tensor<4xi32>");
  EXPECT_EQ(toInt.getLinearity(), Linearity::None);
  ShardingRule toHalf = ruleOf<CastOp>(
      "%a: tensor<4xf32>", "%0 = loom.cast %a : tensor<4xf32> to tensor<4xbf16>");
  EXPECT_EQ(toHalf.getLinearity(), Linearity::Joint);
}

} // namespace
