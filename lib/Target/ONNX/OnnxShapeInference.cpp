//===- OnnxShapeInference.cpp - ONNX shape inference, isolated ------------===//

#include "OnnxShapeInference.h"

#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"
#include "onnx/version_converter/convert.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <chrono>
#include <fcntl.h>
#include <new>
#include <poll.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

using namespace mlir::loom::onnx_import;

#if defined(__SANITIZE_ADDRESS__)
#define LOOM_ONNX_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LOOM_ONNX_UNDER_ASAN 1
#endif
#endif

/// This process's address space now (bytes), or 0 when unknown: a fork of
/// a large process (loomc holding a model's weights) starts with it.
static rlim_t addressSpaceInUse() {
  std::FILE *f = std::fopen("/proc/self/statm", "r");
  if (!f)
    return 0;
  unsigned long long pages = 0;
  int got = std::fscanf(f, "%llu", &pages);
  std::fclose(f);
  long pageSize = ::sysconf(_SC_PAGESIZE);
  return got == 1 && pageSize > 0 ? rlim_t(pages) * rlim_t(pageSize) : 0;
}

void mlir::loom::onnx_import::applyMemoryLimit(size_t requestBytes) {
#ifndef LOOM_ONNX_UNDER_ASAN
  rlimit current;
  if (::getrlimit(RLIMIT_AS, &current) != 0)
    return;
  rlim_t want = addressSpaceInUse() +
                (rlim_t(inferenceMemoryGiB()) << 30) +
                4 * rlim_t(requestBytes);
  if (current.rlim_max != RLIM_INFINITY && want > current.rlim_max)
    want = current.rlim_max;
  current.rlim_cur = want;
  ::setrlimit(RLIMIT_AS, &current);
#else
  (void)requestBytes;
#endif
}

/// The whole number in (0, most] that environment variable `name` holds,
/// else `fallback` (unset or malformed: the default, not an error).
static int positiveFromEnv(const char *name, long most, int fallback) {
  if (const char *env = std::getenv(name)) {
    char *end = nullptr;
    long v = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && v > 0 && v <= most)
      return int(v);
  }
  return fallback;
}

int mlir::loom::onnx_import::inferenceMemoryGiB() {
  return positiveFromEnv("LOOM_ONNX_INFER_MEMORY_GIB", 1 << 20, 8);
}

int mlir::loom::onnx_import::inferenceTimeoutSeconds() {
  return positiveFromEnv("LOOM_ONNX_INFER_TIMEOUT", 86400, 60);
}

/// What running out of applyMemoryLimit's memory is called in an error.
static std::string outOfMemory() {
  return "ran out of memory (its process may use " +
         std::to_string(inferenceMemoryGiB()) +
         " GiB plus 4 times the model's size: LOOM_ONNX_INFER_MEMORY_GIB)";
}

bool mlir::loom::onnx_import::inferShapesInProcess(onnx::ModelProto &model,
                                                   std::string &error) {
  try {
    onnx::ShapeInferenceOptions options{/*check_type=*/true, /*error_mode=*/1,
                                        /*enable_data_propagation=*/true};
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                       options);
    return true;
  } catch (const std::bad_alloc &) {
    error = "ONNX shape inference " + outOfMemory();
  } catch (const std::exception &e) {
    error = std::string("ONNX shape inference: ") + e.what();
  } catch (...) {
    error = "ONNX shape inference: unknown error";
  }
  return false;
}

bool mlir::loom::onnx_import::convertVersionInProcess(onnx::ModelProto &model,
                                                      int target,
                                                      std::string &error) {
  try {
    model = onnx::version_conversion::ConvertVersion(model, target);
    return true;
  } catch (const std::bad_alloc &) {
    error = "it " + outOfMemory();
  } catch (const std::exception &e) {
    error = e.what();
  } catch (...) {
    error = "unknown error";
  }
  return false;
}

std::string mlir::loom::onnx_import::encodeConversion(
    const onnx::ModelProto &converted, bool ok, const std::string &error) {
  return ok ? "1" + converted.SerializeAsString() : "0" + error;
}

std::string mlir::loom::onnx_import::encodeInference(
    const onnx::ModelProto &inferred, bool ok, const std::string &error) {
  if (!ok)
    return "0" + error;
  onnx::GraphProto g;
  *g.mutable_value_info() = inferred.graph().value_info();
  *g.mutable_output() = inferred.graph().output();
  return "1" + g.SerializeAsString();
}

