// shardrun on bundles of several ranks (tests/unit/runtime/data_parallel_program.h): the ranks
// as threads of one process (--comm local) and as processes under mpirun, trained against the
// same bundle compiled for one rank; what is printed per rank; checkpoints across rank counts;
// the errors, each one line.
#include "runtime/data/npy.h"
#include "tests/unit/runtime/data_parallel_program.h"
#include "tests/unit/runtime/shardrun_runner.h"
#include "tests/unit/runtime/test_util.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <regex>
#include <string>
#include <vector>

namespace shardc::runtime {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::RunResult;
using testing::runShardrun;
using testing::TempDir;

// The losses of a metrics file, in order.
std::vector<std::string> lossesOf(const std::string &metrics) {
  std::vector<std::string> losses;
  std::regex loss("\"loss\": ([^,]+),");
  for (auto it = std::sregex_iterator(metrics.begin(), metrics.end(), loss);
       it != std::sregex_iterator(); ++it)
    losses.push_back((*it)[1]);
  return losses;
}

int lineCount(const std::string &text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

// The linear bundle for one rank and for N, the data set, and scratch space.
class ShardrunRanksTest : public ::testing::TestWithParam<int> {
protected:
  void SetUp() override {
    testing::writeBundle(one_, testing::linearSgdBundle(1), testing::linearSgdWeights());
    writeBundle(testing::linearSgdBundle(GetParam()));
    ASSERT_TRUE(
        writeNpy(data_.file("x.npy"), testing::linearData(2 * testing::kLinearBatch)).isOk());
  }
  void writeBundle(program::Bundle bundle) {
    testing::writeBundle(many_, std::move(bundle), testing::linearSgdWeights());
  }
  // shardrun BUNDLE --steps K --lr 0.5 --data DATA, then `extra`.
  RunResult train(const TempDir &bundle, int steps, std::vector<std::string> extra = {},
                  const std::string &prefix = "") {
    std::vector<std::string> args = {bundle.path(), "--steps", std::to_string(steps), "--lr",
                                     "0.5",         "--data",  data_.path()};
    args.insert(args.end(), extra.begin(), extra.end());
    return runShardrun(scratch_, args, prefix);
  }

  TempDir one_, many_, data_, out_, scratch_;
};

INSTANTIATE_TEST_SUITE_P(Ranks, ShardrunRanksTest, ::testing::Values(2, 3),
                         [](const ::testing::TestParamInfo<int> &info) {
                           return std::to_string(info.param) + "ranks";
                         });

// N ranks as threads train like one rank: the same losses in the metrics, the same final
// parameters, the same checkpoint files; one memory line and one comm line for all ranks.
TEST_P(ShardrunRanksTest, RanksAsThreadsTrainLikeOneRank) {
  const int world = GetParam();
  RunResult single = train(one_, 3,
                           {"--outputs", out_.file("one"), "--save", out_.file("ckpt1"),
                            "--metrics", out_.file("one.jsonl")});
  ASSERT_EQ(single.exitCode, 0) << single.err;
  EXPECT_THAT(single.err, Not(HasSubstr("comm:")));
  RunResult ranks = train(many_, 3,
                          {"--outputs", out_.file("many"), "--save", out_.file("ckptN"),
                           "--metrics", out_.file("many.jsonl")});
  ASSERT_EQ(ranks.exitCode, 0) << ranks.err;

  const std::string n = std::to_string(world);
  EXPECT_THAT(ranks.err, HasSubstr("shardrun: trained 3 steps (1..3) on " + n + " ranks in "));
  EXPECT_TRUE(std::regex_search(
      ranks.err, std::regex("\nshardrun: memory: each of the " + n +
                            " ranks: planned peak ([0-9]+) bytes, measured peak \\1 bytes "
                            "\\(arena [^)]*\\); 0 allocations after the first step; the data "
                            "source holds [0-9]+ more bytes \\(this rank's data, not part of the "
                            "plan\\)\n")))
      << ranks.err;
  const std::string planned =
      std::to_string(testing::linearSgdBundle(world).programs(0).planned_comm_bytes());
  EXPECT_THAT(ranks.err, HasSubstr("shardrun: comm: each of the " + n + " ranks sent " + planned +
                                   " bytes per step (planned " + planned + "): all_reduce "));
  EXPECT_EQ(testing::readBytes(out_.file("many/w.npy")),
            testing::readBytes(out_.file("one/w.npy")));
  for (const char *file :
       {"params-00000003.safetensors", "optimizer-00000003.safetensors", "manifest.json"})
    EXPECT_EQ(testing::readBytes(out_.file("ckptN/") + file),
              testing::readBytes(out_.file("ckpt1/") + file))
        << file;
  const std::string metrics = testing::readBytes(out_.file("many.jsonl"));
  EXPECT_EQ(lossesOf(metrics), lossesOf(testing::readBytes(out_.file("one.jsonl"))));
  EXPECT_EQ(lossesOf(metrics).size(), 3u);
  EXPECT_THAT(metrics, HasSubstr(", \"comm_bytes\": {\"all_reduce\": "));
}

// A checkpoint of N ranks resumes a one-rank run and the other way round, both ending where an
// uninterrupted run ends.
TEST_P(ShardrunRanksTest, CheckpointsResumeAcrossRankCounts) {
  ASSERT_EQ(train(one_, 4, {"--outputs", out_.file("whole")}).exitCode, 0);
  const std::string expected = testing::readBytes(out_.file("whole/w.npy"));

  RunResult first = train(many_, 2, {"--save", out_.file("fromN")});
  ASSERT_EQ(first.exitCode, 0) << first.err;
  RunResult second =
      train(one_, 4, {"--resume", out_.file("fromN"), "--outputs", out_.file("resumed1")});
  ASSERT_EQ(second.exitCode, 0) << second.err;
  EXPECT_THAT(second.err, HasSubstr("trained 2 steps (3..4)"));
  EXPECT_EQ(testing::readBytes(out_.file("resumed1/w.npy")), expected);

  first = train(one_, 2, {"--save", out_.file("from1")});
  ASSERT_EQ(first.exitCode, 0) << first.err;
  second = train(many_, 4, {"--resume", out_.file("from1"), "--outputs", out_.file("resumedN")});
  ASSERT_EQ(second.exitCode, 0) << second.err;
  EXPECT_EQ(testing::readBytes(out_.file("resumedN/w.npy")), expected);
}

TEST_P(ShardrunRanksTest, CommFlags) {
  struct Case {
    std::vector<std::string> args;
    std::string prefix, message;
  } cases[] = {
      {{"--comm", "carrier-pigeon"},
       "",
       "--comm: expected local, mpi or nccl, got 'carrier-pigeon'"},
      {{"--comm-timeout", "0"},
       "",
       "--comm-timeout: expected a positive number of seconds, got '0'"},
      {{"--io-timeout", "inf"},
       "",
       "--io-timeout: expected a positive number of seconds, got 'inf'"},
      {{"--io-timeout", "60", "--io-timeout", "90"}, "", "--io-timeout given more than once"},
      {{"--comm", "local"},
       "env OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=0",
       "--comm local runs every rank in one process, but "},
  };
  for (const Case &c : cases) {
    RunResult r = train(many_, 1, c.args, c.prefix);
    EXPECT_EQ(r.exitCode, 2) << r.err;
    EXPECT_THAT(r.err, ::testing::StartsWith("shardrun: error: " + c.message)) << r.err;
    EXPECT_EQ(lineCount(r.err), 1) << r.err;
  }
  RunResult r = train(many_, 1, {"--comm", "local", "--comm-timeout", "2.5", "--io-timeout", "60"});
  EXPECT_EQ(r.exitCode, 0) << r.err;
}

// A setup error that every rank meets is reported once, by rank 0.
TEST_P(ShardrunRanksTest, ASetupErrorIsOneLine) {
  ASSERT_TRUE(writeNpy(data_.file("x.npy"), testing::linearData(5)).isOk());
  RunResult r = train(many_, 2);
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.err,
            "shardrun: error: rank 0: " + data_.file("x.npy") +
                ": input 'x': 5 rows is not a positive multiple of the global batch size 6\n");
}

// A kernel failing on the last rank at step 1, while the others wait for it at step 2: one
// line naming that rank, at once rather than after the comm timeout.
TEST_P(ShardrunRanksTest, AFailingRankEndsTheRunWithOneLine) {
  const int world = GetParam();
  program::Bundle bundle = testing::linearSgdBundle(world);
  program::Program *last = bundle.mutable_programs(world - 1);
  for (program::Op &op : *last->mutable_ops())
    if (op.kernel() == "sgd_update")
      op.mutable_attrs()->erase("nesterov");
  writeBundle(bundle);
  const auto start = std::chrono::steady_clock::now();
  RunResult r = train(many_, 3);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exitCode, 1);
  // Rank 0 finished step 1 (the failing op comes after the step's collectives) and may have
  // reported its progress; the error is the last line, and the only one.
  const std::string error = "shardrun: error: rank " + std::to_string(world - 1) + ": " +
                            many_.path() + ": step 1: rank " + std::to_string(world - 1) +
                            ", op 'sgd' (kernel sgd_update): missing attribute 'nesterov'\n";
  ASSERT_GE(r.err.size(), error.size());
  EXPECT_EQ(r.err.substr(r.err.size() - error.size()), error) << r.err;
  EXPECT_EQ(r.err.find("error"), r.err.rfind("error")) << r.err;
  EXPECT_LT(seconds, 10.0);
}

