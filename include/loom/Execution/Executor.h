//===- Executor.h - Compile and run a loom function on the CPU --*- C++ -*-===//
//
// The execution library behind loom-run and the numerical tests: lowers a
// module with the loom-cpu-pipeline, compiles it to machine code
// (LLVMPipeline.h: LLVM's optimizations, code generation on every core),
// links the objects in an ORC JIT and calls a function on host tensors.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_EXECUTION_EXECUTOR_H
#define LOOM_EXECUTION_EXECUTOR_H

#include "loom/Execution/HostTensor.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallVector.h"
#include <memory>
#include <optional>
#include <vector>

namespace mlir::loom {

struct ExecutorOptions {
  /// Call OpenBLAS for f32/f64 matrix products.
  bool useBlas = true;
  /// f32 exp, log, erf and tanh as vectorizable polynomials
  /// (loom-approximate-math); false: libm calls (loom-run --libm).
  bool approximateMath = true;
  /// Ungrouped convolutions as im2col patches times the filter (one BLAS
  /// GEMM each); false: a loop nest per convolution (loom-run
  /// --conv-loops).
  bool convAsGemm = true;
  /// Grouped f32/bf16 forward convolutions and input gradients as calls to
  /// oneDNN's convolution; false: loop nests (loom-run --no-onednn-conv,
  /// --conv-loops).
  bool convLibrary = true;
  /// The outermost parallel loops on the runtime's threads
  /// (loom-parallelize-loops); false: serial loops (loom-run
  /// --serial-loops).
  bool parallelLoops = true;
  /// LLVM optimization level (0-3). 3 adds aggressive unrolling that costs
  /// 2-4x the code-generation time of 2 on training steps and measured no
  /// faster on bench/forward.py's models.
  unsigned optLevel = 2;
  /// Long steps are cut into functions of about this many ops before LLVM
  /// sees them (loom-split-functions; 0: one function).
  int64_t splitFunctions = 300;
  /// Compile with the CUDA pipeline's kernel loop structure run on the CPU
  /// (buildLoomCudaLoopsOnCpuPipeline): checks the generated kernels'
  /// arithmetic without a GPU.
  bool gpuLoopsOnCpu = false;
  /// Report the time of every MLIR pass of the lowering and of every LLVM
  /// pass (to stderr; LLVM's report when the process exits; loom-run
  /// --compile-timing).
  bool timePasses = false;
  /// Where compiled machine code is kept, keyed by a hash of the lowered
  /// program, the optimization level, the host CPU and LLVM's version
  /// (empty: no cache). A hit skips LLVM's optimization and code
  /// generation; concurrent processes (the ranks of one job) compile once:
  /// the first takes a lock and the others wait for its object.
  std::string cacheDir;
  /// Where to write the compiled object files as well (loomc
  /// --emit=executable links them into a program; getObjectFiles() lists
  /// them); empty: nowhere.
  std::string objectFile;
  /// Threads generating machine code (0: one per hardware thread).
  unsigned compileThreads = 0;
};

/// One argument or result of the compiled function.
struct ValueInfo {
  RankedTensorType type;
  /// `loom.name` when present, else "arg<i>" / "result<i>".
  std::string name;
  /// The loom.parameter an argument is bound to, or whose next value a
  /// result is (a training step's updates), if any.
  std::string parameter;
  /// For arguments: `loom.index_bound` (integer data lies in [0, bound)), or 0.
  int64_t indexBound = 0;
  /// Whether `parameter` is a trainable loom.parameter.
  bool trainable = false;
  /// Its initial value (dense, dense_resource or #loom.external), if any.
  Attribute initialValue;
};

/// What a caller binds to `function`'s arguments and results (as
/// Executor::getArguments/getResults describe them), without compiling it.
bool describeFunction(ModuleOp module, llvm::StringRef function,
                      llvm::SmallVectorImpl<ValueInfo> &arguments,
                      llvm::SmallVectorImpl<ValueInfo> &results,
                      std::string &error);

/// The value of a loom.parameter initial value (dense, dense_resource or
/// #loom.external, whose relative paths resolve against `baseDir`).
std::optional<HostTensor> readInitialValue(Attribute value,
                                           RankedTensorType type,
                                           llvm::StringRef name,
                                           llvm::StringRef baseDir,
                                           std::string &error);

class Executor {
public:
  ~Executor();

  /// Compiles `function` of `module` (which is not modified).
  static std::unique_ptr<Executor> create(ModuleOp module,
                                          llvm::StringRef function,
                                          const ExecutorOptions &options,
                                          std::string &error);

  llvm::ArrayRef<ValueInfo> getArguments() const { return arguments; }
  llvm::ArrayRef<ValueInfo> getResults() const { return results; }

  /// The initial value of parameter argument `index`; `baseDir` resolves
  /// relative #loom.external paths.
  std::optional<HostTensor> parameterValue(unsigned index,
                                           llvm::StringRef baseDir,
                                           std::string &error) const;

  /// Runs the function. Arguments must match getArguments() exactly;
  /// results are allocated here. (Training runs the packed entry through
  /// the runtime's loop, loom/train.h, which measures memory.)
  bool run(llvm::ArrayRef<const HostTensor *> args,
           llvm::SmallVectorImpl<HostTensor> &results, std::string &error);

  /// Whether the machine code came from ExecutorOptions::cacheDir.
  bool fromCache() const { return cached; }

  /// With ExecutorOptions::objectFile: the object files written (the
  /// first at objectFile, the others beside it as <stem>.<i>.o).
  llvm::ArrayRef<std::string> getObjectFiles() const { return objectFiles; }

  /// The compiled function's packed entry point
  /// (`_mlir__mlir_ciface_<function>(void **)`) and its name.
  void (*getPackedEntry() const)(void **) { return packedEntry; }
  const std::string &getEntryName() const { return entry; }

  /// The JIT's allocator counts what compiled code allocates: from
  /// beginMeasuringTemporaries, measuredTemporaries is the most bytes its
  /// allocations held at once (the step's temporaries).
  static void beginMeasuringTemporaries();
  static int64_t measuredTemporaries();

private:
  Executor() = default;
  /// Calls the packed entry point (`_mlir__mlir_ciface_<entry>`).
  bool invoke(llvm::MutableArrayRef<void *> packed, std::string &error);
  /// Links compiled (or cached) objects and finds the entry point.
  bool useObjects(llvm::ArrayRef<std::string> objects,
                  const ExecutorOptions &options, std::string &error);
  /// The step's objects from ExecutorOptions::cacheDir, or compiled (and
  /// published there).
  std::optional<std::vector<std::string>>
  objectsThroughCache(ModuleOp lowered, llvm::StringRef function,
                      const ExecutorOptions &options, std::string &error);
  /// Writes `objects` as files: the first at `first`, the others beside it
  /// (<stem>.<i>.o); getObjectFiles() lists them.
  bool writeObjectFiles(llvm::ArrayRef<std::string> objects,
                        llvm::StringRef first, std::string &error);
  /// The JIT holding the linked objects.
  std::unique_ptr<llvm::orc::LLJIT> loaded;
  std::vector<std::string> objectFiles;
  void (*packedEntry)(void **) = nullptr;
  bool cached = false;
  std::string entry;
  llvm::SmallVector<ValueInfo> arguments, results;
};

} // namespace mlir::loom

#endif // LOOM_EXECUTION_EXECUTOR_H
