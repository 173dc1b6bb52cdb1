// Philox4x32-10: the published known-answer vectors, and the stream helpers built on it.
#include "runtime/support/philox.h"

#include <gtest/gtest.h>
#include <set>
#include <vector>

namespace shardc::runtime {
namespace {

// Random123's kat_vectors for philox4x32 with 10 rounds (counter words, key words, output).
TEST(Philox, KnownAnswerVectors) {
  EXPECT_EQ(philox4x32({0, 0, 0, 0}, {0, 0}),
            (PhiloxBlock{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (PhiloxBlock{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (PhiloxBlock{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(Philox, UniformFloatRange) {
  EXPECT_EQ(uniformFloat(0), 0.0f);
  EXPECT_EQ(uniformFloat(0xFF), 0.0f); // only the top 24 bits count
  EXPECT_EQ(uniformFloat(0x80000000u), 0.5f);
  EXPECT_LT(uniformFloat(0xFFFFFFFFu), 1.0f);
  EXPECT_EQ(uniformFloat(0xFFFFFFFFu), 1.0f - 1.0f / 16777216.0f);
}

TEST(Philox, StreamWordsAreBlockLanes) {
  uint64_t seed = 0x0123456789abcdefULL, stream = philoxStreamId(7, 3);
  PhiloxStream s(seed, stream);
  for (uint64_t block : {0ULL, 1ULL, 0x100000000ULL + 5}) {
    PhiloxBlock expected =
        philox4x32({static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), 3, 7},
                   {0x89abcdef, 0x01234567});
    for (uint64_t lane = 0; lane < 4; ++lane)
      EXPECT_EQ(s.word(block * 4 + lane), expected[lane]) << block << " " << lane;
  }
}

TEST(Philox, FillMatchesWordAtAnyAlignment) {
  PhiloxStream s(42, philoxStreamId(1, 2));
  for (uint64_t first : {0ULL, 1ULL, 3ULL, 4ULL, 1000001ULL}) {
    for (size_t count : {0u, 1u, 3u, 4u, 5u, 17u}) {
      std::vector<uint32_t> words(count);
      s.fill(first, count, words.data());
      for (size_t i = 0; i < count; ++i)
        ASSERT_EQ(words[i], s.word(first + i)) << first << "+" << i;
    }
  }
}

// A shard that draws elements [a, b) sees exactly what one rank drawing all elements sees.
TEST(Philox, ElementsArePureFunctionsOfTheirIndex) {
  PhiloxStream whole(99, philoxStreamId(10, 4));
  std::vector<uint32_t> all(1000);
  whole.fill(0, all.size(), all.data());
  PhiloxStream again(99, philoxStreamId(10, 4));
  std::vector<uint32_t> shard(333);
  again.fill(401, shard.size(), shard.data());
  for (size_t i = 0; i < shard.size(); ++i)
    ASSERT_EQ(shard[i], all[401 + i]);
  EXPECT_EQ(again.uniform(5), uniformFloat(all[5]));
}

TEST(Philox, DistinctSeedsStepsAndTensorsGiveDistinctStreams) {
  std::set<uint32_t> firstWords;
  for (uint64_t seed : {0ULL, 1ULL, 1ULL << 32})
    for (uint32_t step : {0u, 1u})
      for (uint32_t tensor : {0u, 1u, kDataSamplingStreamTensorId})
        firstWords.insert(PhiloxStream(seed, philoxStreamId(step, tensor)).word(0));
  EXPECT_EQ(firstWords.size(), 18u);
  EXPECT_NE(philoxStreamId(1, 0), philoxStreamId(0, 1));
}

TEST(Philox, UniformLooksUniform) {
  PhiloxStream s(2024, 0);
  const int n = 100000;
  double sum = 0;
  int buckets[10] = {};
  for (int i = 0; i < n; ++i) {
    float u = s.uniform(static_cast<uint64_t>(i));
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
    ++buckets[static_cast<int>(u * 10)];
  }
  EXPECT_NEAR(sum / n, 0.5, 0.01);
  for (int count : buckets)
    EXPECT_NEAR(count, n / 10, n / 100);
}

} // namespace
} // namespace shardc::runtime
