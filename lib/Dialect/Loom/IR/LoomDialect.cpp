//===- LoomDialect.cpp - Loom dialect -------------------------------------===//

#include "mlir/IR/BuiltinOps.h"
#include "loom/Dialect/Loom/IR/LoomDialect.h"
#include "loom/Dialect/Loom/IR/LoomOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::loom;

#include "loom/Dialect/Loom/IR/LoomDialect.cpp.inc"
#include "loom/Dialect/Loom/IR/LoomInterfaces.cpp.inc"

void LoomDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "loom/Dialect/Loom/IR/LoomOps.cpp.inc"
      >();
  registerAttributes();
}

Operation *LoomDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, elements);
}

/// Verifies `loom.sharding` on an op: one sharding for a single result, or an
/// array with one per result.
static LogicalResult verifyOpShardings(Operation *op, Attribute attr) {
  if (auto sharding = dyn_cast<ShardingAttr>(attr)) {
    if (op->getNumResults() != 1)
      return op->emitOpError("has ")
             << op->getNumResults()
             << " results; 'loom.sharding' must be an array with one "
                "#loom.sharding per result";
    return sharding.verifyFor(op->getResult(0).getType(), op, "result #0");
  }
  auto array = dyn_cast<ArrayAttr>(attr);
  if (!array)
    return op->emitOpError("'loom.sharding' must be a #loom.sharding or an "
                           "array of them, got ")
           << attr;
  if (array.size() != op->getNumResults())
    return op->emitOpError("'loom.sharding' has ")
           << array.size() << " entries but the op has " << op->getNumResults()
           << " results";
  for (auto [i, entry] : llvm::enumerate(array)) {
    auto sharding = dyn_cast<ShardingAttr>(entry);
    if (!sharding)
      return op->emitOpError("'loom.sharding' entry #")
             << i << " is not a #loom.sharding: " << entry;
    if (failed(sharding.verifyFor(op->getResult(i).getType(), op,
                                  "result #" + std::to_string(i))))
      return failure();
  }
  return success();
}

bool mlir::loom::isWithinSizeLimits(ShapedType type) {
  if (!type.hasRank())
    return true;
  int64_t elements = 1;
  for (int64_t d : type.getShape()) {
    if (ShapedType::isDynamic(d))
      continue;
    if (d < 0 || d > kMaxDimSize || (d != 0 && elements > kMaxElements / d))
      return false;
    elements *= d;
  }
  return true;
}

