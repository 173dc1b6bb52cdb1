// Batches from per-input .npy files: order, cyclic wrap, resumption and the file checks.
#include "runtime/data/npy.h"
#include "runtime/data/npy_batches.h"
#include "tests/unit/runtime/test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace shardc::runtime {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

// f32[rows x 2] with row r = [10r, 10r + 1].
HostTensor featureRows(int64_t rows) {
  HostTensor t = makeHostTensor(program::F32, {rows, 2});
  for (int64_t r = 0; r < rows; ++r) {
    t.as<float>()[2 * r] = static_cast<float>(10 * r);
    t.as<float>()[2 * r + 1] = static_cast<float>(10 * r + 1);
  }
  return t;
}

// i64[rows] with row r = r.
HostTensor labelRows(int64_t rows) {
  HostTensor t = makeHostTensor(program::I64, {rows});
  for (int64_t r = 0; r < rows; ++r)
    t.as<int64_t>()[r] = r;
  return t;
}

std::vector<GraphInputSpec> specs(int64_t batch) {
  return {{"onnx::x", program::F32, {batch, 2}}, {"label", program::I64, {batch}}};
}

void writeData(const TempDir &dir, int64_t featureCount, int64_t labelCount) {
  ASSERT_TRUE(writeNpy(dir.file("onnx__x.npy"), featureRows(featureCount)).isOk());
  ASSERT_TRUE(writeNpy(dir.file("label.npy"), labelRows(labelCount)).isOk());
}

std::string openError(const TempDir &dir, const std::vector<GraphInputSpec> &inputs) {
  NpyBatchSource source;
  Status status = NpyBatchSource::open(dir.path(), inputs, &source);
  EXPECT_FALSE(status.isOk());
  return status.message();
}

TEST(NpyBatches, ConsecutiveBatchesWrapAroundEachEpoch) {
  TempDir dir;
  writeData(dir, 6, 6);
  NpyBatchSource source;
  Status status = NpyBatchSource::open(dir.path(), specs(2), &source);
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(source.batchSize(), 2);
  EXPECT_EQ(source.numRows(), 6);
  EXPECT_EQ(source.batchesPerEpoch(), 3);
  // Steps 1..3 cover rows 0-1, 2-3, 4-5; step 4 starts over; step 3001 = step 1 again.
  const int64_t expectedFirstRow[] = {0, 2, 4, 0, 2};
  for (int64_t step = 1; step <= 5; ++step) {
    std::vector<HostTensor> batch;
    ASSERT_TRUE(source.batch(step, &batch).isOk());
    ASSERT_EQ(batch.size(), 2u);
    int64_t row = expectedFirstRow[step - 1];
    EXPECT_EQ(batch[0].dtype, program::F32);
    EXPECT_EQ(batch[0].shape, (std::vector<int64_t>{2, 2}));
    EXPECT_EQ(
        std::vector<float>(batch[0].as<float>(), batch[0].as<float>() + 4),
        (std::vector<float>{10.0f * row, 10.0f * row + 1, 10.0f * row + 10, 10.0f * row + 11}));
    EXPECT_EQ(batch[1].shape, (std::vector<int64_t>{2}));
    EXPECT_EQ(batch[1].as<int64_t>()[0], row);
    EXPECT_EQ(batch[1].as<int64_t>()[1], row + 1);
  }
  std::vector<HostTensor> far, first;
  ASSERT_TRUE(source.batch(3001, &far).isOk());
  ASSERT_TRUE(source.batch(1, &first).isOk());
  EXPECT_EQ(far[0].bytes, first[0].bytes);
}

