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

#include "llvm/Support/Error.h"
#include <functional>
#include <string>

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

} // namespace mlir::loom

#endif // LOOM_EXECUTION_LLVMPIPELINE_H
