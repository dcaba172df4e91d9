//===- main.cpp - A rank program's command line ---------------------------===//
//
// loomc --emit=executable links this with the step's machine code into
// ARTIFACT/train. It reads ARTIFACT/train.manifest and ARTIFACT/params.bin
// and takes loom-run's training flags and data contract:
//
//   mpirun -np 4 out/train --steps 10 --data synthetic
//
// printing `step K loss L` on rank 0 and writing the final parameters to
// ARTIFACT/params-final/<name>.npy (optimizer state: optimizer-final/;
// --params-out and --state-out move them).
//
//===----------------------------------------------------------------------===//

#include "loom/device.h"
#include "loom/program.h"
#include "loom/train.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fstream>
#include <malloc.h>
#include <sstream>
#include <unistd.h>

// An unpipelined step's entry; a pipelined program has per-stage entries
// instead, found by name (the program exports its symbols).
extern "C" __attribute__((weak)) void _mlir__mlir_ciface_train_step(void **);

// Loom's CUDA library, linked into GPU programs only.
__attribute__((weak)) std::unique_ptr<loom::program::Device>
loom_cuda_open_device(const loom::program::DeviceOptions &options,
                      std::string &error);

namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "loom: %s\n", message.c_str());
  loom_keep_rank_error(message.c_str()); // for loom-run -np N (launch.cpp)
  std::fflush(stdout);
  return 1;
}

const char *kUsage =
    "usage: %s [--steps N] [--data DIR|synthetic] [--seed S] [--shuffle]\n"
    "          [--params-out DIR|none] [--state-out DIR|none]\n"
    "          [--timeout SECONDS]\n"
    "          [--checkpoint-dir DIR [--checkpoint-every K]\n"
    "           [--checkpoint-keep K]] [--resume CHECKPOINT]\n"
    "          [--trace FILE.json] [--profile] [--init-random SEED]\n"
    "Trains the step loomc compiled into this program (train.manifest and\n"
    "params.bin beside it); launch one process per device of its mesh\n"
    "(mpirun -np N, srun, torchrun-style RANK/WORLD_SIZE/MASTER_ADDR/\n"
    "MASTER_PORT, or loom-run -np N ARTIFACT). The flags are loom-run's:\n"
    "  --checkpoint-dir    save checkpoints (parameters, optimizer state,\n"
    "                      step, data position; one shard per rank) there,\n"
    "                      every K steps and after the last\n"
    "  --resume            continue from a checkpoint (or the latest\n"
    "                      complete one under a directory); --steps is the\n"
    "                      total to reach. Any mesh's checkpoint loads.\n"
    "  --trace             a Chrome trace of every rank's steps and\n"
    "                      collectives (pipeline actions)\n"
    "  --profile           each step's time, its time in collectives and,\n"
    "                      on a GPU, the time of every kernel and GEMM\n"
    "  --init-random SEED  trainable parameters drawn from N(0, 0.02^2) with\n"
    "                      SEED instead of read from params.bin (benchmarks)\n"
    "GPU programs (loomc --target=cuda) also read LOOM_GPU_SYNC=1 (check for\n"
    "errors after every kernel, naming the one that failed),\n"
    "LOOM_CUBLAS_TF32=1 (f32 GEMMs in TF32), LOOM_CUDA_GRAPHS=0 (every\n"
    "step launched kernel by kernel; by default a single-rank program's\n"
    "steps after the first replay a CUDA graph) and LOOM_CUDA_LIBRARY_PATH\n"
    "(where cuBLAS and NCCL are, when not found).\n";

/// The directory and path of this executable.
bool selfPath(std::string &path, std::string &dir) {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0)
    return false;
  path.assign(buf, static_cast<size_t>(n));
  dir = path.substr(0, path.rfind('/'));
  return true;
}

bool parseNumber(const std::string &flag, const std::string &text,
                 double &out, std::string &error) {
  char *end = nullptr;
  out = std::strtod(text.c_str(), &end);
  if (text.empty() || *end || !std::isfinite(out)) {
    error = flag + " expects a number, got '" + text + "'";
    return false;
  }
  // Counts (--steps, --seed) are whole numbers an int64 holds, with room
  // for steps x micro-batches.
  if (flag != "--timeout" && (out != std::floor(out) || out < 0 || out > 1e15)) {
    error = flag + " expects a whole number from 0 to 1e15, got '" + text + "'";
    return false;
  }
  return true;
}

/// loom-run's training flags this program takes; the others name what to
/// use instead.
bool profile = false;
std::string traceOut;