TEST(NpyBatches, ResumingAtAStepGivesTheSameBatches) {
  TempDir dir;
  writeData(dir, 8, 8);
  NpyBatchSource sequential, resumed;
  ASSERT_TRUE(NpyBatchSource::open(dir.path(), specs(4), &sequential).isOk());
  std::vector<std::vector<HostTensor>> seen;
  for (int64_t step = 1; step <= 7; ++step) {
    seen.emplace_back();
    ASSERT_TRUE(sequential.batch(step, &seen.back()).isOk());
  }
  ASSERT_TRUE(NpyBatchSource::open(dir.path(), specs(4), &resumed).isOk());
  for (int64_t step = 5; step <= 7; ++step) {
    std::vector<HostTensor> batch;
    ASSERT_TRUE(resumed.batch(step, &batch).isOk());
    EXPECT_EQ(batch[0].bytes, seen[step - 1][0].bytes);
    EXPECT_EQ(batch[1].bytes, seen[step - 1][1].bytes);
  }
}

TEST(NpyBatches, ZeroSizedTrailingDimensions) {
  TempDir dir;
  ASSERT_TRUE(writeNpy(dir.file("e.npy"), makeHostTensor(program::F32, {4, 0})).isOk());
  NpyBatchSource source;
  ASSERT_TRUE(NpyBatchSource::open(dir.path(), {{"e", program::F32, {2, 0}}}, &source).isOk());
  std::vector<HostTensor> batch;
  ASSERT_TRUE(source.batch(2, &batch).isOk());
  EXPECT_EQ(batch[0].shape, (std::vector<int64_t>{2, 0}));
}

TEST(NpyBatches, RowsMustBeAPositiveMultipleOfTheBatch) {
  TempDir dir;
  writeData(dir, 5, 5);
  EXPECT_EQ(openError(dir, specs(2)),
            dir.file("onnx__x.npy") +
                ": input 'onnx::x': 5 rows is not a positive multiple of the batch size 2");
  writeData(dir, 0, 0);
  EXPECT_THAT(openError(dir, specs(2)), HasSubstr("0 rows is not a positive multiple"));
}

TEST(NpyBatches, InputsMustHaveTheSameRowCount) {
  TempDir dir;
  writeData(dir, 4, 8);
  EXPECT_EQ(openError(dir, specs(2)), dir.file("label.npy") + ": input 'label': 4 batches, but " +
                                          dir.file("onnx__x.npy") +
                                          " has 2 (every input needs as many batches)");
}

// A sequence-first input [seq, batch]: the file stacks blocks of [seq, B] along dim 0, and a
// rank takes its columns of each block.
TEST(NpyBatches, BatchInDimensionOneIsCutAlongIt) {
  TempDir dir;
  const int64_t seq = 3, batch = 4, batches = 2;
  HostTensor tokens = makeHostTensor(program::I64, {batches * seq, batch});
  for (int64_t i = 0; i < batches * seq * batch; ++i)
    tokens.as<int64_t>()[i] = i; // block k, position s, column b: (k * seq + s) * batch + b
  ASSERT_TRUE(writeNpy(dir.file("src.npy"), tokens).isOk());
  ASSERT_TRUE(writeNpy(dir.file("label.npy"), labelRows(batches * batch)).isOk());

  // The rank taking columns [1, 3) of each global batch of 4.
  std::vector<GraphInputSpec> rank = {{"src", program::I64, {seq, 2}, 1},
                                      {"label", program::I64, {2}, 0}};
  NpyBatchSource source;
  Status status = NpyBatchSource::open(dir.path(), rank, &source, BatchSlice{1, 2, batch});
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(source.batchSize(), batch);
  EXPECT_EQ(source.batchesPerEpoch(), batches);
  for (int64_t step : {1, 2, 3}) {
    std::vector<HostTensor> out;
    ASSERT_TRUE(source.batch(step, &out).isOk());
    const int64_t k = (step - 1) % batches;
    ASSERT_EQ(out[0].shape, (std::vector<int64_t>{seq, 2}));
    for (int64_t s = 0; s < seq; ++s)
      for (int64_t b = 0; b < 2; ++b)
        EXPECT_EQ(out[0].as<int64_t>()[s * 2 + b], (k * seq + s) * batch + 1 + b)
            << "step " << step << " position " << s << " column " << b;
    EXPECT_EQ(out[1].as<int64_t>()[0], k * batch + 1);
    EXPECT_EQ(out[1].as<int64_t>()[1], k * batch + 2);
  }

  // The whole batch (one rank), and a file whose blocks do not tile dim 0.
  std::vector<GraphInputSpec> whole = {{"src", program::I64, {seq, batch}, 1},
                                       {"label", program::I64, {batch}, 0}};
  ASSERT_TRUE(NpyBatchSource::open(dir.path(), whole, &source).isOk());
  std::vector<HostTensor> out;
  ASSERT_TRUE(source.batch(2, &out).isOk());
  EXPECT_EQ(out[0].as<int64_t>()[0], seq * batch);
  std::vector<GraphInputSpec> longer = {{"src", program::I64, {4, batch}, 1},
                                        {"label", program::I64, {batch}, 0}};
  EXPECT_THAT(openError(dir, longer),
              HasSubstr("6 rows is not a positive multiple of its dimension 0, 4"));
}

