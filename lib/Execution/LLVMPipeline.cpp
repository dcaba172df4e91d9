//===- LLVMPipeline.cpp - LLVM's optimization and code generation ---------===//
//
// LLVM's default per-module pipeline (what MLIR's makeOptimizingTransformer
// runs) less the module passes that do nothing for a training step but
// grow faster than linearly with the size of one function:
// CalledValuePropagation annotates indirect calls with their possible
// callees, and a step has no indirect calls, yet on a 64-layer GPT's entry
// function (every descriptor field of ~1500 buffers passed to the pieces
// loom-split-functions cut) it took 49.7 of 57 s of optimization.
//
// Code generation then runs on every core: the optimized module is split
// into partitions (whole functions each) compiled in parallel to one
// object each, which the JIT loads together and rank programs link.
//
//===----------------------------------------------------------------------===//

#include "loom/Execution/LLVMPipeline.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/Transforms/Utils/SplitModule.h"
#include "llvm/Support/FormatVariadic.h"
#include <chrono>
#include <thread>
#include "llvm/ADT/StringExtras.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassInstrumentation.h"
#include "llvm/IR/PassTimingInfo.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/StandardInstrumentations.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/SubtargetFeature.h"

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
    // (Only when timing: partitions are optimized on several threads.)
    bool wasTiming = TimePassesIsEnabled;
    if (timePasses)
      TimePassesIsEnabled = true;
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
    Error error = builder.parsePassPipeline(
        pipeline, pipelineText(builder, callbacks, *ol));
    if (!error) {
      pipeline.run(*module, modules);
      if (timePasses)
        reportAndResetTimings(&errs());
    }
    if (timePasses)
      TimePassesIsEnabled = wasTiming;
    return error;
  };
}

//===----------------------------------------------------------------------===//
// Object code
//===----------------------------------------------------------------------===//

Expected<orc::JITTargetMachineBuilder>
mlir::loom::hostMachineBuilder(CodeGenOptLevel level) {
  auto builder = orc::JITTargetMachineBuilder::detectHost();
  if (builder)
    builder->setCodeGenOptLevel(level);
  return builder;
}

namespace {

/// A target machine for this host, as ORC's JIT makes one; for `cpu`
/// (with its own features only) when not empty.
Expected<std::unique_ptr<TargetMachine>>
hostTargetMachine(CodeGenOptLevel level, StringRef cpu = "") {
  auto builder = mlir::loom::hostMachineBuilder(level);
  if (!builder)
    return builder.takeError();
  if (!cpu.empty()) {
    builder->setCPU(cpu.str());
    builder->getFeatures() = SubtargetFeatures();
  }
  return builder->createTargetMachine();
}

/// `_mlir_<name>(void **args)`: loads each argument of `name` through the
/// pointer at its index and calls it (MLIR ExecutionEngine's packed
/// interface; results are returned through the C interface's pointers).
bool addPackedWrapper(Module &module, StringRef name, std::string &error) {
  Function *callee = module.getFunction(name);
  if (!callee || callee->isDeclaration()) {
    error = "the compiled module has no function " + name.str();
    return false;
  }
  LLVMContext &ctx = module.getContext();
  IRBuilder<> builder(ctx);
  auto *type = FunctionType::get(builder.getVoidTy(), builder.getPtrTy(),
                                 /*isVarArg=*/false);
  Function *wrapper = Function::Create(type, GlobalValue::ExternalLinkage,
                                       "_mlir_" + name, module);
  builder.SetInsertPoint(BasicBlock::Create(ctx, "entry", wrapper));
  Value *list = wrapper->getArg(0);
  SmallVector<Value *> args;
  for (Argument &arg : callee->args()) {
    Value *slot = builder.CreateGEP(builder.getPtrTy(), list,
                                    builder.getInt64(arg.getArgNo()));
    Value *pointer = builder.CreateLoad(builder.getPtrTy(), slot);
    args.push_back(builder.CreateLoad(arg.getType(), pointer));
  }
  Value *result = builder.CreateCall(callee, args);
  if (!result->getType()->isVoidTy()) {
    Value *slot = builder.CreateGEP(builder.getPtrTy(), list,
                                    builder.getInt64(callee->arg_size()));
    builder.CreateStore(result, builder.CreateLoad(builder.getPtrTy(), slot));
  }
  builder.CreateRetVoid();
  return true;
}

/// Machine code for `module` as a relocatable object.
Expected<std::string> emitObject(Module &module, CodeGenOptLevel level,
                                 StringRef cpu) {
  auto machine = hostTargetMachine(level, cpu);
  if (!machine)
    return machine.takeError();
  SmallString<0> bytes;
  raw_svector_ostream os(bytes);
  legacy::PassManager passes;
  if ((*machine)->addPassesToEmitFile(passes, os, nullptr,
                                      CodeGenFileType::ObjectFile))
    return make_error<StringError>("the target cannot emit object files",
                                   inconvertibleErrorCode());
  passes.run(module);
  return std::string(bytes);
}

unsigned definedFunctions(const Module &module) {
  unsigned n = 0;
  for (const Function &f : module)
    n += !f.isDeclaration();
  return n;
}

} // namespace

