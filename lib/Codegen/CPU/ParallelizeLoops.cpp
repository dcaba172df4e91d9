//===- ParallelizeLoops.cpp - Outermost parallel loops on every core ------===//
//
// See LoomParallelizeLoops in Passes.td. The runtime side is
// runtime/src/parallel.cpp (loom_rt_parallel_for).
//
//===----------------------------------------------------------------------===//

#include "loom/Codegen/CPU/Passes.h"

#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"

namespace mlir::loom {
#define GEN_PASS_DEF_LOOMPARALLELIZELOOPS
#include "loom/Codegen/CPU/Passes.h.inc"
} // namespace mlir::loom

using namespace mlir;

namespace {

constexpr StringLiteral kRuntimeFunction = "loom_rt_parallel_for";
/// A dimension with at least this many iterations is cut into chunks
/// (enough for the threads of a large node); before it, dimensions run
/// whole in every chunk.
constexpr int64_t kChunkedTrips = 16;
/// The guessed trip count of a loop whose count is not known statically
/// (for the static work estimate only; the runtime gets the real count).
constexpr int64_t kUnknownTrips = 64;

std::optional<int64_t> staticTrips(Value lb, Value ub, Value step) {
  std::optional<int64_t> l = getConstantIntValue(lb), u = getConstantIntValue(ub),
                         s = getConstantIntValue(step);
  if (!l || !u || !s || *s <= 0)
    return std::nullopt;
  return *u > *l ? llvm::divideCeil(*u - *l, *s) : 0;
}

/// The operations of `block` weighted by the static trip counts of the
/// loops they are in (an estimate of the work of one iteration).
int64_t bodyCost(Block &block) {
  int64_t cost = 0;
  for (Operation &op : block) {
    if (op.hasTrait<OpTrait::IsTerminator>())
      continue;
    int64_t inner = 0;
    for (Region &region : op.getRegions())
      for (Block &b : region)
        inner += bodyCost(b);
    int64_t trips = 1;
    if (auto loop = dyn_cast<scf::ForOp>(op))
      trips = staticTrips(loop.getLowerBound(), loop.getUpperBound(),
                          loop.getStep())
                  .value_or(kUnknownTrips);
    else if (isa<scf::WhileOp, scf::ParallelOp>(op))
      trips = kUnknownTrips;
    cost += 1 + trips * inner;
  }
  return std::max<int64_t>(cost, 1);
}

/// The dimension of `loop` the runtime cuts into chunks.
unsigned chunkedDimension(scf::ParallelOp loop) {
  unsigned best = 0;
  int64_t bestTrips = -1;
  for (unsigned d = 0; d < loop.getNumLoops(); ++d) {
    std::optional<int64_t> trips =
        staticTrips(loop.getLowerBound()[d], loop.getUpperBound()[d],
                    loop.getStep()[d]);
    if (!trips || *trips >= kChunkedTrips)
      return d;
    if (*trips > bestTrips) {
      best = d;
      bestTrips = *trips;
    }
  }
  return best;
}

/// Whether `op` is nested in a loop of its function (only outermost
/// parallel loops are outlined: an inner one would be dispatched once per
/// iteration of its parent).
bool insideLoop(Operation *op) {
  for (Operation *parent = op->getParentOp(); parent;
       parent = parent->getParentOp()) {
    if (isa<FunctionOpInterface>(parent))
      return false;
    if (isa<LoopLikeOpInterface>(parent))
      return true;
  }
  return false;
}

/// The loop to outline for parallel loop `loop`: `loop` itself, or the
/// outermost of the serial loops it is perfectly nested in (a column
/// reduction: for rows { parallel over columns }), which keeps its
/// serial loops in every chunk of `loop`'s iterations. A serial loop
/// qualifies if its body is the next loop alone, it carries no values,
/// and neither its bounds nor `loop`'s depend on its induction variable.
Operation *nestRoot(scf::ParallelOp loop) {
  Operation *root = loop;
  while (auto outer = dyn_cast<scf::ForOp>(root->getParentOp())) {
    Block *body = outer.getBody();
    if (outer.getNumRegionIterArgs() != 0 || body->getOperations().size() != 2 ||
        &body->front() != root)
      break;
    auto definedInside = [&](Value v) {
      return outer->isAncestor(v.getParentBlock()->getParentOp());
    };
    bool bounds = llvm::any_of(loop->getOperands(), definedInside);
    root->walk([&](scf::ForOp inner) {
      bounds |= llvm::any_of(inner->getOperands(), definedInside);
    });
    if (bounds)
      break;
    root = outer;
  }
  return root;
}

/// The serial loops from `root` down to `loop` (none if they are the
/// same).
SmallVector<scf::ForOp> serialLoops(Operation *root, scf::ParallelOp loop) {
  SmallVector<scf::ForOp> loops;
  for (Operation *op = loop->getParentOp(); op && root != loop;
       op = op->getParentOp()) {
    loops.insert(loops.begin(), cast<scf::ForOp>(op));
    if (op == root)
      break;
  }
  return loops;
}

/// The values `root` uses from outside it: those its body uses and its
/// bounds. Constants are split off into `constants` (cloned, not passed).
void usedValues(Operation *root, llvm::SetVector<Value> &captures,
                llvm::SetVector<Value> &constants) {
  llvm::SetVector<Value> used;
  getUsedValuesDefinedAbove(root->getRegions(), used);
  for (Value v : root->getOperands())
    used.insert(v);
  for (Value v : used) {
    if (matchPattern(v, m_Constant()))
      constants.insert(v);
    else
      captures.insert(v);
  }
}

/// The type a value of type `t` has in the ctx struct, or null if it
/// cannot be passed (the LLVM type of a strided memref's descriptor, i64
/// for an index, integers and floats as they are).
Type slotType(Type t, const LLVMTypeConverter &converter) {
  if (auto memref = dyn_cast<MemRefType>(t))
    return memref.isStrided() ? converter.convertType(memref) : Type();
  if (t.isIndex())
    return IntegerType::get(t.getContext(), 64);
  if (t.isIntOrFloat())
    return t;
  return Type();
}

/// An outermost parallel loop (or the nest of serial loops around it)
/// prepared for outlining: its body function built, not yet called.
struct Candidate {
  scf::ParallelOp loop;
  Operation *root;
  func::FuncOp parent;
  unsigned dim;
  SmallVector<Value> captures;
  LLVM::LLVMStructType ctxType;
  func::FuncOp body;
  /// Whether its work reaches min-work (or is not known statically).
  bool large;
  /// The body function as printed without its name: equal keys, equal code.
  std::string key;
};

/// The type capture `v` has in the outlined body of `root`: a memref that
/// the body only loads from and stores into gets a dynamic offset (its
/// descriptor carries the offset), so that loops over different slices of
/// a buffer, or over buffers of one shape, share one body; the others keep
/// their type.
Type bodyType(Value v, Operation *root) {
  auto memref = dyn_cast<MemRefType>(v.getType());
  if (!memref)
    return v.getType();
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(memref.getStridesAndOffset(strides, offset)))
    return memref;
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (!root->isAncestor(user))
      continue;
    bool access = (isa<memref::LoadOp>(user) && use.getOperandNumber() == 0) ||
                  (isa<memref::StoreOp>(user) && use.getOperandNumber() == 1);
    if (!access)
      return memref;
  }
  return MemRefType::get(
      memref.getShape(), memref.getElementType(),
      StridedLayoutAttr::get(v.getContext(), ShapedType::kDynamic, strides),
      memref.getMemorySpace());
}

