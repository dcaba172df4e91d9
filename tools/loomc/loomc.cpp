//===- loomc.cpp - Compile a model into a training artifact ---------------===//
//
//   loomc model.onnx --train --loss=cross_entropy|nll|mse
//         --optimizer=adamw|adam|sgd --lr=R [--weight-decay=W --momentum=M
//         --betas=B1,B2 --eps=E --grad-clip=C --micro-batches=M
//         --grad-accumulation=K
//         --lr-schedule=constant|warmup-cosine --warmup-steps=S
//         --total-steps=T] [--precision=bf16|fp16 --loss-scale=dynamic]
//         [--init-from-onnx|--init=seeded --seed=N]
//         [--mesh dp=2,tp=2 --strategy dp|tp|...|auto ...] -o out/
//
// Imports the model (ONNX, or loom IR with one function) and runs Loom's
// pipelines on it (Pipelines/Pipelines.h): --loom-training-pipeline,
// --loom-sharding-pipeline and --loom-export-parameters, with options from
// these flags. Writes out/train.mlir and out/params.bin, which `loom-run
// out/ --steps N` trains, and for a partitioned step out/plan.txt.
// `loom-opt` with the same pipelines writes the same train.mlir.
//
//===----------------------------------------------------------------------===//

#include "loom/Codegen/CUDA/Toolkit.h"
#include "loom/Dialect/Loom/IR/LoomOps.h"
#include "loom/Execution/Artifact.h"
#include "loom/Execution/Executable.h"
#include "loom/Execution/Passes.h"
#include "loom/Pipelines/Pipelines.h"
#include "PlanMessages.h"
#include "loom/Sharding/PartitionReport.h"
#include "loom/Sharding/Strategies.h"
#include "loom/Support/Debug.h"
#include "loom/Support/InputLimits.h"
#include "loom/program.h"
#include "loom/Target/ONNX/ImportONNX.h"
#include "loom/Training/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include <cmath>
#include <limits>

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
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
static cl::opt<std::string> optimizer("optimizer",
    cl::desc("adamw, adam, sgd, or none (the model already is the step: "
             "loom.torch's traced PyTorch optimizer)"),
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
    cl::desc("Split the model's batch (the step's whole batch) into this "
             "many micro-batches, run one after the other (a pipeline's "
             "micro-batches): the same step, less activation memory; must "
             "divide the batch. 0 with --strategy auto and a pipeline "
             "(--plan-stages or a pp mesh axis): the planner chooses the "
             "count (1, 2, 4, ... 64 tried). Not given, when auto compares "
             "pipelines on a cluster of several nodes: searched from 8"),
    cl::init(1), cl::cat(category));
static cl::opt<unsigned> gradAccumulation("grad-accumulation",
    cl::desc("Accumulate gradients over this many data entries per step, "
             "each of the model's batch (PyTorch's gradient accumulation: "
             "the step trains on this many times the batch)"),
    cl::init(1), cl::cat(category));
static cl::opt<std::string> lrSchedule("lr-schedule", cl::desc("constant or warmup-cosine"),
                                       cl::init("constant"), cl::cat(category));
static cl::opt<int64_t> warmupSteps("warmup-steps", cl::init(0), cl::cat(category),
                                    cl::desc("warmup-cosine: warmup steps"));
static cl::opt<int64_t> totalSteps("total-steps", cl::init(0), cl::cat(category),
                                   cl::desc("warmup-cosine: steps to decay over"));
static cl::opt<std::string> precision("precision",
    cl::desc("bf16 or fp16: compute in it with fp32 master weights and "
             "optimizer state (PyTorch autocast's rules); fp32: as the model "
             "is (default)"),
    cl::init(""), cl::cat(category));
static cl::opt<std::string> lossScale("loss-scale",
    cl::desc("none or dynamic (PyTorch GradScaler; default with "
             "--precision=fp16)"),
    cl::init(""), cl::cat(category));
static cl::opt<double> lossScaleInit("loss-scale-init",
    cl::desc("Initial dynamic loss scale"), cl::init(65536.0), cl::cat(category));
static cl::opt<int64_t> lossScaleGrowthInterval("loss-scale-growth-interval",
    cl::desc("Clean steps before the dynamic loss scale doubles"),
    cl::init(2000), cl::cat(category));
static cl::opt<std::string> gradCompression("grad-compression",
    cl::desc("none, fp16 or bf16: reduce weight gradients across devices in "
             "16 bits (Horovod's Compression.fp16); topk:RATIO: each device "
             "sends the largest RATIO of its gradient's entries and keeps the "
             "rest as a residual added next step (error feedback)"),
    cl::init("none"), cl::cat(category));
static cl::opt<std::string> emit("emit",
    cl::desc("executable (default): the artifact loom-run runs (train.mlir, "
             "params.bin) and out/train, the step compiled ahead of time and "
             "linked with Loom's runtime (no LLVM/MLIR at run time), run as "
             "`mpirun -np N out/train --steps K` or through loom-run; its "
             "machine code also fills out/cache, so loom-run does not compile "
             "the step again. A pipelined step is one program holding every "
             "stage's programs; each rank runs its stages. mlir: the artifact only, no compilation"),
    cl::init("executable"), cl::cat(category));

