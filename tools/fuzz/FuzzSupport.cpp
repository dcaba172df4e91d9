//===- FuzzSupport.cpp - What Loom's fuzz harnesses share -----------------===//

#include "FuzzSupport.h"

#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

static int removeEntry(const char *path, const struct stat *, int, struct FTW *) {
  ::remove(path);
  return 0;
}

static void removeScratch() {
  ::nftw(loomfuzz::scratchDirectory().c_str(), removeEntry, 16,
         FTW_DEPTH | FTW_PHYS);
}

const std::string &loomfuzz::scratchDirectory() {
  static const std::string dir = [] {
    struct stat st;
    std::string base = ::stat("/dev/shm", &st) == 0 ? "/dev/shm" : "/tmp";
    std::string tmpl = base + "/loom-fuzz-XXXXXX";
    if (!::mkdtemp(tmpl.data())) {
      std::perror("loom-fuzz: mkdtemp");
      std::abort();
    }
    std::atexit(removeScratch);
    return tmpl;
  }();
  return dir;
}

std::string loomfuzz::writeScratchFile(const std::string &name,
                                         const uint8_t *data, size_t size) {
  std::string path = scratchDirectory() + "/" + name;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) {
    std::perror(("loom-fuzz: " + path).c_str());
    std::abort();
  }
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) {
      std::perror(("loom-fuzz: writing " + path).c_str());
      std::abort();
    }
    done += size_t(n);
  }
  ::close(fd);
  return path;
}

void loomfuzz::fail(const std::string &what) {
  std::fprintf(stderr, "loom-fuzz: FINDING: %s\n", what.c_str());
  std::abort();
}