class Outliner {
public:
  Outliner(ModuleOp module, int64_t minWork)
      : module(module), symbols(module), minWork(minWork),
        converter(module.getContext()) {}

  /// Builds the body function of `root` (`loop` or the serial loops around
  /// it, nestRoot) of `parent`, or nothing if it cannot be outlined.
  std::optional<Candidate> prepare(scf::ParallelOp loop, Operation *root,
                                   func::FuncOp parent);
  /// Replaces the candidate's loop by a call to the runtime with `body`.
  void outline(Candidate &c, func::FuncOp body);
  /// Removes an unused body function.
  void erase(func::FuncOp fn) { symbols.erase(fn); }

private:
  func::FuncOp runtimeFunction();
  func::FuncOp buildBody(Operation *root, scf::ParallelOp loop,
                         func::FuncOp parent, unsigned dim,
                         ArrayRef<Value> captures,
                         ArrayRef<Value> constants,
                         LLVM::LLVMStructType ctxType);
  void buildCall(Operation *root, scf::ParallelOp loop, func::FuncOp parent,
                 unsigned dim, func::FuncOp body, ArrayRef<Value> captures,
                 LLVM::LLVMStructType ctxType);

  ModuleOp module;
  SymbolTable symbols;
  int64_t minWork;
  LLVMTypeConverter converter;
  func::FuncOp declared;
};

func::FuncOp Outliner::runtimeFunction() {
  if (declared)
    return declared;
  if ((declared = symbols.lookup<func::FuncOp>(kRuntimeFunction)))
    return declared;
  MLIRContext *ctx = module.getContext();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i64 = IntegerType::get(ctx, 64);
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  declared = func::FuncOp::create(
      b, module.getLoc(), kRuntimeFunction,
      FunctionType::get(ctx, {ptr, ptr, i64, i64}, {}));
  declared.setPrivate();
  symbols.insert(declared);
  return declared;
}

