//===- Executable.cpp - Rank programs compiled ahead of time --------------===//

#include "loom/Execution/Executable.h"
#include "loom/Execution/LLVMPipeline.h"

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Execution/Distributed.h"
#include "loom/program.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/TargetSelect.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

#include <chrono>
#include <functional>
#include <mutex>

using namespace mlir;
using namespace mlir::loom;
namespace program = ::loom::program;

ExecutableOptions mlir::loom::defaultExecutableOptions() {
  ExecutableOptions options;
  options.linker = LOOM_LINKER;
  options.libraryDir = LOOM_LIBRARY_DIR;
  StringRef flags = LOOM_LINK_FLAGS;
  SmallVector<StringRef> parts;
  flags.split(parts, ' ', -1, false);
  for (StringRef f : parts)
    options.linkFlags.push_back(f.str());
  return options;
}

namespace {

std::string path(StringRef dir, StringRef name) {
  SmallString<256> p(dir);
  llvm::sys::path::append(p, name);
  return std::string(p);
}

/// What the manifest says of an argument or result.
program::Value describe(const ValueInfo &info, ShardingAttr sharding,
                        MeshOp mesh) {
  program::Value v;
  v.name = info.name;
  v.parameter = info.parameter;
  v.trainable = info.trainable;
  v.indexBound = info.indexBound;
  v.dtype = runtimeType(info.type.getElementType());
  v.shape.assign(info.type.getShape().begin(), info.type.getShape().end());
  v.global = v.shape;
  if (mesh) {
    v.sharding = toProgramSharding(sharding, mesh);
    for (size_t d = 0; d < v.sharding.dims.size() && d < v.global.size(); ++d)
      for (int32_t a : v.sharding.dims[d])
        v.global[d] *= cast<MeshAxisAttr>(mesh.getAxes()[a]).getSize();
  }
  return v;
}

/// Points `v` at its initial value: params.bin (#loom.external), one
/// repeated element, or other constants appended to `extra`.
bool bindInitialValue(const ValueInfo &info, program::Value &v,
                      std::string &extra, std::string &error) {
  if (auto external = dyn_cast_or_null<ExternalDataAttr>(info.initialValue)) {
    v.initFile = external.getPath().getValue().str();
    v.initOffset = external.getOffset();
    if (llvm::sys::path::is_absolute(v.initFile)) {
      error = "parameter @" + info.parameter + " reads " + v.initFile +
              ": an executable reads initial values beside it";
      return false;
    }
    return true;
  }
  auto elements = dyn_cast_or_null<ElementsAttr>(info.initialValue);
  if (!elements) {
    error = "parameter @" + info.parameter + " has no initial value";
    return false;
  }
  std::optional<HostTensor> value = HostTensor::fromAttr(elements, error);
  if (!value)
    return false;
  int64_t width = HostTensor::elementBytes(value->getElementType());
  if (elements.isSplat()) {
    v.splat.assign(value->data(), width);
    return true;
  }
  v.initFile = "train.constants.bin";
  v.initOffset = static_cast<int64_t>(extra.size());
  extra.append(value->data(), value->byteSize());
  return true;
}

bool writeFile(const std::string &p, StringRef text, std::string &error) {
  std::error_code ec;
  llvm::raw_fd_ostream os(p, ec);
  if (!ec)
    os << text;
  if (ec || os.has_error()) {
    error = "cannot write " + p + ": " + ec.message();
    return false;
  }
  return true;
}

/// DIR/lib/<library> for each of Loom's libraries the program links (the
/// runtime; libloom_blas.so for a CPU program, libloom_cuda.so for a GPU
/// one): the artifact directory is then the whole program, movable to
/// another machine with the system libraries they link (MPI, Gloo,
/// OpenBLAS; a GPU program loads the NVIDIA driver, cuBLAS and NCCL where
/// it finds them).
bool copyLibraries(const ExecutableOptions &options, StringRef dir,
                   ArrayRef<std::string> libraries, std::string &error) {
  std::string libDir = path(dir, "lib");
  if (std::error_code ec = llvm::sys::fs::create_directories(
          libDir, /*IgnoreExisting=*/true, llvm::sys::fs::all_all)) {
    error = "cannot create " + libDir + ": " + ec.message();
    return false;
  }
  for (const std::string &library : libraries) {
    std::string from = path(options.libraryDir, library);
    std::string to = path(libDir, library);
    if (std::error_code ec = llvm::sys::fs::copy_file(from, to)) {
      error = "cannot copy " + from + " to " + to + ": " + ec.message();
      return false;
    }
  }
  return true;
}

/// Links the step's objects with the rank-program archives and Loom's
/// `libraries` (-l names), found at run time in `$ORIGIN/lib`
/// (copyLibraries puts them there).
bool link(const ExecutableOptions &options, ArrayRef<std::string> objects,
          ArrayRef<std::string> libraries, const std::string &output,
          bool exportEntries, std::string &error) {
  std::vector<std::string> args = {options.linker, "-o", output};
  args.insert(args.end(), objects.begin(), objects.end());
  for (const std::string &f : options.linkFlags)
    args.push_back(f);
  args.push_back(path(options.libraryDir, "libloom_program_main.a"));
  args.push_back(path(options.libraryDir, "libloom_program.a"));
  args.push_back("-L" + options.libraryDir);
  for (const std::string &l : libraries)
    args.push_back("-l" + l);
  args.push_back("-Wl,-rpath,$ORIGIN/lib");
  // Every symbol resolved now, against these libraries (an executable's
  // default; said here because GPU programs rely on it).
  args.push_back("-Wl,--no-undefined");
  // A pipelined program finds its stage programs' entries by name.
  if (exportEntries)
    args.push_back("-rdynamic");
  // The JIT's code model and relocations: no position-independent code.
  args.push_back("-no-pie");
  SmallVector<StringRef> refs(args.begin(), args.end());
  SmallString<128> log;
  llvm::sys::fs::createTemporaryFile("loomc-link", "txt", log);
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log),
                                          StringRef(log)};
  std::string message;
  int status = llvm::sys::ExecuteAndWait(options.linker, refs, std::nullopt,
                                         redirects, 0, 0, &message);
  auto text = llvm::MemoryBuffer::getFile(log);
  llvm::sys::fs::remove(log);
  if (status == 0)
    return true;
  error = "linking " + output + " with " + options.linker + " failed" +
          (message.empty() ? "" : ": " + message) +
          (text ? ":\n" + (*text)->getBuffer().str() : "");
  return false;
}

