//===- loom-fuzz-manifest.cpp - Rank program and checkpoint manifests -----===//
//
// Input: one byte choosing the reader, then the file's bytes:
//   0  a rank program's manifest (loomc --emit=executable writes it, the
//      program parses it at start-up); one that parses must print and
//      parse back to the same text
//   1  a checkpoint's manifest.json, next to a 4 KiB shard file
//      `rank-00000.bin`: Checkpoint::open, then every tensor of at most
//      2^20 elements read whole (a model's type bounds what a real resume
//      reads)
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "loom/checkpoint.h"
#include "loom/program.h"

#include <sys/stat.h>
#include <vector>

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  std::string dir = loomfuzz::scratchDirectory() + "/step-00000001";
  ::mkdir(dir.c_str(), 0700);
  std::vector<uint8_t> shard(4096);
  for (size_t i = 0; i < shard.size(); ++i)
    shard[i] = uint8_t(i * 131 + 7);
  loomfuzz::writeScratchFile("step-00000001/rank-00000.bin", shard.data(),
                               shard.size());
  return 0;
}

static void rankManifest(const std::string &text) {
  ::loom::program::Manifest m;
  std::string error;
  if (!::loom::program::parseManifest(text, m, error)) {
    if (error.empty())
      loomfuzz::fail("a manifest was refused without a reason");
    return;
  }
  std::string printed = ::loom::program::printManifest(m);
  ::loom::program::Manifest again;
  if (!::loom::program::parseManifest(printed, again, error))
    loomfuzz::fail("a parsed manifest prints as text that does not parse: " +
                     error);
  if (::loom::program::printManifest(again) != printed)
    loomfuzz::fail("a parsed manifest does not print back the same");
}

static void checkpointManifest(const uint8_t *data, size_t size) {
  loomfuzz::writeScratchFile("step-00000001/manifest.json", data, size);
  std::string error;
  std::optional<::loom::program::Checkpoint> c =
      ::loom::program::Checkpoint::open(
          loomfuzz::scratchDirectory() + "/step-00000001", error);
  if (!c) {
    if (error.empty())
      loomfuzz::fail("a checkpoint was refused without a reason");
    return;
  }
  for (const auto &[name, tensor] : c->getTensors()) {
    double elements = 1;
    for (int64_t d : tensor.shape) {
      if (d < 0)
        loomfuzz::fail("a checkpoint opened with tensor '" + name +
                       "' of a negative size");
      elements *= double(d);
    }
    if (elements > double(int64_t(1) << 20))
      continue;
    std::string readError;
    (void)c->readBlock(name, tensor.dtype, tensor.shape, {}, tensor.shape,
                       readError);
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > (1u << 18))
    return -1;
  if (data[0] % 2 == 0)
    rankManifest(std::string(reinterpret_cast<const char *>(data) + 1, size - 1));
  else
    checkpointManifest(data + 1, size - 1);
  return 0;
}
