//===- loom-fuzz-onnx.cpp - The ONNX importer under hostile models --------===//
//
// Input: a serialized onnx.ModelProto, imported as `loom-translate
// --import-onnx` imports a file (written to a scratch directory holding a
// 4 KiB `weights.bin` for external data). A module the importer returns must
// verify.
//
// Mutations are structure-aware half of the time (LLVMFuzzerCustomMutator):
// the input is parsed as a ModelProto and one field anywhere in it is
// changed through protobuf reflection — a size or attribute set to 0, -1,
// 2^31 or 2^40, a name swapped for another name of the model (dangling or
// aliased values), an op type swapped for another op's, an element removed
// or duplicated, raw data cut short — so that mutants stay parseable and
// reach the importer rather than dying in protobuf's parser. The other half
// are libFuzzer's byte-level mutations.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "loom/Dialect/Loom/IR/LoomDialect.h"
#include "loom/Target/ONNX/ImportONNX.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include "onnx/onnx_pb.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <vector>

using namespace mlir;
namespace pb = google::protobuf;

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  // ONNX's inference on a hostile model may run for minutes (an output of
  // rank 2^30): the importer stops it after this long, well inside
  // libFuzzer's -timeout=20, so that such a model is an error, not a hang.
  ::setenv("LOOM_ONNX_INFER_TIMEOUT", "5", /*overwrite=*/0);
  std::vector<uint8_t> weights(4096);
  for (size_t i = 0; i < weights.size(); ++i)
    weights[i] = uint8_t(i * 37);
  loomfuzz::writeScratchFile("weights.bin", weights.data(), weights.size());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (1u << 20))
    return -1;
  DialectRegistry registry;
  registry.insert<mlir::loom::LoomDialect, func::FuncDialect>();
  MLIRContext context(registry);
  context.disableMultithreading();
  ScopedDiagnosticHandler quiet(&context, [](Diagnostic &) { return success(); });
  // On disk too: ONNX's checker reads a model with external data by path.
  std::string path = loomfuzz::writeScratchFile("model.onnx", data, size);
  OwningOpRef<ModuleOp> module = mlir::loom::importOnnxModel(
      StringRef(reinterpret_cast<const char *>(data), size), path, &context);
  if (module && failed(verify(*module)))
    loomfuzz::fail("the importer returned a module that does not verify");
  return 0;
}

namespace {

/// One field of one message of the model: a place a mutation can land.
struct Site {
  pb::Message *message;
  const pb::FieldDescriptor *field;
};

void collectSites(pb::Message &message, std::vector<Site> &sites) {
  const pb::Reflection *r = message.GetReflection();
  const pb::Descriptor *d = message.GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const pb::FieldDescriptor *f = d->field(i);
    bool present = f->is_repeated() ? r->FieldSize(message, f) > 0
                                    : r->HasField(message, f);
    if (!present)
      continue;
    sites.push_back({&message, f});
    if (f->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE)
      continue;
    if (f->is_repeated()) {
      for (int j = 0; j < r->FieldSize(message, f); ++j)
        collectSites(*r->MutableRepeatedMessage(&message, f, j), sites);
    } else {
      collectSites(*r->MutableMessage(&message, f), sites);
    }
  }
}

void collectStrings(const pb::Message &message, std::vector<std::string> &out) {
  const pb::Reflection *r = message.GetReflection();
  const pb::Descriptor *d = message.GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const pb::FieldDescriptor *f = d->field(i);
    if (f->type() == pb::FieldDescriptor::TYPE_STRING) {
      if (f->is_repeated())
        for (int j = 0; j < r->FieldSize(message, f); ++j)
          out.push_back(r->GetRepeatedString(message, f, j));
      else if (r->HasField(message, f))
        out.push_back(r->GetString(message, f));
    } else if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
      if (f->is_repeated())
        for (int j = 0; j < r->FieldSize(message, f); ++j)
          collectStrings(r->GetRepeatedMessage(message, f, j), out);
      else if (r->HasField(message, f))
        collectStrings(r->GetMessage(message, f), out);
    }
  }
}

using Rng = std::minstd_rand;

int64_t interestingInt(int64_t old, Rng &rng) {
  static const int64_t values[] = {0,  1,  -1, 2,  3,  -2, 7, 100, -100,
                                   std::numeric_limits<int32_t>::max(),
                                   int64_t(1) << 31, int64_t(1) << 40,
                                   -(int64_t(1) << 40),
                                   std::numeric_limits<int64_t>::max(),
                                   std::numeric_limits<int64_t>::min()};
  switch (rng() % 4) {
  case 0: // wrapping, like the field's own arithmetic would
    return int64_t(uint64_t(old) + 1);
  case 1:
    return int64_t(uint64_t(old) - 1);
  default:
    return values[rng() % (sizeof(values) / sizeof(values[0]))];
  }
}

double interestingFloat(double old, Rng &rng) {
  static const double values[] = {0.0, -0.0, 1.0, -1.0, 1e30, -1e30, 1e-40,
                                  std::numeric_limits<double>::infinity(),
                                  std::numeric_limits<double>::quiet_NaN()};
  if (rng() % 3 == 0)
    return old * 2; // doubles: overflow is inf, not undefined
  return values[rng() % (sizeof(values) / sizeof(values[0]))];
}

