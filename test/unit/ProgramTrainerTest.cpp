//===- ProgramTrainerTest.cpp - What the trainer promises its device ------===//
//
// A GPU replays a recorded step (a CUDA graph) when the trainer calls it on
// buffers it has seen (Device::runStep): that is only right if every call
// reads nothing but those buffers, and only pays off if the buffers repeat.
// The trainer swaps parameters and results after each step, so the calls
// alternate between two sets of addresses; the data's buffer stays.
//
//===----------------------------------------------------------------------===//

#include "loom/device.h"
#include "loom/train.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace loom::program;

namespace {

/// The host, recording how the trainer calls the step.
class RecordingDevice final : public Device {
public:
  std::unique_ptr<Device> host = makeHostDevice();
  std::vector<std::vector<const void *>> calls;
  std::vector<bool> replayable;

  std::string name() const override { return "recording"; }
  bool isHost() const override { return true; }
  bool allocate(size_t bytes, void **out, std::string &error) override {
    return host->allocate(bytes, out, error);
  }
  void release(void *p) override { host->release(p); }
  bool upload(void *dst, const void *src, size_t bytes,
              std::string &error) override {
    return host->upload(dst, src, bytes, error);
  }
  bool download(void *dst, const void *src, size_t bytes,
                std::string &error) override {
    return host->download(dst, src, bytes, error);
  }
  bool synchronize(std::string &error) override {
    return host->synchronize(error);
  }
  bool runStep(const std::vector<const void *> &buffers, bool canReplay,
               const std::function<void()> &call,
               std::string &error) override {
    calls.push_back(buffers);
    replayable.push_back(canReplay);
    return Device::runStep(buffers, canReplay, call, error);
  }
};

/// A memref descriptor's aligned pointer (the packed ABI: each argument a
/// pointer to a pointer to {allocated, aligned, offset, sizes, strides}).
float *data(void **packed, int i) {
  auto *d = *static_cast<int64_t **>(packed[i]);
  return reinterpret_cast<float *>(d[1]) + d[2];
}

/// w' = w - 0.5 x, loss = sum(w x), for x, w of 4 elements.
void step(void **packed) {
  float *x = data(packed, 0), *w = data(packed, 1), *loss = data(packed, 2),
        *next = data(packed, 3);
  *loss = 0;
  for (int i = 0; i < 4; ++i) {
    *loss += w[i] * x[i];
    next[i] = w[i] - 0.5f * x[i];
  }
}

TEST(ProgramTrainer, StepCallsAlternateBetweenTwoSetsOfBuffers) {
  Manifest m;
  Value x, w, loss, next;
  x.name = "x";
  x.shape = x.global = {4};
  w.name = w.parameter = "w";
  w.trainable = true;
  w.shape = w.global = {4};
  float one = 1.0f;
  w.splat.assign(reinterpret_cast<const char *>(&one), 4);
  loss.name = "loss";
  next.name = "w.next";
  next.parameter = "w";
  next.shape = next.global = {4};
  m.arguments = {x, w};
  m.results = {loss, next};

  RecordingDevice device;
  TrainOptions o;
  o.device = &device;
  o.steps = 5;
  o.onNote = [](const std::string &) {};
  TrainResult result;
  std::string error;
  ASSERT_TRUE(train(m, step, o, result, error)) << error;
  ASSERT_EQ(result.losses.size(), 5u);
  ASSERT_EQ(device.calls.size(), 5u);
  for (size_t s = 0; s < 5; ++s) {
    EXPECT_TRUE(device.replayable[s]) << "one rank: nothing to talk to";
    ASSERT_EQ(device.calls[s].size(), 4u);
    // The data's buffer stays; parameters and results swap.
    EXPECT_EQ(device.calls[s][0], device.calls[0][0]);
    EXPECT_EQ(device.calls[s], device.calls[s % 2]) << "step " << s;
  }
  EXPECT_NE(device.calls[0], device.calls[1]);
  EXPECT_EQ(device.calls[0][1], device.calls[1][3]);
  EXPECT_EQ(device.calls[0][3], device.calls[1][1]);
}

} // namespace
