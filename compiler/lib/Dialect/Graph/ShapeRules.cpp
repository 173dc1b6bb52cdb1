//===- ShapeRules.cpp -------------------------------------------------------------------===//
#include "shardc/Dialect/Graph/ShapeRules.h"

#include <algorithm>

namespace shardc::graph {

std::optional<Shape> broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b,
                                     std::string &why) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db || db == 1) {
      out[i] = da;
    } else if (da == 1) {
      out[i] = db;
    } else {
      why = "shapes " + formatShape(a) + " and " + formatShape(b) +
            " do not broadcast (dimension " + std::to_string(da) + " vs " +
            std::to_string(db) + ")";
      return std::nullopt;
    }
  }
  return out;
}

bool broadcastsTo(llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to) {
  if (from.size() > to.size())
    return false;
  size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[lead + i])
      return false;
  return true;
}

std::optional<Shape> windowOutputShape(llvm::ArrayRef<int64_t> input, int64_t channels,
                                       const WindowGeometry &g, std::string &why) {
  if (input.size() < 3 || input.size() > 5) {
    why = "input must be [N, C, spatial...] with 1 to 3 spatial dims, got " + formatShape(input);
    return std::nullopt;
  }
  const size_t spatial = input.size() - 2;
  auto expect = [&](llvm::ArrayRef<int64_t> v, size_t count, const char *name, int64_t min) {
    if (v.size() != count) {
      why = std::string(name) + " needs " + std::to_string(count) + " entries for " +
            std::to_string(spatial) + " spatial dims, got " + std::to_string(v.size());
      return false;
    }
    for (int64_t x : v)
      if (x < min || x > (int64_t(1) << 40)) {
        why = std::string(name) + " entries must be in [" + std::to_string(min) + ", 2^40], got " +
              std::to_string(x);
        return false;
      }
    return true;
  };
  if (!expect(g.kernel, spatial, "kernel_shape", 1) || !expect(g.strides, spatial, "strides", 1) ||
      !expect(g.dilations, spatial, "dilations", 1) || !expect(g.pads, 2 * spatial, "pads", 0))
    return std::nullopt;
  Shape out{input[0], channels};
  for (size_t d = 0; d < spatial; ++d) {
    const int64_t size = input[d + 2], begin = g.pads[d], end = g.pads[d + spatial];
    const int64_t span = size + begin + end - g.dilations[d] * (g.kernel[d] - 1) - 1;
    if (span < 0) {
      why = "the window (kernel " + std::to_string(g.kernel[d]) + ", dilation " +
            std::to_string(g.dilations[d]) + ") is larger than spatial dim " + std::to_string(d) +
            " (" + std::to_string(size) + " with pads " + std::to_string(begin) + ", " +
            std::to_string(end) + ")";
      return std::nullopt;
    }
    int64_t o = (g.ceilMode ? (span + g.strides[d] - 1) : span) / g.strides[d] + 1;
    if (g.ceilMode && (o - 1) * g.strides[d] >= size + begin)
      --o;
    out.push_back(o);
  }
  return out;
}

std::optional<Shape> matmulShape(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b,
                                 std::string &why) {
  if (a.empty() || b.empty()) {
    why = "matmul operands must have rank >= 1";
    return std::nullopt;
  }
  Shape pa(a.begin(), a.end()), pb(b.begin(), b.end());
  bool promotedA = pa.size() == 1, promotedB = pb.size() == 1;
  if (promotedA)
    pa.insert(pa.begin(), 1);
  if (promotedB)
    pb.push_back(1);
  int64_t k1 = pa.back(), k2 = pb[pb.size() - 2];
  if (k1 != k2) {
    why = "contraction dimensions differ: " + formatShape(a) + " x " + formatShape(b);
    return std::nullopt;
  }
  auto batch = broadcastShapes(llvm::ArrayRef<int64_t>(pa).drop_back(2),
                               llvm::ArrayRef<int64_t>(pb).drop_back(2), why);
  if (!batch)
    return std::nullopt;
  Shape out = *batch;
  if (!promotedA)
    out.push_back(pa[pa.size() - 2]);
  if (!promotedB)
    out.push_back(pb.back());
  return out;
}

int64_t numElements(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

int64_t sliceLength(int64_t start, int64_t end, int64_t step) {
  if (step > 0)
    return end > start ? (end - start + step - 1) / step : 0;
  return start > end ? (start - end + (-step) - 1) / (-step) : 0;
}

std::string formatShape(llvm::ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += "x";
    s += shape[i] < 0 ? std::string("?") : std::to_string(shape[i]);
  }
  return s;
}

} // namespace shardc::graph
