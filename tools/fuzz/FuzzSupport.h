//===- FuzzSupport.h - What Loom's fuzz harnesses share ---------*- C++ -*-===//
//
// Every harness defines LLVMFuzzerTestOneInput. Built with
// -DLOOM_ENABLE_FUZZERS=ON (scripts/fuzz.sh) it links libFuzzer and runs
// under ASan + UBSan; in the normal build it links FuzzMain.cpp instead
// and replays the files it is given (test/Fuzz: the seed corpora and every
// crasher found, kept as regression inputs).
//
// A harness feeds its input to one of Loom's readers as a user's file
// would reach it; any outcome but a clean error or success (a crash, an
// assertion, a sanitizer report, a hang) is a finding.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_TOOLS_FUZZ_FUZZSUPPORT_H
#define LOOM_TOOLS_FUZZ_FUZZSUPPORT_H

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" {
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);
/// libFuzzer's own mutator (FuzzMain.cpp: leaves the input as it is).
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);
}

namespace loomfuzz {

/// A directory of this process's own (under /dev/shm when it exists),
/// removed at exit: harnesses write their input there for the readers that
/// take paths.
const std::string &scratchDirectory();

/// Writes `size` bytes to `name` in the scratch directory; returns its path.
std::string writeScratchFile(const std::string &name, const uint8_t *data,
                             size_t size);

/// Reports a finding that is not a crash (an imported module that does not
/// verify) and aborts, so that libFuzzer keeps the input.
[[noreturn]] void fail(const std::string &what);

} // namespace loomfuzz

#endif // LOOM_TOOLS_FUZZ_FUZZSUPPORT_H
