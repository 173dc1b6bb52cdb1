// reduce_sum, reduce_mean and reduce_max against a naive fold over every input element.
#include "tests/unit/kernels/test_support.h"

#include <limits>
#include <map>

namespace shardc::runtime::testing {
namespace {

enum class Op { Sum, Mean, Max };

// Groups the input elements by output position (the index with reduced axes dropped) and folds
// each group.
template <typename T>
std::vector<T> referenceReduce(const std::vector<T> &x, const std::vector<int64_t> &shape,
                               const std::vector<int64_t> &axes, Op op) {
  std::map<std::vector<int64_t>, std::vector<T>> groups;
  for (int64_t i = 0; i < numelOf(shape); ++i) {
    std::vector<int64_t> key;
    const auto index = unravel(i, shape);
    for (size_t d = 0; d < shape.size(); ++d)
      if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) == axes.end())
        key.push_back(index[d]);
    groups[key].push_back(x[i]);
  }
  std::vector<T> out; // std::map iterates keys in row-major order of the output
  for (const auto &[key, values] : groups) {
    if (op == Op::Max) {
      T m = values[0];
      for (T v : values)
        m = std::max(m, v);
      out.push_back(m);
    } else {
      double sum = 0;
      for (T v : values)
        sum += double(v);
      if (op == Op::Sum)
        out.push_back(static_cast<T>(sum));
      else if constexpr (std::is_integral_v<T>)
        out.push_back(
            static_cast<T>(static_cast<int64_t>(sum) / static_cast<int64_t>(values.size())));
      else
        out.push_back(static_cast<T>(sum / values.size()));
    }
  }
  return out;
}

template <typename T> void checkReductions() {
  struct Case {
    std::vector<int64_t> shape, axes;
  };
  const std::vector<Case> cases = {
      {{7}, {0}},       {{3, 4}, {0}},          {{3, 4}, {1}},          {{3, 4}, {0, 1}},
      {{2, 3, 4}, {1}}, {{2, 3, 4}, {0, 2}},    {{2, 3, 4, 5}, {1, 3}}, {{2, 3, 4, 5}, {0, 1, 2}},
      {{2, 1, 4}, {1}}, {{2, 3, 4}, {0, 1, 2}}, {{1, 300}, {1}},
  };
  unsigned seed = 70;
  for (const Case &c : cases) {
    const auto vx = randomValues<T>(numelOf(c.shape), -50, 50, seed++);
    HostTensor x = HostTensor::of<T>(c.shape, vx);
    for (int64_t keepdims : {0, 1}) {
      std::vector<int64_t> yShape;
      for (size_t d = 0; d < c.shape.size(); ++d) {
        const bool reduced =
            std::find(c.axes.begin(), c.axes.end(), static_cast<int64_t>(d)) != c.axes.end();
        if (!reduced)
          yShape.push_back(c.shape[d]);
        else if (keepdims)
          yShape.push_back(1);
      }
      for (auto [kernel, op] : {std::pair<const char *, Op>{"reduce_sum", Op::Sum},
                                {"reduce_mean", Op::Mean},
                                {"reduce_max", Op::Max}}) {
        SCOPED_TRACE(std::string(kernel) + " case " + std::to_string(seed) + " keepdims " +
                     std::to_string(keepdims));
        HostTensor y(dtypeOf<T>(), yShape);
        ASSERT_KERNEL_OK(
            runKernel(kernel, {x}, {y}, Attrs().ints("axes", c.axes).i("keepdims", keepdims)));
        expectValuesNear(y.values<T>(), referenceReduce(vx, c.shape, c.axes, op), 1e-6);
      }
    }
  }
}

TEST(Reduce, F32) { checkReductions<float>(); }
TEST(Reduce, I64) { checkReductions<int64_t>(); }
TEST(Reduce, I32) { checkReductions<int32_t>(); }

