//===- loomc.cpp - Compile a model into a training artifact ---------------===//
//
//   loomc model.onnx --train --loss=cross_entropy|nll|mse
//         --optimizer=adamw|adam|sgd --lr=R [--weight-decay=W --momentum=M
//         --betas=B1,B2 --eps=E --grad-clip=C --micro-batches=K
//         --lr-schedule=constant|warmup-cosine --warmup-steps=S
//         --total-steps=T] [--init-from-onnx|--init=seeded --seed=N] -o out/
//
// Imports the model (ONNX, or loom IR with one function), turns output 0
// into a loss, builds the training step (forward, backward, optimizer) and
// writes out/train.mlir and out/params.bin, which `loom-run out/ --steps N`
// trains. Defaults follow PyTorch's optimizers.
//
//===----------------------------------------------------------------------===//

#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Dialect/Loom/Utils/Utils.h"
#include "loom/Sharding/Passes.h"
#include "loom/Training/Passes.h"
#include "loom/Planner/AutoShard.h"
#include "loom/Sharding/PartitionReport.h"
#include "loom/Sharding/Strategies.h"
#include "loom/Execution/Training.h"
#include "loom/Target/ONNX/ImportONNX.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::loom;
namespace cl = llvm::cl;

static cl::OptionCategory category("loomc options");
static cl::opt<std::string> input(cl::Positional, cl::desc("<model.onnx|model.mlir>"),
                                  cl::Required, cl::cat(category));
static cl::opt<std::string> outDir("o", cl::desc("Output directory"), cl::Required,
                                   cl::value_desc("dir"), cl::cat(category));
static cl::opt<bool> train("train", cl::desc("Build a training step (the only mode so far)"),
                           cl::cat(category));
static cl::opt<std::string> loss("loss",
    cl::desc("cross_entropy, nll, mse, or none (output 0 already is the loss)"),
                                 cl::init("cross_entropy"), cl::cat(category));
static cl::opt<int64_t> classAxis("class-axis",
    cl::desc("Output dimension holding the classes (default: last)"), cl::init(-1),
    cl::cat(category));
static cl::opt<std::string> optimizer("optimizer", cl::desc("adamw, adam or sgd"),
                                      cl::init("adamw"), cl::cat(category));
static cl::opt<double> lr("lr", cl::desc("Learning rate (default 1e-3 for Adam/AdamW)"),
                          cl::init(-1.0), cl::cat(category));
static cl::opt<double> weightDecay("weight-decay",
    cl::desc("Weight decay (default 0.01 for AdamW, 0 otherwise)"), cl::init(-1.0),
    cl::cat(category));
static cl::opt<double> momentum("momentum", cl::desc("SGD momentum"), cl::init(0.0),
                                cl::cat(category));
static cl::opt<double> dampening("dampening", cl::desc("SGD dampening"), cl::init(0.0),
                                 cl::cat(category));
static cl::opt<bool> nesterov("nesterov", cl::desc("SGD Nesterov momentum"),
                              cl::cat(category));
static cl::opt<std::string> betas("betas", cl::desc("Adam betas B1,B2"),
                                  cl::init("0.9,0.999"), cl::cat(category));
static cl::opt<double> eps("eps", cl::desc("Adam epsilon"), cl::init(1e-8),
                           cl::cat(category));
static cl::opt<double> gradClip("grad-clip", cl::desc("Global gradient-norm clip (0: off)"),
                                cl::init(0.0), cl::cat(category));
static cl::opt<unsigned> microBatches("micro-batches",
    cl::desc("Micro-batches per step (gradient accumulation)"), cl::init(1),
    cl::cat(category));
static cl::opt<std::string> lrSchedule("lr-schedule", cl::desc("constant or warmup-cosine"),
                                       cl::init("constant"), cl::cat(category));
static cl::opt<int64_t> warmupSteps("warmup-steps", cl::init(0), cl::cat(category),
                                    cl::desc("warmup-cosine: warmup steps"));
static cl::opt<int64_t> totalSteps("total-steps", cl::init(0), cl::cat(category),
                                   cl::desc("warmup-cosine: steps to decay over"));
