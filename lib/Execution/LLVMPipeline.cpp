//===- LLVMPipeline.cpp - LLVM's optimization pipeline for loom steps -----===//
//
// LLVM's default per-module pipeline (what MLIR's makeOptimizingTransformer
// runs) less the module passes that do nothing for a training step but
// grow faster than linearly with the size of one function:
// CalledValuePropagation annotates indirect calls with their possible
// callees, and a step has no indirect calls, yet on a 64-layer GPT's entry
// function (every descriptor field of ~1500 buffers passed to the pieces
// loom-split-functions cut) it took 49.7 of 57 s of optimization.
//
//===----------------------------------------------------------------------===//

#include "loom/Execution/LLVMPipeline.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassInstrumentation.h"
#include "llvm/IR/PassTimingInfo.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/StandardInstrumentations.h"
#include "llvm/Target/TargetMachine.h"

using namespace llvm;

namespace {

/// Passes dropped from the default pipeline (see the file comment).
constexpr StringRef kDropped[] = {"called-value-propagation"};

std::optional<OptimizationLevel> level(unsigned optLevel) {
  switch (optLevel) {
  case 0:
    return OptimizationLevel::O0;
  case 1:
    return OptimizationLevel::O1;
  case 2:
    return OptimizationLevel::O2;
  case 3:
    return OptimizationLevel::O3;
  default:
    return std::nullopt;
  }
}

/// What makeOptimizingTransformer sets.
PipelineTuningOptions tuningOptions() {
  PipelineTuningOptions tuning;
  tuning.LoopUnrolling = true;
  tuning.LoopInterleaving = true;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  return tuning;
}

/// `pipeline` (textual, as printPipeline writes it) without the top-level
/// passes in kDropped. Top-level elements are separated by commas outside
/// parentheses.
std::string dropPasses(StringRef pipeline) {
  SmallVector<std::string> kept;
  int depth = 0;
  size_t start = 0;
  auto flush = [&](size_t end) {
    StringRef element = pipeline.slice(start, end).trim();
    if (!element.empty() && !llvm::is_contained(kDropped, element))
      kept.push_back(element.str());
  };
  for (size_t i = 0; i < pipeline.size(); ++i) {
    char c = pipeline[i];
    if (c == '(')
      ++depth;
    else if (c == ')')
      --depth;
    else if (c == ',' && depth == 0) {
      flush(i);
      start = i + 1;
    }
  }
  flush(pipeline.size());
  return llvm::join(kept, ",");
}

/// The default pipeline at `level` as `builder` builds it, less kDropped,
/// as text; `callbacks` must be the ones `builder` was made with (they
/// name the passes).
std::string pipelineText(PassBuilder &builder,
                         PassInstrumentationCallbacks &callbacks,
                         OptimizationLevel level) {
  ModulePassManager pipeline = builder.buildPerModuleDefaultPipeline(level);
  std::string text;
  raw_string_ostream os(text);
  pipeline.printPipeline(os, [&](StringRef className) {
    StringRef name = callbacks.getPassNameForClassName(className);
    return name.empty() ? className : name;
  });
  return dropPasses(text);
}

} // namespace

std::string mlir::loom::llvmPipelineText(unsigned optLevel,
                                         TargetMachine *targetMachine) {
  std::optional<OptimizationLevel> ol = level(optLevel);
  if (!ol)
    return "";
  PassInstrumentationCallbacks callbacks;
  PassBuilder builder(targetMachine, tuningOptions(), std::nullopt,
                      &callbacks);
  return pipelineText(builder, callbacks, *ol);
}

std::function<Error(Module *)>
mlir::loom::makeLLVMTransformer(unsigned optLevel, TargetMachine *targetMachine,
                                bool timePasses) {
  return [=](Module *module) -> Error {
    std::optional<OptimizationLevel> ol = level(optLevel);
    if (!ol)
      return make_error<StringError>(
          "invalid LLVM optimization level " + Twine(optLevel),
          inconvertibleErrorCode());
    LoopAnalysisManager loops;
    FunctionAnalysisManager functions;
    CGSCCAnalysisManager sccs;
    ModuleAnalysisManager modules;
    PassInstrumentationCallbacks callbacks;
    // StandardInstrumentations times passes when TimePassesIsEnabled is
    // set at its construction.
    bool wasTiming = TimePassesIsEnabled;
    TimePassesIsEnabled = timePasses;
    StandardInstrumentations instrumentations(module->getContext(),
                                              /*DebugLogging=*/false);
    if (timePasses)
      instrumentations.registerCallbacks(callbacks, &modules);
    PassBuilder builder(targetMachine, tuningOptions(), std::nullopt,
                        &callbacks);
    builder.registerModuleAnalyses(modules);
    builder.registerCGSCCAnalyses(sccs);
    builder.registerFunctionAnalyses(functions);
    builder.registerLoopAnalyses(loops);
    builder.crossRegisterProxies(loops, functions, sccs, modules);

    ModulePassManager pipeline;
    if (Error error = builder.parsePassPipeline(
            pipeline, pipelineText(builder, callbacks, *ol)))
      return error;
    pipeline.run(*module, modules);
    if (timePasses)
      reportAndResetTimings(&errs());
    TimePassesIsEnabled = wasTiming;
    return Error::success();
  };
}
