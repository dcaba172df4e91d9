//===- RuntimeLaunchTest.cpp - Launcher detection and status objects -------===//

#include "loom/runtime.h"

#include "gtest/gtest.h"
#include <string>
#include <vector>

namespace {

/// Calls loom_launch_info_from_environ on `vars`; returns the status.
loom_status_t detect(std::vector<const char *> vars, loom_launch_info_t &info) {
  vars.push_back(nullptr);
  return loom_launch_info_from_environ(vars.data(), &info);
}

/// Takes ownership of a status and returns its message ("" when OK).
std::string message(loom_status_t status) {
  std::string text = loom_status_message(status);
  loom_status_free(status);
  return text;
}

TEST(RuntimeLaunch, NoLauncherIsOneProcess) {
  loom_launch_info_t info;
  ASSERT_TRUE(loom_status_is_ok(detect({"HOME=/root"}, info)));
  EXPECT_EQ(info.launcher, LOOM_LAUNCHER_NONE);
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.world_size, 1);
  EXPECT_EQ(info.local_rank, 0);
}

TEST(RuntimeLaunch, OpenMPI) {
  loom_launch_info_t info;
  ASSERT_TRUE(loom_status_is_ok(
      detect({"OMPI_COMM_WORLD_RANK=3", "OMPI_COMM_WORLD_SIZE=4",
              "OMPI_COMM_WORLD_LOCAL_RANK=1", "OMPI_COMM_WORLD_LOCAL_SIZE=2"},
             info)));
  EXPECT_EQ(info.launcher, LOOM_LAUNCHER_OPENMPI);
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.world_size, 4);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.local_size, 2);
  EXPECT_STREQ(loom_launcher_name(info.launcher), "openmpi");
}

TEST(RuntimeLaunch, SlurmWithCompressedTasksPerNode) {
  loom_launch_info_t info;
  ASSERT_TRUE(loom_status_is_ok(
      detect({"SLURM_PROCID=5", "SLURM_NTASKS=8", "SLURM_LOCALID=1",
              "SLURM_NTASKS_PER_NODE=4(x2)"},
             info)));
  EXPECT_EQ(info.launcher, LOOM_LAUNCHER_SLURM);
  EXPECT_EQ(info.rank, 5);
  EXPECT_EQ(info.local_rank, 1);
  EXPECT_EQ(info.local_size, 0) << "4(x2) is not a plain count";
}

TEST(RuntimeLaunch, SlurmRendezvousFromTheNodeList) {
  // srun sets no MASTER_ADDR: the step's first node, a port from the ids.
  loom_launch_info_t a, b, c;
  ASSERT_TRUE(loom_status_is_ok(
      detect({"SLURM_PROCID=0", "SLURM_NTASKS=4",
              "SLURM_STEP_NODELIST=gpu[07-09,12],cpu1", "SLURM_JOB_ID=4242",
              "SLURM_STEP_ID=3"},
             a)));
  EXPECT_STREQ(a.master_addr, "gpu07");
  EXPECT_EQ(a.master_port, 20000 + (4242 * 64 + 3) % 20000);
  ASSERT_TRUE(loom_status_is_ok(
      detect({"SLURM_PROCID=3", "SLURM_NTASKS=4", "SLURM_JOB_NODELIST=vm",
              "SLURM_JOB_ID=4242", "SLURM_STEP_ID=4"},
             b)));
  EXPECT_STREQ(b.master_addr, "vm");
  EXPECT_NE(b.master_port, a.master_port) << "another step, another port";
  // Given ones win.
  ASSERT_TRUE(loom_status_is_ok(
      detect({"SLURM_PROCID=1", "SLURM_NTASKS=2", "SLURM_JOB_NODELIST=vm",
              "MASTER_ADDR=head", "MASTER_PORT=1234"},
             c)));
  EXPECT_STREQ(c.master_addr, "head");
  EXPECT_EQ(c.master_port, 1234);
}

TEST(RuntimeLaunch, TorchrunWithRendezvous) {
  loom_launch_info_t info;
  ASSERT_TRUE(loom_status_is_ok(
      detect({"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", "LOCAL_WORLD_SIZE=2",
              "MASTER_ADDR=10.0.0.7", "MASTER_PORT=29500"},
             info)));
  EXPECT_EQ(info.launcher, LOOM_LAUNCHER_TORCHRUN);
  EXPECT_STREQ(info.master_addr, "10.0.0.7");
  EXPECT_EQ(info.master_port, 29500);
}

TEST(RuntimeLaunch, OpenMPIWinsOverTorchrunVariables) {
  loom_launch_info_t info;
  ASSERT_TRUE(loom_status_is_ok(detect(
      {"RANK=7", "WORLD_SIZE=9", "OMPI_COMM_WORLD_RANK=0",
       "OMPI_COMM_WORLD_SIZE=2"},
      info)));
  EXPECT_EQ(info.launcher, LOOM_LAUNCHER_OPENMPI);
  EXPECT_EQ(info.world_size, 2);
}

TEST(RuntimeLaunch, ErrorsNameTheVariable) {
  loom_launch_info_t info;
  loom_status_t status = detect({"RANK=4", "WORLD_SIZE=4"}, info);
  EXPECT_EQ(loom_status_code(status), LOOM_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(message(status), "RANK=4 is outside [0, WORLD_SIZE=4)");
  EXPECT_EQ(message(detect({"PMI_RANK=x", "PMI_SIZE=2"}, info)),
            "environment variable PMI_RANK='x' is not an integer");
  EXPECT_EQ(message(detect({"RANK=0", "WORLD_SIZE=0"}, info)),
            "WORLD_SIZE=0: the world size must be positive");
  EXPECT_EQ(message(detect({"RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=3",
                            "LOCAL_WORLD_SIZE=2"},
                           info)),
            "LOCAL_RANK=3 is outside [0, LOCAL_WORLD_SIZE=2)");
  EXPECT_EQ(message(detect({"MASTER_PORT=70000"}, info)),
            "MASTER_PORT=70000 is not a TCP port");
}

TEST(RuntimeStatus, CodesAndMessages) {
  EXPECT_EQ(loom_status_make(LOOM_STATUS_OK, "ignored"), nullptr);
  loom_status_t status =
      loom_status_make(LOOM_STATUS_PEER_FAILED, "rank %d died in %s", 2,
                       "all_reduce");
  EXPECT_EQ(loom_status_code(status), LOOM_STATUS_PEER_FAILED);
  EXPECT_STREQ(loom_status_code_string(loom_status_code(status)),
               "PEER_FAILED");
  EXPECT_EQ(message(status), "rank 2 died in all_reduce");
  EXPECT_STREQ(loom_status_message(nullptr), "");
  EXPECT_EQ(loom_status_code(nullptr), LOOM_STATUS_OK);
}

} // namespace