static cl::opt<std::string> init("init",
    cl::desc("onnx (the model's initializers, default) or seeded"), cl::init("onnx"),
    cl::cat(category));
static cl::opt<bool> initFromOnnx("init-from-onnx",
    cl::desc("Start from the model's initializers (default)"), cl::cat(category));
static cl::opt<uint64_t> seed("seed", cl::desc("Seed of --init=seeded"), cl::init(0),
                              cl::cat(category));
static cl::list<std::string> frozen("frozen", cl::CommaSeparated,
    cl::desc("Parameters (initializer names) not to train"), cl::cat(category));
static cl::opt<bool> noInferBuffers("no-infer-buffers",
    cl::desc("Train every float initializer, even those no gradient reaches"),
    cl::cat(category));
static cl::opt<std::string> meshSpec("mesh",
    cl::desc("Device mesh, e.g. dp=2,tp=2 (axes major to minor; one rank per device)"),
    cl::cat(category));
static cl::opt<std::string> strategy("strategy",
    cl::desc("dp, tp, dp-tp, zero1, zero2, zero3, replicated, auto (the "
             "cost-model planner, see --cluster), or annotated (the model's own "
             "shardings; the default when it declares a mesh)"),
    cl::cat(category));
static cl::opt<std::string> clusterSpec("cluster",
    cl::desc("--strategy auto: the cluster, h100-8x, h100-cluster:NxM, "
             "cpu-local[:N] or a JSON file (docs/planner.md); without --mesh "
             "the planner chooses the mesh shape for all its devices"),
    cl::init("cpu-local"), cl::cat(category));
static cl::opt<std::string> planReport("plan-report", cl::ValueOptional,
    cl::desc("--strategy auto: print the planner's report (text, or =json)"),
    cl::cat(category));
static cl::opt<bool> planOnly("plan-only",
    cl::desc("--strategy auto: stop after planning (no artifact)"),
    cl::cat(category));
static cl::opt<double> memoryLimitGiB("memory-limit-gib",
    cl::desc("--strategy auto: per-device memory limit (default: 90% of the "
             "cluster device's)"),
    cl::init(0), cl::cat(category));
static cl::opt<double> planTimeLimit("plan-time-limit",
    cl::desc("--strategy auto: seconds per ILP before the best plan found is "
             "taken (its optimality gap is reported)"),
    cl::init(20), cl::cat(category));
static cl::opt<bool> compareMegatron("compare-megatron",
    cl::desc("--strategy auto: also price every DP x TP Megatron plan"),
    cl::cat(category));
static cl::opt<std::string> shardFile("shard",
    cl::desc("File of per-tensor shardings, one `NAME [{\"dp\"}, {}]` per line "
             "(parameters by initializer name, inputs by name); the rest is "
             "propagated"),
    cl::cat(category));
static cl::opt<double> bucketMb("bucket-mb",
    cl::desc("Fuse all-reduces into buckets of this many MiB (0: off; default 25)"),
    cl::init(25.0), cl::cat(category));
static cl::opt<std::string> dpAxis("dp-axis", cl::desc("Data-parallel mesh axis"),
                                   cl::init("dp"), cl::cat(category));
static cl::opt<std::string> tpAxis("tp-axis", cl::desc("Tensor-parallel mesh axis"),
                                   cl::init("tp"), cl::cat(category));
static cl::list<std::string> inputShapes("input-shape",
    cl::desc("ONNX: NAME=D0xD1x... binds an input's shape"), cl::cat(category));

static int fail(const Twine &message) {
  llvm::errs() << "loomc: error: " << message << "\n";
  return 2;
}

