//===- Checkpoint.cpp - Sharded training checkpoints ----------------------===//
//
// Saving: every rank writes its shard file and a piece index durably
// (temporary name, fsync, rename), the ranks agree that all did, rank 0
// merges the indexes into manifest.json (again durably: the manifest is
// the commit point), prunes old checkpoints, and the ranks agree once more
// so that no rank runs ahead of a save that is not on disk yet.
//
//===----------------------------------------------------------------------===//

#include "loom/Execution/Checkpoint.h"

#include "loom/Execution/Distributed.h"
#include "loom/program.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CRC.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <csignal>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <unistd.h>

using namespace mlir;
using namespace mlir::loom;
namespace json = llvm::json;

/// The dtype name a checkpoint records for `t` (numpy's names, and
/// "bfloat16"); empty when not storable.
static std::string checkpointDType(Type t) {
  if (t.isF32()) return "float32";
  if (t.isF64()) return "float64";
  if (t.isF16()) return "float16";
  if (t.isBF16()) return "bfloat16";
  if (t.isInteger(1)) return "bool";
  if (auto i = dyn_cast<IntegerType>(t))
    if (llvm::is_contained({8u, 16u, 32u, 64u}, i.getWidth()))
      return (i.isUnsigned() ? "uint" : "int") + std::to_string(i.getWidth());
  return "";
}

static Type dtypeFromName(MLIRContext *ctx, StringRef name) {
  Builder b(ctx);
  if (name == "float32") return b.getF32Type();
  if (name == "float64") return b.getF64Type();
  if (name == "float16") return b.getF16Type();
  if (name == "bfloat16") return b.getBF16Type();
  if (name == "bool") return b.getI1Type();
  unsigned width = 0;
  if (name.consume_front("uint") && !name.getAsInteger(10, width))
    return IntegerType::get(ctx, width, IntegerType::Unsigned);
  if (name.consume_front("int") && !name.getAsInteger(10, width))
    return b.getIntegerType(width);
  return {};
}

/// Writes `bytes` to `path` durably: a temporary name, fsync, rename (the
/// writer every Loom output uses).
static bool writeDurably(StringRef path, StringRef bytes, std::string &error) {
  return ::loom::program::writeFileAtomically(path.str(), bytes.data(),
                                              bytes.size(), error);
}

