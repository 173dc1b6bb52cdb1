// The emitter's WEIGHTS region (compiler/include/shardc/Lowering/WeightsRegion.h): aligned
// offsets, reserved ranges that hold no bytes, and the content identity RankPrograms merges by;
// the weights file is laid out only when nothing is absent.
#include "shardc/Lowering/ProgramEmitter.h"
#include "shardc/Lowering/WeightsRegion.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace shardc {
namespace {

std::vector<char> bytesOf(const std::string &text) { return {text.begin(), text.end()}; }

TEST(WeightsRegion, AppendsAtAlignedOffsets) {
  WeightsRegion region;
  EXPECT_EQ(region.append(bytesOf("abc")), 0u);
  EXPECT_EQ(region.append(bytesOf("defg")), 64u);
  EXPECT_EQ(region.size(), 68u);
  ASSERT_TRUE(region.complete());
  ASSERT_EQ(region.bytes().size(), 68u);
  EXPECT_EQ(std::string(region.bytes().data(), 3), "abc");
  EXPECT_EQ(region.bytes()[3], 0); // padding
  EXPECT_EQ(std::string(region.data(64), 4), "defg");
}

// A reserved range counts in the size but stores nothing: 40 GB of absent weight costs no
// memory, and what comes after it is still found at its offset.
TEST(WeightsRegion, ReservedRangesHoldNoBytes) {
  WeightsRegion region;
  region.append(bytesOf("head"));
  const uint64_t absent = region.reserve(40000000000ULL, "w");
  const uint64_t after = region.append(bytesOf("tail"));
  EXPECT_EQ(absent, 64u);
  EXPECT_EQ(after, 64u + 40000000000ULL);
  EXPECT_EQ(region.size(), after + 4);
  EXPECT_FALSE(region.complete());
  EXPECT_LT(region.bytes().size(), 1024u);
  EXPECT_EQ(region.data(absent), nullptr);
  ASSERT_NE(region.absentName(absent), nullptr);
  EXPECT_EQ(*region.absentName(absent), "w");
  EXPECT_EQ(std::string(region.data(after), 4), "tail");
  EXPECT_EQ(std::string(region.data(0), 4), "head");
}

TEST(WeightsRegion, ContentIdentity) {
  WeightsRegion a, b;
  const uint64_t x = a.append(bytesOf("same"));
  const uint64_t wa = a.reserve(8, "w");
  b.reserve(8, "other");
  const uint64_t wb = b.reserve(8, "w");
  const uint64_t y = b.append(bytesOf("same"));
  const uint64_t z = b.append(bytesOf("diff"));
  EXPECT_TRUE(a.sameContent(x, b, y, 4));
  EXPECT_EQ(a.contentHash(x, 4), b.contentHash(y, 4));
  EXPECT_FALSE(a.sameContent(x, b, z, 4));
  EXPECT_TRUE(a.sameContent(wa, b, wb, 8));
  EXPECT_EQ(a.contentHash(wa, 8), b.contentHash(wb, 8));
  EXPECT_FALSE(a.sameContent(wa, b, 0, 8));   // reserved for another name
  EXPECT_FALSE(a.sameContent(x, b, wb, 4));    // stored against reserved
}

TEST(WeightsRegion, WeightsFileOnlyWhenComplete) {
  WeightsRegion region, initialValues;
  region.append(bytesOf("const"));
  const uint64_t init = initialValues.append(bytesOf("init"));
  program::Program p;
  program::StateInit *stateInit = p.add_state_init();
  stateInit->set_offset(init);
  std::optional<std::vector<char>> file = layOutWeightsFile(region, initialValues, {&p});
  ASSERT_TRUE(file.has_value());
  EXPECT_EQ(p.weights_bytes(), 5u);
  EXPECT_EQ(p.state_init(0).offset(), 64u);
  EXPECT_EQ(std::string(file->data() + 64, 4), "init");

  initialValues.reserve(1 << 20, "absent");
  program::Program q;
  EXPECT_FALSE(layOutWeightsFile(region, initialValues, {&q}).has_value());
  EXPECT_EQ(q.weights_bytes(), 5u);
}

} // namespace
} // namespace shardc
