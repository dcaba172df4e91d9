//===- SplitFunctions.cpp - Outline runs of ops into bounded functions ----===//
//
// See LoomSplitFunctions in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "loom/Codegen/CPU/Passes.h"
#include "loom/Codegen/CPU/Buffers.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMSPLITFUNCTIONS
#include "loom/Codegen/CPU/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;
using namespace mlir::loom;

namespace {

/// The values a run of top-level ops uses from before it, and those it
/// defines that later ops use.
struct RunInterface {
  llvm::SetVector<Value> liveIns, liveOuts;
};

class Run {
public:
  Run(Block &body, ArrayRef<Operation *> ops) : body(body), ops(ops) {
    members.insert(ops.begin(), ops.end());
  }

  bool contains(Operation *op) const {
    Operation *top = body.findAncestorOpInBlock(*op);
    return top && members.contains(top);
  }

  RunInterface interface() const {
    RunInterface out;
    for (Operation *top : ops) {
      top->walk([&](Operation *op) {
        for (Value v : op->getOperands()) {
          Operation *def = v.getDefiningOp();
          Operation *owner = def ? def : v.getParentBlock()->getParentOp();
          if (!contains(owner))
            out.liveIns.insert(v);
        }
      });
      for (Value r : top->getResults())
        for (Operation *user : r.getUsers())
          if (!contains(user))
            out.liveOuts.insert(r);
    }
    return out;
  }

  ArrayRef<Operation *> getOps() const { return ops; }

private:
  Block &body;
  ArrayRef<Operation *> ops;
  llvm::DenseSet<Operation *> members;
};

/// Whether `v` is (a view of) stack memory, which must not outlive the
/// function that allocates it.
bool isStackMemory(Value v) {
  return viewedBuffer(v).getDefiningOp<memref::AllocaOp>() != nullptr;
}

bool isCloneableConstant(Value v) {
  Operation *def = v.getDefiningOp();
  return def && def->hasTrait<OpTrait::ConstantLike>() &&
         def->getNumOperands() == 0 && def->getNumRegions() == 0;
}

/// A function's type and body as text (values numbered locally, no
/// locations, no name): equal for functions that compute the same.
std::string structure(func::FuncOp fn) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << fn.getFunctionType();
  // Names local to the function: printing with the module's scope would
  // number every value of the module for each part.
  AsmState state(fn, OpPrintingFlags().useLocalScope());
  fn.getBody().front().print(os, state);
  return text;
}

/// Moves `run` into a new private function called in its place, or calls
/// an identical function outlined before (`outlined`, by structure).
void outline(func::FuncOp fn, const Run &run, unsigned index,
             SymbolTable &symbols, llvm::StringMap<func::FuncOp> &outlined) {
  RunInterface io = run.interface();
  SmallVector<Value> args, constants;
  for (Value v : io.liveIns)
    (isCloneableConstant(v) ? constants : args).push_back(v);
  SmallVector<Type> argTypes, resultTypes;
  for (Value v : args)
    argTypes.push_back(v.getType());
  for (Value v : io.liveOuts)
    resultTypes.push_back(v.getType());

  OpBuilder builder(fn);
  Location loc = run.getOps().front()->getLoc();
  auto part = func::FuncOp::create(
      builder, loc, (fn.getName() + "_part" + Twine(index)).str(),
      builder.getFunctionType(argTypes, resultTypes));
  part.setPrivate();
  part.setNoInline(true);
  // Internal: the parts are not entry points (and no two steps' collide).
  part->setAttr("llvm.linkage", LLVM::LinkageAttr::get(
                                    builder.getContext(), LLVM::Linkage::Internal));
  symbols.insert(part, fn->getIterator());
  Block *entry = part.addEntryBlock();
  IRMapping map;
  for (auto [v, a] : llvm::zip(args, entry->getArguments()))
    map.map(v, a);
  OpBuilder inner = OpBuilder::atBlockEnd(entry);
  for (Value c : constants)
    inner.clone(*c.getDefiningOp(), map);
  for (Operation *op : run.getOps())
    inner.clone(*op, map);
  SmallVector<Value> returned;
  for (Value v : io.liveOuts)
    returned.push_back(map.lookup(v));
  func::ReturnOp::create(inner, loc, returned);
  auto [it, fresh] = outlined.try_emplace(structure(part), part);
  if (!fresh) {
    symbols.erase(part);
    part = it->second;
  }

  builder.setInsertionPoint(run.getOps().front());
  auto call = func::CallOp::create(builder, loc, part, args);
  // LLVM would inline a function called once straight back.
  call.setNoInline(true);
  for (auto [out, r] : llvm::zip(io.liveOuts, call.getResults()))
    Value(out).replaceUsesWithIf(r, [&](OpOperand &use) {
      return !run.contains(use.getOwner());
    });
  for (Operation *op : llvm::reverse(run.getOps()))
    op->erase();
}