bool parseFlags(int argc, char **argv, loom::program::TrainOptions &o,
                std::string &paramsOut, std::string &stateOut,
                std::string &error) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    if (arg.rfind("--", 0) != 0 && arg.rfind("-", 0) == 0)
      arg = "-" + arg; // -steps as --steps
    size_t eq = arg.find('=');
    bool inline_ = eq != std::string::npos;
    std::string flag = inline_ ? arg.substr(0, eq) : arg;
    if (flag == "--help" || flag == "-h") {
      std::printf(kUsage, argv[0]);
      std::exit(0);
    }
    if (flag == "--shuffle") {
      o.shuffle = true;
      continue;
    }
    if (flag == "--profile") {
      profile = true;
      continue;
    }
    bool known = flag == "--steps" || flag == "--data" || flag == "--seed" ||
                 flag == "--params-out" || flag == "--state-out" ||
                 flag == "--timeout" ||
                 flag == "--init-random" || flag == "--checkpoint-dir" ||
                 flag == "--checkpoint-every" || flag == "--checkpoint-keep" ||
                 flag == "--resume" || flag == "--trace";
    if (!known) {
      error = "unknown flag '" + arg + "' (--help lists the flags)";
      return false;
    }
    if (inline_)
      value = arg.substr(eq + 1);
    else if (i + 1 < argc)
      value = argv[++i];
    else {
      error = flag + " needs a value";
      return false;
    }
    double number = 0;
    if (flag == "--data")
      o.data = value;
    else if (flag == "--params-out" || flag == "--state-out") {
      // An empty value used to write nothing and exit 0.
      if (value.empty()) {
        error = flag + " needs a directory (or none to write no " +
                (flag == "--params-out" ? "parameters" : "optimizer state") +
                "), not an empty value";
        return false;
      }
      (flag == "--params-out" ? paramsOut : stateOut) = value;
    }
    else if (flag == "--checkpoint-dir")
      o.checkpointDir = value;
    else if (flag == "--resume")
      o.resume = value;
    else if (flag == "--trace")
      traceOut = value;
    else if (!parseNumber(flag, value, number, error))
      return false;
    else if (flag == "--steps")
      o.steps = static_cast<int64_t>(number);
    else if (flag == "--seed")
      o.seed = static_cast<uint64_t>(number);
    else if (flag == "--init-random")
      o.initRandomSeed = static_cast<int64_t>(number);
    else if (flag == "--checkpoint-every")
      o.checkpointEvery = static_cast<int64_t>(number);
    else if (flag == "--checkpoint-keep")
      o.checkpointKeep = static_cast<int64_t>(number);
    else
      o.timeoutSeconds = number;
  }
  if (o.checkpointEvery > 0 && o.checkpointDir.empty()) {
    error = "--checkpoint-every needs --checkpoint-dir";
    return false;
  }
  o.trace = profile || !traceOut.empty();
  if (o.steps < 1) {
    error = "--steps must be at least 1";
    return false;
  }
  if (!std::isfinite(o.timeoutSeconds) || o.timeoutSeconds <= 0) {
    error = "--timeout must be a positive number of seconds";
    return false;
  }
  return true;
}

/// --profile: as loom-run's (every rank's steps and collectives), the
/// steps' times (rank 0, from the batch on the host to the loss on the
/// host) and, on a GPU, the time of every kernel and GEMM.
void printProfile(const loom::program::TrainResult &result,
                  loom::program::Device *device) {
  int ranks = result.ranks;
  std::printf("%s", loom::program::profileText(result.trace, ranks).c_str());
  const std::vector<double> &steps = result.stepSeconds;
  std::vector<double> sorted = steps;
  std::sort(sorted.begin(), sorted.end());
  double median = sorted.empty() ? 0 : sorted[sorted.size() / 2];
  std::printf("profile: %zu steps, median %.3f ms, first (loading kernels) "
              "%.3f ms\n",
              steps.size(), median * 1e3, steps.empty() ? 0 : steps[0] * 1e3);
  if (!device)
    return;
  std::vector<loom::program::DeviceTime> times = device->profile();
  double total = 0;
  for (const auto &t : times)
    total += t.milliseconds;
  std::printf("profile: %s, %zu kernels and GEMMs, %.3f ms of device time in "
              "%s\n",
              device->name().c_str(), times.size(), total,
              steps.size() > 1 ? "the steps after the first (which loads the "
                                 "kernels)"
                               : "the step");
  std::string note = device->stepNote();
  if (!note.empty())
    std::printf("profile: %s\n", note.c_str());
  if (uint64_t peak = device->peakBytes())
    std::printf("profile: device memory peak %llu bytes (%.2f GiB)\n",
                static_cast<unsigned long long>(peak), peak / 1073741824.0);
  std::printf("%10s %8s %6s  %s\n", "ms", "calls", "%", "kernel / GEMM");
  for (const auto &t : times)
    std::printf("%10.3f %8lld %6.2f  %s\n", t.milliseconds,
                static_cast<long long>(t.calls),
                total > 0 ? 100 * t.milliseconds / total : 0.0,
                t.name.c_str());
}

} // namespace

