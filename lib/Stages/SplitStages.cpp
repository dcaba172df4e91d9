//===- SplitStages.cpp - A pipelined step becomes per-stage programs ------===//
//
// Every op of the step is put in one program, (stage, kind) with kind
// forward, backward_input, backward_weight or update: tagged ops by their
// loom.stage and loom.phase, backward ops by whether another stage needs
// them (input half) or not (weight half), ops the partitioner or the
// canonicalizer made without tags by the operand defined last, constants
// and ops on step-invariant values nowhere (each program that needs them
// makes its own). A value used by another program than its own crosses by
// one of five routes (docs/pipeline.md); any other use is an error.
//
//===----------------------------------------------------------------------===//

#include "loom/Stages/Passes.h"
#include "loom/Stages/Transfers.h"

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Dialect/Loom/Utils/Utils.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMSPLITSTAGES
#include "loom/Stages/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

enum Kind { kForward = 0, kInput = 1, kWeight = 2, kUpdate = 3, kBackward = 4 };
const char *kKindNames[] = {"forward", "backward_input", "backward_weight",
                            "update", "backward"};

struct Key {
  int stage = -1;
  Kind kind = kForward;
  bool valid() const { return stage >= 0; }
  bool operator==(const Key &o) const {
    return stage == o.stage && kind == o.kind;
  }
};

/// One program's signature under construction: external values in order,
/// each with its argument attributes; results likewise.
struct Program {
  Key key;
  SmallVector<Operation *> ops;
  llvm::MapVector<Value, NamedAttrList> args;
  SmallVector<std::pair<Value, NamedAttrList>> results;
  llvm::DenseSet<std::pair<Value, StringAttr>> resultSet;
};

std::string describe(Operation *op) {
  std::string s = "'" + op->getName().getStringRef().str() + "'";
  if (auto name = dyn_cast<NameLoc>(op->getLoc()))
    s += " ('" + name.getName().str() + "')";
  return s;
}

class Splitter {
public:
  Splitter(ModuleOp module, func::FuncOp fn, StringRef pass)
      : module(module), fn(fn), ctx(module.getContext()), pass(pass) {}

  LogicalResult run(unsigned virtualStages);

private:
  LogicalResult classify();
  void splitBackward();
  Program &program(Key k) {
    return programs[k.stage * 4 + int(k.kind)];
  }
  LogicalResult route(Value v, Operation *user, Program &to);
  void addArg(Program &p, Value v, NamedAttrList attrs) {
    p.args.insert({v, attrs});
  }
  void addResult(Program &p, Value v, NamedAttrList attrs) {
    auto pipe = attrs.get(LoomDialect::kPipeAttrName);
    if (p.resultSet.insert({v, dyn_cast_or_null<StringAttr>(pipe)}).second)
      p.results.push_back({v, attrs});
  }
  NamedAttrList pipe(StringRef kind, int index = -1) {
    NamedAttrList a;
    a.set(LoomDialect::kPipeAttrName,
          StringAttr::get(ctx, index < 0 ? kind.str()
                                         : (kind + ":" + Twine(index)).str()));
    return a;
  }
  int indexIn(DenseMap<Value, int> &table, Value v) {
    return table.try_emplace(v, int(table.size())).first->second;
  }
  LogicalResult build();

  ModuleOp module;
  func::FuncOp fn;
  MLIRContext *ctx;
  StringRef pass;
  int stages = 0;
  DenseMap<Operation *, Key> keys;
  llvm::DenseSet<Operation *> freeOps;
  /// Values that change with the micro-batch (depend on data).
  llvm::DenseSet<Value> varying;
  std::vector<Program> programs;
  /// Per stage: boundary values it sends forward, gradients it sends back,
  /// values it stashes, weight gradients it accumulates.
  std::vector<DenseMap<Value, int>> sendIndex, sendGradIndex, stashIndex,
      gradIndex;
};

bool isData(func::FuncOp fn, BlockArgument arg) {
  return !fn.getArgAttr(arg.getArgNumber(), LoomDialect::kParamAttrName);
}

