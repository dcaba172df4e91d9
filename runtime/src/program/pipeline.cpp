//===- pipeline.cpp - The training loop of a pipelined step ----------------===//
//
// Loom's training loop (loom/train.h) for a pipelined step (loom-split-
// stages, loom-schedule-pipeline), for rank programs and loom-run's JIT
// alike: each process finds its pipeline rank (its coordinate on the
// mesh's pp axis) and its stages, and per step runs its schedule's
// actions. Receives are posted when the step starts and waited
// for by RECV actions; sends are posted by SEND actions and completed when
// the step ends. Stashes hold what a stage's backward reads per
// micro-batch; weight gradients are summed over micro-batches in
// micro-batch order and handed to the stage's update program once per
// step. Synthetic data is the unpipelined step's (drawn per (seed, step,
// input), each micro-batch its block) and files are read per
// micro-batch. Checkpoints are saved and resumed as for an unpipelined
// step (each stage's first rank writes its stage's tensors); the trace
// records every action's span.
//
//===----------------------------------------------------------------------===//

#include "internal.h"

#include "../train/mesh.h"
#include "loom/checkpoint.h"
#include "loom/kernels.h"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <sys/stat.h>
#include <tuple>
#include <unistd.h>

using namespace loom::program;
using namespace loom::program::detail;

namespace {

enum class Act { F, B, I, W, SendF, RecvF, SendB, RecvB, U };

struct Action {
  Act kind;
  int stage = 0, micro = 0;
};

/// "F(1,3)", "SEND_B(0,2)", "U(1)" (as loom-schedule-pipeline prints them).
bool parseAction(const std::string &text, Action &a) {
  static const std::pair<const char *, Act> names[] = {
      {"F", Act::F},          {"B", Act::B},          {"I", Act::I},
      {"W", Act::W},          {"SEND_F", Act::SendF}, {"RECV_F", Act::RecvF},
      {"SEND_B", Act::SendB}, {"RECV_B", Act::RecvB}, {"U", Act::U}};
  size_t open = text.find('(');
  if (open == std::string::npos || text.back() != ')')
    return false;
  std::string name = text.substr(0, open),
              inner = text.substr(open + 1, text.size() - open - 2);
  for (auto &[n, k] : names) {
    if (name != n)
      continue;
    a.kind = k;
    char *end = nullptr;
    long s = std::strtol(inner.c_str(), &end, 10);
    if (end == inner.c_str() || s < 0)
      return false;
    a.stage = int(s);
    if (k == Act::U)
      return *end == 0;
    if (*end != ',')
      return false;
    const char *rest = end + 1;
    long m = std::strtol(rest, &end, 10);
    if (end == rest || *end || m < 0)
      return false;
    a.micro = int(m);
    return true;
  }
  return false;
}

/// What an argument or result is to the pipeline.
struct Port {
  enum Kind { Param, Data, Recv, RecvGrad, Send, SendGrad, Stash, Grad, Loss,
              Update, Other } kind = Other;
  int index = 0;
};

Port portOf(const Value &v, bool result) {
  Port p;
  if (!v.port.empty()) {
    size_t colon = v.port.find(':');
    std::string kind = v.port.substr(0, colon);
    p.index = colon == std::string::npos ? 0 : std::atoi(v.port.c_str() + colon + 1);
    p.kind = kind == "recv"        ? Port::Recv
             : kind == "recv_grad" ? Port::RecvGrad
             : kind == "send"      ? Port::Send
             : kind == "send_grad" ? Port::SendGrad
             : kind == "stash"     ? Port::Stash
             : kind == "grad"      ? Port::Grad
                                   : Port::Other;
    return p;
  }
  if (!v.parameter.empty())
    p.kind = result ? Port::Update : Port::Param;
  else if (!v.name.empty())
    p.kind = result && v.name == "loss" ? Port::Loss
             : result                   ? Port::Other
                                        : Port::Data;
  return p;
}

const char *kKinds[] = {"forward", "backward_input", "backward_weight",
                        "update"};

struct Program {
  const StageProgram *desc = nullptr;
  PackedEntry entry = nullptr;
  std::vector<Port> args, results;
};

struct Stage {
  int index = 0;
  Program programs[4];
};

class PipelineTrainer {
public:
  PipelineTrainer(const Manifest &m,
                  const std::function<PackedEntry(const std::string &)> &lookup,
                  const TrainOptions &o, TrainResult &result,
                  std::string &error)
      : m(m), lookup(lookup), o(o), result(result), error(error) {}
  ~PipelineTrainer() {
    loom_rt_set_mesh(nullptr);
    loom_mesh_destroy(mesh);
    loom_runtime_destroy(runtime);
  }

