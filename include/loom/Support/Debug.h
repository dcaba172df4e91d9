//===- Debug.h - LLVM_DEBUG output in release builds ------------*- C++ -*-===//
//
// Include this instead of llvm/Support/Debug.h. Debian's LLVM is a release
// build: it compiles LLVM_DEBUG out (NDEBUG) and registers no -debug or
// -debug-only options. Loom keeps its passes' debug output available
// there: DEBUG_WITH_TYPE (and so LLVM_DEBUG) tests Loom's own flags, which
// the tools set from -debug / -debug-only=TYPE[,TYPE] (registered by
// registerDebugOptions when LLVM has not). Output goes to llvm::dbgs().
//
//   #define DEBUG_TYPE "loom-partition"
//   LLVM_DEBUG(llvm::dbgs() << "...\n");
//   loom-opt --loom-partition -debug-only=loom-partition
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_SUPPORT_DEBUG_H
#define LOOM_SUPPORT_DEBUG_H

#include "llvm/Support/Debug.h"

namespace mlir::loom {

/// Whether -debug is on, or -debug-only names `type`.
bool isDebugEnabled(const char *type);

/// Registers -debug and -debug-only unless LLVM did; tools call it before
/// parsing their command line.
void registerDebugOptions();

} // namespace mlir::loom

// Also with Loom's asserts on (the sanitizer build) against a release LLVM,
// whose DebugFlag nothing sets.
#undef DEBUG_WITH_TYPE
#define DEBUG_WITH_TYPE(TYPE, ...)                                             \
  do {                                                                         \
    if (::mlir::loom::isDebugEnabled(TYPE)) {                                  \
      __VA_ARGS__;                                                             \
    }                                                                          \
  } while (false)

#endif // LOOM_SUPPORT_DEBUG_H
