// The bytes the plan predicts for one call of a communicating kernel (RankPrograms.h), which
// the runtime's counters must equal: a send_recv sends its inputs' bytes whole, whatever the
// communicator's size and the dtypes it packs, and nothing when it only receives.
#include "shardc/Lowering/RankPrograms.h"

#include <gtest/gtest.h>

namespace shardc {
namespace {

TEST(PlannedCommBytes, SendRecvSendsItsInputsWhole) {
  // Six f32 elements: 24 bytes on a pipeline axis of 2 or 8 ranks.
  EXPECT_EQ(collectiveCallBytesSent("send_recv", 2, {{6, 4}}, {}), 24u);
  EXPECT_EQ(collectiveCallBytesSent("send_recv", 8, {{6, 4}}, {{6, 4}}), 24u);
  // Activations of several dtypes packed as bytes: 6 f32 + 3 i64 + 2 bool.
  EXPECT_EQ(collectiveCallBytesSent("send_recv", 4, {{6, 4}, {3, 8}, {2, 1}}, {}), 50u);
  // An f32 gradient sent while bf16 activations arrive: the sent side counts.
  EXPECT_EQ(collectiveCallBytesSent("send_recv", 2, {{10, 4}}, {{10, 2}}), 40u);
  // Receiving only sends nothing.
  EXPECT_EQ(collectiveCallBytesSent("send_recv", 2, {}, {{10, 4}}), 0u);
}

TEST(PlannedCommBytes, CollectivesFollowTheRing) {
  // All-reduce of 8 f32 over 4 ranks: 2 (N-1) chunks of 2 elements.
  EXPECT_EQ(collectiveCallBytesSent("all_reduce", 4, {{8, 4}}, {{8, 4}}), 2u * 3 * 2 * 4);
  // An all-gather of 2-element shards over 4 ranks: N-1 shards.
  EXPECT_EQ(collectiveCallBytesSent("all_gather", 4, {{2, 4}}, {{8, 4}}), 3u * 2 * 4);
  EXPECT_EQ(collectiveCallBytesSent("copy", 4, {{8, 4}}, {{8, 4}}), 0u);
}

} // namespace
} // namespace shardc
