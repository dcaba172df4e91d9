//===- loom-onnx-infer.cpp - ONNX shape inference in its own process ------===//
//
// Reads requests on stdin (each after its 8-byte length: a ModelProto to
// run ONNX's shape inference or version converter on, OnnxShapeInference.h)
// and writes the replies the importer expects on stdout, framed the same way. The importer starts
// it once and keeps it, so that a crash of ONNX's library on a malformed
// model ends this process, not Loom's. Not meant to be run by hand.
//
//===----------------------------------------------------------------------===//

#include "../../lib/Target/ONNX/OnnxShapeInference.h"

#include <cstdio>
#include <cstdint>
#include <cstdlib>
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
    namespace oi = mlir::loom::onnx_import;
    oi::applyMemoryLimit(bytes.size());
    onnx::ModelProto model;
    std::string reply, error;
    // The kind of request, and for a conversion its target opset.
    size_t start = 1;
    int target = 0;
    char kind = bytes.empty() ? 0 : bytes[0];
    if (kind == oi::kConvertRequest) {
      start = bytes.find('\n');
      target = start == std::string::npos
                   ? 0
                   : int(std::strtol(bytes.c_str() + 1, nullptr, 10));
      start = start == std::string::npos ? bytes.size() : start + 1;
    }
    bool parsed =
        (kind == oi::kInferRequest || kind == oi::kConvertRequest) &&
        start <= bytes.size() &&
        model.ParseFromArray(bytes.data() + start, int(bytes.size() - start));
    if (kind == oi::kConvertRequest) {
      if (!parsed || target <= 0)
        error = "the conversion request does not parse";
      bool ok = error.empty() && oi::convertVersionInProcess(model, target, error);
      reply = oi::encodeConversion(model, ok, error);
    } else {
      bool ok = parsed && oi::inferShapesInProcess(model, error);
      reply = oi::encodeInference(
          model, ok,
          parsed ? error : "ONNX shape inference: the model does not parse");
    }
    uint64_t length = reply.size();
    if (std::fwrite(&length, 1, 8, replies) != 8 ||
        std::fwrite(reply.data(), 1, reply.size(), replies) != reply.size() ||
        std::fflush(replies) != 0)
      return 1;
  }
}
