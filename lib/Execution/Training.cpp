//===- Training.cpp - Training artifacts and the CPU training loop --------===//

#include "loom/Execution/Training.h"

#include "loom/Execution/Distributed.h"

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Execution/TensorIO.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <unistd.h>
#include <map>
#include <random>

using namespace mlir;
using namespace mlir::loom;

//===----------------------------------------------------------------------===//
// Initialisation
//===----------------------------------------------------------------------===//

static uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static uint64_t fnv1a(StringRef s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : s)
    h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return h;
}

HostTensor mlir::loom::initialParameterValue(StringRef name,
                                             RankedTensorType type,
                                             uint64_t seed) {
  HostTensor t(type);
  StringRef lower = name;
  auto endsWith = [&](StringRef suffix) {
    return lower.ends_with_insensitive(suffix);
  };
  if (endsWith("bias") || endsWith("beta"))
    return t; // zeros
  if (type.getRank() <= 1 &&
      (endsWith("weight") || endsWith("gamma") || endsWith("scale"))) {
    for (int64_t i = 0; i < t.getNumElements(); ++i)
      t.setFromDouble(i, 1.0);
    return t;
  }
  int64_t fanIn = 1;
  for (int64_t d = 1; d < type.getRank(); ++d)
    fanIn *= type.getDimSize(d);
  if (type.getRank() <= 1)
    fanIn = std::max<int64_t>(1, type.getNumElements());
  double bound = 1.0 / std::sqrt(static_cast<double>(fanIn));
  uint64_t state = seed ^ fnv1a(name);
  for (int64_t i = 0; i < t.getNumElements(); ++i) {
    double u = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
    t.setFromDouble(i, (2.0 * u - 1.0) * bound);
  }
  return t;
}

//===----------------------------------------------------------------------===//
// Artifact
//===----------------------------------------------------------------------===//

bool mlir::loom::writeTrainingArtifact(ModuleOp module, StringRef dir,
                                       const ArtifactOptions &options,
                                       std::string &error) {
  MLIRContext *ctx = module.getContext();
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    error = "cannot create " + dir.str() + ": " + ec.message();
    return false;
  }
  SmallString<256> binPath(dir);
  llvm::sys::path::append(binPath, "params.bin");
  std::error_code ec;
  llvm::raw_fd_ostream bin(binPath, ec, llvm::sys::fs::OF_None);
  if (ec) {
    error = "cannot write " + std::string(binPath) + ": " + ec.message();
    return false;
  }
  uint64_t offset = 0;
  for (ParameterOp param : module.getOps<ParameterOp>()) {
    RankedTensorType type = param.getType();
    std::optional<Attribute> init = param.getInitialValue();
    std::optional<HostTensor> value;
    bool initialise = !init || (!options.initFromModel && param.getTrainable());
    if (initialise) {
      if (!param.getTrainable()) {
        error = "buffer @" + param.getSymName().str() +
                " (a non-trainable parameter) has no initial value";
        return false;
      }
      value = initialParameterValue(param.getSymName(), type, options.seed);
    } else {
      // Splat values (optimizer state starts at zero) stay in the IR.
      if (auto dense = dyn_cast<DenseElementsAttr>(*init); dense && dense.isSplat())
        continue;
      value = readInitialValue(*init, type, param.getSymName(), "", error);
      if (!value)
        return false;
    }
    // 64-byte aligned records.
    while (offset % 64) {
      bin << '\0';
      ++offset;
    }
    bin.write(value->data(), value->byteSize());
    param.setInitialValueAttr(
        ExternalDataAttr::get(ctx, StringAttr::get(ctx, "params.bin"), offset));
    offset += value->byteSize();
  }
  bin.close();
  if (bin.has_error()) {
    error = "cannot write " + std::string(binPath);
    return false;
  }
  SmallString<256> irPath(dir);
  llvm::sys::path::append(irPath, "train.mlir");
  llvm::raw_fd_ostream ir(irPath, ec, llvm::sys::fs::OF_Text);
  if (ec) {
    error = "cannot write " + std::string(irPath) + ": " + ec.message();
    return false;
  }
  module.print(ir, OpPrintingFlags().enableDebugInfo(false));
  ir << "\n";
  return !ir.has_error();
}

