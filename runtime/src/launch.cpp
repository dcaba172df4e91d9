//===- launch.cpp - Which rank am I: launcher environment detection -------===//

#include "loom/runtime.h"

#include "env.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <unistd.h>

extern "C" char **environ;

namespace {

using loom::rt::lookup;

/// Parses an optional integer variable; *out keeps its value if absent.
loom_status_t readInt(const char *const *env, const char *name, int32_t *out,
                      bool *found = nullptr) {
  const char *text = lookup(env, name);
  if (found)
    *found = text != nullptr;
  if (!text)
    return nullptr;
  errno = 0;
  char *end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < INT32_MIN ||
      value > INT32_MAX)
    return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT,
                            "environment variable %s='%s' is not an integer",
                            name, text);
  *out = static_cast<int32_t>(value);
  return nullptr;
}

struct LauncherVars {
  loom_launcher_t launcher;
  const char *rank, *size, *localRank, *localSize;
};

constexpr LauncherVars kLaunchers[] = {
    {LOOM_LAUNCHER_OPENMPI, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {LOOM_LAUNCHER_SLURM, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID",
     "SLURM_NTASKS_PER_NODE"},
    {LOOM_LAUNCHER_PMI, "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID",
     "MPI_LOCALNRANKS"},
    {LOOM_LAUNCHER_TORCHRUN, "RANK", "WORLD_SIZE", "LOCAL_RANK",
     "LOCAL_WORLD_SIZE"},
};

/// The first host of a Slurm node list: "vm" -> "vm", "n[07-09,12],m1"
/// -> "n07".
std::string firstSlurmHost(const char *list) {
  std::string s = list ? list : "";
  int depth = 0;
  size_t end = 0;
  for (; end < s.size(); ++end) {
    if (s[end] == '[')
      ++depth;
    else if (s[end] == ']')
      --depth;
    else if (s[end] == ',' && depth == 0)
      break;
  }
  s = s.substr(0, end);
  size_t open = s.find('[');
  if (open == std::string::npos)
    return s;
  size_t close = s.find(']', open);
  std::string inside = s.substr(open + 1, close == std::string::npos
                                              ? std::string::npos
                                              : close - open - 1);
  std::string first = inside.substr(0, inside.find_first_of(",-"));
  std::string suffix =
      close == std::string::npos ? std::string() : s.substr(close + 1);
  return s.substr(0, open) + first + suffix;
}

} // namespace

extern "C" const char *loom_launcher_name(loom_launcher_t launcher) {
  switch (launcher) {
  case LOOM_LAUNCHER_NONE:
    return "none";
  case LOOM_LAUNCHER_OPENMPI:
    return "openmpi";
  case LOOM_LAUNCHER_PMI:
    return "pmi";
  case LOOM_LAUNCHER_SLURM:
    return "slurm";
  case LOOM_LAUNCHER_TORCHRUN:
    return "torchrun";
  }
  return "unknown";
}

