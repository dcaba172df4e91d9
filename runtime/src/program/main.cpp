//===- main.cpp - A rank program's command line ---------------------------===//
//
// loomc --emit=executable links this with the step's machine code into
// ARTIFACT/train. It reads ARTIFACT/train.manifest and ARTIFACT/params.bin
// and takes loom-run's training flags and data contract:
//
//   mpirun -np 4 out/train --steps 10 --data synthetic
//
// printing `step K loss L` on rank 0 and writing the final parameters to
// ARTIFACT/params-final/<name>.npy (optimizer state: optimizer-final/).
//
//===----------------------------------------------------------------------===//

#include "loom/program.h"

#include <cerrno>
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

namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "loom: %s\n", message.c_str());
  std::fflush(stdout);
  return 1;
}

const char *kUsage =
    "usage: %s [--steps N] [--data DIR|synthetic] [--seed S] [--shuffle]\n"
    "          [--params-out DIR] [--timeout SECONDS]\n"
    "Trains the step loomc compiled into this program (train.manifest and\n"
    "params.bin beside it); launch one process per device of its mesh\n"
    "(mpirun -np N, srun, or loom-run -np N ARTIFACT).\n";

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
bool parseFlags(int argc, char **argv, loom::program::TrainOptions &o,
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
    bool known = flag == "--steps" || flag == "--data" || flag == "--seed" ||
                 flag == "--params-out" || flag == "--timeout";
    if (!known) {
      error = "unknown flag '" + arg + "'";
      if (flag.rfind("--checkpoint", 0) == 0 || flag == "--resume" ||
          flag == "--profile" || flag == "--trace")
        error += ": executables do not checkpoint or trace yet; run the "
                 "artifact with loom-run";
      error += " (--help lists the flags)";
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
    else if (flag == "--params-out")
      o.paramsOut = value;
    else if (!parseNumber(flag, value, number, error))
      return false;
    else if (flag == "--steps")
      o.steps = static_cast<int64_t>(number);
    else if (flag == "--seed")
      o.seed = static_cast<uint64_t>(number);
    else
      o.timeoutSeconds = number;
  }
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
  options.paramsOut = options.dir + "/params-final";
  options.stateOut = options.dir + "/optimizer-final";
  if (!parseFlags(argc, argv, options, error))
    return fail(error);
  // Each output directory is cleared of an earlier run's tensors first.
  auto absolute = [](std::string p) {
    char cwd[4096];
    if (!p.empty() && p[0] != '/' && ::getcwd(cwd, sizeof(cwd)))
      p = std::string(cwd) + "/" + p;
    while (p.size() > 1 && p.back() == '/')
      p.pop_back();
    for (size_t at; (at = p.find("/./")) != std::string::npos;)
      p.erase(at, 2);
    return p;
  };
  loom::program::clearOutputMarker(options.paramsOut);
  loom::program::clearOutputMarker(options.stateOut);
  if (absolute(options.paramsOut) == absolute(options.stateOut))
    return fail("--params-out " + options.paramsOut +
                " is where the optimizer state goes; give another directory");
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
  options.onStep = [](int64_t step, double loss, const std::string &note) {
    std::printf("step %lld loss %.8e%s\n", static_cast<long long>(step), loss,
                note.empty() ? "" : ("  [" + note + "]").c_str());
    std::fflush(stdout);
  };
  bool reported = false;
  options.onError = [&](const std::string &message) {
    fail(message);
    reported = true;
  };
  loom::program::TrainStats stats;
  bool ok;
  if (manifest.pipelined()) {
    auto lookup = [](const std::string &function) {
      std::string symbol = "_mlir__mlir_ciface_" + function;
      return reinterpret_cast<loom::program::PackedEntry>(
          dlsym(RTLD_DEFAULT, symbol.c_str()));
    };
    ok = loom::program::trainPipeline(manifest, lookup, options, stats, error);
  } else {
    ok = loom::program::train(manifest, &_mlir__mlir_ciface_train_step,
                              options, stats, error);
  }
  if (!ok)
    return reported ? 1 : fail(error);
  double seconds = stats.trainSeconds;
  if (stats.rank == 0)
    std::printf("trained %lld steps in %.3f s (%.4f s/step, compiled ahead of "
                "time); parameters in %s\n",
                static_cast<long long>(options.steps), seconds,
                seconds / double(options.steps), options.paramsOut.c_str());
  return 0;
}