LogicalResult Splitter::classify() {
  Block &body = fn.getBody().front();
  for (BlockArgument arg : body.getArguments())
    if (isData(fn, arg))
      varying.insert(arg);
  for (Operation &op : body.without_terminator()) {
    bool varies = llvm::any_of(op.getOperands(),
                               [&](Value v) { return varying.contains(v); });
    if (varies)
      for (Value r : op.getResults())
        varying.insert(r);
    auto stage = op.getAttrOfType<IntegerAttr>(LoomDialect::kStageAttrName);
    auto phase = op.getAttrOfType<StringAttr>(LoomDialect::kPhaseAttrName);
    if (stage && phase) {
      Kind kind = phase.getValue() == "forward"    ? kForward
                  : phase.getValue() == "backward" ? kBackward
                                                   : kUpdate;
      keys[&op] = {int(stage.getInt()), kind};
      stages = std::max<int>(stages, stage.getInt() + 1);
      continue;
    }
    // Untagged: the key of the operand defined last, or nowhere.
    Operation *latest = nullptr;
    for (Value v : op.getOperands())
      if (Operation *def = v.getDefiningOp())
        if (keys.count(def) &&
            (!latest || latest->isBeforeInBlock(def)))
          latest = def;
    if (!latest || op.hasTrait<OpTrait::ConstantLike>()) {
      freeOps.insert(&op);
      continue;
    }
    Key k = keys.lookup(latest); // a copy: keys[&op] may grow the map
    keys[&op] = k;
  }
  if (stages == 0)
    return fn.emitError() << pass << ": @" << fn.getSymName()
                          << " has no ops with pipeline stages (loom.stage "
                             "and loom.phase: build it from a model whose "
                             "ops have stages, loom-assign-stages)";
  return success();
}

/// The input half of a stage's backward is what other stages need from it
/// (and what that needs); the rest is the weight half.
void Splitter::splitBackward() {
  Block &body = fn.getBody().front();
  llvm::DenseSet<Operation *> input;
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    auto it = keys.find(&op);
    if (it == keys.end() || it->second.kind != kBackward)
      continue;
    bool needed = input.contains(&op);
    for (Operation *user : op.getUsers()) {
      auto u = keys.find(user);
      if (u != keys.end() && u->second.stage != it->second.stage &&
          u->second.kind != kUpdate)
        needed = true;
    }
    if (!needed)
      continue;
    input.insert(&op);
    for (Value v : op.getOperands())
      if (Operation *def = v.getDefiningOp())
        input.insert(def);
  }
  for (auto &[op, key] : keys)
    if (key.kind == kBackward)
      key.kind = input.contains(op) ? kInput : kWeight;
}

/// How `v` reaches program `to` (for `user`).
LogicalResult Splitter::route(Value v, Operation *user, Program &to) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    addArg(to, v, NamedAttrList(fn.getArgAttrDict(arg.getArgNumber())));
    return success();
  }
  Operation *def = v.getDefiningOp();
  if (freeOps.contains(def))
    return success(); // made where needed
  Key from = keys.lookup(def), at = to.key;
  if (from == at)
    return success();
  int s = at.stage;
  bool backwardUser = at.kind == kInput || at.kind == kWeight;
  // Forward activations to the next stage (kept there if its backward
  // reads them).
  // (The planner prices this route's messages: Transfers.h.)
  if (from.kind == kForward && stages::sentToStage(from.stage, s) &&
      at.kind != kUpdate) {
    int n = indexIn(sendIndex[from.stage], v);
    addResult(program(from), v, pipe("send", n));
    Program &fwd = program({s, kForward});
    addArg(fwd, v, pipe("recv", n));
    if (backwardUser) {
      int m = indexIn(stashIndex[s], v);
      addResult(fwd, v, pipe("stash", m));
      addArg(to, v, pipe("stash", m));
    }
    return success();
  }
  // Kept from forward (or the input half) for the backward of the stage.
  if (from.stage == s && backwardUser &&
      (from.kind == kForward || (from.kind == kInput && at.kind == kWeight))) {
    int m = indexIn(stashIndex[s], v);
    addResult(program(from), v, pipe("stash", m));
    addArg(to, v, pipe("stash", m));
    return success();
  }
  // Input gradients to the previous stage.
  if (from.kind == kInput && from.stage == s + 1 && backwardUser) {
    int n = indexIn(sendGradIndex[from.stage], v);
    addResult(program(from), v, pipe("send_grad", n));
    Program &in = program({s, kInput});
    addArg(in, v, pipe("recv_grad", n));
    if (at.kind == kWeight) {
      int m = indexIn(stashIndex[s], v);
      addResult(in, v, pipe("stash", m));
      addArg(to, v, pipe("stash", m));
    }
    return success();
  }
  // Weight gradients, summed over micro-batches, to the update.
  if (from.stage == s && at.kind == kUpdate &&
      (from.kind == kInput || from.kind == kWeight)) {
    int n = indexIn(gradIndex[s], v);
    addResult(program(from), v, pipe("grad", n));
    addArg(to, v, pipe("grad", n));
    return success();
  }
  // The same for every micro-batch (weights, their transposes, gathers):
  // computed again where needed.
  if (!varying.contains(v)) {
    freeOps.insert(def);
    // Its operands are routed when it is cloned (build()).
    return success();
  }
  return user->emitError()
         << pass << ": " << describe(user) << " on pipeline stage " << s
         << " (" << kKindNames[at.kind] << ") uses a value that "
         << describe(def) << " computes on stage " << from.stage << " ("
         << kKindNames[from.kind]
         << "); values may only cross to the adjacent stage: move the stage "
            "boundary so that this value stays on one side";
}