static cl::opt<std::string> target("target",
    cl::desc("cpu (default) or cuda[:sm_XX]: compile the per-device step to "
             "CUDA kernels (cubin for sm_XX, default sm_90) and cuBLAS calls "
             "(out/train.cuda.mlir); --emit=executable makes out/train a GPU "
             "program (Loom's CUDA library; the driver, cuBLAS and NCCL are "
             "found at run time)"),
    cl::init("cpu"), cl::cat(category));
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
    cl::desc("--strategy auto (and every preset, all priced as plans): the "
             "cluster, h100-8x, h100-cluster:NxM, cpu-local[:N] or a JSON "
             "file (docs/planner.md); without --mesh the planner chooses the "
             "mesh shape for all its devices"),
    cl::init("cpu-local"), cl::cat(category));
static cl::opt<std::string> planReport("plan-report", cl::ValueOptional,
    cl::desc("--strategy auto or a preset: print the planner's report "
             "(text, or =json)"),
    cl::cat(category));
static cl::opt<bool> planOnly("plan-only",
    cl::desc("--strategy auto or a preset: stop after planning (no "
             "artifact)"),
    cl::cat(category));
static cl::opt<double> memoryLimitGiB("memory-limit-gib",
    cl::desc("--strategy auto: per-device memory limit (default: 90% of the "
             "cluster device's)"),
    cl::init(0), cl::cat(category));
static cl::opt<double> planTimeLimit("plan-time-limit",
    cl::desc("--strategy auto: seconds per ILP before the best plan found is "
             "taken (its optimality gap is reported)"),
    cl::init(20), cl::cat(category));
static cl::opt<std::string> remat("remat",
    cl::desc("Recompute activations in the backward pass (gradient "
             "checkpointing): auto (the planner's choice with --strategy "
             "auto, else none), none, layers (each repeated layer keeps only "
             "its input), full (also the ops around the layers)"),
    cl::init("auto"), cl::cat(category));
static cl::opt<int> planMeshAxes("plan-mesh-axes",
    cl::desc("--strategy auto: most axes of the mesh the planner chooses, 2 "
             "or 3 (default: 3 when the cluster has 3 or more link levels, "
             "else 2)"),
    cl::init(0), cl::cat(category));
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
static cl::opt<bool> overlapCollectives("overlap",
    cl::desc("Start gradient reductions and weight gathers where their "
             "operands are ready and wait where their results are read, so "
             "communication overlaps compute (default on; --overlap=false: "
             "every collective blocks)"),
    cl::init(true), cl::cat(category));
static cl::opt<std::string> dpAxis("dp-axis", cl::desc("Data-parallel mesh axis"),
                                   cl::init("dp"), cl::cat(category));
static cl::opt<std::string> tpAxis("tp-axis", cl::desc("Tensor-parallel mesh axis"),
                                   cl::init("tp"), cl::cat(category));
static cl::opt<std::string> scheduleName("schedule",
    cl::desc("Pipeline schedule with a pp mesh axis: gpipe, 1f1b (default), "
             "interleaved or zb-h1"),
    cl::init("1f1b"), cl::cat(category));
static cl::opt<unsigned> virtualStages("virtual-stages",
    cl::desc("Pipeline stages per pp rank (the interleaved schedule)"),
    cl::init(1), cl::cat(category));
static cl::list<std::string> stageBoundaries("stage-boundaries",
    cl::CommaSeparated,
    cl::desc("Names of the model's ops (ONNX node names) that start pipeline "
             "stages 1, 2, ... (default: stages balanced by the cost of "
             "their ops)"),
    cl::cat(category));
static cl::opt<int> planStages("plan-stages",
    cl::desc("With --strategy auto and no --mesh: search pipeline stages too "
             "(0: every stage count that divides the devices; N: exactly N) "
             "for --micro-batches per step (which split the model's batch); "
             "the report names the stages, sub-mesh and "
             "schedule, and without --plan-only loomc compiles that plan. "
             "Not given, on a cluster of several nodes: the planner compares "
             "pipelines (stages, schedule and micro-batches searched) with "
             "the best plan without one and keeps the faster; 1: no "
             "pipeline"),
    cl::init(1), cl::cat(category));
static cl::list<std::string> inputShapes("input-shape",
    cl::desc("ONNX: NAME=D0xD1x... binds an input's shape"), cl::cat(category));