std::string mutateString(const std::string &old,
                         const std::vector<std::string> &pool, Rng &rng) {
  static const char *ops[] = {"Conv", "Gemm", "MatMul", "Reshape", "Slice",
                              "Gather", "Concat", "Split", "Pad", "Resize",
                              "MaxPool", "BatchNormalization", "Softmax",
                              "Transpose", "Expand", "Tile", "ReduceSum",
                              "Einsum", "Unsqueeze", "Squeeze", "Where",
                              "ConvTranspose", "MaxUnpool", "TopK", "Range",
                              "ConstantOfShape", "Shape", "Cast", "Loop"};
  switch (rng() % 4) {
  case 0:
    if (!pool.empty())
      return pool[rng() % pool.size()];
    return old;
  case 1:
    return ops[rng() % (sizeof(ops) / sizeof(ops[0]))];
  case 2:
    return old.substr(0, old.empty() ? 0 : rng() % old.size());
  default:
    return old.empty() ? std::string("x") : old + old;
  }
}

/// Changes one element (or the value) of `site`.
void mutateScalar(const Site &site, int index, Rng &rng,
                  const std::vector<std::string> &pool) {
  pb::Message &m = *site.message;
  const pb::Reflection *r = m.GetReflection();
  const pb::FieldDescriptor *f = site.field;
  bool rep = f->is_repeated();
#define LOOM_GET(T) (rep ? r->GetRepeated##T(m, f, index) : r->Get##T(m, f))
#define LOOM_SET(T, v)                                                         \
  (rep ? r->SetRepeated##T(&m, f, index, v) : r->Set##T(&m, f, v))
  switch (f->cpp_type()) {
  case pb::FieldDescriptor::CPPTYPE_INT32:
    LOOM_SET(Int32, int32_t(interestingInt(LOOM_GET(Int32), rng)));
    break;
  case pb::FieldDescriptor::CPPTYPE_INT64:
    LOOM_SET(Int64, interestingInt(LOOM_GET(Int64), rng));
    break;
  case pb::FieldDescriptor::CPPTYPE_UINT32:
    LOOM_SET(UInt32, uint32_t(interestingInt(LOOM_GET(UInt32), rng)));
    break;
  case pb::FieldDescriptor::CPPTYPE_UINT64:
    LOOM_SET(UInt64, uint64_t(interestingInt(int64_t(LOOM_GET(UInt64)), rng)));
    break;
  case pb::FieldDescriptor::CPPTYPE_FLOAT:
    LOOM_SET(Float, float(interestingFloat(LOOM_GET(Float), rng)));
    break;
  case pb::FieldDescriptor::CPPTYPE_DOUBLE:
    LOOM_SET(Double, interestingFloat(LOOM_GET(Double), rng));
    break;
  case pb::FieldDescriptor::CPPTYPE_BOOL:
    LOOM_SET(Bool, !LOOM_GET(Bool));
    break;
  case pb::FieldDescriptor::CPPTYPE_ENUM: {
    const pb::EnumDescriptor *e = f->enum_type();
    LOOM_SET(Enum, e->value(int(rng() % e->value_count())));
    break;
  }
  case pb::FieldDescriptor::CPPTYPE_STRING: {
    std::string old = LOOM_GET(String);
    if (f->type() == pb::FieldDescriptor::TYPE_BYTES) {
      // Raw data: cut short, or one byte changed.
      if (!old.empty() && rng() % 2)
        old.resize(rng() % old.size());
      else if (!old.empty())
        old[rng() % old.size()] ^= char(1 << (rng() % 8));
      LOOM_SET(String, old);
    } else {
      LOOM_SET(String, mutateString(old, pool, rng));
    }
    break;
  }
  case pb::FieldDescriptor::CPPTYPE_MESSAGE:
    break;
  }
#undef LOOM_GET
#undef LOOM_SET
}

void mutateModel(onnx::ModelProto &model, Rng &rng) {
  std::vector<Site> sites;
  collectSites(model, sites);
  if (sites.empty())
    return;
  std::vector<std::string> pool;
  collectStrings(model, pool);
  const Site &site = sites[rng() % sites.size()];
  pb::Message &m = *site.message;
  const pb::Reflection *r = m.GetReflection();
  const pb::FieldDescriptor *f = site.field;
  unsigned action = rng() % 8;
  if (action == 0) {
    r->ClearField(&m, f);
    return;
  }
  if (!f->is_repeated()) {
    mutateScalar(site, 0, rng, pool);
    return;
  }
  int n = r->FieldSize(m, f);
  int i = int(rng() % unsigned(n));
  if (action == 1) { // remove element i
    r->SwapElements(&m, f, i, n - 1);
    r->RemoveLast(&m, f);
  } else if (action == 2 &&
             f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
    r->AddMessage(&m, f)->CopyFrom(r->GetRepeatedMessage(m, f, i));
  } else if (action == 2) { // duplicate a scalar: append then overwrite
    switch (f->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_INT64:
      r->AddInt64(&m, f, r->GetRepeatedInt64(m, f, i));
      break;
    case pb::FieldDescriptor::CPPTYPE_INT32:
      r->AddInt32(&m, f, r->GetRepeatedInt32(m, f, i));
      break;
    case pb::FieldDescriptor::CPPTYPE_FLOAT:
      r->AddFloat(&m, f, r->GetRepeatedFloat(m, f, i));
      break;
    case pb::FieldDescriptor::CPPTYPE_STRING:
      r->AddString(&m, f, r->GetRepeatedString(m, f, i));
      break;
    default:
      break;
    }
  } else if (f->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE) {
    mutateScalar(site, i, rng, pool);
  }
}

} // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  Rng rng(seed);
  onnx::ModelProto model;
  if (rng() % 2 == 0 || !model.ParseFromArray(data, int(size)))
    return LLVMFuzzerMutate(data, size, maxSize);
  unsigned rounds = 1 + rng() % 3;
  for (unsigned i = 0; i < rounds; ++i)
    mutateModel(model, rng);
  std::string bytes;
  if (!model.SerializeToString(&bytes) || bytes.size() > maxSize)
    return LLVMFuzzerMutate(data, size, maxSize);
  std::copy(bytes.begin(), bytes.end(), data);
  return bytes.size();
}
