// The ring collectives (runtime/comm/ring.h) on the element types other than f32, on the local
// backend: bf16 and f16 reductions against a reference that sums in the documented ring order and
// rounds to the 16-bit type after every addition, for 1 to 4 ranks and counts that do and do not
// divide evenly; all-gathers of bf16, f16 and raw bytes bit for bit; bytes counted as
// comm_cost.h predicts with the element's size; a reduction of raw bytes refused before anything
// is sent; the size limit scaled by the element's size.
#include "runtime/comm/ring.h"
#include "runtime/common/comm_cost.h"
#include "runtime/support/half_float.h"
#include "tests/unit/comm/comm_test_util.h"

#include <cstdio>
#include <limits>
#include <string>

namespace shardc::runtime::testing {
namespace {

// A 16-bit float type: its CommDType and its conversions (half_float.h: nearest, ties to even).
struct BF16Type {
  static constexpr CommDType kType = CommDType::BF16;
  static constexpr const char *kName = "bf16";
  static uint16_t narrow(float v) { return toBFloat16(v).bits; }
  static float widen(uint16_t bits) { return toFloat(BFloat16{bits}); }
};

struct F16Type {
  static constexpr CommDType kType = CommDType::F16;
  static constexpr const char *kName = "f16";
  static uint16_t narrow(float v) { return toFloat16(v).bits; }
  static float widen(uint16_t bits) { return toFloat(Float16{bits}); }
};

using Bits = std::vector<uint16_t>;

// Every rank's data: rankData's floats (varied exponents, so roundings show) in the 16-bit type.
template <typename Half> std::vector<Bits> halfWorldData(int ranks, size_t count, unsigned salt) {
  std::vector<Bits> data;
  for (int r = 0; r < ranks; ++r) {
    Bits bits;
    for (float x : rankData(r, count, salt))
      bits.push_back(Half::narrow(x));
    data.push_back(bits);
  }
  return data;
}

// Element i of the all-reduce of `count` elements as ring.h documents it: chunk
// c = [c*count/N, (c+1)*count/N) starts with rank c+1's value and adds ranks c+2, ..., c left to
// right, each partial sum computed in f32 and rounded to the 16-bit type.
template <typename Half>
uint16_t ringOrderSum(const std::vector<Bits> &data, size_t i, size_t count) {
  const size_t ranks = data.size();
  size_t chunk = 0;
  while ((chunk + 1) * count / ranks <= i)
    ++chunk;
  uint16_t sum = data[(chunk + 1) % ranks][i];
  for (size_t k = 2; k <= ranks; ++k)
    sum = Half::narrow(Half::widen(sum) + Half::widen(data[(chunk + k) % ranks][i]));
  return sum;
}

// The same values summed in f32 and rounded once: what a reduction that kept f32 partial sums
// would give. The tests check that their data tells the two apart.
template <typename Half> uint16_t roundedOnce(const std::vector<Bits> &data, size_t i) {
  float sum = 0;
  for (const Bits &rank : data)
    sum += Half::widen(rank[i]);
  return Half::narrow(sum);
}

// How many elements differ, and the first that does, for a readable failure.
::testing::AssertionResult sameElements(const Bits &actual, const Bits &expected) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure()
           << "size " << actual.size() << ", expected " << expected.size();
  size_t wrong = 0, first = 0;
  for (size_t i = 0; i < actual.size(); ++i)
    if (actual[i] != expected[i] && wrong++ == 0)
      first = i;
  if (wrong == 0)
    return ::testing::AssertionSuccess();
  char detail[64];
  std::snprintf(detail, sizeof detail, "first: element %zu is 0x%04x, expected 0x%04x", first,
                actual[first], expected[first]);
  return ::testing::AssertionFailure() << wrong << " elements differ; " << detail;
}

// Runs the all-reduce of `count` elements on `ranks` ranks; returns how many elements of the
// reference differ from a single rounding of the f32 sum.
template <typename Half> size_t checkHalfAllReduce(int ranks, size_t count) {
  SCOPED_TRACE(std::string(Half::kName) + ", ranks " + std::to_string(ranks) + ", count " +
               std::to_string(count));
  const auto data = halfWorldData<Half>(ranks, count, 21);
  auto results = data;
  auto comms = makeLocalWorld(ranks);
  for (const Status &s : runRanks(comms, [&](int r, Communicator &comm) {
         return comm.allReduceSum(results[static_cast<size_t>(r)].data(), count, Half::kType);
       }))
    EXPECT_TRUE(s.isOk()) << s.message();
  Bits expected(count);
  size_t differsFromOneRounding = 0;
  for (size_t i = 0; i < count; ++i) {
    expected[i] = ringOrderSum<Half>(data, i, count);
    differsFromOneRounding += expected[i] != roundedOnce<Half>(data, i);
  }
  for (int r = 0; r < ranks; ++r) {
    EXPECT_TRUE(sameElements(results[static_cast<size_t>(r)], expected)) << "rank " << r;
    const CommCounters &c = comms[static_cast<size_t>(r)]->counters();
    EXPECT_EQ(c.calls[0], 1u);
    if (count % static_cast<size_t>(ranks) == 0)
      EXPECT_EQ(c.bytesSent[0], collectiveBytesSent(CollectiveKind::AllReduce, count, ranks, 2));
    EXPECT_EQ(c.totalBytesSent(), c.bytesSent[0]);
  }
  return differsFromOneRounding;
}

template <typename Half> void checkHalfAllReduces() {
  size_t differs = 0;
  for (int ranks = 1; ranks <= 4; ++ranks)
    for (size_t count : {1u, 2u, 5u, 7u, 13u, 12u, 132u, 1001u})
      differs += checkHalfAllReduce<Half>(ranks, count);
  // Otherwise the data could not tell a ring that rounds every step from one that keeps f32
  // partial sums.
  EXPECT_GT(differs, 0u) << Half::kName;
}

TEST(RingDTypes, Bf16AllReduceRoundsEveryStepInRingOrder) { checkHalfAllReduces<BF16Type>(); }

TEST(RingDTypes, F16AllReduceRoundsEveryStepInRingOrder) { checkHalfAllReduces<F16Type>(); }

template <typename Half> void checkHalfReduceScatters() {
  for (int ranks = 1; ranks <= 4; ++ranks) {
    for (size_t chunk : {1u, 5u, 257u}) {
      SCOPED_TRACE(std::string(Half::kName) + ", ranks " + std::to_string(ranks) + ", chunk " +
                   std::to_string(chunk));
      const size_t total = chunk * static_cast<size_t>(ranks);
      const auto data = halfWorldData<Half>(ranks, total, 22);
      std::vector<Bits> outs(static_cast<size_t>(ranks), Bits(chunk, 0xdead));
      auto comms = makeLocalWorld(ranks);
      for (const Status &s : runRanks(comms, [&](int r, Communicator &comm) {
             return comm.reduceScatterSum(data[static_cast<size_t>(r)].data(),
                                          outs[static_cast<size_t>(r)].data(), chunk, Half::kType);
           }))
        ASSERT_TRUE(s.isOk()) << s.message();
      for (int r = 0; r < ranks; ++r) {
        // Rank r's chunk of the all-reduce of the same data: the same order, the same roundings.
        Bits expected(chunk);
        for (size_t j = 0; j < chunk; ++j)
          expected[j] = ringOrderSum<Half>(data, static_cast<size_t>(r) * chunk + j, total);
        EXPECT_TRUE(sameElements(outs[static_cast<size_t>(r)], expected)) << "rank " << r;
        const CommCounters &c = comms[static_cast<size_t>(r)]->counters();
        EXPECT_EQ(c.calls[1], 1u);
        EXPECT_EQ(c.bytesSent[1],
                  collectiveBytesSent(CollectiveKind::ReduceScatter, total, ranks, 2));
        EXPECT_EQ(c.totalBytesSent(), c.bytesSent[1]);
      }
    }
  }
}

TEST(RingDTypes, Bf16ReduceScatterGivesEachRankItsChunkOfTheRingOrderSum) {
  checkHalfReduceScatters<BF16Type>();
}

TEST(RingDTypes, F16ReduceScatterGivesEachRankItsChunkOfTheRingOrderSum) {
  checkHalfReduceScatters<F16Type>();
}

template <typename Half> void checkHalfAllGathers() {
  for (int ranks = 1; ranks <= 4; ++ranks) {
    for (size_t chunk : {1u, 6u, 129u}) {
      SCOPED_TRACE(std::string(Half::kName) + ", ranks " + std::to_string(ranks) + ", chunk " +
                   std::to_string(chunk));
      const auto shards = halfWorldData<Half>(ranks, chunk, 23);
      const size_t total = chunk * static_cast<size_t>(ranks);
      std::vector<Bits> outs(static_cast<size_t>(ranks), Bits(total, 0xdead));
      auto comms = makeLocalWorld(ranks);
      for (const Status &s : runRanks(comms, [&](int r, Communicator &comm) {
             return comm.allGather(shards[static_cast<size_t>(r)].data(),
                                   outs[static_cast<size_t>(r)].data(), chunk, Half::kType);
           }))
        ASSERT_TRUE(s.isOk()) << s.message();
      Bits expected;
      for (const Bits &shard : shards)
        expected.insert(expected.end(), shard.begin(), shard.end());
      for (int r = 0; r < ranks; ++r) {
        EXPECT_TRUE(sameElements(outs[static_cast<size_t>(r)], expected)) << "rank " << r;
        EXPECT_EQ(comms[static_cast<size_t>(r)]->counters().bytesSent[2],
                  collectiveBytesSent(CollectiveKind::AllGather, total, ranks, 2));
      }
    }
  }
}

TEST(RingDTypes, Bf16AndF16AllGatherConcatenateTheShardsInRankOrder) {
  checkHalfAllGathers<BF16Type>();
  checkHalfAllGathers<F16Type>();
}

// Raw bytes, in chunks of any length (odd ones included): what the all_gather kernel moves when
// it packs tensors of several dtypes.
TEST(RingDTypes, BytesAllGatherMovesRawBytes) {
  for (int ranks = 1; ranks <= 4; ++ranks) {
    for (size_t chunk : {1u, 7u, 13u}) {
      SCOPED_TRACE("ranks " + std::to_string(ranks) + ", chunk " + std::to_string(chunk));
      std::vector<std::vector<uint8_t>> shards(static_cast<size_t>(ranks));
      std::vector<uint8_t> expected;
      for (int r = 0; r < ranks; ++r)
        for (size_t i = 0; i < chunk; ++i) {
          shards[static_cast<size_t>(r)].push_back(static_cast<uint8_t>(37 * r + 11 * i + 1));
          expected.push_back(shards[static_cast<size_t>(r)].back());
        }
      const size_t total = chunk * static_cast<size_t>(ranks);
      std::vector<std::vector<uint8_t>> outs(static_cast<size_t>(ranks),
                                             std::vector<uint8_t>(total, 0xee));
      auto comms = makeLocalWorld(ranks);
      for (const Status &s : runRanks(comms, [&](int r, Communicator &comm) {
             return comm.allGather(shards[static_cast<size_t>(r)].data(),
                                   outs[static_cast<size_t>(r)].data(), chunk, CommDType::Bytes);
           }))
        ASSERT_TRUE(s.isOk()) << s.message();
      for (int r = 0; r < ranks; ++r) {
        EXPECT_EQ(outs[static_cast<size_t>(r)], expected) << "rank " << r;
        EXPECT_EQ(comms[static_cast<size_t>(r)]->counters().bytesSent[2],
                  collectiveBytesSent(CollectiveKind::AllGather, total, ranks, 1));
      }
    }
  }
}

// Rank 0 alone calls them: were anything sent, it would wait for rank 1 and time out instead.
TEST(RingDTypes, AReductionOfRawBytesIsRefusedBeforeAnythingIsSent) {
  auto comms = makeLocalWorld(2, 0.5);
  std::vector<uint8_t> in(8), out(4);
  Status s = comms[0]->allReduceSum(in.data(), in.size(), CommDType::Bytes);
  EXPECT_EQ(
      s.message(),
      "rank 0: all_reduce #1: cannot sum raw bytes "
      "(CommDType::Bytes is for all_gather, all_to_all and send_recv only)");
  s = comms[0]->reduceScatterSum(in.data(), out.data(), out.size(), CommDType::Bytes);
  EXPECT_EQ(
      s.message(),
      "rank 0: reduce_scatter #2: cannot sum raw bytes "
      "(CommDType::Bytes is for all_gather, all_to_all and send_recv only)");
  s = comms[0]->allGather(in.data(), out.data(), 2, static_cast<CommDType>(9));
  EXPECT_EQ(s.message(), "rank 0: all_gather #3: unknown element type 9");
  EXPECT_EQ(comms[0]->counters().totalBytesSent(), 0u);
}

// The largest count keeps every byte offset within size_t, whatever the element's size: a count
// too large as f32 fits as bf16 (whose call then fails on its null buffer, past the limit).
TEST(RingDTypes, TheSizeLimitScalesWithTheElementSize) {
  auto comms = makeLocalWorld(2);
  const size_t max = std::numeric_limits<size_t>::max();
  const size_t count = max / 4 / 2 + 1;
  Status s = comms[0]->allReduceSum(nullptr, count, CommDType::F32);
  EXPECT_EQ(s.message(),
            "rank 0: all_reduce #1: " + std::to_string(count) + " elements is too many");
  s = comms[0]->allReduceSum(nullptr, count, CommDType::BF16);
  EXPECT_EQ(s.message(), "rank 0: all_reduce #2: null buffer");
  s = comms[0]->allReduceSum(nullptr, max / 2 / 2 + 1, CommDType::F16);
  EXPECT_EQ(s.message(),
            "rank 0: all_reduce #3: " + std::to_string(max / 2 / 2 + 1) + " elements is too many");
}

TEST(CommDType, SizesAndNames) {
  EXPECT_EQ(commDTypeSize(CommDType::F32), 4u);
  EXPECT_EQ(commDTypeSize(CommDType::BF16), 2u);
  EXPECT_EQ(commDTypeSize(CommDType::F16), 2u);
  EXPECT_EQ(commDTypeSize(CommDType::Bytes), 1u);
  EXPECT_EQ(commDTypeSize(static_cast<CommDType>(7)), 0u);
  EXPECT_STREQ(commDTypeName(CommDType::F32), "f32");
  EXPECT_STREQ(commDTypeName(CommDType::BF16), "bf16");
  EXPECT_STREQ(commDTypeName(CommDType::F16), "f16");
  EXPECT_STREQ(commDTypeName(CommDType::Bytes), "bytes");
  EXPECT_TRUE(checkCommDType(CollectiveKind::AllGather, CommDType::Bytes).isOk());
  EXPECT_TRUE(checkCommDType(CollectiveKind::AllReduce, CommDType::F16).isOk());
  EXPECT_FALSE(checkCommDType(CollectiveKind::ReduceScatter, CommDType::Bytes).isOk());
}

} // namespace
} // namespace shardc::runtime::testing