namespace {

/// --strategy auto on a step without stages of the user's: the planner
/// splits it (a pp mesh axis, or the search of --plan-stages), and loomc
/// compiles the split it reports.
bool stagesByPlanner = false;
/// The mesh loom-plan-pipeline chose and created in the model (without
/// --mesh).
std::string plannedMesh;

int fail(const Twine &message) {
  llvm::errs() << "loomc: error: " << message << "\n";
  return 2;
}

/// Messages that are not the JSON report go to stderr when stdout carries
/// one (--plan-report=json), so that stdout stays one JSON document.
llvm::raw_ostream &messages() {
  return planReport == "json" ? llvm::errs() : llvm::outs();
}

/// The model as a module with one function (ONNX import or loom IR).
OwningOpRef<ModuleOp> loadModel(MLIRContext &ctx, llvm::SourceMgr &sourceMgr,
                                std::string &error) {
  OwningOpRef<ModuleOp> module;
  if (StringRef(input).ends_with(".onnx")) {
    OnnxImportOptions options;
    for (const std::string &spec : inputShapes) {
      error = parseOnnxInputShape(spec, options);
      if (!error.empty())
        return nullptr;
    }
    module = importOnnxFile(input, &ctx, options);
  } else {
    auto buffer = mlir::openInputFile(input, &error);
    if (!buffer)
      return nullptr;
    error = checkIRNesting(buffer->getBuffer(), input);
    if (!error.empty())
      return nullptr;
    sourceMgr.AddNewSourceBuffer(std::move(buffer), llvm::SMLoc());
    module = parseSourceFile<ModuleOp>(sourceMgr, &ctx);
    // Sizes no pass could count (issue 45: a dimension of 2^62 grew loomc
    // to 24 GB): refused before any pass runs.
    if (module && failed(verifySizeLimits(*module)))
      return nullptr;
  }
  if (!module)
    return nullptr;
  auto fns = llvm::to_vector(module->getOps<func::FuncOp>());
  if (fns.size() != 1) {
    error = llvm::formatv("{0} has {1} functions; loomc needs exactly one "
                          "(the model)",
                          input, fns.size());
    return nullptr;
  }
  for (const std::string &name : frozen)
    if (!module->lookupSymbol<ParameterOp>(name)) {
      error = "--frozen names '" + name + "', which is not a parameter of " +
              input;
      return nullptr;
    }
  return module;
}

/// The size of the mesh's pp axis (1 without one): --mesh, or the mesh
/// the planner chose.
int64_t pipelineRanks() {
  SmallVector<StringRef> axes;
  StringRef(meshSpec.empty() ? StringRef(plannedMesh) : StringRef(meshSpec))
      .split(axes, ',', -1, false);
  for (StringRef a : axes) {
    auto [name, size] = a.split('=');
    int64_t n = 0;
    if (name.trim() == "pp" && !size.trim().getAsInteger(10, n))
      return n;
  }
  return 1;
}

/// Whether the mesh has axes other than pp.
bool meshBesidesPipeline() {
  SmallVector<StringRef> axes;
  StringRef(meshSpec).split(axes, ',', -1, false);
  return llvm::any_of(axes, [](StringRef a) {
    return a.split('=').first.trim() != "pp";
  });
}

/// A numeric flag given on the command line is finite and in range: a NaN,
/// an infinity or a negative learning rate is the user's mistake, not a
/// request for the default. Returns the error, or "".
std::string checkNumbers(double beta1, double beta2) {
  struct Range {
    const cl::opt<double> &opt;
    double lo;
    bool loOpen;
    double hi;
    const char *what;
  };
  const double inf = std::numeric_limits<double>::infinity();
  const Range ranges[] = {
      {lr, 0, true, inf, "a positive number"},
      {weightDecay, 0, false, inf, "a number >= 0"},
      {momentum, 0, false, inf, "a number >= 0"},
      {dampening, 0, false, 1, "a number in [0, 1]"},
      {eps, 0, true, inf, "a positive number"},
      {gradClip, 0, false, inf, "a number >= 0 (0: off)"},
      {lossScaleInit, 0, true, inf, "a positive number"},
      {memoryLimitGiB, 0, true, inf, "a positive number of GiB"},
      {planTimeLimit, 0, true, inf, "a positive number of seconds"},
      {bucketMb, 0, false, inf, "a number of MiB >= 0 (0: off)"},
  };
  for (const Range &r : ranges) {
    if (!r.opt.getNumOccurrences())
      continue;
    double v = r.opt;
    bool ok = std::isfinite(v) && (r.loOpen ? v > r.lo : v >= r.lo) &&
              v <= r.hi;
    if (!ok) {
      char text[64];
      std::snprintf(text, sizeof(text), "%g", v);
      return "--" + r.opt.ArgStr.str() + " must be " + r.what + ", not " +
             text;
    }
  }
  for (double b : {beta1, beta2})
    if (!std::isfinite(b) || b < 0 || b >= 1)
      return "--betas must be two numbers in [0, 1), got '" + betas + "'";
  if (warmupSteps < 0 || totalSteps < 0)
    return "--warmup-steps and --total-steps must be >= 0";
  if (lossScaleGrowthInterval < 1)
    return "--loss-scale-growth-interval must be at least 1";
  // Without --plan-stages and --mesh, auto may compare pipelines (several
  // nodes; planStagesIfAsked decides).
  bool pipelineSearch =
      strategy == "auto" &&
      (planStages != 1 || pipelineRanks() > 1 ||
       (!planStages.getNumOccurrences() && meshSpec.empty()));
  if (microBatches < 1 && !pipelineSearch)
    return "--micro-batches must be at least 1 (0, the planner's choice, "
           "needs --strategy auto with pipeline stages: --plan-stages, a "
           "pp mesh axis, or a cluster of several nodes)";
  if (gradAccumulation < 1)
    return "--grad-accumulation must be at least 1";
  if (microBatches != 1 && gradAccumulation > 1)
    return "--micro-batches and --grad-accumulation together are not "
           "supported yet: split the batch (--micro-batches) or accumulate "
           "data entries (--grad-accumulation)";
  if (planReport.getNumOccurrences() && !planReport.empty() &&
      planReport != "text" && planReport != "json")
    return "--plan-report takes text or json, not '" + planReport + "'";
  return "";
}

std::string checkFlags(double &beta1, double &beta2) {
  if (!train)
    return "only --train is implemented: say --train";
  if (init != "onnx" && init != "seeded")
    return "--init must be onnx or seeded, not '" + init + "'";
  auto [b1, b2] = StringRef(betas).split(',');
  if (b1.trim().getAsDouble(beta1) || b2.trim().getAsDouble(beta2))
    return "--betas must be two numbers B1,B2, got '" + betas + "'";
  if (std::string err = checkNumbers(beta1, beta2); !err.empty())
    return err;
  if (virtualStages < 1)
    return "--virtual-stages must be at least 1";
  bool pipelinePlanned =
      strategy == "auto" && (pipelineRanks() > 1 || planStages != 1);
  if (pipelinePlanned &&
      (virtualStages > 1 ||
       (scheduleName.getNumOccurrences() && scheduleName == "interleaved")))
    return "--strategy auto prices the gpipe, 1f1b and zb-h1 schedules with "
           "one stage per pp rank; the interleaved schedule needs a preset "
           "strategy (dp, tp, ...) with --mesh pp=P,...";
  if (pipelinePlanned && (remat == "layers" || remat == "full"))
    return "--remat=" + remat + " with pipeline stages under --strategy auto "
           "is not supported yet: the planner prices and emits pipelines "
           "without rematerialization";
  if (planStages != 1) {
    if (planStages < 0)
      return "--plan-stages must be 0 (search) or a stage count";
    if (strategy != "auto" || !meshSpec.empty())
      return "--plan-stages is a search of the planner that chooses the "
             "mesh: give --strategy auto and no --mesh (or --mesh pp=P,... "
             "--strategy auto to plan the stages of that mesh)";
  }
  if ((virtualStages > 1 || !stageBoundaries.empty() ||
       (scheduleName.getNumOccurrences() && planStages == 1)) &&
      pipelineRanks() <= 1)
    return "--schedule, --virtual-stages and --stage-boundaries need "
           "pipeline stages: give a pp mesh axis, e.g. --mesh pp=2,dp=2";
  if ((planMeshAxes.getNumOccurrences() || planMeshAxes != 0) &&
      planMeshAxes != 2 && planMeshAxes != 3)
    return "--plan-mesh-axes must be 2 or 3, not " +
           std::to_string(planMeshAxes);
  if (remat != "auto" && remat != "none" && remat != "layers" &&
      remat != "full")
    return "--remat takes auto, none, layers or full, not '" + remat + "'";
  if (precision.getNumOccurrences() && precision != "bf16" &&
      precision != "fp16" && precision != "fp32")
    return "--precision takes bf16, fp16 or fp32, not '" + precision + "'";
  if (emit != "mlir" && emit != "executable")
    return "unknown --emit '" + emit + "' (expected mlir or executable)";
  return "";
}

/// A flag given as `--name=` with nothing after the `=` (an unset shell
/// variable, usually): the empty value would parse as 0 or "" and mean
/// the default or nonsense, silently. Returns the message naming it, or "".
std::string emptyValuedFlag(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    StringRef arg(argv[i]);
    if (arg == "--")
      break;
    if (arg.starts_with("-") && arg.ends_with("=") && arg.count('=') == 1)
      return arg.str() + " has an empty value (an unset shell variable?): "
                         "give a value or leave the flag out";
  }
  return "";
}

