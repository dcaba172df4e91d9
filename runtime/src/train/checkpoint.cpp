//===- checkpoint.cpp - Sharded training checkpoints ----------------------===//
//
// Saving: every rank writes its shard file and a piece index durably
// (temporary name, fsync, rename), the ranks agree that all did, rank 0
// merges the indexes into manifest.json (again durably: the manifest is
// the commit point), prunes old checkpoints, and the ranks agree once more
// so that no rank runs ahead of a save that is not on disk yet.
//
//===----------------------------------------------------------------------===//

#include "loom/checkpoint.h"

#include "json.h"
#include "mesh.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace loom::program;
using JValue = loom::json::Value;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

uint32_t loom::program::crc32(const void *data, size_t size, uint32_t crc) {
  static uint32_t table[256];
  static bool ready = [] {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k)
        c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
      table[i] = c;
    }
    return true;
  }();
  (void)ready;
  const unsigned char *p = static_cast<const unsigned char *>(data);
  uint32_t c = crc ^ 0xffffffffu;
  for (size_t i = 0; i < size; ++i)
    c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

std::string loom::program::tensorTypeText(loom_dtype_t dtype,
                                          const std::vector<int64_t> &shape) {
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += std::to_string(d) + "x";
  return s + loom_dtype_name(dtype) + ">";
}

uint32_t loom::program::pieceChecksum(const std::string &name,
                                      const std::string &dtype,
                                      const std::vector<int64_t> &shape,
                                      const std::vector<int64_t> &offset,
                                      const std::vector<int64_t> &block,
                                      int64_t step, const void *bytes,
                                      size_t size) {
  auto list = [](const std::vector<int64_t> &v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i)
      s += (i ? "," : "") + std::to_string(v[i]);
    return s;
  };
  std::string header = name + "\n" + dtype + "\n" + list(shape) + "\n" +
                       list(offset) + "\n" + list(block) + "\n" +
                       std::to_string(step) + "\n";
  return crc32(bytes, size, crc32(header.data(), header.size()));
}

