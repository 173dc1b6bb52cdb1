// Programs whose collectives run over groups (Program.groups, the ops' "group" attribute), run
// by the executor on 4 local ranks (tests/unit/runtime/group_program.h): each op sums over its
// group only, each group's communicator counts its own bytes and the total is the plan's; the
// "dtype" attribute; ranks whose programs disagree on their groups fail instead of mixing.
#include "runtime/comm/local/local_comm.h"
#include "runtime/executor/executor.h"
#include "runtime/training/rank_threads.h"
#include "tests/unit/runtime/group_program.h"
#include "tests/unit/runtime/test_util.h"

#include <cstring>
#include <functional>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace shardc::runtime {
namespace {

using ::testing::HasSubstr;
using testing::kMeshRanks;

std::vector<float> floatsOf(const HostTensor &t) {
  return std::vector<float>(t.as<float>(), t.as<float>() + t.numel());
}

// The 4 ranks of `programs`, each with an executor on its communicator of a local world.
class MeshRanks {
public:
  explicit MeshRanks(std::vector<program::Program> programs, double timeoutSeconds = 30.0)
      : programs_(std::move(programs)) {
    CommOptions options;
    options.timeoutSeconds = timeoutSeconds;
    Status status = createLocalWorld(kMeshRanks, options, &comms_);
    EXPECT_TRUE(status.isOk()) << status.message();
    executors_.resize(kMeshRanks);
    outputs_.resize(kMeshRanks);
  }
  MeshRanks() : MeshRanks(allPrograms()) {}

  static std::vector<program::Program> allPrograms() {
    std::vector<program::Program> programs;
    for (int r = 0; r < kMeshRanks; ++r)
      programs.push_back(testing::groupProgram(r));
    return programs;
  }

  // body(r) on every rank's thread; the first failure (runtime/training/rank_threads.h).
  Status run(const std::function<Status(int)> &body) {
    std::vector<Communicator *> comms;
    for (const auto &comm : comms_)
      comms.push_back(comm.get());
    return runRankThreads(comms, body);
  }

  Status create(int r) {
    return Executor::create(programs_[static_cast<size_t>(r)], nullptr,
                            &executors_[static_cast<size_t>(r)], nullptr, comms_[r].get());
  }

  Status runProgram(int r) {
    std::map<std::string, HostTensor> inputs;
    inputs["x"] = testing::makeTensor(program::F32, {4}, testing::groupProgramInput(r));
    return executors_[static_cast<size_t>(r)]->run(inputs, &outputs_[static_cast<size_t>(r)]);
  }