extern "C" loom_status_t
loom_launch_info_from_environ(const char *const *env,
                              loom_launch_info_t *out_info) {
  if (!out_info)
    return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT,
                            "out_info must not be NULL");
  loom_launch_info_t info = {};
  info.launcher = LOOM_LAUNCHER_NONE;
  info.world_size = 1;
  info.local_size = 1;

  const LauncherVars *vars = nullptr;
  for (const LauncherVars &candidate : kLaunchers)
    if (lookup(env, candidate.rank) && lookup(env, candidate.size)) {
      vars = &candidate;
      break;
    }
  if (vars) {
    info.launcher = vars->launcher;
    info.local_size = 0;
    loom_status_t status;
    if ((status = readInt(env, vars->rank, &info.rank)) ||
        (status = readInt(env, vars->size, &info.world_size)))
      return status;
    bool haveLocal = false;
    if ((status = readInt(env, vars->localRank, &info.local_rank, &haveLocal)))
      return status;
    if (!haveLocal)
      info.local_rank = info.rank;
    // Slurm writes SLURM_NTASKS_PER_NODE as "4" or "4(x2)"; only a plain
    // integer is used, anything else leaves local_size unknown.
    const char *localSize = lookup(env, vars->localSize);
    if (localSize && vars->launcher != LOOM_LAUNCHER_SLURM) {
      if ((status = readInt(env, vars->localSize, &info.local_size)))
        return status;
    } else if (localSize) {
      char *end = nullptr;
      long v = std::strtol(localSize, &end, 10);
      if (end != localSize && *end == '\0' && v > 0 && v <= INT32_MAX)
        info.local_size = static_cast<int32_t>(v);
    }
    if (info.world_size < 1)
      return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT,
                              "%s=%d: the world size must be positive",
                              vars->size, info.world_size);
    if (info.rank < 0 || info.rank >= info.world_size)
      return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT,
                              "%s=%d is outside [0, %s=%d)", vars->rank,
                              info.rank, vars->size, info.world_size);
    if (info.local_rank < 0 ||
        (info.local_size > 0 && info.local_rank >= info.local_size))
      return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT,
                              "%s=%d is outside [0, %s=%d)", vars->localRank,
                              info.local_rank, vars->localSize,
                              info.local_size);
  }

  if (const char *addr = lookup(env, "MASTER_ADDR")) {
    if (std::strlen(addr) >= sizeof(info.master_addr))
      return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT,
                              "MASTER_ADDR is longer than %zu characters",
                              sizeof(info.master_addr) - 1);
    std::strcpy(info.master_addr, addr);
  }
  if (loom_status_t status = readInt(env, "MASTER_PORT", &info.master_port))
    return status;
  // srun sets no MASTER_ADDR/MASTER_PORT: rank 0 runs on the step's first
  // node, and the port follows from the job and step ids (the same on
  // every rank, different for concurrent steps).
  if (info.launcher == LOOM_LAUNCHER_SLURM && info.master_addr[0] == '\0') {
    const char *list = lookup(env, "SLURM_STEP_NODELIST");
    if (!list)
      list = lookup(env, "SLURM_JOB_NODELIST");
    std::string host = firstSlurmHost(list);
    if (!host.empty() && host.size() < sizeof(info.master_addr))
      std::strcpy(info.master_addr, host.c_str());
  }
  if (info.launcher == LOOM_LAUNCHER_SLURM && info.master_port == 0) {
    int32_t job = 0, step = 0;
    for (auto [name, value] : {std::pair{"SLURM_JOB_ID", &job},
                               std::pair{"SLURM_STEP_ID", &step}})
      if (loom_status_t s = readInt(env, name, value))
        loom_status_free(s); // malformed: 0, still the same on every rank
    info.master_port = 20000 + int32_t((int64_t(job) * 64 + step) % 20000);
  }
  if (info.master_port < 0 || info.master_port > 65535)
    return loom_status_make(LOOM_STATUS_INVALID_ARGUMENT,
                            "MASTER_PORT=%d is not a TCP port",
                            info.master_port);
  *out_info = info;
  return nullptr;
}

extern "C" loom_status_t loom_launch_info_from_env(loom_launch_info_t *out_info) {
  return loom_launch_info_from_environ(environ, out_info);
}

extern "C" void loom_keep_rank_error(const char *message) {
  const char *dir = std::getenv("LOOM_ERROR_DIR");
  if (!dir || !*dir || !message)
    return;
  loom_launch_info_t info;
  if (loom_status_t status = loom_launch_info_from_env(&info)) {
    loom_status_free(status);
    info.rank = 0; // the message is kept; which rank said it is unknown
  }
  std::string path =
      std::string(dir) + "/rank-" + std::to_string(info.rank);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    return;
  std::string line = std::string(message) + "\n";
  // One write: a short message appends whole.
  ssize_t written = ::write(fd, line.data(), line.size());
  (void)written;
  ::close(fd);
}
