// where, clip and cast.
#include "tests/unit/kernels/test_support.h"

#include <limits>

namespace shardc::runtime::testing {
namespace {

template <typename T> void checkWhere() {
  struct Case {
    std::vector<int64_t> cond, x, y, z;
  };
  const std::vector<Case> cases = {
      {{2, 3}, {2, 3}, {2, 3}, {2, 3}},
      {{2, 3}, {}, {3}, {2, 3}},
      {{4, 1}, {1, 5}, {}, {4, 5}},
      {{3}, {2, 1}, {2, 3}, {2, 3}},
      {{2, 1, 2}, {3, 1}, {1, 1, 2}, {2, 3, 2}},
      {{}, {}, {}, {}},
  };
  unsigned seed = 3;
  for (const Case &c : cases) {
    std::vector<uint8_t> vc = randomInts<uint8_t>(numelOf(c.cond), 0, 1, seed++);
    std::vector<T> vx = randomValues<T>(numelOf(c.x), -9, 9, seed++);
    std::vector<T> vy = randomValues<T>(numelOf(c.y), -9, 9, seed++);
    HostTensor cond = HostTensor::of<uint8_t>(c.cond, vc);
    HostTensor x = HostTensor::of<T>(c.x, vx);
    HostTensor y = HostTensor::of<T>(c.y, vy);
    HostTensor z(dtypeOf<T>(), c.z);
    ASSERT_KERNEL_OK(runKernel("where", {cond, x, y}, {z}));
    std::vector<T> expected;
    for (int64_t i = 0; i < numelOf(c.z); ++i) {
      const auto index = unravel(i, c.z);
      expected.push_back(vc[broadcastSource(index, c.cond)] ? vx[broadcastSource(index, c.x)]
                                                            : vy[broadcastSource(index, c.y)]);
    }
    expectValuesNear(z.values<T>(), expected);
  }
}

TEST(Where, AllDtypesWithBroadcasting) {
  checkWhere<float>();
  checkWhere<int64_t>();
  checkWhere<int32_t>();
  checkWhere<uint8_t>();
}

template <typename T> void checkClip() {
  const std::vector<T> vx = randomValues<T>(24, -20, 20, 9);
  HostTensor x = HostTensor::of<T>({2, 3, 4}, vx);
  HostTensor lo = HostTensor::scalar<T>(T(-5));
  HostTensor hi = HostTensor::of<T>({1}, {T(7)}); // a one-element [1] bound is accepted too
  struct Case {
    bool hasLo, hasHi;
  };
  for (Case c : {Case{true, true}, Case{true, false}, Case{false, true}, Case{false, false}}) {
    HostTensor y(dtypeOf<T>(), {2, 3, 4});
    ASSERT_KERNEL_OK(runKernel(
        "clip", {x, c.hasLo ? lo.view() : absent(), c.hasHi ? hi.view() : absent()}, {y}));
    std::vector<T> expected;
    for (T v : vx) {
      if (c.hasLo && v < T(-5))
        v = T(-5);
      if (c.hasHi && v > T(7))
        v = T(7);
      expected.push_back(v);
    }
    expectValuesNear(y.values<T>(), expected);
  }
  // Only x: a plain copy.
  HostTensor y(dtypeOf<T>(), {2, 3, 4});
  ASSERT_KERNEL_OK(runKernel("clip", {x}, {y}));
  expectValuesNear(y.values<T>(), vx);
}

TEST(Clip, NumericDtypesAndAbsentBounds) {
  checkClip<float>();
  checkClip<int64_t>();
  checkClip<int32_t>();
}

TEST(Clip, MinAboveMaxGivesMaxAndNaNStays) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  HostTensor x = HostTensor::of<float>({3}, {-1.0f, 10.0f, nan});
  HostTensor lo = HostTensor::scalar<float>(5.0f), hi = HostTensor::scalar<float>(2.0f);
  HostTensor y(program::F32, {3});
  ASSERT_KERNEL_OK(runKernel("clip", {x, lo, hi}, {y}));
  expectValuesNear(y.values<float>(), {2.0f, 2.0f, nan});
}

// Casts `in` from From to every type and compares with the expected values.
template <typename From, typename To>
void checkCast(const std::vector<From> &in, const std::vector<To> &expected) {
  HostTensor x = HostTensor::of<From>({static_cast<int64_t>(in.size())}, in);
  HostTensor y(dtypeOf<To>(), {static_cast<int64_t>(in.size())});
  ASSERT_KERNEL_OK(runKernel("cast", {x}, {y}, Attrs().i("to", dtypeOf<To>())));
  expectValuesNear(y.values<To>(), expected);
}

TEST(Cast, EveryDtypePair) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // f32 -> *: truncation toward zero; -> bool is != 0 (NaN is true).
  checkCast<float, float>({1.5f, -2.5f, nan}, {1.5f, -2.5f, nan});
  checkCast<float, int64_t>({1.9f, -1.9f, 0.0f, -0.5f, 1e10f}, {1, -1, 0, 0, 10000000000});
  checkCast<float, int32_t>({1.9f, -1.9f, 0.0f, 123456.7f}, {1, -1, 0, 123456});
  checkCast<float, uint8_t>({0.0f, -0.0f, 0.1f, -3.0f, nan}, {0, 0, 1, 1, 1});
  // Out-of-range and NaN float -> int are pinned to the most negative value (x86 behaviour).
  checkCast<float, int32_t>({nan, 3e9f, -3e9f}, {std::numeric_limits<int32_t>::min(),
                                                 std::numeric_limits<int32_t>::min(),
                                                 std::numeric_limits<int32_t>::min()});
  // Integers.
  checkCast<int64_t, float>({3, -4, 16777217}, {3.0f, -4.0f, 16777216.0f});
  checkCast<int64_t, int64_t>({5, -6}, {5, -6});
  checkCast<int64_t, int32_t>({7, -8, 4294967297ll}, {7, -8, 1}); // narrowing wraps
  checkCast<int64_t, uint8_t>({0, 2, -1}, {0, 1, 1});
  checkCast<int32_t, float>({3, -4}, {3.0f, -4.0f});
  checkCast<int32_t, int64_t>({-2147483647 - 1, 9}, {-2147483648ll, 9});
  checkCast<int32_t, int32_t>({1, 2}, {1, 2});
  checkCast<int32_t, uint8_t>({0, 5}, {0, 1});
  // bool -> num is 0/1.
  checkCast<uint8_t, float>({0, 1}, {0.0f, 1.0f});
  checkCast<uint8_t, int64_t>({0, 1}, {0, 1});
  checkCast<uint8_t, int32_t>({1, 0}, {1, 0});
  checkCast<uint8_t, uint8_t>({1, 0}, {1, 0});
}