void fillTrainingOptions(TrainingPipelineOptions &o, double beta1,
                         double beta2) {
  o.loss = loss;
  o.classAxis = classAxis;
  o.frozen = frozen;
  o.inferBuffers = !noInferBuffers;
  o.optimizer = optimizer;
  o.lr = lr;
  o.weightDecay = weightDecay;
  o.momentum = momentum;
  o.dampening = dampening;
  o.nesterov = nesterov;
  o.beta1 = beta1;
  o.beta2 = beta2;
  o.eps = eps;
  o.gradClip = gradClip;
  // The loss function becomes one of --micro-batches that split the
  // batch; a pipeline search plans that one micro-batch's step.
  o.splitMicroBatches = microBatches;
  o.microBatches = planStages != 1 || stagesByPlanner
                       ? 1
                       : std::max(microBatches, gradAccumulation);
  o.lrSchedule = lrSchedule;
  o.warmupSteps = warmupSteps;
  o.totalSteps = totalSteps;
  // The planner splits a step without stages (loom-auto-shard).
  o.stages = stagesByPlanner
                 ? 1
                 : static_cast<unsigned>(pipelineRanks()) * virtualStages;
  o.stageBoundaries = stageBoundaries;
  o.precision = precision;
  o.lossScale = lossScale;
  o.lossScaleInit = lossScaleInit;
  o.gradCompression = gradCompression;
  o.lossScaleGrowthInterval = lossScaleGrowthInterval;
}