TEST(NpyBatches, DtypeAndShapeMismatches) {
  TempDir dir;
  writeData(dir, 4, 4);
  EXPECT_EQ(openError(dir, {{"label", program::I32, {2}}}),
            dir.file("label.npy") +
                ": input 'label' is i32[2] (batch 2), the file holds i64[4]: dtype differs");
  EXPECT_EQ(openError(dir, {{"onnx::x", program::F32, {2, 3}}}),
            dir.file("onnx__x.npy") +
                ": input 'onnx::x' is f32[2x3] (batch 2), the file holds f32[4x2]: dimension 1 "
                "differs");
  EXPECT_EQ(openError(dir, {{"onnx::x", program::F32, {2}}}),
            dir.file("onnx__x.npy") +
                ": input 'onnx::x' is f32[2] (batch 2), the file holds f32[4x2]: rank differs");
}

TEST(NpyBatches, BadInputDeclarations) {
  TempDir dir;
  writeData(dir, 4, 4);
  EXPECT_EQ(openError(dir, {{"label", program::I64, {}}}),
            "input 'label': a training input needs a batch dimension, it is i64[]");
  EXPECT_EQ(openError(dir, {{"label", program::I64, {0}}}),
            "input 'label': batch dimension is 0 in i64[0]");
  EXPECT_EQ(openError(dir, {{"onnx::x", program::F32, {2, 2}}, {"label", program::I64, {4}}}),
            "input 'label': batch dimension 4 differs from the other inputs' 2");
  EXPECT_THAT(openError(dir, {}), HasSubstr("no graph inputs"));
}

TEST(NpyBatches, MissingOrDamagedFiles) {
  TempDir dir;
  EXPECT_EQ(openError(dir, specs(2)), "input 'onnx::x': " + dir.file("onnx__x.npy") +
                                          ": cannot open: No such file or "
                                          "directory");
  testing::writeBytes(dir.file("onnx__x.npy"), "garbage");
  EXPECT_EQ(openError(dir, specs(2)),
            "input 'onnx::x': " + dir.file("onnx__x.npy") + ": not a .npy file (bad magic)");
}

TEST(NpyBatches, InvalidSteps) {
  TempDir dir;
  writeData(dir, 4, 4);
  NpyBatchSource source;
  ASSERT_TRUE(NpyBatchSource::open(dir.path(), specs(2), &source).isOk());
  std::vector<HostTensor> batch;
  EXPECT_THAT(source.batch(0, &batch).message(), HasSubstr("steps start at 1"));
  EXPECT_THAT(source.batch(-5, &batch).message(), HasSubstr("steps start at 1"));
  NpyBatchSource unopened;
  EXPECT_FALSE(unopened.batch(1, &batch).isOk());
}

} // namespace
} // namespace shardc::runtime
