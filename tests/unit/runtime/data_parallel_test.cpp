// The training loop of several data-parallel ranks, each a thread of a local world
// (runtime/comm/local): every rank takes its rows of the global batch and its shard of the
// parameters (tests/unit/runtime/data_parallel_program.h), N ranks train exactly like one,
// checkpoints hold full tensors whatever the number of ranks that wrote them, each rank sends
// what the plan predicts, and a rank that fails stops all of them at once.
#include "runtime/checkpoint/checkpoint.h"
#include "runtime/comm/local/local_comm.h"
#include "runtime/common/planned_memory.h"
#include "runtime/data/npy.h"
#include "runtime/executor/executor.h"
#include "runtime/loader/program_validation.h"
#include "runtime/memory/memory_report.h"
#include "runtime/support/memory_tracker.h"
#include "runtime/training/batch_source.h"
#include "runtime/training/rank_threads.h"
#include "runtime/training/training_loop.h"
#include "tests/unit/runtime/data_parallel_program.h"
#include "tests/unit/runtime/test_util.h"

#include <chrono>
#include <cstring>
#include <functional>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <memory>
#include <string>
#include <vector>

namespace shardc::runtime {
namespace {

using ::testing::HasSubstr;
using testing::kLinearBatch;
using testing::kLinearFeatures;
using ::testing::StartsWith;

constexpr int kDataRows = 2 * kLinearBatch; // two batches per epoch
constexpr float kLr = 0.5f;

std::vector<float> floatsOf(const HostTensor &t) {
  return std::vector<float>(t.as<float>(), t.as<float>() + t.numel());
}

// One rank of a run: what it holds and what it measured.
struct Rank {
  std::unique_ptr<MemoryTracker> tracker = std::make_unique<MemoryTracker>();
  std::unique_ptr<Executor> executor;
  std::unique_ptr<TrainingLoop> loop;
  std::unique_ptr<BatchSource> batches;
  std::vector<float> losses;
  std::vector<CommCounters> sent; // per step
};

// The `world` ranks of the linear bundle, with a local world's communicators, on x.npy in
// `dataDir`.
class Ranks {
public:
  Ranks(int world, const std::string &dataDir, double timeoutSeconds = 30.0)
      : bundle_(testing::linearSgdBundle(world)), dataDir_(dataDir) {
    // The region stays resident, as the bundle loader keeps it; the initial values are read
    // from the rest of the file.
    const uint64_t regionBytes = bundle_.programs(0).weights_bytes();
    auto weights = std::make_shared<AlignedBuffer>();
    EXPECT_TRUE(AlignedBuffer::allocate(regionBytes, "weights", weights.get()).isOk());
    std::memcpy(weights->data(), weightsFile_.data(), regionBytes);
    weights_ = weights;
    if (world > 1) {
      CommOptions options;
      options.timeoutSeconds = timeoutSeconds;
      Status status = createLocalWorld(world, options, &comms_);
      EXPECT_TRUE(status.isOk()) << status.message();
    }
    ranks_.resize(static_cast<size_t>(world));
    for (Rank &rank : ranks_)
      rank.tracker->allocated(MemoryUse::Weights, weights_->allocatedBytes());
  }

  int world() const { return static_cast<int>(ranks_.size()); }
  Rank &rank(int r) { return ranks_[static_cast<size_t>(r)]; }
  program::Bundle &bundle() { return bundle_; }
  Communicator *comm(int r) { return comms_.empty() ? nullptr : comms_[r].get(); }
  // Called on each rank's executor once it is created.
  std::function<void(Executor &)> configure;

  // Creates rank r's executor, loop and data source.
  Status setUp(int r) {
    Rank &rank = this->rank(r);
    SHARDC_RETURN_IF_ERROR(Executor::create(bundle_.programs(r), weights_, &rank.executor,
                                            rank.tracker.get(), comm(r)));
    if (configure)
      configure(*rank.executor);
    SHARDC_RETURN_IF_ERROR(TrainingLoop::create(
        rank.executor.get(),
        [this](const program::StateInit &init, uint8_t *dst) {
          std::memcpy(dst, weightsFile_.data() + init.offset(), init.size_bytes());
          return Status::ok();
        },
        &rank.loop));
    const TrainingSignature &signature = rank.loop->signature();
    return openNpyBatchSource(dataDir_, signature.batchInputs, &rank.batches, signature.batchSlice);
  }

