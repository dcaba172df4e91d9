//===- Executable.h - Rank programs compiled ahead of time ------*- C++ -*-===//
//
// loomc --emit=executable: the training step compiled to machine code once,
// at compile time, and linked with Loom's runtime into ARTIFACT/train, a
// program that needs no LLVM or MLIR at run time. Its machine code is the
// code loom-run's JIT generates for the same step on the same host (same
// lowering, optimization level and CPU), so both train bit for bit alike.
//
//   ARTIFACT/train            the program (runtime/src/program/main.cpp)
//   ARTIFACT/train.manifest   the step's arguments and results
//                             (loom/program.h)
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_EXECUTION_EXECUTABLE_H
#define LOOM_EXECUTION_EXECUTABLE_H

#include "loom/Execution/Executor.h"
#include "loom/program.h"
#include "mlir/IR/BuiltinOps.h"

#include <map>
#include <memory>

#include <string>
#include <vector>

namespace mlir::loom {

struct ExecutableOptions {
  /// Lowering and code generation, as loom-run's JIT does them.
  ExecutorOptions executor;
  /// The C++ compiler driver that links (the one Loom was built with).
  std::string linker;
  std::vector<std::string> linkFlags;
  /// Where libloom_runtime.so and the loom_program archives are.
  std::string libraryDir;
};

/// The options Loom was configured with (LOOM_LINKER, LOOM_LIBRARY_DIR).
ExecutableOptions defaultExecutableOptions();

/// Writes `dir`/train and `dir`/train.manifest for @train_step of
/// `module` (params.bin must be written already). `seconds` receives the
/// compile and link time.
bool writeExecutable(ModuleOp module, llvm::StringRef dir,
                     const ExecutableOptions &options, std::string &error,
                     double *seconds = nullptr);

/// A training step compiled into this process (loom-run's JIT): the
/// manifest the runtime's training loop (loom/train.h) takes, its dense
/// constants held in memory, and the compiled functions' packed entry
/// points by name (@train_step, or a pipeline's stage programs).
struct CompiledStep {
  ::loom::program::Manifest manifest;
  std::vector<std::unique_ptr<Executor>> executors;
  std::map<std::string, void (*)(void **)> entries;
  double compileSeconds = 0;
  /// Whether every function's machine code came from the compile cache.
  bool cached = false;
};

/// Compiles `module`'s step (every stage program of a pipeline) with
/// `options` and describes it as loomc --emit=executable does.
bool compileStep(ModuleOp module, const ExecutorOptions &options,
                 CompiledStep &out, std::string &error);

/// loomc --target=cuda --emit=executable: `dir`/train, a GPU program, from
/// `lowered` (`module`'s @train_step after the CUDA pipeline: host code in
/// the LLVM dialect, kernels as cubins), with `dir`/train.manifest
/// describing `module`'s step (device cuda). Linked with the runtime and
/// Loom's CUDA library only (copied to `dir`/lib); the host code is
/// compiled for x86-64-v2, not this machine's CPU.
bool writeCudaExecutable(ModuleOp module, ModuleOp lowered,
                         llvm::StringRef dir, const ExecutableOptions &options,
                         std::string &error, double *seconds = nullptr);

} // namespace mlir::loom

#endif // LOOM_EXECUTION_EXECUTABLE_H
