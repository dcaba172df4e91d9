//===- InputLimits.cpp - Bounds on what a user's file may ask for ---------===//

#include "loom/Support/InputLimits.h"

#include "llvm/Support/MathExtras.h"

#include "llvm/ADT/Twine.h"

/// A dialect resource blob ("0x" then hex, its first 4 bytes the
/// little-endian alignment) whose alignment MLIR's parser cannot allocate
/// with (0 aborts it: "LLVM ERROR: out of memory"): an error naming the
/// line, else "". `literal` starts after the opening quote.
static std::string checkResourceBlob(llvm::StringRef literal,
                                     llvm::StringRef name, unsigned line) {
  if (!literal.starts_with("0x") || literal.size() < 10)
    return "";
  uint64_t alignment = 0;
  for (int b = 0; b < 4; ++b) {
    unsigned byte = 0;
    if (literal.substr(2 + 2 * b, 2).getAsInteger(16, byte))
      return "";
    alignment |= uint64_t(byte) << (8 * b);
  }
  if (alignment != 0 && llvm::isPowerOf2_64(alignment) && alignment <= 65536)
    return "";
  return (name + ":" + llvm::Twine(line) + ": a dialect resource blob with "
                 "alignment " + llvm::Twine(alignment) +
          " (its first 4 bytes): an alignment is a power of two from 1 to "
          "65536; MLIR's parser would abort allocating it")
      .str();
}

std::string mlir::loom::checkIRNesting(llvm::StringRef text,
                                       llvm::StringRef name, unsigned limit) {
  unsigned depth = 0, line = 1;
  bool inMetadata = false; // inside {-# ... #-} (dialect resources)
  for (size_t i = 0, e = text.size(); i < e; ++i) {
    char c = text[i], next = i + 1 < e ? text[i + 1] : '\0';
    if (c == '{' && next == '-' && i + 2 < e && text[i + 2] == '#')
      inMetadata = true;
    else if (c == '#' && next == '-' && i + 2 < e && text[i + 2] == '}')
      inMetadata = false;
    switch (c) {
    case '\n':
      ++line;
      break;
    case '"': // a string literal, with backslash escapes
      if (inMetadata) {
        std::string bad = checkResourceBlob(text.substr(i + 1), name, line);
        if (!bad.empty())
          return bad;
      }
      for (++i; i < e && text[i] != '"'; ++i) {
        if (text[i] == '\\')
          ++i;
        else if (text[i] == '\n')
          ++line;
      }
      break;
    case '/':
      if (next == '/')
        while (i + 1 < e && text[i + 1] != '\n')
          ++i;
      break;
    case '-': // `->` closes nothing
    case '=': // `=>`
      if (next == '>')
        ++i;
      break;
    case '<':
      if (next == '=') { // `<=` in affine constraints opens nothing
        ++i;
        break;
      }
      [[fallthrough]];
    case '{':
    case '(':
    case '[':
      if (++depth > limit)
        return (name + ":" + llvm::Twine(line) + ": nested more than " +
                llvm::Twine(limit) +
                " levels deep (regions, types or attributes); Loom refuses "
                "it rather than overflow the parser's stack")
            .str();
      break;
    case '>':
      if (next == '=') { // `>=`
        ++i;
        break;
      }
      [[fallthrough]];
    case '}':
    case ')':
    case ']':
      if (depth > 0)
        --depth;
      break;
    default:
      break;
    }
  }
  return "";
}
