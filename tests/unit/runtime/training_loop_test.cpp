// The training loop on a hand-built training-step program: state initialisation from
// state_init, the roles of the inputs, steps with their loss and updated state, checkpoint
// snapshot/restore, and the validation of state_init.
//
// The program trains w f32[2] with SGD (momentum 0) on loss = sum(w * x), x a batch input
// f32[2] (B = 2 rows of one value each). d loss / d w = x, so w_k = w_{k-1} - lr * x_k:
// every value below can be computed by hand.
#include "runtime/common/planned_memory.h"
#include "runtime/data/npy.h"
#include "runtime/executor/executor.h"
#include "runtime/loader/program_validation.h"
#include "runtime/memory/memory_report.h"
#include "runtime/support/memory_tracker.h"
#include "runtime/training/batch_source.h"
#include "runtime/training/training_loop.h"
#include "runtime/training/training_signature.h"
#include "tests/unit/runtime/test_util.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <gtest/gtest.h>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace shardc::runtime {
namespace {

using testing::addBuffer;
using testing::addOp;

void setDouble(program::Program *p, int op, const char *name, double value) {
  (*p->mutable_ops(op)->mutable_attrs())[name].set_d(value);
}

// (Not named "bind": argument-dependent lookup would pick std::bind for a std::string argument.)
void addBinding(google::protobuf::RepeatedPtrField<program::Binding> *bindings,
                const std::string &name, int buffer) {
  program::Binding *b = bindings->Add();
  b->set_name(name);
  b->set_buffer(buffer);
}

// The weights file: the WEIGHTS region (the i64 constant 1 at 0), then w's initial value
// {1, -1} at 64. With `inPlace`, the update writes w and its momentum buffer over their inputs
// (Binding.in_place), as shardc plans a training step: they stay in the arena between steps.
program::Program sgdProgram(bool inPlace = false) {
  program::Program p;
  p.set_rank(0);
  p.set_world_size(1);
  using program::ARENA;
  using program::WEIGHTS;
  int w = addBuffer(&p, "w", program::F32, {2}, program::INPUT, ARENA, 0);
  int buf = addBuffer(&p, "w.momentum_buffer", program::F32, {2}, program::INPUT, ARENA, 64);
  int step = addBuffer(&p, "step", program::I64, {}, program::INPUT, ARENA, 128);
  int lr = addBuffer(&p, "lr", program::F32, {}, program::INPUT, ARENA, 192);
  int x = addBuffer(&p, "x", program::F32, {2}, program::INPUT, ARENA, 256);
  int one = addBuffer(&p, "one", program::I64, {}, program::CONSTANT, WEIGHTS, 0);
  int wx = addBuffer(&p, "wx", program::F32, {2}, program::ACTIVATION, ARENA, 320);
  int loss = addBuffer(&p, "loss", program::F32, {}, program::ACTIVATION, ARENA, 384);
  int newStep = addBuffer(&p, "step_new", program::I64, {}, program::ACTIVATION, ARENA, 448);
  int newW = addBuffer(&p, "w_new", program::F32, {2}, program::ACTIVATION, ARENA,
                       inPlace ? 0 : 512);
  int newBuf = addBuffer(&p, "buf_new", program::F32, {2}, program::ACTIVATION, ARENA,
                         inPlace ? 64 : 576);
  addOp(&p, "mul", "mul", {w, x}, {wx});
  int sum = addOp(&p, "reduce_sum", "sum", {wx}, {loss});
  (*p.mutable_ops(sum)->mutable_attrs())["axes"].mutable_ints()->add_values(0);
  (*p.mutable_ops(sum)->mutable_attrs())["keepdims"].set_i(0);
  addOp(&p, "add", "count", {step, one}, {newStep});
  int sgd = addOp(&p, "sgd_update", "sgd", {w, x, buf, newStep, lr}, {newW, newBuf});
  setDouble(&p, sgd, "momentum", 0.0);
  setDouble(&p, sgd, "dampening", 0.0);
  setDouble(&p, sgd, "weight_decay", 0.0);
  (*p.mutable_ops(sgd)->mutable_attrs())["nesterov"].set_i(0);
  for (auto [name, index] : std::vector<std::pair<std::string, int>>{
           {"w", w}, {"w.momentum_buffer", buf}, {"step", step}, {"lr", lr}, {"x", x}})
    addBinding(p.mutable_inputs(), name, index);
  for (auto [name, index] : std::vector<std::pair<std::string, int>>{
           {"loss", loss}, {"w", newW}, {"w.momentum_buffer", newBuf}, {"step", newStep}})
    addBinding(p.mutable_outputs(), name, index);
  if (inPlace)
    for (auto *bindings : {p.mutable_inputs(), p.mutable_outputs()})
      for (program::Binding &b : *bindings)
        b.set_in_place(b.name() == "w" || b.name() == "w.momentum_buffer");
  program::StateInit *init = p.add_state_init();
  init->set_name("w");
  init->set_offset(64);
  init->set_size_bytes(8);
  p.set_arena_bytes(640);
  p.set_weights_bytes(64);
  p.set_workspace_bytes(8); // reduce_sum's accumulator: one double
  return p;
}

std::vector<uint8_t> sgdWeightsFile() {
  std::vector<uint8_t> file(72, 0);
  int64_t one = 1;
  float w0[2] = {1.0f, -1.0f};
  std::memcpy(file.data(), &one, sizeof one);
  std::memcpy(file.data() + 64, w0, sizeof w0);
  return file;
}

// The region, as the bundle loader keeps it.
std::shared_ptr<const AlignedBuffer> sgdWeights() {
  auto weights = std::make_shared<AlignedBuffer>();
  EXPECT_TRUE(AlignedBuffer::allocate(64, "weights", weights.get()).isOk());
  std::memcpy(weights->data(), sgdWeightsFile().data(), 64);
  return weights;
}

// Reads initial values from the weights file, as readInitialValue does from a bundle's.
Status readSgdInitialValue(const program::StateInit &init, uint8_t *dst) {
  std::vector<uint8_t> file = sgdWeightsFile();
  if (init.offset() > file.size() || init.size_bytes() > file.size() - init.offset())
    return Status::error("past the end of the weights file");
  std::memcpy(dst, file.data() + init.offset(), init.size_bytes());
  return Status::ok();
}

std::vector<float> values(const HostTensor *t) {
  if (t == nullptr)
    return {};
  return std::vector<float>(t->as<float>(), t->as<float>() + 2);
}

// Every loop test runs on both forms of the program: state copied out and fed back, and state
// updated in place.
class TrainingLoopTest : public ::testing::TestWithParam<bool> {
protected:
  void SetUp() override {
    weights_ = sgdWeights();
    Status status = Executor::create(sgdProgram(GetParam()), weights_, &executor_);
    ASSERT_TRUE(status.isOk()) << status.message();
    // Data set x = [1, 2, 3, 4]: step 1 gets {1, 2}, step 2 {3, 4}, step 3 {1, 2} again.
    HostTensor x = makeHostTensor(program::F32, {4});
    for (int i = 0; i < 4; ++i)
      x.as<float>()[i] = static_cast<float>(i + 1);
    ASSERT_TRUE(writeNpy(dir_.file("x.npy"), x).isOk());
  }