/// `@<parent>_parallel<k>(ctx, lo, hi)`: `root` (`loop` or the serial
/// loops around it) with dimension `dim` of `loop` restricted to
/// iterations [lo, hi), its outside values loaded from ctx.
func::FuncOp Outliner::buildBody(Operation *root, scf::ParallelOp loop,
                                 func::FuncOp parent, unsigned dim,
                                 ArrayRef<Value> captures,
                                 ArrayRef<Value> constants,
                                 LLVM::LLVMStructType ctxType) {
  MLIRContext *ctx = module.getContext();
  Location loc = loop.getLoc();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto index = IndexType::get(ctx);
  OpBuilder b(parent);
  b.setInsertionPointAfter(parent);
  auto fn = func::FuncOp::create(
      b, loc, (parent.getName() + "_parallel").str(),
      FunctionType::get(ctx, {ptr, index, index}, {}));
  fn.setPrivate();
  symbols.insert(fn); // uniquifies the name
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);

  IRMapping mapping;
  for (Value c : constants)
    mapping.map(c, b.clone(*c.getDefiningOp())->getResult(0));
  for (auto [i, v] : llvm::enumerate(captures)) {
    Type slot = ctxType.getBody()[i];
    Value field = LLVM::GEPOp::create(
        b, loc, ptr, ctxType, entry->getArgument(0),
        ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(i)});
    Value loaded = LLVM::LoadOp::create(b, loc, slot, field);
    Value value =
        v.getType().isIndex()
            ? arith::IndexCastOp::create(b, loc, index, loaded).getResult()
        : isa<MemRefType>(v.getType())
            ? UnrealizedConversionCastOp::create(b, loc, bodyType(v, root),
                                                 loaded)
                  .getResult(0)
            : loaded;
    mapping.map(v, value);
  }

  // Iterations [lo, hi) of dimension `dim`: lb + lo * step to
  // min(ub, lb + hi * step).
  Value lb = mapping.lookup(loop.getLowerBound()[dim]);
  Value ub = mapping.lookup(loop.getUpperBound()[dim]);
  Value step = mapping.lookup(loop.getStep()[dim]);
  Value lo = arith::AddIOp::create(
      b, loc, lb, arith::MulIOp::create(b, loc, entry->getArgument(1), step));
  Value hi = arith::MinSIOp::create(
      b, loc, ub,
      arith::AddIOp::create(
          b, loc, lb,
          arith::MulIOp::create(b, loc, entry->getArgument(2), step)));
  b.clone(*root, mapping);
  auto clone = cast<scf::ParallelOp>(mapping.lookup(loop.getOperation()));
  unsigned n = loop.getNumLoops();
  clone->setOperand(dim, lo);
  clone->setOperand(n + dim, hi);
  func::ReturnOp::create(b, loc);
  return fn;
}

/// Replaces `root` by filling a ctx struct and calling the runtime.
void Outliner::buildCall(Operation *root, scf::ParallelOp loop,
                         func::FuncOp parent, unsigned dim, func::FuncOp body,
                         ArrayRef<Value> captures,
                         LLVM::LLVMStructType ctxType) {
  MLIRContext *ctx = module.getContext();
  Location loc = loop.getLoc();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i64 = IntegerType::get(ctx, 64);

  // The ctx struct: once per function, in its entry block (not per
  // iteration of an enclosing loop).
  OpBuilder entry = OpBuilder::atBlockBegin(&parent.getBody().front());
  Value one = LLVM::ConstantOp::create(entry, loc, i64,
                                       entry.getI64IntegerAttr(1));
  Value ctxPtr = LLVM::AllocaOp::create(entry, loc, ptr, ctxType, one,
                                        /*alignment=*/8);

  OpBuilder b(root);
  for (auto [i, v] : llvm::enumerate(captures)) {
    Type slot = ctxType.getBody()[i];
    Value stored =
        v.getType().isIndex()
            ? arith::IndexCastOp::create(b, loc, i64, v).getResult()
        : isa<MemRefType>(v.getType())
            ? UnrealizedConversionCastOp::create(b, loc, slot, v).getResult(0)
            : v;
    Value field = LLVM::GEPOp::create(
        b, loc, ptr, ctxType, ctxPtr,
        ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(i)});
    LLVM::StoreOp::create(b, loc, stored, field);
  }

  // Iterations of a loop dimension: max(0, ceil((ub - lb) / step)).
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  auto trips = [&](Value lb, Value ub, Value step) -> Value {
    Value span = arith::SubIOp::create(b, loc, ub, lb);
    Value count = arith::CeilDivSIOp::create(b, loc, span, step);
    return arith::MaxSIOp::create(b, loc, count, zero);
  };
  auto dimTrips = [&](unsigned d) {
    return trips(loop.getLowerBound()[d], loop.getUpperBound()[d],
                 loop.getStep()[d]);
  };
  Value work = arith::ConstantIndexOp::create(b, loc,
                                              bodyCost(*loop.getBody()));
  for (unsigned d = 0; d < loop.getNumLoops(); ++d)
    if (d != dim)
      work = arith::MulIOp::create(b, loc, work, dimTrips(d));
  for (scf::ForOp serial : serialLoops(root, loop))
    work = arith::MulIOp::create(
        b, loc, work,
        trips(serial.getLowerBound(), serial.getUpperBound(),
              serial.getStep()));
  Value fnValue = func::ConstantOp::create(b, loc, body.getFunctionType(),
                                           body.getSymName());
  Value fnPtr =
      UnrealizedConversionCastOp::create(b, loc, ptr, fnValue).getResult(0);
  func::CallOp::create(
      b, loc, runtimeFunction(),
      ValueRange{fnPtr, ctxPtr,
                 arith::IndexCastOp::create(b, loc, i64, dimTrips(dim)),
                 arith::IndexCastOp::create(b, loc, i64, work)});
  root->erase();
}

