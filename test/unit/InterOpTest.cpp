//===- InterOpTest.cpp - Layers to stages: the DP against brute force -----===//
//
// The inter-op DP (InterOp.h) sees numbers only, so it is checked here
// against trying every split: on hand-made layer costs whose best split is
// known, and on random ones (uneven layers, transfers, a stage-0 update,
// memory limits that rule splits out, 1F1B's in-flight counts).
//
//===----------------------------------------------------------------------===//

#include "loom/Planner/InterOp.h"

#include <gtest/gtest.h>

#include <random>

using namespace mlir::loom::planner;

namespace {

std::vector<int> oneFOneB(int p) {
  std::vector<int> inFlight;
  for (int s = 0; s < p; ++s)
    inFlight.push_back(p - s);
  return inFlight;
}

StageProblem uniform(int layers, int p, int m) {
  StageProblem pb;
  pb.layers.assign(layers, LayerCost{1, 2, 0, 0, 0, 0});
  pb.stages = p;
  pb.microBatches = m;
  pb.inFlight = oneFOneB(p);
  return pb;
}

TEST(InterOpTest, UniformLayersSplitEvenly) {
  StageSplit s = splitStages(uniform(8, 4, 8));
  ASSERT_TRUE(s.feasible);
  EXPECT_EQ(s.first, (std::vector<int>{0, 2, 4, 6}));
  // sum 8 * 3 + 7 periods of the slowest stage (6).
  EXPECT_DOUBLE_EQ(s.objective, 24 + 7 * 6);
}

TEST(InterOpTest, HeavyHeadGetsAShortLastStage) {
  StageProblem pb = uniform(6, 2, 16);
  pb.layers.back().fwd += 2; // a head as costly as two layers
  pb.layers.back().bwd += 4;
  StageSplit s = splitStages(pb);
  ASSERT_TRUE(s.feasible);
  // Stage times 12 | 12 beat the even 9 | 15.
  EXPECT_EQ(s.first, (std::vector<int>{0, 4}));
  EXPECT_DOUBLE_EQ(s.objective, 24 + 15 * 12);
}

TEST(InterOpTest, MemoryOfInFlightActivationsMovesLayersBack) {
  // 1F1B: stage 0 holds 2 micro-batches, stage 1 one. With 2 units of
  // activations per layer and a limit of 6, stage 0 can hold one layer.
  StageProblem pb = uniform(4, 2, 4);
  for (LayerCost &l : pb.layers)
    l.activations = 2;
  pb.memoryLimit = 6;
  StageSplit s = splitStages(pb);
  ASSERT_TRUE(s.feasible);
  EXPECT_EQ(s.first, (std::vector<int>{0, 1}));
  EXPECT_DOUBLE_EQ(s.memory[0], 4);
  EXPECT_DOUBLE_EQ(s.memory[1], 6);
  pb.memoryLimit = 5; // stage 1 cannot hold its 3 layers any more
  EXPECT_FALSE(splitStages(pb).feasible);
  EXPECT_FALSE(bruteForceSplit(pb).feasible);
}

TEST(InterOpTest, MoreStagesThanLayersIsNoProblem) {
  EXPECT_FALSE(splitStages(uniform(3, 4, 4)).feasible);
  EXPECT_FALSE(priceSplit(uniform(4, 2, 4), {0, 0}).feasible);
}

TEST(InterOpTest, EachHopOverItsOwnLink) {
  // 4 uniform layers, 2 bytes sent after each; 4 stages. The hop from
  // stage 1 to 2 crosses a slow link (1 s per byte), the others are free:
  // stage 1's time is 3 + 2 * 2 (its send, forward and backward).
  StageProblem pb = uniform(4, 4, 8);
  for (LayerCost &l : pb.layers) {
    l.transferBytes = 2;
    l.transferMessages = 1;
  }
  pb.hopFixed = {0, 0, 0};
  pb.hopPerByte = {0, 1, 0};
  StageSplit s = priceSplit(pb, {0, 1, 2, 3});
  ASSERT_TRUE(s.feasible);
  EXPECT_EQ(s.stageTime, (std::vector<double>{3, 7, 3, 3}));
  // Without hops, every layer's own transfer (0 here).
  pb.hopFixed.clear();
  pb.hopPerByte.clear();
  EXPECT_EQ(priceSplit(pb, {0, 1, 2, 3}).stageTime,
            (std::vector<double>{3, 3, 3, 3}));
}

TEST(InterOpTest, EachValueSentIsAMessage) {
  // Two values cross each boundary (one message each, as the pipeline
  // sends them: stages::BoundaryTransfer): a hop with a fixed cost of 1 per
  // message and 0.5 per byte costs 2 * 1 + 4 * 0.5 = 4 each way.
  StageProblem pb = uniform(2, 2, 4);
  pb.layers[0].transferBytes = 4;
  pb.layers[0].transferMessages = 2;
  pb.hopFixed = {1};
  pb.hopPerByte = {0.5};
  EXPECT_DOUBLE_EQ(pb.transfer(0, 0), 4);
  StageSplit s = priceSplit(pb, {0, 1});
  ASSERT_TRUE(s.feasible);
  EXPECT_EQ(s.stageTime, (std::vector<double>{3 + 2 * 4, 3}));
}

TEST(InterOpTest, TheReceivingStageHoldsWhatItReceives) {
  // 1F1B on 2 stages (2 and 1 micro-batches in flight), activations 2 per
  // layer, 3 bytes sent after each layer: stage 1 holds its layer's 2 and
  // the 3 it received, per micro-batch in flight.
  StageProblem pb = uniform(2, 2, 4);
  for (LayerCost &l : pb.layers) {
    l.activations = 2;
    l.transferBytes = 3;
    l.transferMessages = 1;
  }
  StageSplit s = priceSplit(pb, {0, 1});
  ASSERT_TRUE(s.feasible);
  EXPECT_DOUBLE_EQ(s.memory[0], 2 * 2);
  EXPECT_DOUBLE_EQ(s.memory[1], 1 * (2 + 3));
  pb.memoryLimit = 4.5; // stage 1's 5 no longer fits
  EXPECT_FALSE(splitStages(pb).feasible);
}

TEST(InterOpTest, RandomProblemsWithHopsMatchBruteForce) {
  std::mt19937 rng(20261128);
  std::uniform_real_distribution<double> u(0.1, 3.0);
  for (int trial = 0; trial < 200; ++trial) {
    int layers = 2 + rng() % 9;
    int p = 2 + rng() % std::min(layers - 1, 4);
    StageProblem pb;
    pb.stages = p;
    pb.microBatches = 1 + rng() % 12;
    pb.inFlight = oneFOneB(p);
    for (int k = 0; k < layers; ++k) {
      LayerCost l{u(rng), 2 * u(rng), 0, u(rng), u(rng), 0};
      l.transferBytes = u(rng);
      l.transferMessages = 1 + rng() % 3;
      pb.layers.push_back(l);
    }
    for (int h = 0; h + 1 < p; ++h) {
      pb.hopFixed.push_back(rng() % 2 ? 0.0 : u(rng));
      pb.hopPerByte.push_back(rng() % 2 ? 0.01 : u(rng));
    }
    StageSplit dp = splitStages(pb), bf = bruteForceSplit(pb);
    ASSERT_TRUE(dp.feasible && bf.feasible) << "trial " << trial;
    EXPECT_NEAR(dp.objective, bf.objective, 1e-9 * bf.objective)
        << "trial " << trial;
  }
}

TEST(InterOpTest, RandomProblemsMatchBruteForce) {
  std::mt19937 rng(20261123);
  std::uniform_real_distribution<double> u(0.1, 3.0);
  int feasible = 0, infeasible = 0;
  for (int trial = 0; trial < 400; ++trial) {
    int layers = 2 + rng() % 9;
    int p = 1 + rng() % std::min(layers, 5);
    int m = 1 + rng() % 12;
    StageProblem pb;
    pb.stages = p;
    pb.microBatches = m;
    pb.inFlight = oneFOneB(p);
    double totalMem = 0;
    for (int k = 0; k < layers; ++k) {
      LayerCost l{u(rng), 2 * u(rng), rng() % 3 ? 0.0 : u(rng),
                  u(rng),  u(rng),     rng() % 2 ? 0.0 : 0.3 * u(rng)};
      totalMem += l.weights + p * l.activations;
      pb.layers.push_back(l);
    }
    // Limits from generous to impossible.
    if (trial % 3)
      pb.memoryLimit = totalMem / p * (0.4 + 0.4 * (trial % 5));
    StageSplit dp = splitStages(pb), bf = bruteForceSplit(pb);
    ASSERT_EQ(dp.feasible, bf.feasible) << "trial " << trial;
    if (!bf.feasible) {
      ++infeasible;
      continue;
    }
    ++feasible;
    EXPECT_NEAR(dp.objective, bf.objective, 1e-9 * bf.objective)
        << "trial " << trial << ": " << layers << " layers, " << p
        << " stages, " << m << " micro-batches";
    // The DP's split is priced as it claims.
    EXPECT_NEAR(priceSplit(pb, dp.first).objective, dp.objective, 1e-12);
  }
  // Both kinds of case were drawn.
  EXPECT_GT(feasible, 100);
  EXPECT_GT(infeasible, 20);
}

} // namespace