  std::unique_ptr<TrainingLoop> makeLoop() {
    std::unique_ptr<TrainingLoop> loop;
    Status status = TrainingLoop::create(executor_.get(), readSgdInitialValue, &loop);
    EXPECT_TRUE(status.isOk()) << status.message();
    return loop;
  }

  std::unique_ptr<BatchSource> makeBatches(const TrainingLoop &loop) {
    std::unique_ptr<BatchSource> batches;
    Status status = openNpyBatchSource(dir_.path(), loop.signature().batchInputs, &batches);
    EXPECT_TRUE(status.isOk()) << status.message();
    return batches;
  }

  testing::TempDir dir_;
  std::shared_ptr<const AlignedBuffer> weights_;
  std::unique_ptr<Executor> executor_;
};

TEST(TrainingSignature, ClassifiesInputs) {
  TrainingSignature signature;
  Status status = deriveTrainingSignature(sgdProgram(), &signature);
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(signature.params, std::vector<std::string>{"w"});
  EXPECT_EQ(signature.optimizerState, std::vector<std::string>{"w.momentum_buffer"});
  ASSERT_EQ(signature.batchInputs.size(), 1u);
  EXPECT_EQ(signature.batchInputs[0].name, "x");
  EXPECT_EQ(signature.batchInputs[0].shape, std::vector<int64_t>{2});
}

TEST(TrainingSignature, RejectsProgramsTheLoopCannotDrive) {
  TrainingSignature signature;
  program::Program noState = sgdProgram();
  noState.clear_state_init();
  Status status = deriveTrainingSignature(noState, &signature);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("state_init is empty"), std::string::npos) << status.message();

