// Programs that pass activations between pipeline stages with send_recv ops, run by the
// executor on 4 local ranks laid out as dp x pp = 2 x 2 (the helper's mesh: group 1, "dp" there,
// is the slice of the two stages of one replica here, {0, 2} and {1, 3}; stage = rank / 2):
//   stage 0:  a = x + x;  send a to stage 1;  receive g from stage 1;  out = g
//   stage 1:  receive a from stage 0;  g = a + a;  send g back;  out = a
// Each rank gets exactly its partner's values, the bytes each communicator counts as
// send_recv are the plan's, and a second run sends the same again.
#include "runtime/comm/local/local_comm.h"
#include "runtime/common/comm_cost.h"
#include "runtime/common/planned_memory.h"
#include "runtime/executor/executor.h"
#include "runtime/training/rank_threads.h"
#include "tests/unit/runtime/test_util.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace shardc::runtime {
namespace {

constexpr int kRanks = 4;
constexpr int kPipelineGroup = 1; // addMesh2x2's group 1: the ranks sharing r % 2

std::vector<float> inputOf(int rank) {
  const float v = static_cast<float>(rank + 1);
  return {v, -2 * v, 0.5f * v, 8 * v};
}

program::Program stageProgram(int rank) {
  using program::ACTIVATION;
  using program::ARENA;
  using program::F32;
  program::Program p;
  p.set_rank(rank);
  p.set_world_size(kRanks);
  testing::addMesh2x2(&p);
  const int stage = rank / 2;
  const int x = testing::addBuffer(&p, "x", F32, {4}, program::INPUT, ARENA, 0);
  const int a = testing::addBuffer(&p, "a", F32, {4}, ACTIVATION, ARENA, 64);
  const int g = testing::addBuffer(&p, "g", F32, {4}, ACTIVATION, ARENA, 128);
  auto transfer = [&](const char *name, std::vector<int> send, std::vector<int> recv) {
    const int op = testing::addOp(&p, "send_recv", name, send, recv);
    auto &attrs = *p.mutable_ops(op)->mutable_attrs();
    attrs["num_ranks"].set_i(2);
    attrs["group"].set_i(kPipelineGroup);
    if (!send.empty())
      attrs["to"].set_i(1 - stage);
    if (!recv.empty())
      attrs["from"].set_i(1 - stage);
  };
  int out = -1;
  if (stage == 0) {
    testing::addOp(&p, "add", "double", {x, x}, {a});
    transfer("send_activation", {a}, {});
    transfer("receive_gradient", {}, {g});
    out = g;
  } else {
    transfer("receive_activation", {}, {a});
    testing::addOp(&p, "add", "double", {a, a}, {g});
    transfer("send_gradient", {g}, {});
    out = a;
  }
  program::Binding *in = p.mutable_inputs()->Add();
  in->set_name("x");
  in->set_buffer(x);
  program::Binding *result = p.mutable_outputs()->Add();
  result->set_name("out");
  result->set_buffer(out);
  p.set_arena_bytes(192);
  // One f32[4] message sent per run by every rank.
  p.set_planned_comm_bytes(
      collectiveBytesSent(CollectiveKind::SendRecv, 4, 2, sizeof(float)));
  p.set_planned_peak_bytes(planPeakMemory(p).total);
  return p;
}

TEST(PipelineTransfer, StagesPassActivationsAndGradients) {
  std::vector<std::unique_ptr<Communicator>> comms;
  ASSERT_TRUE(createLocalWorld(kRanks, CommOptions(), &comms).isOk());
  std::vector<std::unique_ptr<Executor>> executors(kRanks);
  std::vector<std::map<std::string, HostTensor>> outputs(kRanks);
  std::vector<Communicator *> raw;
  for (const auto &comm : comms)
    raw.push_back(comm.get());
  Status status = runRankThreads(raw, [&](int r) -> Status {
    const size_t i = static_cast<size_t>(r);
    SHARDC_RETURN_IF_ERROR(
        Executor::create(stageProgram(r), nullptr, &executors[i], nullptr, comms[i].get()));
    std::map<std::string, HostTensor> inputs;
    inputs["x"] = testing::makeTensor(program::F32, {4}, inputOf(r));
    SHARDC_RETURN_IF_ERROR(executors[i]->run(inputs, &outputs[i]));
    return executors[i]->run(inputs, &outputs[i]);
  });
  ASSERT_TRUE(status.isOk()) << status.message();
  for (int r = 0; r < kRanks; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const HostTensor &out = outputs[static_cast<size_t>(r)].at("out");
    const std::vector<float> got(out.as<float>(), out.as<float>() + out.numel());
    // Stage 1 holds stage 0's doubled x; stage 0 gets that doubled again.
    const int first = r % 2;
    std::vector<float> expected = inputOf(first);
    for (float &v : expected)
      v *= r / 2 == 1 ? 2.0f : 4.0f;
    EXPECT_EQ(got, expected);
    const CommCounters &sent = executors[static_cast<size_t>(r)]->lastRunCommSent();
    EXPECT_EQ(sent.calls[static_cast<int>(CollectiveKind::SendRecv)], 2u);
    EXPECT_EQ(sent.totalBytesSent(), stageProgram(r).planned_comm_bytes());
    // The transfers ran over the pipeline group, not the world.
    EXPECT_EQ(comms[static_cast<size_t>(r)]->counters().totalBytesSent(), 0u);
  }
}

} // namespace
} // namespace shardc::runtime