//===----------------------------------------------------------------------===//
// Training loop
//===----------------------------------------------------------------------===//

namespace {
/// One data argument's source.
struct DataSource {
  unsigned arg;
  std::string name;
  RankedTensorType type;     // the argument (with the micro-batch dim)
  RankedTensorType perEntry; // one entry of the file's leading axis
  std::optional<HostTensor> file;
  int64_t entries = 0;
};
} // namespace

static HostTensor syntheticTensor(RankedTensorType type, int64_t bound,
                                  std::mt19937_64 &gen) {
  HostTensor t(type);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int64_t> ints(0, std::max<int64_t>(bound, 1) - 1);
  bool isFloat = isa<FloatType>(type.getElementType());
  for (int64_t i = 0; i < t.getNumElements(); ++i)
    t.setFromDouble(i, isFloat ? real(gen) : double(ints(gen)));
  return t;
}

/// Converts a file's tensor to `element` where that loses nothing
/// meaningful (float64 -> float32 data, int32 <-> int64 labels).
static std::optional<HostTensor> convertData(const HostTensor &t, Type element,
                                             StringRef what,
                                             std::string &error) {
  if (t.getElementType() == element)
    return t;
  bool fromFloat = isa<FloatType>(t.getElementType());
  bool toFloat = isa<FloatType>(element);
  if (fromFloat != toFloat) {
    error = llvm::formatv("{0} holds {1} values but the model expects {2}",
                          what, t.getElementType(), element)
                .str();
    return std::nullopt;
  }
  if (toFloat)
    return t.convertTo(element);
  HostTensor out(t.getType().clone(element));
  for (int64_t i = 0; i < t.getNumElements(); ++i)
    out.setFromDouble(i, static_cast<double>(t.getAsInt(i)));
  return out;
}

