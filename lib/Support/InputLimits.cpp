//===- InputLimits.cpp - Bounds on what a user's file may ask for ---------===//

#include "loom/Support/InputLimits.h"

#include "llvm/ADT/Twine.h"

std::string mlir::loom::checkIRNesting(llvm::StringRef text,
                                       llvm::StringRef name, unsigned limit) {
  unsigned depth = 0, line = 1;
  for (size_t i = 0, e = text.size(); i < e; ++i) {
    char c = text[i], next = i + 1 < e ? text[i + 1] : '\0';
    switch (c) {
    case '\n':
      ++line;
      break;
    case '"': // a string literal, with backslash escapes
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