  bool run() {
    return setUp() && findPrograms() && warmGroups() && bindParameters() &&
           resume() && openData() && runSteps() &&
           (!o.trace || gatherTrace(mesh, result.trace, error)) &&
           save(o.paramsOut, true) && save(o.stateOut, false);
  }

private:
  bool setUp();
  bool findPrograms();
  bool warmGroups();
  bool forEachNamedArg(
      Port::Kind kind,
      const std::function<bool(Program &, size_t, const Value &)> &fn);
  bool bindParameters();
  std::vector<CheckpointEntry> checkpointEntries();
  bool resume();
  bool saveCheckpoint(int64_t stepsDone);
  bool openData();
  bool runSteps();
  /// With TrainOptions::trace: starts the trace (ranks agree on its time 0
  /// at a barrier), records spans, and moves the runtime's collectives of
  /// a step into the result.
  bool startTrace();
  void traceSpan(const Action &a, int64_t step, double start);
  void traceCollectives(int64_t step);
  double now() const {
    return o.trace ? loom_runtime_trace_now_us(runtime) : 0;
  }
  bool postReceives();
  bool runProgram(Stage &stage, int kind, int micro, int64_t step);
  /// Micro-batch `micro`'s block of input `v`'s synthetic data at `step`.
  Tensor syntheticBlock(const Value &v, int64_t step, int micro);
  bool runAction(const Action &a, int64_t step);
  bool save(const std::string &dir, bool trainable);
  bool allGather(std::vector<int64_t> values, std::vector<int64_t> &all);
  bool check(loom_status_t s, const std::string &what = "") {
    if (!s)
      return true;
    error = (what.empty() ? "" : what + ": ") + loom_status_message(s);
    loom_status_free(s);
    return false;
  }
  int stages() const { return m.pipelineRanks * m.virtualStages; }
  /// The rank of this rank's sub-mesh position on `stage`'s pipeline rank.
  int32_t peer(int stage) const {
    std::vector<int64_t> coords;
    for (int32_t a = 0; a < loom_mesh_num_axes(mesh); ++a)
      coords.push_back(a == ppAxis ? stage % m.pipelineRanks
                                   : loom_mesh_coordinate(mesh, a));
    return loom_mesh_rank_at(mesh, coords.data());
  }
  int tag(int dir, int stage, int micro, int index) const {
    return ((dir * stages() + stage) * int(m.microBatches) + micro) *
               maxPorts +
           index;
  }
  /// The stage's first rank: coordinate 0 on every axis but the pipeline's.
  bool isWriter() const {
    for (int32_t a = 0; a < loom_mesh_num_axes(mesh); ++a)
      if (a != ppAxis && loom_mesh_coordinate(mesh, a) != 0)
        return false;
    return true;
  }

