//===- PipelineTraining.cpp - Running per-stage programs on a schedule ----===//
//
// A pipelined artifact (loom-split-stages, loom-schedule-pipeline) holds
// per stage a forward, backward-input, backward-weight and update program
// and, per pipeline rank, the schedule's action list. Each process finds
// its pipeline rank (its coordinate on the mesh's pp axis) and its stages,
// compiles their programs, and per step runs its list: receives are posted
// when the step starts and waited for by RECV actions, sends are posted by
// SEND actions and completed when the step ends, so no order of actions
// that the schedule simulator accepts can deadlock. Stashes hold what a
// stage's backward reads per micro-batch; weight gradients are summed over
// micro-batches in micro-batch order (as the single-device step sums
// them) and reduced across the stage's data-parallel ranks by the update
// program, once per step.
//
//===----------------------------------------------------------------------===//

#include "loom/Execution/Training.h"

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Execution/Checkpoint.h"
#include "loom/Execution/DataLoader.h"
#include "loom/Execution/Distributed.h"
#include "loom/Execution/TensorIO.h"
#include "loom/Stages/Schedule.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <unistd.h>

using namespace mlir;
using namespace mlir::loom;
using namespace mlir::loom::stages;

namespace {

/// What an argument or result is to the pipeline.
struct Port {
  enum Kind { Param, Data, Recv, RecvGrad, Send, SendGrad, Stash, Grad, Loss,
              Update, Other } kind = Other;
  int index = 0;       // N of recv:N, ...
  std::string name;    // parameter or data name
};

Port portOf(DictionaryAttr attrs) {
  Port p;
  auto pipe = attrs ? attrs.getAs<StringAttr>(LoomDialect::kPipeAttrName)
                    : StringAttr();
  auto param = attrs ? attrs.getAs<FlatSymbolRefAttr>(LoomDialect::kParamAttrName)
                     : FlatSymbolRefAttr();
  auto name = attrs ? attrs.getAs<StringAttr>(LoomDialect::kNameAttrName)
                    : StringAttr();
  if (pipe) {
    auto [kind, index] = pipe.getValue().split(':');
    (void)index.getAsInteger(10, p.index);
    p.kind = llvm::StringSwitch<Port::Kind>(kind)
                 .Case("recv", Port::Recv)
                 .Case("recv_grad", Port::RecvGrad)
                 .Case("send", Port::Send)
                 .Case("send_grad", Port::SendGrad)
                 .Case("stash", Port::Stash)
                 .Case("grad", Port::Grad)
                 .Default(Port::Other);
    return p;
  }
  if (param) {
    p.kind = Port::Param;
    p.name = param.getValue().str();
    return p;
  }
  if (name) {
    p.kind = Port::Data;
    p.name = name.getValue().str();
  }
  return p;
}

struct Program {
  func::FuncOp fn;
  std::unique_ptr<Executor> exec;
  std::vector<Port> args, results;
  SmallVector<ShardingAttr> argShardings;
};

struct Stage {
  int index = 0;
  // forward, backward_input, backward_weight, update (absent: nothing).
  Program programs[4];
};

const char *kKinds[] = {"forward", "backward_input", "backward_weight",
                        "update"};

class PipelineTrainer {
public:
  PipelineTrainer(ModuleOp module, StringRef dir, const TrainOptions &options,
                  TrainResult &result, std::string &error)
      : module(module), dir(dir), options(options), result(result),
        error(error) {}

