//===- Executor.cpp - Compile and run a loom function on the CPU ----------===//

#include "loom/Execution/Executor.h"
#include "loom/Execution/LLVMPipeline.h"

#include "loom/Codegen/CPU/Passes.h"
#include "loom/Codegen/CUDA/Passes.h"
#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/kernels.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/SHA256.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/TargetSelect.h"

#include <array>
#include <atomic>
#include <chrono>
#include <thread>
#include <cerrno>
#include <csignal>
#include <unistd.h>
#include <cstdlib>
#include <malloc.h>
#include <mutex>

using namespace mlir;
using namespace mlir::loom;

Executor::~Executor() = default;


namespace {

void initializeNativeTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    // Compiled code allocates and frees the same large temporaries every
    // call; glibc would return them to the kernel each time (mmap/munmap)
    // and fault every page back in on the next call.
    mallopt(M_MMAP_THRESHOLD, 1 << 30);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
  });
}

/// Collects diagnostics into a string while alive.
struct DiagnosticCollector {
  DiagnosticCollector(MLIRContext *ctx, std::string &out)
      : handler(ctx, [&out](Diagnostic &diag) {
          if (diag.getSeverity() != DiagnosticSeverity::Error)
            return success();
          std::string text;
          llvm::raw_string_ostream os(text);
          os << diag.getLocation() << ": " << diag;
          for (const Diagnostic &note : diag.getNotes())
            os << "\n  note: " << note;
          if (!out.empty())
            out += "\n";
          out += text;
          return success();
        }) {}
  ScopedDiagnosticHandler handler;
};

} // namespace

namespace {

/// What the caller binds: each argument's and result's type, name,
/// parameter, initial value and index bound.
LogicalResult describeSignature(ModuleOp module, func::FuncOp fn,
                                SmallVectorImpl<ValueInfo> &arguments,
                                SmallVectorImpl<ValueInfo> &results,
                                std::string &error) {
  StringRef function = fn.getName();
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    ValueInfo info;
    info.type = dyn_cast<RankedTensorType>(fn.getArgumentTypes()[i]);
    if (!info.type || !info.type.hasStaticShape()) {
      error = llvm::formatv("argument #{0} of @{1} is not a static tensor", i,
                            function)
                  .str();
      return failure();
    }
    info.name = "arg" + std::to_string(i);
    if (auto name = fn.getArgAttrOfType<StringAttr>(i, LoomDialect::kNameAttrName))
      info.name = name.str();
    if (auto param =
            fn.getArgAttrOfType<FlatSymbolRefAttr>(i, LoomDialect::kParamAttrName)) {
      info.parameter = param.getValue().str();
      info.name = info.parameter;
      if (auto decl = module.lookupSymbol<ParameterOp>(param)) {
        if (decl.getInitialValue())
          info.initialValue = *decl.getInitialValue();
        info.trainable = decl.getTrainable();
      }
    }
    if (auto bound = fn.getArgAttrOfType<IntegerAttr>(
            i, LoomDialect::kIndexBoundAttrName))
      info.indexBound = bound.getInt();
    arguments.push_back(info);
  }
  for (unsigned i = 0; i < fn.getNumResults(); ++i) {
    ValueInfo info;
    info.type = dyn_cast<RankedTensorType>(fn.getResultTypes()[i]);
    if (!info.type || !info.type.hasStaticShape()) {
      error = llvm::formatv("result #{0} of @{1} is not a static tensor", i,
                            function)
                  .str();
      return failure();
    }
    info.name = "result" + std::to_string(i);
    if (auto name =
            fn.getResultAttrOfType<StringAttr>(i, LoomDialect::kNameAttrName))
      info.name = name.str();
    if (auto param = fn.getResultAttrOfType<FlatSymbolRefAttr>(
            i, LoomDialect::kParamAttrName)) {
      info.parameter = param.getValue().str();
      if (!fn.getResultAttrOfType<StringAttr>(i, LoomDialect::kNameAttrName))
        info.name = info.parameter;
    }
    results.push_back(info);
  }
  return success();
}

} // namespace

