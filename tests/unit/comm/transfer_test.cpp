// Point-to-point transfers (Communicator::transfer) on the local backend, as pipeline stages
// use them: along a chain of ranks and back, two ranks sending to each other at once, several
// messages between one pair matched in order, transfers of some ranks between collectives of
// all; and their failures: a count the peers disagree on, a peer that never arrives, a peer
// that aborts, arguments that cannot be right, all in one line naming the ranks.
#include "tests/unit/comm/comm_test_util.h"

#include "runtime/common/comm_cost.h"

#include <string>

namespace shardc::runtime::testing {
namespace {

constexpr int kNone = Communicator::kNoPeer;
const int kSendRecv = static_cast<int>(CollectiveKind::SendRecv);

bool contains(const std::string &text, const std::string &fragment) {
  return text.find(fragment) != std::string::npos;
}

// Forward along 0 -> 1 -> 2 -> 3, then back: every rank gets exactly its neighbour's data,
// and counts what it sent as send_recv.
TEST(Transfer, AlongAChainAndBack) {
  const int n = 4;
  const size_t count = 257;
  auto comms = makeLocalWorld(n);
  std::vector<std::vector<float>> forward(n), backward(n);
  auto results = runRanks(comms, [&](int r, Communicator &comm) {
    const int next = r + 1 < n ? r + 1 : kNone, prev = r > 0 ? r - 1 : kNone;
    std::vector<float> act = rankData(r, next == kNone ? 0 : count, 1);
    forward[r].assign(prev == kNone ? 0 : count, -1.0f);
    SHARDC_RETURN_IF_ERROR(comm.transfer(act.data(), act.size(), next, forward[r].data(),
                                         forward[r].size(), prev, CommDType::F32));
    std::vector<float> grad = rankData(r, prev == kNone ? 0 : count, 2);
    backward[r].assign(next == kNone ? 0 : count, -1.0f);
    return comm.transfer(grad.data(), grad.size(), prev, backward[r].data(), backward[r].size(),
                         next, CommDType::F32);
  });
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(results[r].isOk()) << results[r].message();
    if (r > 0)
      EXPECT_TRUE(sameBits(forward[r], rankData(r - 1, count, 1))) << r;
    if (r + 1 < n)
      EXPECT_TRUE(sameBits(backward[r], rankData(r + 1, count, 2))) << r;
    const CommCounters &c = comms[r]->counters();
    EXPECT_EQ(c.calls[kSendRecv], 2u);
    const uint64_t sent = (r + 1 < n ? count : 0) + (r > 0 ? count : 0);
    EXPECT_EQ(c.bytesSent[kSendRecv], sent * sizeof(float)) << r;
    EXPECT_EQ(c.bytesSent[kSendRecv],
              (r + 1 < n ? collectiveBytesSent(CollectiveKind::SendRecv, count, n, 4) : 0) +
                  (r > 0 ? collectiveBytesSent(CollectiveKind::SendRecv, count, n, 4) : 0));
    EXPECT_EQ(c.totalBytesSent(), c.bytesSent[kSendRecv]);
  }
}

// Two stages that send to each other in the same call cannot deadlock; bf16 moves as bits.
TEST(Transfer, TwoRanksSendToEachOtherAtOnce) {
  auto comms = makeLocalWorld(2);
  std::vector<std::vector<uint16_t>> got(2);
  auto results = runRanks(comms, [&](int r, Communicator &comm) {
    std::vector<uint16_t> mine(9);
    for (size_t i = 0; i < mine.size(); ++i)
      mine[i] = static_cast<uint16_t>(1000 * r + i);
    got[r].assign(9, 0);
    return comm.transfer(mine.data(), mine.size(), 1 - r, got[r].data(), got[r].size(), 1 - r,
                         CommDType::BF16);
  });
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(results[r].isOk()) << results[r].message();
    for (size_t i = 0; i < 9; ++i)
      EXPECT_EQ(got[r][i], static_cast<uint16_t>(1000 * (1 - r) + i));
    EXPECT_EQ(comms[r]->counters().bytesSent[kSendRecv], 18u);
  }
}

