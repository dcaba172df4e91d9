//===- parallel.cpp - The threads compiled loops run on --------------------===//
//
// loom_rt_parallel_for: the outermost parallel loops of a CPU step
// (loom-parallelize-loops) cut into contiguous chunks, a few per thread,
// which the calling thread and the pool's threads claim in turn (a thread
// the OS does not schedule leaves its chunks to the others). As many
// threads as OpenBLAS uses for the products (OPENBLAS_NUM_THREADS, or
// LOOM_NUM_THREADS if set), so that a rank's elementwise work,
// normalizations and optimizer update use the cores its GEMMs use; several
// ranks on a node share its cores (shareCoresAmongRanks).
//
// Why not OpenMP or MLIR's async runtime: Debian packages no
// libmlir_async_runtime, and LLVM's OpenMP runtime (libomp, what MLIR's omp
// dialect calls) would be a second OpenMP runtime next to oneDNN's libgomp,
// each with its own spinning threads. This pool's threads wait briefly,
// yielding the core (OpenBLAS's threads, idle between products, spin the
// same way), then sleep.
//
// One loop runs at a time: a call that finds the pool busy (ranks run as
// threads of one process) or comes from inside a chunk runs alone. The
// chunks of a loop write disjoint elements with the same code, so results
// do not depend on the number of threads.
//
//===----------------------------------------------------------------------===//

#include "loom/kernels.h"
#include "loom/runtime.h"

#include "env.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <sched.h>
#include <thread>
#include <unistd.h>
#include <vector>

extern "C" int openblas_get_num_threads(void);
extern "C" void openblas_set_num_threads(int);

namespace {

using Body = void (*)(void *, int64_t, int64_t);

/// Work (iterations times operations per iteration) below which a loop runs
/// on the calling thread alone (waking a thread costs a few microseconds);
/// a chunk gets at least half of it. LOOM_PARALLEL_MIN_WORK replaces it:
/// 1 cuts every loop into as many chunks as the threads take (tests).
constexpr int64_t kParallelWork = int64_t(1) << 16;
constexpr int kMaxThreads = 256;
constexpr int kChunksPerThread = 4;
/// How long an idle worker polls for the next loop before it sleeps (the
/// loops of a step follow each other within microseconds).
constexpr auto kSpin = std::chrono::microseconds(200);

thread_local bool insideChunk = false;

/// The CPUs this process may run on.
int allowedCpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0)
    return 1;
  return std::max(1, CPU_COUNT(&set));
}

int64_t parallelWork() {
  static const int64_t work = [] {
    const char *env = std::getenv("LOOM_PARALLEL_MIN_WORK");
    long long n = env ? std::atoll(env) : 0;
    return n >= 1 ? int64_t(n) : kParallelWork;
  }();
  return work;
}