bool mlir::loom::describeFunction(ModuleOp module, StringRef function,
                                  SmallVectorImpl<ValueInfo> &arguments,
                                  SmallVectorImpl<ValueInfo> &results,
                                  std::string &error) {
  auto fn = module.lookupSymbol<func::FuncOp>(function);
  if (!fn) {
    error = ("the module has no @" + function).str();
    return false;
  }
  return succeeded(describeSignature(module, fn, arguments, results, error));
}

namespace {

/// A copy of `module` with only `function`, lowered by the CPU pipeline.
OwningOpRef<ModuleOp> lowerToLLVM(ModuleOp module, StringRef function,
                                  const ExecutorOptions &options,
                                  std::string &error) {
  MLIRContext *ctx = module.getContext();
  // The pipeline relies on interfaces registered as external models and
  // dialect extensions (bufferization, conversion to LLVM).
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  ctx->appendDialectRegistry(registry);

  OwningOpRef<ModuleOp> lowered = module.clone();
  // Compile only the entry function (loom functions do not call each other).
  for (auto other : llvm::make_early_inc_range(lowered->getOps<func::FuncOp>()))
    if (other.getName() != function)
      other.erase();
  DiagnosticCollector collect(ctx, error);
  PassManager pm(ctx);
  if (options.timePasses)
    pm.enableTiming();
  CpuPipelineOptions pipelineOptions;
  pipelineOptions.useBlas = options.useBlas;
  pipelineOptions.splitFunctions = options.splitFunctions;
  pipelineOptions.approximateMath = options.approximateMath;
  pipelineOptions.convAsGemm = options.convAsGemm;
  pipelineOptions.convLibrary = options.convLibrary;
  pipelineOptions.parallelLoops = options.parallelLoops;
  if (options.gpuLoopsOnCpu)
    buildLoomCudaLoopsOnCpuPipeline(pm);
  else
    buildLoomCpuPipeline(pm, pipelineOptions);
  if (failed(pm.run(*lowered))) {
    if (error.empty())
      error = "lowering to LLVM failed";
    return nullptr;
  }
  return lowered;
}

llvm::CodeGenOptLevel codegenLevel(const ExecutorOptions &options) {
  return options.optLevel >= 3 ? llvm::CodeGenOptLevel::Aggressive
                               : llvm::CodeGenOptLevel::Default;
}

/// Machine code for this CPU (vector width, FMA): the objects of `lowered`.
std::optional<std::vector<std::string>>
compileObjects(ModuleOp lowered, StringRef entry,
               const ExecutorOptions &options, std::string &error) {
  MLIRContext *ctx = lowered.getContext();
  initializeNativeTarget();
  registerBuiltinDialectTranslation(*ctx);
  registerLLVMDialectTranslation(*ctx);
  ObjectCodeOptions code;
  code.optLevel = options.optLevel;
  code.codegenLevel = codegenLevel(options);
  code.threads = options.compileThreads;
  code.timePasses = options.timePasses;
  auto objects = compileToObjects(lowered, entry, code, error);
  if (!objects)
    error = "compilation failed: " + error;
  return objects;
}

/// The allocator compiled code calls (memref.alloc becomes malloc or
/// aligned_alloc, memref.dealloc free): the C library's, counting the bytes
/// live and their high-water mark (measuredTemporaries). Sizes are
/// malloc_usable_size, so what free subtracts is what malloc added.
std::atomic<int64_t> liveBytes{0}, peakBytes{0};

void noteAllocated(void *p) {
  if (!p)
    return;
  int64_t now = liveBytes += static_cast<int64_t>(malloc_usable_size(p));
  int64_t peak = peakBytes.load();
  while (now > peak && !peakBytes.compare_exchange_weak(peak, now)) {
  }
}
void *countingMalloc(size_t n) {
  void *p = std::malloc(n);
  noteAllocated(p);
  return p;
}
void *countingAlignedAlloc(size_t alignment, size_t n) {
  void *p = std::aligned_alloc(alignment, n);
  noteAllocated(p);
  return p;
}
void countingFree(void *p) {
  if (p)
    liveBytes -= static_cast<int64_t>(malloc_usable_size(p));
  std::free(p);
}

/// The runtime's entry points compiled code calls: BLAS matmuls, memref
/// copies, and one declaration of each collective per element type (the
/// symbol names it; one C function each takes the type as an argument).
llvm::orc::SymbolMap runtimeSymbols(llvm::orc::MangleAndInterner interner) {
  llvm::orc::SymbolMap symbols;
  auto add = [&](const Twine &name, void *fn) {
    symbols[interner(name.str())] = {llvm::orc::ExecutorAddr::fromPtr(fn),
                                     llvm::JITSymbolFlags::Exported};
  };
  add("_mlir_ciface_loom_rt_batch_matmul_f32",
      reinterpret_cast<void *>(&_mlir_ciface_loom_rt_batch_matmul_f32));
  add("_mlir_ciface_loom_rt_batch_matmul_f64",
      reinterpret_cast<void *>(&_mlir_ciface_loom_rt_batch_matmul_f64));
  add("_mlir_ciface_loom_rt_batch_matmul_bf16_f32",
      reinterpret_cast<void *>(&_mlir_ciface_loom_rt_batch_matmul_bf16_f32));
  add("_mlir_ciface_loom_rt_batch_matmul_f16_f32",
      reinterpret_cast<void *>(&_mlir_ciface_loom_rt_batch_matmul_f16_f32));
  add("_mlir_ciface_loom_rt_batch_matmul_bf16",
      reinterpret_cast<void *>(&_mlir_ciface_loom_rt_batch_matmul_bf16));
  add("_mlir_ciface_loom_rt_batch_matmul_f16",
      reinterpret_cast<void *>(&_mlir_ciface_loom_rt_batch_matmul_f16));
  add("_mlir_ciface_loom_rt_conv_f32",
      reinterpret_cast<void *>(&_mlir_ciface_loom_rt_conv_f32));
  add("_mlir_ciface_loom_rt_conv_bf16",
      reinterpret_cast<void *>(&_mlir_ciface_loom_rt_conv_bf16));
  add("memrefCopy", reinterpret_cast<void *>(&memrefCopy));
  add("loom_rt_parallel_for", reinterpret_cast<void *>(&loom_rt_parallel_for));
  static const char *elements[] = {"f16", "bf16", "f32", "f64", "i1",
                                   "i8",  "i16",  "i32", "i64"};
  for (const char *e : elements) {
    std::string suffix = std::string("_") + e;
    add("_mlir_ciface_loom_rt_all_reduce" + suffix,
        reinterpret_cast<void *>(&_mlir_ciface_loom_rt_all_reduce));
    add("_mlir_ciface_loom_rt_all_gather" + suffix,
        reinterpret_cast<void *>(&_mlir_ciface_loom_rt_all_gather));
    add("_mlir_ciface_loom_rt_reduce_scatter" + suffix,
        reinterpret_cast<void *>(&_mlir_ciface_loom_rt_reduce_scatter));
    add("_mlir_ciface_loom_rt_all_to_all" + suffix,
        reinterpret_cast<void *>(&_mlir_ciface_loom_rt_all_to_all));
    add("_mlir_ciface_loom_rt_send_recv" + suffix,
        reinterpret_cast<void *>(&_mlir_ciface_loom_rt_send_recv));
    add("_mlir_ciface_loom_rt_all_reduce_start" + suffix,
        reinterpret_cast<void *>(&_mlir_ciface_loom_rt_all_reduce_start));
    add("_mlir_ciface_loom_rt_all_gather_start" + suffix,
        reinterpret_cast<void *>(&_mlir_ciface_loom_rt_all_gather_start));
    add("_mlir_ciface_loom_rt_reduce_scatter_start" + suffix,
        reinterpret_cast<void *>(&_mlir_ciface_loom_rt_reduce_scatter_start));
    add("_mlir_ciface_loom_rt_collective_wait" + suffix,
        reinterpret_cast<void *>(&_mlir_ciface_loom_rt_collective_wait));
  }
  for (const char *e : {"f16", "bf16", "f32", "f64"})
    for (const char *i : {"i32", "i64"})
      add(std::string("_mlir_ciface_loom_rt_top_k_indices_") + e + "_" + i,
          reinterpret_cast<void *>(&_mlir_ciface_loom_rt_top_k_indices));
  add("loom_rt_group_index", reinterpret_cast<void *>(&loom_rt_group_index));
  add("__truncsfbf2", reinterpret_cast<void *>(&__truncsfbf2));
  add("__truncdfbf2", reinterpret_cast<void *>(&__truncdfbf2));
  add("malloc", reinterpret_cast<void *>(&countingMalloc));
  add("aligned_alloc", reinterpret_cast<void *>(&countingAlignedAlloc));
  add("free", reinterpret_cast<void *>(&countingFree));
  return symbols;
}

/// The machine-code cache (ExecutorOptions::cacheDir): objects named by a
/// hash of everything that determines them.
class ObjectCache {
public:
  ObjectCache(StringRef dir, ModuleOp lowered, const ExecutorOptions &options)
      : dir(dir.str()) {
    std::string text;
    llvm::raw_string_ostream os(text);
    lowered.print(os);
    os << "\nopt " << options.optLevel << " cpu " << llvm::sys::getHostCPUName()
       << " llvm " << LLVM_VERSION_STRING;
    for (const auto &f : llvm::sys::getHostCPUFeatures())
      os << (f.second ? " +" : " -") << f.first();
    std::array<uint8_t, 32> hash = llvm::SHA256::hash(
        ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(text.data()),
                          text.size()));
    key = llvm::toHex(hash, /*LowerCase=*/true);
  }

