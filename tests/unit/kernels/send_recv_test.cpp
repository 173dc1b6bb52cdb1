// The send_recv kernel (a point-to-point transfer between pipeline stages) on ranks of a local
// world: tensors of several dtypes along a chain of stages and back, byte for byte, with the
// bytes counted as send_recv; two ranks exchanging at once; its workspace (packing only where
// several tensors travel, and one byte short a clean error); and the attributes a call cannot
// have, refused before anything is sent.
#include "runtime/common/comm_cost.h"
#include "tests/unit/comm/comm_test_util.h"
#include "tests/unit/kernels/test_support.h"

#include <string>

namespace shardc::runtime::testing {
namespace {

const int kSendRecv = static_cast<int>(CollectiveKind::SendRecv);

struct Stage {
  std::vector<HostTensor> inputs;  // sent
  std::vector<HostTensor> outputs; // received
  Attrs attrs;
};

std::vector<Tensor> views(const std::vector<HostTensor> &tensors) {
  std::vector<Tensor> v;
  for (const HostTensor &t : tensors)
    v.push_back(t.view());
  return v;
}

// Runs send_recv on every rank with its own operands and attributes, each with the workspace
// the size function asks for plus `workspaceDelta` bytes.
std::vector<Status> runStages(std::vector<Stage> &stages,
                              const std::vector<std::unique_ptr<Communicator>> &comms,
                              int64_t workspaceDelta = 0) {
  KernelFn fn = findCpuKernel("send_recv");
  EXPECT_NE(fn, nullptr);
  return runRanks(comms, [&](int r, Communicator &comm) -> Status {
    Stage &stage = stages[static_cast<size_t>(r)];
    KernelArgs args;
    args.inputs = views(stage.inputs);
    args.outputs = views(stage.outputs);
    args.attrs = &stage.attrs.map();
    args.comm = &comm;
    uint64_t bytes = 0;
    SHARDC_RETURN_IF_ERROR(cpuKernelWorkspaceBytes("send_recv", args, &bytes));
    WorkspaceStorage workspace(static_cast<uint64_t>(static_cast<int64_t>(bytes) + workspaceDelta));
    workspace.give(&args);
    return fn(args);
  });
}

std::vector<uint8_t> bytesOf(const HostTensor &t) {
  const auto *p = static_cast<const uint8_t *>(t.view().data);
  return std::vector<uint8_t>(p, p + t.view().sizeBytes());
}

// The activations one stage sends the next: an f32 matrix, i64 positions and a bool mask.
std::vector<HostTensor> activations(int stage, bool filled) {
  std::vector<HostTensor> t;
  if (filled) {
    t.push_back(HostTensor::of<float>({2, 3}, randomFloats(6, -4, 4, 10u + stage)));
    t.push_back(HostTensor::of<int64_t>({3}, {stage, 7, -3}));
    HostTensor mask(program::BOOL, {2});
    auto *bits = static_cast<uint8_t *>(mask.view().data);
    bits[0] = stage % 2 == 0;
    bits[1] = 1;
    t.push_back(std::move(mask));
  } else {
    t.emplace_back(program::F32, std::vector<int64_t>{2, 3});
    t.emplace_back(program::I64, std::vector<int64_t>{3});
    t.emplace_back(program::BOOL, std::vector<int64_t>{2});
  }
  return t;
}

TEST(SendRecv, ActivationsAlongAChainOfStages) {
  const int n = 4;
  std::vector<Stage> stages(n);
  for (int r = 0; r < n; ++r) {
    Stage &s = stages[static_cast<size_t>(r)];
    s.attrs.i("num_ranks", n);
    if (r + 1 < n) {
      s.inputs = activations(r, true);
      s.attrs.i("to", r + 1);
    }
    if (r > 0) {
      s.outputs = activations(r, false);
      s.attrs.i("from", r - 1);
    }
  }
  auto comms = makeLocalWorld(n);
  for (const Status &s : runStages(stages, comms))
    ASSERT_TRUE(s.isOk()) << s.message();
  const uint64_t messageBytes = 6 * 4 + 3 * 8 + 2;
  for (int r = 1; r < n; ++r)
    for (size_t i = 0; i < 3; ++i)
      EXPECT_EQ(bytesOf(stages[static_cast<size_t>(r)].outputs[i]),
                bytesOf(stages[static_cast<size_t>(r - 1)].inputs[i]))
          << "stage " << r << " tensor " << i;
  for (int r = 0; r < n; ++r)
    EXPECT_EQ(comms[static_cast<size_t>(r)]->counters().bytesSent[kSendRecv],
              r + 1 < n ? collectiveBytesSent(CollectiveKind::SendRecv, messageBytes, n, 1) : 0u);
}

// 1F1B's steady state: each of two stages sends its tensor and receives the other's in one
// call, one tensor each way (sent from and received into the tensors themselves).
TEST(SendRecv, TwoStagesExchangeInOneCall) {
  std::vector<Stage> stages(2);
  for (int r = 0; r < 2; ++r) {
    Stage &s = stages[static_cast<size_t>(r)];
    s.inputs.push_back(HostTensor::of<float>({5}, randomFloats(5, -1, 1, 40u + r)));
    s.outputs.emplace_back(program::F32, std::vector<int64_t>{5});
    s.attrs.i("num_ranks", 2).i("to", 1 - r).i("from", 1 - r);
  }
  auto comms = makeLocalWorld(2);
  for (const Status &s : runStages(stages, comms))
    ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(bytesOf(stages[0].outputs[0]), bytesOf(stages[1].inputs[0]));
  EXPECT_EQ(bytesOf(stages[1].outputs[0]), bytesOf(stages[0].inputs[0]));
}

// The workspace packs only where several tensors travel: none for one each way; the packed
// message, aligned, for three. One byte short is a clean error before anything is sent.
TEST(SendRecv, WorkspaceOnlyForSeveralTensorsAndOneByteShortIsACleanError) {
  Stage one;
  one.inputs.push_back(HostTensor::of<float>({5}, randomFloats(5, -1, 1, 1)));
  one.attrs.i("num_ranks", 2).i("to", 1);
  KernelArgs args;
  args.inputs = views(one.inputs);
  args.attrs = &one.attrs.map();
  uint64_t bytes = 1;
  ASSERT_KERNEL_OK(cpuKernelWorkspaceBytes("send_recv", args, &bytes));
  EXPECT_EQ(bytes, 0u);

  auto makeStages = [] {
    std::vector<Stage> stages(2);
    stages[0].inputs = activations(0, true);
    stages[0].attrs.i("num_ranks", 2).i("to", 1);
    stages[1].outputs = activations(1, false);
    stages[1].attrs.i("num_ranks", 2).i("from", 0);
    return stages;
  };
  auto stages = makeStages();
  args = KernelArgs();
  args.inputs = views(stages[0].inputs);
  args.attrs = &stages[0].attrs.map();
  ASSERT_KERNEL_OK(cpuKernelWorkspaceBytes("send_recv", args, &bytes));
  EXPECT_EQ(bytes, 6u * 4 + 3 * 8 + 2); // one piece: the packed message
  auto comms = makeLocalWorld(2, 5.0);
  for (const Status &s : runStages(stages, comms, /*workspaceDelta=*/-1))
    EXPECT_KERNEL_ERROR(s, "send_recv: needs at least ");
  for (const auto &comm : comms)
    EXPECT_EQ(comm->counters().totalBytesSent(), 0u);
  stages = makeStages();
  for (const Status &s : runStages(stages, comms))
    EXPECT_TRUE(s.isOk()) << s.message();
}

// Calls that cannot be right, each refused on the rank that makes it with nothing sent.
TEST(SendRecv, AttributesACallCannotHaveAreRefused) {
  auto comms = makeLocalWorld(2, 0.2);
  auto refused = [&](std::vector<HostTensor> inputs, std::vector<HostTensor> outputs,
                     const Attrs &attrs) {
    std::vector<Stage> stages(2);
    stages[0].inputs = std::move(inputs);
    stages[0].outputs = std::move(outputs);
    stages[0].attrs = attrs;
    KernelFn fn = findCpuKernel("send_recv");
    KernelArgs args;
    args.inputs = views(stages[0].inputs);
    args.outputs = views(stages[0].outputs);
    args.attrs = &stages[0].attrs.map();
    args.comm = comms[0].get();
    Status status = fn(args);
    EXPECT_FALSE(status.isOk());
    return status.message();
  };
  auto tensor = [] {
    std::vector<HostTensor> t;
    t.push_back(HostTensor::of<float>({2}, {1, 2}));
    return t;
  };
  EXPECT_EQ(refused({}, {}, Attrs().i("num_ranks", 2)),
            "send_recv: needs a tensor to send or to receive");
  EXPECT_EQ(refused(tensor(), {}, Attrs().i("num_ranks", 2)),
            "send_recv: to must be a rank in [0, 2), got -1");
  EXPECT_EQ(refused(tensor(), {}, Attrs().i("num_ranks", 2).i("to", 2)),
            "send_recv: to must be a rank in [0, 2), got 2");
  EXPECT_EQ(refused(tensor(), {}, Attrs().i("num_ranks", 2).i("to", 1).i("from", 1)),
            "send_recv: from is 1, but there is nothing to receive");
  EXPECT_EQ(refused(tensor(), {}, Attrs().i("num_ranks", 1).i("to", 0)),
            "send_recv: num_ranks must be at least 2, got 1");
  EXPECT_EQ(refused(tensor(), {}, Attrs().i("num_ranks", 3).i("to", 1)),
            "send_recv: num_ranks is 3, but the communicator has 2 ranks");
  // A peer that is this rank itself: the communicator refuses it.
  EXPECT_EQ(refused(tensor(), {}, Attrs().i("num_ranks", 2).i("to", 0)),
            "rank 0: send_recv #1: a rank cannot send to itself");
  EXPECT_EQ(comms[0]->counters().totalBytesSent(), 0u);
}

} // namespace
} // namespace shardc::runtime::testing