/// Integer inputs used as gather indices (token ids) or class labels get
/// loom.index_bound, so that synthetic data stays in range.
static void annotateIndexBounds(func::FuncOp fn) {
  for (BlockArgument arg : fn.getArguments()) {
    if (fn.getArgAttr(arg.getArgNumber(), LoomDialect::kIndexBoundAttrName))
      continue;
    int64_t bound = 0;
    auto limit = [&](int64_t size) {
      bound = bound ? std::min(bound, size) : size;
    };
    for (Operation *user : arg.getUsers()) {
      if (auto gather = dyn_cast<GatherOp>(user);
          gather && gather.getIndices() == arg)
        limit(gather.getInput().getType().getDimSize(gather.getAxis()));
      if (auto ce = dyn_cast<CrossEntropyOp>(user); ce && ce.getLabels() == arg)
        limit(ce.getInput().getType().getDimSize(1));
      if (auto nll = dyn_cast<NllLossOp>(user); nll && nll.getLabels() == arg)
        limit(nll.getInput().getType().getDimSize(1));
    }
    if (bound > 0)
      fn.setArgAttr(arg.getArgNumber(), LoomDialect::kIndexBoundAttrName,
                    IntegerAttr::get(IntegerType::get(fn.getContext(), 64), bound));
  }
}