  const Manifest &m;
  const std::function<PackedEntry(const std::string &)> &lookup;
  const TrainOptions &o;
  TrainResult &result;
  std::string &error;
  loom_runtime_t runtime = nullptr;
  loom_mesh_t mesh = nullptr;
  int rank = 0;
  int32_t ppAxis = -1;
  int ppRank = 0;
  int maxPorts = 1;
  std::vector<Action> actions;
  std::map<int, Stage> stageMap;
  /// Parameters as this rank holds them, with how they are split.
  std::map<std::string, Tensor> store;
  std::map<std::string, const Value *> storeValue;
  struct Data {
    const Value *value = nullptr;
    bool file = false;
    NpyData npy;
    DataOrder order;
    std::vector<int64_t> offset;
    /// An entry's shape in the file: one micro-batch's (accumulation) or
    /// the whole batch's, [M b, ...] (micro-batches that split it).
    std::vector<int64_t> fileShape;
  };
  std::map<std::string, Data> data;
  /// Per input: the step whose synthetic batch is drawn, and the batch.
  std::map<std::string, std::pair<int64_t, Tensor>> drawn;
  /// Per step.
  std::map<std::tuple<int, int, int, int>, Tensor> inbox, outbox;
  std::map<std::tuple<int, int, int, int>, loom_request_t> pending;
  std::vector<loom_request_t> sends;
  std::map<std::tuple<int, int, int>, Tensor> stash; // stage, m, N
  std::map<std::pair<int, int>, Tensor> grads;       // stage, N
  std::map<std::string, Tensor> updates;
  float lossSum = 0;
  bool haveLoss = false;
  int64_t firstStep = 0;
  int64_t traced = 0;
  /// Microseconds from rank 0's trace time 0 to this rank's.
  double clockShift = 0;
};

bool PipelineTrainer::setUp() {
  if (m.axisNames.empty()) {
    error = "the pipeline's stage programs are not partitioned for a mesh";
    return false;
  }
  loom_mesh_t deviceMesh = nullptr; // pipelines run on the host
  if (!startMesh(m, o.timeoutSeconds, nullptr, runtime, mesh, deviceMesh,
                 error) ||
      !agreeOnTrainingStart(m, o, mesh, error))
    return false;
  rank = loom_runtime_rank(runtime);
  result.rank = rank;
  result.ranks = mesh::size(mesh);
  for (int32_t a = 0; a < loom_mesh_num_axes(mesh); ++a)
    if (std::string(loom_mesh_axis_name(mesh, a)) == "pp")
      ppAxis = a;
  if (ppAxis < 0 || loom_mesh_axis_size(mesh, ppAxis) != m.pipelineRanks) {
    error = "the pipeline has " + std::to_string(m.pipelineRanks) +
            " ranks but the mesh has no pp axis of that size";
    return false;
  }
  ppRank = int(loom_mesh_coordinate(mesh, ppAxis));
  for (const std::string &text : m.actions[ppRank]) {
    Action a;
    if (!parseAction(text, a) || a.stage >= stages() ||
        a.stage % m.pipelineRanks != ppRank ||
        (a.kind != Act::U && a.micro >= m.microBatches)) {
      error = "pipeline rank " + std::to_string(ppRank) +
              ": unreadable or misplaced action '" + text + "'";
      return false;
    }
    actions.push_back(a);
  }
  for (int v = 0; v < m.virtualStages; ++v)
    stageMap[ppRank + v * m.pipelineRanks].index = ppRank + v * m.pipelineRanks;
  return true;
}

bool PipelineTrainer::findPrograms() {
  for (const StageProgram &desc : m.programs) {
    // Tags number the boundary values of every stage alike on all ranks.
    for (const Value &v : desc.results) {
      Port port = portOf(v, true);
      if (port.kind == Port::Send || port.kind == Port::SendGrad)
        maxPorts = std::max(maxPorts, port.index + 1);
    }
    auto it = stageMap.find(desc.stage);
    if (it == stageMap.end())
      continue;
    int k = 0;
    while (k < 4 && desc.kind != kKinds[k])
      ++k;
    Program &p = it->second.programs[k];
    p.desc = &desc;
    p.entry = lookup(desc.function);
    if (!p.entry) {
      error = "this program has no compiled @" + desc.function +
              " (its manifest and machine code differ: rebuild with loomc)";
      return false;
    }
    for (const Value &v : desc.arguments)
      p.args.push_back(portOf(v, false));
    for (const Value &v : desc.results)
      p.results.push_back(portOf(v, true));
  }
  if (tag(1, stages() - 1, int(m.microBatches) - 1, maxPorts - 1) >=
      loom_max_tag()) {
    error = "the pipeline has too many transfers per step (" +
            std::to_string(stages()) + " stages x " +
            std::to_string(m.microBatches) + " micro-batches x " +
            std::to_string(maxPorts) + " values) for the runtime's tags";
    return false;
  }
  return true;
}

/// Every communicator a stage program may use is created now, by every
/// rank in the same order (as loom-run does: creating one is a collective
/// over all ranks, which ranks on different stages would otherwise reach at
/// different times).
bool PipelineTrainer::warmGroups() {
  std::vector<int32_t> others;
  for (int32_t a = 0; a < loom_mesh_num_axes(mesh); ++a)
    if (a != ppAxis)
      others.push_back(a);
  std::vector<std::vector<int32_t>> lists;
  std::function<void(std::vector<int32_t> &)> grow =
      [&](std::vector<int32_t> &cur) {
        for (int32_t a : others) {
          if (std::find(cur.begin(), cur.end(), a) != cur.end())
            continue;
          cur.push_back(a);
          lists.push_back(cur);
          grow(cur);
          cur.pop_back();
        }
      };
  std::vector<int32_t> cur;
  grow(cur);
  for (auto &l : lists)
    if (!check(loom_barrier(mesh, l.data(), int32_t(l.size())),
               "waiting for the ranks"))
      return false;
  return true;
}

bool PipelineTrainer::forEachNamedArg(
    Port::Kind kind,
    const std::function<bool(Program &, size_t, const Value &)> &fn) {
  std::set<std::string> seen;
  for (auto &[s, stage] : stageMap)
    for (Program &p : stage.programs) {
      if (!p.entry)
        continue;
      for (size_t i = 0; i < p.args.size(); ++i) {
        const Value &v = p.desc->arguments[i];
        const std::string &name =
            kind == Port::Param ? v.parameter : v.name;
        if (p.args[i].kind == kind && seen.insert(name).second &&
            !fn(p, i, v))
          return false;
      }
    }
  return true;
}

bool PipelineTrainer::bindParameters() {
  std::vector<std::pair<std::string, std::unique_ptr<InputFile>>> files;
  return forEachNamedArg(Port::Param, [&](Program &, size_t, const Value &v) {
    Tensor global;
    if (o.initRandomSeed >= 0 && v.trainable && v.splat.empty()) {
      if (!randomValue(v, uint64_t(o.initRandomSeed), global, error))
        return false;
    } else if (!initialValue(m, v, o.dir, files, global, error)) {
      return false;
    }
    store[v.parameter] = localShard(mesh, global, v);
    storeValue[v.parameter] = &v;
    return true;
  });
}

std::vector<CheckpointEntry> PipelineTrainer::checkpointEntries() {
  std::vector<CheckpointEntry> entries;
  for (auto &[name, value] : store) {
    const Value &v = *storeValue[name];
    entries.push_back({name, &value, &v.sharding, v.global, v.trainable});
  }
  return entries;
}

/// With TrainOptions::resume: this rank's stages' parameters from the
/// checkpoint, as this rank holds them. A stage reads only its own tensors;
/// a checkpoint tensor that no stage has is an error, as for an
/// unpipelined step.
bool PipelineTrainer::resume() {
  if (o.resume.empty())
    return true;
  ResumeOptions ro = resumeOptions(o);
  // Every stage's parameters are the model's tensors.
  for (const StageProgram &p : m.programs)
    for (const Value &v : p.arguments)
      if (!v.parameter.empty())
        ro.modelTensors.insert(v.parameter);
  std::optional<CheckpointState> state =
      resumeFromCheckpoint(o.resume, checkpointEntries(), mesh, ro, error);
  if (!state)
    return false;
  firstStep = state->step;
  result.firstStep = firstStep;
  return true;
}

bool PipelineTrainer::saveCheckpoint(int64_t stepsDone) {
  CheckpointState state{stepsDone, o.seed, o.data, m.entriesPerStep()};
  CheckpointSaveOptions save;
  save.keep = o.checkpointKeep;
  save.pipelineAxis = ppAxis;
  save.dieBeforeManifest = o.faultMode == "save" && o.faultRank == rank &&
                           o.faultStep == stepsDone;
  return loom::program::saveCheckpoint(o.checkpointDir, state,
                                       checkpointEntries(), mesh, save, error);
}

bool PipelineTrainer::allGather(std::vector<int64_t> values,
                                std::vector<int64_t> &all) {
  std::vector<int32_t> axes;
  for (int32_t a = 0; a < loom_mesh_num_axes(mesh); ++a)
    axes.push_back(a);
  all.assign(values.size() * size_t(numElements(m.axisSizes)), 0);
  return check(loom_all_gather(mesh, axes.data(), int32_t(axes.size()),
                               LOOM_DTYPE_I64, values.data(), all.data(),
                               int64_t(values.size())));
}

/// The unpipelined step's draw for the step (syntheticStream): the whole
/// batch, M micro-batches of `v` one after the other (or one micro-batch's
/// tensor for an input that the split micro-batches read whole), drawn
/// once per step and input; micro-batch `micro` takes its block. So a
/// pipeline trains on the synthetic data the same model trains on
/// without stages.
Tensor PipelineTrainer::syntheticBlock(const Value &v, int64_t step,
                                       int micro) {
  bool whole = m.splitBatch && v.wholeBatch;
  auto &[at, batch] = drawn[v.name];
  if (batch.bytes.empty() || at != step) {
    std::mt19937_64 gen = syntheticStream(o.seed, step, v.name);
    Value all = v;
    all.global = {whole ? numElements(v.global)
                        : numElements(v.global) * m.microBatches};
    batch = drawSynthetic(all, gen);
    at = step;
  }
  Tensor block(v.dtype, v.global);
  size_t offset = whole ? 0 : size_t(micro) * block.bytes.size();
  std::memcpy(block.bytes.data(), batch.bytes.data() + offset,
              block.bytes.size());
  return block;
}

/// Opens this rank's stages' data; the ranks then agree that all could and
/// that every input's file holds as many entries.
bool PipelineTrainer::openData() {
  bool ok = forEachNamedArg(Port::Data, [&](Program &, size_t,
                                            const Value &v) {
    Data d;
    d.value = &v;
    if (!result.samplesPerStep && !v.global.empty() && v.name != "labels")
      result.samplesPerStep = v.global[0] * m.microBatches;
    d.fileShape = v.global;
    if (m.splitBatch && !v.wholeBatch && !d.fileShape.empty())
      d.fileShape[0] *= m.microBatches;
    if (o.data != "synthetic") {
      if (!openNpyData(o.data + "/" + v.name + ".npy", v, d.fileShape, d.npy,
                       error))
        return false;
      d.file = true;
      d.order = DataOrder(d.npy.entries, o.shuffle, o.seed);
      d.offset = blockOffset(mesh, v.global, v.sharding);
    } else if (!isFloat(v.dtype) && v.indexBound <= 0) {
      error = "synthetic data for integer input '" + v.name +
              "' needs its range (loom.index_bound); use --data";
      return false;
    }
    data[v.name] = std::move(d);
    return true;
  });
  int64_t entries = 0;
  for (auto &[name, d] : data)
    if (ok && d.file) {
      if (entries && entries != d.npy.entries) {
        error = "the data files hold different numbers of entries (" +
                std::to_string(entries) + " and " +
                std::to_string(d.npy.entries) + " for '" + name +
                "'): every input's file needs the same number";
        ok = false;
      }
      entries = d.npy.entries;
    }
  // As loom-run: every rank learns whether all could, and the numbers of
  // entries agree across stages.
  std::string mine = error;
  std::vector<int64_t> all;
  if (!allGather({ok ? 0 : 1, entries}, all))
    return false;
  for (size_t r = 0; r < all.size(); r += 2)
    if (all[r]) {
      error = ok ? "rank " + std::to_string(r / 2) + " failed to open its data"
                 : mine;
      return false;
    }
  for (size_t r = 1; r < all.size(); r += 2)
    if (all[r] && entries && all[r] != entries) {
      error = "the data files hold different numbers of entries (" +
              std::to_string(entries) + " and " + std::to_string(all[r]) +
              " on different stages): every input's file needs the same "
              "number";
      return false;
    }
  return true;
}

void addInto(Tensor &acc, const Tensor &g) {
  if (acc.dtype == LOOM_DTYPE_F32) {
    float *a = reinterpret_cast<float *>(acc.bytes.data());
    const float *b = reinterpret_cast<const float *>(g.bytes.data());
    for (int64_t i = 0, e = acc.numElements(); i < e; ++i)
      a[i] += b[i];
    return;
  }
  for (int64_t i = 0, e = acc.numElements(); i < e; ++i)
    setFromDouble(acc, i, acc.getAsDouble(i) + g.getAsDouble(i));
}

bool PipelineTrainer::runProgram(Stage &stage, int kind, int micro,
                                 int64_t step) {
  Program &p = stage.programs[kind];
  if (!p.entry)
    return true;
  int s = stage.index;
  std::vector<Tensor> owned(p.args.size());
  std::vector<Tensor *> args;
  for (size_t i = 0; i < p.args.size(); ++i) {
    const Port &port = p.args[i];
    const Value &v = p.desc->arguments[i];
    Tensor *arg = nullptr;
    auto find = [&](auto &map, auto key) -> Tensor * {
      auto it = map.find(key);
      return it == map.end() ? nullptr : &it->second;
    };
    switch (port.kind) {
    case Port::Param:
      arg = find(store, v.parameter);
      break;
    case Port::Data: {
      Data &d = data[v.name];
      if (d.file) {
        // This rank's block of the entry, read from the file.
        // Micro-batch `micro` of the step: its own entry (accumulation)
        // or its rows of the step's one entry (micro-batches that split
        // the batch).
        int64_t e = m.splitBatch
                        ? d.order.entry(step)
                        : d.order.entry(step * m.microBatches + micro);
        const char *bytes = readNpyEntry(d.npy, e, error);
        if (!bytes) {
          loom_runtime_abandon(runtime);
          return false;
        }
        std::vector<int64_t> offset = d.offset;
        if (m.splitBatch && !v.wholeBatch && !offset.empty())
          offset[0] += int64_t(micro) * v.global[0];
        Tensor block(d.npy.fileType, v.shape);
        copyBlock(bytes, d.fileShape, offset,
                  block.bytes.data(), v.shape,
                  std::vector<int64_t>(v.shape.size(), 0), v.shape,
                  loom_dtype_size(d.npy.fileType));
        d.npy.bytesRead += int64_t(block.bytes.size());
        if (d.npy.fileType != v.dtype) {
          Tensor converted(v.dtype, v.shape);
          for (int64_t x = 0; x < block.numElements(); ++x)
            setFromDouble(converted, x, block.getAsDouble(x));
          block = std::move(converted);
        }
        std::string why;
        int64_t bad = findBadValue(block.bytes.data(), v.dtype,
                                   block.numElements(), v.indexBound, why);
        if (bad >= 0) {
          error = o.data + "/" + v.name + ".npy: entry " + std::to_string(e) +
                  " holds " + why + " (element " + std::to_string(bad) +
                  " of this rank's block of input '" + v.name + "')";
          loom_runtime_abandon(runtime);
          return false;
        }
        owned[i] = std::move(block);
      } else {
        // Every rank of the stage's sub-mesh draws the same whole tensor.
        owned[i] = localShard(mesh, syntheticBlock(v, step, micro), v);
      }
      arg = &owned[i];
      break;
    }
    case Port::Recv:
      arg = find(inbox, std::make_tuple(0, s, micro, port.index));
      break;
    case Port::RecvGrad:
      arg = find(inbox, std::make_tuple(1, s, micro, port.index));
      break;
    case Port::Stash:
      arg = find(stash, std::make_tuple(s, micro, port.index));
      break;
    case Port::Grad:
      arg = find(grads, std::make_pair(s, port.index));
      break;
    default:
      error = "argument #" + std::to_string(i) + " of @" + p.desc->function +
              " has no role in the pipeline";
      return false;
    }
    if (!arg) {
      error = "argument #" + std::to_string(i) + " of @" + p.desc->function +
              " has no value (micro-batch " + std::to_string(micro) +
              "): the schedule runs it too early";
      return false;
    }
    args.push_back(arg);
  }
  std::vector<Tensor> outs;
  for (const Value &v : p.desc->results)
    outs.emplace_back(v.dtype, v.shape);
  invoke(p.entry, args, outs);
  for (size_t i = 0; i < p.results.size(); ++i) {
    const Port &port = p.results[i];
    Tensor &out = outs[i];
    switch (port.kind) {
    case Port::Send:
      outbox[{0, s, micro, port.index}] = std::move(out);
      break;
    case Port::SendGrad:
      outbox[{1, s, micro, port.index}] = std::move(out);
      break;
    case Port::Stash:
      stash[{s, micro, port.index}] = std::move(out);
      break;
    case Port::Grad: {
      auto it = grads.find({s, port.index});
      if (it == grads.end())
        grads[{s, port.index}] = std::move(out);
      else
        addInto(it->second, out);
      break;
    }
    case Port::Loss:
      lossSum += float(out.getAsDouble(0));
      haveLoss = true;
      break;
    case Port::Update:
      updates[p.desc->results[i].parameter] = std::move(out);
      break;
    default:
      break;
    }
  }
  return true;
}

/// Posts every receive of the step (its RECV actions wait for them).
bool PipelineTrainer::postReceives() {
  for (const Action &a : actions) {
    if (a.kind != Act::RecvF && a.kind != Act::RecvB)
      continue;
    int dir = a.kind == Act::RecvF ? 0 : 1;
    Program &p = stageMap[a.stage].programs[dir == 0 ? 0 : 1];
    if (!p.entry)
      continue;
    for (size_t i = 0; i < p.args.size(); ++i) {
      const Port &port = p.args[i];
      if (port.kind != (dir == 0 ? Port::Recv : Port::RecvGrad))
        continue;
      const Value &v = p.desc->arguments[i];
      Tensor &buf = inbox[{dir, a.stage, a.micro, port.index}];
      buf = Tensor(v.dtype, v.shape);
      int from = dir == 0 ? a.stage - 1 : a.stage + 1;
      std::string what = std::string(dir == 0 ? "activation" : "gradient") +
                         " " + std::to_string(port.index) + " of stage " +
                         std::to_string(from) + ", micro-batch " +
                         std::to_string(a.micro);
      loom_request_t r;
      if (!check(loom_irecv(mesh, v.dtype, peer(from), buf.bytes.data(),
                            buf.numElements(),
                            tag(dir, from, a.micro, port.index), what.c_str(),
                            &r)))
        return false;
      pending[{dir, a.stage, a.micro, port.index}] = r;
    }
  }
  return true;
}

bool PipelineTrainer::runAction(const Action &a, int64_t step) {
  Stage &stage = stageMap[a.stage];
  switch (a.kind) {
  case Act::RecvF:
  case Act::RecvB: {
    int dir = a.kind == Act::RecvF ? 0 : 1;
    for (auto it = pending.begin(); it != pending.end();) {
      auto [d, s, mb, n] = it->first;
      if (d == dir && s == a.stage && mb == a.micro) {
        loom_request_t r = it->second;
        it = pending.erase(it);
        if (!check(loom_request_wait(r)))
          return false;
      } else {
        ++it;
      }
    }
    return true;
  }
  case Act::SendF:
  case Act::SendB: {
    int dir = a.kind == Act::SendF ? 0 : 1;
    int to = dir == 0 ? a.stage + 1 : a.stage - 1;
    for (auto &[key, buf] : outbox) {
      auto [d, s, mb, n] = key;
      if (d != dir || s != a.stage || mb != a.micro)
        continue;
      std::string what = std::string(dir == 0 ? "activation" : "gradient") +
                         " " + std::to_string(n) + " of stage " +
                         std::to_string(a.stage) + ", micro-batch " +
                         std::to_string(a.micro);
      loom_request_t r;
      if (!check(loom_isend(mesh, buf.dtype, peer(to), buf.bytes.data(),
                            buf.numElements(), tag(dir, a.stage, a.micro, n),
                            what.c_str(), &r)))
        return false;
      sends.push_back(r);
    }
    return true;
  }
  case Act::F:
    return runProgram(stage, 0, a.micro, step);
  case Act::B:
    return runProgram(stage, 1, a.micro, step) &&
           runProgram(stage, 2, a.micro, step);
  case Act::I:
    return runProgram(stage, 1, a.micro, step);
  case Act::W:
    if (!runProgram(stage, 2, a.micro, step))
      return false;
    // What the micro-batch's backward read is no longer needed.
    for (auto it = stash.begin(); it != stash.end();)
      it = std::get<0>(it->first) == a.stage &&
                   std::get<1>(it->first) == a.micro
               ? stash.erase(it)
               : std::next(it);
    return true;
  case Act::U:
    return runProgram(stage, 3, 0, step);
  }
  return true;
}

bool PipelineTrainer::startTrace() {
  if (!o.trace)
    return true;
  std::vector<int64_t> all;
  if (!mesh::allGather(mesh, {0}, all, error))
    return false;
  loom_runtime_trace_start(runtime);
  // Ranks leave the barrier up to a scheduler's time slice apart. On one
  // host the monotonic clock is shared: express every rank's times from
  // rank 0's time 0 (across hosts the barrier's alignment stays).
  double zero = std::chrono::duration<double, std::micro>(
                    std::chrono::steady_clock::now().time_since_epoch())
                    .count() -
                loom_runtime_trace_now_us(runtime);
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  int64_t hash = int64_t(fnv1a(host) >> 1);
  if (!mesh::allGather(mesh, {hash, int64_t(zero * 1e3)}, all, error))
    return false;
  bool oneHost = true;
  for (size_t r = 0; r < all.size(); r += 2)
    oneHost &= all[r] == all[0];
  if (oneHost)
    clockShift = double(all[2 * size_t(rank) + 1] - all[1]) * 1e-3;
  return true;
}

void PipelineTrainer::traceSpan(const Action &a, int64_t step, double start) {
  static const std::map<Act, const char *> names = {
      {Act::F, "F"},       {Act::B, "B"},        {Act::I, "I"},
      {Act::W, "W"},       {Act::U, "U"},        {Act::RecvF, "wait"},
      {Act::RecvB, "wait"}};
  auto it = names.find(a.kind);
  if (!o.trace || it == names.end())
    return;
  TraceEvent e;
  e.rank = rank;
  e.step = step;
  e.op = it->second;
  e.start = start + clockShift;
  e.duration = now() - start;
  e.stage = a.stage;
  e.micro = a.micro;
  result.trace.push_back(e);
}

void PipelineTrainer::traceCollectives(int64_t step) {
  for (int64_t e = loom_runtime_trace_count(runtime); traced < e; ++traced) {
    loom_trace_event_t ev;
    loom_runtime_trace_event(runtime, traced, &ev);
    TraceEvent c;
    c.rank = rank;
    c.step = step;
    c.op = ev.op;
    c.mask = ev.axes;
    c.bytes = ev.bytes;
    c.start = ev.start_us + clockShift;
    c.duration = ev.duration_us;
    c.started = ev.started != 0;
    result.trace.push_back(c);
  }
}

bool PipelineTrainer::runSteps() {
  auto begin = std::chrono::steady_clock::now();
  if (!startTrace())
    return false;
  for (int64_t step = firstStep; step < o.steps; ++step) {
    injectFault(o, rank, step);
    auto t0 = std::chrono::steady_clock::now();
    inbox.clear();
    outbox.clear();
    stash.clear();
    grads.clear();
    updates.clear();
    lossSum = 0;
    haveLoss = false;
    if (!postReceives())
      return false;
    double stepStart = now();
    for (const Action &a : actions) {
      double start = now();
      if (!runAction(a, step))
        return false;
      traceSpan(a, step, start);
    }
    for (loom_request_t r : sends)
      if (!check(loom_request_wait(r)))
        return false;
    sends.clear();
    for (auto &[name, value] : updates)
      store[name] = std::move(value);
    // The loss: the last stage's sum of micro-batch losses times 1/M (the
    // single-device step's order), to every rank.
    double loss = 0;
    if (haveLoss)
      loss = double(lossSum * float(1.0 / double(m.microBatches)));
    int64_t bits;
    std::memcpy(&bits, &loss, sizeof(bits));
    std::vector<int64_t> all;
    if (!allGather({haveLoss ? 1 : 0, bits}, all))
      return false;
    for (size_t r = 0; r + 1 < all.size(); r += 2)
      if (all[r]) {
        std::memcpy(&loss, &all[r + 1], sizeof(loss));
        break;
      }
    result.stepSeconds.push_back(std::chrono::duration<double>(
                                     std::chrono::steady_clock::now() - t0)
                                     .count());
    if (o.trace) {
      TraceEvent e;
      e.rank = rank;
      e.step = step;
      e.start = stepStart + clockShift;
      e.duration = now() - stepStart;
      result.trace.push_back(e);
      traceCollectives(step);
    }
    result.losses.push_back(loss);
    if (o.onStep && rank == 0)
      o.onStep(step, loss, "");
    if (!std::isfinite(loss)) {
      char text[64];
      std::snprintf(text, sizeof(text), "%g", loss);
      error = std::string("the loss is ") + text + " at step " +
              std::to_string(step) + "; stopping";
      return false;
    }
    if (!o.checkpointDir.empty() &&
        ((o.checkpointEvery > 0 && (step + 1) % o.checkpointEvery == 0) ||
         step + 1 == o.steps) &&
        !saveCheckpoint(step + 1))
      return false;
  }
  result.trainSeconds = std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - begin)
                            .count();
  if (o.trace)
    loom_runtime_trace_stop(runtime);
  return true;
}

