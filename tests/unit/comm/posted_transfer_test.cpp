// Posted transfers (Communicator::transferPosted) on the local backend, as the interleaved
// pipeline uses them: sends that never wait for their receivers, so that every rank of a ring
// can send before it receives; a pair's posted and rendezvous messages matched in one order;
// the sender's buffer free at once; and their failures: a count the receiver disagrees on
// (which fails the sender too, at its next call), a receiver that never takes its messages
// (finishPosted times out naming it), a peer that aborts.
#include "tests/unit/comm/comm_test_util.h"

#include "runtime/common/comm_cost.h"

#include <algorithm>
#include <string>

namespace shardc::runtime::testing {
namespace {

constexpr int kNone = Communicator::kNoPeer;
const int kSendRecv = static_cast<int>(CollectiveKind::SendRecv);

// Each of 3 ranks posts two messages to the next before it receives the previous rank's two:
// with transfer() every rank would wait in its first send. The sender scribbles over its
// buffer as soon as the call returns; the receiver still gets what was sent.
TEST(PostedTransfer, EveryRankOfARingSendsBeforeItReceives) {
  const int n = 3;
  auto comms = makeLocalWorld(n, 5.0);
  std::vector<std::vector<std::vector<float>>> got(n);
  auto results = runRanks(comms, [&](int r, Communicator &comm) {
    const int next = (r + 1) % n, prev = (r + n - 1) % n;
    for (unsigned k = 0; k < 2; ++k) {
      std::vector<float> act = rankData(r, 100 + k, k);
      SHARDC_RETURN_IF_ERROR(
          comm.transferPosted(act.data(), act.size(), next, nullptr, 0, kNone, CommDType::F32));
      std::fill(act.begin(), act.end(), -3.0f);
    }
    for (unsigned k = 0; k < 2; ++k) {
      got[r].emplace_back(100 + k, -1.0f);
      SHARDC_RETURN_IF_ERROR(comm.transferPosted(nullptr, 0, kNone, got[r].back().data(),
                                                 got[r].back().size(), prev, CommDType::F32));
    }
    return comm.finishPosted();
  });
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(results[r].isOk()) << results[r].message();
    for (unsigned k = 0; k < 2; ++k)
      EXPECT_TRUE(sameBits(got[r][k], rankData((r + n - 1) % n, 100 + k, k))) << r << " " << k;
    const CommCounters &c = comms[r]->counters();
    EXPECT_EQ(c.calls[kSendRecv], 4u);
    EXPECT_EQ(c.bytesSent[kSendRecv], (100 + 101) * sizeof(float)) << r;
  }
}

// The same ring with transfer(): the ranks wait on each other and time out, which is why the
// pipeline posts (this pins that the test above could fail).
TEST(PostedTransfer, RendezvousSendsAroundARingStall) {
  const int n = 3;
  auto comms = makeLocalWorld(n, 0.2);
  auto results = runRanks(comms, [&](int r, Communicator &comm) {
    std::vector<float> act = rankData(r, 4, 0);
    return comm.transfer(act.data(), act.size(), (r + 1) % n, nullptr, 0, kNone, CommDType::F32);
  });
  // A send alone returns once taken: nobody takes.
  for (int r = 0; r < n; ++r)
    EXPECT_EQ(results[r].message(), "rank " + std::to_string(r) +
                                        ": send_recv #1: timed out after 0.2 s waiting for rank " +
                                        std::to_string((r + 1) % n));
}

// Posted, rendezvous, posted from rank 0 to rank 1: taken in that order whichever way rank 1
// receives them, and rank 1's reply in the rendezvous transfer comes back.
TEST(PostedTransfer, PostedAndRendezvousMessagesOfAPairStayInOrder) {
  auto comms = makeLocalWorld(2, 5.0);
  std::vector<std::vector<float>> received;
  std::vector<float> reply(3, -1.0f);
  auto results = runRanks(comms, [&](int r, Communicator &comm) {
    if (r == 0) {
      std::vector<float> a = rankData(0, 4, 1), b = rankData(0, 5, 2), c = rankData(0, 6, 3);
      SHARDC_RETURN_IF_ERROR(
          comm.transferPosted(a.data(), a.size(), 1, nullptr, 0, kNone, CommDType::F32));
      SHARDC_RETURN_IF_ERROR(comm.transfer(b.data(), b.size(), 1, reply.data(), reply.size(), 1,
                                           CommDType::F32));
      SHARDC_RETURN_IF_ERROR(
          comm.transferPosted(c.data(), c.size(), 1, nullptr, 0, kNone, CommDType::F32));
      return comm.finishPosted();
    }
    received.assign({std::vector<float>(4), std::vector<float>(5), std::vector<float>(6)});
    SHARDC_RETURN_IF_ERROR(comm.transfer(nullptr, 0, kNone, received[0].data(), 4, 0,
                                         CommDType::F32));
    std::vector<float> mine = rankData(1, 3, 4);
    SHARDC_RETURN_IF_ERROR(comm.transferPosted(mine.data(), mine.size(), 0, received[1].data(),
                                               5, 0, CommDType::F32));
    SHARDC_RETURN_IF_ERROR(comm.transferPosted(nullptr, 0, kNone, received[2].data(), 6, 0,
                                               CommDType::F32));
    return comm.finishPosted();
  });
  ASSERT_TRUE(results[0].isOk()) << results[0].message();
  ASSERT_TRUE(results[1].isOk()) << results[1].message();
  for (unsigned k = 0; k < 3; ++k)
    EXPECT_TRUE(sameBits(received[k], rankData(0, 4 + k, k + 1))) << k;
  EXPECT_TRUE(sameBits(reply, rankData(1, 3, 4)));
}

// The receiver expects another count: it fails naming the disagreement, takes nothing, and the
// sender (long past its send) fails at its next call with the receiver's cause.
TEST(PostedTransfer, ACountTheReceiverDisagreesOnFailsBoth) {
  auto comms = makeLocalWorld(2, 5.0);
  std::vector<float> out(5, -1.0f);
  auto results = runRanks(comms, [&](int r, Communicator &comm) {
    std::vector<float> in(4, 1.0f);
    if (r == 0) {
      SHARDC_RETURN_IF_ERROR(
          comm.transferPosted(in.data(), in.size(), 1, nullptr, 0, kNone, CommDType::F32));
      return comm.finishPosted();
    }
    return comm.transferPosted(nullptr, 0, kNone, out.data(), out.size(), 0, CommDType::F32);
  });
  const std::string expected = "rank 0 sent 16 bytes for transfer #1 where rank 1 expected 20 "
                               "bytes for transfer #1 (the ranks disagree on the transfers)";
  EXPECT_EQ(results[1].message(), "rank 1: send_recv #1: " + expected);
  // Rank 0's message was taken (and refused): its end of the posted sends sees the failure, or
  // nothing is left to wait for. Either way its next call fails.
  Status next = comms[0]->transferPosted(nullptr, 0, kNone, out.data(), 1, 1, CommDType::F32);
  EXPECT_EQ(next.message(), "rank 0: send_recv #2: rank 1 failed: " + expected);
  EXPECT_EQ(out, std::vector<float>(5, -1.0f));
}

// Nobody takes rank 0's message: its send returns at once, and the end of its posted sends
// times out naming the receiver.
TEST(PostedTransfer, AReceiverThatNeverTakesItIsATimeoutNamingIt) {
  auto comms = makeLocalWorld(3, 0.2);
  std::vector<float> data(3, 1.0f);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(
      comms[0]->transferPosted(data.data(), data.size(), 2, nullptr, 0, kNone, CommDType::F32)
          .isOk());
  EXPECT_LT(secondsSince(start), 0.1);
  EXPECT_EQ(comms[0]->finishPosted().message(),
            "rank 0: posted transfers: timed out after 0.2 s waiting for rank 2");
  // A receive with no message is the usual timeout.
  EXPECT_EQ(
      comms[1]->transferPosted(nullptr, 0, kNone, data.data(), 3, 0, CommDType::F32).message(),
      "rank 1: send_recv #1: timed out after 0.2 s waiting for rank 0");
}

TEST(PostedTransfer, APeerThatAbortsEndsTheWaitAtOnce) {
  auto comms = makeLocalWorld(2, 30.0);
  const auto start = std::chrono::steady_clock::now();
  auto results = runRanks(comms, [&](int r, Communicator &comm) {
    std::vector<float> data(3, 2.0f);
    if (r == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      comm.abort("out of memory in stage 1");
      return Status::ok();
    }
    SHARDC_RETURN_IF_ERROR(
        comm.transferPosted(data.data(), data.size(), 1, nullptr, 0, kNone, CommDType::F32));
    return comm.finishPosted();
  });
  EXPECT_EQ(results[0].message(),
            "rank 0: posted transfers: rank 1 failed: out of memory in stage 1");
  EXPECT_LT(secondsSince(start), 5.0);
}

// The argument checks are transfer()'s.
TEST(PostedTransfer, ArgumentsThatCannotBeRightAreRefused) {
  auto comms = makeLocalWorld(2, 0.1);
  std::vector<float> data(2);
  EXPECT_EQ(
      comms[0]->transferPosted(data.data(), 2, 0, nullptr, 0, kNone, CommDType::F32).message(),
      "rank 0: send_recv #1: a rank cannot send to itself");
  EXPECT_EQ(
      comms[0]->transferPosted(nullptr, 0, kNone, nullptr, 0, kNone, CommDType::F32).message(),
      "rank 0: send_recv #2: no rank to send to or receive from");
}

} // namespace
} // namespace shardc::runtime::testing