  std::string object() const { return path(".o"); }
  std::string lock() const { return path(".lock"); }

  /// The cached objects, if the entry exists and is whole.
  std::optional<std::vector<std::string>> load() const {
    auto buffer = llvm::MemoryBuffer::getFile(object());
    if (!buffer)
      return std::nullopt;
    return unpack((*buffer)->getBuffer(), key);
  }

  /// Takes the lock (true), or another process holds it (false). The lock
  /// names its holder: "<host> <pid>".
  bool tryLock() const {
    if (llvm::sys::fs::create_directories(dir, /*IgnoreExisting=*/true,
                                          llvm::sys::fs::all_all))
      return false;
    int fd;
    if (llvm::sys::fs::openFileForWrite(lock(), fd,
                                        llvm::sys::fs::CD_CreateNew))
      return false;
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << hostName() << " " << ::getpid();
    return true;
  }

  /// Waits while another live process holds the lock; its objects, or none
  /// when it is gone without them (killed while compiling: the lock is
  /// removed) or took longer than `seconds`.
  std::optional<std::vector<std::string>> waitForOther(int seconds) const {
    for (int waited = 0; waited < seconds * 20; ++waited) {
      if (auto objects = load())
        return objects;
      if (!llvm::sys::fs::exists(lock()))
        return load();
      if (waited % 20 == 0 && holderDied()) {
        unlock();
        return std::nullopt;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return std::nullopt;
  }

  /// Publishes `objects` under the key (write, then rename).
  void store(llvm::ArrayRef<std::string> objects) const {
    std::string tmp = path(".o.tmp" + std::to_string(::getpid()));
    {
      std::error_code ec;
      llvm::raw_fd_ostream os(tmp, ec);
      if (ec)
        return;
      os << kMagic << key << "\n" << digest(objects) << "\n"
         << objects.size() << "\n";
      for (const std::string &o : objects)
        os << o.size() << "\n";
      for (const std::string &o : objects)
        os << o;
    }
    if (llvm::sys::fs::rename(tmp, object()))
      llvm::sys::fs::remove(tmp);
  }

  void unlock() const { llvm::sys::fs::remove(lock()); }

private:
  static std::string hostName() {
    char name[256] = {0};
    ::gethostname(name, sizeof(name) - 1);
    return name;
  }
  /// Whether the lock's holder ran on this host and no longer exists.
  bool holderDied() const {
    auto text = llvm::MemoryBuffer::getFile(lock());
    if (!text)
      return false;
    auto [host, pid] = (*text)->getBuffer().trim().split(' ');
    int id;
    if (host != hostName() || pid.getAsInteger(10, id))
      return false;
    return ::kill(id, 0) != 0 && errno == ESRCH;
  }

  /// An entry: kMagic, the key it was compiled for, the SHA-256 of its
  /// objects, the number of objects and each one's size (one per line),
  /// then the objects. The entry is used only when it names this key and
  /// its objects hash as written: a file named after the key is not enough
  /// (issue 45: another artifact's valid object copied under this key's
  /// name was linked and trained with).
  static constexpr llvm::StringLiteral kMagic = "loom-objects 2\n";
  static std::string digest(llvm::ArrayRef<std::string> objects) {
    llvm::SHA256 h;
    for (const std::string &o : objects) {
      std::string size = std::to_string(o.size()) + "\n";
      h.update(llvm::ArrayRef<uint8_t>(
          reinterpret_cast<const uint8_t *>(size.data()), size.size()));
      h.update(llvm::ArrayRef<uint8_t>(
          reinterpret_cast<const uint8_t *>(o.data()), o.size()));
    }
    std::array<uint8_t, 32> d = h.final();
    return llvm::toHex(d, /*LowerCase=*/true);
  }
  static std::optional<std::vector<std::string>> unpack(StringRef bytes,
                                                        StringRef key) {
    if (!bytes.consume_front(kMagic))
      return std::nullopt;
    auto line = [&]() {
      auto [first, rest] = bytes.split('\n');
      bytes = rest;
      return first;
    };
    if (line() != key)
      return std::nullopt;
    std::string want = line().str();
    auto number = [&](uint64_t &n) { return !line().getAsInteger(10, n); };
    uint64_t count;
    if (!number(count) || count == 0 || count > 4096)
      return std::nullopt;
    std::vector<uint64_t> sizes(count);
    for (uint64_t &size : sizes)
      if (!number(size))
        return std::nullopt;
    std::vector<std::string> objects;
    for (uint64_t size : sizes) {
      if (bytes.size() < size)
        return std::nullopt;
      objects.push_back(bytes.take_front(size).str());
      bytes = bytes.drop_front(size);
    }
    if (!bytes.empty() || digest(objects) != want)
      return std::nullopt;
    return objects;
  }

  std::string path(StringRef suffix) const {
    SmallString<256> p(dir);
    llvm::sys::path::append(p, key + suffix);
    return std::string(p);
  }
  std::string dir, key;
};

/// A JIT that only links `objects` (no compilation) against the runtime.
std::unique_ptr<llvm::orc::LLJIT>
loadObjects(llvm::ArrayRef<std::string> objects,
            const ExecutorOptions &options, std::string &error) {
  initializeNativeTarget();
  auto builder = hostMachineBuilder(codegenLevel(options));
  if (!builder) {
    error = "cannot detect the host CPU: " + llvm::toString(builder.takeError());
    return nullptr;
  }
  auto jit = llvm::orc::LLJITBuilder()
                 .setJITTargetMachineBuilder(std::move(*builder))
                 .create();
  if (!jit) {
    error = "cannot create a JIT: " + llvm::toString(jit.takeError());
    return nullptr;
  }
  llvm::orc::JITDylib &dylib = (*jit)->getMainJITDylib();
  llvm::orc::MangleAndInterner interner(dylib.getExecutionSession(),
                                        (*jit)->getDataLayout());
  llvm::Error err = dylib.define(
      llvm::orc::absoluteSymbols(runtimeSymbols(interner)));
  if (!err) {
    auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
        (*jit)->getDataLayout().getGlobalPrefix());
    if (process)
      dylib.addGenerator(std::move(*process));
    else
      err = process.takeError();
  }
  for (auto [i, object] : llvm::enumerate(objects))
    if (!err)
      err = (*jit)->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(
          object, "loom-step-" + std::to_string(i) + ".o"));
  if (err) {
    error = "cannot load the compiled objects: " + llvm::toString(std::move(err));
    return nullptr;
  }
  return std::move(*jit);
}

} // namespace

