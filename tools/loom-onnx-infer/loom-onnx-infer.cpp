//===- loom-onnx-infer.cpp - ONNX shape inference in its own process ------===//
//
// Reads serialized ModelProtos on stdin (each after its 8-byte length), runs
// ONNX's shape inference on each and writes the replies the importer expects
// (OnnxShapeInference.h) on stdout, framed the same way. The importer starts
// it once and keeps it, so that a crash of ONNX's library on a malformed
// model ends this process, not Loom's. Not meant to be run by hand.
//
//===----------------------------------------------------------------------===//

#include "../../lib/Target/ONNX/OnnxShapeInference.h"

#include <cstdio>
#include <cstdint>
#include <unistd.h>
#include <string>

static bool readExactly(std::FILE *in, char *data, size_t size) {
  return std::fread(data, 1, size, in) == size;
}

int main() {
  // Replies go to the original stdout only: anything ONNX prints goes to
  // stderr, so that it cannot break the framing.
  std::FILE *replies = fdopen(dup(1), "wb");
  if (!replies || dup2(2, 1) < 0)
    return 1;
  // Requests until stdin closes: an 8-byte length, then a ModelProto.
  for (;;) {
    uint64_t size = 0;
    if (!readExactly(stdin, reinterpret_cast<char *>(&size), 8))
      return 0;
    std::string bytes(size_t(size), '\0');
    if (!readExactly(stdin, bytes.data(), bytes.size()))
      return 1;
    onnx::ModelProto model;
    std::string reply;
    if (!model.ParseFromString(bytes)) {
      reply = mlir::loom::onnx_import::encodeInference(
          model, false, "ONNX shape inference: the model does not parse");
    } else {
      std::string error;
      bool ok = mlir::loom::onnx_import::inferShapesInProcess(model, error);
      reply = mlir::loom::onnx_import::encodeInference(model, ok, error);
    }
    uint64_t length = reply.size();
    if (std::fwrite(&length, 1, 8, replies) != 8 ||
        std::fwrite(reply.data(), 1, reply.size(), replies) != reply.size() ||
        std::fflush(replies) != 0)
      return 1;
  }
}
