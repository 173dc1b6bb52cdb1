// Token-window batches from a flat uint16 token file: window contents, reproducibility,
// resumption, offset range and the file checks.
#include "runtime/data/token_stream.h"
#include "tests/unit/runtime/test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <set>
#include <string>
#include <vector>

namespace shardc::runtime {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

// token i = (i * 7 + 50000) mod 65536: large ids check the unsigned conversion.
uint16_t tokenAt(int64_t i) { return static_cast<uint16_t>((i * 7 + 50000) % 65536); }

std::string tokenFile(const TempDir &dir, int64_t count) {
  std::string bytes;
  for (int64_t i = 0; i < count; ++i) {
    uint16_t t = tokenAt(i);
    bytes += static_cast<char>(t & 0xFF);
    bytes += static_cast<char>(t >> 8);
  }
  std::string path = dir.file("train.bin");
  testing::writeBytes(path, bytes);
  return path;
}

TEST(TokenStream, WindowsAndShiftedTargets) {
  TempDir dir;
  std::string path = tokenFile(dir, 1000);
  TokenStream stream;
  Status status = TokenStream::open(path, 4, 16, 1234, &stream);
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(stream.numTokens(), 1000);
  for (int64_t step = 1; step <= 20; ++step) {
    HostTensor inputs, targets;
    ASSERT_TRUE(stream.batch(step, &inputs, &targets).isOk());
    EXPECT_EQ(inputs.dtype, program::I64);
    EXPECT_EQ(inputs.shape, (std::vector<int64_t>{4, 16}));
    EXPECT_EQ(targets.shape, (std::vector<int64_t>{4, 16}));
    for (int64_t b = 0; b < 4; ++b) {
      int64_t s = stream.windowStart(step, b);
      ASSERT_GE(s, 0);
      ASSERT_LE(s, 1000 - 16 - 1);
      for (int64_t t = 0; t < 16; ++t) {
        ASSERT_EQ(inputs.as<int64_t>()[b * 16 + t], tokenAt(s + t));
        ASSERT_EQ(targets.as<int64_t>()[b * 16 + t], tokenAt(s + t + 1));
      }
    }
  }
}

TEST(TokenStream, SameSeedSameBatchesOtherSeedOtherBatches) {
  TempDir dir;
  std::string path = tokenFile(dir, 5000);
  TokenStream a, b, c;
  ASSERT_TRUE(TokenStream::open(path, 8, 32, 7, &a).isOk());
  ASSERT_TRUE(TokenStream::open(path, 8, 32, 7, &b).isOk());
  ASSERT_TRUE(TokenStream::open(path, 8, 32, 8, &c).isOk());
  int differing = 0;
  for (int64_t step = 1; step <= 5; ++step) {
    HostTensor ai, at, bi, bt, ci, ct;
    ASSERT_TRUE(a.batch(step, &ai, &at).isOk());
    ASSERT_TRUE(b.batch(step, &bi, &bt).isOk());
    ASSERT_TRUE(c.batch(step, &ci, &ct).isOk());
    EXPECT_EQ(ai.bytes, bi.bytes);
    EXPECT_EQ(at.bytes, bt.bytes);
    differing += ai.bytes != ci.bytes;
  }
  EXPECT_EQ(differing, 5);
  // Rows and steps draw different windows.
  std::set<int64_t> starts;
  for (int64_t step = 1; step <= 4; ++step)
    for (int64_t row = 0; row < 8; ++row)
      starts.insert(a.windowStart(step, row));
  EXPECT_GT(starts.size(), 28u);
}

TEST(TokenStream, ResumingAtStepKEqualsSequentialDrawing) {
  TempDir dir;
  std::string path = tokenFile(dir, 3000);
  TokenStream sequential;
  ASSERT_TRUE(TokenStream::open(path, 3, 10, 99, &sequential).isOk());
  std::vector<HostTensor> inputs(12), targets(12);
  for (int64_t step = 1; step <= 12; ++step)
    ASSERT_TRUE(sequential.batch(step, &inputs[step - 1], &targets[step - 1]).isOk());
  TokenStream resumed;
  ASSERT_TRUE(TokenStream::open(path, 3, 10, 99, &resumed).isOk());
  for (int64_t step : {9, 10, 11, 12, 7}) {
    HostTensor in, tg;
    ASSERT_TRUE(resumed.batch(step, &in, &tg).isOk());
    EXPECT_EQ(in.bytes, inputs[step - 1].bytes) << step;
    EXPECT_EQ(tg.bytes, targets[step - 1].bytes) << step;
  }
}

TEST(TokenStream, OffsetsCoverTheWholeValidRange) {
  TempDir dir;
  // n = T + 1: the only window starts at 0.
  TokenStream exact;
  ASSERT_TRUE(TokenStream::open(tokenFile(dir, 9), 2, 8, 1, &exact).isOk());
  for (int64_t step = 1; step <= 50; ++step)
    EXPECT_EQ(exact.windowStart(step, 1), 0);
  // n = T + 3: starts 0, 1 and 2 all occur, nothing else.
  TokenStream small;
  ASSERT_TRUE(TokenStream::open(tokenFile(dir, 11), 2, 8, 1, &small).isOk());
  std::set<int64_t> starts;
  for (int64_t step = 1; step <= 200; ++step)
    starts.insert(small.windowStart(step, step % 2));
  EXPECT_EQ(starts, (std::set<int64_t>{0, 1, 2}));
}

TEST(TokenStream, FileErrors) {
  TempDir dir;
  TokenStream stream;
  EXPECT_EQ(TokenStream::open(dir.file("missing.bin"), 1, 4, 0, &stream).message(),
            dir.file("missing.bin") + ": cannot open: No such file or directory");
  testing::writeBytes(dir.file("odd.bin"), std::string(11, '\x01'));
  EXPECT_EQ(TokenStream::open(dir.file("odd.bin"), 1, 4, 0, &stream).message(),
            dir.file("odd.bin") + ": 11 bytes is not a whole number of uint16 tokens (odd size: "
                                  "truncated, or not a token file?)");
  std::string path = tokenFile(dir, 8);
  EXPECT_EQ(TokenStream::open(path, 1, 8, 0, &stream).message(),
            path + ": 8 tokens, too few for one window of sequence length 8 (needs at least 9)");
  testing::writeBytes(dir.file("empty.bin"), "");
  EXPECT_THAT(TokenStream::open(dir.file("empty.bin"), 1, 1, 0, &stream).message(),
              HasSubstr("0 tokens, too few"));
  EXPECT_THAT(TokenStream::open(path, 0, 4, 0, &stream).message(), HasSubstr("must be positive"));
  EXPECT_THAT(TokenStream::open(path, 1, -1, 0, &stream).message(), HasSubstr("must be positive"));
}

TEST(TokenStream, InvalidSteps) {
  TempDir dir;
  TokenStream stream;
  ASSERT_TRUE(TokenStream::open(tokenFile(dir, 100), 2, 4, 0, &stream).isOk());
  HostTensor in, tg;
  EXPECT_THAT(stream.batch(0, &in, &tg).message(), HasSubstr("out of range"));
  EXPECT_THAT(stream.batch(int64_t{1} << 32, &in, &tg).message(), HasSubstr("out of range"));
  EXPECT_TRUE(stream.batch((int64_t{1} << 32) - 1, &in, &tg).isOk());
  TokenStream unopened;
  EXPECT_FALSE(unopened.batch(1, &in, &tg).isOk());
}

} // namespace
} // namespace shardc::runtime