std::optional<Candidate> Outliner::prepare(scf::ParallelOp loop,
                                           Operation *root,
                                           func::FuncOp parent) {
  if (loop.getNumResults() != 0)
    return std::nullopt;
  // Loops known to be small run in place unless they share their body
  // with others; the runtime decides for those with a dynamic count.
  int64_t work = bodyCost(*loop.getBody());
  bool dynamic = false;
  auto count = [&](std::optional<int64_t> trips) {
    dynamic |= !trips;
    work = trips ? work * *trips : work;
  };
  for (unsigned d = 0; d < loop.getNumLoops(); ++d)
    count(staticTrips(loop.getLowerBound()[d], loop.getUpperBound()[d],
                      loop.getStep()[d]));
  for (scf::ForOp serial : serialLoops(root, loop))
    count(staticTrips(serial.getLowerBound(), serial.getUpperBound(),
                      serial.getStep()));

  llvm::SetVector<Value> captures, constants;
  usedValues(root, captures, constants);
  SmallVector<Type> slots;
  for (Value v : captures) {
    Type slot = slotType(v.getType(), converter);
    if (!slot)
      return std::nullopt;
    slots.push_back(slot);
  }
  Candidate c;
  c.loop = loop;
  c.root = root;
  c.parent = parent;
  c.large = dynamic || work >= minWork;
  c.captures.assign(captures.begin(), captures.end());
  c.ctxType = LLVM::LLVMStructType::getLiteral(module.getContext(), slots);
  c.dim = chunkedDimension(loop);
  c.body = buildBody(root, loop, parent, c.dim, c.captures,
                     constants.getArrayRef(), c.ctxType);
  llvm::raw_string_ostream os(c.key);
  c.body.print(os, OpPrintingFlags().useLocalScope());
  // The name is the only difference between equal bodies.
  std::string name = ("@" + c.body.getSymName()).str();
  c.key.replace(c.key.find(name), name.size(), "@");
  return c;
}

void Outliner::outline(Candidate &c, func::FuncOp body) {
  buildCall(c.root, c.loop, c.parent, c.dim, body, c.captures, c.ctxType);
}

struct ParallelizeLoopsPass
    : loom::impl::LoomParallelizeLoopsBase<ParallelizeLoopsPass> {
  using LoomParallelizeLoopsBase::LoomParallelizeLoopsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    Outliner outliner(module, minWork);
    SmallVector<std::tuple<scf::ParallelOp, Operation *, func::FuncOp>> loops;
    // Outermost ones only (alone or in a nest of serial loops), collected
    // before any is moved.
    for (auto fn : module.getOps<func::FuncOp>())
      fn.walk([&](scf::ParallelOp loop) {
        Operation *root = nestRoot(loop);
        if (!insideLoop(root))
          loops.push_back({loop, root, fn});
      });
    std::vector<Candidate> candidates;
    for (auto [loop, root, fn] : loops)
      if (std::optional<Candidate> c = outliner.prepare(loop, root, fn))
        candidates.push_back(std::move(*c));
    // Loops with equal bodies (a repeated layer's, a recurrence's steps)
    // call one function: LLVM compiles it once.
    llvm::StringMap<func::FuncOp> shared;
    llvm::StringMap<unsigned> uses;
    for (Candidate &c : candidates)
      ++uses[c.key];
    for (Candidate &c : candidates) {
      if (!c.large && uses[c.key] < 2) {
        outliner.erase(c.body);
        continue;
      }
      auto [it, first] = shared.try_emplace(c.key, c.body);
      outliner.outline(c, it->second);
      if (!first) {
        outliner.erase(c.body);
      }
    }
  }
};

} // namespace