  program::Program noLoss = sgdProgram();
  noLoss.mutable_outputs(0)->set_name("total");
  status = deriveTrainingSignature(noLoss, &signature);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("no output 'loss'"), std::string::npos) << status.message();

  program::Program notFedBack = sgdProgram();
  notFedBack.mutable_outputs()->RemoveLast(); // "step"
  status = deriveTrainingSignature(notFedBack, &signature);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("'step' is carried from step to step but is not an output"),
            std::string::npos)
      << status.message();
}

TEST_P(TrainingLoopTest, InitialStateComesFromStateInitAndZeros) {
  std::unique_ptr<TrainingLoop> loop = makeLoop();
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(loop->step(), 0);
  EXPECT_EQ(values(loop->value("w")), (std::vector<float>{1.0f, -1.0f}));
  EXPECT_EQ(values(loop->value("w.momentum_buffer")), (std::vector<float>{0.0f, 0.0f}));
  ASSERT_NE(loop->value("step"), nullptr);
  EXPECT_EQ(*loop->value("step")->as<int64_t>(), 0);
}

TEST_P(TrainingLoopTest, StepsFeedTheUpdatedStateBack) {
  std::unique_ptr<TrainingLoop> loop = makeLoop();
  ASSERT_NE(loop, nullptr);
  std::unique_ptr<BatchSource> batches = makeBatches(*loop);
  ASSERT_NE(batches, nullptr);
  EXPECT_EQ(batches->itemsPerStep(), 2);
  const float expectedLoss[] = {-1.0f, -6.5f, -9.0f};
  for (int k = 1; k <= 3; ++k) {
    float loss = 0;
    Status status = loop->runStep(batches.get(), 0.5f, &loss);
    ASSERT_TRUE(status.isOk()) << status.message();
    EXPECT_EQ(loss, expectedLoss[k - 1]) << "step " << k;
    EXPECT_EQ(loop->step(), k);
    EXPECT_EQ(*loop->value("step")->as<int64_t>(), k);
  }
  // w: {1,-1} - 0.5{1,2} - 0.5{3,4} - 0.5{1,2}
  EXPECT_EQ(values(loop->value("w")), (std::vector<float>{-1.5f, -5.0f}));
}

TEST_P(TrainingLoopTest, RestoredSnapshotContinuesBitIdentically) {
  std::unique_ptr<TrainingLoop> loop = makeLoop();
  ASSERT_NE(loop, nullptr);
  std::unique_ptr<BatchSource> batches = makeBatches(*loop);
  float loss = 0;
  ASSERT_TRUE(loop->runStep(batches.get(), 0.25f, &loss).isOk());
  CheckpointContents checkpoint;
  ASSERT_TRUE(loop->snapshot(&checkpoint).isOk());
  EXPECT_EQ(checkpoint.step, 1);
  ASSERT_EQ(checkpoint.params.count("w"), 1u);
  ASSERT_EQ(checkpoint.optimizerState.count("w.momentum_buffer"), 1u);
  float uninterrupted = 0;
  ASSERT_TRUE(loop->runStep(batches.get(), 0.25f, &uninterrupted).isOk());

  std::unique_ptr<TrainingLoop> resumed = makeLoop();
  ASSERT_NE(resumed, nullptr);
  Status status = resumed->restore(checkpoint);
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(resumed->step(), 1);
  float again = 0;
  ASSERT_TRUE(resumed->runStep(batches.get(), 0.25f, &again).isOk());
  EXPECT_EQ(std::memcmp(&again, &uninterrupted, sizeof again), 0);
  EXPECT_EQ(values(resumed->value("w")), values(loop->value("w")));
}