/// The manifest's description of `fn`'s arguments and results as compiled
/// (`argInfos`, `resultInfos`: with their pipeline ports); parameters'
/// initial values bound (constants appended to `constants`).
bool describeProgram(func::FuncOp fn, ArrayRef<ValueInfo> argInfos,
                     ArrayRef<ValueInfo> resultInfos, MeshOp mesh,
                     std::vector<program::Value> &arguments,
                     std::vector<program::Value> &results,
                     std::string &constants, std::string &error) {
  auto portOf = [](DictionaryAttr attrs) {
    auto pipe = attrs ? attrs.getAs<StringAttr>(LoomDialect::kPipeAttrName)
                      : StringAttr();
    return pipe ? pipe.getValue().str() : std::string();
  };
  for (auto [i, info] : llvm::enumerate(argInfos)) {
    auto sharding =
        fn.getArgAttrOfType<ShardingAttr>(i, LoomDialect::kShardingAttrName);
    arguments.push_back(describe(info, sharding, mesh));
    arguments.back().port = portOf(fn.getArgAttrDict(i));
    if (!info.parameter.empty() &&
        !bindInitialValue(info, arguments.back(), constants, error))
      return false;
  }
  for (auto [i, info] : llvm::enumerate(resultInfos)) {
    results.push_back(describe(info, nullptr, nullptr));
    results.back().port = portOf(fn.getResultAttrDict(i));
    for (const program::Value &arg : arguments)
      if (!info.parameter.empty() && arg.parameter == info.parameter)
        results.back().trainable = arg.trainable;
  }
  return true;
}