LogicalResult mlir::loom::verifySizeLimits(Operation *root) {
  auto check = [](Value v, Operation *at) {
    auto type = dyn_cast<ShapedType>(v.getType());
    if (!type || isWithinSizeLimits(type))
      return success();
    InFlightDiagnostic d = at->emitError();
    if (auto arg = dyn_cast<BlockArgument>(v))
      d << "argument #" << arg.getArgNumber() << " ";
    else
      d << "result #" << cast<OpResult>(v).getResultNumber() << " ";
    d << "has type " << type
      << ", larger than Loom compiles (dimensions at most 2^31 - 1, at most "
         "2^46 elements)";
    return failure();
  };
  WalkResult r = root->walk([&](Operation *op) {
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          if (failed(check(arg, op)))
            return WalkResult::interrupt();
    for (Value v : op->getResults())
      if (failed(check(v, op)))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return failure(r.wasInterrupted());
}

/// `loom.async` on a collective: its results are not there until its wait,
/// so one later loom.wait in its block reads all of them, in order, and
/// nothing else does.
static LogicalResult verifyStarted(Operation *op, Attribute value) {
  if (!isa<AllReduceOp, AllGatherOp, ReduceScatterOp>(op) ||
      !isa<UnitAttr>(value))
    return op->emitOpError("'loom.async' is a unit attribute of "
                           "loom.all_reduce, loom.all_gather and "
                           "loom.reduce_scatter");
  Operation *wait = nullptr;
  for (Operation *user : op->getUsers()) {
    if (!isa<WaitOp>(user) || (wait && wait != user))
      return op->emitOpError("started collective ('loom.async') must be "
                             "read by one loom.wait only, not by ")
             << user->getName();
    wait = user;
  }
  if (!wait || wait->getNumOperands() != op->getNumResults() ||
      wait->getOperands() != ValueRange(op->getResults()) ||
      wait->getBlock() != op->getBlock() || !op->isBeforeInBlock(wait))
    return op->emitOpError("started collective ('loom.async') needs a "
                           "later loom.wait of all its results, in order, "
                           "in its block");
  return success();
}

/// loom.pipeline_plan: {mesh, stages >= 1, schedule, micro_batches >= 1,
/// ...} on a module (loom-plan-pipeline).
static LogicalResult verifyPipelinePlan(Operation *op, Attribute value) {
  auto dict = dyn_cast<DictionaryAttr>(value);
  auto stages = dict ? dict.getAs<IntegerAttr>("stages") : nullptr;
  auto schedule = dict ? dict.getAs<StringAttr>("schedule") : nullptr;
  auto micro = dict ? dict.getAs<IntegerAttr>("micro_batches") : nullptr;
  if (!isa<mlir::ModuleOp>(op) || !stages || stages.getInt() < 1 ||
      !schedule || !dict.getAs<StringAttr>("mesh") || !micro ||
      micro.getInt() < 1)
    return op->emitOpError("'loom.pipeline_plan' must be {mesh = \"...\", "
                           "stages = S >= 1, schedule = \"...\", "
                           "micro_batches = M >= 1, ...} on a module");
  return success();
}

/// Unit attributes that mark an op: loom.regather on a collective,
/// loom.weight_gradient on a loom.conv.
static LogicalResult verifyMarker(Operation *op, NamedAttribute attr) {
  bool regather = attr.getName() == LoomDialect::kRegatherAttrName;
  bool fits = regather ? isa<CollectiveOpInterface>(op) : isa<ConvOp>(op);
  if (!fits || !isa<UnitAttr>(attr.getValue()))
    return op->emitOpError("'")
           << attr.getName().getValue() << "' must be a unit attribute on "
           << (regather ? "a collective" : "a loom.conv");
  return success();
}

LogicalResult LoomDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  if (attr.getName() == kShardingAttrName)
    return verifyOpShardings(op, attr.getValue());
  if (attr.getName() == kPartitionedAttrName) {
    auto ref = dyn_cast<FlatSymbolRefAttr>(attr.getValue());
    if (!isa<FunctionOpInterface>(op) || !ref ||
        !SymbolTable::lookupNearestSymbolFrom<MeshOp>(op, ref))
      return op->emitOpError("'loom.partitioned' must name a loom.mesh on a "
                             "function");
    return success();
  }
  if (attr.getName() == kAsyncAttrName)
    return verifyStarted(op, attr.getValue());
  if (attr.getName() == kRegatherAttrName ||
      attr.getName() == kWeightGradientAttrName)
    return verifyMarker(op, attr);
  if (attr.getName() == kOverlapAttrName) {
    if (!isa<ModuleOp>(op) || !isa<BoolAttr>(attr.getValue()))
      return op->emitOpError("'loom.overlap' must be a bool on a module");
    return success();
  }
  if (attr.getName() == kMicroBatchesAttrName) {
    auto count = dyn_cast<IntegerAttr>(attr.getValue());
    if (!isa<FunctionOpInterface>(op) || !count || count.getInt() < 1)
      return op->emitOpError("'loom.micro_batches' must be a positive "
                             "integer on a function");
    return success();
  }
  if (attr.getName() == kMicroBatchRowsAttrName) {
    auto elements = dyn_cast<IntegerAttr>(attr.getValue());
    if (!isa<DropoutOp>(op) || !elements || elements.getInt() < 1)
      return op->emitOpError("'loom.micro_batch_rows' must be a positive "
                             "integer on a loom.dropout");
    return success();
  }
  if (attr.getName() == kBatchWholeInputsAttrName) {
    auto names = dyn_cast<ArrayAttr>(attr.getValue());
    if (!isa<ModuleOp>(op) || !names ||
        !llvm::all_of(names, [](Attribute a) { return isa<StringAttr>(a); }))
      return op->emitOpError("'loom.batch_whole_inputs' must be an array "
                             "of input names on a module");
    return success();
  }
  if (attr.getName() == kBatchSplitAttrName) {
    auto count = dyn_cast<IntegerAttr>(attr.getValue());
    if (!isa<ModuleOp>(op) || !count || count.getInt() < 2)
      return op->emitOpError("'loom.batch_split' must be an integer of at "
                             "least 2 on a module");
    return success();
  }
  if (attr.getName() == kOpIdAttrName || attr.getName() == kVjpOfAttrName) {
    auto id = dyn_cast<IntegerAttr>(attr.getValue());
    if (isa<FunctionOpInterface>(op) || !id || id.getInt() < 0)
      return op->emitOpError("'")
             << attr.getName().getValue()
             << "' must be a non-negative integer (an op number) on an op";
    return success();
  }
  if (attr.getName() == kStageAttrName) {
    auto stage = dyn_cast<IntegerAttr>(attr.getValue());
    if (isa<FunctionOpInterface>(op) || !stage || stage.getInt() < 0)
      return op->emitOpError("'loom.stage' must be a non-negative integer (a "
                             "pipeline stage) on an op");
    return success();
  }
  if (attr.getName() == kPhaseAttrName) {
    auto phase = dyn_cast<StringAttr>(attr.getValue());
    if (isa<FunctionOpInterface>(op) || !phase ||
        !llvm::is_contained({"forward", "backward", "update"},
                            phase.getValue()))
      return op->emitOpError("'loom.phase' must be \"forward\", "
                             "\"backward\" or \"update\" on an op");
    return success();
  }
  if (attr.getName() == kRematAttrName || attr.getName() == kRecomputedAttrName) {
    auto segment = dyn_cast<IntegerAttr>(attr.getValue());
    if (isa<FunctionOpInterface>(op) || !segment || segment.getInt() < 0)
      return op->emitOpError("'")
             << attr.getName().getValue()
             << "' must be a non-negative integer (a rematerialization "
                "segment) on an op";
    return success();
  }
  if (attr.getName() == kFactorsAttrName) {
    auto factors = dyn_cast<ArrayAttr>(attr.getValue());
    auto rule = dyn_cast<ShardingRuleOpInterface>(op);
    auto fail = [&]() {
      return op->emitOpError("'loom.factors' must be an array with, per "
                             "factor of the op's sharding rule, an array of "
                             "mesh axis names");
    };
    if (!factors || !rule)
      return fail();
    if (int64_t(factors.size()) != rule.getShardingRule().getNumFactors())
      return op->emitOpError("'loom.factors' names ")
             << factors.size() << " factors; the op's sharding rule has "
             << rule.getShardingRule().getNumFactors();
    for (Attribute f : factors) {
      auto axes = dyn_cast<ArrayAttr>(f);
      if (!axes || !llvm::all_of(axes, [](Attribute a) {
            return isa<StringAttr>(a);
          }))
        return fail();
    }
    return success();
  }
  if (attr.getName() == kGradCompressionAttrName) {
    auto type = dyn_cast<StringAttr>(attr.getValue());
    if (!type || (!llvm::is_contained({"fp16", "bf16"}, type.getValue()) &&
                  !topKRatio(type.getValue())))
      return op->emitOpError("'loom.grad_compression' must be \"fp16\", "
                             "\"bf16\" or \"topk:RATIO\" with RATIO in "
                             "(0, 1]");
    return success();
  }
  // The weight a top-k compressed gradient (the barrier's operand) is of.
  if (attr.getName() == kParamAttrName &&
      op->getName().getStringRef() == "loom.optimization_barrier") {
    if (!isa<FlatSymbolRefAttr>(attr.getValue()))
      return op->emitOpError("'loom.param' must name a parameter");
    return success();
  }
  if (attr.getName() == kPipelineAttrName) {
    if (!isa<mlir::ModuleOp>(op) || !isa<DictionaryAttr>(attr.getValue()))
      return op->emitOpError("'loom.pipeline' must be a dictionary on a "
                             "module");
    return success();
  }
  if (attr.getName() == kPipelinePlanAttrName)
    return verifyPipelinePlan(op, attr.getValue());
  if (attr.getName() == kProgramAttrName) {
    auto dict = dyn_cast<DictionaryAttr>(attr.getValue());
    if (!isa<FunctionOpInterface>(op) || !dict ||
        !dict.getAs<IntegerAttr>("stage") || !dict.getAs<StringAttr>("kind"))
      return op->emitOpError("'loom.program' must be {stage = N, kind = "
                             "\"...\"} on a function");
    return success();
  }
  return op->emitOpError("has unknown loom attribute '")
         << attr.getName().getValue() << "'";
}

/// A per-device program (loom.partitioned) declares local types; the
/// global type of a value follows from its sharding.
static Type globalTypeOf(Operation *fn, Type type, Attribute shardingAttr) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  auto sharding = dyn_cast_or_null<ShardingAttr>(shardingAttr);
  if (!tensor || !sharding || !fn->hasAttr(LoomDialect::kPartitionedAttrName) ||
      sharding.getRank() != tensor.getRank())
    return type;
  auto mesh =
      SymbolTable::lookupNearestSymbolFrom<MeshOp>(fn, sharding.getMesh());
  if (!mesh)
    return type;
  SmallVector<int64_t> shape(tensor.getShape());
  for (int64_t d = 0, e = shape.size(); d < e; ++d)
    for (StringRef axis : sharding.getDimAxes(d))
      if (MeshAxisAttr a = mesh.getAxis(axis))
        shape[d] *= a.getSize();
  return tensor.clone(shape);
}

