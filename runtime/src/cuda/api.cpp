//===- api.cpp - The CUDA driver and cuBLAS, loaded at run time -----------===//

#include "api.h"

#include <cublas_v2.h>

#include <dlfcn.h>
#include <glob.h>
#include <sys/stat.h>

#include <cstdlib>
#include <mutex>
#include <set>
#include <type_traits>
#include <sstream>

using namespace loom::cuda;

namespace {

bool isFile(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool isDir(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void split(const char *text, char sep, std::vector<std::string> &out) {
  if (!text)
    return;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, sep))
    if (!part.empty())
      out.push_back(part);
}

void globInto(const std::string &pattern, std::vector<std::string> &out) {
  glob_t g;
  if (::glob(pattern.c_str(), GLOB_NOSORT, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i)
      out.push_back(g.gl_pathv[i]);
  ::globfree(&g);
}

/// The file the loader resolved a library to: the file defining `symbol`,
/// one of its functions.
std::string loadedPath(void *handle, const char *symbol,
                       const std::string &fallback) {
  Dl_info info;
  void *sym = ::dlsym(handle, symbol);
  if (sym && ::dladdr(sym, &info) && info.dli_fname)
    return info.dli_fname;
  return fallback;
}

} // namespace

std::vector<std::string> loom::cuda::librarySearchPath() {
  std::vector<std::string> dirs, found;
  split(std::getenv("LOOM_CUDA_LIBRARY_PATH"), ':', dirs);
  for (const char *var : {"CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"})
    if (const char *root = std::getenv(var)) {
      dirs.push_back(std::string(root) + "/lib64");
      dirs.push_back(std::string(root) + "/lib");
    }
  dirs.push_back("/usr/local/cuda/lib64");
  dirs.push_back("/usr/local/cuda/targets/x86_64-linux/lib");
  // Python installations: virtual environments, conda, pyenv and the
  // system's, found from PATH and the usual prefixes; their nvidia-*
  // packages keep the libraries in site-packages/nvidia/<name>/lib
  // (CUDA 13 wheels: nvidia/cu13/lib).
  std::vector<std::string> prefixes;
  for (const char *var : {"VIRTUAL_ENV", "CONDA_PREFIX"})
    if (const char *p = std::getenv(var))
      prefixes.push_back(p);
  std::vector<std::string> path;
  split(std::getenv("PATH"), ':', path);
  for (const std::string &bin : path)
    prefixes.push_back(bin + "/..");
  for (const char *p : {"/usr/local", "/usr", "/opt/conda"})
    prefixes.push_back(p);
  if (const char *home = std::getenv("HOME")) {
    prefixes.push_back(std::string(home) + "/.local");
    globInto(std::string(home) + "/.pyenv/versions/*", prefixes);
  }
  globInto("/opt/*", prefixes);
  for (const std::string &prefix : prefixes)
    for (const char *site : {"site-packages", "dist-packages"}) {
      globInto(prefix + "/lib/python3*/" + site + "/nvidia/*/lib", found);
      globInto(prefix + "/lib/python3/" + site + "/nvidia/*/lib", found);
      globInto(prefix + "/lib/python3*/" + site + "/torch/lib", found);
    }
  dirs.insert(dirs.end(), found.begin(), found.end());
  std::vector<std::string> unique;
  std::set<std::string> seen;
  for (const std::string &d : dirs) {
    char real[4096];
    std::string key = ::realpath(d.c_str(), real) ? real : d;
    if (isDir(key) && seen.insert(key).second)
      unique.push_back(d);
  }
  return unique;
}

void *loom::cuda::openLibrary(const std::string &soname, std::string &where,
                              std::string &error, const char *symbol) {
  std::vector<std::string> dirs = librarySearchPath();
  // LOOM_CUDA_LIBRARY_PATH first, then the loader's path (LD_LIBRARY_PATH,
  // ld.so.cache), then the rest.
  std::vector<std::string> first;
  split(std::getenv("LOOM_CUDA_LIBRARY_PATH"), ':', first);
  auto tryFile = [&](const std::string &file) -> void * {
    if (!isFile(file))
      return nullptr;
    void *h = ::dlopen(file.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (h)
      where = file;
    return h;
  };
  for (const std::string &d : first)
    if (void *h = tryFile(d + "/" + soname))
      return h;
  if (void *h = ::dlopen(soname.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
    where = symbol ? loadedPath(h, symbol, soname) : soname;
    return h;
  }
  std::string loaderError = ::dlerror() ? ::dlerror() : "";
  for (const std::string &d : dirs)
    if (void *h = tryFile(d + "/" + soname))
      return h;
  error = soname + " was not found (searched LOOM_CUDA_LIBRARY_PATH, the "
                   "loader's path";
  for (const std::string &d : dirs)
    error += ", " + d;
  error += "); set LOOM_CUDA_LIBRARY_PATH to the folder that holds it";
  return nullptr;
}

const Driver *loom::cuda::driver(std::string &error) {
  static Driver loaded;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [] {
    // Only the driver's own library: the toolkit's stub (lib64/stubs)
    // answers every call with an error.
    void *lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!lib) {
      const char *why = ::dlerror();
      failure = std::string("no NVIDIA driver: libcuda.so.1 cannot be "
                            "loaded (") +
                (why ? why : "not found") +
                "); a GPU program needs a machine with an NVIDIA GPU and "
                "its driver";
      return;
    }
    loaded.path = loadedPath(lib, "cuInit", "libcuda.so.1");
#define LOOM_LOAD(name)                                                        \
  if (failure.empty()) {                                                       \
    loaded.name = reinterpret_cast<decltype(loaded.name)>(                     \
        ::dlsym(lib, LOOM_CUDA_XSTR(name)));                                   \
    if (!loaded.name)                                                          \
      failure = "the NVIDIA driver (" + loaded.path + ") has no " +            \
                LOOM_CUDA_XSTR(name) +                                         \
                ": it is older than the CUDA 13 this program was built with";  \
  }
    LOOM_CUDA_DRIVER_FUNCTIONS(LOOM_LOAD)
#undef LOOM_LOAD
  });
  if (!failure.empty()) {
    error = failure;
    return nullptr;
  }
  return &loaded;
}

const Blas *loom::cuda::blas(std::string &error) {
  static Blas loaded;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string soname =
        "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    void *lib = openLibrary(soname, loaded.path, failure,
                            LOOM_CUDA_XSTR(cublasCreate));
    if (!lib)
      return;
    auto load = [&](auto &fn, const char *name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
          ::dlsym(lib, name));
      if (!fn && failure.empty())
        failure = loaded.path + " has no " + name;
    };
    load(loaded.create, LOOM_CUDA_XSTR(cublasCreate));
    load(loaded.destroy, LOOM_CUDA_XSTR(cublasDestroy));
    load(loaded.setStream, LOOM_CUDA_XSTR(cublasSetStream));
    load(loaded.setWorkspace, LOOM_CUDA_XSTR(cublasSetWorkspace));
    load(loaded.setMathMode, "cublasSetMathMode");
    load(loaded.getVersion, LOOM_CUDA_XSTR(cublasGetVersion));
    load(loaded.statusString, "cublasGetStatusString");
    load(loaded.gemmStridedBatched, "cublasGemmStridedBatchedEx_64");
  });
  if (!failure.empty()) {
    error = failure;
    return nullptr;
  }
  return &loaded;
}

std::string loom::cuda::errorText(CUresult result) {
  std::string unused;
  const Driver *d = driver(unused);
  const char *name = nullptr, *text = nullptr;
  if (d) {
    d->cuGetErrorName(result, &name);
    d->cuGetErrorString(result, &text);
  }
  return std::string(name ? name : "CUDA error " + std::to_string(result)) +
         (text ? std::string(" (") + text + ")" : "");
}
