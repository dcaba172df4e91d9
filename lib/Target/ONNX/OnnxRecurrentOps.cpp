//===- OnnxRecurrentOps.cpp - ONNX LSTM, GRU and RNN ----------------------===//
//
// The recurrent ops of the ONNX spec (opset 7-14), imported as their cell
// equations over the time steps (the time loop unrolled, as loom.torch
// traces nn.LSTM; the CPU pipeline compiles the equal step bodies once):
//
//   RNN:  H = f(X Wi^T + H R^T + Wb + Rb)
//   GRU:  z = f(X Wz^T + H Rz^T + Wbz + Rbz), r likewise,
//         h = g(X Wh^T + (r . H) Rh^T + Rbh + Wbh)        (linear_before_reset 0)
//         h = g(X Wh^T + r . (H Rh^T + Rbh) + Wbh)        (linear_before_reset 1)
//         H = (1 - z) . h + z . H
//   LSTM: i = f(X Wi^T + H Ri^T + Pi . C + Wbi + Rbi), f likewise (Pf),
//         c = g(X Wc^T + H Rc^T + Wbc + Rbc), C = f . C + i . c,
//         o = f(X Wo^T + H Ro^T + Po . C + Wbo + Rbo), H = o . h(C)
//
// Gate orders as the spec lays W, R and B out (LSTM iofc, GRU zrh). The
// input projection of all steps is one product; each step adds its
// recurrent product. `sequence_lens` (read when the model runs) masks the
// steps past each sequence's length: its state stays and its output is 0,
// so a reverse direction starts at each sequence's own last step.
//
//===----------------------------------------------------------------------===//

#include "OnnxImporter.h"

#include "loom/Dialect/Loom/Utils/Utils.h"

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::onnx_import;

namespace {

enum class Cell { Rnn, Gru, Lstm };

struct CellInfo {
  StringRef name;
  int64_t gates;
  /// Activations per direction and their defaults.
  SmallVector<StringRef, 3> defaults;
};

CellInfo infoOf(Cell cell) {
  switch (cell) {
  case Cell::Rnn:
    return {"RNN", 1, {"Tanh"}};
  case Cell::Gru:
    return {"GRU", 3, {"Sigmoid", "Tanh"}};
  case Cell::Lstm:
    return {"LSTM", 4, {"Sigmoid", "Tanh", "Tanh"}};
  }
  llvm_unreachable("cell");
}

/// An activation of the spec's list with its alpha and beta.
struct Activation {
  std::string name;
  double alpha = 0, beta = 0;
};

class RecurrentBuilder {
public:
  RecurrentBuilder(Importer &imp, Cell cell)
      : imp(imp), b(imp.builder()), cell(cell), info(infoOf(cell)) {}

  LogicalResult run(const Node &node);

private:
  Location loc() { return imp.loc(); }
  Value slice(Value v, ArrayRef<int64_t> start, ArrayRef<int64_t> limit) {
    return SliceOp::create(b, loc(), v, b.getDenseI64ArrayAttr(start),
                           b.getDenseI64ArrayAttr(limit),
                           b.getDenseI64ArrayAttr(
                               SmallVector<int64_t>(start.size(), 1)));
  }
  /// Direction `d`'s [rows, cols] matrix of a [dirs, rows, cols] weight.
  Value matrix(Value w, int64_t d) {
    ArrayRef<int64_t> s = Importer::typeOf(w).getShape();
    return imp.reshape(slice(w, {d, 0, 0}, {d + 1, s[1], s[2]}), {s[1], s[2]});
  }
  /// x [n, k] times m [r, k] transposed: [n, r].
  Value timesTransposed(Value x, Value m) {
    return DotGeneralOp::create(b, loc(), x, m, b.getDenseI64ArrayAttr({}),
                                b.getDenseI64ArrayAttr({}),
                                b.getDenseI64ArrayAttr({1}),
                                b.getDenseI64ArrayAttr({1}));
  }
  /// Gate `g` ([batch, H]) of a [batch, gates * H] pre-activation.
  Value gate(Value v, int64_t g) {
    int64_t batch = Importer::typeOf(v).getDimSize(0);
    return slice(v, {0, g * hidden}, {batch, (g + 1) * hidden});
  }
  Value add(Value x, Value y) { return AddOp::create(b, loc(), x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b, loc(), x, y); }
  Value activate(const Activation &a, Value x);
  std::pair<Value, Value> step(ArrayRef<Activation> fns, Value pre, Value h,
                               Value c, Value rd, Value rbh, Value pd);
  LogicalResult readAttributes(const Node &node);
  LogicalResult bindOutputs(const Node &node, ArrayRef<Value> ys,
                            ArrayRef<Value> hs, ArrayRef<Value> cs);
  FailureOr<SmallVector<Activation>> activations(const Node &node);