// What a rank sends is checked against the plan: a plan that says otherwise is an error.
TEST_P(ShardrunRanksTest, CommBytesThatDifferFromThePlanAreAnError) {
  program::Bundle bundle = testing::linearSgdBundle(GetParam());
  const uint64_t sent = bundle.programs(0).planned_comm_bytes();
  bundle.mutable_programs(0)->set_planned_comm_bytes(sent + 4);
  writeBundle(bundle);
  RunResult r = train(many_, 2);
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_THAT(r.err,
              HasSubstr("\nshardrun: error: rank 0: comm: sent " + std::to_string(sent) +
                        " bytes per step, planned " + std::to_string(sent + 4) + " (all_reduce "));
}

TEST_P(ShardrunRanksTest, OnlyTheTrainingLoopRunsSeveralRanks) {
  RunResult r =
      runShardrun(scratch_, {many_.path(), "--data", data_.path(), "--outputs", out_.file("o")});
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.err, "shardrun: error: " + many_.path() + ": compiled for " +
                       std::to_string(GetParam()) +
                       " ranks; a bundle of several ranks runs the training loop only (give "
                       "--steps K)\n");
}

// Under mpirun each process runs its rank (skipped where no mpirun is installed).
TEST_P(ShardrunRanksTest, RanksAsMpiProcessesTrainLikeOneRank) {
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no mpirun";
  const int world = GetParam();
  // Open MPI refuses root without these, and the test machine may have fewer cores than ranks.
  const std::string mpirun = "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
                             "mpirun --oversubscribe -np ";
  ASSERT_EQ(train(one_, 3, {"--outputs", out_.file("one")}).exitCode, 0);
  RunResult r = train(many_, 3, {"--outputs", out_.file("mpi")}, mpirun + std::to_string(world));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_EQ(testing::readBytes(out_.file("mpi/w.npy")), testing::readBytes(out_.file("one/w.npy")));
  for (int rank = 0; rank < world; ++rank)
    EXPECT_THAT(r.err, HasSubstr("shardrun: memory: rank " + std::to_string(rank) + ": planned"));

  r = train(many_, 3, {}, mpirun + std::to_string(world + 1));
  EXPECT_NE(r.exitCode, 0);
  EXPECT_THAT(r.err, HasSubstr("shardrun: error: rank 0: " + many_.path() + ": compiled for " +
                               std::to_string(world) + " ranks, but the MPI job has " +
                               std::to_string(world + 1) + " processes"));
  // One error line: the other processes stop quietly (mpirun may add lines of its own).
  size_t errors = 0;
  for (size_t at = r.err.find("shardrun: error:"); at != std::string::npos;
       at = r.err.find("shardrun: error:", at + 1))
    ++errors;
  EXPECT_EQ(errors, 1u) << r.err;
}

