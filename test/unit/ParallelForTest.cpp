//===- ParallelForTest.cpp - loom_rt_parallel_for's chunks and threads ----===//
//
// The runtime's loop dispatcher (runtime/src/parallel.cpp): every
// iteration runs exactly once in contiguous chunks, on more than one
// thread when the loop is large and threads are configured, alone when it
// is small, when called from inside a chunk, or while another loop holds
// the pool (ranks run as threads); and callers from several threads at once
// all get their loops done.
//
//===----------------------------------------------------------------------===//

#include "loom/kernels.h"

#include "gtest/gtest.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

/// Sets LOOM_NUM_THREADS for the life of the object.
struct Threads {
  explicit Threads(int n) {
    const char *old = std::getenv("LOOM_NUM_THREADS");
    saved = old ? old : "";
    had = old != nullptr;
    setenv("LOOM_NUM_THREADS", std::to_string(n).c_str(), 1);
  }
  ~Threads() {
    if (had)
      setenv("LOOM_NUM_THREADS", saved.c_str(), 1);
    else
      unsetenv("LOOM_NUM_THREADS");
  }
  std::string saved;
  bool had;
};

struct Record {
  std::vector<std::atomic<int>> hits;
  std::mutex mutex;
  std::set<std::thread::id> threads;
  std::vector<std::pair<int64_t, int64_t>> chunks;
  explicit Record(int64_t n) : hits(n) {}
};

void countChunk(void *ctx, int64_t lo, int64_t hi) {
  auto *r = static_cast<Record *>(ctx);
  for (int64_t i = lo; i < hi; ++i)
    r->hits[i].fetch_add(1);
  std::lock_guard<std::mutex> lock(r->mutex);
  r->threads.insert(std::this_thread::get_id());
  r->chunks.push_back({lo, hi});
}

void expectEachOnce(Record &r, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(r.hits[i].load(), 1) << "iteration " << i << " of " << n;
  int64_t covered = 0;
  for (auto [lo, hi] : r.chunks) {
    EXPECT_LT(lo, hi);
    covered += hi - lo;
  }
  EXPECT_EQ(covered, n);
}

TEST(ParallelFor, EveryIterationOnceForAnyCountAndThreads) {
  for (int threads : {1, 2, 3, 8}) {
    Threads t(threads);
    EXPECT_EQ(loom_rt_parallel_threads(), threads);
    for (int64_t n : {1, 2, 7, 63, 64, 1000, 100003}) {
      Record r(n);
      loom_rt_parallel_for(countChunk, &r, n, /*work=*/1 << 20);
      expectEachOnce(r, n);
      if (threads == 1 || n == 1)
        EXPECT_EQ(r.chunks.size(), 1u) << n << " iterations";
      else
        EXPECT_GT(r.chunks.size(), 1u) << n << " iterations, " << threads
                                       << " threads";
    }
  }
}

TEST(ParallelFor, LargeLoopsUseSeveralThreads) {
  Threads t(2);
  // Work long enough per chunk that the helper thread surely takes some,
  // even on a loaded machine: tried a few times.
  bool several = false;
  for (int attempt = 0; attempt < 20 && !several; ++attempt) {
    Record r(64);
    loom_rt_parallel_for(
        [](void *ctx, int64_t lo, int64_t hi) {
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
          countChunk(ctx, lo, hi);
        },
        &r, 64, /*work=*/1 << 20);
    expectEachOnce(r, 64);
    several = r.threads.size() > 1;
  }
  EXPECT_TRUE(several) << "no chunk ran on a second thread";
}

TEST(ParallelFor, SmallLoopsAndEmptyOnesRunInPlace) {
  Threads t(4);
  Record r(100);
  loom_rt_parallel_for(countChunk, &r, 100, /*work=*/1);
  expectEachOnce(r, 100);
  EXPECT_EQ(r.chunks.size(), 1u);
  EXPECT_EQ(*r.threads.begin(), std::this_thread::get_id());
  Record none(1);
  loom_rt_parallel_for(countChunk, &none, 0, 1 << 20);
  loom_rt_parallel_for(countChunk, &none, -5, 1 << 20);
  EXPECT_TRUE(none.chunks.empty());
}

