//===- main.cpp - loom-calibrate: what a collective costs inside a step ---===//
//
// Run on N ranks (loom-run --calibrate -np N starts it under mpirun), this
// measures what the planner's cpu-local:N link must price: the time an
// all-reduce adds to a step, with Loom's own runtime (its backend, its wait
// loop, its signature check), between stretches of single-core compute as
// a training step has them. Where ranks outnumber cores, a collective also
// waits until every rank of its group has been scheduled again; that is
// part of what it adds, and only a step-like measurement shows it.
//
// Per message size: the mean time of `work; all_reduce` minus the mean
// time of `work` alone on the same ranks (the compute share each rank
// really gets), over many repetitions, the median of three rounds. The
// smallest message's cost is the fixed cost per call; the largest's, per
// byte sent (as a ring all-reduce sends them), the bandwidth. Rank 0
// prints one JSON object.
//
//===----------------------------------------------------------------------===//

#include "loom/runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

volatile double sink;

/// A dependent chain of floating-point adds: the same time on any rank with
/// a core of its own, no memory traffic.
void spin(long iterations) {
  double x = sink;
  for (long i = 0; i < iterations; ++i)
    x = x * 0.999999 + 1.0;
  sink = x;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int fail(loom_status_t s, const char *what) {
  std::fprintf(stderr, "loom-calibrate: %s: %s\n", what,
               loom_status_message(s));
  loom_status_free(s);
  return 1;
}

/// The memory bandwidth each rank gets when all stream at once, as a
/// fraction of what one rank (`first`) alone gets: cores share the memory
/// system, so this may be less than their share of the cores.
loom_status_t measureStreamShare(loom_mesh_t mesh, bool first, bool quick,
                                 double &share) {
  const int32_t axes[1] = {0};
  const size_t n = 4 << 20; // 16 MiB per buffer, beyond the caches
  std::vector<float> a(n, 1.0f), b(n, 2.0f), y(n, 0.0f);
  auto stream = [&](int passes) {
    for (int p = 0; p < passes; ++p) {
      for (size_t i = 0; i < n; ++i)
        y[i] = a[i] + b[i];
      a[p % n] = y[(p * 4099) % n];
    }
    sink = sink + y[n / 2];
  };
  stream(1);
  const int passes = quick ? 4 : 12;
  double alone = 0;
  if (first) {
    double t0 = now();
    stream(passes);
    alone = now() - t0;
  }
  if (loom_status_t s = loom_barrier(mesh, axes, 1))
    return s;
  double t0 = now();
  stream(passes);
  if (loom_status_t s = loom_barrier(mesh, axes, 1))
    return s;
  share = alone / (now() - t0);
  return nullptr;
}

/// The median time of back-to-back 8-byte all-reduces (no compute
/// between): what an idle group's call costs, for the report.
loom_status_t measureIdleCall(loom_mesh_t mesh, int reps, double &idle) {
  const int32_t axes[1] = {0};
  float send[2] = {1, 2}, recv[2];
  std::vector<double> times;
  for (int r = 0; r < reps + 3; ++r) {
    double t0 = now();
    if (loom_status_t s = loom_all_reduce(mesh, axes, 1, LOOM_DTYPE_F32,
                                          LOOM_REDUCTION_SUM, send, recv, 2))
      return s;
    if (r >= 3)
      times.push_back(now() - t0);
  }
  idle = median(times);
  return nullptr;
}

} // namespace

/// A started all-reduce of 2 MiB (loom_all_reduce_start, as
/// loom-overlap-collectives has the program start gradient buckets) under
/// compute three times as long as the blocking one took (`blocking`): what
/// it still adds to that compute, as a share of the blocking cost, is the
/// lane's slowdown of the step (its polling and copies share the cores).
/// The median of `rounds`.
static loom_status_t measureOverlap(loom_mesh_t mesh, long work, double rate,
                                    double blocking, int reps, int rounds,
                                    double &slowdown) {
  const int32_t axes[1] = {0};
  std::vector<float> send((2 << 20) / 4, 1.0f), recv(send.size());
  long longWork = std::max(work, long(rate * 3 * blocking));
  auto run = [&](bool start, double &out) -> loom_status_t {
    for (int r = 0; r < reps + 3; ++r) {
      if (r == 3) {
        if (loom_status_t s = loom_barrier(mesh, axes, 1))
          return s;
        out = now();
      }
      loom_pending_t pending = nullptr;
      if (start)
        if (loom_status_t s = loom_all_reduce_start(
                mesh, axes, 1, LOOM_DTYPE_F32, LOOM_REDUCTION_SUM,
                send.data(), recv.data(), int64_t(send.size()), &pending))
          return s;
      spin(longWork);
      if (start)
        if (loom_status_t s = loom_collective_wait(pending))
          return s;
    }
    if (loom_status_t s = loom_barrier(mesh, axes, 1))
      return s;
    out = (now() - out) / reps;
    return nullptr;
  };
  std::vector<double> slowdowns;
  for (int round = 0; round < rounds; ++round) {
    double alone = 0, with = 0;
    if (loom_status_t s = run(false, alone))
      return s;
    if (loom_status_t s = run(true, with))
      return s;
    slowdowns.push_back(blocking > 0 ? std::max(0.0, with - alone) / blocking
                                     : 0.0);
  }
  slowdown = median(slowdowns);
  return nullptr;
}

