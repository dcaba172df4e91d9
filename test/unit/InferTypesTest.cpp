//===- InferTypesTest.cpp - Building loom ops with inferred result types ---===//
//
// Importers and autodiff build ops without spelling result types; these
// check the builders that infer them.
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

#include <cmath>
#include <cstdint>

using namespace mlir;
using namespace mlir::loom;

namespace {

class InferTypesTest : public loom_test::LoomTest {
protected:
  InferTypesTest() : builder(&context), loc(builder.getUnknownLoc()) {
    module = ModuleOp::create(loc);
    builder.setInsertionPointToEnd(module->getBody());
  }

  /// A fresh function argument of the given type.
  Value arg(ArrayRef<int64_t> shape, Type element = {}) {
    if (!element)
      element = builder.getF32Type();
    auto type = RankedTensorType::get(shape, element);
    if (!fn) {
      fn = func::FuncOp::create(builder, loc, "f",
                                builder.getFunctionType({}, {}));
      builder.setInsertionPointToStart(fn.addEntryBlock());
      auto ret = func::ReturnOp::create(builder, loc);
      builder.setInsertionPoint(ret);
    }
    EXPECT_TRUE(succeeded(fn.insertArgument(fn.getNumArguments(), type, {}, loc)));
    return fn.getArgument(fn.getNumArguments() - 1);
  }

  static ArrayRef<int64_t> shape(Value v) {
    return cast<RankedTensorType>(v.getType()).getShape();
  }

