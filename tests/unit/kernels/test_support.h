// Helpers for the kernel unit tests: tensors that own their bytes, attribute maps, a way to call
// a kernel by name, and the small naive references (index arithmetic, broadcasting) the tests
// check kernels against.
#pragma once

#include "runtime/kernels/kernel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace shardc::runtime::testing {

template <typename T> constexpr DType dtypeOf() {
  if constexpr (std::is_same_v<T, float>)
    return program::F32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return program::I64;
  else if constexpr (std::is_same_v<T, int32_t>)
    return program::I32;
  else {
    static_assert(std::is_same_v<T, uint8_t>, "bool tensors hold uint8_t");
    return program::BOOL;
  }
}

// A tensor whose bytes live in the test. Outputs start filled with a 0xA5 byte pattern, so an
// element a kernel forgot to write does not accidentally hold the expected value.
class HostTensor {
public:
  HostTensor() = default;
  HostTensor(DType dtype, std::vector<int64_t> shape) {
    view_.dtype = dtype;
    view_.shape = std::move(shape);
    // uint64_t storage keeps every element type aligned; one extra word so that an empty
    // tensor still has a non-null (present) data pointer.
    storage_.assign(view_.sizeBytes() / 8 + 1, 0xA5A5A5A5A5A5A5A5ull);
    view_.data = storage_.data();
  }

  template <typename T>
  static HostTensor of(std::vector<int64_t> shape, const std::vector<T> &values) {
    HostTensor t(dtypeOf<T>(), std::move(shape));
    EXPECT_EQ(static_cast<int64_t>(values.size()), t.view_.numel()) << "test data size";
    if (!values.empty())
      std::memcpy(t.view_.data, values.data(), values.size() * sizeof(T));
    return t;
  }

  // A scalar (shape []).
  template <typename T> static HostTensor scalar(T value) { return of<T>({}, {value}); }

  // Copying would leave the view pointing at the source's storage.
  HostTensor(const HostTensor &) = delete;
  HostTensor &operator=(const HostTensor &) = delete;
  HostTensor(HostTensor &&other) noexcept { *this = std::move(other); }
  HostTensor &operator=(HostTensor &&other) noexcept {
    storage_ = std::move(other.storage_);
    view_ = other.view_;
    view_.data = storage_.empty() ? nullptr : storage_.data();
    return *this;
  }

  const Tensor &view() const { return view_; }
  operator Tensor() const { return view_; }

  template <typename T> std::vector<T> values() const {
    EXPECT_EQ(dtypeOf<T>(), view_.dtype) << "reading " << view_.describe();
    const T *p = view_.as<T>();
    return std::vector<T>(p, p + view_.numel());
  }

private:
  std::vector<uint64_t> storage_;
  Tensor view_;
};

// An absent optional operand (the -1 of a program).
inline Tensor absent() { return Tensor(); }

// Builds an attribute map fluently: Attrs().i("axis", 1).f("epsilon", 1e-5f).
class Attrs {
public:
  Attrs &i(const std::string &name, int64_t v) {
    map_[name].set_i(v);
    return *this;
  }
  Attrs &f(const std::string &name, float v) {
    map_[name].set_f(v);
    return *this;
  }
  Attrs &d(const std::string &name, double v) {
    map_[name].set_d(v);
    return *this;
  }
  Attrs &s(const std::string &name, const std::string &v) {
    map_[name].set_s(v);
    return *this;
  }
  Attrs &ints(const std::string &name, const std::vector<int64_t> &v) {
    auto *list = map_[name].mutable_ints();
    list->clear_values();
    for (int64_t x : v)
      list->add_values(x);
    return *this;
  }
  const AttrMap &map() const { return map_; }

private:
  AttrMap map_;
};

// `attrs` plus an index block (docs/kernels.md, "Index blocks"): the device's block of the indexed
// dimension starts at `offset` of a whole dimension of `size`.
inline Attrs withIndexBlock(Attrs attrs, int64_t offset, int64_t size) {
  attrs.i("index_offset", offset).i("index_size", size);
  return attrs;
}

// Ways to split an indexed dimension of 7 into index blocks, as block sizes: one block (the
// attributes present, nothing split), two uneven blocks, three.
inline const std::vector<std::vector<int64_t>> kIndexBlockSplitsOf7 = {{7}, {3, 4}, {2, 3, 2}};

// 64-byte aligned scratch for a kernel's workspace, as the executor allocates it.
class WorkspaceStorage {
public:
  explicit WorkspaceStorage(uint64_t bytes) : bytes_(bytes) {
    // One extra alignment unit, so that a zero-byte workspace still has an address.
    size_t rounded = static_cast<size_t>((bytes + 64) / 64 * 64);
    data_ = std::aligned_alloc(64, rounded);
  }
  ~WorkspaceStorage() { std::free(data_); }
  WorkspaceStorage(const WorkspaceStorage &) = delete;
  WorkspaceStorage &operator=(const WorkspaceStorage &) = delete;

  void give(KernelArgs *args) const {
    args->workspace = data_;
    args->workspaceBytes = bytes_;
  }

private:
  uint64_t bytes_;
  void *data_;
};

// True when a kernel error says its workspace was too small.
inline bool isWorkspaceError(const Status &status) {
  return !status.isOk() && status.message().find("bytes of workspace") != std::string::npos;
}

