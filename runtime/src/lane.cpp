//===- lane.cpp - Collectives that run while the program computes ---------===//

#include "lane.h"

using namespace loom::rt;

namespace {
/// The lane whose thread this is (null on other threads).
thread_local CommLane *tCurrentLane = nullptr;
} // namespace

CommLane::~CommLane() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  queued.notify_all();
  if (thread.joinable())
    thread.join();
}

std::shared_ptr<CommLane::Task>
CommLane::post(std::function<loom_status_t()> run) {
  auto task = std::make_shared<Task>();
  task->run = std::move(run);
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!thread.joinable())
      thread = std::thread([this] { loop(); });
    queue.push_back(task);
    ++outstanding;
  }
  queued.notify_one();
  return task;
}

loom_status_t CommLane::wait(Task &task) {
  std::unique_lock<std::mutex> lock(mutex);
  ++waiters;
  finished.wait(lock, [&] { return task.done; });
  --waiters;
  loom_status_t s = task.status;
  task.status = nullptr;
  return s;
}

void CommLane::drain() {
  std::unique_lock<std::mutex> lock(mutex);
  if (!outstanding)
    return;
  ++waiters;
  finished.wait(lock, [&] { return outstanding == 0; });
  --waiters;
}

bool CommLane::shouldYield() {
  return tCurrentLane &&
         tCurrentLane->waiters.load(std::memory_order_relaxed) == 0;
}

bool CommLane::onLane() { return tCurrentLane != nullptr; }

void CommLane::loop() {
  tCurrentLane = this;
  for (;;) {
    std::shared_ptr<Task> task;
    {
      std::unique_lock<std::mutex> lock(mutex);
      queued.wait(lock, [&] { return stopping || !queue.empty(); });
      if (queue.empty())
        return;
      task = std::move(queue.front());
      queue.pop_front();
    }
    loom_status_t s = task->run();
    {
      std::lock_guard<std::mutex> lock(mutex);
      task->status = s;
      task->done = true;
      --outstanding;
    }
    finished.notify_all();
  }
}
