// The executor on hand-built programs: results against values computed here, input checking,
// absent operands, and kernel errors reported with rank, op and kernel.
#include "runtime/executor/executor.h"
#include "tests/unit/runtime/test_util.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace shardc::runtime {
namespace {

using testing::addBuffer;
using testing::addOp;
using ::testing::HasSubstr;
using ::testing::StartsWith;

HostTensor f32Tensor(std::vector<int64_t> shape, const std::vector<float> &values) {
  HostTensor t = makeHostTensor(program::F32, std::move(shape));
  EXPECT_EQ(t.bytes.size(), values.size() * sizeof(float));
  std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}

const std::vector<float> kBias = testing::addMatmulBias();
const std::vector<float> kWeight = testing::addMatmulWeight();

// z = (x + b) @ w (see addMatmulBundle), with the parameter b also bound as a graph output.
program::Program addMatmulProgram() {
  program::Program p = testing::addMatmulBundle().programs(0);
  program::Binding *param = p.add_outputs();
  param->set_name("b");
  param->set_buffer(1);
  return p;
}

std::shared_ptr<const AlignedBuffer>
weightsOf(size_t size, const std::vector<std::pair<size_t, std::vector<float>>> &placed) {
  auto weights = std::make_shared<AlignedBuffer>();
  EXPECT_TRUE(AlignedBuffer::allocate(size, "weights", weights.get()).isOk());
  for (const auto &[offset, values] : placed)
    std::memcpy(weights->data() + offset, values.data(), values.size() * sizeof(float));
  return weights;
}

std::unique_ptr<Executor> makeAddMatmulExecutor() {
  std::unique_ptr<Executor> executor;
  Status status =
      Executor::create(addMatmulProgram(), weightsOf(128, {{0, kBias}, {64, kWeight}}), &executor);
  EXPECT_TRUE(status.isOk()) << status.message();
  return executor;
}

TEST(Executor, RunsAddThenMatmul) {
  std::unique_ptr<Executor> executor = makeAddMatmulExecutor();
  ASSERT_NE(executor, nullptr);
  // Two runs with different inputs: nothing from the first run may leak into the second.
  for (const std::vector<float> &x :
       {std::vector<float>{1, 2, 3, 4, 5, 6}, std::vector<float>{-3, 0.25f, 8, 1, -1, 0}}) {
    std::map<std::string, HostTensor> outputs;
    Status status = executor->run({{"x", f32Tensor({2, 3}, x)}}, &outputs);
    ASSERT_TRUE(status.isOk()) << status.message();
    ASSERT_EQ(outputs.size(), 2u);
    const HostTensor &z = outputs.at("z");
    EXPECT_EQ(z.describe(), "f32[2x2]");
    std::vector<float> expected = testing::expectedAddMatmul(x);
    for (int i = 0; i < 4; ++i)
      EXPECT_NEAR(z.as<float>()[i], expected[i], 1e-5f) << "element " << i;
    // An output bound to a parameter reads straight from the weights region.
    const HostTensor &b = outputs.at("b");
    EXPECT_EQ(std::memcmp(b.bytes.data(), kBias.data(), 24), 0);
  }
}

// The same program on a device: the arena, weights and workspace in the device's memory
// (counted by it), inputs and outputs copied through it, state read and written through it.
// The cpu device takes that path too, so it is checked on every machine; the cuda device where
// a GPU is visible.
void runAddMatmulOn(Device &device) {
  std::unique_ptr<Executor> executor;
  const uint64_t before = device.memoryCounters().inUse;
  Status status = Executor::create(addMatmulProgram(), weightsOf(128, {{0, kBias}, {64, kWeight}}),
                                   &executor, nullptr, nullptr, &device);
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(executor->device(), &device);
  const program::Program &p = executor->program();
  // The host allocator's sizes (as planned); the workspace at least the program's (a device's
  // kernels may need more). The CPU reads the caller's weights in place; a GPU holds a copy.
  const uint64_t weights =
      device.addressesHostMemory() ? 0 : AlignedBuffer::allocationSize(p.weights_bytes());
  const uint64_t planned = AlignedBuffer::allocationSize(p.arena_bytes()) + weights +
                           AlignedBuffer::allocationSize(p.workspace_bytes());
  if (device.kind() == DeviceKind::Cpu)
    EXPECT_EQ(device.memoryCounters().inUse - before, planned);
  else
    EXPECT_GE(device.memoryCounters().inUse - before, planned);
  EXPECT_EQ(device.memoryCounters().inUse - before,
            AlignedBuffer::allocationSize(p.arena_bytes()) + weights + executor->workspaceBytes());
  for (const std::vector<float> &x :
       {std::vector<float>{1, 2, 3, 4, 5, 6}, std::vector<float>{-3, 0.25f, 8, 1, -1, 0}}) {
    std::map<std::string, HostTensor> outputs;
    status = executor->run({{"x", f32Tensor({2, 3}, x)}}, &outputs);
    ASSERT_TRUE(status.isOk()) << status.message();
    std::vector<float> expected = testing::expectedAddMatmul(x);
    for (int i = 0; i < 4; ++i)
      EXPECT_NEAR(outputs.at("z").as<float>()[i], expected[i], 1e-5f) << "element " << i;
    EXPECT_EQ(std::memcmp(outputs.at("b").bytes.data(), kBias.data(), 24), 0);
    float z0 = 0;
    ASSERT_TRUE(executor->readOutput("z", &z0, sizeof z0).isOk());
    EXPECT_EQ(z0, outputs.at("z").as<float>()[0]);
  }
  // A non-finite value is located on the device as on the host.
  Executor::NonFiniteSite site;
  std::map<std::string, HostTensor> outputs;
  const float huge = 3e38f;
  ASSERT_TRUE(executor->locateNonFinite({{"x", f32Tensor({2, 3}, {huge, huge, huge, huge, huge,
                                                                  huge})}},
                                        &outputs, /*infinities=*/true, &site)
                  .isOk());
  EXPECT_EQ(site.kernel, "matmul");
  executor.reset();
  EXPECT_EQ(device.memoryCounters().inUse, before);
}

TEST(Executor, RunsOnTheCpuDeviceThroughTheDevicePath) {
  std::unique_ptr<Device> device = createCpuDevice();
  runAddMatmulOn(*device);
}

TEST(Executor, RunsOnTheCudaDevice) {
  std::string why;
  if (!cudaDeviceAvailable(&why))
    GTEST_SKIP() << why;
  std::unique_ptr<Device> device;
  ASSERT_TRUE(createCudaDevice(0, &device).isOk());
  runAddMatmulOn(*device);
}

// Diagnosis of a step gone non-finite: an input that holds a NaN is named before any op; huge
// finite inputs name the first op whose output overflows (the matmul, not the add); finite
// values find nothing. NaNs and infinities are looked for apart (a mask input holds -inf by
// design). Every op runs either way.
TEST(Executor, LocatesTheFirstNonFiniteValueInProgramOrder) {
  std::unique_ptr<Executor> executor = makeAddMatmulExecutor();
  ASSERT_NE(executor, nullptr);
  std::map<std::string, HostTensor> outputs;
  Executor::NonFiniteSite site;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  ASSERT_TRUE(executor->locateNonFinite({{"x", f32Tensor({2, 3}, {1, nan, 3, 4, 5, 6})}},
                                        &outputs, /*infinities=*/false, &site)
                  .isOk());
  EXPECT_EQ(site.describe(), "input 'x'");

  const float huge = 3e38f;
  ASSERT_TRUE(executor->locateNonFinite({{"x", f32Tensor({2, 3}, {huge, huge, huge, huge, huge,
                                                                  huge})}},
                                        &outputs, /*infinities=*/true, &site)
                  .isOk());
  ASSERT_TRUE(site.found());
  const program::Op &op = executor->program().ops(site.op);
  EXPECT_EQ(op.kernel(), "matmul");
  EXPECT_EQ(site.describe(), "op '" + op.name() + "' (kernel matmul)");
  EXPECT_FALSE(std::isfinite(outputs.at("z").as<float>()[0]));

  ASSERT_TRUE(executor->locateNonFinite({{"x", f32Tensor({2, 3}, {1, 2, 3, 4, 5, 6})}}, &outputs,
                                        /*infinities=*/true, &site)
                  .isOk());
  EXPECT_FALSE(site.found());
  EXPECT_EQ(site.describe(), "");

  // Looking for NaN: an input holding infinities (as a mask does) is not named; the matmul
  // where -inf and +inf terms meet is.
  const float inf = std::numeric_limits<float>::infinity();
  ASSERT_TRUE(executor->locateNonFinite({{"x", f32Tensor({2, 3}, {-inf, 1, inf, 4, 5, 6})}},
                                        &outputs, /*infinities=*/false, &site)
                  .isOk());
  EXPECT_EQ(site.describe(), "op '" + op.name() + "' (kernel matmul)");
}

// Given no device, an executor runs on a CPU device of its own: the arena is one allocation
// of the planned size and the workspace another, both in its memory and counted by the
// tracker; the weights are the caller's, read in place (not copied, not counted again).
TEST(Executor, WithoutADeviceRunsOnItsOwnCpuDeviceInPlannedAllocations) {
  MemoryTracker tracker;
  std::shared_ptr<const AlignedBuffer> weights = weightsOf(128, {{0, kBias}, {64, kWeight}});
  std::unique_ptr<Executor> executor;
  ASSERT_TRUE(Executor::create(addMatmulProgram(), weights, &executor, &tracker).isOk());
  ASSERT_NE(executor->device(), nullptr);
  EXPECT_EQ(executor->device()->kind(), DeviceKind::Cpu);
  EXPECT_TRUE(executor->memoryOnHost());
  const program::Program &p = executor->program();
  EXPECT_EQ(p.arena_bytes(), 192u);
  const MemoryByUse live = tracker.liveByUse();
  EXPECT_EQ(live[static_cast<size_t>(MemoryUse::Arena)], 192u);
  EXPECT_EQ(live[static_cast<size_t>(MemoryUse::Workspace)],
            AlignedBuffer::allocationSize(p.workspace_bytes()));
  EXPECT_EQ(live[static_cast<size_t>(MemoryUse::Weights)], 0u);
  EXPECT_EQ(executor->device()->memoryCounters().allocations, 2u);
  EXPECT_EQ(executor->device()->memoryCounters().inUse,
            192u + AlignedBuffer::allocationSize(p.workspace_bytes()));
  // The parameter bound as an output is read from the caller's weights.
  std::map<std::string, HostTensor> outputs;
  ASSERT_TRUE(executor->run({{"x", f32Tensor({2, 3}, {1, 2, 3, 4, 5, 6})}}, &outputs).isOk());
  EXPECT_EQ(std::memcmp(outputs.at("b").bytes.data(), weights->data(), 24), 0);
  executor.reset();
  EXPECT_EQ(tracker.liveByUse()[static_cast<size_t>(MemoryUse::Arena)], 0u);
}

TEST(Executor, InputDtypeOrShapeMismatch) {
  std::unique_ptr<Executor> executor = makeAddMatmulExecutor();
  ASSERT_NE(executor, nullptr);
  std::map<std::string, HostTensor> outputs;
  HostTensor wrongDtype = makeHostTensor(program::I64, {2, 3});
  EXPECT_EQ(executor->run({{"x", wrongDtype}}, &outputs).message(),
            "input 'x': expected f32[2x3], got i64[2x3]");
  EXPECT_EQ(executor->run({{"x", makeHostTensor(program::F32, {3, 2})}}, &outputs).message(),
            "input 'x': expected f32[2x3], got f32[3x2]");
  EXPECT_EQ(executor->run({{"x", makeHostTensor(program::F32, {2, 3, 1})}}, &outputs).message(),
            "input 'x': expected f32[2x3], got f32[2x3x1]");
  EXPECT_EQ(executor->run({{"x", makeHostTensor(program::F32, {})}}, &outputs).message(),
            "input 'x': expected f32[2x3], got f32[]");
  HostTensor shortBytes = makeHostTensor(program::F32, {2, 3});
  shortBytes.bytes.resize(8);
  EXPECT_EQ(executor->run({{"x", shortBytes}}, &outputs).message(),
            "input 'x': holds 8 bytes, but f32[2x3] is 24 bytes");
}

TEST(Executor, MissingAndUnexpectedInputs) {
  std::unique_ptr<Executor> executor = makeAddMatmulExecutor();
  ASSERT_NE(executor, nullptr);
  std::map<std::string, HostTensor> outputs;
  EXPECT_EQ(executor->run({}, &outputs).message(), "missing input 'x' (f32[2x3])");
  EXPECT_EQ(executor
                ->run({{"x", makeHostTensor(program::F32, {2, 3})},
                       {"q", makeHostTensor(program::F32, {1})}},
                      &outputs)
                .message(),
            "unexpected input 'q' (the program's inputs are: 'x')");
}

TEST(Executor, KernelErrorNamesRankOpAndKernel) {
  program::Program p = addMatmulProgram();
  p.set_rank(0);
  // The matmul output shape no longer matches its operands: the kernel must refuse.
  p.mutable_buffers(4)->set_shape(1, 1);
  p.mutable_buffers(4)->set_size_bytes(8);
  std::unique_ptr<Executor> executor;
  ASSERT_TRUE(Executor::create(p, weightsOf(128, {{0, kBias}, {64, kWeight}}), &executor).isOk());
  std::map<std::string, HostTensor> outputs;
  Status status = executor->run({{"x", makeHostTensor(program::F32, {2, 3})}}, &outputs);
  ASSERT_FALSE(status.isOk());
  EXPECT_THAT(status.message(), StartsWith("rank 0, op 'MatMul_3' (kernel matmul): "));
}

TEST(Executor, AbsentOptionalInputIsNull) {
  // y = clip(x, <no min>, hi) with hi a scalar constant.
  program::Program p;
  p.set_rank(0);
  p.set_world_size(1);
  int x = addBuffer(&p, "x", program::F32, {4}, program::INPUT, program::ARENA, 0);
  int hi = addBuffer(&p, "hi", program::F32, {}, program::CONSTANT, program::WEIGHTS, 0);
  int y = addBuffer(&p, "y", program::F32, {4}, program::ACTIVATION, program::ARENA, 64);
  addOp(&p, "clip", "Clip_0", {x, -1, hi}, {y});
  program::Binding *in = p.add_inputs();
  in->set_name("x");
  in->set_buffer(x);
  program::Binding *out = p.add_outputs();
  out->set_name("y");
  out->set_buffer(y);
  p.set_arena_bytes(128);
  p.set_weights_bytes(64);

  std::unique_ptr<Executor> executor;
  Status status = Executor::create(p, weightsOf(64, {{0, {0.5f}}}), &executor);
  ASSERT_TRUE(status.isOk()) << status.message();
  std::map<std::string, HostTensor> outputs;
  status = executor->run({{"x", f32Tensor({4}, {-7.0f, 0.25f, 0.5f, 9.0f})}}, &outputs);
  ASSERT_TRUE(status.isOk()) << status.message();
  const float *result = outputs.at("y").as<float>();
  EXPECT_EQ(result[0], -7.0f);
  EXPECT_EQ(result[1], 0.25f);
  EXPECT_EQ(result[2], 0.5f);
  EXPECT_EQ(result[3], 0.5f);
}

TEST(Executor, ProgramWithoutWeightsOrOps) {
  // An input passed straight through as an output: no weights, no ops.
  program::Program p;
  int x = addBuffer(&p, "x", program::I32, {3}, program::INPUT, program::ARENA, 0);
  p.add_inputs()->set_name("x");
  p.mutable_inputs(0)->set_buffer(x);
  p.add_outputs()->set_name("x_out");
  p.mutable_outputs(0)->set_buffer(x);
  p.set_arena_bytes(64);
  std::unique_ptr<Executor> executor;
  ASSERT_TRUE(Executor::create(p, nullptr, &executor).isOk());
  HostTensor in = makeHostTensor(program::I32, {3});
  in.as<int32_t>()[2] = 42;
  std::map<std::string, HostTensor> outputs;
  ASSERT_TRUE(executor->run({{"x", in}}, &outputs).isOk());
  EXPECT_EQ(outputs.at("x_out").bytes, in.bytes);
}

TEST(Executor, RejectsInvalidProgramsAndShortWeights) {
  std::unique_ptr<Executor> executor;
  program::Program p = addMatmulProgram();
  p.mutable_ops(0)->set_kernel("nope");
  EXPECT_EQ(Executor::create(p, weightsOf(128, {}), &executor).message(),
            "op 0 ('Add_0'): unknown kernel 'nope'");
  EXPECT_EQ(executor, nullptr);
  EXPECT_EQ(Executor::create(addMatmulProgram(), weightsOf(100, {}), &executor).message(),
            "the weights region needs 128 bytes but only 100 were loaded");
  EXPECT_EQ(Executor::create(addMatmulProgram(), nullptr, &executor).message(),
            "the weights region needs 128 bytes but only 0 were loaded");
}

// A second run into the same output map overwrites the tensors in place (no reallocation when
// the caller hands the same map back) and drops entries that are not outputs.
TEST(Executor, ReusesTheCallersOutputTensors) {
  std::unique_ptr<Executor> executor = makeAddMatmulExecutor();
  ASSERT_NE(executor, nullptr);
  std::map<std::string, HostTensor> inputs{{"x", f32Tensor({2, 3}, {1, 2, 3, 4, 5, 6})}};
  std::map<std::string, HostTensor> outputs;
  ASSERT_TRUE(executor->run(inputs, &outputs).isOk());
  std::map<std::string, const uint8_t *> first;
  for (const auto &[name, tensor] : outputs)
    first[name] = tensor.bytes.data();
  std::map<std::string, HostTensor> expected = outputs;
  outputs["not_an_output"] = f32Tensor({1}, {0});
  outputs.at("z").bytes.assign(outputs.at("z").bytes.size(), 0); // stale values to overwrite
  ASSERT_TRUE(executor->run(inputs, &outputs).isOk());
  EXPECT_EQ(outputs.count("not_an_output"), 0u);
  ASSERT_EQ(outputs.size(), expected.size());
  for (const auto &[name, tensor] : outputs) {
    EXPECT_EQ(tensor.bytes.data(), first[name]) << name << " was reallocated";
    EXPECT_EQ(tensor.bytes, expected[name].bytes) << name;
  }
}

} // namespace
} // namespace shardc::runtime
