//===- loom-fuzz-ir.cpp - loom-opt's parser, verifier and passes ----------===//
//
// Input: MLIR text as loomc and loom-opt read it (loom, func and arith
// ops): the nesting check loom-opt makes first, MLIR's parser and the
// verifier (every loom op's verifier and type inference), the size limits
// loomc checks before any pass, and then, for a module that passes them,
// the passes that build a training step (loomc --train: buffers inferred,
// a loss added where the function returns a tensor, forward + backward +
// SGD update), which must end in a module that verifies or a clean error.
//
// Mutations (LLVMFuzzerCustomMutator): half of them change one dimension
// everywhere it appears in the text's tensor types (every `64` of
// `tensor<16x64xf32>` and `tensor<64x16xf32>` becomes 0, 1, 3, 2^31 - 1,
// 2^40, ...), so that mutants stay consistent, pass the verifier and reach
// the passes, as a model with other sizes would; the other half are
// libFuzzer's byte-level mutations.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "loom/Dialect/Loom/IR/LoomDialect.h"
#include "loom/Support/InputLimits.h"
#include "loom/Training/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <vector>

using namespace mlir;

namespace {

/// The dimension lists of the text's tensor types: [begin, end) of each
/// number in `tensor<AxBx...>` (sizes only, not the element type).
std::vector<std::pair<size_t, size_t>> dimensionSpans(const std::string &t) {
  std::vector<std::pair<size_t, size_t>> spans;
  for (size_t at = t.find("tensor<"); at != std::string::npos;
       at = t.find("tensor<", at + 1)) {
    size_t i = at + 7;
    while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) {
      size_t from = i;
      while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i])))
        ++i;
      if (i >= t.size() || t[i] != 'x')
        break;
      spans.push_back({from, i});
      ++i;
    }
  }
  return spans;
}

/// Every occurrence of one dimension's value in the tensor types replaced
/// by another; false when the text has no sized tensor type.
bool changeOneDimension(std::string &text, std::mt19937_64 &rng) {
  auto spans = dimensionSpans(text);
  if (spans.empty())
    return false;
  auto pick = spans[rng() % spans.size()];
  std::string from = text.substr(pick.first, pick.second - pick.first);
  static const char *kValues[] = {"0",  "1",          "2",
                                  "3",  "5",          "7",
                                  "17", "1024",       "65536",
                                  "2147483647", "2147483648", "1099511627776",
                                  "4611686018427387904"};
  std::string to;
  if (rng() % 4 == 0) {
    // Double or halve it (shapes that still divide meshes and heads).
    unsigned long long v = std::strtoull(from.c_str(), nullptr, 10);
    to = std::to_string(rng() % 2 ? v * 2 : std::max(1ull, v / 2));
  } else {
    to = kValues[rng() % (sizeof(kValues) / sizeof(kValues[0]))];
  }
  std::string out;
  size_t last = 0;
  for (auto [b, e] : spans) {
    if (text.compare(b, e - b, from) != 0)
      continue;
    out.append(text, last, b - last);
    out += to;
    last = e;
  }
  out.append(text, last, std::string::npos);
  text = std::move(out);
  return true;
}

} // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::string text(reinterpret_cast<const char *>(data), size);
  if (rng() % 2 == 0 || !changeOneDimension(text, rng) ||
      text.size() > maxSize)
    return LLVMFuzzerMutate(data, size, maxSize);
  std::memcpy(data, text.data(), text.size());
  return text.size();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (1u << 16))
    return -1;
  // NUL-terminated, as loom-opt's file buffers are (MLIR's lexer stops at
  // the terminator).
  std::string owned(reinterpret_cast<const char *>(data), size);
  StringRef text(owned);
  if (!mlir::loom::checkIRNesting(text, "input").empty())
    return 0;
  DialectRegistry registry;
  registry.insert<mlir::loom::LoomDialect, func::FuncDialect, arith::ArithDialect>();
  MLIRContext context(registry);
  context.disableMultithreading();
  ScopedDiagnosticHandler quiet(&context, [](Diagnostic &) { return success(); });
  // Parsing verifies the module (ParserConfig's default).
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
  // loomc's order: the size limits before any pass.
  if (!module || failed(mlir::loom::verifySizeLimits(*module)))
    return 0;
  // A training step of the module's function (loomc --train: its scalar
  // result as the loss, else an MSE loss of its first result): a failed
  // pass is a clean error; a module the passes leave broken is a finding.
  auto functions = module->getOps<func::FuncOp>();
  if (std::distance(functions.begin(), functions.end()) != 1)
    return 0;
  func::FuncOp fn = *functions.begin();
  if (fn.isExternal() || fn.getNumResults() == 0)
    return 0;
  auto first = dyn_cast<RankedTensorType>(fn.getResultTypes()[0]);
  PassManager pm(&context);
  pm.enableVerifier(true);
  pm.addPass(mlir::loom::createLoomInferBuffers());
  // A model that returns its loss already (a scalar) is trained on it.
  if (!first || first.getRank() != 0) {
    mlir::loom::LoomAddLossOptions loss;
    loss.loss = "mse";
    pm.addPass(mlir::loom::createLoomAddLoss(loss));
  }
  mlir::loom::LoomBuildTrainStepOptions step;
  step.optimizer = "sgd";
  step.lr = 0.1;
  pm.addPass(mlir::loom::createLoomBuildTrainStep(step));
  pm.addPass(createCanonicalizerPass());
  if (succeeded(pm.run(*module)) && failed(verify(*module)))
    loomfuzz::fail("the training passes left a module that does not verify");
  return 0;
}
