//===- ProgramManifestTest.cpp - Rank-program manifests and .npy headers --===//

#include "loom/program.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace loom::program;

namespace {

TEST(ProgramManifest, RoundTripsOddNamesShardingsAndInitialValues) {
  Manifest m;
  m.microBatches = 2;
  m.axisNames = {"dp", "tp x"};
  m.axisSizes = {2, 4};
  Value x;
  x.name = "input 1=%a";
  x.dtype = LOOM_DTYPE_I64;
  x.indexBound = 50257;
  x.shape = {2, 4, 8};
  x.global = {2, 8, 8};
  x.sharding.dims = {{}, {0}, {}};
  Value w;
  w.name = w.parameter = "h.0/attn weight";
  w.trainable = true;
  w.dtype = LOOM_DTYPE_BF16;
  w.shape = {16, 2};
  w.global = {16, 8};
  w.sharding.dims = {{}, {1}};
  w.sharding.partial = {0};
  w.sharding.partialKind = LOOM_REDUCTION_MAX;
  w.initFile = "params.bin";
  w.initOffset = 4096;
  Value step;
  step.name = step.parameter = "optimizer.step";
  step.dtype = LOOM_DTYPE_I64;
  step.splat = std::string("\x01\x00\x00\x00\x00\x00\x00\xff", 8);
  Value loss;
  loss.name = "loss";
  m.arguments = {x, w, step};
  m.results = {loss};

  Manifest back;
  std::string error;
  ASSERT_TRUE(parseManifest(printManifest(m), back, error)) << error;
  EXPECT_EQ(back.microBatches, 2);
  EXPECT_EQ(back.axisNames, m.axisNames);
  EXPECT_EQ(back.axisSizes, m.axisSizes);
  ASSERT_EQ(back.arguments.size(), 3u);
  EXPECT_EQ(back.arguments[0].name, "input 1=%a");
  EXPECT_EQ(back.arguments[0].indexBound, 50257);
  EXPECT_EQ(back.arguments[0].global, (std::vector<int64_t>{2, 8, 8}));
  EXPECT_EQ(back.arguments[0].sharding.dims,
            (std::vector<std::vector<int32_t>>{{}, {0}, {}}));
  const Value &bw = back.arguments[1];
  EXPECT_EQ(bw.parameter, "h.0/attn weight");
  EXPECT_TRUE(bw.trainable);
  EXPECT_EQ(bw.dtype, LOOM_DTYPE_BF16);
  EXPECT_EQ(bw.sharding.partial, (std::vector<int32_t>{0}));
  EXPECT_EQ(bw.sharding.partialKind, LOOM_REDUCTION_MAX);
  EXPECT_EQ(bw.initFile, "params.bin");
  EXPECT_EQ(bw.initOffset, 4096);
  EXPECT_EQ(back.arguments[2].splat, step.splat);
  EXPECT_TRUE(back.arguments[2].shape.empty());
  ASSERT_EQ(back.results.size(), 1u);
  EXPECT_EQ(back.results[0].name, "loss");
}

TEST(ProgramManifest, RoundTripsAPipeline) {
  Manifest m;
  m.microBatches = 2;
  m.axisNames = {"pp", "dp"};
  m.axisSizes = {2, 2};
  m.pipelineRanks = 2;
  m.virtualStages = 1;
  m.actions = {{"F(0,0)", "SEND_F(0,0)", "U(0)"}, {"RECV_F(1,0)", "F(1,0)"}};
  StageProgram fwd;
  fwd.stage = 1;
  fwd.kind = "forward";
  fwd.function = "stage1_forward";
  Value in;
  in.name = "act";
  in.shape = {4, 8};
  in.global = {4, 8};
  in.port = "recv:0";
  Value loss;
  loss.name = "loss";
  fwd.arguments = {in};
  fwd.results = {loss};
  m.programs = {fwd};
  std::string text = printManifest(m), error;
  EXPECT_EQ(text.find("function "), std::string::npos) << text;
  Manifest back;
  ASSERT_TRUE(parseManifest(text, back, error)) << error << "\n" << text;
  ASSERT_TRUE(back.pipelined());
  EXPECT_EQ(back.pipelineRanks, 2);
  EXPECT_EQ(back.actions, m.actions);
  ASSERT_EQ(back.programs.size(), 1u);
  EXPECT_EQ(back.programs[0].stage, 1);
  EXPECT_EQ(back.programs[0].kind, "forward");
  EXPECT_EQ(back.programs[0].function, "stage1_forward");
  ASSERT_EQ(back.programs[0].arguments.size(), 1u);
  EXPECT_EQ(back.programs[0].arguments[0].port, "recv:0");
  ASSERT_EQ(back.programs[0].results.size(), 1u);
  EXPECT_EQ(back.programs[0].results[0].name, "loss");
  // The step's own values stay empty: the stage programs hold them.
  EXPECT_TRUE(back.arguments.empty());
  // A schedule for a rank count the pipeline line does not have.
  std::string bad = text;
  bad.replace(bad.find("ranks=2"), 7, "ranks=3");
  EXPECT_FALSE(parseManifest(bad, back, error));
  EXPECT_NE(error.find("one 'actions' line per pipeline rank"),
            std::string::npos)
      << error;
  EXPECT_FALSE(parseManifest("loom-program 1\nprogram stage=0 kind=sideways "
                             "function=f\n",
                             back, error));
}

TEST(ProgramManifest, RejectsWhatItCannotRead) {
  Manifest m;
  std::string error;
  EXPECT_FALSE(parseManifest("function train_step\n", m, error));
  EXPECT_NE(error.find("no 'loom-program 1' line"), std::string::npos) << error;
  EXPECT_FALSE(parseManifest("loom-program 2\n", m, error));
  EXPECT_NE(error.find("unsupported version"), std::string::npos) << error;
  EXPECT_FALSE(parseManifest("loom-program 1\narg name=x shape=2,a\n", m, error));
  EXPECT_NE(error.find("line 2: bad field 'shape=2,a'"), std::string::npos) << error;
  EXPECT_FALSE(parseManifest("loom-program 1\narg name=%zz\n", m, error));
  EXPECT_FALSE(parseManifest("loom-program 1\nmesh dp=0\n", m, error));
  EXPECT_FALSE(parseManifest("loom-program 1\narg name=x partial=avg:0\n", m, error));
}

TEST(ProgramNpy, HeaderRoundTripsAndIsWhatNumpyWrites) {
  std::string header = npyHeader("<f4", {3, 4});
  // numpy pads the header to a multiple of 64 bytes, ending in '\n'.
  EXPECT_EQ(header.size() % 64, 0u);
  EXPECT_EQ(header.back(), '\n');
  NpyInfo info;
  std::string error;
  std::string file = header + std::string(48, '\0');
  ASSERT_TRUE(parseNpyHeader(file.data(), file.size(), "x.npy", info, error))
      << error;
  EXPECT_EQ(info.descr, "<f4");
  EXPECT_EQ(info.shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(info.dataOffset, header.size());
  // The data the header promises must follow it.
  EXPECT_FALSE(parseNpyHeader(file.data(), file.size() - 1, "x.npy", info, error));
  EXPECT_NE(error.find("x.npy is truncated: its header says shape (3, 4) of "
                       "'<f4', 48 bytes of data, but 47 follow the header"),
            std::string::npos)
      << error;
  std::string huge = npyHeader("<f4", {int64_t(1) << 40});
  EXPECT_FALSE(parseNpyHeader(huge.data(), huge.size(), "h.npy", info, error));
  EXPECT_NE(error.find("is truncated"), std::string::npos) << error;
  std::string overflow = npyHeader("<f8", {int64_t(1) << 32, int64_t(1) << 32});
  EXPECT_FALSE(parseNpyHeader(overflow.data(), overflow.size(), "o.npy", info,
                              error));
  EXPECT_NE(error.find("is too large"), std::string::npos) << error;
  std::string empty = npyHeader("<f4", {0, int64_t(1) << 40});
  EXPECT_TRUE(parseNpyHeader(empty.data(), empty.size(), "e.npy", info, error))
      << error;
  std::string scalar = npyHeader("<i8", {}) + std::string(8, '\0');
  ASSERT_TRUE(parseNpyHeader(scalar.data(), scalar.size(), "s.npy", info, error));
  EXPECT_TRUE(info.shape.empty());
  std::string vector = npyHeader("|b1", {5});
  EXPECT_NE(vector.find("'shape': (5,)"), std::string::npos) << vector;
  loom_dtype_t dtype;
  EXPECT_TRUE(dtypeOfNpyDescr("|b1", dtype));
  EXPECT_EQ(dtype, LOOM_DTYPE_BOOL);
  EXPECT_FALSE(dtypeOfNpyDescr(">f4", dtype)); // big-endian
  EXPECT_EQ(npyDescr(LOOM_DTYPE_BF16), "");
  EXPECT_FALSE(parseNpyHeader("garbage", 7, "g.npy", info, error));
  EXPECT_NE(error.find("g.npy is not a .npy file"), std::string::npos);
}

TEST(ProgramBlocks, CopyBlockMovesTheBlockOfAShardedTensor) {
  // A 4x6 tensor; the block at (2, 3) of shape 2x3 into a 2x3 buffer.
  std::vector<int32_t> src(24), dst(6, -1);
  for (int i = 0; i < 24; ++i)
    src[i] = i;
  copyBlock(reinterpret_cast<const char *>(src.data()), {4, 6}, {2, 3},
            reinterpret_cast<char *>(dst.data()), {2, 3}, {0, 0}, {2, 3}, 4);
  EXPECT_EQ(dst, (std::vector<int32_t>{15, 16, 17, 21, 22, 23}));
}

TEST(ProgramData, DataOrderWrapsAndShufflesEachEpochDifferently) {
  DataOrder plain(3);
  EXPECT_EQ(plain.entry(0), 0);
  EXPECT_EQ(plain.entry(4), 1);
  DataOrder shuffled(5, true, 7);
  std::vector<int64_t> first, second;
  for (int64_t p = 0; p < 5; ++p)
    first.push_back(shuffled.entry(p));
  for (int64_t p = 5; p < 10; ++p)
    second.push_back(shuffled.entry(p));
  std::vector<int64_t> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_NE(first, second);
  EXPECT_EQ(shuffled.epochs(11), 3);
}

} // namespace