LogicalResult Splitter::run(unsigned virtualStages) {
  if (failed(classify()))
    return failure();
  splitBackward();
  programs.resize(stages * 4);
  for (int s = 0; s < stages; ++s)
    for (int k = 0; k < 4; ++k)
      programs[s * 4 + k].key = {s, Kind(k)};
  sendIndex.resize(stages);
  sendGradIndex.resize(stages);
  stashIndex.resize(stages);
  gradIndex.resize(stages);
  Block &body = fn.getBody().front();
  for (Operation &op : body.without_terminator())
    if (!freeOps.contains(&op))
      program(keys[&op]).ops.push_back(&op);
  // Routes, program by program (so that a free op's operands are routed
  // for each program that clones it).
  for (Program &p : programs) {
    llvm::DenseSet<Operation *> cloned;
    std::function<LogicalResult(Value, Operation *)> need =
        [&](Value v, Operation *user) -> LogicalResult {
      if (failed(route(v, user, p)))
        return failure();
      Operation *def = v.getDefiningOp();
      if (def && freeOps.contains(def) && cloned.insert(def).second)
        for (Value o : def->getOperands())
          if (failed(need(o, def)))
            return failure();
      return success();
    };
    for (Operation *op : p.ops)
      for (Value v : op->getOperands())
        if (failed(need(v, op)))
          return failure();
  }
  // The step's results: the loss from the last stage's forward, the next
  // weights and state from their stage's update.
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    NamedAttrList attrs(fn.getResultAttrDict(i));
    Operation *def = v.getDefiningOp();
    if (i == 0) {
      Key k = def ? keys.lookup(def) : Key();
      if (!k.valid() || k.kind != kForward || k.stage != stages - 1)
        return fn.emitError() << pass << ": the loss is not computed by the "
                              << "last stage's forward";
      NamedAttrList loss;
      loss.set(LoomDialect::kNameAttrName, StringAttr::get(ctx, "loss"));
      addResult(program(k), v, loss);
      continue;
    }
    if (!def)
      continue; // a weight without gradient: unchanged
    if (freeOps.contains(def)) {
      // The step counter: every update returns it (a rank may hold any
      // stage); the runtime stores it once.
      for (int s = 0; s < stages; ++s) {
        Program &u = program({s, kUpdate});
        for (Value o : def->getOperands())
          if (failed(route(o, def, u)))
            return failure();
        addResult(u, v, attrs);
      }
      continue;
    }
    Key k = keys.lookup(def);
    if (k.kind != kUpdate)
      return def->emitError() << pass << ": result #" << i
                              << " of the step is not made by an update";
    addResult(program(k), v, attrs);
  }
  if (failed(build()))
    return failure();
  // The pipeline's shape.
  auto meshRef =
      fn->getAttrOfType<FlatSymbolRefAttr>(LoomDialect::kPartitionedAttrName);
  int ranks = stages / int(virtualStages);
  if (meshRef)
    if (auto mesh = module.lookupSymbol<MeshOp>(meshRef))
      if (MeshAxisAttr pp = mesh.getAxis("pp"))
        ranks = int(pp.getSize());
  if (ranks * int(virtualStages) != stages)
    return fn.emitError() << pass << ": the step has " << stages
                          << " pipeline stages, but the mesh has " << ranks
                          << " pipeline ranks (axis pp) x " << virtualStages
                          << " virtual stages";
  auto pipeAttr =
      module->getAttrOfType<DictionaryAttr>(LoomDialect::kPipelineAttrName);
  NamedAttrList attrs(pipeAttr);
  Builder b(ctx);
  attrs.set("stages", b.getI64IntegerAttr(stages));
  attrs.set("ranks", b.getI64IntegerAttr(ranks));
  attrs.set("virtual_stages", b.getI64IntegerAttr(virtualStages));
  if (!attrs.get("micro_batches"))
    attrs.set("micro_batches", b.getI64IntegerAttr(1));
  module->setAttr(LoomDialect::kPipelineAttrName, attrs.getDictionary(ctx));
  fn.erase();
  return success();
}