bool Executor::useObjects(llvm::ArrayRef<std::string> objects,
                          const ExecutorOptions &options, std::string &error) {
  loaded = loadObjects(objects, options, error);
  if (!loaded)
    return false;
  // Looking the entry up links the objects: unresolved symbols and
  // relocation errors surface here, and run times measure running.
  auto fn = loaded->lookup("_mlir__mlir_ciface_" + entry);
  if (!fn) {
    error = "the compiled objects have no @" + entry + ": " +
            llvm::toString(fn.takeError());
    loaded.reset();
    return false;
  }
  packedEntry = fn->toPtr<void (*)(void **)>();
  return true;
}

std::unique_ptr<Executor> Executor::create(ModuleOp module,
                                           StringRef function,
                                           const ExecutorOptions &options,
                                           std::string &error) {
  auto fn = module.lookupSymbol<func::FuncOp>(function);
  if (!fn || fn.isExternal()) {
    error = "the module has no function @" + function.str() + "; it has:";
    for (auto f : module.getOps<func::FuncOp>())
      error += " @" + f.getName().str();
    return nullptr;
  }
  std::unique_ptr<Executor> executor(new Executor());
  executor->entry = function.str();
  if (failed(describeSignature(module, fn, executor->arguments,
                               executor->results, error)))
    return nullptr;
  OwningOpRef<ModuleOp> lowered = lowerToLLVM(module, function, options, error);
  if (!lowered)
    return nullptr;
  std::optional<std::vector<std::string>> objects =
      options.cacheDir.empty()
          ? compileObjects(*lowered, function, options, error)
          : executor->objectsThroughCache(*lowered, function, options, error);
  if (!objects)
    return nullptr;
  if (!options.objectFile.empty() &&
      !executor->writeObjectFiles(*objects, options.objectFile, error))
    return nullptr;
  if (!executor->cached && !executor->useObjects(*objects, options, error))
    return nullptr;
  return executor;
}