// Calls the CPU kernel `name` with the workspace its size function asks for, as the executor
// does. Every call also checks the size function against what the kernel really uses: given
// one byte less, the kernel must report a workspace that is too small (unless it rejects the
// operands first), so the size is neither too small nor larger than needed.
inline Status runKernel(const std::string &name, std::vector<Tensor> inputs,
                        std::vector<Tensor> outputs, const Attrs &attrs = Attrs()) {
  KernelFn fn = findCpuKernel(name);
  if (!fn)
    return Status::error("no CPU kernel named '" + name + "'");
  KernelArgs args;
  args.inputs = std::move(inputs);
  args.outputs = std::move(outputs);
  args.attrs = &attrs.map();
  uint64_t need = 0;
  // Operands the size function rejects are left for the kernel to reject (it is called with
  // no workspace, and must report its own error before it takes any).
  if (!cpuKernelWorkspaceBytes(name, args, &need).isOk())
    need = 0;
  if (need > 0) {
    WorkspaceStorage smaller(need - 1);
    KernelArgs undersized = args;
    smaller.give(&undersized);
    Status status = fn(undersized);
    if (status.isOk())
      ADD_FAILURE() << name << " ran in " << need - 1
                    << " bytes of workspace, but its size function asks for " << need;
  }
  WorkspaceStorage workspace(need);
  workspace.give(&args);
  return fn(args);
}

// Asserts that a Status failed and that its message contains `fragment`.
#define EXPECT_KERNEL_ERROR(status_expr, fragment)                                                 \
  do {                                                                                             \
    ::shardc::runtime::Status _st = (status_expr);                                                 \
    EXPECT_FALSE(_st.isOk()) << "expected an error containing \"" << (fragment) << "\"";           \
    EXPECT_NE(_st.message().find(fragment), std::string::npos)                                     \
        << "message: \"" << _st.message() << "\" lacks \"" << (fragment) << "\"";                  \
  } while (0)

#define EXPECT_KERNEL_OK(status_expr)                                                              \
  do {                                                                                             \
    ::shardc::runtime::Status _st = (status_expr);                                                 \
    EXPECT_TRUE(_st.isOk()) << _st.message();                                                      \
  } while (0)

#define ASSERT_KERNEL_OK(status_expr)                                                              \
  do {                                                                                             \
    ::shardc::runtime::Status _st = (status_expr);                                                 \
    ASSERT_TRUE(_st.isOk()) << _st.message();                                                      \
  } while (0)

// ---- naive references -----------------------------------------------------------------------

inline int64_t numelOf(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

// Multi-index of flat row-major position `flat` in `shape`.
inline std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t> &shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

// Flat row-major position of `index` in `shape`.
inline int64_t ravel(const std::vector<int64_t> &index, const std::vector<int64_t> &shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    flat = flat * shape[d] + index[d];
  return flat;
}

// Entries [begin, begin + size) along dimension `axis` of a row-major tensor of `shape`: the
// block of it that one device holds when that dimension is split.
template <typename T>
std::vector<T> sliceAlong(const std::vector<T> &values, const std::vector<int64_t> &shape,
                          size_t axis, int64_t begin, int64_t size) {
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d)
    outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d)
    inner *= shape[d];
  std::vector<T> out;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = begin * inner; i < (begin + size) * inner; ++i)
      out.push_back(values[static_cast<size_t>(o * shape[axis] * inner + i)]);
  return out;
}

// Flat position in an input of `inShape` read by output multi-index `outIndex` under NumPy
// broadcasting (dims aligned right, size-1 dims read index 0).
inline int64_t broadcastSource(const std::vector<int64_t> &outIndex,
                               const std::vector<int64_t> &inShape) {
  const size_t lead = outIndex.size() - inShape.size();
  std::vector<int64_t> inIndex(inShape.size());
  for (size_t d = 0; d < inShape.size(); ++d)
    inIndex[d] = inShape[d] == 1 ? 0 : outIndex[lead + d];
  return ravel(inIndex, inShape);
}

// Deterministic pseudo-random test data.
inline std::vector<float> randomFloats(int64_t n, float lo, float hi, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float &x : v)
    x = dist(gen);
  return v;
}

template <typename T> std::vector<T> randomInts(int64_t n, int64_t lo, int64_t hi, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int64_t> dist(lo, hi);
  std::vector<T> v(static_cast<size_t>(n));
  for (T &x : v)
    x = static_cast<T>(dist(gen));
  return v;
}

// Test values of type T: floats in [lo, hi], integers in the same range.
template <typename T> std::vector<T> randomValues(int64_t n, int lo, int hi, unsigned seed) {
  if constexpr (std::is_floating_point_v<T>) {
    std::vector<float> f = randomFloats(n, static_cast<float>(lo), static_cast<float>(hi), seed);
    return std::vector<T>(f.begin(), f.end());
  } else {
    return randomInts<T>(n, lo, hi, seed);
  }
}

// Element-by-element comparison; NaN matches NaN; `relTol` is relative to max(1, |expected|).
template <typename T>
void expectValuesNear(const std::vector<T> &actual, const std::vector<T> &expected,
                      double relTol = 0.0) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(expected[i])) {
        EXPECT_TRUE(std::isnan(actual[i])) << "at " << i << ": " << actual[i] << " vs NaN";
        continue;
      }
      if (std::isinf(expected[i])) {
        EXPECT_EQ(actual[i], expected[i]) << "at " << i;
        continue;
      }
      const double tol = relTol * std::max(1.0, std::fabs(static_cast<double>(expected[i])));
      EXPECT_NEAR(actual[i], expected[i], tol) << "at " << i;
    } else {
      EXPECT_EQ(actual[i], expected[i]) << "at " << i;
    }
  }
}

} // namespace shardc::runtime::testing
