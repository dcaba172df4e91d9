//===- Calibrate.cpp - loom-run --calibrate -------------------------------===//
//
// The planner's cpu-local cluster prices what this machine was measured to
// do: one core (SGEMM, memory bandwidth; lib/Planner/Cluster.cpp) and, per
// rank count, what a collective adds to a step and the share of a core each
// rank gets (runtime/src/calibrate, run here under mpirun).
//
//===----------------------------------------------------------------------===//

#include "Calibrate.h"

#include "loom/Planner/Cluster.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdlib>
#include <optional>

using namespace mlir::loom;

namespace {

/// `name`, beside loom-run.
std::string sibling(llvm::StringRef name) {
  llvm::SmallString<256> path(llvm::sys::path::parent_path(
      llvm::sys::fs::getMainExecutable("loom-run", (void *)&sibling)));
  llvm::sys::path::append(path, name);
  return std::string(path);
}

/// Runs `program` with `args` (args[0] its name) and returns its exit
/// status (-1 when it could not run, `why` says so); its standard output,
/// and with `withErrors` its standard error, are read into `out`.
int capture(llvm::StringRef program, const std::vector<std::string> &args,
            bool withErrors, std::string &out, std::string &why) {
  llvm::SmallString<128> file;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("loom-calibrate", "txt", file)) {
    why = "cannot make a temporary file: " + ec.message();
    return -1;
  }
  llvm::FileRemover remove(file);
  std::optional<llvm::StringRef> redirects[] = {
      std::nullopt, llvm::StringRef(file),
      withErrors ? std::optional<llvm::StringRef>(file) : std::nullopt};
  std::vector<llvm::StringRef> refs(args.begin(), args.end());
  int rc = llvm::sys::ExecuteAndWait(program, refs, std::nullopt, redirects,
                                     0, 0, &why);
  auto text = llvm::MemoryBuffer::getFile(file);
  out = text ? (*text)->getBuffer().str() : "";
  return rc;
}

/// loom-calibrate's JSON line, run on `ranks` ranks.
bool measureLink(std::vector<std::string> command, int ranks, bool quick,
                 planner::LinkCalibration &link, std::string &error) {
  std::string tool = sibling("loom-calibrate");
  command.push_back(tool);
  if (quick)
    command.push_back("--quick");
  std::string where = "--calibrate -np " + std::to_string(ranks) + ": ";
  auto mpirun = llvm::sys::findProgramByName(command[0]);
  if (!mpirun) {
    error = where + "cannot find " + command[0] + " (install OpenMPI)";
    return false;
  }
  std::string printed, why;
  int rc = capture(*mpirun, command, /*withErrors=*/false, printed, why);
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(printed);
  const llvm::json::Object *o = v ? v->getAsObject() : nullptr;
  if (!v)
    llvm::consumeError(v.takeError());
  if (rc != 0 || !o) {
    error = where + tool + " failed" + (why.empty() ? "" : ": " + why) +
            (rc > 0 ? " (exit status " + std::to_string(rc) + ")" : "");
    return false;
  }
  link = planner::linkCalibrationFrom(*o, ranks);
  if (link.cores < 1 || link.overhead < 0 || link.bandwidth <= 0) {
    error = where + "loom-calibrate printed no usable numbers: " + printed;
    return false;
  }
  llvm::outs() << llvm::formatv(
      "loom-run: {0} ranks on {1} cores: a collective adds {2:f1} us per "
      "call + bytes sent at {3:f2} GB/s (all-reduce between 0.5 ms "
      "stretches of compute); each rank gets {4:f2} of a core's compute "
      "and {5:f2} of its memory bandwidth; a started all-reduce delays "
      "the compute it overlaps by {6:f2} of its time\n",
      ranks, link.cores, link.overhead * 1e6, link.bandwidth / 1e9,
      link.computeShare, link.streamShare, link.overlapSlowdown);
  llvm::outs() << "loom-calibrate: " << printed;
  return true;
}

