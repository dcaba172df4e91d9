//===- files.cpp - Files the rank programs read and write -----------------===//
//
// Inputs are read with pread, not mapped: a data file truncated while a
// run reads it gives an error naming the file, where a mapping would kill
// every rank with SIGBUS. Outputs are written whole or not at all.
//
//===----------------------------------------------------------------------===//

#include "loom/program.h"
#include "loom/train.h"

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

//===----------------------------------------------------------------------===//
// Inputs read, not mapped
//===----------------------------------------------------------------------===//

loom::program::InputFile::~InputFile() {
  if (fd >= 0)
    ::close(fd);
}

bool loom::program::InputFile::open(const std::string &path,
                                    std::string &error) {
  if (fd >= 0)
    ::close(fd);
  name = path;
  // O_NONBLOCK: opening a FIFO for reading would wait for a writer (a data
  // file or manifest that is a named pipe hung the reader); only regular
  // files are read.
  fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat st;
  int why = 0;
  if (fd < 0 || ::fstat(fd, &st) != 0)
    why = errno;
  else if (S_ISDIR(st.st_mode))
    why = EISDIR;
  if (!why && !S_ISREG(st.st_mode)) {
    error = "cannot read " + path + ": not a regular file (" +
            (S_ISFIFO(st.st_mode) ? "a named pipe"
             : S_ISSOCK(st.st_mode) ? "a socket"
                                    : "a device") +
            ")";
    ::close(fd);
    fd = -1;
    return false;
  }
  if (why) {
    error = "cannot read " + path + ": " + std::strerror(why);
    if (fd >= 0)
      ::close(fd);
    fd = -1;
    return false;
  }
  bytes = uint64_t(st.st_size);
  return true;
}

bool loom::program::readNpyHeader(const InputFile &file, NpyInfo &info,
                                  std::string &error) {
  std::string head(size_t(std::min<uint64_t>(file.size(), 1 << 16)), 0);
  return file.read(0, head.size(), head.data(), error) &&
         parseNpyHeader(head.data(), file.size(), file.path(), info, error);
}

bool loom::program::InputFile::read(uint64_t offset, size_t n, void *out,
                                    std::string &error) const {
  char *p = static_cast<char *>(out);
  size_t done = 0;
  while (fd >= 0 && done < n) {
    ssize_t got = ::pread(fd, p + done, n - done, off_t(offset + done));
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      error = "cannot read " + name + ": " + std::strerror(errno);
      return false;
    }
    if (got == 0)
      break;
    done += size_t(got);
  }
  if (done == n)
    return true;
  struct stat st;
  std::string now = fd >= 0 && ::fstat(fd, &st) == 0
                        ? std::to_string(st.st_size) + " bytes"
                        : std::string("unknown size");
  error = name + " is too short now: " + std::to_string(n) +
          " bytes at offset " + std::to_string(offset) +
          " were to be read but it holds " + now + " (" +
          std::to_string(bytes) +
          " when this run opened it: was it truncated while in use?)";
  return false;
}

//===----------------------------------------------------------------------===//
// Outputs written whole
//===----------------------------------------------------------------------===//

bool loom::program::writeFileAtomically(const std::string &path,
                                        const void *data, size_t size,
                                        std::string &error) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  bool ok = fd >= 0;
  const char *p = static_cast<const char *>(data);
  for (size_t done = 0; ok && done < size;) {
    ssize_t n = ::write(fd, p + done, size - done);
    if (n < 0 && errno == EINTR)
      continue;
    ok = n > 0;
    done += ok ? size_t(n) : 0;
  }
  ok = ok && ::fsync(fd) == 0;
  int saved = errno;
  if (fd >= 0)
    ok = ::close(fd) == 0 && ok;
  ok = ok && ::rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) {
    error = "cannot write " + path + ": " + std::strerror(saved ? saved : errno);
    ::unlink(tmp.c_str());
    return false;
  }
  // The rename itself reaches the disk with the directory.
  std::string dir = path.substr(0, path.find_last_of('/') + 1);
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return true;
}

/// Beside the directory, so that it holds nothing but .npy files (readers
/// load every file in it).
static std::string outputMarker(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/')
    dir.pop_back();
  return dir + ".done";
}

void loom::program::clearOutputMarker(const std::string &dir) {
  if (!dir.empty())
    ::unlink(outputMarker(dir).c_str());
}