// 4 ranks on a dp x tp = 2 x 2 mesh whose loss is summed over the tp group, then the dp group
// (linearSgdMeshBundle): the groups' communicators are created at setup, the run trains like
// one rank, and the comm line adds what each group sent. As threads, and under mpirun.
TEST(ShardrunMesh, GroupsTrainLikeOneRankAndReportTheirBytes) {
  TempDir one, mesh, data, out, scratch;
  testing::writeBundle(one, testing::linearSgdBundle(1, testing::kLinearMeshBatch),
                       testing::linearSgdWeights());
  testing::writeBundle(mesh, testing::linearSgdMeshBundle(), testing::linearSgdWeights());
  ASSERT_TRUE(
      writeNpy(data.file("x.npy"), testing::linearData(2 * testing::kLinearMeshBatch)).isOk());
  auto train = [&](const TempDir &bundle, const std::string &outputs, const std::string &prefix) {
    return runShardrun(scratch,
                       {bundle.path(), "--steps", "3", "--lr", "0.5", "--data", data.path(),
                        "--outputs", out.file(outputs), "--metrics", out.file(outputs + ".jsonl")},
                       prefix);
  };
  RunResult single = train(one, "one", "");
  ASSERT_EQ(single.exitCode, 0) << single.err;
  RunResult threads = train(mesh, "threads", "");
  ASSERT_EQ(threads.exitCode, 0) << threads.err;
  EXPECT_EQ(testing::readBytes(out.file("threads/w.npy")),
            testing::readBytes(out.file("one/w.npy")));
  EXPECT_EQ(lossesOf(testing::readBytes(out.file("threads.jsonl"))),
            lossesOf(testing::readBytes(out.file("one.jsonl"))));
  const std::string planned =
      std::to_string(testing::linearSgdMeshBundle().programs(0).planned_comm_bytes());
  const std::string byGroup = "; by group: tp " + std::to_string(testing::kMeshTpBytes) + ", dp " +
                              std::to_string(testing::kMeshDpBytes) + ", world " +
                              std::to_string(testing::linearSgdMeshWorldBytes()) + "\n";
  EXPECT_TRUE(std::regex_search(
      threads.err, std::regex("\nshardrun: comm: each of the 4 ranks sent " + planned +
                              " bytes per step \\(planned " + planned +
                              "\\): all_reduce 16, reduce_scatter [0-9]+, "
                              "all_gather [0-9]+; by group: tp 8, dp 8, world [0-9]+\n")))
      << threads.err;
  EXPECT_THAT(threads.err, HasSubstr(byGroup));

  if (std::system("command -v mpirun >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "no mpirun";
  RunResult mpi = train(mesh, "mpi",
                        "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
                        "mpirun --oversubscribe -np 4");
  ASSERT_EQ(mpi.exitCode, 0) << mpi.err;
  EXPECT_EQ(testing::readBytes(out.file("mpi/w.npy")), testing::readBytes(out.file("one/w.npy")));
  for (int rank = 0; rank < 4; ++rank)
    EXPECT_THAT(mpi.err, HasSubstr("shardrun: comm: rank " + std::to_string(rank) + " sent " +
                                   planned + " bytes per step (planned " + planned + "): "))
        << mpi.err;
  EXPECT_THAT(mpi.err, HasSubstr(byGroup));
}

} // namespace
} // namespace shardc::runtime