// The whole run is planned: the measured peak equals the program's planned peak, and steps after
// the first (also after a restore) allocate nothing.
TEST_P(TrainingLoopTest, MemoryIsAsPlannedAndLaterStepsAllocateNothing) {
  MemoryTracker tracker;
  program::Program program = sgdProgram(GetParam());
  program.set_planned_peak_bytes(planPeakMemory(program).total);
  std::shared_ptr<const AlignedBuffer> weights;
  {
    MemoryScope scope(&tracker, MemoryUse::Weights);
    weights = sgdWeights();
  }
  std::unique_ptr<Executor> executor;
  Status status = Executor::create(program, weights, &executor, &tracker);
  ASSERT_TRUE(status.isOk()) << status.message();
  std::unique_ptr<TrainingLoop> loop;
  ASSERT_TRUE(TrainingLoop::create(executor.get(), readSgdInitialValue, &loop).isOk());
  std::unique_ptr<BatchSource> batches = makeBatches(*loop);
  ASSERT_NE(batches, nullptr);
  EXPECT_EQ(batches->heldBytes(), 16u); // x.npy: four floats, not part of the plan

  float loss = 0;
  ASSERT_TRUE(loop->runStep(batches.get(), 0.5f, &loss).isOk());
  const uint64_t afterFirstStep = tracker.allocationCount();
  for (int k = 2; k <= 4; ++k)
    ASSERT_TRUE(loop->runStep(batches.get(), 0.5f, &loss).isOk());
  EXPECT_EQ(tracker.allocationCount(), afterFirstStep) << "steps 2..4 allocated";
  CheckpointContents checkpoint;
  // Outside any scope: not counted, not part of the plan.
  ASSERT_TRUE(loop->snapshot(&checkpoint).isOk());
  ASSERT_TRUE(loop->restore(checkpoint).isOk());
  ASSERT_TRUE(loop->runStep(batches.get(), 0.5f, &loss).isOk());
  EXPECT_EQ(tracker.allocationCount(), afterFirstStep) << "restore or step 5 allocated";

  PeakMemoryReport report = comparePeakMemory(program, tracker);
  EXPECT_TRUE(report.agrees) << report.text;
  EXPECT_EQ(tracker.peakBytes(), program.planned_peak_bytes());
}

TEST_P(TrainingLoopTest, RestoreRejectsAnotherModelsCheckpoint) {
  std::unique_ptr<TrainingLoop> loop = makeLoop();
  ASSERT_NE(loop, nullptr);
  CheckpointContents checkpoint;
  ASSERT_TRUE(loop->snapshot(&checkpoint).isOk());

  CheckpointContents renamed = checkpoint;
  renamed.params["v"] = renamed.params["w"];
  renamed.params.erase("w");
  Status status = loop->restore(renamed);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("checkpoint parameters has no 'w'"), std::string::npos)
      << status.message();

  CheckpointContents reshaped = checkpoint;
  reshaped.optimizerState["w.momentum_buffer"] = makeHostTensor(program::F32, {3});
  status = loop->restore(reshaped);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("is f32[3], the program expects f32[2]"), std::string::npos)
      << status.message();

  CheckpointContents extra = checkpoint;
  extra.params["bias"] = makeHostTensor(program::F32, {1});
  status = loop->restore(extra);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("'bias', which the program does not train"), std::string::npos)
      << status.message();
}