/// Makes a rename in `dir` durable.
static void syncDirectory(StringRef dir) {
  int fd = ::open(dir.str().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

static std::string stepDirName(int64_t step) {
  return llvm::formatv("step-{0:d8}", step).str();
}

static json::Array toJson(ArrayRef<int64_t> values) {
  json::Array a;
  for (int64_t v : values)
    a.push_back(v);
  return a;
}

namespace {
/// This rank's shard: the bytes and the index of its pieces.
struct Shard {
  std::string bytes;
  json::Array pieces;
};
} // namespace

static bool buildShard(ArrayRef<CheckpointEntry> entries,
                       const DistributedContext *mesh, StringRef file,
                       int32_t pipelineAxis, Shard &shard, std::string &error) {
  for (const CheckpointEntry &e : entries) {
    const HostTensor &t = *e.local;
    std::string dtype = checkpointDType(t.getElementType());
    if (dtype.empty() || (e.sharding && e.sharding.isPartial())) {
      error = llvm::formatv("cannot checkpoint '{0}' ({1}{2})", e.name,
                            t.getType(),
                            e.sharding ? ", a partial value" : "")
                  .str();
      return false;
    }
    if (mesh && !mesh->isFirstCopy(e.sharding, pipelineAxis))
      continue;
    RankedTensorType global =
        mesh ? mesh->globalType(t.getType(), e.sharding) : t.getType();
    SmallVector<int64_t> offset(t.getShape().size(), 0);
    if (mesh)
      offset = mesh->blockOffset(global.getShape(), e.sharding);
    // 64-byte aligned pieces: a reader may map them in place.
    shard.bytes.resize(llvm::alignTo(shard.bytes.size(), 64), '\0');
    uint64_t at = shard.bytes.size();
    shard.bytes.append(t.data(), t.byteSize());
    json::Array sharding;
    for (int64_t d = 0; e.sharding && d < e.sharding.getRank(); ++d) {
      json::Array axes;
      for (StringRef a : e.sharding.getDimAxes(d))
        axes.push_back(a);
      sharding.push_back(std::move(axes));
    }
    shard.pieces.push_back(json::Object{
        {"name", e.name},
        {"dtype", dtype},
        {"shape", toJson(global.getShape())},
        {"sharding", std::move(sharding)},
        {"trainable", e.trainable},
        {"file", file},
        {"offset", toJson(offset)},
        {"block", toJson(t.getShape())},
        {"byte_offset", int64_t(at)},
        {"bytes", int64_t(t.byteSize())},
        {"crc32", int64_t(llvm::crc32(llvm::ArrayRef<uint8_t>(
                      reinterpret_cast<const uint8_t *>(t.data()),
                      t.byteSize())))}});
  }
  return true;
}

/// Rank 0: every rank's piece index merged per tensor (a block written by
/// several ranks, e.g. a step counter on every pipeline stage, once).
static bool writeManifest(StringRef stepDir, const CheckpointState &state,
                          const DistributedContext *mesh, std::string &error) {
  std::map<std::string, json::Object> tensors;
  std::map<std::string, std::set<std::vector<int64_t>>> seen;
  int ranks = mesh ? mesh->size() : 1;
  for (int r = 0; r < ranks; ++r) {
    SmallString<256> path(stepDir);
    llvm::sys::path::append(path, llvm::formatv("rank-{0:d5}.json", r).str());
    auto buffer = llvm::MemoryBuffer::getFile(path);
    if (!buffer) {
      error = "cannot read " + path.str().str();
      return false;
    }
    llvm::Expected<json::Value> index = json::parse((*buffer)->getBuffer());
    if (!index || !index->getAsArray()) {
      if (!index)
        llvm::consumeError(index.takeError());
      error = path.str().str() + " is not a piece index";
      return false;
    }
    for (json::Value &v : *index->getAsArray()) {
      json::Object &p = *v.getAsObject();
      std::string name = p.getString("name")->str();
      std::vector<int64_t> offset;
      for (const json::Value &o : *p.getArray("offset"))
        offset.push_back(*o.getAsInteger());
      if (!seen[name].insert(offset).second)
        continue;
      json::Object &t = tensors[name];
      if (t.empty())
        for (const char *key : {"dtype", "shape", "sharding", "trainable"})
          t[key] = *p.get(key);
      json::Object piece;
      for (const char *key :
           {"file", "offset", "block", "byte_offset", "bytes", "crc32"})
        piece[key] = *p.get(key);
      if (!t.getArray("pieces"))
        t["pieces"] = json::Array();
      t.getArray("pieces")->push_back(std::move(piece));
    }
  }
  json::Object byName;
  for (auto &[name, t] : tensors)
    byName[name] = std::move(t);
  json::Object meshInfo;
  if (mesh) {
    json::Array axes;
    for (Attribute a : mesh->getMeshOp().getAxes()) {
      auto axis = cast<MeshAxisAttr>(a);
      axes.push_back(json::Array{axis.getName().getValue(), axis.getSize()});
    }
    meshInfo["axes"] = std::move(axes);
  }
  meshInfo["ranks"] = ranks;
  json::Object manifest{{"format", "loom-checkpoint"},
                        {"version", 1},
                        {"step", state.step},
                        {"seed", int64_t(state.seed)},
                        {"data", state.data},
                        {"micro_batches", state.microBatches},
                        {"mesh", std::move(meshInfo)},
                        {"tensors", std::move(byName)}};
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", json::Value(std::move(manifest))) << "\n";
  SmallString<256> path(stepDir);
  llvm::sys::path::append(path, "manifest.json");
  if (!writeDurably(path, text, error))
    return false;
  syncDirectory(stepDir);
  return true;
}

/// The steps of ROOT's complete checkpoints (and incomplete ones in
/// `partial`), ascending.
static std::vector<int64_t> listCheckpoints(StringRef root,
                                            std::vector<int64_t> *partial) {
  std::vector<int64_t> steps;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(root, ec), end; !ec && it != end;
       it.increment(ec)) {
    StringRef name = llvm::sys::path::filename(it->path());
    int64_t step;
    if (!name.consume_front("step-") || name.getAsInteger(10, step))
      continue;
    SmallString<256> manifest(it->path());
    llvm::sys::path::append(manifest, "manifest.json");
    if (llvm::sys::fs::exists(manifest))
      steps.push_back(step);
    else if (partial)
      partial->push_back(step);
  }
  llvm::sort(steps);
  if (partial)
    llvm::sort(*partial);
  return steps;
}

/// Deletes all but the newest `keep` complete checkpoints and incomplete
/// ones older than the newest complete one.
static void prune(StringRef root, int64_t keep) {
  std::vector<int64_t> partial;
  std::vector<int64_t> complete = listCheckpoints(root, &partial);
  if (complete.empty())
    return;
  std::vector<int64_t> doomed(partial.begin(), partial.end());
  llvm::erase_if(doomed, [&](int64_t s) { return s > complete.back(); });
  if (keep > 0 && int64_t(complete.size()) > keep)
    doomed.insert(doomed.end(), complete.begin(), complete.end() - keep);
  for (int64_t s : doomed) {
    SmallString<256> dir(root);
    llvm::sys::path::append(dir, stepDirName(s));
    // Manifest first: a half-deleted checkpoint is an incomplete one.
    SmallString<256> manifest(dir);
    llvm::sys::path::append(manifest, "manifest.json");
    llvm::sys::fs::remove(manifest);
    llvm::sys::fs::remove_directories(dir);
  }
}

bool mlir::loom::saveCheckpoint(StringRef root, const CheckpointState &state,
                                ArrayRef<CheckpointEntry> entries,
                                const DistributedContext *mesh,
                                const CheckpointSaveOptions &options,
                                std::string &error) {
  int rank = mesh ? mesh->rank() : 0;
  SmallString<256> stepDir(root);
  llvm::sys::path::append(stepDir, stepDirName(state.step));
  std::string file = llvm::formatv("rank-{0:d5}.bin", rank).str();
  bool ok = true;
  if (std::error_code ec = llvm::sys::fs::create_directories(stepDir)) {
    error = "cannot create " + stepDir.str().str() + ": " + ec.message();
    ok = false;
  }
  // A checkpoint of this step from an earlier run stops being complete
  // before any of its shards changes (rank 0 drops its manifest, then the
  // ranks agree), so a save killed midway never leaves a manifest over
  // rewritten shards.
  if (ok && rank == 0) {
    SmallString<256> manifest(stepDir);
    llvm::sys::path::append(manifest, "manifest.json");
    if (llvm::sys::fs::exists(manifest)) {
      if (std::error_code ec = llvm::sys::fs::remove(manifest)) {
        error = "cannot replace " + manifest.str().str() + ": " + ec.message();
        ok = false;
      }
      syncDirectory(stepDir);
    }
  }
  if (mesh && !mesh->agree(ok, "prepare the checkpoint directory", error))
    return false;
  Shard shard;
  ok = ok && buildShard(entries, mesh, file, options.pipelineAxis, shard, error);
  if (ok) {
    // Every rank writes its index, empty when it holds no first copies: a
    // stale index of an earlier save of this step is never merged.
    SmallString<256> bin(stepDir), index(stepDir);
    llvm::sys::path::append(bin, file);
    llvm::sys::path::append(index, llvm::formatv("rank-{0:d5}.json", rank).str());
    std::string text;
    llvm::raw_string_ostream os(text);
    bool empty = shard.pieces.empty();
    os << json::Value(std::move(shard.pieces));
    ok = (empty || writeDurably(bin, shard.bytes, error)) &&
         writeDurably(index, text, error);
  }
  if (options.dieBeforeManifest) {
    // One write (errs() is unbuffered): mpirun interleaves ranks' output.
    llvm::errs() << llvm::formatv("loom: LOOM_FAULT: rank {0} dies saving "
                                  "step {1}, before the manifest\n",
                                  rank, state.step)
                        .str();
    llvm::errs().flush();
    std::raise(SIGKILL);
  }
  if (mesh && !mesh->agree(ok, "write its checkpoint shard", error))
    return false;
  if (!ok)
    return false;
  if (rank == 0) {
    syncDirectory(stepDir);
    ok = writeManifest(stepDir, state, mesh, error);
    if (ok)
      prune(root, options.keep);
  }
  return !mesh || mesh->agree(ok, "write the checkpoint manifest", error);
}

namespace {
/// Reads manifest fields, remembering the first thing missing or wrong.
struct ManifestReader {
  StringRef path;
  std::string &error;

  bool fail(const Twine &what) {
    if (error.empty())
      error = (path + ": " + what).str();
    return false;
  }
  std::vector<int64_t> ints(const json::Object &o, StringRef key) {
    std::vector<int64_t> out;
    const json::Array *a = o.getArray(key);
    if (!a) {
      fail("'" + key + "' missing");
      return out;
    }
    for (const json::Value &v : *a) {
      std::optional<int64_t> i = v.getAsInteger();
      if (!i || *i < 0)
        fail("'" + key + "' holds something other than sizes");
      out.push_back(i.value_or(0));
    }
    return out;
  }
  int64_t integer(const json::Object &o, StringRef key) {
    std::optional<int64_t> i = o.getInteger(key);
    if (!i)
      fail("'" + key + "' missing");
    return i.value_or(0);
  }
};
} // namespace

std::optional<Checkpoint> Checkpoint::open(StringRef path, MLIRContext *ctx,
                                           std::string &error) {
  if (!llvm::sys::fs::is_directory(path)) {
    error = "no checkpoint at " + path.str() + ": not a directory";
    return std::nullopt;
  }
  Checkpoint c;
  SmallString<256> manifest(path);
  llvm::sys::path::append(manifest, "manifest.json");
  c.dir = path.str();
  if (!llvm::sys::fs::exists(manifest)) {
    std::vector<int64_t> partial;
    std::vector<int64_t> steps = listCheckpoints(path, &partial);
    if (steps.empty()) {
      bool isStep = llvm::sys::path::filename(path).starts_with("step-");
      error = "no complete checkpoint in " + path.str() +
              (isStep ? std::string(": it has no manifest.json (a save that "
                                    "did not finish, or a manifest lost)")
               : partial.empty()
                   ? std::string(": no manifest.json and no step-* directories")
                   : ": " + stepDirName(partial.back()) +
                         " has no manifest.json (a save that did not finish)");
      return std::nullopt;
    }
    SmallString<256> dir(path);
    llvm::sys::path::append(dir, stepDirName(steps.back()));
    c.dir = dir.str().str();
    manifest = dir;
    llvm::sys::path::append(manifest, "manifest.json");
  }
  auto buffer = llvm::MemoryBuffer::getFile(manifest);
  if (!buffer) {
    error = "cannot read " + manifest.str().str();
    return std::nullopt;
  }
  llvm::Expected<json::Value> root = json::parse((*buffer)->getBuffer());
  ManifestReader r{manifest, error};
  if (!root) {
    r.fail("not JSON: " + llvm::toString(root.takeError()));
    return std::nullopt;
  }
  const json::Object *m = root->getAsObject();
  if (!m || m->getString("format") != "loom-checkpoint") {
    r.fail("not a loom checkpoint manifest");
    return std::nullopt;
  }
  if (m->getInteger("version") != 1) {
    r.fail("manifest version is not 1 (written by a newer Loom?)");
    return std::nullopt;
  }
  c.state.step = r.integer(*m, "step");
  c.state.seed = uint64_t(r.integer(*m, "seed"));
  c.state.microBatches = r.integer(*m, "micro_batches");
  c.state.data = m->getString("data").value_or("").str();
  const json::Object *tensors = m->getObject("tensors");
  if (!tensors) {
    r.fail("'tensors' missing");
    return std::nullopt;
  }
  for (const auto &[name, value] : *tensors) {
    const json::Object *t = value.getAsObject();
    if (!t) {
      r.fail("tensor '" + name.str() + "' is not an object");
      return std::nullopt;
    }
    Tensor tensor;
    Type element = dtypeFromName(ctx, t->getString("dtype").value_or(""));
    if (!element)
      r.fail("tensor '" + name.str() + "' has no known dtype");
    tensor.type = RankedTensorType::get(r.ints(*t, "shape"), element
                                                                 ? element
                                                                 : Builder(ctx).getF32Type());
    tensor.trainable = t->getBoolean("trainable").value_or(false);
    const json::Array *pieces = t->getArray("pieces");
    if (!pieces)
      r.fail("tensor '" + name.str() + "' has no pieces");
    for (const json::Value &pv : pieces ? *pieces : json::Array()) {
      const json::Object *p = pv.getAsObject();
      if (!p) {
        r.fail("a piece of '" + name.str() + "' is not an object");
        break;
      }
      Piece piece;
      piece.file = p->getString("file").value_or("").str();
      piece.offset = r.ints(*p, "offset");
      piece.shape = r.ints(*p, "block");
      piece.byteOffset = uint64_t(r.integer(*p, "byte_offset"));
      piece.bytes = uint64_t(r.integer(*p, "bytes"));
      piece.crc = uint32_t(r.integer(*p, "crc32"));
      if (piece.file.empty() || piece.file.find('/') != std::string::npos)
        r.fail("a piece of '" + name.str() + "' names no file in the checkpoint");
      tensor.pieces.push_back(std::move(piece));
    }
    c.tensors[name.str()] = std::move(tensor);
  }
  if (!error.empty())
    return std::nullopt;
  return c;
}

const llvm::MemoryBuffer *Checkpoint::shardFile(const std::string &file,
                                                std::string &error) const {
  auto it = files.find(file);
  if (it != files.end())
    return it->second.get();
  SmallString<256> path(dir);
  llvm::sys::path::append(path, file);
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer) {
    error = llvm::formatv("checkpoint {0}: shard {1} is missing: {2}", dir,
                          file, buffer.getError().message())
                .str();
    return nullptr;
  }
  return (files[file] = std::move(*buffer)).get();
}