/// `mesh`'s axis names and sizes into `manifest`.
void addMeshAxes(MeshOp mesh, program::Manifest &manifest) {
  for (Attribute a : mesh.getAxes()) {
    auto axis = cast<MeshAxisAttr>(a);
    manifest.axisNames.push_back(axis.getName().str());
    manifest.axisSizes.push_back(axis.getSize());
  }
}

/// An unpipelined step's micro-batches and mesh (its axes into `manifest`);
/// null when the step is not partitioned.
MeshOp describeStepMesh(ModuleOp module, func::FuncOp step,
                        program::Manifest &manifest) {
  MeshOp mesh;
  if (auto ref = step->getAttrOfType<FlatSymbolRefAttr>(
          LoomDialect::kPartitionedAttrName))
    mesh = module.lookupSymbol<MeshOp>(ref);
  if (auto micro =
          step->getAttrOfType<IntegerAttr>(LoomDialect::kMicroBatchesAttrName))
    manifest.microBatches = micro.getInt();
  manifest.splitBatch = module->hasAttr(LoomDialect::kBatchSplitAttrName);
  if (mesh)
    addMeshAxes(mesh, manifest);
  return mesh;
}

/// A pipelined step's schedule, mesh and every stage's programs, each
/// compiled by `compile(name)` (null: failed, with `error`).
bool describePipeline(
    ModuleOp module,
    const std::function<std::unique_ptr<Executor>(const std::string &)> &compile,
    program::Manifest &manifest, std::vector<std::unique_ptr<Executor>> &execs,
    std::string &constants, std::string &error) {
  auto pipe =
      module->getAttrOfType<DictionaryAttr>(LoomDialect::kPipelineAttrName);
  auto get = [&](StringRef k) {
    auto a = pipe.getAs<IntegerAttr>(k);
    return a ? int(a.getInt()) : -1;
  };
  manifest.pipelineRanks = get("ranks");
  manifest.virtualStages = get("virtual_stages");
  manifest.microBatches = get("micro_batches");
  manifest.splitBatch = module->hasAttr(LoomDialect::kBatchSplitAttrName);
  auto lists = pipe.getAs<ArrayAttr>("actions");
  if (manifest.pipelineRanks < 1 || manifest.virtualStages < 1 ||
      manifest.microBatches < 1 || !lists ||
      int(lists.size()) != manifest.pipelineRanks) {
    error = "the module's loom.pipeline has no schedule (build it with loomc "
            "and a pp mesh axis, or run loom-split-stages and "
            "loom-schedule-pipeline)";
    return false;
  }
  for (Attribute list : lists) {
    manifest.actions.emplace_back();
    for (Attribute a : cast<ArrayAttr>(list))
      manifest.actions.back().push_back(cast<StringAttr>(a).str());
  }
  MeshOp mesh;
  for (auto fn : module.getOps<func::FuncOp>())
    if (auto ref = fn->getAttrOfType<FlatSymbolRefAttr>(
            LoomDialect::kPartitionedAttrName))
      mesh = module.lookupSymbol<MeshOp>(ref);
  if (!mesh) {
    error = "the pipeline's stage programs are not partitioned for a mesh "
            "(loomc partitions them for the mesh with the pp axis)";
    return false;
  }
  addMeshAxes(mesh, manifest);
  const char *kinds[] = {"forward", "backward_input", "backward_weight",
                         "update"};
  int stages = manifest.pipelineRanks * manifest.virtualStages;
  for (int s = 0; s < stages; ++s)
    for (const char *kind : kinds) {
      std::string name = llvm::formatv("stage{0}_{1}", s, kind).str();
      auto fn = module.lookupSymbol<func::FuncOp>(name);
      if (!fn)
        continue;
      std::unique_ptr<Executor> exec = compile(name);
      if (!exec)
        return false;
      program::StageProgram p;
      p.stage = s;
      p.kind = kind;
      p.function = name;
      if (!describeProgram(fn, exec->getArguments(), exec->getResults(), mesh,
                           p.arguments, p.results, constants, error))
        return false;
      manifest.programs.push_back(std::move(p));
      execs.push_back(std::move(exec));
    }
  if (manifest.programs.empty()) {
    error = "the pipelined module has no stage programs";
    return false;
  }
  return true;
}

