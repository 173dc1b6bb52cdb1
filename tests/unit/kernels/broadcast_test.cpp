// The broadcasting helper shared by the elementwise kernels.
#include "runtime/kernels/cpu/broadcast.h"
#include "tests/unit/kernels/test_support.h"

namespace shardc::runtime::testing {
namespace {

using cpu::StridedLoop;

TEST(Broadcast, Shapes) {
  std::vector<int64_t> out;
  EXPECT_KERNEL_OK(cpu::broadcastShapes({2, 1, 3}, {4, 1}, &out));
  EXPECT_EQ(out, (std::vector<int64_t>{2, 4, 3}));
  EXPECT_KERNEL_OK(cpu::broadcastShapes({}, {5}, &out));
  EXPECT_EQ(out, (std::vector<int64_t>{5}));
  EXPECT_KERNEL_OK(cpu::broadcastShapes({0, 1}, {1, 4}, &out));
  EXPECT_EQ(out, (std::vector<int64_t>{0, 4}));
  EXPECT_KERNEL_ERROR(cpu::broadcastShapes({2, 3}, {4, 3}, &out), "do not broadcast");
}

TEST(Broadcast, PlanCoalescesContiguousDims) {
  StridedLoop loop;
  const std::vector<int64_t> a = {2, 3, 4}, b = {4}, y = {2, 3, 4};
  ASSERT_KERNEL_OK(cpu::planBroadcast({&a, &b}, y, &loop));
  // a is contiguous over everything; b repeats along the first two dims, which merge.
  EXPECT_EQ(loop.dims, (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(loop.strides[0], (std::vector<int64_t>{4, 1}));
  EXPECT_EQ(loop.strides[1], (std::vector<int64_t>{0, 1}));

  const std::vector<int64_t> same = {2, 3, 4};
  ASSERT_KERNEL_OK(cpu::planBroadcast({&same, &same}, y, &loop));
  EXPECT_EQ(loop.dims, (std::vector<int64_t>{24}));

  const std::vector<int64_t> scalar = {};
  ASSERT_KERNEL_OK(cpu::planBroadcast({&scalar}, scalar, &loop));
  EXPECT_EQ(loop.dims, (std::vector<int64_t>{1}));
  EXPECT_EQ(loop.numel(), 1);

  const std::vector<int64_t> tooBig = {3, 4};
  EXPECT_KERNEL_ERROR(cpu::planBroadcast({&tooBig}, b, &loop), "cannot be broadcast to [4]");
}

TEST(Broadcast, RowsVisitEveryOutputElementOnceInOrder) {
  const std::vector<std::vector<int64_t>> inShapes = {{3, 1, 5}, {1, 4, 1}, {5}};
  const std::vector<int64_t> out = {3, 4, 5};
  StridedLoop loop;
  ASSERT_KERNEL_OK(cpu::planBroadcast({&inShapes[0], &inShapes[1], &inShapes[2]}, out, &loop));
  int64_t next = 0;
  cpu::forEachRow(loop, [&](int64_t outOffset, const int64_t *inOffsets, const int64_t *inStrides,
                            int64_t count) {
    EXPECT_EQ(outOffset, next);
    for (int64_t i = 0; i < count; ++i) {
      const auto index = unravel(outOffset + i, out);
      for (int k = 0; k < 3; ++k)
        EXPECT_EQ(inOffsets[k] + i * inStrides[k], broadcastSource(index, inShapes[k]));
    }
    next += count;
  });
  EXPECT_EQ(next, 60);
}

} // namespace
} // namespace shardc::runtime::testing