/// Why a tensor may not match: top-k residuals are per device.
static std::string mismatchHint(StringRef name) {
  if (name.contains(".error_feedback"))
    return " (top-k error-feedback residuals are state of each device, "
           "stacked along dimension 0 over every device of the mesh: resume "
           "with the same --grad-compression on a mesh of as many devices)";
  return " (a checkpoint of another model?)";
}

std::optional<HostTensor>
Checkpoint::readBlock(StringRef name, RankedTensorType type,
                      ArrayRef<int64_t> offset, RankedTensorType block,
                      std::string &error) const {
  auto it = tensors.find(name.str());
  std::string where = "checkpoint " + dir;
  if (it == tensors.end()) {
    error = where + " has no tensor '" + name.str() + "'" + mismatchHint(name);
    return std::nullopt;
  }
  const Tensor &t = it->second;
  if (t.type != type) {
    std::string got, want;
    llvm::raw_string_ostream g(got), w(want);
    g << t.type;
    w << type;
    error = llvm::formatv("{0}: tensor '{1}' is {2} but the model's is {3}{4}",
                          where, name, got, want, mismatchHint(name))
                .str();
    return std::nullopt;
  }
  int64_t rank = type.getRank();
  SmallVector<int64_t> at(offset);
  at.resize(rank, 0);
  HostTensor out(block);
  int64_t elementBytes = HostTensor::elementBytes(type.getElementType());
  int64_t covered = 0;
  for (const Piece &p : t.pieces) {
    int64_t count = 1;
    for (int64_t s : p.shape)
      count *= s;
    bool fits = p.shape.size() == size_t(rank) &&
                p.offset.size() == size_t(rank) &&
                uint64_t(count * elementBytes) == p.bytes;
    for (int64_t d = 0; fits && d < rank; ++d)
      fits = p.offset[d] + p.shape[d] <= type.getDimSize(d);
    if (!fits) {
      error = llvm::formatv("{0}: a piece of tensor '{1}' does not fit its "
                            "shape (a corrupt manifest)",
                            where, name)
                  .str();
      return std::nullopt;
    }
    // The part of the piece inside the block, per dimension.
    SmallVector<int64_t> lo(rank), extent(rank), srcAt(rank), dstAt(rank);
    int64_t overlap = 1;
    for (int64_t d = 0; d < rank; ++d) {
      lo[d] = std::max(p.offset[d], at[d]);
      int64_t hi = std::min(p.offset[d] + p.shape[d],
                            at[d] + block.getDimSize(d));
      extent[d] = std::max<int64_t>(hi - lo[d], 0);
      overlap *= extent[d];
      srcAt[d] = lo[d] - p.offset[d];
      dstAt[d] = lo[d] - at[d];
    }
    if (overlap == 0 && count != 0)
      continue;
    const llvm::MemoryBuffer *file = shardFile(p.file, error);
    if (!file) {
      error += llvm::formatv(" (tensor '{0}')", name).str();
      return std::nullopt;
    }
    StringRef bytes = file->getBuffer();
    if (p.byteOffset + p.bytes > bytes.size()) {
      error = llvm::formatv("{0}: shard {1} is truncated ({2} bytes; tensor "
                            "'{3}' needs bytes {4}..{5})",
                            where, p.file, bytes.size(), name, p.byteOffset,
                            p.byteOffset + p.bytes)
                  .str();
      return std::nullopt;
    }
    StringRef piece = bytes.substr(p.byteOffset, p.bytes);
    if (llvm::crc32(llvm::arrayRefFromStringRef(piece)) != p.crc) {
      error = llvm::formatv("{0}: shard {1} is corrupt: tensor '{2}' fails "
                            "its CRC-32 check",
                            where, p.file, name)
                  .str();
      return std::nullopt;
    }
    copyBlock(piece.data(), p.shape, srcAt, out.data(), block.getShape(),
              dstAt, extent, elementBytes);
    covered += overlap;
  }
  if (covered != block.getNumElements()) {
    error = llvm::formatv("{0}: the pieces of tensor '{1}' hold {2} of the "
                          "{3} elements wanted (a corrupt manifest)",
                          where, name, covered, block.getNumElements())
                .str();
    return std::nullopt;
  }
  return out;
}