// Messages between one pair are matched in call order, whatever their sizes; the other ranks'
// collectives are numbered apart from them, so an all-reduce of every rank still matches.
TEST(Transfer, MessagesOfAPairAreMatchedInOrderApartFromTheCollectives) {
  auto comms = makeLocalWorld(4);
  std::vector<std::vector<float>> received(3);
  std::vector<std::vector<float>> sums(4);
  auto results = runRanks(comms, [&](int r, Communicator &comm) {
    if (r == 0)
      for (size_t k = 0; k < 3; ++k) {
        std::vector<float> message = rankData(0, 5 * (k + 1), static_cast<unsigned>(k));
        SHARDC_RETURN_IF_ERROR(
            comm.transfer(message.data(), message.size(), 1, nullptr, 0, kNone, CommDType::F32));
      }
    if (r == 1)
      for (size_t k = 0; k < 3; ++k) {
        received[k].assign(5 * (k + 1), -1.0f);
        SHARDC_RETURN_IF_ERROR(comm.transfer(nullptr, 0, kNone, received[k].data(),
                                             received[k].size(), 0, CommDType::F32));
      }
    sums[r] = rankData(r, 40, 9);
    return comm.allReduceSum(sums[r].data(), sums[r].size());
  });
  for (int r = 0; r < 4; ++r)
    ASSERT_TRUE(results[r].isOk()) << results[r].message();
  for (size_t k = 0; k < 3; ++k)
    EXPECT_TRUE(sameBits(received[k], rankData(0, 5 * (k + 1), static_cast<unsigned>(k)))) << k;
  for (int r = 1; r < 4; ++r)
    EXPECT_TRUE(sameBits(sums[r], sums[0]));
}

// A receiver expecting another count than the sender sends: both fail, neither takes data.
TEST(Transfer, ACountThePeersDisagreeOnFailsBoth) {
  auto comms = makeLocalWorld(2, 5.0);
  std::vector<float> out(5, -1.0f);
  auto results = runRanks(comms, [&](int r, Communicator &comm) {
    std::vector<float> in(4, 1.0f);
    if (r == 0)
      return comm.transfer(in.data(), in.size(), 1, nullptr, 0, kNone, CommDType::F32);
    return comm.transfer(nullptr, 0, kNone, out.data(), out.size(), 0, CommDType::F32);
  });
  const std::string expected = "rank 0 sent 16 bytes for transfer #1 where rank 1 expected 20 "
                               "bytes for transfer #1 (the ranks disagree on the transfers)";
  EXPECT_EQ(results[1].message(), "rank 1: send_recv #1: " + expected);
  EXPECT_EQ(results[0].message(), "rank 0: send_recv #1: " + expected);
  EXPECT_EQ(out, std::vector<float>(5, -1.0f));
}

// A transfer where the peer calls a collective: the messages are told apart.
TEST(Transfer, ATransferIsNeverTakenForACollective) {
  auto comms = makeLocalWorld(2, 5.0);
  auto results = runRanks(comms, [&](int r, Communicator &comm) {
    std::vector<float> data(2, 1.0f);
    if (r == 0)
      return comm.transfer(data.data(), data.size(), 1, nullptr, 0, kNone, CommDType::F32);
    return comm.allReduceSum(data.data(), data.size());
  });
  EXPECT_FALSE(results[0].isOk());
  EXPECT_FALSE(results[1].isOk());
  EXPECT_TRUE(contains(results[1].message(), "for transfer #1 where rank 1 expected 4 bytes for "
                                             "collective #1"))
      << results[1].message();
}

TEST(Transfer, APeerThatNeverArrivesIsATimeoutNamingIt) {
  auto comms = makeLocalWorld(3, 0.2);
  auto results = runRanks(comms, [&](int r, Communicator &comm) {
    std::vector<float> data(3, 1.0f);
    if (r == 0) // sends to rank 2, which never receives
      return comm.transfer(data.data(), data.size(), 2, nullptr, 0, kNone, CommDType::F32);
    if (r == 1) // waits for rank 2, which never sends
      return comm.transfer(nullptr, 0, kNone, data.data(), data.size(), 2, CommDType::F32);
    return Status::ok();
  });
  EXPECT_EQ(results[0].message(),
            "rank 0: send_recv #1: timed out after 0.2 s waiting for rank 2");
  EXPECT_EQ(results[1].message(),
            "rank 1: send_recv #1: timed out after 0.2 s waiting for rank 2");
}

