//===- FuzzMain.cpp - Replays inputs through a harness without libFuzzer --===//
//
// The normal build links the harnesses with this main: each argument (a
// file, or a directory of them) is run once through LLVMFuzzerTestOneInput,
// so test/Fuzz replays the corpora and regression inputs on every test run
// without a sanitizer build. Prints how many inputs ran.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include <algorithm>
#include <cstdio>
#include <dirent.h>
#include <fstream>
#include <iterator>
#include <sys/stat.h>
#include <vector>

extern "C" size_t LLVMFuzzerMutate(uint8_t *, size_t size, size_t) {
  return size;
}

extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int *, char ***) {
  return 0;
}

static void collect(const std::string &path, std::vector<std::string> &files) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    std::exit(2);
  }
  if (!S_ISDIR(st.st_mode)) {
    files.push_back(path);
    return;
  }
  DIR *dir = ::opendir(path.c_str());
  std::vector<std::string> names;
  while (dirent *e = ::readdir(dir))
    if (e->d_name[0] != '.')
      names.push_back(path + "/" + e->d_name);
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  for (const std::string &name : names)
    collect(name, files);
}

int main(int argc, char **argv) {
  LLVMFuzzerInitialize(&argc, &argv);
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i)
    collect(argv[i], files);
  for (const std::string &file : files) {
    std::ifstream in(file, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                            std::istreambuf_iterator<char>());
    std::fprintf(stderr, "running %s (%zu bytes)\n", file.c_str(), bytes.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()),
                           bytes.size());
  }
  std::printf("ran %zu inputs\n", files.size());
  return 0;
}