/// Compiled once: a cached object, or the one another process (another
/// rank) is compiling, or compile and publish it. A cache that cannot be
/// read or written only costs the compilation. Cached objects are linked
/// here (`cached`); compiled ones are not yet.
std::optional<std::vector<std::string>>
Executor::objectsThroughCache(ModuleOp lowered, StringRef function,
                              const ExecutorOptions &options,
                              std::string &error) {
  ObjectCache cache(options.cacheDir, lowered, options);
  std::string ignored;
  auto linked = [&](std::optional<std::vector<std::string>> objects) {
    cached = objects && useObjects(*objects, options, ignored);
    return cached ? objects : std::nullopt;
  };
  if (auto objects = linked(cache.load()))
    return objects;
  bool owner = cache.tryLock();
  if (!owner) {
    if (auto objects = linked(cache.waitForOther(/*seconds=*/600)))
      return objects;
    // The holder died (its lock is gone) or its object did not load.
    owner = cache.tryLock();
  }
  auto objects = compileObjects(lowered, function, options, error);
  if (owner) {
    if (objects)
      cache.store(*objects);
    cache.unlock();
  }
  return objects;
}

bool Executor::writeObjectFiles(llvm::ArrayRef<std::string> objects,
                                StringRef first, std::string &error) {
  for (auto [i, object] : llvm::enumerate(objects)) {
    SmallString<256> file(first);
    if (i > 0)
      llvm::sys::path::replace_extension(file, "." + std::to_string(i) + ".o");
    std::error_code ec;
    llvm::raw_fd_ostream os(file, ec);
    if (!ec)
      os << object;
    if (ec || os.has_error()) {
      error = "cannot write the object file " + std::string(file);
      return false;
    }
    objectFiles.push_back(std::string(file));
  }
  return true;
}