TEST(Transfer, APeerThatAbortsEndsTheWaitAtOnce) {
  auto comms = makeLocalWorld(2, 30.0);
  const auto start = std::chrono::steady_clock::now();
  auto results = runRanks(comms, [&](int r, Communicator &comm) {
    if (r == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      comm.abort("out of memory in stage 1");
      return Status::ok();
    }
    std::vector<float> data(3);
    return comm.transfer(nullptr, 0, kNone, data.data(), data.size(), 1, CommDType::F32);
  });
  EXPECT_EQ(results[0].message(), "rank 0: send_recv #1: rank 1 failed: out of memory in stage 1");
  EXPECT_LT(secondsSince(start), 5.0);
}

// Every argument check, before anything is sent (one rank alone: nothing can be waiting).
TEST(Transfer, ArgumentsThatCannotBeRightAreRefused) {
  auto comms = makeLocalWorld(2, 0.1);
  Communicator &comm = *comms[0];
  std::vector<float> a(4), b(4);
  auto message = [&](const void *send, size_t sendCount, int to, void *recv, size_t recvCount,
                     int from, CommDType dtype = CommDType::F32) {
    return comm.transfer(send, sendCount, to, recv, recvCount, from, dtype).message();
  };
  EXPECT_EQ(message(a.data(), 4, 0, nullptr, 0, kNone),
            "rank 0: send_recv #1: a rank cannot send to itself");
  EXPECT_EQ(message(nullptr, 0, kNone, b.data(), 4, 2),
            "rank 0: send_recv #2: no rank 2 to receive from (the communicator has 2)");
  EXPECT_EQ(message(a.data(), 4, kNone, b.data(), 4, 1),
            "rank 0: send_recv #3: 4 elements to send but no rank to send to");
  EXPECT_EQ(message(nullptr, 0, kNone, nullptr, 0, kNone),
            "rank 0: send_recv #4: no rank to send to or receive from");
  EXPECT_EQ(message(nullptr, 4, 1, nullptr, 0, kNone), "rank 0: send_recv #5: null buffer");
  EXPECT_EQ(message(a.data(), 4, 1, a.data() + 2, 2, 1),
            "rank 0: send_recv #6: the send and receive buffers overlap");
  EXPECT_EQ(message(a.data(), 4, 1, nullptr, 0, kNone, static_cast<CommDType>(9)),
            "rank 0: send_recv #7: unknown element type 9");
  EXPECT_EQ(comm.counters().calls[kSendRecv], 7u);
  EXPECT_EQ(comm.counters().bytesSent[kSendRecv], 0u);
}

// Within a group (a pipeline axis of a mesh), ranks are the group's and messages name the
// world's.
TEST(Transfer, WithinAGroupMessagesNameWorldRanks) {
  auto comms = makeLocalWorld(4, 0.2);
  std::vector<std::vector<float>> got(4);
  auto results = runRanks(comms, [&](int r, Communicator &comm) {
    std::unique_ptr<Communicator> pair;
    SHARDC_RETURN_IF_ERROR(comm.split(r / 2, r, &pair)); // {0, 1} and {2, 3}
    pair->setGroupName("pp");
    std::vector<float> data = rankData(r, 6, 3);
    got[r].assign(6, -1.0f);
    if (r == 3) // never answers its partner
      return Status::ok();
    if (pair->rank() == 0)
      return pair->transfer(data.data(), data.size(), 1, nullptr, 0, kNone, CommDType::F32);
    return pair->transfer(nullptr, 0, kNone, got[r].data(), got[r].size(), 0, CommDType::F32);
  });
  ASSERT_TRUE(results[0].isOk()) << results[0].message();
  ASSERT_TRUE(results[1].isOk()) << results[1].message();
  EXPECT_TRUE(sameBits(got[1], rankData(0, 6, 3)));
  EXPECT_EQ(results[2].message(), "rank 2: send_recv #1 in group 'pp' (ranks 2, 3): timed out "
                                  "after 0.2 s waiting for rank 3");
}

} // namespace
} // namespace shardc::runtime::testing