struct Nested {
  Record inner{1000};
  std::atomic<int> outerChunks{0};
};

TEST(ParallelFor, ACallFromInsideAChunkRunsAlone) {
  Threads t(2);
  Nested nested;
  Record outer(2);
  struct Ctx {
    Nested *nested;
    Record *outer;
  } ctx{&nested, &outer};
  loom_rt_parallel_for(
      [](void *p, int64_t lo, int64_t hi) {
        auto *c = static_cast<Ctx *>(p);
        countChunk(c->outer, lo, hi);
        for (int64_t i = lo; i < hi; ++i) {
          Record local(1000);
          loom_rt_parallel_for(countChunk, &local, 1000, 1 << 20);
          expectEachOnce(local, 1000);
          EXPECT_EQ(local.chunks.size(), 1u);
        }
      },
      &ctx, 2, 1 << 20);
  expectEachOnce(outer, 2);
}

TEST(ParallelFor, CallersOnSeveralThreadsAllFinish) {
  Threads t(2);
  std::vector<std::thread> callers;
  std::atomic<int> failures{0};
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&failures] {
      for (int rep = 0; rep < 200; ++rep) {
        int64_t n = 257 + rep;
        Record r(n);
        loom_rt_parallel_for(countChunk, &r, n, 1 << 10);
        for (int64_t i = 0; i < n; ++i)
          if (r.hits[i].load() != 1)
            failures.fetch_add(1);
      }
    });
  for (std::thread &c : callers)
    c.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(RankThreads, SeveralRanksOnANodeShareItsCores) {
  // mpirun -np 4 on 16 CPUs: 4 threads each; 4 ranks on 2 CPUs: 1 each.
  const char *ompi[] = {"OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=8",
                        "OMPI_COMM_WORLD_LOCAL_RANK=1",
                        "OMPI_COMM_WORLD_LOCAL_SIZE=4", nullptr};
  EXPECT_EQ(loom_rt_rank_threads(ompi, 16), 4);
  EXPECT_EQ(loom_rt_rank_threads(ompi, 2), 1);
  const char *torchrun[] = {"RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=0",
                            "LOCAL_WORLD_SIZE=2", nullptr};
  EXPECT_EQ(loom_rt_rank_threads(torchrun, 2), 1);
  EXPECT_EQ(loom_rt_rank_threads(torchrun, 7), 3);
}

TEST(RankThreads, OneRankUnknownCountsAndTheUsersChoiceAreLeftAlone) {
  const char *single[] = {"HOME=/root", nullptr};
  EXPECT_EQ(loom_rt_rank_threads(single, 16), 0);
  const char *one[] = {"OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=4",
                       "OMPI_COMM_WORLD_LOCAL_SIZE=1", nullptr};
  EXPECT_EQ(loom_rt_rank_threads(one, 16), 0);
  // Slurm's "2(x3)" is not a plain count.
  const char *slurm[] = {"SLURM_PROCID=0", "SLURM_NTASKS=6",
                         "SLURM_NTASKS_PER_NODE=2(x3)", nullptr};
  EXPECT_EQ(loom_rt_rank_threads(slurm, 16), 0);
  for (const char *chosen :
       {"OPENBLAS_NUM_THREADS=8", "OMP_NUM_THREADS=2", "LOOM_NUM_THREADS=3",
        "GOTO_NUM_THREADS=1"}) {
    const char *env[] = {"RANK=0", "WORLD_SIZE=2", "LOCAL_WORLD_SIZE=2",
                         chosen, nullptr};
    EXPECT_EQ(loom_rt_rank_threads(env, 16), 0) << chosen;
  }
  // OPENBLAS_NUM_THREADSX is not OPENBLAS_NUM_THREADS.
  const char *other[] = {"RANK=0", "WORLD_SIZE=2", "LOCAL_WORLD_SIZE=2",
                         "OPENBLAS_NUM_THREADSX=8", nullptr};
  EXPECT_EQ(loom_rt_rank_threads(other, 16), 8);
}

} // namespace