/// A chain of `layers` small layers (layer norm, product, GELU, softmax,
/// product, residual add: a transformer's op kinds) ending in a
/// cross-entropy, on 8 x 16 values: a step whose FLOPs and bytes are
/// negligible, so that its time is the executor's fixed costs.
std::string calibrationModel(int layers) {
  std::string params, args, body;
  const char *row = "tensor<8x16xf32>";
  auto param = [&](const std::string &name, const char *type) {
    int k = std::count(args.begin(), args.end(), '%') - 2;
    params += "loom.parameter @\"" + name + "\" : " + type + " trainable\n";
    args += llvm::formatv(",\n    %p{0}: {1} {{loom.param = @\"{2}\"}", k,
                          type, name)
                .str();
    return "%p" + std::to_string(k);
  };
  args = "%x0: tensor<8x16xf32> {loom.name = \"x\"},\n    %labels: "
         "tensor<8xi64> {loom.name = \"labels\", loom.index_bound = 16}";
  for (int l = 0; l < layers; ++l) {
    std::string p = "l" + std::to_string(l) + ".";
    std::string g = param(p + "g", "tensor<16xf32>"),
                b = param(p + "b", "tensor<16xf32>"),
                w1 = param(p + "w1", "tensor<16x16xf32>"),
                w2 = param(p + "w2", "tensor<16x16xf32>");
    body += llvm::formatv(
        "  %n{0} = loom.layer_norm %x{0}, {1}, {2} axis = 1 epsilon = 1.0e-5 "
        ": ({5}, tensor<16xf32>, tensor<16xf32>) -> {5}\n"
        "  %h{0} = loom.dot_general %n{0}, {3} contracting_dims = [1] x [0] : "
        "({5}, tensor<16x16xf32>) -> {5}\n"
        "  %a{0} = loom.gelu %h{0} : {5}\n"
        "  %s{0} = loom.softmax %a{0} axis = 1 : {5}\n"
        "  %o{0} = loom.dot_general %s{0}, {4} contracting_dims = [1] x [0] : "
        "({5}, tensor<16x16xf32>) -> {5}\n"
        "  %x{6} = loom.add %x{0}, %o{0} : {5}\n",
        l, g, b, w1, w2, row, l + 1);
  }
  return params + "func.func @forward(" + args + ") -> tensor<f32> {\n" +
         body +
         llvm::formatv("  %loss = loom.cross_entropy %x{0}, %labels reduction "
                       "= mean : ({1}, tensor<8xi64>) -> tensor<f32>\n"
                       "  return %loss : tensor<f32>\n}\n",
                       layers, row)
             .str();
}

/// Runs `tool` (beside loom-run) with `args`; its output (standard output
/// and error) into `out`.
bool runTool(llvm::StringRef tool, std::vector<std::string> args,
             std::string &out, std::string &error) {
  std::string path = sibling(tool), why;
  args.insert(args.begin(), path);
  if (capture(path, args, /*withErrors=*/true, out, why) != 0) {
    error = path + " failed" + (why.empty() ? "" : ": " + why) + ":\n" + out;
    return false;
  }
  return true;
}