TEST(Reduce, IntegerMeanTruncatesTowardZero) {
  HostTensor x = HostTensor::of<int32_t>({2, 3}, {1, 2, 2, -1, -2, -2});
  HostTensor y(program::I32, {2});
  ASSERT_KERNEL_OK(runKernel("reduce_mean", {x}, {y}, Attrs().ints("axes", {1}).i("keepdims", 0)));
  EXPECT_EQ(y.values<int32_t>(), (std::vector<int32_t>{1, -1})); // 5/3 -> 1, -5/3 -> -1
}

TEST(Reduce, MaxPropagatesNaNAndEmptyReductions) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  HostTensor x = HostTensor::of<float>({2, 2}, {1.0f, nan, 3.0f, 2.0f});
  HostTensor y(program::F32, {2});
  ASSERT_KERNEL_OK(runKernel("reduce_max", {x}, {y}, Attrs().ints("axes", {1}).i("keepdims", 0)));
  expectValuesNear(y.values<float>(), {nan, 3.0f});
  // Reducing an empty axis: sum 0, max -inf, float mean NaN, integer mean an error.
  HostTensor empty(program::F32, {2, 0});
  const Attrs attrs = Attrs().ints("axes", {1}).i("keepdims", 1);
  HostTensor out(program::F32, {2, 1});
  ASSERT_KERNEL_OK(runKernel("reduce_sum", {empty}, {out}, attrs));
  expectValuesNear(out.values<float>(), {0.0f, 0.0f});
  ASSERT_KERNEL_OK(runKernel("reduce_max", {empty}, {out}, attrs));
  expectValuesNear(out.values<float>(), {-inf, -inf});
  ASSERT_KERNEL_OK(runKernel("reduce_mean", {empty}, {out}, attrs));
  expectValuesNear(out.values<float>(), {nan, nan});
  HostTensor emptyInt(program::I64, {2, 0}), outInt(program::I64, {2, 1});
  EXPECT_KERNEL_ERROR(runKernel("reduce_mean", {emptyInt}, {outInt}, attrs),
                      "integer mean over zero elements");
  ASSERT_KERNEL_OK(runKernel("reduce_max", {emptyInt}, {outInt}, attrs));
  EXPECT_EQ(outInt.values<int64_t>(),
            (std::vector<int64_t>(2, std::numeric_limits<int64_t>::lowest())));
}

// arg_max against a scan of each line in index order: the first (or last) position of the
// largest value. Values in a small range, so that ties are common.
template <typename T> void checkArgMax() {
  const std::vector<std::vector<int64_t>> shapes = {{5}, {3, 4}, {2, 3, 4}, {2, 1, 3}};
  unsigned seed = 7;
  for (const auto &shape : shapes)
    for (int64_t axis = 0; axis < static_cast<int64_t>(shape.size()); ++axis)
      for (int keepdims : {0, 1})
        for (int last : {0, 1}) {
          SCOPED_TRACE("rank " + std::to_string(shape.size()) + " axis " +
                       std::to_string(axis) + " keepdims " + std::to_string(keepdims) +
                       " last " + std::to_string(last));
          const std::vector<T> in = randomValues<T>(numelOf(shape), -3, 3, seed++);
          std::vector<int64_t> outShape;
          for (size_t d = 0; d < shape.size(); ++d)
            if (static_cast<int64_t>(d) != axis)
              outShape.push_back(shape[d]);
            else if (keepdims)
              outShape.push_back(1);
          std::vector<int64_t> expected(static_cast<size_t>(numelOf(outShape)), -1);
          std::vector<T> best(expected.size());
          for (int64_t i = 0; i < numelOf(shape); ++i) {
            std::vector<int64_t> index = unravel(i, shape);
            const int64_t k = index[axis];
            index[axis] = 0;
            std::vector<int64_t> outIndex;
            for (size_t d = 0; d < shape.size(); ++d)
              if (static_cast<int64_t>(d) != axis || keepdims)
                outIndex.push_back(index[d]);
            int64_t o = 0;
            for (size_t d = 0; d < outIndex.size(); ++d)
              o = o * outShape[d] + outIndex[d];
            if (expected[o] < 0 || in[i] > best[o] || (last && in[i] == best[o])) {
              expected[o] = k;
              best[o] = in[i];
            }
          }
          HostTensor x = HostTensor::of<T>(shape, in);
          HostTensor y(program::I64, outShape);
          ASSERT_KERNEL_OK(runKernel(
              "arg_max", {x}, {y},
              Attrs().i("axis", axis).i("keepdims", keepdims).i("select_last_index", last)));
          EXPECT_EQ(y.values<int64_t>(), expected);
        }
}

