//===- files.cpp - Files the rank programs read and write -----------------===//
//
// Inputs are read with pread, not mapped: a data file truncated while a
// run reads it gives an error naming the file, where a mapping would kill
// every rank with SIGBUS. Outputs are written whole or not at all.
//
//===----------------------------------------------------------------------===//

#include "loom/program.h"

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
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