  Importer &imp;
  OpBuilder &b;
  Cell cell;
  CellInfo info;
  int64_t hidden = 0;
  double clip = 0;
  bool linearBeforeReset = false;
  std::string direction;
  int64_t dirs = 1, layout = 0;
  SmallVector<Activation> acts;
  Type element;
};

FailureOr<SmallVector<Activation>>
RecurrentBuilder::activations(const Node &node) {
  int64_t dirs =
      imp.attrString(node, "direction", "forward") == "bidirectional" ? 2 : 1;
  size_t perDir = info.defaults.size();
  SmallVector<Activation> out;
  const onnx::AttributeProto *names = imp.attr(node, "activations");
  if (!names || names->strings_size() == 0) {
    for (int64_t d = 0; d < dirs; ++d)
      for (StringRef n : info.defaults)
        out.push_back({n.str()});
    return out;
  }
  if (names->strings_size() != static_cast<int>(perDir * dirs))
    return imp.error(node) << "activations lists " << names->strings_size()
                           << " functions; " << info.name << " with " << dirs
                           << " direction(s) takes " << perDir * dirs;
  SmallVector<float> alphas = imp.attrFloats(node, "activation_alpha");
  SmallVector<float> betas = imp.attrFloats(node, "activation_beta");
  size_t nextAlpha = 0, nextBeta = 0;
  for (const std::string &n : names->strings()) {
    Activation a{n};
    // ONNX's defaults where the lists do not reach.
    auto take = [](SmallVector<float> &list, size_t &next, double dflt) {
      return next < list.size() ? double(list[next++]) : dflt;
    };
    if (n == "LeakyRelu")
      a.alpha = take(alphas, nextAlpha, 0.01);
    else if (n == "HardSigmoid") {
      a.alpha = take(alphas, nextAlpha, 0.2);
      a.beta = take(betas, nextBeta, 0.5);
    } else if (n == "Affine" || n == "ScaledTanh") {
      a.alpha = take(alphas, nextAlpha, 1.0);
      a.beta = take(betas, nextBeta, n == "Affine" ? 0.0 : 1.0);
    } else if (n != "Sigmoid" && n != "Tanh" && n != "Relu" &&
               n != "Softsign")
      return imp.error(node)
             << "activation '" << n << "' is not supported (Sigmoid, Tanh, "
             << "Relu, LeakyRelu, HardSigmoid, Affine, ScaledTanh, Softsign)";
    out.push_back(a);
  }
  return out;
}

Value RecurrentBuilder::activate(const Activation &a, Value x) {
  if (clip > 0)
    x = MinOp::create(b, loc(),
                      MaxOp::create(b, loc(), x, imp.scalar(element, -clip)),
                      imp.scalar(element, clip));
  auto c = [&](double v) { return imp.scalar(element, v); };
  if (a.name == "Sigmoid")
    return SigmoidOp::create(b, loc(), x);
  if (a.name == "Tanh")
    return TanhOp::create(b, loc(), x);
  if (a.name == "Relu")
    return ReluOp::create(b, loc(), x);
  if (a.name == "LeakyRelu")
    return MaxOp::create(b, loc(), x, mul(x, c(a.alpha)));
  if (a.name == "HardSigmoid")
    return MinOp::create(
        b, loc(), MaxOp::create(b, loc(), add(mul(x, c(a.alpha)), c(a.beta)),
                                c(0.0)),
        c(1.0));
  if (a.name == "Affine")
    return add(mul(x, c(a.alpha)), c(a.beta));
  if (a.name == "ScaledTanh")
    return mul(TanhOp::create(b, loc(), mul(x, c(a.beta))), c(a.alpha));
  // Softsign: x / (1 + |x|).
  return DivOp::create(b, loc(), x, add(AbsOp::create(b, loc(), x), c(1.0)));
}

/// One time step of the cell: the new hidden state and (LSTM) cell state
/// from the step's input projection `pre` [batch, gates*H], the previous
/// states, direction's recurrent weights `rd` [gates*H, H], GRU's
/// recurrent bias of h under linear_before_reset `rbh`, and LSTM's
/// peepholes `pd` [3H] (null when absent).
std::pair<Value, Value>
RecurrentBuilder::step(ArrayRef<Activation> fns, Value pre, Value h, Value c,
                       Value rd, Value rbh, Value pd) {
  int64_t gh = info.gates * hidden;
  if (cell == Cell::Rnn)
    return {activate(fns[0], add(pre, timesTransposed(h, rd))), Value()};
  if (cell == Cell::Gru) {
    // z and r from the first 2H rows of R; h from the last H.
    Value rzr = timesTransposed(h, slice(rd, {0, 0}, {2 * hidden, hidden}));
    Value rh = slice(rd, {2 * hidden, 0}, {gh, hidden});
    Value z = activate(fns[0], add(gate(pre, 0), gate(rzr, 0)));
    Value rg = activate(fns[0], add(gate(pre, 1), gate(rzr, 1)));
    Value hr;
    if (linearBeforeReset) {
      Value lin = timesTransposed(h, rh);
      if (rbh)
        lin = add(lin, rbh);
      hr = mul(rg, lin);
    } else {
      hr = timesTransposed(mul(rg, h), rh);
    }
    Value cand = activate(fns[1], add(gate(pre, 2), hr));
    // (1 - z) . cand + z . h = cand + z . (h - cand)
    return {add(cand, mul(z, SubOp::create(b, loc(), h, cand))), Value()};
  }
  Value all = add(pre, timesTransposed(h, rd));
  Value i = gate(all, 0), o = gate(all, 1), f = gate(all, 2),
        g = gate(all, 3);
  if (pd) {
    i = add(i, mul(slice(pd, {0}, {hidden}), c));
    f = add(f, mul(slice(pd, {2 * hidden}, {3 * hidden}), c));
  }
  Value ia = activate(fns[0], i), fa = activate(fns[0], f);
  Value newC = add(mul(fa, c), mul(ia, activate(fns[1], g)));
  if (pd)
    o = add(o, mul(slice(pd, {hidden}, {2 * hidden}), newC));
  return {mul(activate(fns[0], o), activate(fns[2], newC)), newC};
}

/// The node's attributes, checked.
LogicalResult RecurrentBuilder::readAttributes(const Node &node) {
  direction = imp.attrString(node, "direction", "forward");
  if (direction != "forward" && direction != "reverse" &&
      direction != "bidirectional")
    return imp.error(node) << "direction '" << direction
                           << "' is not forward, reverse or bidirectional";
  dirs = direction == "bidirectional" ? 2 : 1;
  layout = imp.attrInt(node, "layout", 0);
  if (layout != 0 && layout != 1)
    return imp.error(node) << "layout " << layout << " is not 0 or 1";
  if (cell == Cell::Lstm && imp.attrInt(node, "input_forget", 0) != 0)
    return imp.error(node) << "input_forget=1 (coupled input and forget "
                              "gates) is not supported";
  clip = imp.attrFloat(node, "clip", 0.0f);
  if (imp.hasAttr(node, "clip") && !(clip > 0))
    return imp.error(node) << "clip " << clip << " is not positive";
  linearBeforeReset =
      cell == Cell::Gru && imp.attrInt(node, "linear_before_reset", 0) != 0;
  LOOM_TRY(acts, activations(node));
  return success();
}

/// Y, Y_h and Y_c from each direction's outputs and final states.
LogicalResult RecurrentBuilder::bindOutputs(const Node &node,
                                            ArrayRef<Value> ys,
                                            ArrayRef<Value> hs,
                                            ArrayRef<Value> cs) {
  auto join = [&](ArrayRef<Value> parts, int64_t axis) -> Value {
    return parts.size() == 1 ? parts[0]
                             : Value(ConcatOp::create(
                                   b, loc(), parts, b.getI64IntegerAttr(axis)));
  };
  // Y [T, dirs, batch, H] (layout 1: [batch, T, dirs, H]); Y_h and Y_c
  // [dirs, batch, H] (layout 1: [batch, dirs, H]).
  Value y = join(ys, 1);
  Value yh = join(hs, 0);
  if (layout == 1) {
    y = TransposeOp::create(b, loc(), y, b.getDenseI64ArrayAttr({2, 0, 1, 3}));
    yh = TransposeOp::create(b, loc(), yh, b.getDenseI64ArrayAttr({1, 0, 2}));
  }
  if (imp.wantsOutput(node, 0) && failed(imp.setResult(node, 0, y)))
    return failure();
  if (imp.wantsOutput(node, 1) && failed(imp.setResult(node, 1, yh)))
    return failure();
  if (cell == Cell::Lstm && imp.wantsOutput(node, 2)) {
    Value yc = join(cs, 0);
    if (layout == 1)
      yc = TransposeOp::create(b, loc(), yc, b.getDenseI64ArrayAttr({1, 0, 2}));
    return imp.setResult(node, 2, yc);
  }
  return success();
}

LogicalResult RecurrentBuilder::run(const Node &node) {
  LOOM_TRY(Value x, imp.operand(node, 0));
  LOOM_TRY(Value w, imp.operand(node, 1));
  LOOM_TRY(Value r, imp.operand(node, 2));
  LOOM_TRY(Value bias, imp.optionalOperand(node, 3));
  LOOM_TRY(Value lens, imp.optionalOperand(node, 4));
  LOOM_TRY(Value h0, imp.optionalOperand(node, 5));
  Value c0, peep;
  if (cell == Cell::Lstm) {
    LOOM_TRY(Value c, imp.optionalOperand(node, 6));
    LOOM_TRY(Value p, imp.optionalOperand(node, 7));
    c0 = c;
    peep = p;
  }
  if (failed(readAttributes(node)))
    return failure();

  RankedTensorType xt = Importer::typeOf(x), wt = Importer::typeOf(w),
                   rt = Importer::typeOf(r);
  element = xt.getElementType();
  if (!isa<FloatType>(element))
    return imp.error(node) << "X is " << xt << "; " << info.name
                           << " takes floats";
  if (xt.getRank() != 3 || wt.getRank() != 3 || rt.getRank() != 3)
    return imp.error(node) << "X " << xt << ", W " << wt << " and R " << rt
                           << " must each have rank 3";
  // Time-major: X [T, batch, input], states [dirs, batch, H].
  if (layout == 1) {
    x = TransposeOp::create(b, loc(), x, b.getDenseI64ArrayAttr({1, 0, 2}));
    xt = Importer::typeOf(x);
  }
  int64_t steps = xt.getDimSize(0), batch = xt.getDimSize(1),
          inputs = xt.getDimSize(2);
  if (steps == 0 || batch == 0)
    return imp.error(node) << "X " << xt << " has no time steps or no batch";
  hidden = imp.attrInt(node, "hidden_size", rt.getDimSize(2));
  int64_t gh = info.gates * hidden;
  if (wt.getShape() != ArrayRef<int64_t>{dirs, gh, inputs} ||
      rt.getShape() != ArrayRef<int64_t>{dirs, gh, hidden})
    return imp.error(node) << "W " << wt << " and R " << rt << " do not fit "
                           << dirs << " direction(s), " << info.gates
                           << " gate(s) of hidden_size " << hidden
                           << " and inputs of size " << inputs
                           << " (W [dirs, gates*H, input], R [dirs, gates*H, H])";
  auto checkShape = [&](Value v, StringRef what,
                        ArrayRef<int64_t> shape) -> LogicalResult {
    if (!v || Importer::typeOf(v).getShape() == shape)
      return success();
    std::string dims;
    for (int64_t s : shape)
      dims += (dims.empty() ? "" : "x") + std::to_string(s);
    return imp.error(node) << what << " is " << Importer::typeOf(v)
                           << "; expected shape " << dims;
  };
  SmallVector<int64_t> stateShape =
      layout == 0 ? SmallVector<int64_t>{dirs, batch, hidden}
                  : SmallVector<int64_t>{batch, dirs, hidden};
  if (failed(checkShape(bias, "B", {dirs, 2 * gh})) ||
      failed(checkShape(lens, "sequence_lens", {batch})) ||
      failed(checkShape(h0, "initial_h", stateShape)) ||
      failed(checkShape(c0, "initial_c", stateShape)) ||
      failed(checkShape(peep, "P", {dirs, 3 * hidden})))
    return failure();
  if (lens && !isa<IntegerType>(Importer::typeOf(lens).getElementType()))
    return imp.error(node) << "sequence_lens must be integers";
  auto timeMajorState = [&](Value v) {
    return v && layout == 1 ? Value(TransposeOp::create(
                                  b, loc(), v, b.getDenseI64ArrayAttr({1, 0, 2})))
                            : v;
  };
  h0 = timeMajorState(h0);
  c0 = timeMajorState(c0);

  Value zeros = createSplat(
      b, loc(), RankedTensorType::get({batch, hidden}, element), 0.0);
  Value flatX = imp.reshape(x, {steps * batch, inputs});
  SmallVector<Value> ys, hs, cs;
  for (int64_t d = 0; d < dirs; ++d) {
    ArrayRef<Activation> fns(acts.data() + d * info.defaults.size(),
                             info.defaults.size());
    Value wd = matrix(w, d), rd = matrix(r, d);
    // The input projection of every step, with both biases (but GRU's
    // recurrent bias of h under linear_before_reset, which the reset gate
    // multiplies).
    Value proj = timesTransposed(flatX, wd);
    Value rbh;
    if (bias) {
      Value bd = imp.reshape(slice(bias, {d, 0}, {d + 1, 2 * gh}), {2 * gh});
      Value wb = slice(bd, {0}, {gh}), rb = slice(bd, {gh}, {2 * gh});
      if (linearBeforeReset) {
        rbh = slice(rb, {2 * hidden}, {gh});
        rb = ConcatOp::create(
            b, loc(),
            ValueRange{slice(rb, {0}, {2 * hidden}),
                       createSplat(b, loc(),
                                   RankedTensorType::get({hidden}, element),
                                   0.0)},
            b.getI64IntegerAttr(0));
      }
      proj = add(proj, add(wb, rb));
    }
    proj = imp.reshape(proj, {steps, batch, gh});
    SmallVector<Value> pi, pf, po;
    Value pd;
    if (peep)
      pd = imp.reshape(slice(peep, {d, 0}, {d + 1, 3 * hidden}), {3 * hidden});
    auto state = [&](Value v) {
      return v ? imp.reshape(slice(v, {d, 0, 0}, {d + 1, batch, hidden}),
                             {batch, hidden})
               : zeros;
    };
    Value h = state(h0), c = state(c0);
    SmallVector<Value> outs(steps);
    bool reverse = direction == "reverse" || d == 1;
    for (int64_t s = 0; s < steps; ++s) {
      int64_t t = reverse ? steps - 1 - s : s;
      Value pre = imp.reshape(slice(proj, {t, 0, 0}, {t + 1, batch, gh}),
                              {batch, gh});
      auto [newH, newC] = step(fns, pre, h, c, rd, rbh, pd);
      Value out = newH;
      if (lens) {
        // Steps past a sequence's length keep its state and output 0.
        Type li = Importer::typeOf(lens).getElementType();
        Value live = CompareOp::create(b, loc(), CompareDirection::gt, lens,
                                       imp.scalar(li, double(t)));
        live = imp.reshape(live, {batch, 1});
        newH = SelectOp::create(b, loc(), live, newH, h);
        if (newC)
          newC = SelectOp::create(b, loc(), live, newC, c);
        out = SelectOp::create(b, loc(), live, out, imp.scalar(element, 0.0));
      }
      h = newH;
      c = newC;
      outs[t] = imp.reshape(out, {1, 1, batch, hidden});
    }
    ys.push_back(ConcatOp::create(b, loc(), outs, b.getI64IntegerAttr(0)));
    hs.push_back(imp.reshape(h, {1, batch, hidden}));
    if (c)
      cs.push_back(imp.reshape(c, {1, batch, hidden}));
  }
  return bindOutputs(node, ys, hs, cs);
}

template <Cell cell>
LogicalResult importRecurrent(Importer &imp, const Node &node) {
  return RecurrentBuilder(imp, cell).run(node);
}

} // namespace

void mlir::loom::onnx_import::registerRecurrentOps(OpTable &t) {
  std::vector<std::string> common = {
      "activation_alpha", "activation_beta", "activations", "clip",
      "direction", "hidden_size", "layout"};
  t["RNN"] = {importRecurrent<Cell::Rnn>, common};
  std::vector<std::string> gru = common;
  gru.push_back("linear_before_reset");
  t["GRU"] = {importRecurrent<Cell::Gru>, gru};
  std::vector<std::string> lstm = common;
  lstm.push_back("input_forget");
  t["LSTM"] = {importRecurrent<Cell::Lstm>, lstm};
}