/// The strategy the flags ask for, with loomc's defaults: a shard file's,
/// the model's own shardings when it declares a mesh, dp for --mesh alone,
/// none without a mesh. Returns "" and sets `error` when they conflict.
std::string resolveStrategy(ModuleOp module, std::string &error) {
  size_t declared = llvm::range_size(module.getOps<MeshOp>());
  if (declared > 1) {
    error = "the model declares several meshes; loomc needs one";
    return "";
  }
  bool hasMesh = declared == 1 || !meshSpec.empty();
  std::string chosen = strategy;
  if (chosen.empty())
    chosen = !shardFile.empty()                ? "file"
             : declared == 1 && meshSpec.empty() ? "annotated"
             : hasMesh && !meshSpec.empty() && !meshBesidesPipeline()
                 ? "replicated"
             : hasMesh ? "dp"
                       : "none";
  if (!shardFile.empty() && chosen != "file") {
    error = chosen == "auto"
                ? "--shard and --strategy auto do not go together (put the "
                  "shardings you need in the model; the planner keeps them)"
                : "--shard and --strategy " + chosen + " do not go together";
    return "";
  }
  if (chosen != "none" && chosen != "auto" && !hasMesh) {
    error = "--strategy " + chosen +
            " needs a mesh: give --mesh, e.g. --mesh dp=4";
    return "";
  }
  return chosen;
}

void fillShardingOptions(ShardingPipelineOptions &o, ModuleOp module,
                         StringRef chosen, StringRef reportFile) {
  o.mesh = meshSpec;
  o.strategy = chosen.str();
  o.shardFile = shardFile;
  o.dpAxis = dpAxis;
  o.tpAxis = tpAxis;
  o.cluster = clusterSpec;
  o.fixedMesh = !meshSpec.empty() || !module.getOps<MeshOp>().empty();
  o.memoryLimitGiB = memoryLimitGiB;
  o.planTimeLimit = planTimeLimit;
  o.compareMegatron = compareMegatron;
  o.planMeshAxes = planMeshAxes;
  o.remat = remat;
  o.planReport = planReport == "json" ? "json" : "text";
  o.planReportFile = reportFile.str();
  o.partition = !planOnly;
  o.bucketMb = bucketMb;
  o.overlap = overlapCollectives;
  o.pipeline = pipelineRanks() > 1;
  o.virtualStages = virtualStages;
  // Without --schedule, loom-schedule-pipeline runs the planner's choice
  // (loom.pipeline_plan) or 1F1B.
  if (scheduleName.getNumOccurrences())
    o.schedule = scheduleName;
  o.scheduleReport = o.pipeline && planReport != "json";
  o.planStages = planStages;
  o.planMicroBatches =
      microBatches == 0 ? 0 : std::max(microBatches, gradAccumulation);
  // A pp mesh is priced with the schedule it runs: --schedule, the
  // planner's choice (loom.pipeline_plan) or 1F1B.
  if (scheduleName.getNumOccurrences() ||
      (pipelineRanks() > 1 && plannedMesh.empty() &&
       !module->hasAttr(LoomDialect::kPipelinePlanAttrName)))
    o.planSchedule = scheduleName;
  if (o.pipeline) {
    llvm::sys::fs::create_directories(outDir, /*IgnoreExisting=*/true,
                                      llvm::sys::fs::all_all);
    SmallString<256> svg(outDir);
    llvm::sys::path::append(svg, "schedule.svg");
    o.scheduleSvg = std::string(svg);
  }
}

bool writeText(StringRef dir, StringRef name, StringRef text,
               std::string &error) {
  SmallString<256> path(dir);
  llvm::sys::path::append(path, name);
  return ::loom::program::writeFileAtomically(path.str().str(), text.data(),
                                            text.size(), error);
}

/// --plan-only: the plan as annotated IR (global shapes, loom.sharding
/// everywhere) and as a report, for inspection.
int writePlanOnly(ModuleOp module, StringRef report) {
  std::string error;
  if (!writeModule(module, outDir, "planned.mlir", error) ||
      !writeText(outDir, planReport == "json" ? "plan.json" : "plan.txt",
                 report, error))
    return fail(error);
  if (planReport != "json")
    llvm::outs() << "loomc: wrote " << outDir << "/planned.mlir and the "
                 << "plan report (--plan-only: no training artifact)\n";
  return 0;
}