bool Checkpoint::checkResume(const std::set<std::string> &model,
                             int64_t steps, std::string &error) const {
  std::vector<std::string> extra;
  for (const auto &[name, t] : tensors)
    if (!model.count(name))
      extra.push_back(name);
  if (!extra.empty()) {
    error = llvm::formatv("checkpoint {0} holds tensors the model does not "
                          "have: {1}{2} (a checkpoint of another model?)",
                          dir,
                          llvm::join(llvm::ArrayRef(extra).take_front(5), ", "),
                          extra.size() > 5 ? ", ..." : "")
                .str();
    return false;
  }
  if (state.step >= steps) {
    error = llvm::formatv("checkpoint {0} is at step {1}: --steps (the total "
                          "to reach) must be more than that",
                          dir, state.step)
                .str();
    return false;
  }
  return true;
}

std::optional<CheckpointState> mlir::loom::resumeFromCheckpoint(
    StringRef path, MLIRContext *ctx, ArrayRef<CheckpointEntry> entries,
    const DistributedContext *mesh, const ResumeOptions &options,
    std::string &error) {
  std::optional<Checkpoint> ckpt = Checkpoint::open(path, ctx, error);
  bool ok = ckpt.has_value();
  std::set<std::string> used;
  for (const CheckpointEntry &e : entries) {
    if (!ok)
      break;
    RankedTensorType local = e.local->getType();
    RankedTensorType global = mesh ? mesh->globalType(local, e.sharding) : local;
    SmallVector<int64_t> offset;
    if (mesh)
      offset = mesh->blockOffset(global.getShape(), e.sharding);
    std::optional<HostTensor> block =
        ckpt->readBlock(e.name, global, offset, local, error);
    ok = block.has_value();
    if (ok)
      *e.local = std::move(*block);
    used.insert(e.name);
  }
  ok = ok && ckpt->checkResume(
                  options.modelTensors.empty() ? used : options.modelTensors,
                  options.steps, error);
  if (mesh && !mesh->agree(ok, "load the checkpoint", error))
    return std::nullopt;
  if (!ok)
    return std::nullopt;
  const CheckpointState &s = ckpt->getState();
  if (!mesh || mesh->rank() == 0) {
    if (s.seed != options.seed || s.data != options.data)
      llvm::errs() << llvm::formatv(
          "loom-run: warning: {0} was trained with --data {1} --seed {2}; "
          "continuing with --data {3} --seed {4}\n",
          ckpt->getDirectory(), s.data, s.seed, options.data, options.seed)
                          .str();
    llvm::outs() << llvm::formatv("resuming from {0} at step {1}\n",
                                  ckpt->getDirectory(), s.step);
  }
  return s;
}