bool mlir::loom::runTraining(ModuleOp module, StringRef dir,
                             const TrainOptions &options, TrainResult &result,
                             std::string &error) {
  MLIRContext *ctx = module.getContext();
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  if (!step) {
    error = "the module has no @train_step (build it with loomc --train or "
            "loom-opt --loom-build-train-step)";
    return false;
  }
  int64_t micro = 1;
  if (auto attr = step->getAttrOfType<IntegerAttr>(
          LoomDialect::kMicroBatchesAttrName))
    micro = attr.getInt();

  // A partitioned step runs on its mesh: one rank per device, each holding
  // its shard of every argument (global values are read and written whole).
  std::unique_ptr<DistributedContext> mesh;
  SmallVector<ShardingAttr> argShardings(step.getNumArguments());
  if (auto meshRef = step->getAttrOfType<FlatSymbolRefAttr>(
          LoomDialect::kPartitionedAttrName)) {
    DistributedOptions dopts;
    dopts.timeoutSeconds = options.timeoutSeconds;
    mesh = DistributedContext::create(
        module, module.lookupSymbol<MeshOp>(meshRef), dopts, error);
    if (!mesh)
      return false;
    for (unsigned i = 0; i < step.getNumArguments(); ++i)
      argShardings[i] = step.getArgAttrOfType<ShardingAttr>(
          i, LoomDialect::kShardingAttrName);
  }
  result.rank = mesh ? mesh->rank() : 0;
  auto toLocal = [&](unsigned arg, const HostTensor &global) {
    return mesh ? mesh->localShard(global, argShardings[arg]) : global;
  };

  auto compileStart = std::chrono::steady_clock::now();
  std::unique_ptr<Executor> exec =
      Executor::create(module, "train_step", options.executor, error);
  if (!exec)
    return false;
  result.compileSeconds = std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - compileStart)
                              .count();

  // Parameter store, keyed by symbol (local shards).
  std::map<std::string, HostTensor> store;
  ArrayRef<ValueInfo> args = exec->getArguments();
  ArrayRef<ValueInfo> results = exec->getResults();
  SmallVector<RankedTensorType> globalTypes;
  for (auto [i, info] : llvm::enumerate(args))
    globalTypes.push_back(mesh ? mesh->globalType(info.type, argShardings[i])
                               : info.type);
  std::vector<DataSource> data;
  for (auto [i, info] : llvm::enumerate(args)) {
    if (!info.parameter.empty()) {
      std::optional<HostTensor> value = readInitialValue(
          info.initialValue, globalTypes[i], info.parameter, dir, error);
      if (!value)
        return false;
      store[info.parameter] = toLocal(i, *value);
      continue;
    }
    DataSource source;
    source.arg = i;
    source.name = info.name;
    source.type = globalTypes[i];
    source.perEntry = globalTypes[i];
    if (micro > 1)
      source.perEntry =
          RankedTensorType::get(globalTypes[i].getShape().drop_front(),
                                globalTypes[i].getElementType());
    data.push_back(std::move(source));
  }
  if (results.empty() || !results[0].parameter.empty() ||
      results[0].type.getRank() != 0) {
    error = "@train_step must return the scalar loss first";
    return false;
  }
  for (const ValueInfo &r : llvm::drop_begin(results))
    if (r.parameter.empty() || !store.count(r.parameter)) {
      error = "result '" + r.name +
              "' of @train_step updates no parameter argument (loom.param)";
      return false;
    }

  // Data.
  bool synthetic = options.data == "synthetic";
  if (synthetic)
    for (DataSource &source : data)
      if (!isa<FloatType>(source.type.getElementType()) &&
          args[source.arg].indexBound <= 0) {
        error = "synthetic data for integer input '" + source.name +
                "' needs its range: give the argument loom.index_bound "
                "(loomc sets it for token ids and labels) or use --data";
        return false;
      }
  int64_t needed = options.steps * micro;
  for (DataSource &source : data) {
    if (synthetic)
      continue;
    SmallString<256> path(options.data);
    llvm::sys::path::append(path, source.name + ".npy");
    if (!llvm::sys::fs::exists(path)) {
      error = llvm::formatv("no data for input '{0}': {1} does not exist (the "
                            "data directory needs one .npy per input, with a "
                            "leading step axis, shaped [steps, {2}])",
                            source.name, path,
                            llvm::make_range(source.perEntry.getShape().begin(),
                                             source.perEntry.getShape().end()))
                  .str();
      return false;
    }
    std::optional<HostTensor> t = readTensorFile(path, ctx, error);
    if (!t)
      return false;
    ArrayRef<int64_t> shape = t->getShape();
    ArrayRef<int64_t> entry = source.perEntry.getShape();
    if (shape.size() != entry.size() + 1 || shape.drop_front() != entry) {
      std::string got, want;
      llvm::raw_string_ostream g(got), w(want);
      llvm::interleave(shape, g, "x");
      llvm::interleave(entry, w, "x");
      error = llvm::formatv("{0} has shape [{1}] but input '{2}' needs "
                            "[steps x {3}] (a leading step axis, then the "
                            "input's shape)",
                            path, got, source.name, want)
                  .str();
      return false;
    }
    if (shape[0] < needed) {
      error = llvm::formatv("{0} has {1} entries; {2} steps{3} need {4}", path,
                            shape[0], options.steps,
                            micro > 1 ? llvm::formatv(" of {0} micro-batches",
                                                      micro)
                                            .str()
                                      : std::string(),
                            needed)
                  .str();
      return false;
    }
    std::optional<HostTensor> converted = convertData(
        *t, source.type.getElementType(), path.str(), error);
    if (!converted)
      return false;
    source.file = std::move(*converted);
    source.entries = shape[0];
  }

  // Fault injection for testing failure handling: LOOM_FAULT=RANK:STEP:MODE
  // makes rank RANK, before step STEP, die (kill: SIGKILL), stall (stop:
  // SIGSTOP) or exit with status 3 (exit).
  int64_t faultRank = -1, faultStep = -1;
  std::string faultMode;
  if (const char *fault = std::getenv("LOOM_FAULT")) {
    SmallVector<StringRef> parts;
    StringRef(fault).split(parts, ':');
    if (parts.size() != 3 || parts[0].getAsInteger(10, faultRank) ||
        parts[1].getAsInteger(10, faultStep) ||
        !llvm::is_contained({"kill", "stop", "exit"}, parts[2])) {
      error = "LOOM_FAULT: expected RANK:STEP:kill|stop|exit, got '" +
              std::string(fault) + "'";
      return false;
    }
    faultMode = parts[2].str();
  }

  // Steps.
  std::mt19937_64 gen(options.seed);
  auto trainStart = std::chrono::steady_clock::now();
  SmallVector<HostTensor> outs;
  for (int64_t s = 0; s < options.steps; ++s) {
    std::vector<HostTensor> dataValues(args.size());
    for (DataSource &source : data) {
      // Every rank draws or reads the whole batch and keeps its shard.
      if (!source.file) {
        dataValues[source.arg] = toLocal(
            source.arg,
            syntheticTensor(source.type, args[source.arg].indexBound, gen));
        continue;
      }
      HostTensor t(source.type);
      size_t bytes = t.byteSize();
      std::memcpy(t.data(), source.file->data() + s * bytes, bytes);
      dataValues[source.arg] = toLocal(source.arg, t);
    }
    if (result.rank == faultRank && s == faultStep) {
      llvm::errs() << llvm::formatv("loom: LOOM_FAULT: rank {0} {1} before "
                                    "step {2}\n",
                                    faultRank, faultMode, s);
      llvm::errs().flush();
      if (faultMode == "kill")
        std::raise(SIGKILL);
      else if (faultMode == "stop")
        std::raise(SIGSTOP);
      else
        _exit(3);
    }
    std::vector<const HostTensor *> argPtrs;
    for (auto [i, info] : llvm::enumerate(args))
      argPtrs.push_back(info.parameter.empty() ? &dataValues[i]
                                               : &store[info.parameter]);
    if (!exec->run(argPtrs, outs, error))
      return false;
    double loss = outs[0].getAsDouble(0);
    result.losses.push_back(loss);
    for (auto [i, r] : llvm::enumerate(results))
      if (i > 0)
        store[r.parameter] = std::move(outs[i]);
    if (options.onStep && result.rank == 0)
      options.onStep(s, loss);
    if (!std::isfinite(loss)) {
      error = llvm::formatv("the loss is {0} at step {1}; stopping", loss, s);
      return false;
    }
  }
  result.trainSeconds = std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - trainStart)
                            .count();

  // Final parameters.
  auto save = [&](StringRef outDir, bool trainable) {
    if (outDir.empty())
      return true;
    if (std::error_code ec = llvm::sys::fs::create_directories(outDir);
        ec && (!mesh || mesh->rank() == 0)) {
      error = "cannot create " + outDir.str() + ": " + ec.message();
      return false;
    }
    for (auto [i, info] : llvm::enumerate(args)) {
      if (info.parameter.empty() || info.trainable != trainable)
        continue;
      HostTensor value = store[info.parameter];
      if (mesh) {
        // Every rank takes part; rank 0 writes the global tensor.
        std::optional<HostTensor> global =
            mesh->gatherGlobal(value, argShardings[i], error);
        if (!global)
          return false;
        value = *global;
        if (mesh->rank() != 0)
          continue;
      }
      SmallString<256> path(outDir);
      llvm::sys::path::append(path, info.parameter + ".npy");
      if (!writeTensorFile(path, value, error))
        return false;
    }
    return true;
  };
  return save(options.paramsOut, true) && save(options.stateOut, false);
}