/// The executor's cost per op and per step on one core: the calibration
/// model of 2 and of 12 layers compiled (loomc) and trained (loom-run, one
/// rank, one BLAS thread); each step's median time less the roofline
/// compute the planner prices for it, against the number of op executions
/// the planner prices (the difference of its prices at 1 ms and 0 per op).
bool measureOps(const planner::DeviceSpec &core, bool quick, double &perOp,
                double &perStep, std::string &error) {
  llvm::SmallString<128> dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("loom-calibrate", dir)) {
    error = "cannot make a temporary directory: " + ec.message();
    return false;
  }
  struct Cleanup {
    std::string dir;
    ~Cleanup() { llvm::sys::fs::remove_directories(dir); }
  } cleanup{std::string(dir)};
  auto file = [&](llvm::StringRef name) { return (dir + "/" + name).str(); };
  ::setenv("OPENBLAS_NUM_THREADS", "1", 1);
  double residual[2], count[2];
  int layers[2] = {2, 12};
  for (int i = 0; i < 2; ++i) {
    std::string model = file("model" + std::to_string(i) + ".mlir");
    double compute[2];
    for (int priced = 0; priced < 2; ++priced) {
      std::string cluster = file("cluster.json");
      std::error_code ec;
      llvm::raw_fd_ostream(model, ec) << calibrationModel(layers[i]);
      llvm::raw_fd_ostream(cluster, ec) << llvm::formatv(
          "{{\"name\": \"calibration\", \"device\": {{\"name\": \"core\", "
          "\"flops_f32\": {0:e}, \"memory_bandwidth\": {1:e}, \"memory\": "
          "4e9, \"efficiency\": 1.0, \"op_overhead\": {2}}, \"levels\": "
          "[{{\"name\": \"none\", \"size\": 1, \"bandwidth\": 1e9, "
          "\"latency\": 1e-6}]}\n",
          core.flopsF32, core.memoryBandwidth, priced ? "1e-3" : "0");
      std::string out;
      std::vector<std::string> args = {model, "--train", "--loss=none",
                                       "--optimizer=adamw", "--strategy",
                                       "auto", "--cluster", cluster,
                                       "-o", file("step")};
      // The step compiled once; both prices from the plan alone.
      if (!priced && !runTool("loomc", args, out, error))
        return false;
      args.back() = file("plan");
      args.push_back("--plan-report=json");
      args.push_back("--plan-only");
      if (!runTool("loomc", args, out, error))
        return false;
      llvm::Expected<llvm::json::Value> v = llvm::json::parse(out);
      std::optional<double> c;
      if (v && v->getAsObject())
        c = v->getAsObject()->getNumber("compute_s");
      if (!v)
        llvm::consumeError(v.takeError());
      if (!c) {
        error = "loomc printed no plan for the calibration step:\n" + out;
        return false;
      }
      compute[priced] = *c;
    }
    count[i] = (compute[1] - compute[0]) / 1e-3;
    std::string out;
    if (!runTool("loom-run", {file("step"), "--steps", quick ? "20" : "80",
                              "--profile"},
                 out, error))
      return false;
    std::vector<double> steps;
    llvm::SmallVector<llvm::StringRef> lines;
    llvm::StringRef(out).split(lines, '\n');
    for (llvm::StringRef line : lines) {
      double ms = 0;
      if (line.consume_front("  step ") &&
          line.split(": ").second.split(" ms").first.getAsDouble(ms) == false)
        steps.push_back(ms * 1e-3);
    }
    if (steps.size() < 10) {
      error = "loom-run printed no step times for the calibration step:\n" +
              out;
      return false;
    }
    steps.erase(steps.begin(), steps.begin() + 5);
    std::sort(steps.begin(), steps.end());
    residual[i] = steps[steps.size() / 2] - compute[0];
  }
  perOp = std::max(0.0, (residual[1] - residual[0]) / (count[1] - count[0]));
  perStep = std::max(0.0, residual[0] - count[0] * perOp);
  llvm::outs() << llvm::formatv(
      "loom-run: the executor: {0:f2} us per op ({1:f0} and {2:f0} ops priced "
      "per step; {3:f1} and {4:f1} us beyond their roofline), {5:f1} us per "
      "step\n",
      perOp * 1e6, count[0], count[1], residual[0] * 1e6, residual[1] * 1e6,
      perStep * 1e6);
  return true;
}

} // namespace

bool calibrateMachine(std::vector<std::string> mpirun, int ranks, bool quick,
                      std::string &error) {
  std::optional<planner::LinkCalibration> link;
  if (ranks > 1) {
    link.emplace();
    if (!measureLink(std::move(mpirun), ranks, quick, *link, error))
      return false;
  }
  llvm::Expected<planner::DeviceSpec> core =
      planner::recalibrateCpu(link ? &*link : nullptr);
  if (!core) {
    error = "--calibrate: " + llvm::toString(core.takeError());
    return false;
  }
  double perOp = 0, perStep = 0;
  if (!measureOps(*core, quick, perOp, perStep, error)) {
    error = "--calibrate: " + error;
    return false;
  }
  if (llvm::Error e = planner::setCpuOpOverhead(perOp, perStep)) {
    error = "--calibrate: " + llvm::toString(std::move(e));
    return false;
  }
  llvm::outs() << llvm::formatv(
      "loom-run: calibration kept in {0}: one core {1:f1} GFLOP/s (SGEMM), "
      "{2:f1} GB/s, {3:f2} us per op\n",
      planner::cpuCalibrationPath(), core->flopsF32 / 1e9,
      core->memoryBandwidth / 1e9, perOp * 1e6);
  return true;
}