bool loom::program::beginOutputDir(const std::string &dir, std::string &error) {
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST) {
    error = "cannot create " + dir + ": " + std::strerror(errno);
    return false;
  }
  std::string marker = outputMarker(dir);
  if (::unlink(marker.c_str()) != 0 && errno != ENOENT) {
    error = "cannot remove " + marker + ": " + std::strerror(errno);
    return false;
  }
  if (DIR *d = ::opendir(dir.c_str())) {
    while (dirent *e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0)
        ::unlink((dir + "/" + name).c_str());
    }
    ::closedir(d);
  }
  return true;
}

bool loom::program::finishOutputDir(const std::string &dir,
                                    const std::vector<std::string> &files,
                                    const std::string &what,
                                    std::string &error) {
  std::string text = "complete: written by " + what;
  if (!files.empty()) {
    text += "\nfiles:";
    for (const std::string &f : files)
      text += " " + f;
  }
  text += "\n";
  return writeFileAtomically(outputMarker(dir), text.data(), text.size(),
                             error);
}

bool loom::program::resolveOutputs(TrainOptions &o,
                                   const std::string &paramsFlag,
                                   const std::string &stateFlag,
                                   std::string &error) {
  o.paramsOut = paramsFlag.empty() ? o.dir + "/params-final" : paramsFlag;
  o.stateOut = stateFlag.empty() ? o.dir + "/optimizer-final" : stateFlag;
  // --params-out none writes nothing (a benchmark's gigabytes), the state
  // included unless --state-out names a directory.
  if (o.paramsOut == "none") {
    o.paramsOut.clear();
    if (stateFlag.empty())
      o.stateOut.clear();
  }
  if (o.stateOut == "none")
    o.stateOut.clear();
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
  if (!o.paramsOut.empty() && !o.stateOut.empty() &&
      absolute(o.paramsOut) == absolute(o.stateOut)) {
    error = "--params-out " + o.paramsOut +
            " is where the optimizer state goes; give another directory "
            "(or another --state-out)";
    return false;
  }
  // A run that fails leaves the earlier results unmarked (<dir>.done).
  clearOutputMarker(o.paramsOut);
  clearOutputMarker(o.stateOut);
  return true;
}

/// mkdir `path` (`parents`: and its missing parents, as mkdir -p); 0 or
/// the errno of the first that failed.
static int makeDirectories(const std::string &path, bool parents) {
  for (size_t at = parents ? 1 : path.size(); at <= path.size(); ++at) {
    if (at < path.size() && path[at] != '/')
      continue;
    std::string prefix = path.substr(0, at);
    if (::mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST)
      return errno;
  }
  return 0;
}

bool loom::program::checkOutputDir(const std::string &dir,
                                   const std::string &what, std::string &error,
                                   bool tree) {
  std::string path = dir;
  while (path.size() > 1 && path.back() == '/')
    path.pop_back();
  // The directory (its .npy files) and its parent (the <dir>.done marker,
  // written through a temporary file beside it) must both take new files;
  // a tree (checkpoints) is made with its parents and holds its markers.
  std::string probes[2] = {path + "/.loom-probe-" + std::to_string(::getpid()),
                           path + ".probe-" + std::to_string(::getpid())};
  int why = makeDirectories(path, tree);
  for (int i = 0; i < (tree ? 1 : 2) && !why; ++i) {
    int fd = ::open(probes[i].c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                    0600);
    if (fd < 0) {
      why = errno;
      break;
    }
    ::close(fd);
    ::unlink(probes[i].c_str());
  }
  if (!why)
    return true;
  error = "cannot write " + what + " to " + path + ": " +
          std::strerror(why) + " (checked before training)";
  return false;
}

int loom::program::lockOutputDir(const std::string &dir, const std::string &who,
                                 std::string &error) {
  std::string path = dir + "/.loom-lock";
  if (int why = makeDirectories(dir, /*parents=*/true)) {
    error = "cannot create " + dir + ": " + std::strerror(why);
    return -1;
  }
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) {
    error = "cannot write into " + dir + ": " + std::strerror(errno);
    return -1;
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int why = errno;
    char text[64] = {0};
    ssize_t n = ::pread(fd, text, sizeof(text) - 1, 0);
    std::string holder = n > 0 ? std::string(text, size_t(n)) : "";
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' '))
      holder.pop_back();
    ::close(fd);
    if (why != EWOULDBLOCK) {
      error = "cannot lock " + path + ": " + std::strerror(why);
      return -1;
    }
    error = "another process is writing into " + dir +
            (holder.empty() ? std::string() : " (" + holder + ")") +
            "; wait for it to finish or give another output directory";
    return -1;
  }
  // Who holds it, for the error of the next writer.
  std::string text = who + " pid " + std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, text.data(), text.size(), 0) != ssize_t(text.size())) {
    // The lock holds without the note.
  }
  return fd;
}
