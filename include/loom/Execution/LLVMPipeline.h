//===- LLVMPipeline.h - LLVM's optimization pipeline for loom steps ---*- C++ -*-===//
//
// The LLVM pass pipeline compiled training steps go through (JIT and
// loomc --emit=executable): LLVM's default pipeline at the chosen level
// without the passes that cost super-linear time on long steps and do
// nothing for them (LLVMPipeline.cpp says which and why).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_EXECUTION_LLVMPIPELINE_H
#define LOOM_EXECUTION_LLVMPIPELINE_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/Support/CodeGen.h"
#include "llvm/Support/Error.h"
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace mlir::loom {

/// Optimizes a module in place (ExecutionEngineOptions::transformer). With
/// `timePasses`, LLVM's pass timing report is printed to stderr when the
/// process exits (-time-passes).
std::function<llvm::Error(llvm::Module *)>
makeLLVMTransformer(unsigned optLevel, llvm::TargetMachine *targetMachine,
                    bool timePasses = false);

/// The pipeline makeLLVMTransformer runs, as text (`opt -passes=` syntax);
/// empty for an invalid level.
std::string llvmPipelineText(unsigned optLevel,
                             llvm::TargetMachine *targetMachine);

/// This host's CPU (and its features) at code generation `level`: what the
/// objects are compiled for and what the JIT that links them expects.
llvm::Expected<llvm::orc::JITTargetMachineBuilder>
hostMachineBuilder(llvm::CodeGenOptLevel level);

/// How a lowered step becomes machine code.
struct ObjectCodeOptions {
  /// LLVM optimization level (0-3) and code generation level.
  unsigned optLevel = 2;
  llvm::CodeGenOptLevel codegenLevel = llvm::CodeGenOptLevel::Default;
  /// Threads generating code (0: one per hardware thread). A module of
  /// many functions (loom-split-functions' pieces) is split into up to this
  /// many partitions compiled in parallel, one object each.
  unsigned threads = 0;
  bool timePasses = false;
  /// The CPU to generate code for: empty for this host (and its features),
  /// or a name such as "x86-64-v2" (a portable level: GPU programs' host
  /// code, which runs on machines other than the compiling one).
  std::string cpu;
};

/// Translates `lowered` (LLVM dialect) to LLVM IR for this host's CPU, adds
/// the packed entry point `_mlir__mlir_ciface_<entry>(void **)` (MLIR
/// ExecutionEngine's calling convention), optimizes it and generates
/// object code: one or more relocatable objects, together defining the
/// module. std::nullopt with `error` set on failure.
std::optional<std::vector<std::string>>
compileToObjects(ModuleOp lowered, llvm::StringRef entry,
                 const ObjectCodeOptions &options, std::string &error);

} // namespace mlir::loom

#endif // LOOM_EXECUTION_LLVMPIPELINE_H