int main(int argc, char **argv) {
  // --quick: fewer repetitions (tests); the numbers are noisier.
  bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  loom_runtime_options_t options;
  loom_runtime_options_init(&options);
  loom_runtime_t runtime = nullptr;
  if (loom_status_t s = loom_runtime_create(&options, &runtime))
    return fail(s, "cannot start the runtime");
  int rank = loom_runtime_rank(runtime), size = loom_runtime_size(runtime);
  int64_t sizes[1] = {size};
  const char *names[1] = {"all"};
  loom_mesh_t mesh = nullptr;
  if (loom_status_t s = loom_mesh_create(runtime, 1, sizes, names, &mesh))
    return fail(s, "cannot make the mesh");
  const int32_t axes[1] = {0};

  // Iterations of spin() per second of one core, measured by rank 0 alone
  // (the others wait in a barrier, which sleeps) and shared.
  double rate = 0;
  if (rank == 0) {
    long n = 1 << 16;
    double t = 0;
    do {
      n *= 2;
      double t0 = now();
      spin(n);
      t = now() - t0;
    } while (t < 0.02);
    rate = double(n) / t;
  }
  if (loom_status_t s = loom_all_reduce(mesh, axes, 1, LOOM_DTYPE_F64,
                                        LOOM_REDUCTION_MAX, &rate, &rate, 1))
    return fail(s, "all_reduce");
  // A stretch of compute as long as a small step's op sequence.
  const double workSeconds = 5e-4;
  long work = long(rate * workSeconds);

  double streamShare = 0;
  if (loom_status_t s = measureStreamShare(mesh, rank == 0, quick, streamShare))
    return fail(s, "barrier");

  std::vector<int64_t> bytes = {8, 256 << 10, 2 << 20};
  std::vector<float> send(bytes.back() / 4, 1.0f), recv(send.size());
  int reps = quick ? 20 : 200;
  // The time from a barrier to a barrier after `reps` repetitions on every
  // rank (the mean, not a median): where ranks outnumber cores, a rank runs
  // a few stretches in a row and then waits for a core, and only the whole
  // run shows the share each gets.
  auto measure = [&](int64_t b, bool collective, double &out) -> loom_status_t {
    for (int r = 0; r < reps + 3; ++r) {
      if (r == 3) {
        if (loom_status_t s = loom_barrier(mesh, axes, 1))
          return s;
        out = now();
      }
      spin(work);
      if (collective)
        if (loom_status_t s =
                loom_all_reduce(mesh, axes, 1, LOOM_DTYPE_F32,
                                LOOM_REDUCTION_SUM, send.data(), recv.data(),
                                b / 4 ? b / 4 : 1))
          return s;
    }
    if (loom_status_t s = loom_barrier(mesh, axes, 1))
      return s;
    out = (now() - out) / reps;
    return nullptr;
  };
  // Three rounds (one with --quick); each number the median of its rounds.
  int rounds = quick ? 1 : 3;
  std::vector<std::vector<double>> added(bytes.size());
  std::vector<double> alones;
  for (int round = 0; round < rounds; ++round) {
    double alone = 0;
    if (loom_status_t s = measure(0, false, alone))
      return fail(s, "work");
    alones.push_back(alone);
    for (size_t i = 0; i < bytes.size(); ++i) {
      double t = 0;
      if (loom_status_t s = measure(bytes[i], true, t))
        return fail(s, "all_reduce");
      added[i].push_back(std::max(0.0, t - alone));
    }
  }
  std::vector<double> cost;
  for (auto &a : added)
    cost.push_back(median(a));
  double idle = 0;
  if (loom_status_t s = measureIdleCall(mesh, reps, idle))
    return fail(s, "all_reduce");
  double slowdown = -1;
  if (loom_runtime_overlaps(runtime))
    if (loom_status_t s = measureOverlap(mesh, work, rate, cost.back(), reps,
                                         rounds, slowdown))
      return fail(s, "all_reduce_start");
  // added = overhead + sent / bandwidth, sent = 2 (n - 1) / n bytes (a ring
  // all-reduce): the smallest message gives the fixed cost, the largest
  // the bandwidth (the middle one is printed as a check of the line).
  double n = size;
  auto sent = [&](size_t i) { return 2 * (n - 1) / n * double(bytes[i]); };
  double overhead = cost.front();
  double slope = (cost.back() - cost.front()) / (sent(bytes.size() - 1) - sent(0));
  // A flat line (noise) means a bandwidth beyond what this measures.
  double bandwidth = slope > 0 ? 1.0 / slope : 1e12;
  double alone = median(alones);
  if (rank == 0) {
    std::printf("{\"ranks\": %d, \"cores\": %u, \"overhead\": %.6e, "
                "\"bandwidth\": %.6e, \"idle_call\": %.6e, "
                "\"compute_share\": %.4f, \"stream_share\": %.4f, "
                "\"overlap_slowdown\": %.4f, "
                "\"work\": %.6e, \"work_shared\": %.6e, \"added\": [",
                size, std::max(1u, std::thread::hardware_concurrency()),
                overhead, bandwidth, idle, workSeconds / alone, streamShare,
                slowdown, workSeconds, alone);
    for (size_t i = 0; i < bytes.size(); ++i)
      std::printf("%s[%lld, %.6e]", i ? ", " : "", (long long)bytes[i],
                  cost[i]);
    std::printf("]}\n");
    std::fflush(stdout);
  }
  loom_mesh_destroy(mesh);
  loom_runtime_destroy(runtime);
  return 0;
}
