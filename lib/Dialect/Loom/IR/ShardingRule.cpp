//===- ShardingRule.cpp - Einsum-like factor rules ------------------------===//

#include "loom/Dialect/Loom/IR/ShardingRule.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"
#include <cassert>
#include <numeric>

using namespace mlir;
using namespace mlir::loom;

int64_t ShardingRule::addFactor(int64_t size, FactorKind kind,
                                ReductionKind reduction) {
  factors.push_back({size, kind, reduction});
  return factors.size() - 1;
}

double ShardingRule::getFlops() const {
  if (flops >= 0)
    return flops;
  double points = 1;
  for (const ShardingFactor &f : factors)
    points *= double(f.size);
  return contraction ? 2 * points : points;
}

std::string ShardingRule::factorName(int64_t i) {
  static constexpr llvm::StringLiteral kNames = "ijklmnopqrstuvwxyz";
  if (i < static_cast<int64_t>(kNames.size()))
    return std::string(1, kNames[i]);
  return "f" + std::to_string(i);
}

static ArrayRef<int64_t> shapeOf(Type type) {
  if (auto ranked = dyn_cast<RankedTensorType>(type))
    return ranked.getShape();
  return {};
}

LogicalResult ShardingRule::verify(Operation *op) const {
  auto fail = [&]() {
    return op->emitOpError("has an inconsistent sharding rule ") << str();
  };
  if (operands.size() != op->getNumOperands() ||
      results.size() != op->getNumResults())
    return fail() << ": expected " << op->getNumOperands() << " operand and "
                  << op->getNumResults() << " result entries";

  llvm::SmallVector<bool> used(factors.size(), false);
  auto checkTensor = [&](const TensorFactors &dims, Type type, bool isResult,
                         StringRef what, unsigned index) -> LogicalResult {
    ArrayRef<int64_t> shape = shapeOf(type);
    if (dims.size() != shape.size())
      return fail() << ": " << what << " #" << index << " has rank "
                    << shape.size() << " but the rule gives " << dims.size()
                    << " dimensions";
    for (auto [d, dimFactors] : llvm::enumerate(dims)) {
      int64_t product = 1;
      for (int64_t f : dimFactors) {
        if (f < 0 || f >= static_cast<int64_t>(factors.size()))
          return fail() << ": unknown factor " << f;
        if (isResult && factors[f].kind == FactorKind::Reduction)
          return fail() << ": reduction factor " << factorName(f)
                        << " appears in result #" << index;
        used[f] = true;
        product *= factors[f].size;
      }
      if (product != shape[d])
        return fail() << ": dimension " << d << " of " << what << " #" << index
                      << " has size " << shape[d] << " but its factors multiply to "
                      << product;
    }
    return success();
  };
  for (auto [i, dims] : llvm::enumerate(operands))
    if (failed(checkTensor(dims, op->getOperand(i).getType(), false, "operand", i)))
      return failure();
  for (auto [i, dims] : llvm::enumerate(results))
    if (failed(checkTensor(dims, op->getResult(i).getType(), true, "result", i)))
      return failure();
  for (auto [f, isUsed] : llvm::enumerate(used))
    if (!isUsed)
      return fail() << ": factor " << factorName(f) << " is unused";
  return success();
}

static void printTensors(llvm::raw_ostream &os,
                         ArrayRef<TensorFactors> tensors) {
  os << "(";
  llvm::interleaveComma(tensors, os, [&](const TensorFactors &dims) {
    os << "[";
    llvm::interleaveComma(dims, os, [&](const DimFactors &fs) {
      if (fs.empty()) {
        os << "1";
        return;
      }
      llvm::interleave(
          fs, os, [&](int64_t f) { os << ShardingRule::factorName(f); }, "*");
    });
    os << "]";
  });
  os << ")";
}

void ShardingRule::print(llvm::raw_ostream &os) const {
  printTensors(os, operands);
  os << " -> ";
  printTensors(os, results);
  os << " {";
  llvm::interleaveComma(llvm::seq<int64_t>(0, factors.size()), os,
                        [&](int64_t f) {
                          os << factorName(f) << "=" << factors[f].size;
                        });
  os << "}";
  auto printKind = [&](FactorKind kind, StringRef label, bool withReduction) {
    SmallVector<int64_t> selected;
    for (auto [f, factor] : llvm::enumerate(factors))
      if (factor.kind == kind)
        selected.push_back(f);
    if (selected.empty())
      return;
    os << " " << label << "={";
    llvm::interleaveComma(selected, os, [&](int64_t f) {
      os << factorName(f);
      if (withReduction)
        os << ":" << stringifyReductionKind(factors[f].reduction);
    });
    os << "}";
  };
  printKind(FactorKind::Reduction, "reduction", /*withReduction=*/true);
  printKind(FactorKind::Replicated, "replicated", /*withReduction=*/false);
}

std::string ShardingRule::str() const {
  std::string s;
  llvm::raw_string_ostream os(s);
  print(os);
  return s;
}