int main(int argc, char **argv) {
  // As loom-run: the step allocates and frees the same large temporaries
  // every call; glibc would unmap them each time and fault them back in.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  loom::program::TrainOptions options;
  std::string self, error;
  if (!selfPath(self, options.dir))
    return fail("cannot find this program's path (/proc/self/exe)");
  std::string paramsFlag, stateFlag;
  if (!parseFlags(argc, argv, options, paramsFlag, stateFlag, error) ||
      !loom::program::resolveOutputs(options, paramsFlag, stateFlag, error))
    return fail(error);
  std::string manifestPath = self + ".manifest";
  std::ifstream in(manifestPath);
  if (!in)
    return fail("cannot read " + manifestPath + " (loomc --emit=executable "
                "writes it beside the program)");
  std::stringstream text;
  text << in.rdbuf();
  loom::program::Manifest manifest;
  if (!loom::program::parseManifest(text.str(), manifest, error))
    return fail(manifestPath + ": " + error);
  if (!manifest.pipelined() && (manifest.function != "train_step" ||
                                !&_mlir__mlir_ciface_train_step))
    return fail(manifestPath + " describes @" + manifest.function +
                ", but this program runs " +
                (&_mlir__mlir_ciface_train_step ? "@train_step"
                                                 : "a pipeline's stages"));
  // A GPU program runs its step on the rank's GPU.
  std::unique_ptr<loom::program::Device> device;
  if (manifest.device == "cuda") {
    if (manifest.pipelined())
      return fail("pipelined GPU programs are not supported yet: compile the "
                  "pipeline for the CPU, or the step without pp");
    if (!&loom_cuda_open_device)
      return fail(manifestPath + " describes a GPU program, but this program "
                  "was not linked with Loom's CUDA library (loomc "
                  "--target=cuda links it)");
    loom::program::DeviceOptions deviceOptions;
    auto flag = [](const char *name) {
      const char *v = std::getenv(name);
      return v && *v && std::string(v) != "0";
    };
    deviceOptions.syncEveryLaunch = flag("LOOM_GPU_SYNC");
    deviceOptions.tf32 = flag("LOOM_CUBLAS_TF32");
    deviceOptions.profile = profile;
    const char *graphs = std::getenv("LOOM_CUDA_GRAPHS");
    deviceOptions.graphs = !graphs || std::string(graphs) != "0";
    device = loom_cuda_open_device(deviceOptions, error);
    if (!device)
      return fail(error);
    options.device = device.get();
  }
  options.onStep = [&](int64_t step, double loss, const std::string &note) {
    std::printf("step %lld loss %.8e%s\n", static_cast<long long>(step), loss,
                note.empty() ? "" : ("  [" + note + "]").c_str());
    std::fflush(stdout);
  };
  bool reported = false;
  options.onError = [&](const std::string &message) {
    fail(message);
    reported = true;
  };
  // Fault injection for the failure tests (docs/distributed.md).
  if (const char *fault = std::getenv("LOOM_FAULT"))
    if (std::string err = loom::program::parseFault(fault, options);
        !err.empty())
      return fail(err);
  options.fingerprintFiles = {
      {"the program (its executable file)", "/proc/self/exe"}};
  loom::program::TrainResult stats;
  bool ok;
  if (manifest.pipelined()) {
    auto lookup = [](const std::string &function) {
      std::string symbol = "_mlir__mlir_ciface_" + function;
      return reinterpret_cast<loom::program::PackedEntry>(
          dlsym(RTLD_DEFAULT, symbol.c_str()));
    };
    ok = loom::program::trainPipeline(manifest, lookup, options, stats,
                                      error);
  } else {
    ok = loom::program::train(manifest, &_mlir__mlir_ciface_train_step,
                              options, stats, error);
  }
  if (!ok)
    return reported ? 1 : fail(error);
  double seconds = stats.trainSeconds;
  if (stats.rank == 0) {
    std::printf("trained %lld steps in %.3f s (%.4f s/step, compiled ahead of "
                "time%s%s); parameters in %s\n",
                static_cast<long long>(options.steps), seconds,
                seconds / double(options.steps), device ? ", on " : "",
                device ? device->name().c_str() : "",
                options.paramsOut.empty() ? "none (--params-out none)"
                                          : options.paramsOut.c_str());
    if (profile)
      printProfile(stats, device.get());
    if (!traceOut.empty()) {
      std::string text = loom::program::chromeTrace(stats.trace);
      if (!loom::program::writeFileAtomically(traceOut, text.data(),
                                              text.size(), error))
        return fail(error);
      std::printf("wrote trace %s\n", traceOut.c_str());
    }
  }
  return 0;
}