// A step whose loss is not finite stops before the update: the state is as before the step,
// whether it is fed back or updated in place (where the program itself would have overwritten
// it), and with skipNonFinite the next step goes on from it.
TEST_P(TrainingLoopTest, NonFiniteLossLeavesTheStateUnchanged) {
  HostTensor x = makeHostTensor(program::F32, {4});
  const float data[] = {1.0f, 2.0f, std::numeric_limits<float>::infinity(), 4.0f};
  std::memcpy(x.as<float>(), data, sizeof data);
  ASSERT_TRUE(writeNpy(dir_.file("x.npy"), x).isOk());
  std::unique_ptr<TrainingLoop> loop = makeLoop();
  ASSERT_NE(loop, nullptr);
  std::unique_ptr<BatchSource> batches = makeBatches(*loop);
  float loss = 0;
  ASSERT_TRUE(loop->runStep(batches.get(), 0.5f, &loss).isOk());
  EXPECT_EQ(values(loop->value("w")), (std::vector<float>{0.5f, -2.0f}));
  // Step 2 takes x = {inf, 4}: the loss is not finite.
  ASSERT_TRUE(loop->runStep(batches.get(), 0.5f, &loss, nullptr, /*skipNonFinite=*/true).isOk());
  EXPECT_FALSE(std::isfinite(loss));
  EXPECT_EQ(loop->skipped(), 1);
  EXPECT_EQ(values(loop->value("w")), (std::vector<float>{0.5f, -2.0f}));
  EXPECT_EQ(*loop->value("step")->as<int64_t>(), 1);
  // Without skipping, the same kind of step stops with the state unchanged, after locating
  // the first NaN: w = {0, -3} times x = {inf, 4} makes one in the product.
  Executor::NonFiniteSite site;
  ASSERT_TRUE(loop->runStep(batches.get(), 0.5f, &loss).isOk()); // x = {1, 2} again
  EXPECT_EQ(values(loop->value("w")), (std::vector<float>{0.0f, -3.0f}));
  ASSERT_TRUE(loop->runStep(batches.get(), 0.5f, &loss, &site).isOk());
  EXPECT_FALSE(std::isfinite(loss));
  EXPECT_EQ(site.describe(), "op 'mul' (kernel mul)");
  EXPECT_EQ(values(loop->value("w")), (std::vector<float>{0.0f, -3.0f}));
}

INSTANTIATE_TEST_SUITE_P(State, TrainingLoopTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool> &info) {
                           return info.param ? "InPlace" : "FedBack";
                         });

// The planned peak counts in-place state once, in the arena, and no host tensor for it.
TEST(InPlaceState, PlannedWithoutStepTensors) {
  PlannedMemory copied = planPeakMemory(sgdProgram(false));
  PlannedMemory inPlace = planPeakMemory(sgdProgram(true));
  EXPECT_EQ(copied.stepInputs - inPlace.stepInputs, 16u); // w and its momentum buffer
  EXPECT_EQ(copied.stepOutputs - inPlace.stepOutputs, 16u);
  EXPECT_EQ(copied.arena, inPlace.arena); // the same arena_bytes; the new values lie over the old
  EXPECT_EQ(copied.total - inPlace.total, 32u);
}

// The executor keeps in-place state from run to run: fed once (an input, setState or
// stateView), never copied out; a run before it was fed is an error.
TEST(InPlaceState, ExecutorKeepsItBetweenRuns) {
  std::shared_ptr<const AlignedBuffer> weights = sgdWeights();
  std::unique_ptr<Executor> executor;
  ASSERT_TRUE(Executor::create(sgdProgram(true), weights, &executor).isOk());
  EXPECT_TRUE(executor->isInPlaceState("w"));
  EXPECT_FALSE(executor->isInPlaceState("step"));
  EXPECT_EQ(executor->stateView("x"), nullptr);
  auto scalar = [](DType dtype) { return makeHostTensor(dtype, {}); };
  HostTensor x = makeHostTensor(program::F32, {2});
  x.as<float>()[0] = 1.0f;
  x.as<float>()[1] = 2.0f;
  HostTensor lr = scalar(program::F32);
  *lr.as<float>() = 0.5f;
  std::map<std::string, HostTensor> inputs{{"x", x}, {"lr", lr}, {"step", scalar(program::I64)}};
  std::map<std::string, HostTensor> outputs;
  Status status = executor->run(inputs, &outputs);
  ASSERT_FALSE(status.isOk());
  EXPECT_EQ(status.message(), "missing input 'w' (f32[2])");

  HostTensor w = makeHostTensor(program::F32, {2});
  w.as<float>()[0] = 1.0f;
  w.as<float>()[1] = -1.0f;
  ASSERT_TRUE(executor->setState("w", w).isOk());
  inputs["w.momentum_buffer"] = makeHostTensor(program::F32, {2});
  ASSERT_TRUE(executor->run(inputs, &outputs).isOk());
  EXPECT_EQ(outputs.count("w"), 0u);
  EXPECT_EQ(outputs.count("loss"), 1u);
  const float *after = executor->stateView("w")->as<float>();
  EXPECT_EQ(std::vector<float>(after, after + 2), (std::vector<float>{0.5f, -2.0f}));
  inputs.erase("w.momentum_buffer");
  ASSERT_TRUE(executor->run(inputs, &outputs).isOk()); // from where the last run left it
  EXPECT_EQ(std::vector<float>(after, after + 2), (std::vector<float>{0.0f, -3.0f}));
  EXPECT_FALSE(executor->setState("x", x).isOk());
}

