//===- ProgramValuesTest.cpp - Rank programs' values equal loom-run's -----===//
//
// Rank programs draw and convert data with their own setFromDouble (no
// LLVM at run time); loom-run with HostTensor::setFromDouble (LLVM's
// APFloat). Both must give the same bits, so that a program and the JIT
// train on the same numbers: f16 and bf16 rounded once from double, to
// nearest even, with ties, subnormals, overflow to infinity, signed zeros.
//
//===----------------------------------------------------------------------===//

#include "loom/Execution/HostTensor.h"

#include "../../runtime/src/program/internal.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <random>

namespace {

uint16_t viaLoomRun(mlir::Type type, double v) {
  mlir::loom::HostTensor t(mlir::RankedTensorType::get({1}, type));
  t.setFromDouble(0, v);
  uint16_t bits;
  std::memcpy(&bits, t.data(), 2);
  return bits;
}

uint16_t viaProgram(loom_dtype_t dtype, double v) {
  loom::program::Tensor t(dtype, {1});
  loom::program::detail::setFromDouble(t, 0, v);
  uint16_t bits;
  std::memcpy(&bits, t.bytes.data(), 2);
  return bits;
}

TEST(ProgramValues, HalfFormatsRoundAsLoomRunDoes) {
  mlir::MLIRContext context;
  mlir::Builder b(&context);
  std::vector<double> values = {0.0, -0.0, 1.0, -1.0, 65504.0, 65520.0,
                                1e6, -1e6, 6.1e-5, 5.96e-8, 2.98e-8, 1e-10,
                                3.4e38, 3.39e38, 1e39, 1.17549435e-38,
                                9.2e-41, 1.0 / 3, std::ldexp(1.0, -149)};
  // Exact midpoints between neighbouring bf16 and f16 values (ties), and
  // their neighbours one double ulp away.
  for (int e = -20; e < 20; ++e)
    for (int m : {0, 1, 2, 77, 127}) {
      double lo = std::ldexp(1.0 + m / 128.0, e);
      double mid = lo + std::ldexp(1.0, e - 8);
      values.push_back(mid);
      values.push_back(std::nextafter(mid, 0.0));
      values.push_back(std::nextafter(mid, 1e300));
      double lo16 = std::ldexp(1.0 + m / 1024.0, e);
      double mid16 = lo16 + std::ldexp(1.0, e - 11);
      values.push_back(mid16);
      values.push_back(-std::nextafter(mid16, 1e300));
    }
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int i = 0; i < 20000; ++i)
    values.push_back(u(gen) * std::ldexp(1.0, int(gen() % 60) - 30));
  for (double v : values) {
    EXPECT_EQ(viaProgram(LOOM_DTYPE_BF16, v), viaLoomRun(b.getBF16Type(), v))
        << "bf16 of " << v;
    EXPECT_EQ(viaProgram(LOOM_DTYPE_F16, v), viaLoomRun(b.getF16Type(), v))
        << "f16 of " << v;
  }
}

} // namespace

// drawSynthetic stores f32 and i64 draws by type: the values must be those
// of the generic path (setFromDouble of each draw), which the training
// tests' synthetic data has always been.
TEST(ProgramValues, SyntheticDrawsByTypeEqualTheGenericPath) {
  using loom::program::detail::setFromDouble;
  for (loom_dtype_t dtype : {LOOM_DTYPE_F32, LOOM_DTYPE_I64}) {
    loom::program::Value v;
    v.dtype = dtype;
    v.global = {37, 29};
    v.indexBound = 1000;
    std::mt19937_64 gen(1234), ref(1234);
    loom::program::Tensor drawn = loom::program::detail::drawSynthetic(v, gen);
    loom::program::Tensor expected(dtype, v.global);
    std::uniform_real_distribution<double> real(-1.0, 1.0);
    std::uniform_int_distribution<int64_t> ints(0, v.indexBound - 1);
    for (int64_t i = 0; i < expected.numElements(); ++i)
      setFromDouble(expected, i,
                    dtype == LOOM_DTYPE_F32 ? real(ref) : double(ints(ref)));
    ASSERT_EQ(drawn.bytes.size(), expected.bytes.size());
    EXPECT_EQ(0, std::memcmp(drawn.bytes.data(), expected.bytes.data(),
                             drawn.bytes.size()))
        << loom_dtype_name(dtype);
    // Both generators advanced equally: the next step's draws agree too.
    EXPECT_EQ(gen(), ref());
  }
}