/// plan.txt of a partitioned step: the strategy, the planner's report and
/// what every device holds and sends; also printed.
/// Mesh axes (of more than one device, but `pp`) over which the partitioned
/// `step` splits nothing: every device along one computes the same step.
/// Not an error (a plan may find splitting not worth it), but never silent:
/// `--mesh tp=7` on a model with no dimension divisible by 7 planned
/// everything replicated without a word.
void warnUnusedAxes(ModuleOp module, func::FuncOp step) {
  auto meshRef =
      step->getAttrOfType<FlatSymbolRefAttr>(LoomDialect::kPartitionedAttrName);
  auto mesh = meshRef ? module.lookupSymbol<MeshOp>(meshRef) : MeshOp();
  if (!mesh)
    return;
  llvm::StringSet<> used;
  step->walk([&](Operation *op) {
    for (NamedAttribute a : op->getAttrs())
      a.getValue().walk([&](ShardingAttr s) {
        for (int64_t d = 0; d < s.getRank(); ++d)
          for (StringRef axis : s.getDimAxes(d))
            used.insert(axis);
        for (StringRef axis : s.getPartialAxisNames())
          used.insert(axis);
      });
  });
  for (Attribute a : mesh.getAxes()) {
    auto axis = cast<MeshAxisAttr>(a);
    StringRef name = axis.getName().getValue();
    if (axis.getSize() > 1 && name != "pp" && !used.contains(name))
      llvm::errs() << llvm::formatv(
          "loomc: warning: the plan splits nothing over mesh axis '{0}' "
          "(size {1}): its {1} devices all compute the same step (no "
          "dimension of the model divides by {1}, or splitting did not pay); "
          "choose a size that divides the model's dimensions, or drop the "
          "axis\n",
          name, axis.getSize());
  }
}

int writePlan(func::FuncOp step, StringRef chosen, StringRef report) {
  std::string plan;
  llvm::raw_string_ostream os(plan);
  os << "strategy: " << chosen << "\n";
  if (!report.empty() && planReport != "json")
    os << report << "\n";
  // A pipelined step is per-stage programs (the schedule report above).
  if (step)
    printPartitionReport(step, os);
  std::string error;
  if (!writeText(outDir, "plan.txt", plan, error))
    return fail(error);
  messages() << plan << "\n";
  return 0;
}

/// Runs `build`'s passes on `module`.
LogicalResult runPipeline(MLIRContext &ctx, ModuleOp module,
                          function_ref<void(OpPassManager &)> build) {
  PassManager pm(&ctx);
  build(pm);
  return pm.run(module);
}

/// The GPU architecture of --target=cuda[:sm_XX], or "" (with `error` set
/// when the flag is malformed) for the CPU.
std::string cudaChip(std::string &error) {
  StringRef t = target;
  if (t == "cpu")
    return "";
  if (!t.consume_front("cuda")) {
    error = "unknown --target '" + target + "' (expected cpu or cuda[:sm_XX])";
    return "";
  }
  std::string toolkit = useCudaToolkit();
  SmallString<256> libdevice(toolkit);
  llvm::sys::path::append(libdevice, "nvvm", "libdevice", "libdevice.10.bc");
  if (!llvm::sys::fs::exists(libdevice)) {
    error = "--target=" + target + ": no CUDA toolkit at " + toolkit + " (" +
            libdevice.str().str() +
            " is missing); set CUDA_ROOT to the toolkit's directory";
    return "";
  }
  if (t.empty())
    return "sm_90";
  unsigned sm = 0;
  if (!t.consume_front(":sm_") || t.getAsInteger(10, sm) || sm < 75) {
    error = "--target=" + target +
            ": expected cuda:sm_XX with XX >= 75 (what CUDA 13 supports), "
            "e.g. cuda:sm_90";
    return "";
  }
  return "sm_" + t.str();
}

/// --target=cuda: the step lowered by the CUDA pipeline into
/// out/train.cuda.mlir, with what it became; with `executable`, also the
/// GPU program out/train (`required`: failing to build it is an error).
int writeCuda(MLIRContext &ctx, ModuleOp module, StringRef chip,
              bool executable, bool required) {
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  ctx.appendDialectRegistry(registry);
  OwningOpRef<ModuleOp> cuda = module.clone();
  CudaPipelineOptions options;
  options.chip = chip.str();
  options.format = "bin";
  if (failed(runPipeline(ctx, *cuda, [&](OpPassManager &pm) {
        buildLoomCudaPipeline(pm, options);
      })))
    return 2;
  std::string error;
  if (!writeModule(*cuda, outDir, "train.cuda.mlir", error))
    return fail(error);
  int64_t kernels = 0, cublas = 0, collectives = 0;
  cuda->walk([&](Operation *op) {
    if (op->getName().getStringRef() == "gpu.binary")
      ++kernels;
    if (auto call = dyn_cast<LLVM::CallOp>(op); call && call.getCallee()) {
      StringRef callee = *call.getCallee();
      cublas += callee.starts_with("loom_rt_cublas_");
      collectives += callee.starts_with("loom_rt_all_") ||
                     callee.starts_with("loom_rt_reduce_scatter") ||
                     callee.starts_with("loom_rt_send_recv");
    }
  });
  messages() << llvm::formatv(
      "loomc: CUDA {0}: {1} kernels compiled to cubin (ptxas), {2} cuBLAS "
      "calls, {3} collectives; wrote {4}/train.cuda.mlir\n",
      chip, kernels, cublas, collectives, outDir);
  if (!executable)
    return 0;
  double seconds = 0;
  if (writeCudaExecutable(module, *cuda, outDir, defaultExecutableOptions(),
                          error, &seconds)) {
    messages() << llvm::formatv(
        "loomc: compiled the GPU program in {0:f2} s; wrote {1}/train (runs "
        "the step on the rank's GPU: mpirun -np N, srun or torchrun-style "
        "launches) and {1}/train.manifest\n",
        seconds, outDir);
    return 0;
  }
  if (required)
    return fail("--emit=executable: " + error);
  messages() << "loomc: note: no GPU program: " << error
             << "; loom-run runs train.mlir on the CPU\n";
  return 0;
}