  bool run() {
    return setUp() && compile() && warmGroups() && bindParameters() &&
           resume() && openData() && runSteps() &&
           (!options.trace ||
            (gatherTrace(*mesh, result.trace, error) && predictBubble())) &&
           save(options.paramsOut, true) && save(options.stateOut, false);
  }

private:
  bool setUp();
  bool compile();
  bool warmGroups();
  bool forEachNamedArg(
      Port::Kind kind,
      llvm::function_ref<bool(Program &, unsigned, const ValueInfo &)> fn);
  bool bindParameters();
  bool resume();
  bool saveCheckpoint(int64_t stepsDone);
  /// This rank's stages' parameters as it holds them.
  std::vector<CheckpointEntry> checkpointEntries();
  bool openData();
  bool openDataPorts();
  bool runSteps();
  bool postReceives();
  bool runProgram(Stage &stage, int kind, int micro, int64_t step);
  bool runAction(const Action &a, int64_t step);
  /// With TrainOptions::trace: starts the trace (ranks agree on its time 0
  /// to a barrier), records spans, and moves the runtime's collectives of
  /// `step` into the result.
  bool startTrace();
  /// On rank 0 after gatherTrace: the schedule simulated with each
  /// stage's mean measured action times (TrainResult::simulatedBubble).
  bool predictBubble();
  void traceSpan(const Action &a, int64_t step, double start);
  void traceCollectives(int64_t step);
  double now() const {
    return options.trace ? loom_runtime_trace_now_us(mesh->getRuntime()) : 0;
  }
  bool save(StringRef outDir, bool trainable);
  bool check(loom_status_t s) {
    if (!s)
      return true;
    error = loom_status_message(s);
    loom_status_free(s);
    return false;
  }
  /// The rank of the same sub-mesh position on pipeline rank `pp`.
  int32_t peer(int stage) const {
    SmallVector<int64_t> coords;
    for (int32_t a = 0; a < loom_mesh_num_axes(mesh->getMesh()); ++a)
      coords.push_back(a == ppAxis ? shape.rankOf(stage)
                                   : loom_mesh_coordinate(mesh->getMesh(), a));
    return loom_mesh_rank_at(mesh->getMesh(), coords.data());
  }
  int tag(int dir, int stage, int micro, int index) const {
    return ((dir * shape.stages() + stage) * shape.microBatches + micro) *
               maxPorts +
           index;
  }
  /// The stage's first rank: coordinate 0 on every axis but the pipeline's.
  bool isWriter() const { return mesh->isFirstCopy(nullptr, ppAxis); }

  ModuleOp module;
  StringRef dir;
  const TrainOptions &options;
  TrainResult &result;
  std::string &error;

