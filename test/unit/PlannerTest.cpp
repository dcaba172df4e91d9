//===- PlannerTest.cpp - Cluster presets and cost formulas ----------------===//

#include "loom/Planner/Cluster.h"
#include "loom/Planner/CostModel.h"
#include "loom/Sharding/Buckets.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

using namespace mlir::loom::planner;

TEST(PlannerCost, RingCollectives) {
  Link link{1e11, 1e-6, "l"};
  // All-reduce of 1 GB on 8 devices: 2 * 7/8 * 1 GB sent, 14 ring steps.
  EXPECT_DOUBLE_EQ(collectiveBytesSent(CollectiveKind::AllReduce, 1e9, 8),
                   1.75e9);
  EXPECT_NEAR(collectiveTime(CollectiveKind::AllReduce, 1e9, 8, link),
              1.75e9 / 1e11 + 14e-6, 1e-15);
  // All-gather to 1 GB on 4 devices: 3/4 GB received per device, 3 steps.
  EXPECT_NEAR(collectiveTime(CollectiveKind::AllGather, 1e9, 4, link),
              0.75e9 / 1e11 + 3e-6, 1e-15);
  EXPECT_NEAR(collectiveTime(CollectiveKind::ReduceScatter, 1e9, 4, link),
              collectiveTime(CollectiveKind::AllGather, 1e9, 4, link), 1e-15);
  // Reduce-scatter then all-gather moves what an all-reduce moves.
  EXPECT_NEAR(collectiveBytesSent(CollectiveKind::ReduceScatter, 1e9, 4) +
                  collectiveBytesSent(CollectiveKind::AllGather, 1e9, 4),
              collectiveBytesSent(CollectiveKind::AllReduce, 1e9, 4), 1e-3);
  EXPECT_EQ(collectiveTime(CollectiveKind::AllReduce, 1e9, 1, link), 0);
  EXPECT_EQ(collectiveTime(CollectiveKind::AllToAll, 0, 8, link), 0);
}

// A link's fixed cost per call (loom-run --calibrate's for cpu-local) is
// paid once per collective, whatever the ring steps; a bucketed gradient
// all-reduce pays its share of its bucket's (one call for many tensors).
TEST(PlannerCost, PerCallOverhead) {
  Link plain{1e10, 2e-6, "l", 0}, costly{1e10, 2e-6, "l", 5e-4};
  for (auto kind : {CollectiveKind::AllReduce, CollectiveKind::AllGather,
                    CollectiveKind::ReduceScatter, CollectiveKind::AllToAll})
    EXPECT_NEAR(collectiveTime(kind, 1e6, 4, costly),
                collectiveTime(kind, 1e6, 4, plain) + 5e-4, 1e-15);
  EXPECT_EQ(collectiveTime(CollectiveKind::AllReduce, 1e6, 1, costly), 0);
  DeviceSpec d;
  MeshShape mesh;
  mesh.sizes = {2, 4};
  mesh.names = {"dp", "tp"};
  mesh.links = {Link{1e10, 1e-6, "a", 1e-4}, costly};
  Costs costs(d, mesh);
  // A group over both axes pays the larger per-call cost.
  EXPECT_EQ(mesh.link(maskOf({0, 1})).overhead, 5e-4);
  double full = costs.collective(CollectiveKind::AllReduce, maskOf({1}), 1e6);
  costs.bucketed = true;
  double bucketed =
      costs.collective(CollectiveKind::AllReduce, maskOf({1}), 1e6);
  EXPECT_NEAR(full - bucketed, 5e-4 + 6 * 2e-6, 1e-15);
  // A gradient that is half of its bucket pays half of the bucket's call.
  costs.bucketShare = 0.5;
  EXPECT_NEAR(full - costs.collective(CollectiveKind::AllReduce, maskOf({1}),
                                      1e6),
              0.5 * (5e-4 + 6 * 2e-6), 1e-15);
  // Only all-reduces are bucketed: a ZeRO reduce-scatter pays its call.
  EXPECT_EQ(costs.collective(CollectiveKind::ReduceScatter, maskOf({1}), 1e6),
            collectiveTime(CollectiveKind::ReduceScatter, 1e6, 4, costly));
  EXPECT_EQ(describeLink(costly), "l 10 GB/s 2.0 us + 500.0 us per call");
  EXPECT_EQ(describeLink(plain), "l 10 GB/s 2.0 us");
}

TEST(PlannerCost, Roofline) {
  DeviceSpec d;
  d.flopsF32 = 1e12;
  d.flops16 = 4e12;
  d.memoryBandwidth = 1e11;
  d.efficiency = 0.5;
  // Compute-bound: 1 GFLOP at 0.5 TFLOP/s.
  EXPECT_DOUBLE_EQ(computeTime(d, 1e9, 1e3, false), 2e-3);
  EXPECT_DOUBLE_EQ(computeTime(d, 1e9, 1e3, true), 5e-4);
  // Memory-bound: 1 GB at 100 GB/s.
  EXPECT_DOUBLE_EQ(computeTime(d, 1e3, 1e9, false), 1e-2);
}