/// The planner's pipeline (loom-plan-pipeline: one micro-batch's step
/// without stages planned on a copy of the model) written into the model:
/// the mesh, the stages (loom.stage) and loom.pipeline_plan. loomc then
/// compiles the model as it compiles a user's stages; the planner prices
/// that program again, stage by stage, as the program has them.
LogicalResult planStagesFirst(MLIRContext &ctx, ModuleOp module,
                              StringRef chosen, double beta1, double beta2) {
  TrainingPipelineOptions training;
  fillTrainingOptions(training, beta1, beta2);
  ShardingPipelineOptions sharding;
  fillShardingOptions(sharding, module, chosen, "-");
  if (failed(runPipeline(ctx, module, [&](OpPassManager &pm) {
        pm.addPass(createLoomPlanPipeline(training, sharding));
      })))
    return failure();
  auto plan =
      module->getAttrOfType<DictionaryAttr>(LoomDialect::kPipelinePlanAttrName);
  bool staged = plan.getAs<IntegerAttr>("stages").getInt() > 1;
  if (meshSpec.empty() && staged)
    plannedMesh = plan.getAs<StringAttr>("mesh").str();
  planStages = 1;
  // --micro-batches=0 or a comparison: the count the planner chose.
  microBatches =
      static_cast<unsigned>(plan.getAs<IntegerAttr>("micro_batches").getInt());
  loomc::printPipelinePlan(
      plan, meshSpec.empty() ? StringRef(plannedMesh) : StringRef(meshSpec),
      messages());
  return success();
}

/// --strategy auto on a model without stages of the user's, with a pp
/// axis or --plan-stages: the planner's stages first (planStagesFirst;
/// with --plan-only the report prices them instead). Returns 0, or the
/// exit status after an error.
int planStagesIfAsked(MLIRContext &ctx, ModuleOp module, StringRef chosen,
                      double beta1, double beta2) {
  bool annotated = false;
  module->walk([&](Operation *op) {
    annotated |= op->hasAttr(LoomDialect::kStageAttrName);
  });
  if (annotated && planStages != 1)
    return fail("--plan-stages searches the stages, but the model's "
                "loom.stage annotations fix them: give --mesh pp=P,... "
                "instead");
  // Not asked either way, on several nodes: the planner compares
  // pipelines with the best plan without one (loom-plan-pipeline
  // plan-stages=-1), micro-batches searched unless given.
  bool compare = chosen == "auto" && !planStages.getNumOccurrences() &&
                 meshSpec.empty() && module.getOps<MeshOp>().empty() &&
                 stageBoundaries.empty() && !annotated &&
                 virtualStages == 1 && remat != "layers" && remat != "full" &&
                 gradAccumulation == 1 &&
                 loomc::clusterHasSeveralNodes(clusterSpec);
  if (compare) {
    planStages = -1;
    if (!microBatches.getNumOccurrences())
      microBatches = 0;
  }
  stagesByPlanner = chosen == "auto" &&
                    (pipelineRanks() > 1 || planStages != 1) &&
                    stageBoundaries.empty() && !annotated;
  if (microBatches == 0 && !stagesByPlanner)
    return fail(annotated || !stageBoundaries.empty()
                    ? "--micro-batches=0 lets the planner choose the count "
                      "with the stages it chooses; the stages are given "
                      "(loom.stage or --stage-boundaries): give a count"
                    : "--micro-batches=0 lets the planner choose the count "
                      "with pipeline stages it chooses: give --plan-stages, "
                      "a pp mesh axis, or a cluster of several nodes "
                      "(--cluster), or a count");
  // With --plan-only and a stage count asked, the report prices the
  // stages the search chose; comparing, or choosing the micro-batches,
  // takes the planner's pass first.
  if (stagesByPlanner && (!planOnly || compare || microBatches == 0)) {
    if (failed(planStagesFirst(ctx, module, chosen, beta1, beta2)))
      return 2;
    stagesByPlanner = false;
  }
  return 0;
}