  PipelineShape shape;
  Schedule schedule;           // every pipeline rank's actions
  std::vector<Action> actions; // this rank's
  std::unique_ptr<DistributedContext> mesh;
  int32_t ppAxis = -1;
  int ppRank = 0;
  std::map<int, Stage> stages;
  int maxPorts = 1;
  std::map<std::string, HostTensor> store;
  std::map<std::string, ShardingAttr> storeSharding;
  std::map<std::string, bool> storeTrainable;
  /// The first step to run (a resumed checkpoint's).
  int64_t firstStep = 0;
  /// Data inputs: the file (whole, global) and the per-entry global type.
  struct Data {
    RankedTensorType type;
    ShardingAttr sharding;
    int64_t indexBound = 0;
    std::unique_ptr<DataFile> file; // none: synthetic
    DataOrder order;
    /// This rank's block of an entry: its offset, its type in the model's
    /// and the file's element type.
    SmallVector<int64_t> offset;
    RankedTensorType block, fileBlock;
  };
  std::map<std::string, Data> data;
  /// Per step.
  std::map<std::tuple<int, int, int, int>, HostTensor> inbox, outbox;
  std::map<std::tuple<int, int, int, int>, loom_request_t> pending;
  std::vector<loom_request_t> sends;
  std::map<std::tuple<int, int, int>, HostTensor> stash; // stage, m, N
  std::map<std::pair<int, int>, HostTensor> grads;       // stage, N
  std::map<std::string, HostTensor> updates;
  float lossSum = 0;
  bool haveLoss = false;
  int64_t traced = 0;
  /// Microseconds from rank 0's trace time 0 to this rank's.
  double clockShift = 0;
};

/// FNV-1a: a string's hash, the same in every process.
static uint64_t fnv1a(StringRef s) {
  uint64_t h = 1469598103934665603ull;
  for (char c : s)
    h = (h ^ uint8_t(c)) * 1099511628211ull;
  return h;
}

bool PipelineTrainer::setUp() {
  auto pipe =
      module->getAttrOfType<DictionaryAttr>(LoomDialect::kPipelineAttrName);
  auto get = [&](StringRef k) {
    auto a = pipe.getAs<IntegerAttr>(k);
    return a ? int(a.getInt()) : -1;
  };
  shape = {get("ranks"), get("virtual_stages"), get("micro_batches")};
  auto lists = pipe.getAs<ArrayAttr>("actions");
  if (shape.ranks < 1 || shape.virtualStages < 1 || shape.microBatches < 1 ||
      !lists || int(lists.size()) != shape.ranks) {
    error = "the module's loom.pipeline has no schedule (build it with loomc "
            "and a pp mesh axis, or run loom-split-stages and "
            "loom-schedule-pipeline)";
    return false;
  }
  func::FuncOp any;
  for (auto fn : module.getOps<func::FuncOp>())
    if (fn->hasAttr(LoomDialect::kProgramAttrName))
      any = fn;
  auto meshRef = any ? any->getAttrOfType<FlatSymbolRefAttr>(
                           LoomDialect::kPartitionedAttrName)
                     : FlatSymbolRefAttr();
  if (!meshRef) {
    error = "the pipeline's stage programs are not partitioned for a mesh "
            "(loomc partitions them for the mesh with the pp axis)";
    return false;
  }
  DistributedOptions dopts;
  dopts.timeoutSeconds = options.timeoutSeconds;
  mesh = DistributedContext::create(module, module.lookupSymbol<MeshOp>(meshRef),
                                    dopts, error);
  if (!mesh || !agreeOnTrainingStart(*mesh, dir, options, error))
    return false;
  result.rank = mesh->rank();
  for (int32_t a = 0; a < loom_mesh_num_axes(mesh->getMesh()); ++a)
    if (StringRef(loom_mesh_axis_name(mesh->getMesh(), a)) == "pp")
      ppAxis = a;
  if (ppAxis < 0 ||
      loom_mesh_axis_size(mesh->getMesh(), ppAxis) != shape.ranks) {
    error = llvm::formatv("the pipeline has {0} ranks but the mesh has no pp "
                          "axis of that size",
                          shape.ranks)
                .str();
    return false;
  }
  ppRank = int(loom_mesh_coordinate(mesh->getMesh(), ppAxis));
  for (Attribute a : cast<ArrayAttr>(lists[ppRank])) {
    std::optional<Action> act = parseAction(cast<StringAttr>(a).getValue());
    if (!act) {
      error = "unreadable pipeline action " + cast<StringAttr>(a).str();
      return false;
    }
    actions.push_back(*act);
  }
  // The schedule must be one that finishes (loom-schedule-pipeline checked
  // it; an edited artifact is checked again).
  schedule.assign(shape.ranks, {});
  for (int r = 0; r < shape.ranks; ++r)
    for (Attribute a : cast<ArrayAttr>(lists[r]))
      if (auto act = parseAction(cast<StringAttr>(a).getValue()))
        schedule[r].push_back(*act);
  std::optional<Timeline> unit =
      simulate(schedule, shape, Durations::uniform(shape.stages()), error);
  if (!unit) {
    error = "the artifact's pipeline schedule is invalid: " + error;
    return false;
  }
  result.unitBubble = unit->bubble;
  for (int v = 0; v < shape.virtualStages; ++v)
    stages[ppRank + v * shape.ranks].index = ppRank + v * shape.ranks;
  return true;
}

bool PipelineTrainer::compile() {
  auto start = std::chrono::steady_clock::now();
  for (auto &[s, stage] : stages)
    for (int k = 0; k < 4; ++k) {
      std::string name = llvm::formatv("stage{0}_{1}", s, kKinds[k]).str();
      auto fn = module.lookupSymbol<func::FuncOp>(name);
      if (!fn)
        continue;
      Program &p = stage.programs[k];
      p.fn = fn;
      p.exec = Executor::create(module, name, options.executor, error);
      if (!p.exec)
        return false;
      for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
        p.args.push_back(portOf(fn.getArgAttrDict(i)));
        p.argShardings.push_back(
            fn.getArgAttrOfType<ShardingAttr>(i, LoomDialect::kShardingAttrName));
      }
      for (unsigned i = 0; i < fn.getNumResults(); ++i) {
        Port port = portOf(fn.getResultAttrDict(i));
        if (port.kind == Port::Data && port.name == "loss")
          port.kind = Port::Loss;
        else if (port.kind == Port::Param)
          port.kind = Port::Update;
        p.results.push_back(port);
      }
    }
  // Tags number the boundary values of every stage alike on all ranks.
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (!fn->hasAttr(LoomDialect::kProgramAttrName))
      continue;
    for (unsigned i = 0; i < fn.getNumResults(); ++i) {
      Port port = portOf(fn.getResultAttrDict(i));
      if (port.kind == Port::Send || port.kind == Port::SendGrad)
        maxPorts = std::max(maxPorts, port.index + 1);
    }
  }
  if (tag(1, shape.stages() - 1, shape.microBatches - 1, maxPorts - 1) >=
      loom_max_tag()) {
    error = llvm::formatv("the pipeline has too many transfers per step ({0} "
                          "stages x {1} micro-batches x {2} values) for the "
                          "runtime's tags",
                          shape.stages(), shape.microBatches, maxPorts)
                .str();
    return false;
  }
  result.compileSeconds = std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - start)
                              .count();
  return true;
}

