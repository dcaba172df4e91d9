//===- InputLimits.h - Bounds on what a user's file may ask for -*- C++ -*-===//
//
// MLIR's parser descends once per nested region, type or attribute, so a
// file nested a few thousand levels deep overflows the stack. Loom's
// drivers check the text first and refuse it with the line at fault.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_SUPPORT_INPUTLIMITS_H
#define LOOM_SUPPORT_INPUTLIMITS_H

#include "llvm/ADT/StringRef.h"
#include <string>

namespace mlir::loom {

/// The deepest nesting of brackets ({ ( [ <) MLIR text may have. Real
/// programs stay below 50; mlir-opt 22 overflows an 8 MiB stack between
/// 3,000 and 5,000 nested modules (fewer under sanitizers, which grow its
/// frames).
constexpr unsigned kMaxIRNesting = 500;

/// "" when no bracket in `text` (outside string literals and `//` comments)
/// is nested deeper than `limit` and every dialect resource blob in its
/// `{-# ... #-}` section has an alignment MLIR can allocate with (a power
/// of two up to 65536; 0 makes MLIR's parser abort); else an error naming
/// `name`, the line and the limit.
std::string checkIRNesting(llvm::StringRef text, llvm::StringRef name,
                           unsigned limit = kMaxIRNesting);

} // namespace mlir::loom

#endif // LOOM_SUPPORT_INPUTLIMITS_H
