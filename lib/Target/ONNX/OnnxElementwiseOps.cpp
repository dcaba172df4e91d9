//===- OnnxElementwiseOps.cpp - ONNX elementwise ops -> loom --------------===//
//
// Arithmetic, comparisons, logic, activations, casts and softmax. ONNX
// broadcasting is numpy's, which loom's elementwise ops implement directly;
// activations without a loom op are written out in loom ops.
//
//===----------------------------------------------------------------------===//

#include "OnnxImporter.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::onnx_import;

namespace {

Type elementOf(Value v) { return Importer::typeOf(v).getElementType(); }

template <typename OpTy>
LogicalResult unary(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  return imp.setResult(node, 0, OpTy::create(imp.builder(), imp.loc(), x));
}

template <typename OpTy>
LogicalResult binary(Importer &imp, const Node &node) {
  LOOM_TRY(Value lhs, imp.operand(node, 0));
  LOOM_TRY(Value rhs, imp.operand(node, 1));
  return imp.setResult(node, 0,
                       OpTy::create(imp.builder(), imp.loc(), lhs, rhs));
}

/// Max, Min, Sum: a left fold over any number of inputs.
template <typename OpTy>
LogicalResult variadic(Importer &imp, const Node &node) {
  LOOM_TRY(Value acc, imp.operand(node, 0));
  for (int i = 1; i < node.input_size(); ++i) {
    LOOM_TRY(Value next, imp.operand(node, i));
    acc = OpTy::create(imp.builder(), imp.loc(), acc, next);
  }
  return imp.setResult(node, 0, acc);
}

LogicalResult importMean(Importer &imp, const Node &node) {
  LOOM_TRY(Value acc, imp.operand(node, 0));
  for (int i = 1; i < node.input_size(); ++i) {
    LOOM_TRY(Value next, imp.operand(node, i));
    acc = AddOp::create(imp.builder(), imp.loc(), acc, next);
  }
  Value n = imp.scalar(elementOf(acc), node.input_size());
  return imp.setResult(node, 0, DivOp::create(imp.builder(), imp.loc(), acc, n));
}

LogicalResult importPow(Importer &imp, const Node &node) {
  LOOM_TRY(Value base, imp.operand(node, 0));
  LOOM_TRY(Value exponent, imp.operand(node, 1));
  OpBuilder &b = imp.builder();
  Type baseType = elementOf(base), expType = elementOf(exponent);
  if (baseType == expType || isa<FloatType>(baseType))
    return imp.setResult(node, 0,
                         PowOp::create(b, imp.loc(), base,
                                       imp.castTo(exponent, baseType)));
  // Integer base, float exponent: compute in float, truncate back (numpy's
  // power followed by astype, as ONNX's reference does).
  Value result = PowOp::create(b, imp.loc(), imp.castTo(base, expType), exponent);
  return imp.setResult(node, 0, imp.castTo(result, baseType));
}

template <CompareDirection direction>
LogicalResult compare(Importer &imp, const Node &node) {
  LOOM_TRY(Value lhs, imp.operand(node, 0));
  LOOM_TRY(Value rhs, imp.operand(node, 1));
  return imp.setResult(
      node, 0, CompareOp::create(imp.builder(), imp.loc(), direction, lhs, rhs));
}

Value boolConst(Importer &imp, bool v) {
  return imp.scalar(imp.builder().getI1Type(), v ? 1 : 0);
}

LogicalResult importAnd(Importer &imp, const Node &node) {
  LOOM_TRY(Value a, imp.operand(node, 0));
  LOOM_TRY(Value c, imp.operand(node, 1));
  return imp.setResult(node, 0,
                       SelectOp::create(imp.builder(), imp.loc(), a, c,
                                        boolConst(imp, false)));
}

LogicalResult importOr(Importer &imp, const Node &node) {
  LOOM_TRY(Value a, imp.operand(node, 0));
  LOOM_TRY(Value c, imp.operand(node, 1));
  return imp.setResult(node, 0,
                       SelectOp::create(imp.builder(), imp.loc(), a,
                                        boolConst(imp, true), c));
}

LogicalResult importNot(Importer &imp, const Node &node) {
  LOOM_TRY(Value a, imp.operand(node, 0));
  return imp.setResult(node, 0,
                       CompareOp::create(imp.builder(), imp.loc(),
                                         CompareDirection::eq, a,
                                         boolConst(imp, false)));
}

LogicalResult importWhere(Importer &imp, const Node &node) {
  LOOM_TRY(Value c, imp.operand(node, 0));
  LOOM_TRY(Value x, imp.operand(node, 1));
  LOOM_TRY(Value y, imp.operand(node, 2));
  return imp.setResult(node, 0,
                       SelectOp::create(imp.builder(), imp.loc(), c, x, y));
}

LogicalResult importIdentity(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  return imp.setResult(node, 0, x);
}

LogicalResult importReciprocal(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  return imp.setResult(node, 0,
                       DivOp::create(imp.builder(), imp.loc(),
                                     imp.scalar(elementOf(x), 1.0), x));
}

/// Elementwise helpers for composite activations.
struct Ew {
  Importer &imp;
  Type element;
  OpBuilder &b() { return imp.builder(); }
  Value c(double v) { return imp.scalar(element, v); }
  Value add(Value a, Value x) { return AddOp::create(b(), imp.loc(), a, x); }
  Value sub(Value a, Value x) { return SubOp::create(b(), imp.loc(), a, x); }
  Value mul(Value a, Value x) { return MulOp::create(b(), imp.loc(), a, x); }
  Value div(Value a, Value x) { return DivOp::create(b(), imp.loc(), a, x); }
  Value max(Value a, Value x) { return MaxOp::create(b(), imp.loc(), a, x); }
  Value min(Value a, Value x) { return MinOp::create(b(), imp.loc(), a, x); }
  Value exp(Value a) { return ExpOp::create(b(), imp.loc(), a); }
  Value cmp(CompareDirection d, Value a, Value x) {
    return CompareOp::create(b(), imp.loc(), d, a, x);
  }
  Value select(Value cond, Value t, Value f) {
    return SelectOp::create(b(), imp.loc(), cond, t, f);
  }
};

LogicalResult importSign(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  Ew e{imp, elementOf(x)};
  Value zero = e.c(0);
  Value r = e.select(e.cmp(CompareDirection::gt, x, zero), e.c(1),
                     e.select(e.cmp(CompareDirection::lt, x, zero), e.c(-1), zero));
  return imp.setResult(node, 0, r);
}

LogicalResult importLeakyRelu(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  Ew e{imp, elementOf(x)};
  double alpha = imp.attrFloat(node, "alpha", 0.01f);
  return imp.setResult(node, 0,
                       e.select(e.cmp(CompareDirection::lt, x, e.c(0)),
                                e.mul(x, e.c(alpha)), x));
}

LogicalResult importPRelu(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  LOOM_TRY(Value slope, imp.operand(node, 1));
  Ew e{imp, elementOf(x)};
  // Opset < 7 PRelu applied a [C] slope to dimension 1, which the version
  // converter leaves as is; numpy broadcasting would misalign it.
  ArrayRef<int64_t> xs = Importer::typeOf(x).getShape();
  ArrayRef<int64_t> ss = Importer::typeOf(slope).getShape();
  if (ss.size() == 1 && xs.size() > 2 && ss[0] == xs[1] && ss[0] != xs.back()) {
    SmallVector<int64_t> perChannel(xs.size() - 1, 1);
    perChannel[0] = ss[0];
    slope = imp.reshape(slope, perChannel);
  }
  return imp.setResult(node, 0,
                       e.select(e.cmp(CompareDirection::lt, x, e.c(0)),
                                e.mul(x, slope), x));
}

LogicalResult importElu(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  Ew e{imp, elementOf(x)};
  double alpha = imp.attrFloat(node, "alpha", 1.0f);
  Value neg = e.mul(e.c(alpha), e.sub(e.exp(x), e.c(1)));
  return imp.setResult(
      node, 0, e.select(e.cmp(CompareDirection::lt, x, e.c(0)), neg, x));
}

LogicalResult importSelu(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  Ew e{imp, elementOf(x)};
  double alpha = imp.attrFloat(node, "alpha", 1.67326319217681884765625f);
  double gamma = imp.attrFloat(node, "gamma", 1.05070102214813232421875f);
  Value neg = e.sub(e.mul(e.c(alpha), e.exp(x)), e.c(alpha));
  Value r = e.select(e.cmp(CompareDirection::le, x, e.c(0)), neg, x);
  return imp.setResult(node, 0, e.mul(e.c(gamma), r));
}

LogicalResult importCelu(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  Ew e{imp, elementOf(x)};
  double alpha = imp.attrFloat(node, "alpha", 1.0f);
  Value neg = e.mul(e.c(alpha), e.sub(e.exp(e.div(x, e.c(alpha))), e.c(1)));
  return imp.setResult(node, 0,
                       e.add(e.max(x, e.c(0)), e.min(e.c(0), neg)));
}

LogicalResult importHardSigmoid(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  Ew e{imp, elementOf(x)};
  double alpha = imp.attrFloat(node, "alpha", 0.2f);
  double beta = imp.attrFloat(node, "beta", 0.5f);
  Value r = e.max(e.c(0), e.min(e.c(1), e.add(e.mul(x, e.c(alpha)), e.c(beta))));
  return imp.setResult(node, 0, r);
}

LogicalResult importHardSwish(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  Ew e{imp, elementOf(x)};
  Value hs = e.max(e.c(0), e.min(e.c(1), e.add(e.mul(x, e.c(1.0 / 6)), e.c(0.5))));
  return imp.setResult(node, 0, e.mul(x, hs));
}

LogicalResult importThresholdedRelu(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  Ew e{imp, elementOf(x)};
  double alpha = imp.attrFloat(node, "alpha", 1.0f);
  return imp.setResult(node, 0,
                       e.select(e.cmp(CompareDirection::gt, x, e.c(alpha)), x,
                                e.c(0)));
}

LogicalResult importSoftplus(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  Ew e{imp, elementOf(x)};
  return imp.setResult(node, 0,
                       LogOp::create(imp.builder(), imp.loc(),
                                     e.add(e.exp(x), e.c(1))));
}

LogicalResult importSoftsign(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  Ew e{imp, elementOf(x)};
  Value denom = e.add(e.c(1), AbsOp::create(imp.builder(), imp.loc(), x));
  return imp.setResult(node, 0, e.div(x, denom));
}

LogicalResult importIsNaN(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  Ew e{imp, elementOf(x)};
  return imp.setResult(node, 0, e.cmp(CompareDirection::ne, x, x));
}

LogicalResult importIsInf(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  Ew e{imp, elementOf(x)};
  double inf = std::numeric_limits<double>::infinity();
  bool pos = imp.attrInt(node, "detect_positive", 1) != 0;
  bool neg = imp.attrInt(node, "detect_negative", 1) != 0;
  Value isPos = e.cmp(CompareDirection::eq, x, e.c(inf));
  Value isNeg = e.cmp(CompareDirection::eq, x, e.c(-inf));
  Value r;
  if (pos && neg)
    r = e.select(isPos, boolConst(imp, true), isNeg);
  else if (pos)
    r = isPos;
  else if (neg)
    r = isNeg;
  else
    r = e.select(isPos, boolConst(imp, false), boolConst(imp, false));
  return imp.setResult(node, 0, r);
}

LogicalResult importClip(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  LOOM_TRY(Value lo, imp.configOperand(node, 1));
  LOOM_TRY(Value hi, imp.configOperand(node, 2));
  Ew e{imp, elementOf(x)};
  Value r = x;
  if (lo)
    r = e.max(r, lo);
  if (hi)
    r = e.min(r, hi);
  return imp.setResult(node, 0, r);
}

LogicalResult importCast(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  std::string reason;
  Type to = convertElementType(imp.context(), imp.attrInt(node, "to", 0), &reason);
  if (!to)
    return imp.error(node) << "'to': " << reason;
  return imp.setResult(node, 0, imp.castTo(x, to));
}

LogicalResult importCastLike(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  LOOM_TRY(RankedTensorType like, imp.inputType(node, 1));
  return imp.setResult(node, 0, imp.castTo(x, like.getElementType()));
}

template <typename OpTy>
LogicalResult softmax(Importer &imp, const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  int64_t rank = Importer::typeOf(x).getRank();
  if (rank == 0)
    return imp.error(node) << "the input must have rank >= 1";
  LOOM_TRY(int64_t axis, imp.normalizeAxis(node, imp.attrInt(node, "axis", -1), rank));
  return imp.setResult(node, 0,
                       OpTy::create(imp.builder(), imp.loc(), x,
                                    imp.builder().getI64IntegerAttr(axis)));
}

} // namespace