  Executor &executor(int r) { return *executors_[static_cast<size_t>(r)]; }
  Communicator &comm(int r) { return *comms_[static_cast<size_t>(r)]; }
  std::vector<float> output(int r, const std::string &name) {
    return floatsOf(outputs_[static_cast<size_t>(r)].at(name));
  }

private:
  std::vector<program::Program> programs_;
  std::vector<std::unique_ptr<Communicator>> comms_;
  std::vector<std::unique_ptr<Executor>> executors_;
  std::vector<std::map<std::string, HostTensor>> outputs_;
};

std::vector<float> sumOf(const std::vector<int> &ranks) {
  std::vector<float> sum(4, 0.0f);
  for (int r : ranks)
    for (size_t i = 0; i < 4; ++i)
      sum[i] += testing::groupProgramInput(r)[i];
  return sum;
}

TEST(GroupProgram, ValidatesOnEveryRank) {
  for (int r = 0; r < kMeshRanks; ++r) {
    std::unique_ptr<Executor> executor;
    Status status = Executor::create(testing::groupProgram(r), nullptr, &executor);
    EXPECT_TRUE(status.isOk()) << status.message();
  }
}

// Each op sums over its own group and leaves the others' data alone; the world's all-reduce
// over everyone; shard_slice cuts the shard of the rank's place in its group.
TEST(GroupProgram, EachCollectiveRunsOverItsGroup) {
  MeshRanks ranks;
  Status status = ranks.run([&](int r) -> Status {
    SHARDC_RETURN_IF_ERROR(ranks.create(r));
    // Explicitly for two ranks, by the first run for the others.
    if (r % 2 == 0)
      SHARDC_RETURN_IF_ERROR(ranks.executor(r).createGroupCommunicators());
    SHARDC_RETURN_IF_ERROR(ranks.runProgram(r));
    return ranks.runProgram(r); // a second run sends the same again
  });
  ASSERT_TRUE(status.isOk()) << status.message();
  for (int r = 0; r < kMeshRanks; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const int dp = r / 2, tp = r % 2;
    const std::vector<int> tpGroup = {dp * 2, dp * 2 + 1}, dpGroup = {tp, tp + 2};
    EXPECT_EQ(ranks.output(r, "y_tp"), sumOf(tpGroup));
    EXPECT_EQ(ranks.output(r, "y_dp"), sumOf(dpGroup));
    EXPECT_EQ(ranks.output(r, "y_world"), sumOf({0, 1, 2, 3}));
    // The tp rank's half of the tp sum.
    const std::vector<float> tpSum = sumOf(tpGroup);
    EXPECT_EQ(ranks.output(r, "s_tp"),
              std::vector<float>(tpSum.begin() + 2 * tp, tpSum.begin() + 2 * tp + 2));
    // The dp group's halves, in dp order: each member's tp half of its own tp sum.
    std::vector<float> gathered;
    for (int member : dpGroup) {
      const std::vector<float> sum = sumOf({member / 2 * 2, member / 2 * 2 + 1});
      gathered.insert(gathered.end(), sum.begin() + 2 * tp, sum.begin() + 2 * tp + 2);
    }
    EXPECT_EQ(ranks.output(r, "g_dp"), gathered);
    const std::vector<float> x = testing::groupProgramInput(r);
    EXPECT_EQ(ranks.output(r, "slice_tp"),
              std::vector<float>(x.begin() + 2 * tp, x.begin() + 2 * tp + 2));

    // Each communicator counted its own collectives; together they are the plan.
    const Executor &executor = ranks.executor(r);
    ASSERT_EQ(executor.lastRunGroupCommSent().size(), 2u);
    EXPECT_EQ(executor.lastRunGroupCommSent()[0].totalBytesSent(), testing::kGroupProgramTpBytes);
    EXPECT_EQ(executor.lastRunGroupCommSent()[1].totalBytesSent(), testing::kGroupProgramDpBytes);
    EXPECT_EQ(executor.lastRunWorldCommSent().totalBytesSent(), testing::kGroupProgramWorldBytes);
    EXPECT_EQ(executor.lastRunCommSent().totalBytesSent(), executor.program().planned_comm_bytes());
    EXPECT_EQ(executor.lastRunCommSent().calls[0], 3u); // all_reduce: tp, dp, world
    EXPECT_EQ(executor.lastRunCommSent().calls[1], 1u);
    EXPECT_EQ(executor.lastRunCommSent().calls[2], 1u);
    // Two runs: the communicators' counters hold both.
    EXPECT_EQ(executor.groupCommunicator(0)->counters().totalBytesSent(),
              2 * testing::kGroupProgramTpBytes);
    EXPECT_EQ(executor.groupCommunicator(0)->groupName(), "tp");
    EXPECT_EQ(executor.groupCommunicator(1)->groupSuffix(),
              " in group 'dp' (ranks " + std::to_string(tp) + ", " + std::to_string(tp + 2) + ")");
    EXPECT_EQ(executor.groupCommunicator(2), nullptr);
    EXPECT_EQ(ranks.comm(r).counters().totalBytesSent(), 2 * testing::kGroupProgramWorldBytes);
  }
  EXPECT_EQ(testing::groupProgram(0).planned_comm_bytes(), testing::kGroupProgramTpBytes +
                                                               testing::kGroupProgramDpBytes +
                                                               testing::kGroupProgramWorldBytes);
}

// A collective's "dtype": that of its operands (f32 here) runs; any other dtype is an error
// naming the op, before anything is sent (every rank fails alike, nobody waits).
TEST(GroupProgram, CollectivesRefuseADtypeTheyDoNotMove) {
  for (program::DType dtype : {program::F32, program::I64, program::BOOL}) {
    SCOPED_TRACE(std::to_string(dtype));
    std::vector<program::Program> programs = MeshRanks::allPrograms();
    for (program::Program &p : programs)
      (*p.mutable_ops(1)->mutable_attrs())["dtype"].set_i(dtype);
    MeshRanks ranks(programs, 5.0);
    Status status = ranks.run([&](int r) -> Status {
      SHARDC_RETURN_IF_ERROR(ranks.create(r));
      return ranks.runProgram(r);
    });
    if (dtype == program::F32) {
      EXPECT_TRUE(status.isOk()) << status.message();
      continue;
    }
    const std::string name = dtype == program::I64 ? "i64" : "bool";
    EXPECT_THAT(status.message(), ::testing::MatchesRegex(
                                      "rank [0-3]: rank [0-3], op 'ar_dp' \\(kernel all_reduce\\): "
                                      "all_reduce: dtype " +
                                      name +
                                      " is not supported \\(the collectives sum f32, "
                                      "bf16 and f16\\)"));
  }
}

// Ranks whose programs disagree on their groups (here rank 1 groups along dp where the others
// group along tp) fail when the groups are created, naming what joined and what was listed.
TEST(GroupProgram, RanksThatDisagreeOnTheirGroupsFail) {
  std::vector<program::Program> programs = MeshRanks::allPrograms();
  for (program::Program &p : programs) {
    p.mutable_groups()->DeleteSubrange(1, 1);
    p.mutable_ops()->Clear();
    p.clear_outputs();
    p.set_planned_comm_bytes(0);
  }
  // Rank 1's only group: along dp ({1, 3}), named tp.
  program::CommGroup *group = programs[1].mutable_groups(0);
  group->set_mesh_axes(0, 0);
  group->set_ranks(0, 1);
  group->set_ranks(1, 3);
  MeshRanks ranks(programs, 5.0);
  std::vector<Status> results(kMeshRanks);
  Status status = ranks.run([&](int r) -> Status {
    SHARDC_RETURN_IF_ERROR(ranks.create(r));
    results[static_cast<size_t>(r)] = ranks.executor(r).createGroupCommunicators();
    return Status::ok();
  });
  ASSERT_TRUE(status.isOk()) << status.message();
  // The split by the others' colors: rank 0 alone, {1, 2, 3} ordered by key then rank.
  EXPECT_EQ(results[0].message(), "rank 0: group 0 ('tp'): the ranks that joined it are [0], but "
                                  "the program lists [0, 1] (the ranks' programs disagree on "
                                  "their groups)");
  EXPECT_EQ(results[1].message(), "rank 1: group 0 ('tp'): the ranks that joined it are "
                                  "[1, 2, 3], but the program lists [1, 3] (the ranks' programs "
                                  "disagree on their groups)");
  EXPECT_THAT(results[2].message(), HasSubstr("the ranks that joined it are [1, 2, 3]"));
}

// Without a communicator (a single-rank run) the groups cannot exist: the collectives say so.
TEST(GroupProgram, WithoutACommunicatorTheCollectivesFail) {
  std::unique_ptr<Executor> executor;
  ASSERT_TRUE(Executor::create(testing::groupProgram(0), nullptr, &executor).isOk());
  EXPECT_TRUE(executor->createGroupCommunicators().isOk());
  std::map<std::string, HostTensor> inputs, outputs;
  inputs["x"] = testing::makeTensor(program::F32, {4}, testing::groupProgramInput(0));
  EXPECT_EQ(executor->run(inputs, &outputs).message(),
            "rank 0, op 'ar_tp' (kernel all_reduce): all_reduce: needs the rank's communicator "
            "(num_ranks = 2), but the run has none");
}

} // namespace
} // namespace shardc::runtime
