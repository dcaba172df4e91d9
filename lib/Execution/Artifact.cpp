//===- Artifact.cpp - What loomc writes -----------------------------------===//

#include "loom/Execution/Artifact.h"

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Execution/Executor.h"
#include "loom/Execution/Passes.h"
#include "loom/Execution/TensorIO.h"
#include "mlir/IR/AsmState.h"
#include "loom/program.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <unistd.h>

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMEXPORTPARAMETERS
#include "loom/Execution/Passes.h.inc"
} // namespace mlir::loom

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

bool mlir::loom::exportParameters(ModuleOp module, StringRef dir,
                                  const ArtifactOptions &options,
                                  std::string &error) {
  MLIRContext *ctx = module.getContext();
  if (std::error_code ec = llvm::sys::fs::create_directories(
          dir, /*IgnoreExisting=*/true, llvm::sys::fs::all_all)) {
    error = "cannot create " + dir.str() + ": " + ec.message();
    return false;
  }
  SmallString<256> binPath(dir);
  llvm::sys::path::append(binPath, "params.bin");
  // Written under a temporary name and renamed into place: a kill or a
  // full disk leaves no torn params.bin.
  std::string tmpPath = (binPath + ".tmp." + llvm::Twine(::getpid())).str();
  std::error_code ec;
  llvm::raw_fd_ostream bin(tmpPath, ec, llvm::sys::fs::OF_None);
  if (ec) {
    error = "cannot write " + tmpPath + ": " + ec.message();
    return false;
  }
  llvm::scope_exit removeTmp([&] {
    bin.clear_error(); // no report_fatal_error from the stream
    llvm::sys::fs::remove(tmpPath);
  });
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
      value = readInitialValue(*init, type, param.getSymName(),
                               options.sourceDir, error);
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
    error = "cannot write " + std::string(binPath) + ": " +
            bin.error().message();
    return false;
  }
  if (std::error_code rc = llvm::sys::fs::rename(tmpPath, binPath)) {
    error = "cannot write " + std::string(binPath) + ": " + rc.message();
    return false;
  }
  return true;
}

bool mlir::loom::writeModule(ModuleOp module, StringRef dir, StringRef name,
                             std::string &error) {
  if (std::error_code ec = llvm::sys::fs::create_directories(
          dir, /*IgnoreExisting=*/true, llvm::sys::fs::all_all)) {
    error = "cannot create " + dir.str() + ": " + ec.message();
    return false;
  }
  SmallString<256> path(dir);
  llvm::sys::path::append(path, name);
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os, OpPrintingFlags().enableDebugInfo(false));
  os << "\n";
  return ::loom::program::writeFileAtomically(path.str().str(), text.data(),
                                              text.size(), error);
}


//===----------------------------------------------------------------------===//
// loom-export-parameters
//===----------------------------------------------------------------------===//

namespace {
struct ExportParametersPass
    : mlir::loom::impl::LoomExportParametersBase<ExportParametersPass> {
  using LoomExportParametersBase::LoomExportParametersBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (dir.empty() || (init != "model" && init != "seeded")) {
      module.emitError() << getArgument()
                         << ": needs dir=DIR and init=model or init=seeded";
      return signalPassFailure();
    }
    ArtifactOptions options;
    options.initFromModel = init == "model";
    options.seed = seed;
    options.sourceDir = sourceDir;
    std::string error;
    if (!exportParameters(module, dir, options, error)) {
      module.emitError() << getArgument() << ": " << error;
      return signalPassFailure();
    }
  }
};
} // namespace