namespace {
int64_t measuringFrom = 0;
} // namespace

void Executor::beginMeasuringTemporaries() {
  measuringFrom = liveBytes.load();
  peakBytes = measuringFrom;
}

int64_t Executor::measuredTemporaries() {
  return peakBytes.load() - measuringFrom;
}

bool Executor::invoke(MutableArrayRef<void *> packed, std::string &error) {
  if (!packedEntry) {
    error = "@" + entry + " is not compiled";
    return false;
  }
  packedEntry(packed.data());
  return true;
}

std::optional<HostTensor> mlir::loom::readInitialValue(Attribute value,
                                                       RankedTensorType type,
                                                       StringRef name,
                                                       StringRef baseDir,
                                                       std::string &error) {
  if (!value) {
    error = "parameter @" + name.str() + " has no initial value";
    return std::nullopt;
  }
  if (auto elements = dyn_cast<ElementsAttr>(value))
    return HostTensor::fromAttr(elements, error);
  auto external = dyn_cast<ExternalDataAttr>(value);
  if (!external) {
    error = "parameter @" + name.str() + " has an unsupported initial value";
    return std::nullopt;
  }
  SmallString<256> path(external.getPath().getValue());
  if (llvm::sys::path::is_relative(path)) {
    SmallString<256> full(baseDir);
    llvm::sys::path::append(full, path);
    path = full;
  }
  HostTensor tensor(type);
  // A slice past the file's end would be mapped anyway (and fault when
  // read): check it against the file's size first.
  uint64_t fileSize = 0;
  if (std::error_code ec = llvm::sys::fs::file_size(path, fileSize)) {
    error = llvm::formatv("cannot read parameter @{0}: {1}: {2}", name, path,
                          ec.message())
                .str();
    return std::nullopt;
  }
  if (external.getOffset() < 0 ||
      uint64_t(external.getOffset()) + uint64_t(tensor.byteSize()) > fileSize) {
    error = llvm::formatv("parameter @{0}: {1} bytes at offset {2} do not fit "
                          "in {3}, which has {4} bytes (a params file of "
                          "another model, or truncated?)",
                          name, tensor.byteSize(), external.getOffset(), path,
                          fileSize)
                .str();
    return std::nullopt;
  }
  auto buffer = llvm::MemoryBuffer::getFileSlice(path, tensor.byteSize(),
                                                 external.getOffset());
  if (!buffer || (*buffer)->getBufferSize() != tensor.byteSize()) {
    error = llvm::formatv("cannot read {0} bytes of parameter @{1} at offset "
                          "{2} of {3}",
                          tensor.byteSize(), name, external.getOffset(), path)
                .str();
    return std::nullopt;
  }
  std::memcpy(tensor.data(), (*buffer)->getBufferStart(), tensor.byteSize());
  return tensor;
}

