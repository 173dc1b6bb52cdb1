// Launcher detection from the environment variables mpirun, mpiexec and srun set.
#include "runtime/comm/launcher_env.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

namespace shardc::runtime::testing {
namespace {

const char *const kLauncherVariables[] = {"OMPI_COMM_WORLD_SIZE",
                                          "OMPI_COMM_WORLD_RANK",
                                          "OMPI_COMM_WORLD_LOCAL_RANK",
                                          "PMI_SIZE",
                                          "PMI_RANK",
                                          "PMIX_RANK",
                                          "PMIX_SIZE",
                                          "PMIX_LOCAL_RANK",
                                          "MPI_LOCALRANKID",
                                          "SLURM_PROCID",
                                          "SLURM_NTASKS",
                                          "SLURM_STEP_NUM_TASKS",
                                          "SLURM_STEP_ID",
                                          "SLURM_STEPID",
                                          "SLURM_LOCALID",
                                          "PALS_LOCAL_RANKID"};

// Sets exactly `vars` among the launcher variables for one test, restoring them afterwards.
class LauncherEnv : public ::testing::Test {
protected:
  void SetUp() override {
    for (const char *name : kLauncherVariables)
      if (const char *value = std::getenv(name))
        saved_[name] = value;
  }
  void TearDown() override {
    for (const char *name : kLauncherVariables) {
      auto it = saved_.find(name);
      if (it == saved_.end())
        unsetenv(name);
      else
        setenv(name, it->second.c_str(), 1);
    }
  }
  void only(const std::map<std::string, std::string> &vars) {
    for (const char *name : kLauncherVariables)
      unsetenv(name);
    for (const auto &[name, value] : vars)
      setenv(name.c_str(), value.c_str(), 1);
  }

private:
  std::map<std::string, std::string> saved_;
};

TEST_F(LauncherEnv, NoLauncher) {
  only({});
  EXPECT_FALSE(launchedByMpi());
  const LauncherInfo info = detectLauncher();
  EXPECT_EQ(info.rank, 0);
  EXPECT_EQ(info.size, 1);
}

TEST_F(LauncherEnv, OpenMpi) {
  only({{"OMPI_COMM_WORLD_SIZE", "4"},
        {"OMPI_COMM_WORLD_RANK", "2"},
        {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}});
  const LauncherInfo info = detectLauncher();
  EXPECT_TRUE(info.launched);
  EXPECT_STREQ(info.launcher, "Open MPI mpirun");
  EXPECT_EQ(info.rank, 2);
  EXPECT_EQ(info.size, 4);
  EXPECT_EQ(info.localRank, 1);
  EXPECT_TRUE(launchedByMpi());
}

TEST_F(LauncherEnv, PmiAndPmix) {
  only({{"PMI_SIZE", "8"}, {"PMI_RANK", "5"}, {"MPI_LOCALRANKID", "3"}});
  LauncherInfo info = detectLauncher();
  EXPECT_TRUE(info.launched);
  EXPECT_EQ(info.rank, 5);
  EXPECT_EQ(info.size, 8);
  EXPECT_EQ(info.localRank, 3);
  only({{"PMIX_RANK", "1"}});
  info = detectLauncher();
  EXPECT_TRUE(info.launched);
  EXPECT_EQ(info.rank, 1);
  EXPECT_EQ(info.size, 0) << "PMIx alone does not say the size";
}

TEST_F(LauncherEnv, SrunStepButNotTheBatchScript) {
  // An sbatch script has SLURM_PROCID and SLURM_NTASKS too, but is no MPI launch.
  only({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}});
  EXPECT_FALSE(launchedByMpi());
  only({{"SLURM_PROCID", "3"},
        {"SLURM_NTASKS", "4"},
        {"SLURM_STEP_ID", "0"},
        {"SLURM_LOCALID", "1"}});
  const LauncherInfo info = detectLauncher();
  EXPECT_TRUE(info.launched);
  EXPECT_STREQ(info.launcher, "Slurm srun");
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.size, 4);
  EXPECT_EQ(info.localRank, 1);
}

TEST_F(LauncherEnv, MalformedVariablesAreIgnored) {
  only({{"OMPI_COMM_WORLD_SIZE", "four"}, {"OMPI_COMM_WORLD_RANK", "1"}});
  EXPECT_FALSE(launchedByMpi());
  only({{"PMI_SIZE", "-2"}, {"PMI_RANK", "0"}});
  EXPECT_FALSE(launchedByMpi());
}

} // namespace
} // namespace shardc::runtime::testing