namespace {

bool writeAll(int fd, const char *data, size_t size) {
  for (size_t done = 0; done < size;) {
    ssize_t n = ::write(fd, data + done, size - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    done += size_t(n);
  }
  return true;
}

using Clock = std::chrono::steady_clock;

/// Waits until `fd` is readable or `deadline` passes: false on the latter.
bool waitReadable(int fd, Clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - Clock::now());
    if (left.count() <= 0)
      return false;
    pollfd p = {fd, POLLIN, 0};
    int n = ::poll(&p, 1, int(std::min<int64_t>(left.count(), 1 << 30)));
    if (n > 0)
      return true; // readable, closed or failed: read() says which
    if (n < 0 && errno != EINTR)
      return true;
  }
}

/// Reads `fd` to its end; false when `deadline` passed first.
bool readAll(int fd, std::string &out, Clock::time_point deadline) {
  char buffer[65536];
  for (;;) {
    if (!waitReadable(fd, deadline))
      return false;
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n == 0)
      return true;
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return true;
    out.append(buffer, size_t(n));
  }
}

/// What a request's wait returns when the other process did not answer in
/// time (it has been killed and reaped).
constexpr int kTimedOut = -2;

/// loom-onnx-infer in the running executable's directory (or where
/// LOOM_ONNX_INFER names it), or "".
std::string helperPath() {
  if (const char *env = std::getenv("LOOM_ONNX_INFER"))
    return env;
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0)
    return "";
  std::string dir(self, size_t(n));
  dir = dir.substr(0, dir.rfind('/'));
  std::string path = dir + "/loom-onnx-infer";
  return ::access(path.c_str(), X_OK) == 0 ? path : "";
}

/// What inference needs of the model: the values of weights are not (only
/// their types and shapes); small float tensors may be (Resize's scales),
/// and integer ones (shape inputs).
std::string requestFor(const onnx::ModelProto &model) {
  onnx::ModelProto light = model;
  for (onnx::TensorProto &t : *light.mutable_graph()->mutable_initializer()) {
    int64_t elements = 1;
    for (int64_t d : t.dims())
      elements = d > 0 && elements < (int64_t(1) << 40) ? elements * d : elements;
    bool isFloat = t.data_type() == onnx::TensorProto::FLOAT ||
                   t.data_type() == onnx::TensorProto::DOUBLE ||
                   t.data_type() == onnx::TensorProto::FLOAT16 ||
                   t.data_type() == onnx::TensorProto::BFLOAT16;
    if (isFloat && elements > 64) {
      t.clear_raw_data();
      t.clear_float_data();
      t.clear_double_data();
      t.clear_int32_data();
    }
  }
  return kInferRequest + light.SerializeAsString();
}

/// The helper, started once and kept: requests and replies are framed by
/// an 8-byte length. A helper that dies (ONNX crashed on a request) is
/// reaped, its status returned, and a new one started for the next model.
class Helper {
public:
  /// The wait status of a helper that died on this request, 0 with
  /// `reply` set, -1 when no helper could be started, kTimedOut when it
  /// did not answer by `deadline` (it is killed).
  int request(const std::string &path, const std::string &bytes,
              std::string &reply, Clock::time_point deadline) {
    std::lock_guard<std::mutex> lock(mutex);
    if (pid <= 0 && !start(path))
      return -1;
    uint64_t size = bytes.size();
    struct sigaction ignore = {}, old;
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &ignore, &old);
    bool sent = writeAll(to, reinterpret_cast<const char *>(&size), 8) &&
                writeAll(to, bytes.data(), bytes.size());
    ::sigaction(SIGPIPE, &old, nullptr);
    uint64_t length = 0;
    bool late = false;
    if (sent &&
        readExactly(from, reinterpret_cast<char *>(&length), 8, deadline,
                    late) &&
        length < (uint64_t(1) << 34)) {
      reply.resize(size_t(length));
      if (readExactly(from, reply.data(), reply.size(), deadline, late))
        return 0;
    }
    if (late) {
      ::kill(pid, SIGKILL);
      stop();
      return kTimedOut;
    }
    return stop();
  }
  ~Helper() {
    if (pid > 0)
      stop();
  }