/// Cuts `fn`'s body into runs of at most `maxOps` nested operations, at
/// points chosen by content (as content-defined chunking in backup tools
/// does): after an op when a hash of it and the two ops before it hits a
/// divisor, once the run has `maxOps / 8` operations. The same sequence of
/// ops (a repeated layer's) is cut the same way wherever it appears, so
/// its runs are identical and outlined once.
bool split(func::FuncOp fn, int64_t maxOps, SymbolTable &symbols,
           llvm::StringMap<func::FuncOp> &outlined) {
  if (fn.isExternal() || !fn.getBody().hasOneBlock())
    return false;
  Block &body = fn.getBody().front();
  SmallVector<Operation *> ops;
  SmallVector<int64_t> weights;
  SmallVector<uint64_t> hashes;
  int64_t total = 0;
  for (Operation &op : body.without_terminator()) {
    // Constants stay: each run clones those it uses.
    if (op.getNumResults() == 1 && isCloneableConstant(op.getResult(0)))
      continue;
    int64_t w = 0;
    // Names and arities only, hashed with a fixed function: the same in
    // every process (pointers of uniqued types and attributes, and
    // llvm::hash_combine's seed, are not), so every rank and run cuts the
    // same way.
    std::string signature;
    op.walk([&](Operation *nested) {
      ++w;
      signature += nested->getName().getStringRef().str() + "/" +
                   std::to_string(nested->getNumOperands()) + "/" +
                   std::to_string(nested->getNumResults()) + ";";
    });
    ops.push_back(&op);
    weights.push_back(w);
    hashes.push_back(llvm::xxh3_64bits(signature));
    total += w;
  }
  if (total <= maxOps)
    return false;
  int64_t minOps = std::max<int64_t>(maxOps / 8, 1);
  SmallVector<std::pair<size_t, size_t>> runs;
  size_t begin = 0;
  int64_t size = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    size += weights[i];
    bool last = i + 1 == ops.size();
    uint64_t window = hashes[i] * 0x9E3779B97F4A7C15ull ^
                      llvm::rotl(i > 0 ? hashes[i - 1] : 0, 21) ^
                      llvm::rotl(i > 1 ? hashes[i - 2] : 0, 42);
    bool cut = last || size >= maxOps ||
               (size >= minOps && (window >> 29) % 8 == 0);
    if (!cut)
      continue;
    Run candidate(body, ArrayRef<Operation *>(ops).slice(begin, i + 1 - begin));
    if (!last && llvm::any_of(candidate.interface().liveOuts, isStackMemory))
      continue;
    // A short remainder joins the run before it.
    if (last && size < minOps && !runs.empty())
      runs.back().second = i + 1;
    else
      runs.push_back({begin, i + 1});
    begin = i + 1;
    size = 0;
  }
  if (runs.size() < 2)
    return false;
  for (auto [k, r] : llvm::enumerate(runs))
    outline(fn,
            Run(body, ArrayRef<Operation *>(ops).slice(r.first,
                                                       r.second - r.first)),
            k, symbols, outlined);
  return true;
}

struct SplitFunctionsPass
    : loom::impl::LoomSplitFunctionsBase<SplitFunctionsPass> {
  using LoomSplitFunctionsBase::LoomSplitFunctionsBase;

  void runOnOperation() override {
    if (maxOps <= 0)
      return;
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    llvm::StringMap<func::FuncOp> outlined;
    for (auto fn : llvm::to_vector(module.getOps<func::FuncOp>()))
      if (!fn.getNoInline() && split(fn, maxOps, symbols, outlined) &&
          fn->hasAttr("llvm.emit_c_interface"))
        // Called only through its C interface (_mlir_ciface_<name>, which
        // passes descriptors by pointer): internal, so that LLVM need not
        // lower a call with every descriptor field as an argument (the
        // instruction selector's time grows faster than that count).
        fn->setAttr("llvm.linkage",
                    LLVM::LinkageAttr::get(&getContext(),
                                           LLVM::Linkage::Internal));
  }
};

} // namespace