TEST(Reduce, ArgMaxF32) { checkArgMax<float>(); }
TEST(Reduce, ArgMaxI64) { checkArgMax<int64_t>(); }
TEST(Reduce, ArgMaxI32) { checkArgMax<int32_t>(); }

TEST(Reduce, ArgMaxNaNIsLargestAndErrors) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  HostTensor x = HostTensor::of<float>({2, 4}, {1.0f, nan, 3.0f, nan, 2.0f, 2.0f, 1.0f, 0.0f});
  HostTensor y(program::I64, {2});
  Attrs attrs = Attrs().i("axis", 1).i("keepdims", 0).i("select_last_index", 0);
  ASSERT_KERNEL_OK(runKernel("arg_max", {x}, {y}, attrs));
  EXPECT_EQ(y.values<int64_t>(), (std::vector<int64_t>{1, 0}));
  ASSERT_KERNEL_OK(runKernel("arg_max", {x}, {y}, attrs.i("select_last_index", 1)));
  EXPECT_EQ(y.values<int64_t>(), (std::vector<int64_t>{3, 1}));
  HostTensor wrongType(program::F32, {2});
  EXPECT_KERNEL_ERROR(runKernel("arg_max", {x}, {wrongType}, attrs), "i64");
  HostTensor wrongShape(program::I64, {4});
  EXPECT_KERNEL_ERROR(runKernel("arg_max", {x}, {wrongShape}, attrs), "expected [2]");
  HostTensor empty(program::F32, {2, 0});
  EXPECT_KERNEL_ERROR(runKernel("arg_max", {empty}, {y}, attrs), "the axis is empty");
}

TEST(Reduce, InconsistentOperandsAreErrors) {
  HostTensor x(program::F32, {2, 3}), y2(program::F32, {2}), y21(program::F32, {2, 1});
  EXPECT_KERNEL_ERROR(
      runKernel("reduce_sum", {x}, {y2}, Attrs().ints("axes", {1}).i("keepdims", 1)),
      "expected [2x1]");
  EXPECT_KERNEL_ERROR(
      runKernel("reduce_sum", {x}, {y21}, Attrs().ints("axes", {1}).i("keepdims", 0)),
      "expected [2]");
  EXPECT_KERNEL_ERROR(
      runKernel("reduce_max", {x}, {y2}, Attrs().ints("axes", {2}).i("keepdims", 0)),
      "out of range for rank 2");
  EXPECT_KERNEL_ERROR(
      runKernel("reduce_mean", {x}, {y2}, Attrs().ints("axes", {}).i("keepdims", 0)),
      "'axes' is empty");
  EXPECT_KERNEL_ERROR(
      runKernel("reduce_mean", {x}, {y2}, Attrs().ints("axes", {1, 0}).i("keepdims", 0)), "sorted");
  EXPECT_KERNEL_ERROR(runKernel("reduce_sum", {x}, {y2}, Attrs().i("keepdims", 0)),
                      "missing attribute 'axes'");
  EXPECT_KERNEL_ERROR(runKernel("reduce_sum", {x}, {y2}, Attrs().i("axes", 1).i("keepdims", 0)),
                      "attribute 'axes' is not a list of ints");
  EXPECT_KERNEL_ERROR(runKernel("reduce_sum", {x}, {HostTensor(program::I32, {2})},
                                Attrs().ints("axes", {1}).i("keepdims", 0)),
                      "expected the same dtype");
  EXPECT_KERNEL_ERROR(runKernel("reduce_sum", {HostTensor(program::BOOL, {2, 3})},
                                {HostTensor(program::BOOL, {2})},
                                Attrs().ints("axes", {1}).i("keepdims", 0)),
                      "expected f32, i64 or i32");
}

} // namespace
} // namespace shardc::runtime::testing
