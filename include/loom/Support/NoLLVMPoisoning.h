//===- NoLLVMPoisoning.h - ASan builds against an uninstrumented LLVM -----===//
//
// Force-included (-include) into every C++ file of a LOOM_SANITIZE=address
// build. LLVM's BumpPtrAllocator and Recycler poison the memory they hold
// when the including file is built with ASan; Debian's libMLIR.so is not,
// so a slab that Loom's inlined copy poisoned is later handed out by
// libMLIR's copy without unpoisoning, and ASan reports a use-after-poison
// inside MLIR on the first parse. Loom's files therefore do no manual
// poisoning (ASan's own heap, stack and global checks are unaffected).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_SUPPORT_NOLLVMPOISONING_H
#define LOOM_SUPPORT_NOLLVMPOISONING_H

#include "llvm/Support/Compiler.h"

#undef __asan_poison_memory_region
#undef __asan_unpoison_memory_region
#define __asan_poison_memory_region(p, size) ((void)(p), (void)(size))
#define __asan_unpoison_memory_region(p, size) ((void)(p), (void)(size))

#endif // LOOM_SUPPORT_NOLLVMPOISONING_H