TEST(SelectClipCast, InconsistentOperandsAreErrors) {
  HostTensor b3(program::BOOL, {3}), f3(program::F32, {3}), i3(program::I32, {3});
  HostTensor f4(program::F32, {4}), f2(program::F32, {2});
  EXPECT_KERNEL_ERROR(runKernel("where", {f3, f3, f3}, {f3}), "cond is f32, expected bool");
  EXPECT_KERNEL_ERROR(runKernel("where", {b3, f3, i3}, {f3}), "expected the same dtype");
  EXPECT_KERNEL_ERROR(runKernel("where", {b3, f3, f3}, {i3}), "expected the same dtype");
  EXPECT_KERNEL_ERROR(runKernel("where", {b3, f4, f3}, {f3}), "do not broadcast");
  EXPECT_KERNEL_ERROR(runKernel("where", {b3, f3, f3}, {f4}), "expected the broadcast shape");
  EXPECT_KERNEL_ERROR(runKernel("clip", {f3, f2, absent()}, {f3}), "min must be a scalar");
  EXPECT_KERNEL_ERROR(runKernel("clip", {f3, absent(), i3}, {f3}), "expected the same dtype");
  EXPECT_KERNEL_ERROR(runKernel("clip", {b3}, {b3}), "expected f32, i64 or i32");
  EXPECT_KERNEL_ERROR(runKernel("clip", {f3}, {f4}), "expected [3]");
  EXPECT_KERNEL_ERROR(runKernel("clip", {f3, absent(), absent(), absent()}, {f3}),
                      "expected 1 to 3 inputs, got 4");
  EXPECT_KERNEL_ERROR(runKernel("cast", {f3}, {i3}), "missing attribute 'to'");
  EXPECT_KERNEL_ERROR(runKernel("cast", {f3}, {i3}, Attrs().i("to", program::I64)),
                      "does not match the output dtype i32");
  EXPECT_KERNEL_ERROR(runKernel("cast", {f3}, {i3}, Attrs().f("to", 3.0f)),
                      "attribute 'to' is not an int");
  EXPECT_KERNEL_ERROR(
      runKernel("cast", {f3}, {HostTensor(program::I32, {4})}, Attrs().i("to", program::I32)),
      "expected [3]");
}

} // namespace
} // namespace shardc::runtime::testing