  OpBuilder builder;
  Location loc;
  func::FuncOp fn;
};

TEST_F(InferTypesTest, BinaryBroadcasts) {
  Value a = arg({4, 1, 8}), b = arg({3, 1});
  auto add = AddOp::create(builder, loc, a, b);
  EXPECT_EQ(shape(add), (ArrayRef<int64_t>{4, 3, 8}));
  auto cmp = CompareOp::create(builder, loc, CompareDirection::lt, a, b);
  EXPECT_TRUE(cast<RankedTensorType>(cmp.getType()).getElementType().isInteger(1));
  EXPECT_TRUE(succeeded(mlir::verify(*module)));
}

TEST_F(InferTypesTest, MatmulBuilderBatchesLeadingDimensions) {
  Value a = arg({2, 8, 16}), b = arg({2, 16, 4});
  auto mm = DotGeneralOp::create(builder, loc, a, b);
  EXPECT_EQ(shape(mm), (ArrayRef<int64_t>{2, 8, 4}));
  EXPECT_EQ(mm.getLhsBatchingDims(), (ArrayRef<int64_t>{0}));
  EXPECT_EQ(mm.getLhsContractingDims(), (ArrayRef<int64_t>{2}));
  EXPECT_EQ(mm.getRhsContractingDims(), (ArrayRef<int64_t>{1}));
  Value x = arg({8, 16}), w = arg({16, 32});
  EXPECT_EQ(shape(DotGeneralOp::create(builder, loc, x, w)),
            (ArrayRef<int64_t>{8, 32}));
}

TEST_F(InferTypesTest, WindowsAndReductions) {
  Value x = arg({2, 3, 32, 32}), w = arg({16, 3, 5, 5});
  auto conv = ConvOp::create(builder, loc, x, w, builder.getDenseI64ArrayAttr({2, 2}),
                               builder.getDenseI64ArrayAttr({2, 2, 2, 2}),
                               builder.getDenseI64ArrayAttr({1, 1}),
                               builder.getI64IntegerAttr(1));
  EXPECT_EQ(shape(conv), (ArrayRef<int64_t>{2, 16, 16, 16}));
  auto pool = MaxPoolOp::create(builder, loc, conv, builder.getDenseI64ArrayAttr({3, 3}),
                                  builder.getDenseI64ArrayAttr({2, 2}),
                                  builder.getDenseI64ArrayAttr({1, 1, 1, 1}),
                                  builder.getDenseI64ArrayAttr({1, 1}));
  EXPECT_EQ(shape(pool), (ArrayRef<int64_t>{2, 16, 8, 8}));
  auto sum = ReduceSumOp::create(builder, loc, pool, builder.getDenseI64ArrayAttr({1, 3}),
                                 builder.getUnitAttr());
  EXPECT_EQ(shape(sum), (ArrayRef<int64_t>{2, 1, 8, 1}));
  EXPECT_TRUE(succeeded(mlir::verify(*module)));
}

TEST_F(InferTypesTest, ShapeOps) {
  Value x = arg({2, 3, 4});
  auto t = TransposeOp::create(builder, loc, x, builder.getDenseI64ArrayAttr({2, 0, 1}));
  EXPECT_EQ(shape(t), (ArrayRef<int64_t>{4, 2, 3}));
  auto s = SliceOp::create(builder, loc, x, builder.getDenseI64ArrayAttr({0, 1, 1}),
                           builder.getDenseI64ArrayAttr({2, 3, 4}),
                           builder.getDenseI64ArrayAttr({1, 1, 2}));
  EXPECT_EQ(shape(s), (ArrayRef<int64_t>{2, 2, 2}));
  Value table = arg({100, 16}), ids = arg({4, 8}, builder.getI64Type());
  auto g = GatherOp::create(builder, loc, table, ids, builder.getI64IntegerAttr(0));
  EXPECT_EQ(shape(g), (ArrayRef<int64_t>{4, 8, 16}));
  auto c = ConcatOp::create(builder, loc, ValueRange{x, x}, builder.getI64IntegerAttr(2));
  EXPECT_EQ(shape(c), (ArrayRef<int64_t>{2, 3, 8}));
  auto p = PadOp::create(builder, loc, x, builder.getDenseI64ArrayAttr({1, 0, 0}),
                         builder.getDenseI64ArrayAttr({0, 0, 2}),
                         builder.getF32FloatAttr(0.0f));
  EXPECT_EQ(shape(p), (ArrayRef<int64_t>{3, 3, 6}));
  EXPECT_TRUE(succeeded(mlir::verify(*module)));
}

TEST_F(InferTypesTest, LossesReduceToScalars) {
  Value logits = arg({8, 10, 3}), labels = arg({8, 3}, builder.getI64Type());
  auto mean = CrossEntropyOp::create(builder, loc, logits, labels, Value(),
                                     LossReduction::mean, IntegerAttr());
  EXPECT_EQ(shape(mean), (ArrayRef<int64_t>{}));
  auto none = NllLossOp::create(builder, loc, logits, labels, Value(),
                                LossReduction::none, IntegerAttr());
  EXPECT_EQ(shape(none), (ArrayRef<int64_t>{8, 3}));
  EXPECT_TRUE(succeeded(mlir::verify(*module)));
}

TEST_F(InferTypesTest, IncompatibleOperandsFailToInfer) {
  Value a = arg({4, 3}), b = arg({4});
  SmallVector<Type> types;
  AddOp::Adaptor adaptor(ValueRange{a, b});
  // No location: inference fails silently, as builders expect.
  EXPECT_TRUE(failed(AddOp::inferReturnTypes(&context, std::nullopt, adaptor, types)));
}

// A scalar from a file (an attribute, an optimizer's coefficient) given to
// an integer tensor saturates: converting 1e30 or NaN to an integer is
// undefined (UBSan found 1e30 for a uint8 moment of ONNX's Adam).
TEST_F(InferTypesTest, IntegerScalarsSaturate) {
  auto value = [&](Type t, double v) {
    return cast<IntegerAttr>(scalarAttr(t, v)).getValue();
  };
  Type i8 = builder.getI8Type(), i64 = builder.getI64Type();
  Type u8 = builder.getIntegerType(8, /*isSigned=*/false);
  Type u64 = builder.getIntegerType(64, /*isSigned=*/false);
  EXPECT_EQ(value(i8, 1e30).getSExtValue(), 127);
  EXPECT_EQ(value(i8, -1e30).getSExtValue(), -128);
  EXPECT_EQ(value(i8, -7.9).getSExtValue(), -7);
  EXPECT_EQ(value(i64, 1e30).getSExtValue(), INT64_MAX);
  EXPECT_EQ(value(i64, -std::ldexp(1.0, 63)).getSExtValue(), INT64_MIN);
  EXPECT_EQ(value(i64, std::nan("")).getSExtValue(), 0);
  EXPECT_EQ(value(builder.getI32Type(), 5e9).getSExtValue(), INT32_MAX);
  EXPECT_EQ(value(u8, 300).getZExtValue(), 255u);
  EXPECT_EQ(value(u8, -5).getZExtValue(), 0u);
  EXPECT_EQ(value(u64, 1e30).getZExtValue(), UINT64_MAX);
  EXPECT_EQ(value(builder.getI1Type(), 2).getZExtValue(), 1u);
  EXPECT_EQ(value(builder.getI1Type(), std::nan("")).getZExtValue(), 0u);
  EXPECT_EQ(cast<FloatAttr>(scalarAttr(builder.getF32Type(), 1e30))
                .getValueAsDouble(),
            double(float(1e30)));
}

} // namespace