namespace {

/// The dtype name a checkpoint records (numpy's names, and "bfloat16").
const char *checkpointDType(loom_dtype_t t) {
  switch (t) {
  case LOOM_DTYPE_F32:
    return "float32";
  case LOOM_DTYPE_F64:
    return "float64";
  case LOOM_DTYPE_F16:
    return "float16";
  case LOOM_DTYPE_BF16:
    return "bfloat16";
  case LOOM_DTYPE_BOOL:
    return "bool";
  case LOOM_DTYPE_I8:
    return "int8";
  case LOOM_DTYPE_I16:
    return "int16";
  case LOOM_DTYPE_I32:
    return "int32";
  case LOOM_DTYPE_I64:
    return "int64";
  case LOOM_DTYPE_U8:
    return "uint8";
  case LOOM_DTYPE_U16:
    return "uint16";
  case LOOM_DTYPE_U32:
    return "uint32";
  case LOOM_DTYPE_U64:
    return "uint64";
  }
  return "";
}

bool dtypeFromName(const std::string &name, loom_dtype_t &out) {
  for (int t = LOOM_DTYPE_F32; t <= LOOM_DTYPE_BOOL; ++t)
    if (name == checkpointDType(loom_dtype_t(t))) {
      out = loom_dtype_t(t);
      return true;
    }
  return false;
}

/// Makes a rename in `dir` durable.
void syncDirectory(const std::string &dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

bool exists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

bool isDirectory(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

/// mkdir -p.
bool createDirectories(const std::string &path, std::string &error) {
  std::string at;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    at = path.substr(0, pos);
    if (at.empty() || isDirectory(at))
      continue;
    if (::mkdir(at.c_str(), 0777) != 0 && errno != EEXIST) {
      error = "cannot create " + path + ": " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

/// rm -r of a directory of files.
void removeDirectory(const std::string &dir) {
  if (DIR *d = ::opendir(dir.c_str())) {
    while (dirent *e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..")
        ::unlink((dir + "/" + name).c_str());
    }
    ::closedir(d);
  }
  ::rmdir(dir.c_str());
}

bool readWholeFile(const std::string &path, std::string &out) {
  // Regular files only, opened without waiting (a FIFO named
  // manifest.json would block the reader until a writer came).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat st;
  if (fd < 0)
    return false;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return false;
  }
  FILE *f = ::fdopen(fd, "rb");
  if (!f) {
    ::close(fd);
    return false;
  }
  out.clear();
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0)
    out.append(buf, n);
  bool ok = !std::ferror(f);
  std::fclose(f);
  return ok;
}

std::string stepDirName(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof(name), "step-%08lld", (long long)step);
  return name;
}

std::string rankFile(int rank, const char *suffix) {
  char name[32];
  std::snprintf(name, sizeof(name), "rank-%05d.%s", rank, suffix);
  return name;
}

JValue ints(const std::vector<int64_t> &values) {
  JValue a = JValue::array();
  for (int64_t v : values)
    a.push_back(JValue(v));
  return a;
}

/// This rank's shard: the bytes and the index of its pieces.
struct Shard {
  std::string bytes;
  JValue pieces = JValue::array();
};

bool buildShard(const std::vector<CheckpointEntry> &entries, loom_mesh_t mesh,
                const std::string &file, int32_t pipelineAxis, int64_t step,
                Shard &shard, std::string &error) {
  for (const CheckpointEntry &e : entries) {
    const Tensor &t = *e.local;
    std::string dtype = checkpointDType(t.dtype);
    bool partial = e.sharding && !e.sharding->partial.empty();
    if (dtype.empty() || partial) {
      error = "cannot checkpoint '" + e.name + "' (" +
              tensorTypeText(t.dtype, t.shape) +
              (partial ? ", a partial value" : "") + ")";
      return false;
    }
    if (mesh && !mesh::isFirstCopy(mesh, e.sharding, pipelineAxis))
      continue;
    std::vector<int64_t> offset(t.shape.size(), 0);
    if (mesh && e.sharding)
      offset = blockOffset(mesh, e.global, *e.sharding);
    // 64-byte aligned pieces: a reader may map them in place.
    shard.bytes.resize((shard.bytes.size() + 63) / 64 * 64, '\0');
    uint64_t at = shard.bytes.size();
    shard.bytes.append(t.bytes.data(), t.bytes.size());
    JValue sharding = JValue::array();
    if (e.sharding)
      for (const auto &dim : e.sharding->dims) {
        JValue axes = JValue::array();
        for (int32_t a : dim)
          axes.push_back(JValue(std::string(loom_mesh_axis_name(mesh, a))));
        sharding.push_back(std::move(axes));
      }
    JValue piece = JValue::object();
    piece["name"] = e.name;
    piece["dtype"] = dtype;
    piece["shape"] = ints(e.global);
    piece["sharding"] = std::move(sharding);
    piece["trainable"] = e.trainable;
    piece["file"] = file;
    piece["offset"] = ints(offset);
    piece["block"] = ints(t.shape);
    piece["byte_offset"] = int64_t(at);
    piece["bytes"] = int64_t(t.bytes.size());
    piece["crc32"] = int64_t(pieceChecksum(e.name, dtype, e.global, offset,
                                           t.shape, step, t.bytes.data(),
                                           t.bytes.size()));
    shard.pieces.push_back(std::move(piece));
  }
  return true;
}

/// Rank 0: every rank's piece index merged per tensor (a block written by
/// several ranks, e.g. a step counter on every pipeline stage, once).
bool writeManifest(const std::string &stepDir, const CheckpointState &state,
                   loom_mesh_t mesh, std::string &error) {
  std::map<std::string, JValue> tensors;
  std::map<std::string, std::set<std::vector<int64_t>>> seen;
  int ranks = mesh ? mesh::size(mesh) : 1;
  for (int r = 0; r < ranks; ++r) {
    std::string path = stepDir + "/" + rankFile(r, "json"), text, why;
    JValue index;
    if (!readWholeFile(path, text)) {
      error = "cannot read " + path;
      return false;
    }
    if (!loom::json::parse(text, index, why) || !index.getArray()) {
      error = path + " is not a piece index";
      return false;
    }
    for (const JValue &p : *index.getArray()) {
      const JValue *name = p.get("name"), *offset = p.get("offset");
      if (!name || !name->getString() || !offset || !offset->getArray()) {
        error = path + " is not a piece index";
        return false;
      }
      std::vector<int64_t> at;
      for (const JValue &o : *offset->getArray())
        at.push_back(o.getInteger().value_or(-1));
      if (!seen[*name->getString()].insert(at).second)
        continue;
      JValue &t = tensors[*name->getString()];
      if (t.isNull()) {
        t = JValue::object();
        for (const char *key : {"dtype", "shape", "sharding", "trainable"})
          if (const JValue *v = p.get(key))
            t[key] = *v;
        t["pieces"] = JValue::array();
      }
      JValue piece = JValue::object();
      for (const char *key :
           {"file", "offset", "block", "byte_offset", "bytes", "crc32"})
        if (const JValue *v = p.get(key))
          piece[key] = *v;
      t["pieces"].push_back(std::move(piece));
    }
  }
  JValue meshInfo = JValue::object();
  if (mesh) {
    JValue axes = JValue::array();
    for (int32_t a = 0; a < loom_mesh_num_axes(mesh); ++a)
      axes.push_back(JValue::array({JValue(std::string(loom_mesh_axis_name(mesh, a))),
                                   JValue(loom_mesh_axis_size(mesh, a))}));
    meshInfo["axes"] = std::move(axes);
  }
  meshInfo["ranks"] = ranks;
  JValue manifest = JValue::object();
  manifest["format"] = "loom-checkpoint";
  // Version 2: piece checksums cover the piece's place (pieceChecksum).
  manifest["version"] = 2;
  manifest["step"] = state.step;
  manifest["seed"] = int64_t(state.seed);
  manifest["data"] = state.data;
  manifest["micro_batches"] = state.microBatches;
  manifest["mesh"] = std::move(meshInfo);
  manifest["tensors"] = JValue::object(std::move(tensors));
  std::string text = manifest.print(2) + "\n";
  if (!writeFileAtomically(stepDir + "/manifest.json", text.data(),
                           text.size(), error))
    return false;
  syncDirectory(stepDir);
  return true;
}

/// The steps of ROOT's complete checkpoints (and incomplete ones in
/// `partial`), ascending.
std::vector<int64_t> listCheckpoints(const std::string &root,
                                     std::vector<int64_t> *partial) {
  std::vector<int64_t> steps;
  if (DIR *d = ::opendir(root.c_str())) {
    while (dirent *e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name.rfind("step-", 0) != 0 || name.size() == 5)
        continue;
      char *end = nullptr;
      long long step = std::strtoll(name.c_str() + 5, &end, 10);
      if (*end || step < 0)
        continue;
      if (exists(root + "/" + name + "/manifest.json"))
        steps.push_back(step);
      else if (partial)
        partial->push_back(step);
    }
    ::closedir(d);
  }
  std::sort(steps.begin(), steps.end());
  if (partial)
    std::sort(partial->begin(), partial->end());
  return steps;
}

/// Deletes all but the newest `keep` complete checkpoints and incomplete
/// ones older than the newest complete one.
void prune(const std::string &root, int64_t keep) {
  std::vector<int64_t> partial;
  std::vector<int64_t> complete = listCheckpoints(root, &partial);
  if (complete.empty())
    return;
  std::vector<int64_t> doomed;
  for (int64_t s : partial)
    if (s < complete.back())
      doomed.push_back(s);
  if (keep > 0 && int64_t(complete.size()) > keep)
    doomed.insert(doomed.end(), complete.begin(), complete.end() - keep);
  for (int64_t s : doomed) {
    std::string dir = root + "/" + stepDirName(s);
    // Manifest first: a half-deleted checkpoint is an incomplete one.
    ::unlink((dir + "/manifest.json").c_str());
    removeDirectory(dir);
  }
}

} // namespace