std::optional<std::vector<std::string>>
mlir::loom::compileToObjects(ModuleOp lowered, StringRef entry,
                             const ObjectCodeOptions &options,
                             std::string &error) {
  auto fail = [&](Error e) -> std::optional<std::vector<std::string>> {
    error = toString(std::move(e));
    return std::nullopt;
  };
  auto context = std::make_unique<LLVMContext>();
  std::unique_ptr<Module> module =
      translateModuleToLLVMIR(lowered, *context, "loom_step");
  if (!module) {
    error = "cannot translate the lowered step to LLVM IR";
    return std::nullopt;
  }
  auto machine = hostTargetMachine(options.codegenLevel, options.cpu);
  if (!machine)
    return fail(machine.takeError());
  ExecutionEngine::setupTargetTripleAndDataLayout(module.get(), machine->get());
  if (!addPackedWrapper(*module, ("_mlir_ciface_" + entry).str(), error))
    return std::nullopt;

  unsigned threads = options.threads ? options.threads
                                     : std::max(1u, std::thread::hardware_concurrency());
  // A partition per thread, each with two functions at least (splitting
  // copies declarations and globals into every partition).
  auto partitionsFor = [&](const Module &m) {
    return std::max(1u, std::min(threads, definedFunctions(m) / 2));
  };
  unsigned partitions = partitionsFor(*module);
  // Each partition is optimized on its thread too (LLVM's optimization
  // was half of the time on a long step, on one core). Functions do not
  // inline across partitions: the pieces loom-split-functions cut and the
  // loops loom-parallelize-loops outlined are not meant to be inlined.
  // With --compile-timing the module is optimized whole first, for one
  // report, and split as it is then.
  bool optimizeWhole = partitions == 1 || options.timePasses;
  if (optimizeWhole) {
    if (Error e = makeLLVMTransformer(options.optLevel, machine->get(),
                                      options.timePasses)(module.get()))
      return fail(std::move(e));
    partitions = partitionsFor(*module);
  }
  // Splitting gives a local symbol used by several partitions external
  // (hidden) linkage under its name; the objects of a pipeline's stage
  // programs are linked into one executable, and each has its own copies
  // of such symbols (the C-interface wrappers of runtime functions,
  // constants), so they are named after the program's entry first.
  for (GlobalValue &g : module->global_values())
    if (g.hasLocalLinkage() && g.hasName() &&
        !g.getName().starts_with(entry))
      g.setName(entry + "." + g.getName());

  auto start = std::chrono::steady_clock::now();
  auto report = [&] {
    if (options.timePasses)
      errs() << formatv("loom: code generation in {0} partition(s) on {0} "
                        "thread(s): {1:f2} s\n",
                        partitions,
                        std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - start)
                            .count());
  };
  if (partitions == 1) {
    Expected<std::string> object = emitObject(*module, options.codegenLevel, options.cpu);
    if (!object)
      return fail(object.takeError());
    report();
    return std::vector<std::string>{std::move(*object)};
  }
  // Partitions cross threads as bitcode, each read into its own context
  // (an LLVMContext is not thread-safe), as LLVM's parallel code generation
  // for LTO does.
  std::vector<std::string> bitcode;
  SplitModule(
      *module, partitions,
      [&](std::unique_ptr<Module> part) {
        std::string bytes;
        raw_string_ostream os(bytes);
        WriteBitcodeToFile(*part, os);
        bitcode.push_back(std::move(bytes));
      },
      /*PreserveLocals=*/false, /*RoundRobin=*/true);
  std::vector<std::string> objects(bitcode.size());
  std::vector<std::string> errors(bitcode.size());
  std::vector<std::thread> workers;
  for (size_t i = 0; i < bitcode.size(); ++i)
    workers.emplace_back([&, i] {
      LLVMContext partContext;
      auto part = parseBitcodeFile(
          MemoryBufferRef(bitcode[i], "partition"), partContext);
      if (!part) {
        errors[i] = toString(part.takeError());
        return;
      }
      if (!optimizeWhole) {
        auto partMachine = hostTargetMachine(options.codegenLevel, options.cpu);
        if (!partMachine) {
          errors[i] = toString(partMachine.takeError());
          return;
        }
        if (Error e = makeLLVMTransformer(options.optLevel, partMachine->get(),
                                          /*timePasses=*/false)(part->get())) {
          errors[i] = toString(std::move(e));
          return;
        }
      }
      Expected<std::string> object = emitObject(**part, options.codegenLevel, options.cpu);
      if (!object)
        errors[i] = toString(object.takeError());
      else
        objects[i] = std::move(*object);
    });
  for (std::thread &worker : workers)
    worker.join();
  for (const std::string &e : errors)
    if (!e.empty()) {
      error = "code generation failed: " + e;
      return std::nullopt;
    }
  report();
  return objects;
}