/// Data inputs the micro-batches do not split (loom.batch_whole_inputs):
/// every micro-batch reads their whole entry.
void markWholeBatchInputs(ModuleOp module, program::Manifest &manifest) {
  auto names = module->getAttrOfType<ArrayAttr>(
      LoomDialect::kBatchWholeInputsAttrName);
  if (!names)
    return;
  auto mark = [&](std::vector<program::Value> &values) {
    for (program::Value &v : values)
      if (v.parameter.empty() &&
          llvm::is_contained(names, StringAttr::get(module.getContext(),
                                                    v.name)))
        v.wholeBatch = true;
  };
  mark(manifest.arguments);
  for (program::StageProgram &p : manifest.programs)
    mark(p.arguments);
}

/// The manifest of `module`'s step (@train_step, or a pipeline's stage
/// programs), each function compiled by `compile`.
bool describeStep(
    ModuleOp module,
    const std::function<std::unique_ptr<Executor>(const std::string &)> &compile,
    program::Manifest &manifest, std::vector<std::unique_ptr<Executor>> &execs,
    std::string &constants, std::string &error) {
  if (module->hasAttr(LoomDialect::kPipelineAttrName) &&
      !module.lookupSymbol("train_step")) {
    if (!describePipeline(module, compile, manifest, execs, constants, error))
      return false;
    markWholeBatchInputs(module, manifest);
    return true;
  }
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  if (!step) {
    error = "the module has no @train_step (build it with loomc --train or "
            "loom-opt --loom-build-train-step)";
    return false;
  }
  MeshOp mesh = describeStepMesh(module, step, manifest);
  std::unique_ptr<Executor> exec = compile("train_step");
  if (!exec)
    return false;
  if (!describeProgram(step, exec->getArguments(), exec->getResults(), mesh,
                       manifest.arguments, manifest.results, constants, error))
    return false;
  markWholeBatchInputs(module, manifest);
  execs.push_back(std::move(exec));
  return true;
}

} // namespace

bool mlir::loom::compileStep(ModuleOp module, const ExecutorOptions &options,
                             CompiledStep &out, std::string &error) {
  auto start = std::chrono::steady_clock::now();
  std::string constants;
  out.cached = true;
  auto compile = [&](const std::string &name) {
    std::unique_ptr<Executor> exec =
        Executor::create(module, name, options, error);
    if (exec)
      out.cached &= exec->fromCache();
    return exec;
  };
  if (!describeStep(module, compile, out.manifest, out.executors, constants,
                    error))
    return false;
  // Dense constants stay in memory (an executable writes them beside it).
  if (!constants.empty())
    out.manifest.inMemoryFiles["train.constants.bin"] = std::move(constants);
  for (const auto &exec : out.executors)
    out.entries[exec->getEntryName()] = exec->getPackedEntry();
  out.compileSeconds = std::chrono::duration<double>(
                           std::chrono::steady_clock::now() - start)
                           .count();
  return true;
}

