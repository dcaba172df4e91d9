//===- GradientCheckTest.cpp - Finite-difference checks of gradient rules -===//
//
// For every differentiable loom op: compile f(x...) in float64, form the
// scalar L = sum(f(x...) * r) with a random r, differentiate L with
// loom-autodiff (wrt=all), and compare each analytic gradient element with
// a central difference of L computed by running the compiled forward
// function. Integer arguments (labels, indices) are drawn in
// [0, loom.index_bound).
//
//===----------------------------------------------------------------------===//

#include "TestUtils.h"

#include "loom/Training/Passes.h"
#include "loom/Execution/Executor.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetOperations.h"
#include "llvm/ADT/SetVector.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Pass/PassManager.h"
#include <cmath>
#include <random>
#include <vector>

using namespace mlir;
using namespace mlir::loom;

namespace {

struct GradCase {
  const char *name;
  /// A module with `func.func @f` returning one float64 tensor.
  const char *ir;
  /// Range of the float inputs.
  double lo = -1.0, hi = 1.0;
  /// Values of argument 0 instead of random ones (points of interest).
  std::vector<double> values = {};
};

void PrintTo(const GradCase &c, std::ostream *os) { *os << c.name; }

class GradientCheck : public loom_test::LoomTest,
                      public ::testing::WithParamInterface<GradCase> {};

/// Adds @loss(args..., r) = sum(f(args...) * r).
static func::FuncOp buildLoss(ModuleOp module) {
  auto f = module.lookupSymbol<func::FuncOp>("f");
  auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
  auto outType = cast<RankedTensorType>(ret.getOperand(0).getType());
  SmallVector<Type> args(f.getArgumentTypes());
  args.push_back(outType);
  OpBuilder mb(module.getContext());
  mb.setInsertionPointToEnd(module.getBody());
  auto scalar = RankedTensorType::get({}, outType.getElementType());
  auto loss = func::FuncOp::create(
      mb, f.getLoc(), "loss",
      FunctionType::get(module.getContext(), args, {scalar}));
  for (unsigned i = 0; i < f.getNumArguments(); ++i)
    loss.setArgAttrs(i, f.getArgAttrDict(i));
  Block *entry = loss.addEntryBlock();
  ImplicitLocOpBuilder b(f.getLoc(), entry, entry->end());
  IRMapping map;
  for (unsigned i = 0; i < f.getNumArguments(); ++i)
    map.map(f.getArgument(i), entry->getArgument(i));
  for (Operation &op : f.getBody().front().without_terminator())
    b.clone(op, map);
  Value y = map.lookup(ret.getOperand(0));
  Value weighted = MulOp::create(b, y, entry->getArguments().back());
  Value l = weighted;
  if (outType.getRank() > 0)
    l = ReduceSumOp::create(
        b, weighted,
        llvm::to_vector(llvm::seq<int64_t>(0, outType.getRank())), false);
  func::ReturnOp::create(b, l);
  return loss;
}

TEST_P(GradientCheck, MatchesCentralDifferences) {
  const GradCase &c = GetParam();
  ModuleOp m = parse(c.ir);
  ASSERT_TRUE(m);
  func::FuncOp loss = buildLoss(m);
  {
    PassManager pm(&context);
    pm.addPass(createLoomAutodiff(LoomAutodiffOptions{"loss", "all"}));
    ASSERT_TRUE(succeeded(pm.run(m))) << "autodiff failed for " << c.name;
  }
  ExecutorOptions options;
  options.optLevel = 1;
  std::string error;
  auto forward = Executor::create(m, "loss", options, error);
  ASSERT_TRUE(forward) << error;
  auto backward = Executor::create(m, "loss_grad", options, error);
  ASSERT_TRUE(backward) << error;

  std::mt19937_64 rng(1234);
  std::uniform_real_distribution<double> uniform(c.lo, c.hi);
  std::uniform_real_distribution<double> weights(-1.0, 1.0);
  unsigned numArgs = loss.getNumArguments();
  SmallVector<HostTensor> inputs;
  SmallVector<unsigned> floatArgs;
  for (unsigned i = 0; i < numArgs; ++i) {
    auto type = cast<RankedTensorType>(loss.getArgumentTypes()[i]);
    HostTensor t(type);
    bool isFloat = isa<FloatType>(type.getElementType());
    int64_t bound = 3;
    if (auto attr = loss.getArgAttrOfType<IntegerAttr>(
            i, LoomDialect::kIndexBoundAttrName))
      bound = attr.getInt();
    std::uniform_int_distribution<int64_t> ints(0, bound - 1);
    for (int64_t e = 0; e < t.getNumElements(); ++e)
      t.setFromDouble(e, !isFloat            ? double(ints(rng))
                         : i + 1 == numArgs ? weights(rng)
                                            : uniform(rng));
    if (i == 0 && !c.values.empty()) {
      ASSERT_EQ(int64_t(c.values.size()), t.getNumElements());
      for (auto [e, v] : llvm::enumerate(c.values))
        t.setFromDouble(e, v);
    }
    if (isFloat)
      floatArgs.push_back(i);
    inputs.push_back(std::move(t));
  }
  auto evaluate = [&](ArrayRef<HostTensor> in) {
    SmallVector<const HostTensor *> ptrs;
    for (const HostTensor &t : in)
      ptrs.push_back(&t);
    SmallVector<HostTensor> out;
    EXPECT_TRUE(forward->run(ptrs, out, error)) << error;
    return out.empty() ? NAN : out[0].getAsDouble(0);
  };
  SmallVector<const HostTensor *> ptrs;
  for (const HostTensor &t : inputs)
    ptrs.push_back(&t);
  SmallVector<HostTensor> grads;
  ASSERT_TRUE(backward->run(ptrs, grads, error)) << error;
  ASSERT_EQ(grads.size(), floatArgs.size() + 1);
  EXPECT_NEAR(grads[0].getAsDouble(0), evaluate(inputs), 1e-12);

  double maxAbs = 0;
  for (auto [k, arg] : llvm::enumerate(floatArgs)) {
    if (arg + 1 == numArgs)
      continue; // r, the weights of the output
    const HostTensor &analytic = grads[k + 1];
    for (int64_t e = 0; e < inputs[arg].getNumElements(); ++e) {
      double x = inputs[arg].getAsDouble(e);
      double h = 1e-6 * std::max(1.0, std::abs(x));
      inputs[arg].setFromDouble(e, x + h);
      double up = evaluate(inputs);
      inputs[arg].setFromDouble(e, x - h);
      double down = evaluate(inputs);
      inputs[arg].setFromDouble(e, x);
      double numeric = (up - down) / (2 * h);
      double got = analytic.getAsDouble(e);
      maxAbs = std::max(maxAbs, std::abs(numeric));
      EXPECT_NEAR(got, numeric, 1e-6 + 1e-5 * std::abs(numeric))
          << c.name << ": d/d(arg " << arg << ")[" << e << "]";
    }
  }
  // Guard against a case that checks nothing: some gradient must be
  // nonzero unless the op is piecewise constant.
  StringRef name = c.name;
  if (!name.starts_with("floor") && !name.starts_with("ceil") &&
      !name.starts_with("round"))
    EXPECT_GT(maxAbs, 1e-3) << c.name << " has only zero gradients";
}

/// The forward values of `op` that its gradient rule reads, found by
/// building the rule right after `op` and looking at what the new ops use.
static SmallVector<Value> readByGradient(Operation *op) {
  auto rule = cast<DifferentiableOpInterface>(op);
  OpBuilder b(op->getContext());
  b.setInsertionPointAfter(op);
  Operation *next = op->getNextNode();
  SmallVector<Value> seeds;
  for (Value r : op->getResults()) {
    auto t = cast<RankedTensorType>(r.getType());
    if (!isa<FloatType>(t.getElementType())) {
      seeds.push_back(nullptr);
      continue;
    }
    seeds.push_back(ConstantOp::create(
        b, op->getLoc(),
        DenseElementsAttr::get(t, FloatAttr::get(t.getElementType(), 1.0))));
  }
  SmallVector<bool> wanted;
  for (auto [i, v] : llvm::enumerate(op->getOperands()))
    wanted.push_back(isa<FloatType>(getElementTypeOrSelf(v.getType())) &&
                     rule.isDifferentiableOperand(i));
  SmallVector<Value> grads;
  EXPECT_TRUE(succeeded(rule.buildGradients(b, seeds, wanted, grads)));
  llvm::SetVector<Value> read;
  for (Operation *o = op->getNextNode(); o && o != next; o = o->getNextNode())
    for (Value v : o->getOperands())
      if (v.getDefiningOp() == op || llvm::is_contained(op->getOperands(), v))
        read.insert(v);
  return read.takeVector();
}

// What a rule says it saves (the planner's activation memory and the
// rematerialization pass rely on it) is what it reads.
TEST_P(GradientCheck, SavesWhatTheRuleReads) {
  const GradCase &c = GetParam();
  ModuleOp m = parse(c.ir);
  ASSERT_TRUE(m);
  auto f = m.lookupSymbol<func::FuncOp>("f");
  for (Operation &op : llvm::make_early_inc_range(f.getBody().front())) {
    auto rule = dyn_cast<DifferentiableOpInterface>(op);
    if (!rule || isa<ConstantOp>(op))
      continue;
    SmallVector<Value> declared;
    rule.getSavedForBackward(declared);
    llvm::SmallSetVector<Value, 4> declaredSet(declared.begin(), declared.end());
    SmallVector<Value> read = readByGradient(&op);
    llvm::SmallSetVector<Value, 4> readSet(read.begin(), read.end());
    auto show = [&](ArrayRef<Value> vs) {
      std::string s;
      for (Value v : vs) {
        if (auto r = dyn_cast<OpResult>(v); r && r.getOwner() == &op)
          s += " result#" + std::to_string(r.getResultNumber());
        else
          for (auto [i, o] : llvm::enumerate(op.getOperands()))
            if (o == v)
              s += " operand#" + std::to_string(i);
      }
      return s;
    };
    EXPECT_TRUE(llvm::set_is_subset(declaredSet, readSet) &&
                llvm::set_is_subset(readSet, declaredSet))
        << c.name << ": " << op.getName().getStringRef().str()
        << " declares" << show(declaredSet.getArrayRef()) << " but its gradient reads"
        << show(readSet.getArrayRef());
  }
}

// clang-format off
const GradCase kCases[] = {
  // Unary.
  {"neg", R"(func.func @f(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
     %y = loom.neg %x : tensor<2x3xf64>
     return %y : tensor<2x3xf64> })"},
  {"abs", R"(func.func @f(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
     %y = loom.abs %x : tensor<2x3xf64>
     return %y : tensor<2x3xf64> })"},
  {"exp", R"(func.func @f(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
     %y = loom.exp %x : tensor<2x3xf64>
     return %y : tensor<2x3xf64> })"},
  {"log", R"(func.func @f(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
     %y = loom.log %x : tensor<2x3xf64>
     return %y : tensor<2x3xf64> })", 0.5, 2.0},
  {"sqrt", R"(func.func @f(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
     %y = loom.sqrt %x : tensor<2x3xf64>
     return %y : tensor<2x3xf64> })", 0.5, 2.0},
  {"rsqrt", R"(func.func @f(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
     %y = loom.rsqrt %x : tensor<2x3xf64>
     return %y : tensor<2x3xf64> })", 0.5, 2.0},
  {"tanh", R"(func.func @f(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
     %y = loom.tanh %x : tensor<2x3xf64>
     return %y : tensor<2x3xf64> })"},
  {"sigmoid", R"(func.func @f(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
     %y = loom.sigmoid %x : tensor<2x3xf64>
     return %y : tensor<2x3xf64> })"},
  {"relu", R"(func.func @f(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
     %y = loom.relu %x : tensor<2x3xf64>
     return %y : tensor<2x3xf64> })"},
  {"erf", R"(func.func @f(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
     %y = loom.erf %x : tensor<2x3xf64>
     return %y : tensor<2x3xf64> })"},
  {"floor", R"(func.func @f(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
     %y = loom.floor %x : tensor<2x3xf64>
     return %y : tensor<2x3xf64> })"},
  {"ceil", R"(func.func @f(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
     %y = loom.ceil %x : tensor<2x3xf64>
     return %y : tensor<2x3xf64> })"},
  {"round", R"(func.func @f(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
     %y = loom.round %x : tensor<2x3xf64>
     return %y : tensor<2x3xf64> })"},
  {"sin", R"(func.func @f(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
     %y = loom.sin %x : tensor<2x3xf64>
     return %y : tensor<2x3xf64> })"},
  {"cos", R"(func.func @f(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
     %y = loom.cos %x : tensor<2x3xf64>
     return %y : tensor<2x3xf64> })"},
  {"gelu", R"(func.func @f(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
     %y = loom.gelu %x : tensor<2x3xf64>
     return %y : tensor<2x3xf64> })", -3.0, 3.0},
  {"gelu_tanh", R"(func.func @f(%x: tensor<2x3xf64>) -> tensor<2x3xf64> {
     %y = loom.gelu %x approximate = tanh : tensor<2x3xf64>
     return %y : tensor<2x3xf64> })", -3.0, 3.0},

  // Binary, with numpy broadcasting.
  {"add_broadcast", R"(func.func @f(%a: tensor<2x3xf64>, %b: tensor<3xf64>) -> tensor<2x3xf64> {
     %y = loom.add %a, %b : (tensor<2x3xf64>, tensor<3xf64>) -> tensor<2x3xf64>
     return %y : tensor<2x3xf64> })"},
  {"sub_broadcast", R"(func.func @f(%a: tensor<2x1xf64>, %b: tensor<2x3xf64>) -> tensor<2x3xf64> {
     %y = loom.sub %a, %b : (tensor<2x1xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
     return %y : tensor<2x3xf64> })"},
  {"mul_scalar", R"(func.func @f(%a: tensor<2x3xf64>, %b: tensor<f64>) -> tensor<2x3xf64> {
     %y = loom.mul %a, %b : (tensor<2x3xf64>, tensor<f64>) -> tensor<2x3xf64>
     return %y : tensor<2x3xf64> })"},
  {"div", R"(func.func @f(%a: tensor<2x3xf64>, %b: tensor<1x3xf64>) -> tensor<2x3xf64> {
     %y = loom.div %a, %b : (tensor<2x3xf64>, tensor<1x3xf64>) -> tensor<2x3xf64>
     return %y : tensor<2x3xf64> })", 0.5, 2.0},
  {"pow", R"(func.func @f(%a: tensor<2x3xf64>, %b: tensor<2x3xf64>) -> tensor<2x3xf64> {
     %y = loom.pow %a, %b : tensor<2x3xf64>
     return %y : tensor<2x3xf64> })", 0.5, 2.0},
  {"max", R"(func.func @f(%a: tensor<2x3xf64>, %b: tensor<3xf64>) -> tensor<2x3xf64> {
     %y = loom.max %a, %b : (tensor<2x3xf64>, tensor<3xf64>) -> tensor<2x3xf64>
     return %y : tensor<2x3xf64> })"},
  {"min", R"(func.func @f(%a: tensor<2x3xf64>, %b: tensor<2x3xf64>) -> tensor<2x3xf64> {
     %y = loom.min %a, %b : tensor<2x3xf64>
     return %y : tensor<2x3xf64> })"},
  {"select", R"(func.func @f(%a: tensor<2x3xf64>, %b: tensor<3xf64>) -> tensor<2x3xf64> {
     %c = loom.compare gt, %a, %b : (tensor<2x3xf64>, tensor<3xf64>) -> tensor<2x3xi1>
     %y = loom.select %c, %a, %b : (tensor<2x3xi1>, tensor<2x3xf64>, tensor<3xf64>) -> tensor<2x3xf64>
     return %y : tensor<2x3xf64> })"},
  {"cast_roundtrip", R"(func.func @f(%a: tensor<2x3xf64>) -> tensor<2x3xf64> {
     %e = loom.exp %a : tensor<2x3xf64>
     %y = loom.cast %e : tensor<2x3xf64> to tensor<2x3xf64>
     return %y : tensor<2x3xf64> })"},

  // Contractions.
  {"matmul", R"(func.func @f(%a: tensor<2x3xf64>, %b: tensor<3x4xf64>) -> tensor<2x4xf64> {
     %y = loom.dot_general %a, %b contracting_dims = [1] x [0] : (tensor<2x3xf64>, tensor<3x4xf64>) -> tensor<2x4xf64>
     return %y : tensor<2x4xf64> })"},
  {"matmul_transposed", R"(func.func @f(%a: tensor<3x2xf64>, %b: tensor<4x3xf64>) -> tensor<2x4xf64> {
     %y = loom.dot_general %a, %b contracting_dims = [0] x [1] : (tensor<3x2xf64>, tensor<4x3xf64>) -> tensor<2x4xf64>
     return %y : tensor<2x4xf64> })"},
  {"batch_matmul", R"(func.func @f(%a: tensor<2x3x4xf64>, %b: tensor<2x4x2xf64>) -> tensor<2x3x2xf64> {
     %y = loom.dot_general %a, %b batching_dims = [0] x [0] contracting_dims = [2] x [1] : (tensor<2x3x4xf64>, tensor<2x4x2xf64>) -> tensor<2x3x2xf64>
     return %y : tensor<2x3x2xf64> })"},
  {"attention_scores", R"(func.func @f(%q: tensor<2x2x3x4xf64>, %k: tensor<2x2x5x4xf64>) -> tensor<2x2x3x5xf64> {
     %y = loom.dot_general %q, %k batching_dims = [0, 1] x [0, 1] contracting_dims = [3] x [3] : (tensor<2x2x3x4xf64>, tensor<2x2x5x4xf64>) -> tensor<2x2x3x5xf64>
     return %y : tensor<2x2x3x5xf64> })"},
  {"dot_two_contractions", R"(func.func @f(%a: tensor<3x2x4xf64>, %b: tensor<4x5x3xf64>) -> tensor<2x5xf64> {
     %y = loom.dot_general %a, %b contracting_dims = [2, 0] x [0, 2] : (tensor<3x2x4xf64>, tensor<4x5x3xf64>) -> tensor<2x5xf64>
     return %y : tensor<2x5xf64> })"},
  {"dot_batch_in_middle", R"(func.func @f(%a: tensor<3x2x4xf64>, %b: tensor<4x2x5xf64>) -> tensor<2x3x5xf64> {
     %y = loom.dot_general %a, %b batching_dims = [1] x [1] contracting_dims = [2] x [0] : (tensor<3x2x4xf64>, tensor<4x2x5xf64>) -> tensor<2x3x5xf64>
     return %y : tensor<2x3x5xf64> })"},

  // Reductions.
  {"reduce_sum", R"(func.func @f(%x: tensor<2x3x4xf64>) -> tensor<3xf64> {
     %y = loom.reduce_sum %x dims = [0, 2] : (tensor<2x3x4xf64>) -> tensor<3xf64>
     return %y : tensor<3xf64> })"},
  {"reduce_mean_keepdims", R"(func.func @f(%x: tensor<2x3x4xf64>) -> tensor<2x1x4xf64> {
     %y = loom.reduce_mean %x dims = [1] keepdims : (tensor<2x3x4xf64>) -> tensor<2x1x4xf64>
     return %y : tensor<2x1x4xf64> })"},
  {"reduce_max", R"(func.func @f(%x: tensor<2x3x4xf64>) -> tensor<2x4xf64> {
     %y = loom.reduce_max %x dims = [1] : (tensor<2x3x4xf64>) -> tensor<2x4xf64>
     return %y : tensor<2x4xf64> })"},
  {"reduce_min_keepdims", R"(func.func @f(%x: tensor<2x3x4xf64>) -> tensor<1x3x1xf64> {
     %y = loom.reduce_min %x dims = [0, 2] keepdims : (tensor<2x3x4xf64>) -> tensor<1x3x1xf64>
     return %y : tensor<1x3x1xf64> })"},
  {"reduce_prod", R"(func.func @f(%x: tensor<2x3xf64>) -> tensor<2xf64> {
     %y = loom.reduce_prod %x dims = [1] : (tensor<2x3xf64>) -> tensor<2xf64>
     return %y : tensor<2xf64> })"},
  // One zero in row 0 (its derivative is the product of the others), two
  // in row 1 (all derivatives 0), none in row 2.
  {"reduce_prod_zeros", R"(func.func @f(%x: tensor<3x3xf64>) -> tensor<3xf64> {
     %y = loom.reduce_prod %x dims = [1] : (tensor<3x3xf64>) -> tensor<3xf64>
     return %y : tensor<3xf64> })", -1.0, 1.0,
   {0.7, 0.0, -1.3, 0.0, 0.5, 0.0, 0.4, -0.9, 1.1}},

  // Data movement.
  {"reshape", R"(func.func @f(%x: tensor<2x6xf64>) -> tensor<3x4xf64> {
     %y = loom.reshape %x : (tensor<2x6xf64>) -> tensor<3x4xf64>
     %z = loom.exp %y : tensor<3x4xf64>
     return %z : tensor<3x4xf64> })"},
  {"transpose", R"(func.func @f(%x: tensor<2x3x4xf64>) -> tensor<4x2x3xf64> {
     %y = loom.transpose %x permutation = [2, 0, 1] : (tensor<2x3x4xf64>) -> tensor<4x2x3xf64>
     return %y : tensor<4x2x3xf64> })"},
  {"broadcast", R"(func.func @f(%x: tensor<3x1xf64>) -> tensor<2x3x4xf64> {
     %y = loom.broadcast %x dims = [1, 2] : (tensor<3x1xf64>) -> tensor<2x3x4xf64>
     return %y : tensor<2x3x4xf64> })"},
  {"concat", R"(func.func @f(%a: tensor<2x3xf64>, %b: tensor<2x1xf64>) -> tensor<2x4xf64> {
     %y = loom.concat %a, %b axis = 1 : (tensor<2x3xf64>, tensor<2x1xf64>) -> tensor<2x4xf64>
     return %y : tensor<2x4xf64> })"},
  {"slice_strided", R"(func.func @f(%x: tensor<4x9xf64>) -> tensor<2x3xf64> {
     %y = loom.slice %x [1:4:2, 1:8:3] : (tensor<4x9xf64>) -> tensor<2x3xf64>
     return %y : tensor<2x3xf64> })"},
  {"gather_repeated", R"(func.func @f(%t: tensor<4x3xf64>, %i: tensor<2x3xi64> {loom.index_bound = 4 : i64}) -> tensor<2x3x3xf64> {
     %y = loom.gather %t[%i] axis = 0 : (tensor<4x3xf64>, tensor<2x3xi64>) -> tensor<2x3x3xf64>
     return %y : tensor<2x3x3xf64> })"},
  {"gather_axis1", R"(func.func @f(%t: tensor<2x5xf64>, %i: tensor<3xi32> {loom.index_bound = 5 : i64}) -> tensor<2x3xf64> {
     %y = loom.gather %t[%i] axis = 1 : (tensor<2x5xf64>, tensor<3xi32>) -> tensor<2x3xf64>
     return %y : tensor<2x3xf64> })"},
  {"scatter_add", R"(func.func @f(%u: tensor<2x4x3xf64>, %i: tensor<4xi64> {loom.index_bound = 3 : i64}) -> tensor<2x3x3xf64> {
     %y = loom.scatter_add %u[%i] axis = 1 : (tensor<2x4x3xf64>, tensor<4xi64>) -> tensor<2x3x3xf64>
     return %y : tensor<2x3x3xf64> })"},
  {"pad", R"(func.func @f(%x: tensor<2x3xf64>) -> tensor<3x6xf64> {
     %y = loom.pad %x low = [1, 0] high = [0, 3] value = 5.0 : f64 : (tensor<2x3xf64>) -> tensor<3x6xf64>
     return %y : tensor<3x6xf64> })"},

  // Softmax and normalization.
  {"softmax", R"(func.func @f(%x: tensor<2x4xf64>) -> tensor<2x4xf64> {
     %y = loom.softmax %x axis = 1 : tensor<2x4xf64>
     return %y : tensor<2x4xf64> })"},
  {"log_softmax", R"(func.func @f(%x: tensor<3x2xf64>) -> tensor<3x2xf64> {
     %y = loom.log_softmax %x axis = 0 : tensor<3x2xf64>
     return %y : tensor<3x2xf64> })"},
  {"layer_norm", R"(func.func @f(%x: tensor<2x3x4xf64>, %g: tensor<4xf64>, %b: tensor<4xf64>) -> tensor<2x3x4xf64> {
     %y = loom.layer_norm %x, %g, %b axis = 2 epsilon = 1.0e-5 : (tensor<2x3x4xf64>, tensor<4xf64>, tensor<4xf64>) -> tensor<2x3x4xf64>
     return %y : tensor<2x3x4xf64> })"},
  {"layer_norm_two_axes", R"(func.func @f(%x: tensor<2x3x4xf64>, %g: tensor<3x4xf64>, %b: tensor<3x4xf64>) -> tensor<2x3x4xf64> {
     %y = loom.layer_norm %x, %g, %b axis = 1 epsilon = 1.0e-5 : (tensor<2x3x4xf64>, tensor<3x4xf64>, tensor<3x4xf64>) -> tensor<2x3x4xf64>
     return %y : tensor<2x3x4xf64> })"},
  {"batch_norm_training", R"(func.func @f(%x: tensor<3x2x4xf64>, %g: tensor<2xf64>, %b: tensor<2xf64>) -> tensor<3x2x4xf64> {
     %y, %m, %v = loom.batch_norm_training %x, %g, %b epsilon = 1.0e-5 : (tensor<3x2x4xf64>, tensor<2xf64>, tensor<2xf64>) -> (tensor<3x2x4xf64>, tensor<2xf64>, tensor<2xf64>)
     return %y : tensor<3x2x4xf64> })"},
  {"batch_norm_training_stats", R"(func.func @f(%x: tensor<3x2x2x2xf64>, %g: tensor<2xf64>, %b: tensor<2xf64>) -> tensor<2xf64> {
     %y, %m, %v = loom.batch_norm_training %x, %g, %b epsilon = 1.0e-5 : (tensor<3x2x2x2xf64>, tensor<2xf64>, tensor<2xf64>) -> (tensor<3x2x2x2xf64>, tensor<2xf64>, tensor<2xf64>)
     %s = loom.mul %m, %v : tensor<2xf64>
     %r = loom.reduce_sum %y dims = [0, 2, 3] : (tensor<3x2x2x2xf64>) -> tensor<2xf64>
     %t = loom.add %s, %r : tensor<2xf64>
     return %t : tensor<2xf64> })"},
  {"batch_norm_inference", R"(func.func @f(%x: tensor<2x3x2xf64>, %g: tensor<3xf64>, %b: tensor<3xf64>, %m: tensor<3xf64>, %v: tensor<3xf64>) -> tensor<2x3x2xf64> {
     %y = loom.batch_norm_inference %x, %g, %b, %m, %v epsilon = 1.0e-5 : (tensor<2x3x2xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64>, tensor<3xf64>) -> tensor<2x3x2xf64>
     return %y : tensor<2x3x2xf64> })", 0.5, 2.0},
  {"dropout", R"(func.func @f(%x: tensor<4x8xf64>) -> tensor<4x8xf64> {
     %seed = loom.constant dense<7> : tensor<i64>
     %y, %mask = loom.dropout %x, %seed ratio = 3.000000e-01 : (tensor<4x8xf64>, tensor<i64>) -> (tensor<4x8xf64>, tensor<4x8xi1>)
     return %y : tensor<4x8xf64> })"},

  // Losses.
  {"cross_entropy_mean", R"(func.func @f(%x: tensor<3x4xf64>, %l: tensor<3xi64> {loom.index_bound = 4 : i64}) -> tensor<f64> {
     %y = loom.cross_entropy %x, %l reduction = mean : (tensor<3x4xf64>, tensor<3xi64>) -> tensor<f64>
     return %y : tensor<f64> })"},
  {"cross_entropy_weighted_ignore", R"(func.func @f(%x: tensor<6x3xf64>, %l: tensor<6xi64> {loom.index_bound = 3 : i64}) -> tensor<f64> {
     %w = loom.constant dense<[0.5, 2.0, 1.5]> : tensor<3xf64>
     %y = loom.cross_entropy %x, %l weight = %w reduction = mean ignore_index = 1 : (tensor<6x3xf64>, tensor<6xi64>, tensor<3xf64>) -> tensor<f64>
     return %y : tensor<f64> })"},
  {"cross_entropy_spatial_none", R"(func.func @f(%x: tensor<2x3x4xf64>, %l: tensor<2x4xi64> {loom.index_bound = 3 : i64}) -> tensor<2x4xf64> {
     %y = loom.cross_entropy %x, %l reduction = none : (tensor<2x3x4xf64>, tensor<2x4xi64>) -> tensor<2x4xf64>
     return %y : tensor<2x4xf64> })"},
  {"cross_entropy_sum_i32", R"(func.func @f(%x: tensor<3x4xf64>, %l: tensor<3xi32> {loom.index_bound = 4 : i64}) -> tensor<f64> {
     %y = loom.cross_entropy %x, %l reduction = sum : (tensor<3x4xf64>, tensor<3xi32>) -> tensor<f64>
     return %y : tensor<f64> })"},
  {"nll_loss", R"(func.func @f(%x: tensor<4x3xf64>, %l: tensor<4xi64> {loom.index_bound = 3 : i64}) -> tensor<f64> {
     %lp = loom.log_softmax %x axis = 1 : tensor<4x3xf64>
     %y = loom.nll_loss %lp, %l reduction = mean : (tensor<4x3xf64>, tensor<4xi64>) -> tensor<f64>
     return %y : tensor<f64> })"},
  {"nll_loss_weighted_sum", R"(func.func @f(%x: tensor<4x3xf64>, %l: tensor<4xi64> {loom.index_bound = 3 : i64}) -> tensor<f64> {
     %w = loom.constant dense<[0.5, 2.0, 1.5]> : tensor<3xf64>
     %y = loom.nll_loss %x, %l weight = %w reduction = sum : (tensor<4x3xf64>, tensor<4xi64>, tensor<3xf64>) -> tensor<f64>
     return %y : tensor<f64> })"},
  {"mse_mean", R"(func.func @f(%x: tensor<2x3xf64>, %t: tensor<2x3xf64>) -> tensor<f64> {
     %y = loom.mse_loss %x, %t reduction = mean : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<f64>
     return %y : tensor<f64> })"},
  {"mse_none", R"(func.func @f(%x: tensor<2x3xf64>, %t: tensor<2x3xf64>) -> tensor<2x3xf64> {
     %y = loom.mse_loss %x, %t reduction = none : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
     return %y : tensor<2x3xf64> })"},

  // Convolution: plain, strided and padded, dilated, grouped, 1-D and 3-D,
  // padding beyond the kernel (the transposed convolution crops), a stride
  // that skips trailing input rows.
  {"conv2d", R"(func.func @f(%x: tensor<2x2x5x5xf64>, %w: tensor<3x2x3x3xf64>) -> tensor<2x3x3x3xf64> {
     %y = loom.conv %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<2x2x5x5xf64>, tensor<3x2x3x3xf64>) -> tensor<2x3x3x3xf64>
     return %y : tensor<2x3x3x3xf64> })"},
  {"conv2d_stride_pad", R"(func.func @f(%x: tensor<1x2x6x5xf64>, %w: tensor<2x2x3x2xf64>) -> tensor<1x2x3x3xf64> {
     %y = loom.conv %x, %w strides = [2, 2] padding = [1, 0, 0, 1] dilations = [1, 1] groups = 1 : (tensor<1x2x6x5xf64>, tensor<2x2x3x2xf64>) -> tensor<1x2x3x3xf64>
     return %y : tensor<1x2x3x3xf64> })"},
  {"conv2d_dilated", R"(func.func @f(%x: tensor<1x1x7x7xf64>, %w: tensor<2x1x2x3xf64>) -> tensor<1x2x5x3xf64> {
     %y = loom.conv %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [2, 2] groups = 1 : (tensor<1x1x7x7xf64>, tensor<2x1x2x3xf64>) -> tensor<1x2x5x3xf64>
     return %y : tensor<1x2x5x3xf64> })"},
  {"conv2d_groups", R"(func.func @f(%x: tensor<2x4x4x4xf64>, %w: tensor<6x2x2x2xf64>) -> tensor<2x6x3x3xf64> {
     %y = loom.conv %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 2 : (tensor<2x4x4x4xf64>, tensor<6x2x2x2xf64>) -> tensor<2x6x3x3xf64>
     return %y : tensor<2x6x3x3xf64> })"},
  {"conv2d_depthwise", R"(func.func @f(%x: tensor<1x3x4x4xf64>, %w: tensor<3x1x3x3xf64>) -> tensor<1x3x4x4xf64> {
     %y = loom.conv %x, %w strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] groups = 3 : (tensor<1x3x4x4xf64>, tensor<3x1x3x3xf64>) -> tensor<1x3x4x4xf64>
     return %y : tensor<1x3x4x4xf64> })"},
  {"conv1d_big_padding", R"(func.func @f(%x: tensor<2x2x5xf64>, %w: tensor<3x2x2xf64>) -> tensor<2x3x9xf64> {
     %y = loom.conv %x, %w strides = [1] padding = [3, 2] dilations = [1] groups = 1 : (tensor<2x2x5xf64>, tensor<3x2x2xf64>) -> tensor<2x3x9xf64>
     return %y : tensor<2x3x9xf64> })"},
  {"conv1d_stride_drops_tail", R"(func.func @f(%x: tensor<1x2x8xf64>, %w: tensor<2x2x3xf64>) -> tensor<1x2x2xf64> {
     %y = loom.conv %x, %w strides = [3] padding = [0, 0] dilations = [1] groups = 1 : (tensor<1x2x8xf64>, tensor<2x2x3xf64>) -> tensor<1x2x2xf64>
     return %y : tensor<1x2x2xf64> })"},
  {"conv1d_stride_dilation", R"(func.func @f(%x: tensor<1x2x11xf64>, %w: tensor<2x2x3xf64>) -> tensor<1x2x4xf64> {
     %y = loom.conv %x, %w strides = [2] padding = [1, 0] dilations = [2] groups = 1 : (tensor<1x2x11xf64>, tensor<2x2x3xf64>) -> tensor<1x2x4xf64>
     return %y : tensor<1x2x4xf64> })"},
  {"conv3d", R"(func.func @f(%x: tensor<1x2x3x3x3xf64>, %w: tensor<2x2x2x2x2xf64>) -> tensor<1x2x2x2x2xf64> {
     %y = loom.conv %x, %w strides = [1, 1, 1] padding = [0, 0, 0, 0, 0, 0] dilations = [1, 1, 1] groups = 1 : (tensor<1x2x3x3x3xf64>, tensor<2x2x2x2x2xf64>) -> tensor<1x2x2x2x2xf64>
     return %y : tensor<1x2x2x2x2xf64> })"},

  // Pooling.
  {"max_pool2d", R"(func.func @f(%x: tensor<2x2x4x4xf64>) -> tensor<2x2x2x2xf64> {
     %y = loom.max_pool %x kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] dilations = [1, 1] : (tensor<2x2x4x4xf64>) -> tensor<2x2x2x2xf64>
     return %y : tensor<2x2x2x2xf64> })"},
  {"max_pool2d_overlapping_padded", R"(func.func @f(%x: tensor<1x2x4x4xf64>) -> tensor<1x2x4x4xf64> {
     %y = loom.max_pool %x kernel = [3, 3] strides = [1, 1] padding = [1, 1, 1, 1] dilations = [1, 1] : (tensor<1x2x4x4xf64>) -> tensor<1x2x4x4xf64>
     return %y : tensor<1x2x4x4xf64> })"},
  {"max_pool1d_dilated", R"(func.func @f(%x: tensor<2x1x9xf64>) -> tensor<2x1x3xf64> {
     %y = loom.max_pool %x kernel = [2] strides = [2] padding = [0, 0] dilations = [3] : (tensor<2x1x9xf64>) -> tensor<2x1x3xf64>
     return %y : tensor<2x1x3xf64> })"},
  {"avg_pool2d", R"(func.func @f(%x: tensor<1x2x4x4xf64>) -> tensor<1x2x2x2xf64> {
     %y = loom.avg_pool %x kernel = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] : (tensor<1x2x4x4xf64>) -> tensor<1x2x2x2xf64>
     return %y : tensor<1x2x2x2xf64> })"},
  {"avg_pool2d_padded_exclude", R"(func.func @f(%x: tensor<1x2x5x5xf64>) -> tensor<1x2x3x3xf64> {
     %y = loom.avg_pool %x kernel = [3, 3] strides = [2, 2] padding = [1, 1, 1, 1] : (tensor<1x2x5x5xf64>) -> tensor<1x2x3x3xf64>
     return %y : tensor<1x2x3x3xf64> })"},
  {"avg_pool1d_include_pad", R"(func.func @f(%x: tensor<2x2x6xf64>) -> tensor<2x2x3xf64> {
     %y = loom.avg_pool %x kernel = [3] strides = [2] padding = [1, 0] count_include_pad : (tensor<2x2x6xf64>) -> tensor<2x2x3xf64>
     return %y : tensor<2x2x3xf64> })"},

  {"sharding_constraint", R"(loom.mesh @m ["x"=2]
   func.func @f(%x: tensor<4x2xf64>) -> tensor<4x2xf64> {
     %y = loom.sharding_constraint %x <@m, [{"x"}, {}]> : tensor<4x2xf64>
     %z = loom.tanh %y : tensor<4x2xf64>
     return %z : tensor<4x2xf64> })"},
};
// clang-format on

INSTANTIATE_TEST_SUITE_P(Ops, GradientCheck, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<GradCase> &info) {
                           return std::string(info.param.name);
                         });

} // namespace
