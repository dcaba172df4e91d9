//===- OnnxTrainingOps.cpp - ai.onnx.preview.training ops -----------------===//
//
// Gradient is differentiated at import time with Loom's autodiff (the
// gradient graph is ordinary loom ops); Adam, Adagrad and Momentum become
// elementwise loom ops following the ONNX reference implementations
// (onnx/backend/test/case/node/{adam,adagrad,momentum}.py). Scalar
// learning-rate arithmetic is done in f64, as the references do in Python.
//
//===----------------------------------------------------------------------===//

#include "OnnxImporter.h"

#include "loom/Training/Autodiff.h"

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::onnx_import;

namespace {

struct Arith {
  Importer &imp;
  OpBuilder &b() { return imp.builder(); }
  Location loc() { return imp.loc(); }
  static Type elementOf(Value v) {
    return cast<RankedTensorType>(v.getType()).getElementType();
  }
  Value add(Value x, Value y) { return AddOp::create(b(), loc(), x, y); }
  Value sub(Value x, Value y) { return SubOp::create(b(), loc(), x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b(), loc(), x, y); }
  Value div(Value x, Value y) { return DivOp::create(b(), loc(), x, y); }
  Value sqrt(Value x) { return SqrtOp::create(b(), loc(), x); }
  /// `c` as a scalar of `like`'s element type.
  Value c(Value like, double value) { return imp.scalar(elementOf(like), value); }
  Value f64(double value) { return imp.scalar(b().getF64Type(), value); }
  Value toF64(Value v) { return imp.castTo(v, b().getF64Type()); }
  /// c * x + y, skipping c == 0.
  Value axpy(double a, Value x, Value y) {
    return a == 0 ? y : add(mul(c(x, a), x), y);
  }
  /// T > 0 as a scalar i1.
  Value positive(Value t) {
    return CompareOp::create(b(), loc(), CompareDirection::gt, t,
                             imp.scalar(elementOf(t), 0));
  }
};

/// The n of an optimizer with `perTensor` inputs per optimized tensor after
/// R and T, whose types it checks (ONNX's type constraints, which its
/// checker does not enforce): R floating point, T an integer, and the
/// tensors, gradients and moments all floating point of X1's type.
FailureOr<int> tensorCount(Importer &imp, const Node &node, int perTensor) {
  int rest = node.input_size() - 2;
  if (rest <= 0 || rest % perTensor != 0)
    return imp.error(node) << "expects R, T and " << perTensor
                           << " inputs per optimized tensor, got "
                           << node.input_size() << " inputs";
  Type want;
  for (int i = 0; i < node.input_size(); ++i) {
    LOOM_TRY(Value v, imp.operand(node, i));
    Type e = Arith::elementOf(v);
    bool ok = i == 0   ? isa<FloatType>(e)
              : i == 1 ? e.isSignlessInteger() && e.getIntOrFloatBitWidth() > 1
              : i == 2 ? isa<FloatType>(e)
                       : e == want;
    if (!ok)
      return imp.error(node)
             << "input " << i << " ('" << node.input(i) << "') is "
             << v.getType() << "; "
             << (i == 0   ? "the learning rate R must be floating point"
                 : i == 1 ? "the step count T must be an integer"
                          : "the tensors, gradients and moments must be "
                            "floating point of one type");
    if (i == 2)
      want = e;
  }
  return rest / perTensor;
}

LogicalResult importGradient(Importer &imp, const Node &node) {
  const onnx::AttributeProto *xsAttr = imp.attr(node, "xs");
  std::string y = imp.attrString(node, "y", "");
  if (!xsAttr || y.empty())
    return imp.error(node) << "needs the attributes 'xs' and 'y'";
  LOOM_TRY(Value output, imp.valueNamed(node, y));
  SmallVector<Value> wrt;
  SmallVector<std::string> names;
  for (const std::string &name : xsAttr->strings()) {
    LOOM_TRY(Value v, imp.valueNamed(node, name));
    wrt.push_back(v);
    names.push_back(name);
  }
  GradientOptions options;
  options.describe = [&](unsigned i) { return "'" + names[i] + "'"; };
  // A non-scalar y is differentiated as the sum of its elements.
  FailureOr<SmallVector<Value>> grads =
      buildGradients(imp.builder(), output, wrt, options);
  if (failed(grads))
    return imp.error(node) << "cannot differentiate '" << y << "'";
  for (auto [i, g] : llvm::enumerate(*grads)) {
    if (!imp.wantsOutput(node, i))
      continue;
    if (!g) {
      // y does not depend on xs[i]: its gradient is zero.
      auto type = cast<RankedTensorType>(wrt[i].getType());
      g = imp.constant(DenseElementsAttr::get(
          type, FloatAttr::get(type.getElementType(), 0.0)));
    }
    if (failed(imp.setResult(node, i, g)))
      return failure();
  }
  return success();
}

LogicalResult importAdam(Importer &imp, const Node &node) {
  LOOM_TRY(int n, tensorCount(imp, node, 4));
  double alpha = imp.attrFloat(node, "alpha", 0.9f);
  double beta = imp.attrFloat(node, "beta", 0.999f);
  double epsilon = imp.attrFloat(node, "epsilon", 1e-6f);
  double norm = imp.attrFloat(node, "norm_coefficient", 0.0f);
  double normPost = imp.attrFloat(node, "norm_coefficient_post", 0.0f);
  LOOM_TRY(Value r, imp.operand(node, 0));
  LOOM_TRY(Value t, imp.operand(node, 1));
  Arith a{imp};
  // r * sqrt(1 - beta^T) / (1 - alpha^T) when T > 0, else r.
  Value tf = a.toF64(t), rf = a.toF64(r);
  Value corrected = a.div(
      a.mul(rf, a.sqrt(a.sub(a.f64(1), PowOp::create(imp.builder(), imp.loc(),
                                                     a.f64(beta), tf)))),
      a.sub(a.f64(1),
            PowOp::create(imp.builder(), imp.loc(), a.f64(alpha), tf)));
  Value rAdjusted = SelectOp::create(imp.builder(), imp.loc(), a.positive(t),
                                     corrected, rf);
  for (int i = 0; i < n; ++i) {
    LOOM_TRY(Value x, imp.operand(node, 2 + i));
    LOOM_TRY(Value g, imp.operand(node, 2 + n + i));
    LOOM_TRY(Value v, imp.operand(node, 2 + 2 * n + i));
    LOOM_TRY(Value h, imp.operand(node, 2 + 3 * n + i));
    Value gReg = a.axpy(norm, x, g);
    Value vNew = a.add(a.mul(a.c(v, alpha), v), a.mul(a.c(v, 1 - alpha), gReg));
    Value hNew = a.add(a.mul(a.c(h, beta), h),
                       a.mul(a.c(h, 1 - beta), a.mul(gReg, gReg)));
    Value hSqrt = a.add(a.sqrt(hNew), a.c(h, epsilon));
    Value step = a.mul(imp.castTo(rAdjusted, Arith::elementOf(x)),
                       a.div(vNew, hSqrt));
    Value xNew = a.sub(x, step);
    if (normPost != 0)
      xNew = a.mul(a.c(xNew, 1 - normPost), xNew);
    if ((imp.wantsOutput(node, i) && failed(imp.setResult(node, i, xNew))) ||
        (imp.wantsOutput(node, n + i) &&
         failed(imp.setResult(node, n + i, vNew))) ||
        (imp.wantsOutput(node, 2 * n + i) &&
         failed(imp.setResult(node, 2 * n + i, hNew))))
      return failure();
  }
  return success();
}

LogicalResult importAdagrad(Importer &imp, const Node &node) {
  LOOM_TRY(int n, tensorCount(imp, node, 3));
  double decay = imp.attrFloat(node, "decay_factor", 0.0f);
  double epsilon = imp.attrFloat(node, "epsilon", 1e-6f);
  double norm = imp.attrFloat(node, "norm_coefficient", 0.0f);
  LOOM_TRY(Value r, imp.operand(node, 0));
  LOOM_TRY(Value t, imp.operand(node, 1));
  Arith a{imp};
  // r / (1 + T * decay_factor)
  Value rAdjusted =
      a.div(a.toF64(r), a.add(a.f64(1), a.mul(a.toF64(t), a.f64(decay))));
  for (int i = 0; i < n; ++i) {
    LOOM_TRY(Value x, imp.operand(node, 2 + i));
    LOOM_TRY(Value g, imp.operand(node, 2 + n + i));
    LOOM_TRY(Value h, imp.operand(node, 2 + 2 * n + i));
    Value gReg = a.axpy(norm, x, g);
    Value hNew = a.add(h, a.mul(gReg, gReg));
    Value hSqrt = a.add(a.sqrt(hNew), a.c(h, epsilon));
    Value xNew = a.sub(
        x, a.div(a.mul(imp.castTo(rAdjusted, Arith::elementOf(x)), gReg),
                 hSqrt));
    if ((imp.wantsOutput(node, i) && failed(imp.setResult(node, i, xNew))) ||
        (imp.wantsOutput(node, n + i) &&
         failed(imp.setResult(node, n + i, hNew))))
      return failure();
  }
  return success();
}

LogicalResult importMomentum(Importer &imp, const Node &node) {
  LOOM_TRY(int n, tensorCount(imp, node, 3));
  for (const char *required : {"alpha", "beta", "mode", "norm_coefficient"})
    if (!imp.hasAttr(node, required))
      return imp.error(node) << "needs the attribute '" << required << "'";
  double alpha = imp.attrFloat(node, "alpha", 0.0f);
  double beta = imp.attrFloat(node, "beta", 0.0f);
  double norm = imp.attrFloat(node, "norm_coefficient", 0.0f);
  std::string mode = imp.attrString(node, "mode", "");
  if (mode != "standard" && mode != "nesterov")
    return imp.error(node) << "mode '" << mode
                           << "' is not 'standard' or 'nesterov'";
  LOOM_TRY(Value r, imp.operand(node, 0));
  LOOM_TRY(Value t, imp.operand(node, 1));
  Arith a{imp};
  for (int i = 0; i < n; ++i) {
    LOOM_TRY(Value x, imp.operand(node, 2 + i));
    LOOM_TRY(Value g, imp.operand(node, 2 + n + i));
    LOOM_TRY(Value v, imp.operand(node, 2 + 2 * n + i));
    Value gReg = a.axpy(norm, x, g);
    // The gradient's coefficient is 1 at the first step (T == 0).
    Value betaAdjusted = SelectOp::create(imp.builder(), imp.loc(),
                                          a.positive(t), a.c(v, beta), a.c(v, 1));
    Value vNew = a.add(a.mul(a.c(v, alpha), v), a.mul(betaAdjusted, gReg));
    Value rx = imp.castTo(r, Arith::elementOf(x));
    Value direction =
        mode == "standard" ? vNew : a.add(gReg, a.mul(a.c(v, alpha), vNew));
    Value xNew = a.sub(x, a.mul(rx, direction));
    if ((imp.wantsOutput(node, i) && failed(imp.setResult(node, i, xNew))) ||
        (imp.wantsOutput(node, n + i) &&
         failed(imp.setResult(node, n + i, vNew))))
      return failure();
  }
  return success();
}

} // namespace

void mlir::loom::onnx_import::registerTrainingOps(OpTable &t) {
  const std::string d = std::string(kTrainingDomain) + ".";
  t[d + "Gradient"] = {importGradient, {"xs", "zs", "y"}};
  t[d + "Adam"] = {importAdam,
                   {"alpha", "beta", "epsilon", "norm_coefficient",
                    "norm_coefficient_post"}};
  t[d + "Adagrad"] = {importAdagrad,
                      {"decay_factor", "epsilon", "norm_coefficient"}};
  t[d + "Momentum"] = {importMomentum,
                       {"alpha", "beta", "mode", "norm_coefficient"}};
}
