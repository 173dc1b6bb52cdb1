// pad, copy, transpose, slice, expand, trilu, concat, split and gather for every dtype, against
// naive index arithmetic.
#include "tests/unit/kernels/test_support.h"

#include <limits>

namespace shardc::runtime::testing {
namespace {

// Values that tell elements apart for every dtype (bool alternates 0/1 pseudo-randomly).
template <typename T> std::vector<T> distinctValues(int64_t n, unsigned seed) {
  if constexpr (std::is_same_v<T, uint8_t>)
    return randomInts<uint8_t>(n, 0, 1, seed);
  else
    return randomValues<T>(n, -1000, 1000, seed);
}

template <typename T> void checkCopy() {
  const auto vx = distinctValues<T>(24, 1);
  HostTensor x = HostTensor::of<T>({2, 3, 4}, vx);
  for (const std::vector<int64_t> &shape :
       {std::vector<int64_t>{24}, std::vector<int64_t>{4, 6}, std::vector<int64_t>{2, 3, 4}}) {
    HostTensor y(dtypeOf<T>(), shape);
    ASSERT_KERNEL_OK(runKernel("copy", {x}, {y}));
    EXPECT_EQ(y.values<T>(), vx);
  }
}

template <typename T> void checkTranspose() {
  struct Case {
    std::vector<int64_t> shape, perm;
  };
  const std::vector<Case> cases = {
      {{3, 4}, {1, 0}},
      {{2, 3, 4}, {0, 2, 1}},
      {{2, 3, 4}, {2, 0, 1}},
      {{2, 3, 4}, {0, 1, 2}},
      {{2, 3, 4, 5}, {3, 1, 0, 2}},
      {{5}, {0}},
      {{1, 4, 1}, {2, 0, 1}},
      {{}, {}},
      {{0, 3}, {1, 0}},
      // Larger than the tiled path's 32 x 32 blocks, with partial blocks and outer dims: the
      // transposes that move the innermost dimension go through it.
      {{70, 45}, {1, 0}},
      {{64, 64}, {1, 0}},
      {{2, 33, 65}, {0, 2, 1}},
      {{40, 3, 50}, {2, 1, 0}},
      {{3, 37, 5, 41}, {0, 3, 2, 1}},
      {{2, 3, 70, 35}, {1, 3, 0, 2}},
  };
  unsigned seed = 2;
  for (const Case &c : cases) {
    const auto vx = distinctValues<T>(numelOf(c.shape), seed++);
    HostTensor x = HostTensor::of<T>(c.shape, vx);
    std::vector<int64_t> yShape;
    for (int64_t p : c.perm)
      yShape.push_back(c.shape[p]);
    HostTensor y(dtypeOf<T>(), yShape);
    ASSERT_KERNEL_OK(runKernel("transpose", {x}, {y}, Attrs().ints("perm", c.perm)));
    std::vector<T> expected;
    for (int64_t i = 0; i < numelOf(yShape); ++i) {
      const auto yIndex = unravel(i, yShape);
      std::vector<int64_t> xIndex(c.shape.size());
      for (size_t d = 0; d < c.perm.size(); ++d)
        xIndex[c.perm[d]] = yIndex[d];
      expected.push_back(vx[ravel(xIndex, c.shape)]);
    }
    EXPECT_EQ(y.values<T>(), expected) << "seed " << seed;
  }
}

template <typename T> void checkSlice() {
  struct Case {
    std::vector<int64_t> x, starts, steps, y;
  };
  const std::vector<Case> cases = {
      {{10}, {2}, {1}, {5}},
      {{10}, {9}, {-1}, {10}}, // full reverse
      {{10}, {8}, {-3}, {3}},  // 8, 5, 2
      {{4, 6}, {1, 0}, {2, 2}, {2, 3}},
      {{4, 6}, {3, 5}, {-1, -2}, {4, 3}},
      {{2, 3, 4}, {0, 2, 1}, {1, -1, 2}, {2, 3, 2}},
      {{2, 3, 4}, {1, 0, 0}, {1, 1, 1}, {1, 3, 4}},
      {{5, 5}, {0, 0}, {1, 1}, {0, 5}}, // empty result
      {{5}, {4}, {7}, {1}},             // one element, step past the end
  };
  unsigned seed = 30;
  for (const Case &c : cases) {
    const auto vx = distinctValues<T>(numelOf(c.x), seed++);
    HostTensor x = HostTensor::of<T>(c.x, vx);
    HostTensor y(dtypeOf<T>(), c.y);
    ASSERT_KERNEL_OK(
        runKernel("slice", {x}, {y}, Attrs().ints("starts", c.starts).ints("steps", c.steps)));
    std::vector<T> expected;
    for (int64_t i = 0; i < numelOf(c.y); ++i) {
      auto index = unravel(i, c.y);
      for (size_t d = 0; d < index.size(); ++d)
        index[d] = c.starts[d] + index[d] * c.steps[d];
      expected.push_back(vx[ravel(index, c.x)]);
    }
    EXPECT_EQ(y.values<T>(), expected) << "seed " << seed;
  }
}

template <typename T> void checkExpand() {
  struct Case {
    std::vector<int64_t> x, y;
  };
  const std::vector<Case> cases = {
      {{3}, {2, 3}},    {{2, 1}, {2, 4}},    {{}, {3, 2}},  {{1, 3, 1}, {2, 3, 4}},
      {{2, 3}, {2, 3}}, {{4, 1}, {2, 4, 5}}, {{1}, {0, 1}},
  };
  unsigned seed = 90;
  for (const Case &c : cases) {
    const auto vx = distinctValues<T>(numelOf(c.x), seed++);
    HostTensor x = HostTensor::of<T>(c.x, vx);
    HostTensor y(dtypeOf<T>(), c.y);
    ASSERT_KERNEL_OK(runKernel("expand", {x}, {y}));
    std::vector<T> expected;
    for (int64_t i = 0; i < numelOf(c.y); ++i)
      expected.push_back(vx[broadcastSource(unravel(i, c.y), c.x)]);
    EXPECT_EQ(y.values<T>(), expected);
  }
}

template <typename T> void checkTrilu() {
  for (const std::vector<int64_t> &shape :
       {std::vector<int64_t>{4, 4}, std::vector<int64_t>{3, 5}, std::vector<int64_t>{2, 5, 3}}) {
    const auto vx = distinctValues<T>(numelOf(shape), 7);
    HostTensor x = HostTensor::of<T>(shape, vx);
    const int64_t rows = shape[shape.size() - 2], cols = shape.back();
    for (int64_t upper : {0, 1}) {
      for (int64_t k : {-7, -1, 0, 1, 2, 9}) {
        HostTensor y(dtypeOf<T>(), shape);
        ASSERT_KERNEL_OK(runKernel("trilu", {x}, {y}, Attrs().i("upper", upper).i("k", k)));
        std::vector<T> expected(vx.size());
        for (size_t e = 0; e < vx.size(); ++e) {
          const int64_t i = (static_cast<int64_t>(e) / cols) % rows;
          const int64_t j = static_cast<int64_t>(e) % cols;
          const bool keep = upper ? j >= i + k : j <= i + k;
          expected[e] = keep ? vx[e] : T(0);
        }
        EXPECT_EQ(y.values<T>(), expected) << "upper " << upper << " k " << k;
      }
    }
  }
}

template <typename T> void checkConcatAndSplit() {
  struct Case {
    std::vector<std::vector<int64_t>> parts;
    int64_t axis;
    std::vector<int64_t> whole;
  };
  const std::vector<Case> cases = {
      {{{2}, {3}}, 0, {5}},
      {{{2, 3}, {1, 3}, {4, 3}}, 0, {7, 3}},
      {{{2, 3}, {2, 1}}, 1, {2, 4}},
      {{{2, 3, 4}, {2, 2, 4}}, 1, {2, 5, 4}},
      {{{2, 3, 1}, {2, 3, 0}, {2, 3, 2}}, 2, {2, 3, 3}}, // an empty part
      {{{3, 4}}, 1, {3, 4}},
  };
  unsigned seed = 100;
  for (const Case &c : cases) {
    std::vector<std::vector<T>> partValues;
    std::vector<HostTensor> parts;
    std::vector<Tensor> views;
    for (const auto &shape : c.parts) {
      partValues.push_back(distinctValues<T>(numelOf(shape), seed++));
      parts.push_back(HostTensor::of<T>(shape, partValues.back()));
      views.push_back(parts.back().view());
    }
    // Reference: element at `index` of the whole comes from the part whose range along the
    // axis holds index[axis].
    std::vector<T> expected;
    for (int64_t i = 0; i < numelOf(c.whole); ++i) {
      auto index = unravel(i, c.whole);
      size_t p = 0;
      while (index[c.axis] >= c.parts[p][c.axis]) {
        index[c.axis] -= c.parts[p][c.axis];
        ++p;
      }
      expected.push_back(partValues[p][ravel(index, c.parts[p])]);
    }
    HostTensor whole(dtypeOf<T>(), c.whole);
    ASSERT_KERNEL_OK(runKernel("concat", views, {whole}, Attrs().i("axis", c.axis)));
    EXPECT_EQ(whole.values<T>(), expected);

    // split is the inverse of concat.
    std::vector<HostTensor> outs;
    std::vector<Tensor> outViews;
    std::vector<int64_t> sizes;
    for (const auto &shape : c.parts) {
      outs.emplace_back(dtypeOf<T>(), shape);
      outViews.push_back(outs.back().view());
      sizes.push_back(shape[c.axis]);
    }
    ASSERT_KERNEL_OK(
        runKernel("split", {whole}, outViews, Attrs().i("axis", c.axis).ints("sizes", sizes)));
    for (size_t p = 0; p < outs.size(); ++p)
      EXPECT_EQ(outs[p].values<T>(), partValues[p]) << "part " << p;
  }
}

template <typename T, typename I> void checkGather() {
  struct Case {
    std::vector<int64_t> data;
    int64_t axis;
    std::vector<int64_t> indicesShape;
    std::vector<int64_t> indices;
  };
  const std::vector<Case> cases = {
      {{5}, 0, {3}, {0, 4, 2}},
      {{5}, 0, {}, {-1}}, // scalar index: y drops the axis
      {{4, 3}, 0, {2}, {3, -4}},
      {{4, 3}, 1, {2, 2}, {2, -1, 0, -3}},
      {{2, 3, 4}, 1, {4}, {-1, 0, 2, 1}},
      {{2, 3, 4}, 2, {1, 2}, {3, -2}},
      {{3, 2}, 0, {0}, {}},
  };
  unsigned seed = 120;
  for (const Case &c : cases) {
    const auto vd = distinctValues<T>(numelOf(c.data), seed++);
    HostTensor data = HostTensor::of<T>(c.data, vd);
    HostTensor indices =
        HostTensor::of<I>(c.indicesShape, std::vector<I>(c.indices.begin(), c.indices.end()));
    std::vector<int64_t> yShape(c.data.begin(), c.data.begin() + c.axis);
    yShape.insert(yShape.end(), c.indicesShape.begin(), c.indicesShape.end());
    yShape.insert(yShape.end(), c.data.begin() + c.axis + 1, c.data.end());
    HostTensor y(dtypeOf<T>(), yShape);
    ASSERT_KERNEL_OK(runKernel("gather", {data, indices}, {y}, Attrs().i("axis", c.axis)));
    std::vector<T> expected;
    const size_t indexRank = c.indicesShape.size();
    for (int64_t i = 0; i < numelOf(yShape); ++i) {
      const auto yIndex = unravel(i, yShape);
      const std::vector<int64_t> idx(yIndex.begin() + c.axis, yIndex.begin() + c.axis + indexRank);
      int64_t row = c.indices[ravel(idx, c.indicesShape)];
      if (row < 0)
        row += c.data[c.axis];
      std::vector<int64_t> dIndex(yIndex.begin(), yIndex.begin() + c.axis);
      dIndex.push_back(row);
      dIndex.insert(dIndex.end(), yIndex.begin() + c.axis + indexRank, yIndex.end());
      expected.push_back(vd[ravel(dIndex, c.data)]);
    }
    EXPECT_EQ(y.values<T>(), expected) << "seed " << seed;
  }
}

// gather on each index block of data's axis (docs/kernels.md, "Index blocks"): a block's rows are
// the whole gather's where the block holds the index and zero elsewhere, so the blocks' outputs
// sum exactly to the whole gather.
template <typename T, typename I> void checkGatherIndexBlocks() {
  struct Case {
    std::vector<int64_t> data; // dim 7 along axis
    int64_t axis;
    std::vector<int64_t> indicesShape;
    std::vector<int64_t> indices;
  };
  const std::vector<Case> cases = {
      {{7, 3}, 0, {2, 3}, {0, 6, -1, 3, -7, 2}},
      {{2, 7, 2}, 1, {4}, {-2, 0, 5, 3}},
      {{7}, 0, {}, {-3}},
      {{2, 7}, 1, {0}, {}},
  };
  unsigned seed = 140;
  for (const Case &c : cases) {
    const auto vd = distinctValues<T>(numelOf(c.data), seed++);
    HostTensor indices =
        HostTensor::of<I>(c.indicesShape, std::vector<I>(c.indices.begin(), c.indices.end()));
    std::vector<int64_t> yShape(c.data.begin(), c.data.begin() + c.axis);
    yShape.insert(yShape.end(), c.indicesShape.begin(), c.indicesShape.end());
    yShape.insert(yShape.end(), c.data.begin() + c.axis + 1, c.data.end());
    HostTensor whole(dtypeOf<T>(), yShape);
    ASSERT_KERNEL_OK(runKernel("gather", {HostTensor::of<T>(c.data, vd), indices}, {whole},
                               Attrs().i("axis", c.axis)));
    const std::vector<T> expected = whole.values<T>();
    for (const std::vector<int64_t> &sizes : kIndexBlockSplitsOf7) {
      std::vector<T> sum(expected.size(), T(0));
      int64_t offset = 0;
      for (int64_t size : sizes) {
        SCOPED_TRACE(::testing::Message()
                     << "axis " << c.axis << " block " << offset << "+" << size);
        std::vector<int64_t> blockShape = c.data;
        blockShape[c.axis] = size;
        HostTensor block = HostTensor::of<T>(
            blockShape, sliceAlong(vd, c.data, static_cast<size_t>(c.axis), offset, size));
        HostTensor y(dtypeOf<T>(), yShape);
        ASSERT_KERNEL_OK(runKernel("gather", {block, indices}, {y},
                                   withIndexBlock(Attrs().i("axis", c.axis), offset, 7)));
        const std::vector<T> part = y.values<T>();
        for (size_t i = 0; i < part.size(); ++i) {
          EXPECT_TRUE(part[i] == T(0) || part[i] == expected[i]) << "at " << i;
          sum[i] = static_cast<T>(sum[i] + part[i]);
        }
        offset += size;
      }
      EXPECT_EQ(sum, expected);
    }
  }
}

// Pads and crops of every sign on ranks 0-3, against index arithmetic: y[i] = x[i - before]
// when that is inside x, else the value.
template <typename T> void checkPad() {
  struct Case {
    std::vector<int64_t> shape, pads;
  };
  const std::vector<Case> cases = {
      {{5}, {2, 3}},
      {{5}, {-2, 1}},
      {{5}, {0, -5}},
      {{3, 4}, {1, 0, 2, 1}},
      {{3, 4}, {0, -1, 0, 2}},
      {{2, 3, 4}, {1, 0, -1, 0, 2, 1}},
      {{2, 3, 4}, {0, 0, 0, 0, 0, 0}},
      {{}, {}},
      {{0, 2}, {1, 1, 0, 0}},
  };
  unsigned seed = 40;
  const T value = std::is_same_v<T, uint8_t> ? T(1) : T(-7);
  for (const Case &c : cases) {
    const size_t rank = c.shape.size();
    const auto vx = distinctValues<T>(numelOf(c.shape), seed++);
    HostTensor x = HostTensor::of<T>(c.shape, vx);
    std::vector<int64_t> yShape;
    for (size_t d = 0; d < rank; ++d)
      yShape.push_back(c.shape[d] + c.pads[d] + c.pads[d + rank]);
    HostTensor y(dtypeOf<T>(), yShape);
    ASSERT_KERNEL_OK(runKernel("pad", {x}, {y},
                               Attrs().ints("pads", c.pads).d("value", double(value))));
    std::vector<T> expected;
    for (int64_t i = 0; i < numelOf(yShape); ++i) {
      const auto yIndex = unravel(i, yShape);
      std::vector<int64_t> xIndex(rank);
      bool inside = true;
      for (size_t d = 0; d < rank; ++d) {
        xIndex[d] = yIndex[d] - c.pads[d];
        inside = inside && xIndex[d] >= 0 && xIndex[d] < c.shape[d];
      }
      expected.push_back(inside ? vx[ravel(xIndex, c.shape)] : value);
    }
    EXPECT_EQ(y.values<T>(), expected) << "shape rank " << rank;
  }
}

template <typename T> void checkAllMovement() {
  checkPad<T>();
  checkCopy<T>();
  checkTranspose<T>();
  checkSlice<T>();
  checkExpand<T>();
  checkTrilu<T>();
  checkConcatAndSplit<T>();
  checkGather<T, int64_t>();
  checkGather<T, int32_t>();
  checkGatherIndexBlocks<T, int64_t>();
  checkGatherIndexBlocks<T, int32_t>();
}

TEST(DataMovement, F32) { checkAllMovement<float>(); }
TEST(DataMovement, I64) { checkAllMovement<int64_t>(); }
TEST(DataMovement, I32) { checkAllMovement<int32_t>(); }
TEST(DataMovement, Bool) { checkAllMovement<uint8_t>(); }

TEST(DataMovement, InconsistentOperandsAreErrors) {
  HostTensor x(program::F32, {2, 3}), y32(program::F32, {3, 2}), y23(program::F32, {2, 3});
  HostTensor i23(program::I32, {2, 3}), y7(program::F32, {7});
  EXPECT_KERNEL_ERROR(runKernel("copy", {x}, {y7}), "different element count");
  EXPECT_KERNEL_ERROR(runKernel("copy", {x}, {i23}), "expected the same dtype");
  EXPECT_KERNEL_ERROR(runKernel("transpose", {x}, {y32}, Attrs().ints("perm", {0, 0})),
                      "not a permutation");
  EXPECT_KERNEL_ERROR(runKernel("transpose", {x}, {y32}, Attrs().ints("perm", {0, 1, 2})),
                      "not a permutation");
  EXPECT_KERNEL_ERROR(runKernel("transpose", {x}, {y23}, Attrs().ints("perm", {1, 0})),
                      "expected [3x2]");
  EXPECT_KERNEL_ERROR(runKernel("transpose", {x}, {y32}), "missing attribute 'perm'");
  // pad: a y that is not x padded, pads of the wrong length.
  EXPECT_KERNEL_ERROR(runKernel("pad", {x}, {HostTensor(program::F32, {2, 4})},
                                Attrs().ints("pads", {0, 0, 0, 2}).d("value", 0.0)),
                      "is not x");
  EXPECT_KERNEL_ERROR(runKernel("pad", {x}, {y23}, Attrs().ints("pads", {0, 0}).d("value", 0.0)),
                      "2 entries per dim");
  // slice: reads past either end, zero step, wrong attribute lengths, rank change.
  HostTensor s10 = HostTensor::of<float>({10}, std::vector<float>(10, 1.0f));
  HostTensor y4(program::F32, {4});
  auto slice = [&](std::vector<int64_t> starts, std::vector<int64_t> steps, const Tensor &y) {
    return runKernel("slice", {s10}, {y}, Attrs().ints("starts", starts).ints("steps", steps));
  };
  EXPECT_KERNEL_ERROR(slice({7}, {1}, y4), "outside x's extent 10");
  EXPECT_KERNEL_ERROR(slice({2}, {-1}, y4), "outside x's extent 10");
  EXPECT_KERNEL_ERROR(slice({10}, {1}, HostTensor(program::F32, {1})), "outside x's extent");
  EXPECT_KERNEL_ERROR(slice({-1}, {1}, HostTensor(program::F32, {1})), "outside x's extent");
  EXPECT_KERNEL_ERROR(slice({0}, {0}, y4), "invalid step 0");
  EXPECT_KERNEL_ERROR(slice({0, 0}, {1, 1}, y4), "one entry per dim");
  EXPECT_KERNEL_ERROR(slice({0}, {1}, HostTensor(program::F32, {2, 2})), "must have the rank");
  EXPECT_KERNEL_ERROR(runKernel("expand", {x}, {HostTensor(program::F32, {2, 4})}),
                      "cannot be broadcast to [2x4]");
  EXPECT_KERNEL_ERROR(runKernel("expand", {x}, {HostTensor(program::F32, {3})}),
                      "cannot be broadcast to [3]");
  EXPECT_KERNEL_ERROR(runKernel("trilu", {y7}, {y7}, Attrs().i("upper", 1).i("k", 0)), "rank >= 2");
  EXPECT_KERNEL_ERROR(runKernel("trilu", {x}, {y23}, Attrs().i("upper", 1)),
                      "missing attribute 'k'");
  // concat / split
  HostTensor c4(program::F32, {2, 4}), c5(program::F32, {2, 5});
  EXPECT_KERNEL_ERROR(runKernel("concat", {x, x}, {c5}, Attrs().i("axis", 1)),
                      "add up to 6 along axis 1");
  EXPECT_KERNEL_ERROR(runKernel("concat", {x, y32}, {c5}, Attrs().i("axis", 1)),
                      "does not match y");
  EXPECT_KERNEL_ERROR(runKernel("concat", {x, i23}, {c4}, Attrs().i("axis", 1)),
                      "expected the same dtype");
  EXPECT_KERNEL_ERROR(runKernel("concat", {x, absent()}, {c4}, Attrs().i("axis", 1)),
                      "input 1 is required but absent");
  EXPECT_KERNEL_ERROR(runKernel("concat", {}, {c4}, Attrs().i("axis", 1)),
                      "expected at least 1 inputs");
  EXPECT_KERNEL_ERROR(runKernel("concat", {x}, {x}, Attrs().i("axis", 2)),
                      "out of range for rank 2");
  HostTensor p1(program::F32, {2, 1}), p2(program::F32, {2, 2});
  EXPECT_KERNEL_ERROR(runKernel("split", {x}, {p1, p1}, Attrs().i("axis", 1).ints("sizes", {1, 1})),
                      "adds up to 2");
  EXPECT_KERNEL_ERROR(runKernel("split", {x}, {p1, p2}, Attrs().i("axis", 1).ints("sizes", {1, 1})),
                      "does not have size 1");
  EXPECT_KERNEL_ERROR(runKernel("split", {x}, {p1, p2}, Attrs().i("axis", 1).ints("sizes", {3})),
                      "has 1 entries for 2 outputs");
  EXPECT_KERNEL_ERROR(runKernel("split", {c4}, {p2, p2}, Attrs().i("axis", 1)),
                      "missing attribute 'sizes'");
  // gather
  HostTensor data = HostTensor::of<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  HostTensor y22(program::F32, {2, 2});
  EXPECT_KERNEL_ERROR(runKernel("gather", {data, HostTensor::of<int64_t>({2}, {0, 3})}, {y22},
                                Attrs().i("axis", 0)),
                      "index 3 is out of range for axis 0 of size 3");
  EXPECT_KERNEL_ERROR(runKernel("gather", {data, HostTensor::of<int32_t>({2}, {-4, 0})}, {y22},
                                Attrs().i("axis", 0)),
                      "index -4 is out of range");
  EXPECT_KERNEL_ERROR(
      runKernel("gather", {data, HostTensor::of<float>({2}, {0, 1})}, {y22}, Attrs().i("axis", 0)),
      "expected i64 or i32");
  EXPECT_KERNEL_ERROR(runKernel("gather", {data, HostTensor::of<int64_t>({2}, {0, 1})},
                                {HostTensor(program::F32, {2, 3})}, Attrs().i("axis", 0)),
                      "expected [2x2]");
  EXPECT_KERNEL_ERROR(runKernel("gather", {data, HostTensor::of<int64_t>({2}, {0, 1})}, {y22},
                                Attrs().i("axis", 2)),
                      "out of range for rank 2");
}

TEST(DataMovement, GatherIndexBlockErrors) {
  // Rows [3, 6) of a table of 6.
  HostTensor data = HostTensor::of<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  HostTensor y22(program::F32, {2, 2});
  HostTensor ok = HostTensor::of<int64_t>({2}, {0, 5});
  auto gather = [&](const Tensor &indices, const Attrs &attrs) {
    return runKernel("gather", {data, indices}, {y22}, attrs);
  };
  const Attrs axis0 = Attrs().i("axis", 0);
  EXPECT_KERNEL_OK(gather(ok, withIndexBlock(axis0, 3, 6)));
  EXPECT_EQ(y22.values<float>(), (std::vector<float>{0, 0, 5, 6}));
  // Indices are checked against the whole dimension, negatives counted from its end.
  EXPECT_KERNEL_ERROR(gather(HostTensor::of<int64_t>({2}, {0, 6}), withIndexBlock(axis0, 3, 6)),
                      "gather: index 6 is out of range for axis 0 of size 6 (index_size)");
  EXPECT_KERNEL_ERROR(gather(HostTensor::of<int32_t>({2}, {-7, 0}), withIndexBlock(axis0, 3, 6)),
                      "gather: index -7 is out of range");
  EXPECT_KERNEL_OK(gather(HostTensor::of<int32_t>({2}, {-6, -1}), withIndexBlock(axis0, 3, 6)));
  EXPECT_EQ(y22.values<float>(), (std::vector<float>{0, 0, 5, 6}));
  // Both attributes or neither.
  EXPECT_KERNEL_ERROR(gather(ok, Attrs().i("axis", 0).i("index_offset", 3)),
                      "gather: attribute 'index_offset' needs 'index_size'");
  EXPECT_KERNEL_ERROR(gather(ok, Attrs().i("axis", 0).i("index_size", 6)),
                      "gather: attribute 'index_size' needs 'index_offset'");
  EXPECT_KERNEL_ERROR(gather(ok, Attrs().i("axis", 0).f("index_offset", 3).i("index_size", 6)),
                      "gather: attribute 'index_offset' is not an int");
  // The block must lie inside the whole dimension.
  EXPECT_KERNEL_ERROR(gather(ok, withIndexBlock(axis0, 4, 6)),
                      "gather: index_offset 4 and index_size 6 do not hold a block of the local "
                      "size 3");
  EXPECT_KERNEL_ERROR(gather(ok, withIndexBlock(axis0, -1, 6)), "gather: index_offset -1");
  EXPECT_KERNEL_ERROR(gather(ok, withIndexBlock(axis0, 0, 2)),
                      "gather: index_offset 0 and index_size 2");
  EXPECT_KERNEL_ERROR(gather(ok, withIndexBlock(axis0, std::numeric_limits<int64_t>::max(), 6)),
                      "do not hold a block");
}

// scatter_nd against a direct reading of the ONNX definition: y = data, then for every index
// tuple t, y[indices[t]] = updates[t] (a whole slice when the tuple is shorter than data's rank).
TEST(ScatterND, WritesSlicesWhereTheTuplesSay) {
  const Attrs none = Attrs().s("reduction", "none");
  // data [2, 3, 4]; tuples of length 2 pick rows of the last dim; one negative index.
  std::vector<float> data(24);
  for (int i = 0; i < 24; ++i)
    data[i] = static_cast<float>(i);
  HostTensor d = HostTensor::of<float>({2, 3, 4}, data);
  HostTensor idx = HostTensor::of<int64_t>({3, 2}, {0, 2, 1, -3, 1, 2});
  std::vector<float> up(12);
  for (int i = 0; i < 12; ++i)
    up[i] = 100.0f + static_cast<float>(i);
  HostTensor u = HostTensor::of<float>({3, 4}, up);
  HostTensor y(program::F32, {2, 3, 4});
  ASSERT_KERNEL_OK(runKernel("scatter_nd", {d, idx, u}, {y}, none));
  std::vector<float> want = data;
  const int rows[3][2] = {{0, 2}, {1, 0}, {1, 2}};
  for (int t = 0; t < 3; ++t)
    for (int j = 0; j < 4; ++j)
      want[(rows[t][0] * 3 + rows[t][1]) * 4 + j] = up[t * 4 + j];
  EXPECT_EQ(y.values<float>(), want);
  // Full-length tuples (single elements), i32 indices, int64 data: the label shift of an
  // encoder-decoder export (decoder_input_ids[:, 1:] = labels[:, :-1]).
  HostTensor zeros = HostTensor::of<int64_t>({2, 3}, std::vector<int64_t>(6, 0));
  HostTensor shift = HostTensor::of<int32_t>({2, 2, 2}, {0, 1, 0, 2, 1, 1, 1, 2});
  HostTensor labels = HostTensor::of<int64_t>({2, 2}, {7, 8, 9, 10});
  HostTensor ids(program::I64, {2, 3});
  ASSERT_KERNEL_OK(runKernel("scatter_nd", {zeros, shift, labels}, {ids}, none));
  EXPECT_EQ(ids.values<int64_t>(), (std::vector<int64_t>{0, 7, 8, 0, 9, 10}));
}

TEST(ScatterND, ReductionsCombineInTupleOrder) {
  // Tuple 0 twice: the reductions see both updates; "none" keeps the last.
  HostTensor d = HostTensor::of<float>({3}, {2, 5, 7});
  HostTensor idx = HostTensor::of<int64_t>({3, 1}, {0, 2, 0});
  HostTensor u = HostTensor::of<float>({3}, {3, -1, 4});
  const std::pair<const char *, std::vector<float>> cases[] = {
      {"none", {4, 5, -1}}, {"add", {9, 5, 6}}, {"mul", {24, 5, -7}},
      {"max", {4, 5, 7}},   {"min", {2, 5, -1}}};
  for (const auto &[reduction, want] : cases) {
    HostTensor y(program::F32, {3});
    ASSERT_KERNEL_OK(runKernel("scatter_nd", {d, idx, u}, {y}, Attrs().s("reduction", reduction)));
    EXPECT_EQ(y.values<float>(), want) << reduction;
  }
}

TEST(ScatterND, MalformedCallsAreErrors) {
  HostTensor d(program::F32, {2, 3}), y(program::F32, {2, 3});
  const Attrs none = Attrs().s("reduction", "none");
  HostTensor u2 = HostTensor::of<float>({2}, {1, 2});
  EXPECT_KERNEL_ERROR(
      runKernel("scatter_nd", {d, HostTensor::of<int64_t>({2, 2}, {0, 0, 2, 0}), u2}, {y}, none),
      "out of range");
  EXPECT_KERNEL_ERROR(
      runKernel("scatter_nd", {d, HostTensor::of<int64_t>({2, 3}, {0, 0, 0, 0, 0, 0}), u2}, {y}, none),
      "do not address");
  EXPECT_KERNEL_ERROR(
      runKernel("scatter_nd", {d, HostTensor::of<int64_t>({2, 1}, {0, 1}), u2}, {y}, none), "updates");
  EXPECT_KERNEL_ERROR(
      runKernel("scatter_nd", {d, HostTensor::of<float>({2, 2}, {0, 0, 1, 1}), u2}, {y}, none),
      "i64 or i32");
  EXPECT_KERNEL_ERROR(runKernel("scatter_nd",
                                {d, HostTensor::of<int64_t>({2, 2}, {0, 0, 1, 1}),
                                 HostTensor::of<int64_t>({2}, {1, 2})},
                                {y}, none),
                      "dtype");
}

// cum_sum against the definition, every axis and flag on a [2, 3, 4] tensor: y[..k..] is the
// sum of x over the positions before k (through k unless exclusive; after k when reversed).
TEST(CumSum, MatchesTheDefinitionOnEveryAxis) {
  const std::vector<int64_t> shape = {2, 3, 4};
  std::vector<float> x = randomFloats(24, -2.0f, 2.0f, 7);
  HostTensor in = HostTensor::of<float>(shape, x);
  for (int64_t axis = 0; axis < 3; ++axis)
    for (int exclusive = 0; exclusive < 2; ++exclusive)
      for (int reverse = 0; reverse < 2; ++reverse) {
        HostTensor y(program::F32, shape);
        ASSERT_KERNEL_OK(runKernel("cum_sum", {in}, {y},
                                   Attrs().i("axis", axis).i("exclusive", exclusive)
                                       .i("reverse", reverse)));
        std::vector<float> got = y.values<float>();
        for (int64_t flat = 0; flat < 24; ++flat) {
          std::vector<int64_t> at = unravel(flat, shape);
          double want = 0.0;
          for (int64_t k = 0; k < shape[static_cast<size_t>(axis)]; ++k) {
            const int64_t pos = at[static_cast<size_t>(axis)];
            const bool counted = reverse ? (exclusive ? k > pos : k >= pos)
                                         : (exclusive ? k < pos : k <= pos);
            if (!counted)
              continue;
            std::vector<int64_t> from = at;
            from[static_cast<size_t>(axis)] = k;
            want += x[static_cast<size_t>(ravel(from, shape))];
          }
          EXPECT_NEAR(got[static_cast<size_t>(flat)], want, 1e-5)
              << "axis " << axis << " exclusive " << exclusive << " reverse " << reverse;
        }
      }
  // Integers: the attention-mask positions RoBERTa and OPT compute.
  HostTensor mask = HostTensor::of<int64_t>({2, 4}, {1, 1, 1, 0, 0, 1, 1, 1});
  HostTensor pos(program::I64, {2, 4});
  ASSERT_KERNEL_OK(runKernel("cum_sum", {mask}, {pos},
                             Attrs().i("axis", 1).i("exclusive", 0).i("reverse", 0)));
  EXPECT_EQ(pos.values<int64_t>(), (std::vector<int64_t>{1, 2, 3, 3, 0, 1, 2, 3}));
  EXPECT_KERNEL_ERROR(runKernel("cum_sum", {mask}, {pos},
                                Attrs().i("axis", 2).i("exclusive", 0).i("reverse", 0)),
                      "out of range");
  EXPECT_KERNEL_ERROR(runKernel("cum_sum", {HostTensor(program::BOOL, {2})},
                                {HostTensor(program::BOOL, {2})},
                                Attrs().i("axis", 0).i("exclusive", 0).i("reverse", 0)),
                      "numeric");
}

} // namespace
} // namespace shardc::runtime::testing