bool loom::program::saveCheckpoint(const std::string &root,
                                   const CheckpointState &state,
                                   const std::vector<CheckpointEntry> &entries,
                                   loom_mesh_t mesh,
                                   const CheckpointSaveOptions &options,
                                   std::string &error) {
  int rank = mesh ? mesh::rank(mesh) : 0;
  std::string stepDir = root + "/" + stepDirName(state.step);
  std::string file = rankFile(rank, "bin");
  bool ok = createDirectories(stepDir, error);
  // A checkpoint of this step from an earlier run stops being complete
  // before any of its shards changes (rank 0 drops its manifest, then the
  // ranks agree), so a save killed midway never leaves a manifest over
  // rewritten shards.
  if (ok && rank == 0) {
    std::string manifest = stepDir + "/manifest.json";
    if (exists(manifest)) {
      if (::unlink(manifest.c_str()) != 0) {
        error = "cannot replace " + manifest + ": " + std::strerror(errno);
        ok = false;
      }
      syncDirectory(stepDir);
    }
  }
  if (mesh && !mesh::agree(mesh, ok, "prepare the checkpoint directory", error))
    return false;
  Shard shard;
  ok = ok && buildShard(entries, mesh, file, options.pipelineAxis, state.step,
                        shard, error);
  if (ok) {
    // Every rank writes its index, empty when it holds no first copies: a
    // stale index of an earlier save of this step is never merged.
    bool empty = shard.pieces.getArray()->empty();
    std::string text = shard.pieces.print();
    ok = (empty || writeFileAtomically(stepDir + "/" + file, shard.bytes.data(),
                                       shard.bytes.size(), error)) &&
         writeFileAtomically(stepDir + "/" + rankFile(rank, "json"),
                             text.data(), text.size(), error);
  }
  if (options.dieBeforeManifest) {
    // One write: mpirun interleaves ranks' output.
    char line[160];
    std::snprintf(line, sizeof(line),
                  "loom: LOOM_FAULT: rank %d dies saving step %lld, before "
                  "the manifest\n",
                  rank, (long long)state.step);
    ssize_t unused = ::write(2, line, std::strlen(line));
    (void)unused;
    std::raise(SIGKILL);
  }
  if (mesh && !mesh::agree(mesh, ok, "write its checkpoint shard", error))
    return false;
  if (!ok)
    return false;
  if (rank == 0) {
    syncDirectory(stepDir);
    ok = writeManifest(stepDir, state, mesh, error);
    if (ok)
      prune(root, options.keep);
  }
  return !mesh || mesh::agree(mesh, ok, "write the checkpoint manifest", error);
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

namespace {
/// Reads manifest fields, remembering the first thing missing or wrong.
struct ManifestReader {
  std::string path;
  std::string &error;

  bool fail(const std::string &what) {
    if (error.empty())
      error = path + ": " + what;
    return false;
  }
  std::vector<int64_t> ints(const JValue &o, const std::string &key) {
    std::vector<int64_t> out;
    const JValue *v = o.get(key);
    const std::vector<JValue> *a = v ? v->getArray() : nullptr;
    if (!a) {
      fail("'" + key + "' missing");
      return out;
    }
    if (a->size() > 64) {
      fail("'" + key + "' has more than 64 entries");
      return out;
    }
    for (const JValue &x : *a) {
      std::optional<int64_t> i = x.getInteger();
      if (!i || *i < 0)
        fail("'" + key + "' holds something other than sizes");
      out.push_back(i.value_or(0));
    }
    return out;
  }
  int64_t integer(const JValue &o, const std::string &key) {
    const JValue *v = o.get(key);
    std::optional<int64_t> i = v ? v->getInteger() : std::nullopt;
    if (!i)
      fail("'" + key + "' " + (v ? "is not an integer" : "missing"));
    return i.value_or(0);
  }
};

std::string lastComponent(const std::string &path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/')
    p.pop_back();
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

/// Whether `t`'s pieces tile its shape exactly: each fits inside it, and
/// each element is in exactly one piece (counting elements let a shifted
/// piece leave a row of zeros behind). The pieces' cut points split each
/// dimension into intervals; every cell of that grid is counted once.
bool exactCover(const Checkpoint::Tensor &t, std::string &why) {
  size_t rank = t.shape.size();
  std::vector<std::vector<int64_t>> cuts(rank);
  for (size_t d = 0; d < rank; ++d)
    cuts[d] = {0, t.shape[d]};
  for (const Checkpoint::Piece &p : t.pieces) {
    if (p.offset.size() != rank || p.shape.size() != rank) {
      why = "have another rank than the tensor";
      return false;
    }
    for (size_t d = 0; d < rank; ++d) {
      if (p.offset[d] > t.shape[d] || p.shape[d] > t.shape[d] - p.offset[d]) {
        why = "reach outside it (dimension " + std::to_string(d) + ")";
        return false;
      }
      cuts[d].push_back(p.offset[d]);
      cuts[d].push_back(p.offset[d] + p.shape[d]);
    }
  }
  const int64_t kMaxCells = int64_t(1) << 22;
  int64_t cells = 1;
  for (std::vector<int64_t> &c : cuts) {
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
    int64_t n = int64_t(c.size()) - 1;
    cells = n == 0 || cells == 0 ? 0 : cells > kMaxCells / n ? -1 : cells * n;
    if (cells < 0) {
      why = "split it into more than 2^22 cells";
      return false;
    }
  }
  std::vector<uint8_t> count(size_t(cells), 0);
  for (const Checkpoint::Piece &p : t.pieces) {
    std::vector<int64_t> lo(rank), hi(rank), at(rank);
    bool empty = false;
    for (size_t d = 0; d < rank; ++d) {
      auto index = [&](int64_t x) {
        return int64_t(std::lower_bound(cuts[d].begin(), cuts[d].end(), x) -
                       cuts[d].begin());
      };
      lo[d] = at[d] = index(p.offset[d]);
      hi[d] = index(p.offset[d] + p.shape[d]);
      empty |= lo[d] == hi[d];
    }
    if (empty || cells == 0)
      continue;
    while (true) {
      int64_t cell = 0;
      for (size_t d = 0; d < rank; ++d)
        cell = cell * (int64_t(cuts[d].size()) - 1) + at[d];
      if (count[size_t(cell)]++) {
        why = "overlap (an element is written twice)";
        return false;
      }
      size_t d = rank;
      while (d > 0 && ++at[d - 1] == hi[d - 1]) {
        at[d - 1] = lo[d - 1];
        --d;
      }
      if (d == 0)
        break;
    }
  }
  if (std::find(count.begin(), count.end(), 0) != count.end()) {
    why = "leave elements uncovered";
    return false;
  }
  return true;
}

/// Why a tensor may not match: top-k residuals are per device.
std::string mismatchHint(const std::string &name) {
  if (name.find(".error_feedback") != std::string::npos)
    return " (top-k error-feedback residuals are state of each device, "
           "stacked along dimension 0 over every device of the mesh: resume "
           "with the same --grad-compression on a mesh of as many devices)";
  return " (a checkpoint of another model?)";
}

} // namespace

std::optional<Checkpoint> Checkpoint::open(const std::string &path,
                                           std::string &error) {
  if (!isDirectory(path)) {
    error = "no checkpoint at " + path + ": not a directory";
    return std::nullopt;
  }
  Checkpoint c;
  c.dir = path;
  std::string manifest = path + "/manifest.json";
  if (!exists(manifest)) {
    std::vector<int64_t> partial;
    std::vector<int64_t> steps = listCheckpoints(path, &partial);
    if (steps.empty()) {
      bool isStep = lastComponent(path).rfind("step-", 0) == 0;
      error = "no complete checkpoint in " + path +
              (isStep ? std::string(": it has no manifest.json (a save that "
                                    "did not finish, or a manifest lost)")
               : partial.empty()
                   ? std::string(": no manifest.json and no step-* directories")
                   : ": " + stepDirName(partial.back()) +
                         " has no manifest.json (a save that did not finish)");
      return std::nullopt;
    }
    c.dir = path + "/" + stepDirName(steps.back());
    manifest = c.dir + "/manifest.json";
  }
  std::string text, why;
  if (!readWholeFile(manifest, text)) {
    struct stat st;
    error = "cannot read " + manifest +
            (::stat(manifest.c_str(), &st) == 0 && !S_ISREG(st.st_mode)
                 ? ": not a regular file"
                 : "");
    return std::nullopt;
  }
  ManifestReader r{manifest, error};
  JValue root;
  if (!loom::json::parse(text, root, why)) {
    r.fail("not JSON: " + why);
    return std::nullopt;
  }
  const JValue *format = root.get("format");
  if (!root.getObject() || !format || !format->getString() ||
      *format->getString() != "loom-checkpoint") {
    r.fail("not a loom checkpoint manifest");
    return std::nullopt;
  }
  const JValue *version = root.get("version");
  std::optional<int64_t> v = version ? version->getInteger() : std::nullopt;
  if (!v || (*v != 1 && *v != 2)) {
    r.fail("manifest version is not 1 or 2 (written by a newer Loom?)");
    return std::nullopt;
  }
  c.version = int(*v);
  c.state.step = r.integer(root, "step");
  c.state.seed = uint64_t(r.integer(root, "seed"));
  c.state.microBatches = r.integer(root, "micro_batches");
  // The step decides where training resumes and which folder the next
  // save replaces: it must be the one the folder was saved as.
  if (error.empty() && c.state.step < 0)
    r.fail("'step' is negative (" + std::to_string(c.state.step) + ")");
  std::string folder = lastComponent(c.dir);
  if (error.empty() && folder.rfind("step-", 0) == 0 &&
      folder != stepDirName(c.state.step))
    r.fail("'step' is " + std::to_string(c.state.step) + " but the folder is " +
           folder + " (a manifest of another save?)");
  if (error.empty() && c.state.microBatches < 1)
    r.fail("'micro_batches' is " + std::to_string(c.state.microBatches) +
           " (at least 1)");
  const JValue *data = root.get("data");
  c.state.data = data && data->getString() ? *data->getString() : "";
  const JValue *tensors = root.get("tensors");
  if (!tensors || !tensors->getObject()) {
    r.fail("'tensors' missing");
    return std::nullopt;
  }
  for (const auto &[name, t] : *tensors->getObject()) {
    if (!t.getObject()) {
      r.fail("tensor '" + name + "' is not an object");
      return std::nullopt;
    }
    Tensor tensor;
    const JValue *dtype = t.get("dtype");
    if (!dtype || !dtype->getString() ||
        !dtypeFromName(*dtype->getString(), tensor.dtype))
      r.fail("tensor '" + name + "' has no known dtype");
    tensor.shape = r.ints(t, "shape");
    const JValue *trainable = t.get("trainable");
    tensor.trainable = trainable && trainable->getBool().value_or(false);
    const JValue *pieces = t.get("pieces");
    if (!pieces || !pieces->getArray())
      r.fail("tensor '" + name + "' has no pieces");
    else
      for (const JValue &p : *pieces->getArray()) {
        if (!p.getObject()) {
          r.fail("a piece of '" + name + "' is not an object");
          break;
        }
        Piece piece;
        const JValue *file = p.get("file");
        piece.file = file && file->getString() ? *file->getString() : "";
        piece.offset = r.ints(p, "offset");
        piece.shape = r.ints(p, "block");
        piece.byteOffset = uint64_t(r.integer(p, "byte_offset"));
        piece.bytes = uint64_t(r.integer(p, "bytes"));
        piece.crc = uint32_t(r.integer(p, "crc32"));
        if (piece.file.empty() || piece.file.find('/') != std::string::npos)
          r.fail("a piece of '" + name +
                 "' names no file in the checkpoint");
        tensor.pieces.push_back(std::move(piece));
      }
    std::string why;
    if (error.empty() && !exactCover(tensor, why))
      r.fail("the pieces of tensor '" + name + "' " + why);
    c.tensors[name] = std::move(tensor);
  }
  if (!error.empty())
    return std::nullopt;
  return c;
}

const InputFile *Checkpoint::shardFile(const std::string &file,
                                       std::string &error) const {
  auto it = files.find(file);
  if (it != files.end())
    return it->second.get();
  auto f = std::make_unique<InputFile>();
  std::string path = dir + "/" + file, why;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    error = "checkpoint " + dir + ": shard " + file + " is missing: " +
            std::strerror(errno);
    return nullptr;
  }
  if (!f->open(path, why)) {
    error = "checkpoint " + dir + ": shard " + file + " is missing: " + why;
    return nullptr;
  }
  return (files[file] = std::move(f)).get();
}

std::optional<loom::program::Tensor>
Checkpoint::readBlock(const std::string &name, loom_dtype_t dtype,
                      const std::vector<int64_t> &shape,
                      const std::vector<int64_t> &offset,
                      const std::vector<int64_t> &block,
                      std::string &error) const {
  auto it = tensors.find(name);
  std::string where = "checkpoint " + dir;
  if (it == tensors.end()) {
    error = where + " has no tensor '" + name + "'" + mismatchHint(name);
    return std::nullopt;
  }
  const Tensor &t = it->second;
  if (t.dtype != dtype || t.shape != shape) {
    error = where + ": tensor '" + name + "' is " +
            tensorTypeText(t.dtype, t.shape) + " but the model's is " +
            tensorTypeText(dtype, shape) + mismatchHint(name);
    return std::nullopt;
  }
  size_t rank = shape.size();
  std::vector<int64_t> at(offset);
  at.resize(rank, 0);
  program::Tensor out(dtype, block);
  int64_t elementBytes = int64_t(loom_dtype_size(dtype));
  int64_t covered = 0;
  std::vector<char> bytes;
  for (const Piece &p : t.pieces) {
    int64_t count = 1;
    bool fits = p.shape.size() == rank && p.offset.size() == rank;
    for (int64_t s : p.shape)
      count = s > 0 && count > (int64_t(1) << 46) / s ? -1 : count * s;
    fits = fits && count >= 0 && uint64_t(count * elementBytes) == p.bytes;
    for (size_t d = 0; fits && d < rank; ++d)
      fits = p.offset[d] <= shape[d] && p.shape[d] <= shape[d] - p.offset[d];
    if (!fits) {
      error = where + ": a piece of tensor '" + name +
              "' does not fit its shape (a corrupt manifest)";
      return std::nullopt;
    }
    // The part of the piece inside the block, per dimension.
    std::vector<int64_t> lo(rank), extent(rank), srcAt(rank), dstAt(rank);
    int64_t overlap = 1;
    for (size_t d = 0; d < rank; ++d) {
      lo[d] = std::max(p.offset[d], at[d]);
      int64_t hi = std::min(p.offset[d] + p.shape[d], at[d] + block[d]);
      extent[d] = std::max<int64_t>(hi - lo[d], 0);
      overlap *= extent[d];
      srcAt[d] = lo[d] - p.offset[d];
      dstAt[d] = lo[d] - at[d];
    }
    if (overlap == 0 && count != 0)
      continue;
    const InputFile *file = shardFile(p.file, error);
    if (!file) {
      error += " (tensor '" + name + "')";
      return std::nullopt;
    }
    if (p.byteOffset > file->size() || p.bytes > file->size() - p.byteOffset) {
      error = where + ": shard " + p.file + " is truncated (" +
              std::to_string(file->size()) + " bytes; tensor '" + name +
              "' needs bytes " + std::to_string(p.byteOffset) + ".." +
              std::to_string(p.byteOffset + p.bytes) + ")";
      return std::nullopt;
    }
    bytes.resize(size_t(p.bytes));
    std::string why;
    if (!file->read(p.byteOffset, bytes.size(), bytes.data(), why)) {
      error = where + ": " + why;
      return std::nullopt;
    }
    uint32_t sum = version == 1
                       ? crc32(bytes.data(), bytes.size())
                       : pieceChecksum(name, checkpointDType(t.dtype), t.shape,
                                       p.offset, p.shape, state.step,
                                       bytes.data(), bytes.size());
    if (sum != p.crc) {
      error = where + ": shard " + p.file + " is corrupt: tensor '" + name +
              "' fails its CRC-32 check" +
              (version == 1 ? std::string()
                            : " (its bytes, or its name, shape, place or "
                              "step in the manifest, changed)");
      return std::nullopt;
    }
    copyBlock(bytes.data(), p.shape, srcAt, out.bytes.data(), block, dstAt,
              extent, elementBytes);
    covered += overlap;
  }
  if (covered != numElements(block)) {
    error = where + ": the pieces of tensor '" + name + "' hold " +
            std::to_string(covered) + " of the " +
            std::to_string(numElements(block)) +
            " elements wanted (a corrupt manifest)";
    return std::nullopt;
  }
  return out;
}

bool Checkpoint::checkResume(const std::set<std::string> &model, int64_t steps,
                             std::string &error) const {
  std::vector<std::string> extra;
  for (const auto &[name, t] : tensors)
    if (!model.count(name))
      extra.push_back(name);
  if (!extra.empty()) {
    std::string list;
    for (size_t i = 0; i < extra.size() && i < 5; ++i)
      list += (i ? ", " : "") + extra[i];
    error = "checkpoint " + dir + " holds tensors the model does not have: " +
            list + (extra.size() > 5 ? ", ..." : "") +
            " (a checkpoint of another model?)";
    return false;
  }
  if (state.step >= steps) {
    error = "checkpoint " + dir + " is at step " + std::to_string(state.step) +
            ": --steps (the total to reach) must be more than that";
    return false;
  }
  return true;
}

std::optional<CheckpointState> loom::program::resumeFromCheckpoint(
    const std::string &path, const std::vector<CheckpointEntry> &entries,
    loom_mesh_t mesh, const ResumeOptions &options, std::string &error) {
  std::optional<Checkpoint> ckpt = Checkpoint::open(path, error);
  bool ok = ckpt.has_value();
  std::set<std::string> used;
  for (const CheckpointEntry &e : entries) {
    if (!ok)
      break;
    std::vector<int64_t> offset;
    if (mesh && e.sharding)
      offset = blockOffset(mesh, e.global, *e.sharding);
    std::optional<program::Tensor> block = ckpt->readBlock(
        e.name, e.local->dtype, e.global, offset, e.local->shape, error);
    ok = block.has_value();
    if (ok)
      *e.local = std::move(*block);
    used.insert(e.name);
  }
  ok = ok && ckpt->checkResume(
                 options.modelTensors.empty() ? used : options.modelTensors,
                 options.steps, error);
  if (mesh && !mesh::agree(mesh, ok, "load the checkpoint", error))
    return std::nullopt;
  if (!ok)
    return std::nullopt;
  const CheckpointState &s = ckpt->getState();
  if (!mesh || mesh::rank(mesh) == 0) {
    if ((s.seed != options.seed || s.data != options.data) && options.warn)
      options.warn("warning: " + ckpt->getDirectory() +
                   " was trained with --data " + s.data + " --seed " +
                   std::to_string(s.seed) + "; continuing with --data " +
                   options.data + " --seed " + std::to_string(options.seed));
    if (options.note)
      options.note("resuming from " + ckpt->getDirectory() + " at step " +
                   std::to_string(s.step));
  }
  return s;
}