static LogicalResult verifyValueSharding(Operation *op, Attribute attr,
                                         Type type, const Twine &what) {
  auto sharding = dyn_cast<ShardingAttr>(attr);
  if (!sharding)
    return op->emitOpError("'loom.sharding' on ")
           << what << " must be a #loom.sharding, got " << attr;
  return sharding.verifyFor(globalTypeOf(op, type, sharding), op, what.str());
}

static LogicalResult verifyName(Operation *op, Attribute attr,
                                const Twine &what) {
  auto name = dyn_cast<StringAttr>(attr);
  if (!name || name.getValue().empty())
    return op->emitOpError("'loom.name' on ")
           << what << " must be a non-empty string, got " << attr;
  return success();
}

static LogicalResult verifyParamRef(Operation *op, Attribute attr, Type type,
                                    const Twine &what) {
  auto ref = dyn_cast<FlatSymbolRefAttr>(attr);
  if (!ref)
    return op->emitOpError("'loom.param' on ")
           << what << " must be a symbol reference to a loom.parameter";
  auto param = SymbolTable::lookupNearestSymbolFrom<ParameterOp>(op, ref);
  if (!param)
    return op->emitOpError("'loom.param' on ")
           << what << " names " << ref << ", which is not a loom.parameter";
  if (param.getType() != type)
    return op->emitOpError() << what << " has type " << type
                             << " but parameter " << ref << " has type "
                             << param.getType();
  return success();
}

