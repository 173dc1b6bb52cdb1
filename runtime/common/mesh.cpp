#include "runtime/common/mesh.h"

#include <algorithm>

namespace shardc::runtime {

int64_t meshRank(const std::vector<int64_t> &sizes, const std::vector<int64_t> &coordinate) {
  int64_t rank = 0;
  for (size_t axis = 0; axis < sizes.size(); ++axis)
    rank = rank * sizes[axis] + coordinate[axis];
  return rank;
}

std::vector<int64_t> meshCoordinate(const std::vector<int64_t> &sizes, int64_t rank) {
  std::vector<int64_t> coordinate(sizes.size());
  for (size_t axis = sizes.size(); axis-- > 0;) {
    coordinate[axis] = rank % sizes[axis];
    rank /= sizes[axis];
  }
  return coordinate;
}

MeshSlice meshSlice(const std::vector<int64_t> &sizes, const std::vector<int64_t> &coordinate,
                    const std::vector<int> &axes) {
  auto along = [&](size_t axis) {
    return std::find(axes.begin(), axes.end(), static_cast<int>(axis)) != axes.end();
  };
  MeshSlice slice;
  // color: the coordinates on the other axes, row-major; key: those on the slice's axes.
  int64_t color = 0, key = 0, members = 1;
  for (size_t axis = 0; axis < sizes.size(); ++axis) {
    if (along(axis)) {
      key = key * sizes[axis] + coordinate[axis];
      members *= sizes[axis];
    } else {
      color = color * sizes[axis] + coordinate[axis];
    }
  }
  slice.color = static_cast<int>(color);
  slice.key = static_cast<int>(key);
  // The members: every coordinate on the slice's axes, row-major, the others held at ours.
  std::vector<int64_t> at = coordinate;
  for (int64_t member = 0; member < members; ++member) {
    int64_t rest = member;
    for (size_t i = axes.size(); i-- > 0;) {
      const size_t axis = static_cast<size_t>(axes[i]);
      at[axis] = rest % sizes[axis];
      rest /= sizes[axis];
    }
    slice.ranks.push_back(static_cast<int>(meshRank(sizes, at)));
  }
  return slice;
}

int64_t meshRankOfLaunchRank(const std::vector<int64_t> &sizes, int innermost,
                             int64_t launchRank) {
  const int axes = static_cast<int>(sizes.size());
  if (innermost < 0 || innermost >= axes - 1)
    return launchRank;
  // The launch order: every axis but `innermost`, in order, then `innermost`.
  std::vector<int> order;
  for (int a = 0; a < axes; ++a)
    if (a != innermost)
      order.push_back(a);
  order.push_back(innermost);
  std::vector<int64_t> launchSizes;
  for (int a : order)
    launchSizes.push_back(sizes[static_cast<size_t>(a)]);
  const std::vector<int64_t> at = meshCoordinate(launchSizes, launchRank);
  std::vector<int64_t> coordinate(sizes.size());
  for (size_t i = 0; i < order.size(); ++i)
    coordinate[static_cast<size_t>(order[i])] = at[i];
  return meshRank(sizes, coordinate);
}

} // namespace shardc::runtime