bool mlir::loom::writeExecutable(ModuleOp module, StringRef dir,
                                 const ExecutableOptions &options,
                                 std::string &error, double *seconds) {
  auto start = std::chrono::steady_clock::now();
  ExecutorOptions executor = options.executor;
  // The objects also seed loom-run's compile cache: `loom-run ARTIFACT`
  // then links them instead of compiling the step again.
  executor.cacheDir = path(dir, "cache");
  program::Manifest manifest;
  std::string constants;
  std::vector<std::string> objects;
  std::vector<std::unique_ptr<Executor>> execs;
  bool pipelined = module->hasAttr(LoomDialect::kPipelineAttrName);
  auto compile = [&](const std::string &name) {
    ExecutorOptions o = executor;
    o.objectFile = path(dir, (name == "train_step" ? "train" : name) + ".o");
    std::unique_ptr<Executor> exec = Executor::create(module, name, o, error);
    if (exec)
      objects.insert(objects.end(), exec->getObjectFiles().begin(),
                     exec->getObjectFiles().end());
    return exec;
  };
  if (!describeStep(module, compile, manifest, execs, constants, error))
    return false;
  if ((!constants.empty() &&
       !writeFile(path(dir, "train.constants.bin"), constants, error)) ||
      !writeFile(path(dir, "train.manifest"),
                 program::printManifest(manifest), error))
    return false;
  bool linked =
      copyLibraries(options, dir, {"libloom_runtime.so", "libloom_blas.so"},
                    error) &&
      link(options, objects, {"loom_blas", "loom_runtime"}, path(dir, "train"),
           pipelined, error);
  for (const std::string &object : objects)
    llvm::sys::fs::remove(object);
  if (seconds)
    *seconds = std::chrono::duration<double>(
                   std::chrono::steady_clock::now() - start)
                   .count();
  return linked;
}

bool mlir::loom::writeCudaExecutable(ModuleOp module, ModuleOp lowered,
                                     StringRef dir,
                                     const ExecutableOptions &options,
                                     std::string &error, double *seconds) {
  auto start = std::chrono::steady_clock::now();
  if (module->hasAttr(LoomDialect::kPipelineAttrName)) {
    error = "pipelined GPU programs are not supported yet (compile the "
            "pipeline for the CPU, or the step without a pp axis)";
    return false;
  }
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  if (!step) {
    error = "the module has no @train_step to compile";
    return false;
  }
  program::Manifest manifest;
  manifest.device = "cuda";
  MeshOp mesh = describeStepMesh(module, step, manifest);
  SmallVector<ValueInfo> argInfos, resultInfos;
  std::string constants;
  if (!describeFunction(module, "train_step", argInfos, resultInfos, error) ||
      !describeProgram(step, argInfos, resultInfos, mesh, manifest.arguments,
                       manifest.results, constants, error))
    return false;
  markWholeBatchInputs(module, manifest);

  // The host code (kernels embedded as cubins) for a portable x86-64 level:
  // it runs on the GPU machine, not here.
  DialectRegistry registry;
  registerAllToLLVMIRTranslations(registry);
  lowered.getContext()->appendDialectRegistry(registry);
  {
    static std::once_flag once;
    std::call_once(once, [] {
      llvm::InitializeNativeTarget();
      llvm::InitializeNativeTargetAsmPrinter();
    });
  }
  ObjectCodeOptions code;
  code.optLevel = options.executor.optLevel;
  code.threads = options.executor.compileThreads;
  code.cpu = "x86-64-v2";
  auto compiled = compileToObjects(lowered, "train_step", code, error);
  if (!compiled) {
    error = "compiling the GPU program's host code: " + error;
    return false;
  }
  std::vector<std::string> objects;
  for (auto [i, bytes] : llvm::enumerate(*compiled)) {
    objects.push_back(path(dir, "train.cuda." + std::to_string(i) + ".o"));
    if (!writeFile(objects.back(), bytes, error))
      return false;
  }
  if ((!constants.empty() &&
       !writeFile(path(dir, "train.constants.bin"), constants, error)) ||
      !writeFile(path(dir, "train.manifest"), program::printManifest(manifest),
                 error))
    return false;
  bool linked =
      copyLibraries(options, dir, {"libloom_runtime.so", "libloom_cuda.so"},
                    error) &&
      link(options, objects, {"loom_cuda", "loom_runtime"}, path(dir, "train"),
           /*exportEntries=*/false, error);
  for (const std::string &object : objects)
    llvm::sys::fs::remove(object);
  if (seconds)
    *seconds = std::chrono::duration<double>(
                   std::chrono::steady_clock::now() - start)
                   .count();
  return linked;
}