LogicalResult Splitter::build() {
  OpBuilder b(ctx);
  b.setInsertionPoint(fn);
  for (Program &p : programs) {
    if (p.ops.empty() && p.results.empty())
      continue;
    SmallVector<Type> argTypes;
    SmallVector<DictionaryAttr> argAttrs;
    for (auto &[v, attrs] : p.args) {
      argTypes.push_back(v.getType());
      argAttrs.push_back(attrs.getDictionary(ctx));
    }
    SmallVector<Type> resultTypes;
    SmallVector<DictionaryAttr> resultAttrs;
    for (auto &[v, attrs] : p.results) {
      resultTypes.push_back(v.getType());
      resultAttrs.push_back(attrs.getDictionary(ctx));
    }
    std::string name = llvm::formatv("stage{0}_{1}", p.key.stage,
                                     kKindNames[p.key.kind])
                           .str();
    auto f = func::FuncOp::create(b, fn.getLoc(), name,
                                  b.getFunctionType(argTypes, resultTypes));
    f.setAllArgAttrs(argAttrs);
    f.setAllResultAttrs(resultAttrs);
    if (Attribute mesh = fn->getAttr(LoomDialect::kPartitionedAttrName))
      f->setAttr(LoomDialect::kPartitionedAttrName, mesh);
    NamedAttrList prog;
    prog.set("stage", b.getI64IntegerAttr(p.key.stage));
    prog.set("kind", b.getStringAttr(kKindNames[p.key.kind]));
    f->setAttr(LoomDialect::kProgramAttrName, prog.getDictionary(ctx));
    Block *entry = f.addEntryBlock();
    IRMapping map;
    for (auto [i, entryArg] : llvm::enumerate(p.args))
      map.map(entryArg.first, entry->getArgument(i));
    OpBuilder ib = OpBuilder::atBlockEnd(entry);
    // Free ops first, in the step's order, where this program needs them.
    std::function<void(Value)> make = [&](Value v) {
      if (map.contains(v))
        return;
      Operation *def = v.getDefiningOp();
      if (!def || !freeOps.contains(def))
        return;
      for (Value o : def->getOperands())
        make(o);
      Operation *copy = ib.clone(*def, map);
      copy->removeAttr(LoomDialect::kStageAttrName);
      copy->removeAttr(LoomDialect::kPhaseAttrName);
    };
    for (Operation *op : p.ops) {
      for (Value o : op->getOperands())
        make(o);
      ib.clone(*op, map);
    }
    SmallVector<Value> results;
    for (auto &[v, attrs] : p.results) {
      make(v);
      results.push_back(map.lookupOrDefault(v));
    }
    func::ReturnOp::create(ib, fn.getLoc(), results);
  }
  return success();
}

struct SplitStagesPass : loom::impl::LoomSplitStagesBase<SplitStagesPass> {
  using LoomSplitStagesBase::LoomSplitStagesBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<func::FuncOp> fn = lookupFunction(module, function, getArgument());
    if (failed(fn) || failed(verifySingleBlock(*fn, getArgument())))
      return signalPassFailure();
    if (virtualStages < 1) {
      fn->emitError() << getArgument() << ": virtual-stages must be >= 1";
      return signalPassFailure();
    }
    if (failed(Splitter(module, *fn, getArgument()).run(virtualStages)))
      return signalPassFailure();
  }
};

} // namespace