TEST(PlannerCluster, PresetsAndLinks) {
  llvm::Expected<Cluster> c = getCluster("h100-cluster:4x8");
  ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
  EXPECT_EQ(c->numDevices(), 32);
  EXPECT_EQ(c->link(1, 8).level, "nvlink");     // a whole node
  EXPECT_EQ(c->link(2, 4).level, "nvlink");     // every other GPU of a node
  EXPECT_EQ(c->link(8, 4).level, "infiniband"); // one GPU per node
  EXPECT_EQ(c->link(1, 16).level, "infiniband");
  EXPECT_DOUBLE_EQ(c->link(8, 4).bandwidth, 50e9);
  llvm::Expected<Cluster> one = getCluster("h100-8x");
  ASSERT_TRUE(bool(one));
  EXPECT_EQ(one->numDevices(), 8);
  EXPECT_DOUBLE_EQ(one->device.memory, 80e9);
}

TEST(PlannerCluster, Errors) {
  auto message = [](llvm::StringRef spec) {
    llvm::Expected<Cluster> c = getCluster(spec);
    EXPECT_FALSE(bool(c));
    return c ? std::string() : llvm::toString(c.takeError());
  };
  EXPECT_NE(message("h100-cluster:2x9").find("1 to 8 GPUs per node"),
            std::string::npos);
  EXPECT_NE(message("h100-cluster:x8").find("NODESxGPUS"), std::string::npos);
  EXPECT_NE(message("cpu-local:zero").find("number of ranks"),
            std::string::npos);
  EXPECT_NE(message("/no/such/file.json").find("cannot read cluster"),
            std::string::npos);
}

TEST(PlannerCluster, File) {
  llvm::SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("cluster", "json", path));
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    os << R"({"name": "t", "device": {"name": "d", "flops_f32": 1e12,
              "memory_bandwidth": 1e11, "memory": 8e9},
              "levels": [{"name": "a", "size": 4, "bandwidth": 1e10, "latency": 1e-6},
                         {"name": "b", "size": 2, "bandwidth": 1e9, "latency": 1e-5}]})";
  }
  llvm::Expected<Cluster> c = getCluster(path);
  ASSERT_TRUE(bool(c)) << llvm::toString(c.takeError());
  EXPECT_EQ(c->numDevices(), 8);
  EXPECT_DOUBLE_EQ(c->device.flops16, 1e12); // defaults to f32's
  EXPECT_EQ(c->link(1, 4).level, "a");
  EXPECT_EQ(c->link(4, 2).level, "b");
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    os << R"({"name": "t", "device": {"name": "d", "flops_f32": -1,
              "memory_bandwidth": 1e11, "memory": 8e9},
              "levels": [{"name": "a", "size": 2, "bandwidth": 1e9, "latency": 1e-5}]})";
  }
  llvm::Expected<Cluster> bad = getCluster(path);
  ASSERT_FALSE(bool(bad));
  EXPECT_NE(llvm::toString(bad.takeError()).find("\"flops_f32\" must be a positive number"),
            std::string::npos);
  llvm::sys::fs::remove(path);
}

// The bucket rule the pass emits and the planner prices (Buckets.h).
TEST(PlannerCost, Buckets) {
  using mlir::loom::BucketFiller;
  const double MiB = 1 << 20;
  std::vector<double> four(4, 4 * MiB);
  // 16 MiB in one 25 MiB bucket; with DDP's 1 MiB first bucket, the last
  // layer's 4 MiB alone, then the rest.
  EXPECT_EQ(BucketFiller::count(four, 25 * MiB, 0), 1);
  EXPECT_EQ(BucketFiller::count(four, 25 * MiB, MiB), 2);
  // At most the limit per bucket: 10 + 10, then 10; a larger tensor alone.
  EXPECT_EQ(BucketFiller::count({10 * MiB, 10 * MiB, 10 * MiB}, 25 * MiB, 0), 2);
  EXPECT_EQ(BucketFiller::count({30 * MiB}, 25 * MiB, 0), 1);
  EXPECT_EQ(BucketFiller::count({1, 30 * MiB, 1}, 25 * MiB, 0), 3);
  // The first bucket closes once full, small tensors joining until then.
  EXPECT_EQ(BucketFiller::count({0.5 * MiB, 0.5 * MiB, 2 * MiB, 2 * MiB},
                                25 * MiB, MiB),
            2);
  EXPECT_EQ(BucketFiller::count({}, 25 * MiB, MiB), 0);
}

// A bucket closed before it held the first bucket's bytes (the loss's
// all-reduce, read before the gradients) is not the first bucket.
TEST(PlannerCost, FirstBucketAfterAnEarlyClose) {
  using mlir::loom::BucketFiller;
  const double MiB = 1 << 20;
  BucketFiller f(25 * MiB, MiB);
  EXPECT_FALSE(f.add(4));
  f.close(); // the loss, alone
  EXPECT_FALSE(f.closesBefore(0.5 * MiB));
  EXPECT_FALSE(f.add(0.5 * MiB));
  EXPECT_TRUE(f.add(0.75 * MiB)); // now the first bucket is full
  f.close();
  EXPECT_FALSE(f.add(2 * MiB)); // later buckets fill to 25 MiB
}