private:
  static bool readExactly(int fd, char *data, size_t size,
                          Clock::time_point deadline, bool &late) {
    for (size_t done = 0; done < size;) {
      if (!waitReadable(fd, deadline)) {
        late = true;
        return false;
      }
      ssize_t n = ::read(fd, data + done, size - done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return false;
      done += size_t(n);
    }
    return true;
  }

  bool start(const std::string &path) {
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0)
      return false;
    if (::pipe2(out, O_CLOEXEC) != 0) {
      ::close(in[0]);
      ::close(in[1]);
      return false;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    // What ONNX prints when it crashes (a stack dump; in a sanitizer build
    // a report) is not the user's error: the reply, or the crash's signal,
    // is reported instead.
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    char *argv[] = {const_cast<char *>(path.c_str()), nullptr};
    int rc = posix_spawn(&pid, path.c_str(), &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(in[0]);
    ::close(out[1]);
    if (rc != 0) {
      pid = 0;
      ::close(in[1]);
      ::close(out[0]);
      return false;
    }
    to = in[1];
    from = out[0];
    return true;
  }

  /// Closes the pipes and reaps the helper; its wait status.
  int stop() {
    ::close(to);
    ::close(from);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    pid = 0;
    // A helper that exited cleanly without replying: report it as failed.
    return status == 0 ? (1 << 8) : status;
  }

  std::mutex mutex;
  pid_t pid = 0;
  int to = -1, from = -1;
};

/// The same in a fork of this process: `produce` makes the reply there.
int runForked(const std::function<std::string()> &produce, size_t requestBytes,
              std::string &reply, Clock::time_point deadline) {
  int fds[2];
  if (::pipe(fds) != 0)
    return -1;
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    ::close(fds[0]);
    // A crash here is reported by the parent, without a stack dump.
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT})
      ::signal(sig, SIG_DFL);
    // LLVM's tools install a new-handler that aborts ("LLVM ERROR: out of
    // memory"): here running out is std::bad_alloc, reported as such.
    std::set_new_handler(nullptr);
    applyMemoryLimit(requestBytes);
    std::string out = produce();
    ::_exit(writeAll(fds[1], out.data(), out.size()) ? 0 : 1);
  }
  ::close(fds[1]);
  bool inTime = readAll(fds[0], reply, deadline);
  ::close(fds[0]);
  if (!inTime)
    ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return inTime ? status : kTimedOut;
}

/// Runs `request` in the helper, or `produce` in a fork of this process
/// where there is no helper. -1 when neither could start, 1 when `reply`
/// is a good one ("1" and its payload), else 0 with `error` (naming
/// `stage` when the other process crashed or said nothing).
int runIsolated(const std::string &request,
                const std::function<std::string()> &produce,
                const std::string &stage, std::string &reply,
                std::string &error) {
  static Helper server;
  std::string helper = helperPath();
  int seconds = inferenceTimeoutSeconds();
  Clock::time_point deadline = Clock::now() + std::chrono::seconds(seconds);
  int status = helper.empty()
                   ? -1
                   : server.request(helper, request, reply, deadline);
  if (status == -1)
    status = runForked(produce, request.size(), reply, deadline);
  if (status == -1)
    return -1;
  if (status == kTimedOut)
    error = stage + " did not finish in " + std::to_string(seconds) +
            " s and was stopped (ONNX 1.12 on this model; the limit is "
            "LOOM_ONNX_INFER_TIMEOUT, in seconds)";
  else if (WIFSIGNALED(status))
    error = stage + " crashed (signal " + std::to_string(WTERMSIG(status)) +
            ": a bug of ONNX 1.12 on this malformed model; check it with "
            "onnx.checker.check_model(model, full_check=True))";
  else if (reply.empty() || (reply[0] != '0' && reply[0] != '1'))
    error = stage + " failed without a reason (exit status " +
            std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")";
  else if (reply[0] == '0')
    error = reply.substr(1);
  else
    return 1;
  return 0;
}

} // namespace

bool mlir::loom::onnx_import::convertVersion(onnx::ModelProto &model,
                                             int target, std::string &error) {
  std::string reply;
  int status = runIsolated(
      kConvertRequest + std::to_string(target) + "\n" +
          model.SerializeAsString(),
      [&] {
        std::string why;
        bool ok = convertVersionInProcess(model, target, why);
        return encodeConversion(model, ok, why);
      },
      "ONNX's version converter", reply, error);
  if (status == -1) // neither could start: convert here
    return convertVersionInProcess(model, target, error);
  if (status == 0)
    return false;
  onnx::ModelProto converted;
  if (!converted.ParseFromArray(reply.data() + 1, int(reply.size() - 1))) {
    error = "ONNX's version converter returned an unreadable model";
    return false;
  }
  model = std::move(converted);
  return true;
}

bool mlir::loom::onnx_import::inferShapes(onnx::ModelProto &model,
                                          std::string &error) {
  std::string reply;
  int status = runIsolated(
      requestFor(model),
      [&] {
        std::string why;
        bool ok = inferShapesInProcess(model, why);
        return encodeInference(model, ok, why);
      },
      "ONNX shape inference", reply, error);
  if (status == -1) // neither could start: infer here
    return inferShapesInProcess(model, error);
  if (status == 0)
    return false;
  onnx::GraphProto inferred;
  if (!inferred.ParseFromArray(reply.data() + 1, int(reply.size() - 1))) {
    error = "ONNX shape inference returned an unreadable graph";
    return false;
  }
  *model.mutable_graph()->mutable_value_info() = inferred.value_info();
  *model.mutable_graph()->mutable_output() = inferred.output();
  return true;
}