/// One loomc writes into an -o at a time (two left a train that did not
/// match train.mlir); the lock goes with the process.
std::string lockOutput() {
  std::string error;
  if (::loom::program::lockOutputDir(outDir, "loomc", error) < 0)
    return "-o " + outDir + ": " + error;
  return "";
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  registerDebugOptions();
  cl::HideUnrelatedOptions(category);
  if (std::string flag = emptyValuedFlag(argc, argv); !flag.empty())
    return fail(flag);
  cl::ParseCommandLineOptions(argc, argv,
                              "Loom compiler: build a training artifact\n");
  double beta1 = 0.9, beta2 = 0.999;
  std::string err = checkFlags(beta1, beta2);
  if (!err.empty() || !(err = lockOutput()).empty())
    return fail(err);
  std::string targetError;
  std::string chip = cudaChip(targetError);
  if (!targetError.empty())
    return fail(targetError);

  MLIRContext ctx;
  ctx.loadDialect<LoomDialect, func::FuncDialect>();
  // Remarks (inferred buffers) and errors name ops already; no IR dumps.
  ctx.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &ctx);
  std::string error;
  OwningOpRef<ModuleOp> module = loadModel(ctx, sourceMgr, error);
  if (!module)
    return error.empty() ? 2 : fail(error);

  std::string chosen = resolveStrategy(*module, error);
  if (chosen.empty())
    return fail(error);
  if (int status = planStagesIfAsked(ctx, *module, chosen, beta1, beta2))
    return status;
  // The planner plans (auto) or prices a preset (isPlannedPreset); either
  // is written as a plan, whose gradient rules run on their forward ops'
  // shardings.
  bool planned = chosen == "auto" || isPlannedPreset(chosen);
  TrainingPipelineOptions training;
  fillTrainingOptions(training, beta1, beta2);
  training.numberGradientRules = planned;
  if (failed(runPipeline(ctx, *module, [&](OpPassManager &pm) {
        buildLoomTrainingPipeline(pm, training);
      })))
    return 2;

  // The planner writes its report to a file that loomc prints and keeps.
  SmallString<128> reportPath;
  if (planned &&
      llvm::sys::fs::createTemporaryFile("loomc-plan", "txt", reportPath))
    return fail("cannot create a temporary file for the plan report");
  llvm::scope_exit removeReport([&] {
    if (!reportPath.empty())
      llvm::sys::fs::remove(reportPath);
  });
  ShardingPipelineOptions sharding;
  fillShardingOptions(sharding, *module, chosen, reportPath);
  if (failed(runPipeline(ctx, *module, [&](OpPassManager &pm) {
        buildLoomShardingPipeline(pm, sharding);
      })))
    return 2;
  std::string report;
  if (!reportPath.empty())
    if (auto buffer = llvm::MemoryBuffer::getFile(reportPath))
      report = (*buffer)->getBuffer().str();
  if (!report.empty() && (planReport.getNumOccurrences() || planOnly))
    llvm::outs() << report << "\n";
  if (planOnly)
    return writePlanOnly(*module, report);

  LoomExportParametersOptions exportOptions;
  exportOptions.dir = outDir;
  exportOptions.init = init == "onnx" ? "model" : "seeded";
  exportOptions.seed = seed;
  // External values of an IR input are relative to its file, as ONNX
  // external data are to the model's.
  exportOptions.sourceDir = llvm::sys::path::parent_path(input).str();
  // The artifact is rewritten file by file, each whole (a temporary name
  // renamed into place). An earlier artifact's train.mlir and plan go
  // first: a kill in between leaves params.bin without a train.mlir (an
  // error naming the artifact), never a train.mlir whose offsets point into
  // another params.bin, nor the plan of another compile.
  for (StringRef stale : {"train.mlir", "plan.txt", "plan.json"}) {
    SmallString<256> path(outDir);
    llvm::sys::path::append(path, stale);
    llvm::sys::fs::remove(path);
  }
  if (failed(runPipeline(ctx, *module, [&](OpPassManager &pm) {
        pm.addPass(createLoomExportParameters(exportOptions));
      })))
    return 2;
  if (!writeModule(*module, outDir, "train.mlir", error))
    return fail(error);

  auto step = module->lookupSymbol<func::FuncOp>("train_step");
  bool partitioned = step && step->hasAttr(LoomDialect::kPartitionedAttrName);
  if (partitioned || (!report.empty() && pipelineRanks() > 1))
    if (int status = writePlan(partitioned ? step : nullptr, chosen, report))
      return status;
  if (partitioned)
    warnUnusedAxes(*module, step);
  int64_t numParams = 0, numElements = 0;
  for (ParameterOp p : module->getOps<ParameterOp>())
    if (p.getTrainable()) {
      ++numParams;
      numElements += p.getType().getNumElements();
    }
  messages() << llvm::formatv(
      "loomc: {0} trainable parameters ({1} values), loss {2}, optimizer {3}; "
      "wrote {4}/train.mlir and {4}/params.bin\n",
      numParams, numElements, loss, optimizer, outDir);
  // Asked for, a program that cannot be built (a pipelined step, ...) is
  // an error; by default, a note (loom-run still runs the artifact).
  bool asked = emit.getNumOccurrences() > 0;
  bool trains = step || (*module)->hasAttr(LoomDialect::kPipelineAttrName);
  // A GPU target's program is the GPU one (writeCuda): out/train runs the
  // step on the rank's GPU.
  if (emit == "executable" && (trains || asked) && chip.empty()) {
    double seconds = 0;
    if (writeExecutable(*module, outDir, defaultExecutableOptions(), error,
                        &seconds))
      messages() << llvm::formatv("loomc: compiled the step ahead of time in "
                                  "{0:f2} s; wrote {1}/train and "
                                  "{1}/train.manifest\n",
                                  seconds, outDir);
    else if (asked)
      return fail("--emit=executable: " + error);
    else
      messages() << "loomc: note: no rank program: " << error
                 << "; loom-run runs the artifact\n";
  }
  if (!chip.empty())
    return writeCuda(ctx, *module, chip, emit == "executable" && (trains || asked),
                     asked);
  return 0;
}