/// Every communicator a stage program may use is created now, by every
/// rank in the same order: creating one is a collective over all ranks,
/// which ranks on different stages would otherwise reach at different
/// times.
bool PipelineTrainer::warmGroups() {
  SmallVector<int32_t> others;
  for (int32_t a = 0; a < loom_mesh_num_axes(mesh->getMesh()); ++a)
    if (a != ppAxis)
      others.push_back(a);
  // Every ordered list of distinct non-pp axes.
  std::vector<std::vector<int32_t>> lists;
  std::function<void(std::vector<int32_t> &)> grow =
      [&](std::vector<int32_t> &cur) {
        for (int32_t a : others) {
          if (llvm::is_contained(cur, a))
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
    if (!check(loom_barrier(mesh->getMesh(), l.data(), int32_t(l.size()))))
      return false;
  return true;
}

/// Calls `fn(program, index, info)` for the arguments of `kind` of this
/// rank's programs, once per name (a weight or input several programs read).
bool PipelineTrainer::forEachNamedArg(
    Port::Kind kind,
    llvm::function_ref<bool(Program &, unsigned, const ValueInfo &)> fn) {
  std::set<std::string> seen;
  for (auto &[s, stage] : stages)
    for (Program &p : stage.programs) {
      if (!p.exec)
        continue;
      ArrayRef<ValueInfo> infos = p.exec->getArguments();
      for (auto [i, port] : llvm::enumerate(p.args))
        if (port.kind == kind && seen.insert(port.name).second &&
            !fn(p, unsigned(i), infos[i]))
          return false;
    }
  return true;
}

bool PipelineTrainer::bindParameters() {
  return forEachNamedArg(Port::Param, [&](Program &p, unsigned i,
                                          const ValueInfo &info) {
        const Port &port = p.args[i];
        RankedTensorType global = mesh->globalType(info.type, p.argShardings[i]);
        std::optional<HostTensor> value = readInitialValue(
            info.initialValue, global, port.name, dir, error);
        if (!value)
          return false;
        store[port.name] = mesh->localShard(*value, p.argShardings[i]);
        storeSharding[port.name] = p.argShardings[i];
        storeTrainable[port.name] = info.trainable;
        return true;
      });
}

/// With TrainOptions::resume: this rank's stages' parameters from the
/// checkpoint, as this rank holds them. A stage reads only its own tensors;
/// a checkpoint tensor that no stage has (every stage's are the module's
/// loom.parameters) is an error, as for an unpipelined step.
bool PipelineTrainer::resume() {
  if (options.resume.empty())
    return true;
  ResumeOptions resumeOptions{options.steps, options.seed, options.data, {}};
  for (ParameterOp p : module.getOps<ParameterOp>())
    resumeOptions.modelTensors.insert(p.getSymName().str());
  std::optional<CheckpointState> state =
      resumeFromCheckpoint(options.resume, module.getContext(),
                           checkpointEntries(), mesh.get(), resumeOptions, error);
  if (!state)
    return false;
  firstStep = state->step;
  return true;
}

std::vector<CheckpointEntry> PipelineTrainer::checkpointEntries() {
  std::vector<CheckpointEntry> entries;
  for (auto &[name, value] : store)
    entries.push_back({name, &value, storeSharding[name], storeTrainable[name]});
  return entries;
}

bool PipelineTrainer::saveCheckpoint(int64_t stepsDone) {
  CheckpointState state{stepsDone, options.seed, options.data,
                        shape.microBatches};
  CheckpointSaveOptions save;
  save.keep = options.checkpointKeep;
  save.pipelineAxis = ppAxis;
  save.dieBeforeManifest = options.faultMode == "save" &&
                           options.faultRank == result.rank &&
                           options.faultStep == stepsDone;
  return mlir::loom::saveCheckpoint(options.checkpointDir, state,
                              checkpointEntries(), mesh.get(), save, error);
}

/// Opens this rank's stages' data; the ranks then agree that all could and
/// that every input's file holds as many entries.
bool PipelineTrainer::openData() {
  bool ok = openDataPorts();
  int64_t entries = 0;
  for (auto &[name, d] : data)
    if (ok && d.file) {
      if (entries && entries != d.file->entries()) {
        error = llvm::formatv("the data files hold different numbers of "
                              "entries ({0} and {1} for '{2}'): every input's "
                              "file needs the same number",
                              entries, d.file->entries(), name)
                    .str();
        ok = false;
      }
      entries = d.file->entries();
    }
  if (!mesh->agree(ok, "open its data", error))
    return false;
  std::optional<std::vector<int64_t>> all = mesh->allGather({entries}, error);
  if (!all)
    return false;
  for (int64_t n : *all)
    if (n && entries && n != entries) {
      error = llvm::formatv("the data files hold different numbers of entries "
                            "({0} and {1} on different stages): every input's "
                            "file needs the same number",
                            entries, n)
                  .str();
      return false;
    }
  return true;
}

bool PipelineTrainer::openDataPorts() {
  return forEachNamedArg(Port::Data, [&](Program &p, unsigned i,
                                         const ValueInfo &info) {
        const Port &port = p.args[i];
        Data d;
        d.sharding = p.argShardings[i];
        d.type = mesh->globalType(info.type, d.sharding);
        d.indexBound = info.indexBound;
        if (!result.samplesPerStep && d.type.getRank() > 0 &&
            port.name != "labels")
          result.samplesPerStep = d.type.getDimSize(0) * shape.microBatches;
        if (options.data == "synthetic") {
          data[port.name] = std::move(d);
          return true;
        }
        SmallString<256> path(options.data);
        llvm::sys::path::append(path, port.name + ".npy");
        d.file = DataFile::open(path, port.name, d.type, error);
        if (!d.file)
          return false;
        d.order = DataOrder(d.file->entries(), options.shuffle, options.seed);
        d.offset = mesh->blockOffset(d.type.getShape(), d.sharding);
        d.block = info.type;
        d.fileBlock = RankedTensorType::get(info.type.getShape(),
                                            d.file->getFileElementType());
        data[port.name] = std::move(d);
        return true;
      });
}

void addInto(HostTensor &acc, const HostTensor &g) {
  if (acc.getElementType().isF32()) {
    float *a = reinterpret_cast<float *>(acc.data());
    const float *b = reinterpret_cast<const float *>(g.data());
    for (int64_t i = 0, e = acc.getNumElements(); i < e; ++i)
      a[i] += b[i];
    return;
  }
  for (int64_t i = 0, e = acc.getNumElements(); i < e; ++i)
    acc.setFromDouble(i, acc.getAsDouble(i) + g.getAsDouble(i));
}

bool PipelineTrainer::runProgram(Stage &stage, int kind, int m,
                                 int64_t step) {
  Program &p = stage.programs[kind];
  if (!p.exec)
    return true;
  int s = stage.index;
  std::vector<HostTensor> owned(p.args.size());
  std::vector<const HostTensor *> args;
  for (auto [i, port] : llvm::enumerate(p.args)) {
    const HostTensor *arg = nullptr;
    switch (port.kind) {
    case Port::Param:
      arg = &store[port.name];
      break;
    case Port::Data: {
      Data &d = data[port.name];
      if (d.file) {
        // This rank's block of the entry, read from the file.
        HostTensor block(d.block), scratch(d.fileBlock);
        int64_t entry = d.order.entry(step * shape.microBatches + m);
        std::string why;
        if (!d.file->readBlock(entry, d.offset, block, scratch, why)) {
          error = why;
          mesh->abandon();
          return false;
        }
        int64_t bad = ::loom::program::findBadValue(
            block.data(), runtimeType(block.getElementType()),
            block.getType().getNumElements(), d.indexBound, why);
        if (bad >= 0) {
          error = llvm::formatv("{0}/{1}.npy: entry {2} holds {3} (element "
                                "{4} of this rank's block of input '{1}')",
                                options.data, port.name, entry, why, bad)
                      .str();
          mesh->abandon();
          return false;
        }
        owned[i] = std::move(block);
      } else {
        HostTensor t(d.type);
        // Synthetic: drawn per (seed, step, micro-batch, input), so every
        // rank of the stage's sub-mesh draws the same whole tensor.
        // (A hash of the name that is the same in every process.)
        uint64_t name = fnv1a(port.name);
        std::seed_seq seq{uint64_t(options.seed), uint64_t(step), uint64_t(m),
                          name, name >> 32};
        std::mt19937_64 gen(seq);
        t = syntheticTensor(d.type, d.indexBound, gen);
        owned[i] = mesh->localShard(t, d.sharding);
      }
      arg = &owned[i];
      break;
    }
    case Port::Recv:
      arg = &inbox[{0, s, m, port.index}];
      break;
    case Port::RecvGrad:
      arg = &inbox[{1, s, m, port.index}];
      break;
    case Port::Stash:
      arg = &stash[{s, m, port.index}];
      break;
    case Port::Grad:
      arg = &grads[{s, port.index}];
      break;
    default:
      error = llvm::formatv("argument #{0} of @{1} has no role in the "
                            "pipeline",
                            i, p.fn.getSymName())
                  .str();
      return false;
    }
    if (!*arg) {
      error = llvm::formatv("argument #{0} of @{1} has no value (micro-batch "
                            "{2}): the schedule runs it too early",
                            i, p.fn.getSymName(), m)
                  .str();
      return false;
    }
    args.push_back(arg);
  }
  SmallVector<HostTensor> outs;
  if (!p.exec->run(args, outs, error))
    return false;
  for (auto [i, port] : llvm::enumerate(p.results)) {
    HostTensor &out = outs[i];
    switch (port.kind) {
    case Port::Send:
      outbox[{0, s, m, port.index}] = std::move(out);
      break;
    case Port::SendGrad:
      outbox[{1, s, m, port.index}] = std::move(out);
      break;
    case Port::Stash:
      stash[{s, m, port.index}] = std::move(out);
      break;
    case Port::Grad: {
      HostTensor &acc = grads[{s, port.index}];
      if (!acc)
        acc = std::move(out);
      else
        addInto(acc, out);
      break;
    }
    case Port::Loss:
      lossSum += float(out.getAsDouble(0));
      haveLoss = true;
      break;
    case Port::Update:
      updates[port.name] = std::move(out);
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
    if (a.kind != ActionKind::RecvForward &&
        a.kind != ActionKind::RecvBackward)
      continue;
    int dir = a.kind == ActionKind::RecvForward ? 0 : 1;
    Program &p = stages[a.stage].programs[dir == 0 ? 0 : 1];
    if (!p.exec)
      continue;
    ArrayRef<ValueInfo> infos = p.exec->getArguments();
    for (auto [i, port] : llvm::enumerate(p.args)) {
      if (port.kind != (dir == 0 ? Port::Recv : Port::RecvGrad))
        continue;
      HostTensor &buf = inbox[{dir, a.stage, a.micro, port.index}];
      buf = HostTensor(infos[i].type);
      int from = dir == 0 ? a.stage - 1 : a.stage + 1;
      std::string what = llvm::formatv("{0} {1} of stage {2}, micro-batch "
                                       "{3}",
                                       dir == 0 ? "activation" : "gradient",
                                       port.index, from, a.micro)
                             .str();
      loom_request_t r;
      if (!check(loom_irecv(mesh->getMesh(), runtimeType(buf.getElementType()),
                            peer(from), buf.data(), buf.getNumElements(),
                            tag(dir, from, a.micro, port.index),
                            what.c_str(), &r)))
        return false;
      pending[{dir, a.stage, a.micro, port.index}] = r;
    }
  }
  return true;
}

bool PipelineTrainer::runAction(const Action &a, int64_t step) {
  Stage &stage = stages[a.stage];
  switch (a.kind) {
  case ActionKind::RecvForward:
  case ActionKind::RecvBackward: {
    int dir = a.kind == ActionKind::RecvForward ? 0 : 1;
    for (auto it = pending.begin(); it != pending.end();) {
      auto [d, s, m, n] = it->first;
      if (d == dir && s == a.stage && m == a.micro) {
        loom_request_t r = it->second;
        it = pending.erase(it);
        if (!check(loom_request_wait(r)))
          return false;
      } else {
        ++it;
      }
    }
    break;
  }
  case ActionKind::SendForward:
  case ActionKind::SendBackward: {
    int dir = a.kind == ActionKind::SendForward ? 0 : 1;
    int to = dir == 0 ? a.stage + 1 : a.stage - 1;
    for (auto &[key, buf] : outbox) {
      auto [d, s, m, n] = key;
      if (d != dir || s != a.stage || m != a.micro)
        continue;
      std::string what =
          llvm::formatv("{0} {1} of stage {2}, micro-batch {3}",
                        dir == 0 ? "activation" : "gradient", n, a.stage,
                        a.micro)
              .str();
      loom_request_t r;
      if (!check(loom_isend(mesh->getMesh(),
                            runtimeType(buf.getElementType()), peer(to),
                            buf.data(), buf.getNumElements(),
                            tag(dir, a.stage, a.micro, n), what.c_str(),
                            &r)))
        return false;
      sends.push_back(r);
    }
    break;
  }
  case ActionKind::Forward:
    if (!runProgram(stage, 0, a.micro, step))
      return false;
    break;
  case ActionKind::Backward:
    if (!runProgram(stage, 1, a.micro, step) ||
        !runProgram(stage, 2, a.micro, step))
      return false;
    break;
  case ActionKind::BackwardInput:
    if (!runProgram(stage, 1, a.micro, step))
      return false;
    break;
  case ActionKind::BackwardWeight:
    if (!runProgram(stage, 2, a.micro, step))
      return false;
    // What the micro-batch's backward read is no longer needed.
    for (auto it = stash.begin(); it != stash.end();)
      it = std::get<0>(it->first) == a.stage &&
                   std::get<1>(it->first) == a.micro
               ? stash.erase(it)
               : std::next(it);
    break;
  case ActionKind::Update:
    if (!runProgram(stage, 3, 0, step))
      return false;
    break;
  }
  return true;
}

bool PipelineTrainer::startTrace() {
  if (!options.trace)
    return true;
  if (!mesh->allGather({0}, error))
    return false;
  loom_runtime_t runtime = mesh->getRuntime();
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
  std::optional<std::vector<int64_t>> all =
      mesh->allGather({hash, int64_t(zero * 1e3)}, error);
  if (!all)
    return false;
  bool oneHost = true;
  for (size_t r = 0; r < all->size(); r += 2)
    oneHost &= (*all)[r] == (*all)[0];
  if (oneHost)
    clockShift = double((*all)[2 * result.rank + 1] - (*all)[1]) * 1e-3;
  return true;
}

void PipelineTrainer::traceSpan(const Action &a, int64_t step, double start) {
  static const std::map<ActionKind, const char *> names = {
      {ActionKind::Forward, "F"},       {ActionKind::Backward, "B"},
      {ActionKind::BackwardInput, "I"}, {ActionKind::BackwardWeight, "W"},
      {ActionKind::Update, "U"},        {ActionKind::RecvForward, "wait"},
      {ActionKind::RecvBackward, "wait"}};
  auto it = names.find(a.kind);
  if (!options.trace || it == names.end())
    return;
  result.trace.push_back({result.rank, step, it->second, "", 0, 0,
                          start + clockShift, now() - start, a.stage, a.micro});
}

void PipelineTrainer::traceCollectives(int64_t step) {
  loom_runtime_t runtime = mesh->getRuntime();
  for (int64_t e = loom_runtime_trace_count(runtime); traced < e; ++traced) {
    loom_trace_event_t ev;
    loom_runtime_trace_event(runtime, traced, &ev);
    result.trace.push_back({result.rank, step, ev.op, "", ev.axes, ev.bytes,
                            ev.start_us + clockShift, ev.duration_us});
  }
}

bool PipelineTrainer::predictBubble() {
  if (result.rank != 0)
    return true;
  // Means over ranks and steps after the first (which runs cold).
  int stages = shape.stages();
  std::map<std::pair<std::string, int>, std::pair<double, int>> sums;
  for (const TraceEvent &e : result.trace)
    if (e.isPipelineAction() && (e.step > 0 || options.steps == 1)) {
      auto &[total, n] = sums[{e.op, e.stage}];
      total += e.duration;
      ++n;
    }
  auto mean = [&](StringRef op, int s) {
    auto it = sums.find({op.str(), s});
    return it == sums.end() ? 0.0 : it->second.first / it->second.second;
  };
  Durations d;
  for (int s = 0; s < stages; ++s) {
    double f = mean("F", s), i = mean("I", s), w = mean("W", s);
    if (i == 0 && w == 0) // B unsplit: its halves are not measured apart
      i = mean("B", s);
    d.forward.push_back(f);
    d.backwardInput.push_back(i);
    d.backwardWeight.push_back(w);
    d.updates.push_back(mean("U", s));
    d.transfers.push_back(0);
  }
  std::optional<Timeline> t = simulate(schedule, shape, d, error);
  if (!t)
    return false;
  result.simulatedBubble = t->bubble;
  return true;
}

bool PipelineTrainer::runSteps() {
  auto start = std::chrono::steady_clock::now();
  if (!startTrace())
    return false;
  for (int64_t step = firstStep; step < options.steps; ++step) {
    injectFault(options, result.rank, step);
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
      loss = double(lossSum * float(1.0 / double(shape.microBatches)));
    int64_t bits;
    std::memcpy(&bits, &loss, sizeof(bits));
    std::optional<std::vector<int64_t>> all =
        mesh->allGather({haveLoss ? 1 : 0, bits}, error);
    if (!all)
      return false;
    for (size_t r = 0; r + 1 < all->size(); r += 2)
      if ((*all)[r]) {
        std::memcpy(&loss, &(*all)[r + 1], sizeof(loss));
        break;
      }
    if (options.trace) {
      result.trace.push_back({result.rank, step, "", "", 0, 0,
                              stepStart + clockShift, now() - stepStart});
      traceCollectives(step);
    }
    result.losses.push_back(loss);
    if (options.onStep && result.rank == 0)
      options.onStep(step, loss, "");
    if (!std::isfinite(loss)) {
      error = llvm::formatv("the loss is {0} at step {1}; stopping", loss, step)
                  .str();
      return false;
    }
    if (!options.checkpointDir.empty() &&
        ((options.checkpointEvery > 0 &&
          (step + 1) % options.checkpointEvery == 0) ||
         step + 1 == options.steps) &&
        !saveCheckpoint(step + 1))
      return false;
  }
  result.trainSeconds = std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - start)
                            .count();
  if (options.trace)
    loom_runtime_trace_stop(mesh->getRuntime());
  return true;
}

/// Each stage's first rank (all other coordinates 0) writes its stage's
/// weights, gathered over the stage's sub-mesh.
bool PipelineTrainer::save(StringRef outDir, bool trainable) {
  if (outDir.empty())
    return true;
  if (std::error_code ec = llvm::sys::fs::create_directories(outDir)) {
    error = "cannot create " + outDir.str() + ": " + ec.message();
    return false;
  }
  // Rank 0 clears the directory before any stage writes into it.
  if (mesh->rank() == 0 && !::loom::program::beginOutputDir(outDir.str(), error))
    return false;
  if (!mesh->allGather({0}, error))
    return false;
  for (auto &[name, value] : store) {
    if (storeTrainable[name] != trainable)
      continue;
    std::optional<HostTensor> global =
        mesh->gatherGlobal(value, storeSharding[name], error);
    if (!global)
      return false;
    if (!isWriter())
      continue;
    // The step counter lives on every stage; the first writes it.
    if (name == "optimizer.step" && ppRank != 0)
      continue;
    SmallString<256> path(outDir);
    llvm::sys::path::append(path, name + ".npy");
    if (!writeTensorFile(path, *global, error))
      return false;
  }
  // Rank 0 marks the directory complete when every stage has written.
  if (!mesh->allGather({0}, error))
    return false;
  return mesh->rank() != 0 ||
         ::loom::program::finishOutputDir(
             outDir.str(), {},
             llvm::formatv("loom-run after {0} pipelined steps", options.steps)
                 .str(),
             error);
}

} // namespace

bool mlir::loom::runPipelineTraining(ModuleOp module, StringRef dir,
                                     const TrainOptions &options,
                                     TrainResult &result, std::string &error) {
  return PipelineTrainer(module, dir, options, result, error).run();
}
