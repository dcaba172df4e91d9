//===- lane.h - Collectives that run while the program computes -----------===//
//
// Internal to the runtime. A rank's communication lane is one thread that
// runs the collectives the program started without blocking
// (loom_*_start), one after another in the order they were started, as
// PyTorch DDP's reducer runs Gloo work off the training thread and NCCL
// runs on a communication stream. Every rank starts the same collectives
// in the same order (the compiled program decides where), so the lane keeps
// the order MPI and Gloo need. A call that uses the backend on the
// program's thread (a blocking collective, a point-to-point transfer, a
// barrier) first drains the lane, so the backend is never used by two
// threads at once (MPI_THREAD_SERIALIZED is enough).
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_SRC_LANE_H
#define LOOM_RUNTIME_SRC_LANE_H

#include "loom/runtime.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace loom::rt {

class CommLane {
public:
  struct Task {
    std::function<loom_status_t()> run;
    loom_status_t status = nullptr;
    bool done = false;
  };

  CommLane() = default;
  CommLane(const CommLane &) = delete;
  CommLane &operator=(const CommLane &) = delete;
  /// Runs what is queued, then joins the thread.
  ~CommLane();

  /// Queues `run` (the thread starts with the first task).
  std::shared_ptr<Task> post(std::function<loom_status_t()> run);
  /// Blocks until `task` ran; returns its status (the caller owns it).
  loom_status_t wait(Task &task);
  /// Blocks until every queued task ran (their statuses stay with them).
  void drain();
  /// Whether the calling thread is a lane's and nobody waits for it: a
  /// backend polling for completion then yields the core to the program
  /// instead of spinning on it.
  static bool shouldYield();
  /// Whether the calling thread is a lane's.
  static bool onLane();

private:
  void loop();

  std::mutex mutex;
  std::condition_variable queued, finished;
  std::deque<std::shared_ptr<Task>> queue;
  size_t outstanding = 0;
  bool stopping = false;
  std::atomic<int> waiters{0};
  std::thread thread;
};

} // namespace loom::rt

#endif // LOOM_RUNTIME_SRC_LANE_H