int configuredThreads() {
  if (const char *env = std::getenv("LOOM_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n >= 1)
      return std::min(n, kMaxThreads);
  }
  static const int cpus = allowedCpus();
  return std::clamp(std::min(openblas_get_num_threads(), cpus), 1,
                    kMaxThreads);
}

class Pool {
public:
  /// Runs `fn` over [0, n) in `chunks` chunks, with up to `helpers` of the
  /// pool's threads; this thread takes chunks too, and every chunk no
  /// helper has started (a helper not scheduled on an oversubscribed
  /// machine), so a loop never waits for a thread that does not run.
  void run(Body fn, void *ctx, int64_t n, int chunks, int helpers) {
    grow(helpers);
    this->fn = fn;
    this->ctx = ctx;
    this->n = n;
    done.store(0);
    generation = (generation + 1) & 0xffffffff;
    claim.store(generation << 32 | uint64_t(chunks) << 16);
    if (sleeping.load() > 0) {
      std::lock_guard<std::mutex> lock(sleepMutex);
      wake.notify_all();
    }
    int ran = runChunks(generation);
    for (int spins = 0; done.load(std::memory_order_acquire) + ran < chunks;
         ++spins)
      relax(spins);
  }

  std::mutex busy;

private:
  static void relax(int spins) {
    if (spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    } else {
      sched_yield();
    }
  }

  /// Claims and runs chunks of job `gen` until none is left; how many.
  /// A claim succeeds only while the job is posted and has chunks left,
  /// and the job's fields stay put until every claimed chunk is done.
  int runChunks(uint64_t gen) {
    int ran = 0;
    for (uint64_t word = claim.load();;) {
      uint64_t next = word & 0xffff, count = (word >> 16) & 0xffff;
      if (word >> 32 != gen || next >= count)
        return ran;
      if (!claim.compare_exchange_weak(word, word + 1))
        continue;
      int64_t lo = n * int64_t(next) / int64_t(count);
      int64_t hi = n * int64_t(next + 1) / int64_t(count);
      insideChunk = true;
      fn(ctx, lo, hi);
      insideChunk = false;
      ++ran;
      word = claim.load();
    }
  }

  void grow(int workers) {
    while (static_cast<int>(threads.size()) < workers) {
      // The thread starts from the job before the one about to be posted.
      uint64_t seen = claim.load() >> 32;
      threads.emplace_back([this, seen] { work(seen); });
      threads.back().detach();
    }
  }

  void work(uint64_t seen) {
    for (;;) {
      seen = await(seen);
      if (int ran = runChunks(seen))
        done.fetch_add(ran, std::memory_order_release);
    }
  }

  /// The generation of the next job after `seen`: polls for kSpin, then
  /// sleeps.
  uint64_t await(uint64_t seen) {
    auto start = std::chrono::steady_clock::now();
    for (int spins = 0;; ++spins) {
      uint64_t now = claim.load() >> 32;
      if (now != seen)
        return now;
      relax(spins);
      if ((spins & 63) == 63 && std::chrono::steady_clock::now() - start > kSpin)
        break;
    }
    std::unique_lock<std::mutex> lock(sleepMutex);
    sleeping.fetch_add(1);
    wake.wait(lock, [&] { return claim.load() >> 32 != seen; });
    sleeping.fetch_sub(1);
    return claim.load() >> 32;
  }

  // The current loop; written by run() only while no chunk is claimed.
  Body fn = nullptr;
  void *ctx = nullptr;
  int64_t n = 0;
  uint64_t generation = 0;

  /// The posted job: its generation (32 bits), chunk count (16) and next
  /// unclaimed chunk (16).
  std::atomic<uint64_t> claim{0};
  /// Chunks the pool's threads have finished.
  std::atomic<int> done{0};
  std::atomic<int> sleeping{0};
  std::mutex sleepMutex;
  std::condition_variable wake;
  std::vector<std::thread> threads;
};

Pool &pool() {
  // Never destroyed: its threads live until the process ends.
  static Pool *p = new Pool;
  return *p;
}

} // namespace

extern "C" void loom_rt_parallel_for(void (*fn)(void *, int64_t, int64_t),
                                     void *ctx, int64_t n, int64_t work) {
  if (n <= 0)
    return;
  int64_t total = work > 0 && n > INT64_MAX / work ? INT64_MAX : n * work;
  int64_t minWork = parallelWork();
  int threads = insideChunk || total < minWork ? 1 : configuredThreads();
  // A few chunks per thread, so that a thread that runs late leaves its
  // share to the others.
  int64_t chunks = std::min<int64_t>(
      {int64_t(threads) * kChunksPerThread, n,
       std::max<int64_t>(1, total / std::max<int64_t>(1, minWork / 2))});
  if (threads <= 1 || chunks <= 1) {
    fn(ctx, 0, n);
    return;
  }
  Pool &p = pool();
  std::unique_lock<std::mutex> lock(p.busy, std::try_to_lock);
  if (!lock.owns_lock()) {
    fn(ctx, 0, n);
    return;
  }
  p.run(fn, ctx, n, static_cast<int>(chunks),
        std::min<int>(threads, static_cast<int>(chunks)) - 1);
}

extern "C" int loom_rt_parallel_threads(void) { return configuredThreads(); }

extern "C" int loom_rt_rank_threads(const char *const *env, int cpus) {
  for (const char *name : {"LOOM_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                           "GOTO_NUM_THREADS", "OMP_NUM_THREADS"})
    if (loom::rt::lookup(env, name))
      return 0;
  loom_launch_info_t info;
  if (loom_status_t status = loom_launch_info_from_environ(env, &info)) {
    loom_status_free(status);
    return 0;
  }
  if (info.local_size <= 1)
    return 0;
  return std::max(1, cpus / info.local_size);
}

namespace {
/// Several ranks on one node share its cores: unless the user chose a
/// thread count, each rank's OpenBLAS (and so its loops and oneDNN
/// kernels) uses its share, as torchrun sets OMP_NUM_THREADS=1 for
/// several processes per node, instead of all of them each.
__attribute__((constructor)) void shareCoresAmongRanks() {
  if (int threads = loom_rt_rank_threads(environ, allowedCpus()))
    openblas_set_num_threads(threads);
}
} // namespace
