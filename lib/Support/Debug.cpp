//===- Debug.cpp - LLVM_DEBUG output in release builds --------------------===//

#include "loom/Support/Debug.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

#include <string>

using namespace llvm;

namespace {
bool debugAll = false;
SmallVector<std::string, 4> debugTypes;
} // namespace

bool mlir::loom::isDebugEnabled(const char *type) {
  if (debugAll)
    return true;
  for (const std::string &t : debugTypes)
    if (t == type)
      return true;
  return false;
}

void mlir::loom::registerDebugOptions() {
  static bool registered = false;
  if (registered)
    return;
  registered = true;
  auto &options = cl::getRegisteredOptions();
  if (options.count("debug") || options.count("debug-only"))
    return; // an LLVM with assertions: its own options and macros apply
  static cl::opt<bool, /*ExternalStorage=*/true> debug(
      "debug", cl::desc("Print all of Loom's debug output"),
      cl::location(debugAll), cl::Hidden);
  struct TypeParser {
    void operator=(const std::string &value) const {
      SmallVector<StringRef> parts;
      StringRef(value).split(parts, ',', -1, false);
      for (StringRef p : parts)
        debugTypes.push_back(p.trim().str());
    }
  };
  static TypeParser sink;
  static cl::opt<TypeParser, /*ExternalStorage=*/true, cl::parser<std::string>>
      debugOnly("debug-only",
                cl::desc("Print the debug output of these DEBUG_TYPEs "
                         "(comma separated), e.g. loom-auto-shard"),
                cl::location(sink), cl::value_desc("type"), cl::Hidden,
                cl::ValueRequired);
}