std::optional<HostTensor> Executor::parameterValue(unsigned index,
                                                   StringRef baseDir,
                                                   std::string &error) const {
  const ValueInfo &info = arguments[index];
  return readInitialValue(info.initialValue, info.type, info.parameter,
                          baseDir, error);
}

namespace {
/// A memref descriptor {allocated, aligned, offset, sizes..., strides...}
/// over a contiguous row-major buffer.
std::vector<int64_t> descriptorFor(const HostTensor &t) {
  ArrayRef<int64_t> shape = t.getShape();
  std::vector<int64_t> d(3 + 2 * shape.size());
  auto ptr = reinterpret_cast<int64_t>(t.data());
  d[0] = d[1] = ptr;
  d[2] = 0;
  int64_t stride = 1;
  for (int64_t i = static_cast<int64_t>(shape.size()) - 1; i >= 0; --i) {
    d[3 + i] = shape[i];
    d[3 + shape.size() + i] = stride;
    stride *= shape[i];
  }
  return d;
}
} // namespace

bool Executor::run(ArrayRef<const HostTensor *> args,
                   SmallVectorImpl<HostTensor> &outs, std::string &error) {
  if (args.size() != arguments.size()) {
    error = llvm::formatv("@{0} takes {1} arguments, {2} given", entry,
                          arguments.size(), args.size())
                .str();
    return false;
  }
  for (auto [i, arg] : llvm::enumerate(args)) {
    if (!arg || arg->getType() != arguments[i].type) {
      error = llvm::formatv("argument #{0} ('{1}') must be {2}, got {3}", i,
                            arguments[i].name, arguments[i].type,
                            arg ? Type(arg->getType()) : Type())
                  .str();
      return false;
    }
  }
  outs.clear();
  for (const ValueInfo &r : results)
    outs.emplace_back(r.type);

  std::vector<std::vector<int64_t>> descriptors;
  for (const HostTensor *arg : args)
    descriptors.push_back(descriptorFor(*arg));
  for (const HostTensor &out : outs)
    descriptors.push_back(descriptorFor(out));
  std::vector<void *> pointers;
  for (auto &d : descriptors)
    pointers.push_back(d.data());
  std::vector<void *> packed;
  for (void *&p : pointers)
    packed.push_back(&p);
  if (!invoke(packed, error))
    return false;
  return true;
}