static LogicalResult verifyPipe(Operation *op, Attribute attr,
                                const Twine &what) {
  auto pipe = dyn_cast<StringAttr>(attr);
  StringRef kind = pipe ? pipe.getValue().split(':').first : "";
  if (!pipe || !llvm::is_contained({"recv", "send", "recv_grad", "send_grad",
                                    "stash", "grad"},
                                   kind))
    return op->emitOpError("'loom.pipe' on ")
           << what << " must be recv:N, send:N, recv_grad:N, send_grad:N, "
           << "stash:N or grad, got " << attr;
  return success();
}

LogicalResult LoomDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned regionIndex,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  // Only function-like ops carry argument attributes.
  auto fn = cast<FunctionOpInterface>(op);
  Type type = fn.getArgumentTypes()[argIndex];
  std::string what = "argument #" + std::to_string(argIndex);
  if (attr.getName() == kShardingAttrName)
    return verifyValueSharding(op, attr.getValue(), type, what);
  if (attr.getName() == kNameAttrName)
    return verifyName(op, attr.getValue(), what);
  if (attr.getName() == kParamAttrName)
    return verifyParamRef(
        op, attr.getValue(),
        globalTypeOf(op, type,
                     fn.getArgAttr(argIndex, kShardingAttrName)),
        what);
  if (attr.getName() == kIndexBoundAttrName) {
    auto bound = dyn_cast<IntegerAttr>(attr.getValue());
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!bound || bound.getInt() <= 0)
      return op->emitOpError("'loom.index_bound' on ")
             << what << " must be a positive integer, got " << attr.getValue();
    if (!tensor || !isa<IntegerType>(tensor.getElementType()))
      return op->emitOpError("'loom.index_bound' on ")
             << what << " needs an integer tensor, got " << type;
    return success();
  }
  if (attr.getName() == kPipeAttrName)
    return verifyPipe(op, attr.getValue(), what);
  return op->emitOpError("has unknown loom argument attribute '")
         << attr.getName().getValue() << "'";
}

LogicalResult LoomDialect::verifyRegionResultAttribute(Operation *op,
                                                       unsigned regionIndex,
                                                       unsigned resultIndex,
                                                       NamedAttribute attr) {
  auto fn = cast<FunctionOpInterface>(op);
  std::string what = "function result #" + std::to_string(resultIndex);
  if (attr.getName() == kShardingAttrName)
    return verifyValueSharding(op, attr.getValue(),
                               fn.getResultTypes()[resultIndex], what);
  if (attr.getName() == kNameAttrName)
    return verifyName(op, attr.getValue(), what);
  if (attr.getName() == kParamAttrName)
    return verifyParamRef(
        op, attr.getValue(),
        globalTypeOf(op, fn.getResultTypes()[resultIndex],
                     fn.getResultAttr(resultIndex, kShardingAttrName)),
        what);
  if (attr.getName() == kPipeAttrName)
    return verifyPipe(op, attr.getValue(), what);
  return op->emitOpError("has unknown loom result attribute '")
         << attr.getName().getValue() << "'";
}

std::optional<double> LoomDialect::topKRatio(StringRef compression) {
  double ratio;
  if (!compression.consume_front("topk:") || compression.getAsDouble(ratio) ||
      !(ratio > 0) || ratio > 1)
    return std::nullopt;
  return ratio;
}