void mlir::loom::onnx_import::registerElementwiseOps(OpTable &t) {
  t["Add"] = {binary<AddOp>, {}};
  t["Sub"] = {binary<SubOp>, {}};
  t["Mul"] = {binary<MulOp>, {}};
  t["Div"] = {binary<DivOp>, {}};
  t["Pow"] = {importPow, {}};
  t["Max"] = {variadic<MaxOp>, {}};
  t["Min"] = {variadic<MinOp>, {}};
  t["Sum"] = {variadic<AddOp>, {}};
  t["Mean"] = {importMean, {}};
  t["Equal"] = {compare<CompareDirection::eq>, {}};
  t["Less"] = {compare<CompareDirection::lt>, {}};
  t["LessOrEqual"] = {compare<CompareDirection::le>, {}};
  t["Greater"] = {compare<CompareDirection::gt>, {}};
  t["GreaterOrEqual"] = {compare<CompareDirection::ge>, {}};
  t["Xor"] = {compare<CompareDirection::ne>, {}};
  t["And"] = {importAnd, {}};
  t["Or"] = {importOr, {}};
  t["Not"] = {importNot, {}};
  t["Where"] = {importWhere, {}};
  t["Identity"] = {importIdentity, {}};
  t["Neg"] = {unary<NegOp>, {}};
  t["Abs"] = {unary<AbsOp>, {}};
  t["Exp"] = {unary<ExpOp>, {}};
  t["Log"] = {unary<LogOp>, {}};
  t["Sqrt"] = {unary<SqrtOp>, {}};
  t["Tanh"] = {unary<TanhOp>, {}};
  t["Sigmoid"] = {unary<SigmoidOp>, {}};
  t["Relu"] = {unary<ReluOp>, {}};
  t["Erf"] = {unary<ErfOp>, {}};
  t["Floor"] = {unary<FloorOp>, {}};
  t["Ceil"] = {unary<CeilOp>, {}};
  t["Round"] = {unary<RoundOp>, {}};
  t["Sin"] = {unary<SinOp>, {}};
  t["Cos"] = {unary<CosOp>, {}};
  t["Reciprocal"] = {importReciprocal, {}};
  t["Sign"] = {importSign, {}};
  t["LeakyRelu"] = {importLeakyRelu, {"alpha"}};
  t["PRelu"] = {importPRelu, {}};
  t["Elu"] = {importElu, {"alpha"}};
  t["Selu"] = {importSelu, {"alpha", "gamma"}};
  t["Celu"] = {importCelu, {"alpha"}};
  t["HardSigmoid"] = {importHardSigmoid, {"alpha", "beta"}};
  t["HardSwish"] = {importHardSwish, {}};
  t["ThresholdedRelu"] = {importThresholdedRelu, {"alpha"}};
  t["Softplus"] = {importSoftplus, {}};
  t["Softsign"] = {importSoftsign, {}};
  t["IsNaN"] = {importIsNaN, {}};
  t["IsInf"] = {importIsInf, {"detect_negative", "detect_positive"}};
  t["Clip"] = {importClip, {}};
  t["Cast"] = {importCast, {"to"}};
  t["CastLike"] = {importCastLike, {}};
  t["Softmax"] = {softmax<SoftmaxOp>, {"axis"}};
  t["LogSoftmax"] = {softmax<LogSoftmaxOp>, {"axis"}};
}
