// Memory accounting: the tracker and its scopes, what AlignedBuffer and HostTensor report to it,
// the planned peak of a program (runtime/common/planned_memory.h), the executor's measured peak
// against it, the workspace check at load, and data sources that refill tensors in place.
#include "runtime/common/planned_memory.h"
#include "runtime/data/npy.h"
#include "runtime/data/token_stream.h"
#include "runtime/executor/executor.h"
#include "runtime/loader/program_validation.h"
#include "runtime/memory/memory_report.h"
#include "runtime/support/aligned_buffer.h"
#include "runtime/support/memory_tracker.h"
#include "tests/unit/runtime/test_util.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace shardc::runtime {
namespace {

using testing::addBuffer;
using testing::addOp;

uint64_t use(const MemoryByUse &bytes, MemoryUse u) { return bytes[static_cast<size_t>(u)]; }

TEST(MemoryTracker, CountsLiveBytesThePeakAndAllocations) {
  MemoryTracker tracker;
  tracker.allocated(MemoryUse::Arena, 100);
  tracker.allocated(MemoryUse::StepInputs, 50);
  tracker.released(MemoryUse::StepInputs, 50);
  tracker.allocated(MemoryUse::StepOutputs, 20);
  EXPECT_EQ(tracker.liveBytes(), 120u);
  EXPECT_EQ(tracker.peakBytes(), 150u);
  EXPECT_EQ(use(tracker.peakByUse(), MemoryUse::StepInputs), 50u);
  EXPECT_EQ(use(tracker.peakByUse(), MemoryUse::StepOutputs), 0u);
  EXPECT_EQ(use(tracker.liveByUse(), MemoryUse::StepOutputs), 20u);
  EXPECT_EQ(tracker.allocationCount(), 3u);
  // Reaching the peak again records the latest breakdown.
  tracker.allocated(MemoryUse::Workspace, 30);
  EXPECT_EQ(tracker.peakBytes(), 150u);
  EXPECT_EQ(use(tracker.peakByUse(), MemoryUse::Workspace), 30u);
  EXPECT_STREQ(memoryUseName(MemoryUse::StepOutputs), "step outputs");
}

TEST(MemoryScope, NestsAndANullTrackerTurnsCountingOff) {
  MemoryTracker tracker;
  EXPECT_EQ(currentMemoryCharge().tracker, nullptr);
  {
    MemoryScope outer(&tracker, MemoryUse::Weights);
    EXPECT_EQ(currentMemoryCharge().tracker, &tracker);
    {
      MemoryScope off(nullptr, MemoryUse::Arena);
      EXPECT_EQ(currentMemoryCharge().tracker, nullptr);
      HostTensor untracked = makeHostTensor(program::F32, {4});
    }
    EXPECT_EQ(currentMemoryCharge().use, MemoryUse::Weights);
  }
  EXPECT_EQ(currentMemoryCharge().tracker, nullptr);
  EXPECT_EQ(tracker.allocationCount(), 0u);
}

TEST(MemoryTracker, BuffersAndTensorsAreChargedWhereTheyWereAllocated) {
  MemoryTracker tracker;
  AlignedBuffer buffer;
  HostTensor input, output;
  {
    MemoryScope scope(&tracker, MemoryUse::Arena);
    ASSERT_TRUE(AlignedBuffer::allocate(100, "test", &buffer).isOk());
  }
  {
    MemoryScope scope(&tracker, MemoryUse::StepInputs);
    input = makeHostTensor(program::F32, {3}); // 12 bytes
  }
  {
    MemoryScope scope(&tracker, MemoryUse::StepOutputs);
    output = makeHostTensor(program::I64, {2}); // 16 bytes
  }
  // AlignedBuffer counts what it obtained (rounded up to 64), a tensor the bytes it holds.
  EXPECT_EQ(use(tracker.liveByUse(), MemoryUse::Arena), 128u);
  EXPECT_EQ(use(tracker.liveByUse(), MemoryUse::StepInputs), 12u);
  EXPECT_EQ(use(tracker.liveByUse(), MemoryUse::StepOutputs), 16u);
  // Storage moves and swaps with its charge; releasing it outside any scope still reaches the
  // tracker and use it was charged to.
  std::swap(input, output);
  HostTensor moved = std::move(input);
  moved = HostTensor();
  output = HostTensor();
  AlignedBuffer other = std::move(buffer);
  other = AlignedBuffer();
  EXPECT_EQ(tracker.liveBytes(), 0u);
  EXPECT_EQ(tracker.peakBytes(), 128u + 12u + 16u);
  EXPECT_EQ(tracker.allocationCount(), 3u);
}

TEST(MemoryTracker, ReshapingATensorToItsSizeAllocatesNothing) {
  MemoryTracker tracker;
  MemoryScope scope(&tracker, MemoryUse::StepInputs);
  HostTensor t = makeHostTensor(program::F32, {2, 3});
  const uint8_t *data = t.bytes.data();
  reshapeHostTensor(program::F32, {3, 2}, &t);
  reshapeHostTensor(program::I32, {6}, &t);
  EXPECT_EQ(t.bytes.data(), data);
  EXPECT_EQ(t.describe(), "i32[6]");
  EXPECT_EQ(tracker.allocationCount(), 1u);
}

// z = (x + b) @ w (test_util), with roles: x an input, y and z activations, b and w
// parameters. Live arena bytes: x (24) as it is copied in, x and y (48) during the add, y and z
// (40) during the matmul, z (16) as it is copied out.
program::Program roledMatmulProgram() {
  program::Program p = testing::addMatmulBundle().programs(0);
  const program::BufferRole roles[] = {program::ROLE_INPUT, program::ROLE_PARAMETER,
                                       program::ROLE_PARAMETER, program::ROLE_ACTIVATION,
                                       program::ROLE_ACTIVATION};
  for (int i = 0; i < p.buffers_size(); ++i)
    p.mutable_buffers(i)->set_role(roles[i]);
  p.set_planned_peak_bytes(planPeakMemory(p).total);
  return p;
}

TEST(PlannedMemory, BreaksThePeakDownByAllocationAndRole) {
  const program::Program p = roledMatmulProgram();
  PlannedMemory plan = planPeakMemory(p);
  EXPECT_EQ(plan.arena, 192u);
  EXPECT_EQ(plan.arenaPeakPoint, 0);
  EXPECT_EQ(plan.arenaLive, 48u);
  EXPECT_EQ(plan.arenaLiveByRole[program::ROLE_INPUT], 24u);
  EXPECT_EQ(plan.arenaLiveByRole[program::ROLE_ACTIVATION], 24u);
  EXPECT_EQ(plan.arenaUnused, 144u);
  EXPECT_EQ(plan.weights, 128u);
  EXPECT_EQ(plan.weightsParameters, 48u);
  EXPECT_EQ(plan.weightsConstants, 0u);
  EXPECT_EQ(plan.weightsPadding, 80u);
  EXPECT_EQ(plan.workspace, 64u); // no workspace still allocates the minimum 64 bytes
  EXPECT_EQ(plan.stepInputs, 24u);
  EXPECT_EQ(plan.stepOutputs, 16u);
  EXPECT_EQ(plan.total, 192u + 128u + 64u + 24u + 16u);
  EXPECT_STREQ(bufferRoleName(program::ROLE_OPTIMIZER_STATE), "optimizer state");
}

TEST(PlannedMemory, TheExecutorsMeasuredPeakEqualsThePlan) {
  MemoryTracker tracker;
  const program::Program p = roledMatmulProgram();
  auto weights = std::make_shared<AlignedBuffer>();
  {
    MemoryScope scope(&tracker, MemoryUse::Weights);
    ASSERT_TRUE(AlignedBuffer::allocate(128, "weights", weights.get()).isOk());
  }
  std::unique_ptr<Executor> executor;
  Status status = Executor::create(p, weights, &executor, &tracker);
  ASSERT_TRUE(status.isOk()) << status.message();
  std::map<std::string, HostTensor> inputs, outputs;
  {
    MemoryScope scope(&tracker, MemoryUse::StepInputs);
    inputs["x"] = testing::makeTensor<float>(program::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  }
  ASSERT_TRUE(executor->run(inputs, &outputs).isOk());
  const uint64_t afterFirstRun = tracker.allocationCount();
  ASSERT_TRUE(executor->run(inputs, &outputs).isOk());
  EXPECT_EQ(tracker.allocationCount(), afterFirstRun) << "a second run allocated";

  PeakMemoryReport report = comparePeakMemory(p, tracker);
  EXPECT_TRUE(report.planned);
  EXPECT_TRUE(report.agrees) << report.text;
  EXPECT_EQ(report.text, "memory: planned peak 424 bytes, measured peak 424 bytes (arena 192, "
                         "weights 128, workspace 64, step inputs 24, step outputs 16)");

  // A plan that disagrees says where.
  program::Program wrong = p;
  wrong.set_planned_peak_bytes(400);
  report = comparePeakMemory(wrong, tracker);
  EXPECT_FALSE(report.agrees);
  EXPECT_NE(report.text.find("measured peak 424 bytes differs from the planned peak 400 bytes"),
            std::string::npos)
      << report.text;
  wrong.set_planned_peak_bytes(0);
  report = comparePeakMemory(wrong, tracker);
  EXPECT_FALSE(report.planned);
  EXPECT_NE(report.text.find("records no planned peak"), std::string::npos) << report.text;
}

// x f32[2x3] -> reduce_sum over axis 1 -> y f32[2]: the kernel needs two doubles of workspace.
program::Program reduceProgram(uint64_t workspaceBytes) {
  program::Program p;
  p.set_rank(0);
  p.set_world_size(1);
  int x = addBuffer(&p, "x", program::F32, {2, 3}, program::INPUT, program::ARENA, 0);
  int y = addBuffer(&p, "y", program::F32, {2}, program::ACTIVATION, program::ARENA, 64);
  int sum = addOp(&p, "reduce_sum", "sum", {x}, {y});
  (*p.mutable_ops(sum)->mutable_attrs())["axes"].mutable_ints()->add_values(1);
  (*p.mutable_ops(sum)->mutable_attrs())["keepdims"].set_i(0);
  program::Binding *in = p.add_inputs();
  in->set_name("x");
  in->set_buffer(x);
  program::Binding *out = p.add_outputs();
  out->set_name("y");
  out->set_buffer(y);
  p.set_arena_bytes(128);
  p.set_workspace_bytes(workspaceBytes);
  return p;
}

TEST(Workspace, EveryOpsNeedIsCheckedAtLoadAndTheKernelsGetIt) {
  Status status = validateProgram(reduceProgram(15));
  ASSERT_FALSE(status.isOk());
  EXPECT_EQ(status.message(), "op 0 ('sum'): kernel reduce_sum needs 16 bytes of workspace, but "
                              "workspace_bytes is 15");

  std::unique_ptr<Executor> executor;
  status = Executor::create(reduceProgram(16), nullptr, &executor);
  ASSERT_TRUE(status.isOk()) << status.message();
  std::map<std::string, HostTensor> inputs, outputs;
  inputs["x"] = testing::makeTensor<float>(program::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  ASSERT_TRUE(executor->run(inputs, &outputs).isOk());
  const float *y = outputs.at("y").as<float>();
  EXPECT_EQ(y[0], 6.0f);
  EXPECT_EQ(y[1], 15.0f);
}

TEST(DataSources, TokenBatchesAreWrittenIntoTheSameTensors) {
  testing::TempDir dir;
  std::string tokens;
  for (uint16_t t = 0; t < 100; ++t)
    tokens.append(reinterpret_cast<const char *>(&t), sizeof t);
  testing::writeBytes(dir.file("tokens.bin"), tokens);
  TokenStream stream;
  ASSERT_TRUE(TokenStream::open(dir.file("tokens.bin"), 2, 8, 0, &stream).isOk());
  EXPECT_EQ(stream.heldBytes(), 200u);
  MemoryTracker tracker;
  MemoryScope scope(&tracker, MemoryUse::StepInputs);
  HostTensor inputs, targets;
  ASSERT_TRUE(stream.batch(1, &inputs, &targets).isOk());
  const uint64_t afterFirst = tracker.allocationCount();
  EXPECT_EQ(afterFirst, 2u);
  for (int64_t step = 2; step <= 5; ++step)
    ASSERT_TRUE(stream.batch(step, &inputs, &targets).isOk());
  EXPECT_EQ(tracker.allocationCount(), afterFirst);
  EXPECT_EQ(inputs.describe(), "i64[2x8]");
  EXPECT_EQ(targets.as<int64_t>()[0], inputs.as<int64_t>()[0] + 1);
}

TEST(DataSources, NpyTensorsHoldExactlyTheirData) {
  testing::TempDir dir;
  HostTensor t = testing::makeTensor<float>(program::F32, {3}, {1, 2, 3});
  ASSERT_TRUE(writeNpy(dir.file("t.npy"), t).isOk());
  MemoryTracker tracker;
  HostTensor back;
  {
    MemoryScope scope(&tracker, MemoryUse::StepInputs);
    ASSERT_TRUE(readNpy(dir.file("t.npy"), &back).isOk());
  }
  EXPECT_EQ(back.bytes, t.bytes);
  // The header is not part of the tensor's storage.
  EXPECT_EQ(tracker.liveBytes(), 12u);
  EXPECT_EQ(tracker.allocationCount(), 1u);
}

} // namespace
} // namespace shardc::runtime