//===----------------------------------------------------------------------===//
// Shared rules
//===----------------------------------------------------------------------===//

ShardingRule ShardingRule::elementwise(Operation *op) {
  ShardingRule rule;
  ArrayRef<int64_t> shape = shapeOf(op->getResult(0).getType());
  int64_t rank = shape.size();
  SmallVector<int64_t> dimFactor(rank, -1);
  for (int64_t d = 0; d < rank; ++d)
    if (shape[d] != 1)
      dimFactor[d] = rule.addFactor(shape[d], FactorKind::Parallel);

  auto factorsFor = [&](Type type) {
    TensorFactors dims;
    ArrayRef<int64_t> s = shapeOf(type);
    int64_t offset = rank - static_cast<int64_t>(s.size());
    for (auto [j, size] : llvm::enumerate(s)) {
      int64_t d = offset + j;
      DimFactors fs;
      if (d >= 0 && size != 1 && size == shape[d])
        fs.push_back(dimFactor[d]);
      dims.push_back(fs);
    }
    return dims;
  };
  for (Value operand : op->getOperands())
    rule.addOperand(factorsFor(operand.getType()));
  for (Value result : op->getResults())
    rule.addResult(factorsFor(result.getType()));
  return rule;
}

ShardingRule ShardingRule::permutation(Operation *op, ArrayRef<int64_t> perm) {
  ShardingRule rule;
  ArrayRef<int64_t> shape = shapeOf(op->getOperand(0).getType());
  TensorFactors in, out;
  for (int64_t size : shape) {
    DimFactors fs;
    if (size != 1)
      fs.push_back(rule.addFactor(size, FactorKind::Parallel));
    in.push_back(fs);
  }
  for (int64_t p : perm)
    out.push_back(in[p]);
  rule.addOperand(in);
  rule.addResult(out);
  return rule;
}

ShardingRule ShardingRule::reshape(Operation *op) {
  ShardingRule rule;
  ArrayRef<int64_t> in = shapeOf(op->getOperand(0).getType());
  ArrayRef<int64_t> out = shapeOf(op->getResult(0).getType());
  TensorFactors inDims(in.size()), outDims(out.size());

  // Walk both shapes, matching the major part of the current dimensions.
  // While the walk stays aligned, a shared factor splits the same contiguous
  // block of the flattened tensor on both sides. Once the sizes stop
  // dividing each other, the rest of the group (up to the next point where
  // the prefix products agree) cannot be split: it gets replicated factors.
  size_t i = 0, j = 0;
  int64_t a = 0, b = 0; // remaining sizes of in[i] and out[j]
  bool misaligned = false;
  auto nextIn = [&]() {
    while (i < in.size() && in[i] == 1)
      ++i;
    a = i < in.size() ? in[i] : 0;
  };
  auto nextOut = [&]() {
    while (j < out.size() && out[j] == 1)
      ++j;
    b = j < out.size() ? out[j] : 0;
  };
  nextIn();
  nextOut();
  // Prefix products of the consumed parts, to find group boundaries.
  int64_t inDone = 1, outDone = 1;
  while (i < in.size() || j < out.size()) {
    if (!misaligned) {
      // Equal total sizes: when aligned, both sides run out together.
      assert(i < in.size() && j < out.size() && "reshape sizes differ");
      if (a == b) {
        int64_t f = rule.addFactor(a, FactorKind::Parallel);
        inDims[i].push_back(f);
        outDims[j].push_back(f);
        inDone *= a;
        outDone *= b;
        ++i, ++j;
        nextIn();
        nextOut();
        continue;
      }
      int64_t g = std::gcd(a, b);
      if (g == std::min(a, b)) {
        // One size divides the other: the smaller dimension is the major
        // part of the larger one.
        int64_t f = rule.addFactor(g, FactorKind::Parallel);
        inDims[i].push_back(f);
        outDims[j].push_back(f);
        inDone *= g;
        outDone *= g;
        if (a == g) {
          b /= g;
          ++i;
          nextIn();
        } else {
          a /= g;
          ++j;
          nextOut();
        }
        continue;
      }
      if (g > 1) {
        int64_t f = rule.addFactor(g, FactorKind::Parallel);
        inDims[i].push_back(f);
        outDims[j].push_back(f);
        a /= g;
        b /= g;
        inDone *= g;
        outDone *= g;
      }
      misaligned = true;
    }
    // Misaligned: consume whichever side is behind until prefixes agree.
    bool consumeIn =
        j >= out.size() || (i < in.size() && inDone * a <= outDone * b);
    if (consumeIn) {
      inDims[i].push_back(rule.addFactor(a, FactorKind::Replicated));
      inDone *= a;
      ++i;
      nextIn();
    } else {
      outDims[j].push_back(rule.addFactor(b, FactorKind::Replicated));
      outDone *= b;
      ++j;
      nextOut();
    }
    if (inDone == outDone)
      misaligned = false;
  }
  rule.addOperand(inDims);
  rule.addResult(outDims);
  return rule;
}