/// Applies a file of `NAME [sharding dims]` lines to the training step's
/// arguments (by parameter symbol or input name); optimizer state follows
/// its weight. Returns an error message or "".
static std::string applyShardFile(func::FuncOp step, MeshOp mesh,
                                  StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return "cannot read " + path.str();
  MLIRContext *ctx = step.getContext();
  llvm::StringMap<unsigned> byName;
  for (unsigned i = 0; i < step.getNumArguments(); ++i) {
    if (auto p = step.getArgAttrOfType<FlatSymbolRefAttr>(
            i, LoomDialect::kParamAttrName))
      byName[p.getValue()] = i;
    if (auto n = step.getArgAttrOfType<StringAttr>(i,
                                                   LoomDialect::kNameAttrName))
      byName[n.getValue()] = i;
  }
  SmallVector<StringRef> lines;
  (*buffer)->getBuffer().split(lines, '\n');
  llvm::StringMap<ShardingAttr> given;
  for (auto [n, raw] : llvm::enumerate(lines)) {
    StringRef line = raw.split('#').first.trim();
    if (line.empty())
      continue;
    auto [name, dims] = line.split(' ');
    std::string where = path.str() + ":" + std::to_string(n + 1) + ": ";
    auto it = byName.find(name);
    if (it == byName.end())
      return where + "'" + name.str() +
             "' is neither a parameter nor an input of the model";
    std::string text = "#loom.sharding<@" + mesh.getSymName().str() + ", " +
                       dims.trim().str() + ">";
    auto attr = dyn_cast_or_null<ShardingAttr>(parseAttribute(text, ctx));
    if (!attr)
      return where + "cannot parse the sharding '" + dims.trim().str() +
             "' (expected e.g. [{\"dp\"}, {}])";
    if (failed(attr.verifyFor(step.getArgumentTypes()[it->second], step,
                              name.str())))
      return where + "the sharding does not fit '" + name.str() + "'";
    step.setArgAttr(it->second, LoomDialect::kShardingAttrName, attr);
    given[name] = attr;
  }
  // Optimizer state (state_of its weight) follows its weight unless given.
  for (unsigned i = 0; i < step.getNumArguments(); ++i) {
    ParameterOp p = boundParameter(step, i);
    if (!p || !p.getStateOfAttr() || given.count(p.getSymName()))
      continue;
    if (ShardingAttr s = given.lookup(p.getStateOfAttr().getValue()))
      step.setArgAttr(i, LoomDialect::kShardingAttrName, s);
  }
  return "";
}

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "Loom compiler: build a training artifact\n");
  if (!train)
    return fail("only --train is implemented: say --train");
  if (init != "onnx" && init != "seeded")
    return fail("--init must be onnx or seeded, not '" + init + "'");
  double beta1 = 0.9, beta2 = 0.999;
  {
    auto [b1, b2] = StringRef(betas).split(',');
    if (b1.trim().getAsDouble(beta1) || b2.trim().getAsDouble(beta2))
      return fail("--betas must be two numbers B1,B2, got '" + betas + "'");
  }

  MLIRContext ctx;
  ctx.loadDialect<LoomDialect, func::FuncDialect>();
  // Remarks (inferred buffers) and errors name ops already; no IR dumps.
  ctx.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &ctx);
  OwningOpRef<ModuleOp> module;
  if (StringRef(input).ends_with(".onnx")) {
    OnnxImportOptions options;
    for (const std::string &spec : inputShapes) {
      std::string err = parseOnnxInputShape(spec, options);
      if (!err.empty())
        return fail(err);
    }
    module = importOnnxFile(input, &ctx, options);
  } else {
    std::string err;
    auto buffer = mlir::openInputFile(input, &err);
    if (!buffer)
      return fail(err);
    sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
    module = parseSourceFile<ModuleOp>(sourceMgr, &ctx);
  }
  if (!module)
    return 2;
  auto fns = llvm::to_vector(module->getOps<func::FuncOp>());
  if (fns.size() != 1)
    return fail(llvm::formatv("{0} has {1} functions; loomc needs exactly one "
                              "(the model)",
                              input, fns.size()));
  annotateIndexBounds(fns.front());
  for (const std::string &name : frozen) {
    auto param = module->lookupSymbol<ParameterOp>(name);
    if (!param)
      return fail("--frozen names '" + name + "', which is not a parameter of " +
                  input);
    param.setTrainable(false);
  }

  PassManager pm(&ctx);
  if (!noInferBuffers)
    pm.addPass(createLoomInferBuffers());
  LoomAddLossOptions lossOptions;
  lossOptions.loss = loss;
  lossOptions.classAxis = classAxis;
  if (loss != "none")
    pm.addPass(createLoomAddLoss(lossOptions));
  LoomBuildTrainStepOptions stepOptions;
  stepOptions.optimizer = optimizer;
  stepOptions.lr = lr;
  stepOptions.weightDecay = weightDecay;
  stepOptions.momentum = momentum;
  stepOptions.dampening = dampening;
  stepOptions.nesterov = nesterov;
  stepOptions.beta1 = beta1;
  stepOptions.beta2 = beta2;
  stepOptions.eps = eps;
  stepOptions.gradClip = gradClip;
  stepOptions.microBatches = microBatches;
  stepOptions.lrSchedule = lrSchedule;
  stepOptions.warmupSteps = warmupSteps;
  stepOptions.totalSteps = totalSteps;
  pm.addPass(createLoomBuildTrainStep(stepOptions));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  if (failed(pm.run(*module)))
    return 2;

  // Parallelism: a mesh (given or declared by the model) and shardings.
  auto step = module->lookupSymbol<func::FuncOp>("train_step");
  MeshOp mesh;
  if (!meshSpec.empty()) {
    if (!module->getOps<MeshOp>().empty())
      return fail("the model already declares a mesh; drop --mesh to use it "
                  "(and its shardings)");
    SmallVector<Attribute> axes;
    SmallVector<StringRef> specs;
    StringRef(meshSpec).split(specs, ',');
    for (StringRef spec : specs) {
      auto [name, size] = spec.split('=');
      int64_t n = 0;
      if (name.trim().empty() || size.trim().getAsInteger(10, n) || n < 1)
        return fail("--mesh: expected NAME=SIZE[,NAME=SIZE...], got '" +
                    meshSpec + "'");
      axes.push_back(MeshAxisAttr::get(&ctx, StringAttr::get(&ctx, name.trim()),
                                       n, nullptr, nullptr));
    }
    OpBuilder b(&ctx);
    b.setInsertionPointToStart(module->getBody());
    mesh = MeshOp::create(b, module->getLoc(), "mesh", b.getArrayAttr(axes));
    if (failed(mlir::verify(mesh)))
      return 2;
  } else {
    auto meshes = llvm::to_vector(module->getOps<MeshOp>());
    if (meshes.size() > 1)
      return fail("the model declares several meshes; loomc needs one");
    if (!meshes.empty())
      mesh = meshes.front();
  }
  std::string chosen = strategy;
  if (chosen.empty())
    chosen = !shardFile.empty() ? "file" : mesh && meshSpec.empty() ? "annotated"
                                                                    : mesh ? "dp" : "";
  std::string autoReport;
  if (chosen == "auto") {
    if (!shardFile.empty())
      return fail("--shard and --strategy auto do not go together (put the "
                  "shardings you need in the model; the planner keeps them)");
    planner::PlannerOptions po;
    po.cluster = clusterSpec;
    po.fixedMesh = bool(mesh);
    po.memoryLimit = memoryLimitGiB * 1024.0 * 1024 * 1024;
    po.compareMegatron = compareMegatron;
    po.timeLimit = planTimeLimit;
    std::string err;
    FailureOr<planner::Plan> plan = planner::autoShard(*module, step, po, err);
    if (failed(plan))
      return fail(err);
    llvm::raw_string_ostream os(autoReport);
    if (planReport == "json")
      planner::printPlanJson(*plan, os);
    else
      planner::printPlan(*plan, os);
    if (planReport.getNumOccurrences() || planOnly)
      llvm::outs() << autoReport << "\n";
    if (planOnly) {
      // The plan as annotated IR (global shapes, loom.sharding everywhere)
      // and as a report, for inspection.
      if (std::error_code ec = llvm::sys::fs::create_directories(outDir))
        return fail("cannot create " + outDir + ": " + ec.message());
      for (auto [name, text] :
           {std::pair<StringRef, std::string>{
                planReport == "json" ? "plan.json" : "plan.txt", autoReport},
            {"planned.mlir", ""}}) {
        SmallString<256> path(outDir);
        llvm::sys::path::append(path, name);
        std::error_code ec;
        llvm::raw_fd_ostream file(path, ec);
        if (ec)
          return fail("cannot write " + std::string(path) + ": " + ec.message());
        if (name == "planned.mlir")
          module->print(file);
        else
          file << text;
      }
      if (planReport != "json") // stdout stays one JSON document
        llvm::outs() << "loomc: wrote " << outDir << "/planned.mlir and the "
                     << "plan report (--plan-only: no training artifact)\n";
      return 0;
    }
    if (!mesh)
      mesh = *module->getOps<MeshOp>().begin();
  }
  if (!chosen.empty() && chosen != "none") {
    if (!mesh)
      return fail("--strategy " + chosen + " needs a mesh: give --mesh, e.g. "
                  "--mesh dp=4");
    if (!shardFile.empty()) {
      std::string err = applyShardFile(step, mesh, shardFile);
      if (!err.empty())
        return fail(err);
    } else if (chosen != "annotated" && chosen != "auto") {
      StrategyOptions options;
      options.strategy = chosen;
      options.dpAxis = dpAxis;
      options.tpAxis = tpAxis;
      if (failed(applyStrategy(step, mesh, options)))
        return 2;
    }
    PassManager spmd(&ctx);
    spmd.addPass(createLoomPartition());
    spmd.addPass(createCanonicalizerPass());
    spmd.addPass(createCSEPass());
    if (bucketMb > 0) {
      LoomBucketAllReduceOptions bucket;
      bucket.bucketBytes = static_cast<uint64_t>(bucketMb * 1024 * 1024);
      spmd.addPass(createLoomBucketAllReduce(bucket));
    }
    if (failed(spmd.run(*module)))
      return 2;
    step = module->lookupSymbol<func::FuncOp>("train_step");
  }

  ArtifactOptions artifact;
  artifact.initFromModel = init == "onnx";
  artifact.seed = seed;
  std::string error;
  if (!writeTrainingArtifact(*module, outDir, artifact, error))
    return fail(error);

  if (step->hasAttr(LoomDialect::kPartitionedAttrName)) {
    std::string plan;
    llvm::raw_string_ostream os(plan);
    os << "strategy: " << chosen << "\n";
    if (!autoReport.empty() && planReport != "json")
      os << autoReport << "\n";
    printPartitionReport(step, os);
    SmallString<256> path(outDir);
    llvm::sys::path::append(path, "plan.txt");
    std::error_code ec;
    llvm::raw_fd_ostream file(path, ec);
    if (ec)
      return fail("cannot write " + std::string(path) + ": " + ec.message());
    file << plan;
    llvm::outs() << plan << "\n";
  }

  int64_t numParams = 0, numElements = 0;
  for (ParameterOp p : module->getOps<ParameterOp>())
    if (p.getTrainable()) {
      ++numParams;
      numElements += p.getType().getNumElements();
    }
  llvm::outs() << llvm::formatv(
      "loomc: {0} trainable parameters ({1} values), loss {2}, optimizer {3}; "
      "wrote {4}/train.mlir and {4}/params.bin\n",
      numParams, numElements, loss, optimizer, outDir);
  return 0;
}