// What the validator requires of in-place state.
TEST(InPlaceState, ValidationRejectsInconsistentPrograms) {
  ASSERT_TRUE(validateProgram(sgdProgram(true)).isOk());
  struct Case {
    const char *what;
    std::function<void(program::Program &)> edit;
    const char *message;
  } cases[] = {
      {"output only",
       [](program::Program &p) { p.mutable_inputs(0)->set_in_place(false); },
       "in-place state 'w': flagged in_place on the output binding but not on an input"},
      {"input only",
       [](program::Program &p) { p.mutable_outputs(1)->set_in_place(false); },
       "in-place state 'w': flagged in_place on the input binding but not on the output"},
      {"other bytes",
       [](program::Program &p) {
         p.mutable_buffers(p.outputs(1).buffer())->set_offset(512);
         p.mutable_buffers(p.outputs(2).buffer())->set_offset(576);
       },
       "in-place state 'w': the output's buffer 9 ('w_new') is not the input's buffer 0 ('w') "
       "(same offset, size, dtype and shape)"},
      {"another buffer over it",
       [](program::Program &p) { p.mutable_buffers(6)->set_offset(0); },
       "op 0 ('mul'): output 0 (buffer 6 ('wx')) overlaps input 0 (buffer 0 ('w'))"},
      {"a kernel that cannot update in place",
       [](program::Program &p) { p.mutable_ops(3)->set_kernel("add"); },
       "op 3 ('sgd'): output 0 (buffer 9 ('w_new')) overlaps input 0 (buffer 0 ('w'))"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.what);
    program::Program p = sgdProgram(true);
    c.edit(p);
    EXPECT_EQ(validateProgram(p).message(), c.message);
  }
}

TEST(TokenBatchSource, NeedsExactlyTwoI64BatchInputs) {
  std::unique_ptr<BatchSource> batches;
  Status status = openTokenBatchSource("unused.bin", {{"x", program::F32, {2}}}, 0, &batches);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("exactly two batch inputs"), std::string::npos)
      << status.message();
}

TEST(StateInitValidation, AcceptsTheTrainingProgram) {
  Status status = validateProgram(sgdProgram());
  EXPECT_TRUE(status.isOk()) << status.message();
}

TEST(StateInitValidation, RejectsBadEntries) {
  struct Case {
    const char *what;
    std::string name;
    uint64_t offset, size;
    const char *expected;
  } cases[] = {
      {"unknown name", "v", 0, 8, "no input binding has that name"},
      {"unaligned", "w", 72, 8, "offset 72 is not 64-byte aligned"},
      {"overflowing", "w", UINT64_MAX - 63, 128, "overflows"},
      {"wrong size", "w", 0, 4, "size_bytes is 4 but the input holds 8"},
  };
  for (const Case &c : cases) {
    program::Program p = sgdProgram();
    p.mutable_state_init(0)->set_name(c.name);
    p.mutable_state_init(0)->set_offset(c.offset);
    p.mutable_state_init(0)->set_size_bytes(c.size);
    Status status = validateProgram(p);
    ASSERT_FALSE(status.isOk()) << c.what;
    EXPECT_NE(status.message().find(c.expected), std::string::npos)
        << c.what << ": " << status.message();
  }
  program::Program twice = sgdProgram();
  *twice.add_state_init() = twice.state_init(0);
  Status status = validateProgram(twice);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("initialised twice"), std::string::npos) << status.message();
}

} // namespace
} // namespace shardc::runtime
