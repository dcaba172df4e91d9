//===- Launch.cpp - loom-run -np N: run the ranks, repeat their errors ----===//

#include "Launch.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

volatile sig_atomic_t childPid = 0;

void passOn(int signal) {
  if (childPid > 0)
    ::kill(childPid, signal);
}

/// Prints what each rank kept in `dir`, then removes it.
void repeatErrors(const std::string &dir, int ranks) {
  for (int r = 0; r < ranks; ++r) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, "rank-" + std::to_string(r));
    auto buffer = llvm::MemoryBuffer::getFile(path);
    if (!buffer)
      continue;
    llvm::SmallVector<llvm::StringRef> lines;
    (*buffer)->getBuffer().split(lines, '\n', -1, /*KeepEmpty=*/false);
    for (llvm::StringRef line : lines)
      llvm::errs() << "loom-run: error: rank " + std::to_string(r) + ": " +
                          line.str() + "\n";
    llvm::sys::fs::remove(path);
  }
  llvm::sys::fs::remove(dir);
}

} // namespace

int launchRanks(std::vector<std::string> command, int ranks,
                std::string &error) {
  llvm::SmallString<128> dir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("loom-run-errors", dir)) {
    error = "cannot create a directory for the ranks' errors: " + ec.message();
    return -1;
  }
  // Remote ranks get the variable too (their messages stay on their node).
  command.insert(command.begin() + 1, {"-x", "LOOM_ERROR_DIR"});
  std::vector<char *> argv;
  for (std::string &c : command)
    argv.push_back(c.data());
  argv.push_back(nullptr);
  ::setenv("LOOM_ERROR_DIR", dir.c_str(), 1);
  // Block the signals passed on until the child's pid is known.
  sigset_t passed, old;
  sigemptyset(&passed);
  sigaddset(&passed, SIGTERM);
  sigaddset(&passed, SIGHUP);
  sigprocmask(SIG_BLOCK, &passed, &old);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) {
    sigprocmask(SIG_SETMASK, &old, nullptr);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) // loom-run died before prctl
      ::_exit(1);
    ::execvp(argv[0], argv.data());
    int saved = errno;
    // Exit 127, as a shell does for a command it cannot run.
    llvm::errs() << "loom-run: error: cannot run " << command[0] << ": "
                 << std::strerror(saved) << " (install OpenMPI, or launch "
                 << "the ranks yourself: mpirun -np " << ranks << " ...)\n";
    ::_exit(127);
  }
  if (pid < 0) {
    sigprocmask(SIG_SETMASK, &old, nullptr);
    error = std::string("cannot start ") + command[0] + ": " +
            std::strerror(errno);
    llvm::sys::fs::remove(dir);
    return -1;
  }
  childPid = pid;
  struct sigaction action = {};
  action.sa_handler = passOn;
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGHUP, &action, nullptr);
  // Ctrl-C reaches mpirun from the terminal itself (same process group);
  // loom-run waits for it to end the job, as system() does.
  std::signal(SIGINT, SIG_IGN);
  std::signal(SIGQUIT, SIG_IGN);
  sigprocmask(SIG_SETMASK, &old, nullptr);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  repeatErrors(dir.str().str(), ranks);
  if (WIFSIGNALED(status)) {
    std::signal(WTERMSIG(status), SIG_DFL);
    ::raise(WTERMSIG(status));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