/// Each stage's first rank (all other coordinates 0) writes its stage's
/// parameters, gathered over the stage's sub-mesh.
bool PipelineTrainer::save(const std::string &dir, bool trainable) {
  if (dir.empty())
    return true;
  // Rank 0 clears the directory before any stage writes into it.
  std::vector<int64_t> all;
  if (rank == 0 && !beginOutputDir(dir, error))
    return false;
  if (!allGather({0}, all))
    return false;
  for (auto &[name, local] : store) {
    const Value &v = *storeValue[name];
    if (v.trainable != trainable)
      continue;
    Tensor global;
    if (!gatherGlobal(mesh, local, v, global, error))
      return false;
    if (!isWriter())
      continue;
    // The step counter lives on every stage; the first writes it.
    if (name == "optimizer.step" && ppRank != 0)
      continue;
    if (!writeNpy(dir + "/" + name + ".npy", global, error))
      return false;
  }
  // Rank 0 marks the directory complete when every stage has written.
  return allGather({0}, all) &&
         (rank != 0 ||
          finishOutputDir(dir, {}, o.writer + " after " +
                                       std::to_string(o.steps) +
                                       " pipelined steps",
                          error));
}

} // namespace

bool loom::program::trainPipeline(
    const Manifest &manifest,
    const std::function<PackedEntry(const std::string &)> &lookup,
    const TrainOptions &options, TrainResult &result, std::string &error) {
  PipelineTrainer trainer(manifest, lookup, options, result, error);
  bool ok = trainer.run();
  if (!ok && options.onError)
    options.onError(error); // before ~PipelineTrainer tears the runtime down
  return ok;
}
