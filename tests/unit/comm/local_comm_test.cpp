// The local backend's failure handling: a rank that never arrives makes the others fail within
// the timeout naming it; abort() from one rank makes the others fail at once with its cause;
// ranks that disagree on a collective fail instead of mixing data; bad options are errors.
#include "tests/unit/comm/comm_test_util.h"

#include <string>

namespace shardc::runtime::testing {
namespace {

using Clock = std::chrono::steady_clock;

bool contains(const std::string &text, const std::string &fragment) {
  return text.find(fragment) != std::string::npos;
}

TEST(LocalWorld, RejectsBadSizesAndOptions) {
  std::vector<std::unique_ptr<Communicator>> comms;
  Status s = createLocalWorld(0, CommOptions(), &comms);
  EXPECT_FALSE(s.isOk());
  EXPECT_TRUE(contains(s.message(), "at least 1 rank, got 0")) << s.message();
  CommOptions options;
  for (double bad : {0.0, -1.0, std::nan(""), HUGE_VAL}) {
    options.timeoutSeconds = bad;
    s = createLocalWorld(2, options, &comms);
    EXPECT_FALSE(s.isOk()) << bad;
    EXPECT_TRUE(contains(s.message(), "timeout must be a positive number")) << s.message();
  }
  ASSERT_TRUE(createLocalWorld(3, CommOptions(), &comms).isOk());
  ASSERT_EQ(comms.size(), 3u);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(comms[static_cast<size_t>(r)]->rank(), r);
    EXPECT_EQ(comms[static_cast<size_t>(r)]->size(), 3);
    EXPECT_STREQ(comms[static_cast<size_t>(r)]->backendName(), "local");
  }
}

TEST(LocalWorld, OneRankNeedsNoPeers) {
  auto comms = makeLocalWorld(1, 0.01);
  std::vector<float> data = {1, 2, 3}, out(3);
  ASSERT_TRUE(comms[0]->allReduceSum(data.data(), 3).isOk());
  EXPECT_EQ(data, (std::vector<float>{1, 2, 3}));
  ASSERT_TRUE(comms[0]->reduceScatterSum(data.data(), out.data(), 3).isOk());
  EXPECT_EQ(out, data);
  ASSERT_TRUE(comms[0]->allGather(data.data(), out.data(), 3).isOk());
  EXPECT_EQ(out, data);
  EXPECT_EQ(comms[0]->counters().totalBytesSent(), 0u);
}

// Rank 3 never calls the collective: rank 0 (which receives from it) times out naming it, and
// nobody waits much longer than the timeout.
TEST(LocalWorld, ARankThatNeverArrivesIsATimeoutNamingIt) {
  const double timeout = 0.3;
  auto comms = makeLocalWorld(4, timeout);
  const auto start = Clock::now();
  std::vector<double> elapsed(4, 0);
  auto results = runRanks(comms, [&](int r, Communicator &comm) {
    if (r == 3)
      return Status::ok();
    std::vector<float> data(400, 1.0f);
    Status s = comm.allReduceSum(data.data(), data.size());
    elapsed[static_cast<size_t>(r)] = secondsSince(start);
    return s;
  });
  EXPECT_EQ(results[0].message(),
            "rank 0: all_reduce #1: timed out after 0.3 s waiting for rank 3");
  for (int r = 0; r < 3; ++r) {
    EXPECT_FALSE(results[static_cast<size_t>(r)].isOk()) << r;
    EXPECT_TRUE(contains(results[static_cast<size_t>(r)].message(), "timed out after 0.3 s"))
        << results[static_cast<size_t>(r)].message();
    EXPECT_GE(elapsed[static_cast<size_t>(r)], timeout * 0.9) << r;
    // Each rank waits at most one timeout per step it enters.
    EXPECT_LT(elapsed[static_cast<size_t>(r)], 10 * timeout) << r;
  }
}

// The sender's side: with two ranks, rank 0's message is never taken.
TEST(LocalWorld, TimeoutsNameThePeerForEveryCollective) {
  auto comms = makeLocalWorld(2, 0.1);
  std::vector<float> in(8, 1.0f), out(8);
  Status s = comms[0]->reduceScatterSum(in.data(), out.data(), 4);
  EXPECT_EQ(s.message(), "rank 0: reduce_scatter #1: timed out after 0.1 s waiting for rank 1");
  s = comms[1]->allGather(in.data(), out.data(), 4);
  EXPECT_EQ(s.message(), "rank 1: all_gather #1: timed out after 0.1 s waiting for rank 0");
}

// Rank 2 fails while the others wait in a collective with a long timeout: they fail at once
// with its cause, and so does every later collective.
TEST(LocalWorld, AbortFromOneRankFailsTheOthersPromptly) {
  auto comms = makeLocalWorld(4, 60.0);
  const auto start = Clock::now();
  std::vector<double> elapsed(4, 0);
  auto results = runRanks(comms, [&](int r, Communicator &comm) {
    if (r == 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      comm.abort("out of memory in matmul");
      return Status::ok();
    }
    std::vector<float> data(4000, 1.0f);
    Status s = comm.allReduceSum(data.data(), data.size());
    elapsed[static_cast<size_t>(r)] = secondsSince(start);
    return s;
  });
  for (int r : {0, 1, 3}) {
    const std::string &message = results[static_cast<size_t>(r)].message();
    EXPECT_TRUE(contains(message, "rank 2 failed: out of memory in matmul")) << message;
    EXPECT_TRUE(contains(message, "rank " + std::to_string(r) + ": all_reduce #1: ")) << message;
    EXPECT_LT(elapsed[static_cast<size_t>(r)], 5.0) << r;
  }
  std::vector<float> later(4, 1.0f);
  const auto again = Clock::now();
  Status s = comms[0]->allGather(later.data(), later.data() + 1, 0);
  EXPECT_TRUE(s.isOk()) << "an empty collective has nothing to wait for";
  std::vector<float> gathered(16);
  s = comms[0]->allGather(later.data(), gathered.data(), 4);
  EXPECT_EQ(s.message(), "rank 0: all_gather #3: rank 2 failed: out of memory in matmul");
  EXPECT_LT(secondsSince(again), 1.0);
}

// Abort before anyone reached the collective, and from a rank that is itself mid-collective.
TEST(LocalWorld, AbortReachesRanksInEveryState) {
  auto comms = makeLocalWorld(3, 60.0);
  comms[1]->abort("bad batch");
  comms[0]->abort("second failure is not the one reported");
  auto results = runRanks(comms, [&](int, Communicator &comm) {
    std::vector<float> data(30, 1.0f);
    return comm.allReduceSum(data.data(), data.size());
  });
  for (const Status &s : results)
    EXPECT_TRUE(contains(s.message(), "rank 1 failed: bad batch")) << s.message();
}

TEST(LocalWorld, RanksThatDisagreeOnTheSizeFailInsteadOfMixingData) {
  auto comms = makeLocalWorld(2, 5.0);
  const auto start = Clock::now();
  auto results = runRanks(comms, [&](int r, Communicator &comm) {
    std::vector<float> data(r == 0 ? 4 : 6, 1.0f);
    return comm.allReduceSum(data.data(), data.size());
  });
  for (const Status &s : results) {
    EXPECT_FALSE(s.isOk());
    EXPECT_TRUE(contains(s.message(), "the ranks disagree on the collectives")) << s.message();
  }
  EXPECT_LT(secondsSince(start), 2.0);
}

// The world lives as long as its last communicator, whichever that is.
TEST(LocalWorld, CommunicatorsCanBeDestroyedInAnyOrder) {
  auto comms = makeLocalWorld(3);
  comms[1].reset();
  comms[0].reset();
  comms[2]->abort("late");
  comms[2].reset();
}

} // namespace
} // namespace shardc::runtime::testing