  // Runs body(r) for every rank, as threads when there are several.
  Status run(const std::function<Status(int)> &body) {
    if (world() == 1)
      return body(0);
    std::vector<Communicator *> comms;
    for (const auto &comm : comms_)
      comms.push_back(comm.get());
    return runRankThreads(comms, body);
  }

  // Sets every rank up and trains it `steps` steps, recording losses and bytes sent.
  Status train(int steps) {
    return run([&](int r) -> Status {
      Rank &rank = this->rank(r);
      if (!rank.loop)
        SHARDC_RETURN_IF_ERROR(setUp(r));
      for (int k = 0; k < steps; ++k) {
        float loss = 0;
        SHARDC_RETURN_IF_ERROR(rank.loop->runStep(rank.batches.get(), kLr, &loss));
        rank.losses.push_back(loss);
        rank.sent.push_back(rank.executor->lastRunCommSent());
      }
      return Status::ok();
    });
  }

  // Every rank's consolidated state; rank 0's is returned.
  Status consolidate(CheckpointContents *out) {
    std::vector<CheckpointContents> all(ranks_.size());
    SHARDC_RETURN_IF_ERROR(
        run([&](int r) { return rank(r).loop->consolidatedSnapshot(comm(r), &all[r]); }));
    for (size_t r = 1; r < all.size(); ++r)
      EXPECT_EQ(floatsOf(all[r].params.at("w")), floatsOf(all[0].params.at("w")))
          << "rank " << r << " gathered another w";
    *out = std::move(all[0]);
    return Status::ok();
  }

private:
  program::Bundle bundle_;
  std::string dataDir_;
  const std::string weightsFile_ = testing::linearSgdWeights();
  std::shared_ptr<const AlignedBuffer> weights_;
  std::vector<std::unique_ptr<Communicator>> comms_;
  std::vector<Rank> ranks_;
};

class DataParallelTest : public ::testing::TestWithParam<int> {
protected:
  void SetUp() override {
    ASSERT_TRUE(writeNpy(data_.file("x.npy"), testing::linearData(kDataRows)).isOk());
  }
  testing::TempDir data_;
};

INSTANTIATE_TEST_SUITE_P(Ranks, DataParallelTest, ::testing::Values(2, 3),
                         [](const ::testing::TestParamInfo<int> &info) {
                           return std::to_string(info.param) + "ranks";
                         });

// Step k feeds rank r rows [(k-1)B + rB/N, (k-1)B + (r+1)B/N) modulo the data set: its part of
// exactly the batch one rank gets, and it holds only its part of the data.
TEST_P(DataParallelTest, EachRankGetsItsRowsOfTheGlobalBatch) {
  const int world = GetParam();
  const int rows = kLinearBatch / world;
  const GraphInputSpec whole{"x", program::F32, {kLinearBatch, kLinearFeatures}};
  NpyBatchSource one;
  ASSERT_TRUE(NpyBatchSource::open(data_.path(), {whole}, &one).isOk());
  for (int r = 0; r < world; ++r) {
    NpyBatchSource part;
    Status status =
        NpyBatchSource::open(data_.path(), {{"x", program::F32, {rows, kLinearFeatures}}}, &part,
                             BatchSlice{r * rows, rows, kLinearBatch});
    ASSERT_TRUE(status.isOk()) << status.message();
    EXPECT_EQ(part.batchSize(), kLinearBatch);
    EXPECT_EQ(part.heldBytes(), one.heldBytes() / world);
    for (int step = 1; step <= 3; ++step) { // step 3 wraps around to the first batch
      HostTensor full, mine;
      ASSERT_TRUE(one.batchOf(step, 0, &full).isOk());
      ASSERT_TRUE(part.batchOf(step, 0, &mine).isOk());
      ASSERT_EQ(mine.describe(), "f32[" + std::to_string(rows) + "x5]");
      const size_t rowBytes = kLinearFeatures * sizeof(float);
      EXPECT_EQ(std::memcmp(mine.bytes.data(), full.bytes.data() + r * rows * rowBytes,
                            mine.bytes.size()),
                0)
          << "rank " << r << ", step " << step;
    }
  }
  NpyBatchSource wrong;
  Status status = NpyBatchSource::open(data_.path(), {{"x", program::F32, {rows + 1, 5}}}, &wrong,
                                       BatchSlice{0, rows, kLinearBatch});
  ASSERT_FALSE(status.isOk());
  EXPECT_THAT(status.message(), HasSubstr("is not the rank's " + std::to_string(rows) + " rows"));
}

// The token windows of a rank are those rows of the global batch's windows.
TEST_P(DataParallelTest, TokenWindowsAreTheGlobalBatchsRows) {
  const int world = GetParam();
  const int rows = kLinearBatch / world, seqLen = 4;
  std::string tokens;
  for (uint16_t t = 0; t < 200; ++t)
    tokens.append(reinterpret_cast<const char *>(&t), sizeof t);
  testing::writeBytes(data_.file("tokens.bin"), tokens);
  TokenStream one;
  ASSERT_TRUE(TokenStream::open(data_.file("tokens.bin"), kLinearBatch, seqLen, 7, &one).isOk());
  for (int r = 0; r < world; ++r) {
    std::unique_ptr<BatchSource> part;
    const std::vector<GraphInputSpec> inputs = {{"idx", program::I64, {rows, seqLen}},
                                                {"targets", program::I64, {rows, seqLen}}};
    Status status = openTokenBatchSource(data_.file("tokens.bin"), inputs, 7, &part,
                                         BatchSlice{r * rows, rows, kLinearBatch});
    ASSERT_TRUE(status.isOk()) << status.message();
    EXPECT_EQ(part->itemsPerStep(), kLinearBatch * seqLen); // the global batch's tokens
    for (int step = 1; step <= 2; ++step) {
      HostTensor idx, targets;
      ASSERT_TRUE(one.batch(step, &idx, &targets).isOk());
      std::map<std::string, HostTensor> mine;
      ASSERT_TRUE(part->fill(step, &mine).isOk());
      ASSERT_EQ(mine["idx"].describe(), "i64[" + std::to_string(rows) + "x4]");
      const size_t rowBytes = seqLen * sizeof(int64_t);
      EXPECT_EQ(std::memcmp(mine["idx"].bytes.data(), idx.bytes.data() + r * rows * rowBytes,
                            mine["idx"].bytes.size()),
                0);
      EXPECT_EQ(std::memcmp(mine["targets"].bytes.data(),
                            targets.bytes.data() + r * rows * rowBytes,
                            mine["targets"].bytes.size()),
                0);
    }
  }
}

// w = {1..5} split in ceil(5/N) elements per rank: rank r starts from its part of it, zeros past
// the end; the momentum buffer from zeros.
TEST_P(DataParallelTest, ShardedStateStartsAsTheRanksPartOfTheParameter) {
  const int world = GetParam();
  Ranks ranks(world, data_.path());
  const int k = (kLinearFeatures + world - 1) / world;
  const std::vector<float> w = testing::linearInitialWeights();
  for (int r = 0; r < world; ++r) {
    Status status = ranks.setUp(r);
    ASSERT_TRUE(status.isOk()) << status.message();
    std::vector<float> expected(static_cast<size_t>(k), 0.0f);
    for (int i = 0; i < k && r * k + i < kLinearFeatures; ++i)
      expected[i] = w[r * k + i];
    EXPECT_EQ(floatsOf(*ranks.rank(r).loop->value("w")), expected) << "rank " << r;
    EXPECT_EQ(floatsOf(*ranks.rank(r).loop->value("w.momentum_buffer")),
              std::vector<float>(static_cast<size_t>(k), 0.0f));
  }
}

// N ranks give bit for bit the losses and parameters of one rank (the data are integers and the
// lr a power of two, so no sum depends on its order), every rank the same loss; each rank's
// steps send exactly the planned bytes, allocate nothing after the first and peak as planned.
TEST_P(DataParallelTest, RanksTrainExactlyLikeOneRank) {
  const int world = GetParam();
  Ranks one(1, data_.path()), many(world, data_.path());
  Status status = one.train(3);
  ASSERT_TRUE(status.isOk()) << status.message();
  status = many.train(3);
  ASSERT_TRUE(status.isOk()) << status.message();

  for (int r = 0; r < world; ++r) {
    Rank &rank = many.rank(r);
    EXPECT_EQ(rank.losses, one.rank(0).losses) << "rank " << r;
    const program::Program &program = many.bundle().programs(r);
    ASSERT_GT(program.planned_comm_bytes(), 0u);
    for (const CommCounters &sent : rank.sent) {
      EXPECT_EQ(sent.totalBytesSent(), program.planned_comm_bytes()) << "rank " << r;
      // One bucket: an all-reduce, a reduce-scatter and an all-gather; no resharding, no
      // pipeline stages.
      for (int kind = 0; kind < kCollectiveKinds; ++kind) {
        const bool used = kind != static_cast<int>(CollectiveKind::AllToAll) &&
                          kind != static_cast<int>(CollectiveKind::SendRecv);
        EXPECT_EQ(sent.calls[kind], used ? 1u : 0u)
            << collectiveName(static_cast<CollectiveKind>(kind));
      }
    }
    PeakMemoryReport memory = comparePeakMemory(program, *rank.tracker);
    EXPECT_TRUE(memory.agrees) << "rank " << r << ": " << memory.text;
  }
  EXPECT_EQ(one.rank(0).executor->lastRunCommSent().totalBytesSent(), 0u);

  CheckpointContents full;
  status = many.consolidate(&full);
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(full.params.at("w").describe(), "f32[5]");
  EXPECT_EQ(full.optimizerState.at("w.momentum_buffer").describe(), "f32[5]");
  EXPECT_EQ(floatsOf(full.params.at("w")), floatsOf(*one.rank(0).loop->value("w")));
  EXPECT_EQ(full.step, 3);
}

// Makes the loss's all_reduce (read by nobody: the loss is an output) and the gradient's
// reduce_scatter (read by the optimizer update two ops later) asynchronous, as shardc's
// plan-memory pass does, with their scratch in a communication workspace.
void makeCollectivesAsync(program::Bundle *bundle) {
  for (program::Program &p : *bundle->mutable_programs()) {
    int sgd = -1;
    for (int i = 0; i < p.ops_size(); ++i)
      if (p.ops(i).kernel() == "sgd_update")
        sgd = i;
    for (int i = 0; i < p.ops_size(); ++i) {
      if (p.ops(i).kernel() == "all_reduce")
        p.mutable_ops(i)->set_completes_before(p.ops_size());
      if (p.ops(i).kernel() == "reduce_scatter")
        p.mutable_ops(i)->set_completes_before(sgd);
    }
    p.set_comm_workspace_bytes(p.workspace_bytes());
    p.set_planned_peak_bytes(planPeakMemory(p).total);
    Status valid = validateProgram(p);
    EXPECT_TRUE(valid.isOk()) << valid.message();
  }
}

// The collectives run on each rank's communication thread, overlapping the ops before their
// first reader: the training is bit for bit that of one rank, and of the same ranks running
// them in order; each rank's timeline holds them on the communication thread and the rank's
// waits for them; the memory is the plan's, the communication workspace included.
TEST_P(DataParallelTest, AsynchronousCollectivesTrainExactlyLikeOneRank) {
  const int world = GetParam();
  constexpr int kSteps = 3;
  Ranks one(1, data_.path()), overlapped(world, data_.path()), inOrder(world, data_.path());
  makeCollectivesAsync(&overlapped.bundle());
  makeCollectivesAsync(&inOrder.bundle());
  overlapped.configure = [](Executor &executor) { executor.recordTimeline(1000); };
  inOrder.configure = [](Executor &executor) { executor.setCollectiveOverlap(false); };
  for (Ranks *ranks : {&one, &overlapped, &inOrder}) {
    Status status = ranks->train(kSteps);
    ASSERT_TRUE(status.isOk()) << status.message();
  }
  for (int r = 0; r < world; ++r) {
    EXPECT_EQ(overlapped.rank(r).losses, one.rank(0).losses) << "rank " << r;
    EXPECT_EQ(inOrder.rank(r).losses, one.rank(0).losses) << "rank " << r;
    EXPECT_EQ(floatsOf(*overlapped.rank(r).loop->value("w")),
              floatsOf(*inOrder.rank(r).loop->value("w")));
    const program::Program &program = overlapped.bundle().programs(r);
    EXPECT_GT(program.comm_workspace_bytes(), 0u);
    for (Ranks *ranks : {&overlapped, &inOrder}) {
      PeakMemoryReport memory = comparePeakMemory(program, *ranks->rank(r).tracker);
      EXPECT_TRUE(memory.agrees) << "rank " << r << ": " << memory.text;
    }

    const OpTimeline *timeline = overlapped.rank(r).executor->timeline();
    ASSERT_NE(timeline, nullptr);
    // Every collective runs on the communication thread (the all_gather too, whose reader is
    // the next op: it is waited for at once), every other kernel on the rank's thread.
    int collectives = 0;
    for (const program::Op &op : program.ops())
      collectives += kernelMovesDataBetweenRanks(op.kernel()) ? 1 : 0;
    ASSERT_EQ(collectives, 3);
    int comm = 0, waits = 0, compute = 0;
    for (const OpSpan &span : timeline->spans()) {
      const bool collective = kernelMovesDataBetweenRanks(program.ops(span.op).kernel());
      EXPECT_LE(span.startNs, span.endNs);
      EXPECT_LT(span.run, kSteps);
      if (span.lane == TimelineLane::Comm) {
        ++comm;
        EXPECT_TRUE(collective) << program.ops(span.op).kernel();
      } else if (span.lane == TimelineLane::Wait) {
        ++waits;
        EXPECT_TRUE(collective) << program.ops(span.op).kernel();
      } else {
        ++compute;
        EXPECT_FALSE(collective) << program.ops(span.op).kernel();
      }
    }
    EXPECT_EQ(comm, collectives * kSteps) << "rank " << r;
    EXPECT_EQ(waits, collectives * kSteps) << "rank " << r;
    EXPECT_EQ(compute, (program.ops_size() - collectives) * kSteps) << "rank " << r;
    EXPECT_EQ(inOrder.rank(r).executor->timeline(), nullptr);
  }
}

// A checkpoint written by N ranks is the one a single rank writes at the same step, file for
// file; either resumes the other's run exactly.
TEST_P(DataParallelTest, CheckpointsMoveBetweenRankCounts) {
  const int world = GetParam();
  testing::TempDir oneDir, manyDir;
  Ranks one(1, data_.path()), many(world, data_.path());
  ASSERT_TRUE(one.train(2).isOk());
  ASSERT_TRUE(many.train(2).isOk());
  CheckpointContents fromOne, fromMany;
  ASSERT_TRUE(one.consolidate(&fromOne).isOk());
  ASSERT_TRUE(many.consolidate(&fromMany).isOk());
  ASSERT_TRUE(saveCheckpoint(oneDir.path(), fromOne).isOk());
  ASSERT_TRUE(saveCheckpoint(manyDir.path(), fromMany).isOk());
  for (const char *file :
       {"params-00000002.safetensors", "optimizer-00000002.safetensors", "manifest.json"})
    EXPECT_EQ(testing::readBytes(manyDir.file(file)), testing::readBytes(oneDir.file(file)))
        << file;

  // The uninterrupted runs' third step, to compare the resumed ones with.
  ASSERT_TRUE(one.train(1).isOk());
  const std::vector<float> expectedW = floatsOf(*one.rank(0).loop->value("w"));

  CheckpointContents loaded;
  ASSERT_TRUE(loadCheckpoint(manyDir.path(), &loaded).isOk());
  Ranks oneResumed(1, data_.path());
  ASSERT_TRUE(oneResumed.setUp(0).isOk());
  Status status = oneResumed.rank(0).loop->restore(loaded);
  ASSERT_TRUE(status.isOk()) << status.message();
  ASSERT_TRUE(oneResumed.train(1).isOk());
  EXPECT_EQ(oneResumed.rank(0).losses.back(), one.rank(0).losses.back());
  EXPECT_EQ(floatsOf(*oneResumed.rank(0).loop->value("w")), expectedW);

  ASSERT_TRUE(loadCheckpoint(oneDir.path(), &loaded).isOk());
  Ranks manyResumed(world, data_.path());
  status = manyResumed.run([&](int r) -> Status {
    SHARDC_RETURN_IF_ERROR(manyResumed.setUp(r));
    return manyResumed.rank(r).loop->restore(loaded);
  });
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(manyResumed.rank(world - 1).loop->step(), 2);
  ASSERT_TRUE(manyResumed.train(1).isOk());
  CheckpointContents resumed;
  ASSERT_TRUE(manyResumed.consolidate(&resumed).isOk());
  EXPECT_EQ(floatsOf(resumed.params.at("w")), expectedW);
  EXPECT_EQ(manyResumed.rank(0).losses.back(), one.rank(0).losses.back());
}

// A checkpoint of another shape is refused by every rank, naming the full shape it expects.
TEST_P(DataParallelTest, RestoreChecksTheFullShape) {
  const int world = GetParam();
  Ranks ranks(world, data_.path());
  ASSERT_TRUE(ranks.setUp(world - 1).isOk());
  CheckpointContents checkpoint;
  // The rank's shards, not full tensors.
  ASSERT_TRUE(ranks.rank(world - 1).loop->snapshot(&checkpoint).isOk());
  Status status = ranks.rank(world - 1).loop->restore(checkpoint);
  ASSERT_FALSE(status.isOk());
  EXPECT_THAT(status.message(), HasSubstr("the program expects f32[5]"));
}

// A batch source that fails at one step, for the failure tests.
class FailingBatches : public BatchSource {
public:
  FailingBatches(std::unique_ptr<BatchSource> inner, int64_t failAt)
      : inner_(std::move(inner)), failAt_(failAt) {}
  Status fill(int64_t step, std::map<std::string, HostTensor> *inputs) override {
    if (step == failAt_)
      return Status::error("injected failure at step " + std::to_string(step));
    return inner_->fill(step, inputs);
  }
  int64_t itemsPerStep() const override { return inner_->itemsPerStep(); }
  const char *itemName() const override { return inner_->itemName(); }
  uint64_t heldBytes() const override { return inner_->heldBytes(); }

private:
  std::unique_ptr<BatchSource> inner_;
  int64_t failAt_;
};

// One rank failing at step 2 while the others wait for it in that step's first collective:
// every rank stops at once (not after the 30 s timeout), and the error is the failing rank's.
TEST_P(DataParallelTest, AFailingRankStopsEveryRankAtOnce) {
  const int world = GetParam();
  const int failing = world - 1;
  Ranks ranks(world, data_.path());
  std::vector<Status> results(static_cast<size_t>(world));
  const auto start = std::chrono::steady_clock::now();
  Status status = ranks.run([&](int r) -> Status {
    SHARDC_RETURN_IF_ERROR(ranks.setUp(r));
    Rank &rank = ranks.rank(r);
    if (r == failing)
      rank.batches = std::make_unique<FailingBatches>(std::move(rank.batches), 2);
    for (int k = 0; k < 4; ++k) {
      float loss = 0;
      results[r] = rank.loop->runStep(rank.batches.get(), kLr, &loss);
      SHARDC_RETURN_IF_ERROR(results[r]);
    }
    return Status::ok();
  });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(status.isOk());
  EXPECT_EQ(status.message(), "rank " + std::to_string(failing) + ": injected failure at step 2");
  EXPECT_LT(seconds, 5.0);
  for (int r = 0; r < world; ++r) {
    EXPECT_FALSE(results[r].isOk()) << "rank " << r << " went on";
    if (r != failing)
      EXPECT_THAT(results[r].message(), HasSubstr("rank " + std::to_string(failing) + " failed"));
  }
}

// A rank that stops answering (here: returns before its steps) makes the others fail once the
// timeout has passed, naming it, instead of hanging.
TEST_P(DataParallelTest, ARankThatStopsAnsweringTimesOut) {
  const int world = GetParam();
  Ranks ranks(world, data_.path(), /*timeoutSeconds=*/0.5);
  const auto start = std::chrono::steady_clock::now();
  Status status = ranks.run([&](int r) -> Status {
    SHARDC_RETURN_IF_ERROR(ranks.setUp(r));
    if (r == 1)
      return Status::ok();
    float loss = 0;
    return ranks.rank(r).loop->runStep(ranks.rank(r).batches.get(), kLr, &loss);
  });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(status.isOk());
  EXPECT_THAT(status.message(), HasSubstr("timed out after 0.5 s"));
  EXPECT_LT(seconds, 5.0);
}

} // namespace
} // namespace shardc::runtime
