// The kernels' vectorised and threaded paths (vector_dispatch.h, kernel_threads.h): parallelFor's
// ranges and, for every kernel that splits its work over threads or runs its loops at the CPU's
// vector level, the same bits at one thread on the baseline loops as at two threads on the
// widest loops this CPU has. The tensors are large enough (>= 2 x kElementsPerThread) for the
// threads to take part.
#include "runtime/kernels/cpu/kernel_threads.h"
#include "runtime/kernels/cpu/vector_dispatch.h"
#include "runtime/kernels/fused_elementwise_code.h"
#include "tests/unit/kernels/fused_program.h"
#include "tests/unit/kernels/test_support.h"

#include <atomic>
#include <cstring>
#include <functional>
#include <limits>
#include <mutex>
#include <thread>

namespace shardc::runtime::testing {
namespace {

using program::F32;

// Restores the kernels' thread count and vector level after a test changes them.
struct KernelSettings {
  ~KernelSettings() {
    setCpuKernelThreads(std::max(1u, std::thread::hardware_concurrency()));
    cpu::capCpuVectorLevel(cpu::VectorLevel::Avx512);
  }
};

TEST(ParallelFor, CoversEveryItemOnceInRangesOfAtLeastTheGrain) {
  KernelSettings restore;
  for (int threads : {1, 2, 3, 8}) {
    setCpuKernelThreads(threads);
    for (int64_t count : {0, 1, 99, 100, 101, 1000, 12345}) {
      std::vector<std::atomic<int>> seen(static_cast<size_t>(count));
      std::mutex mutex;
      std::vector<std::pair<int64_t, int64_t>> ranges;
      cpu::parallelFor(count, 50, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
          seen[static_cast<size_t>(i)]++;
        std::lock_guard<std::mutex> lock(mutex);
        ranges.emplace_back(begin, end);
      });
      for (int64_t i = 0; i < count; ++i)
        ASSERT_EQ(seen[static_cast<size_t>(i)].load(), 1) << "item " << i << " of " << count;
      EXPECT_LE(static_cast<int>(ranges.size()), std::max(threads, 1));
      if (ranges.size() > 1)
        for (const auto &[begin, end] : ranges)
          EXPECT_GE(end - begin, 50) << threads << " threads, " << count << " items";
    }
  }
}

TEST(ParallelFor, ANestedCallRunsOnItsCallersThread) {
  KernelSettings restore;
  setCpuKernelThreads(2);
  std::atomic<int64_t> total{0};
  cpu::parallelFor(1000, 100, [&](int64_t begin, int64_t end) {
    const std::thread::id outer = std::this_thread::get_id();
    cpu::parallelFor(end - begin, 10, [&](int64_t b, int64_t e) {
      EXPECT_EQ(std::this_thread::get_id(), outer);
      total += e - b;
    });
  });
  EXPECT_EQ(total.load(), 1000);
}

TEST(ParallelFor, CallsFromManyThreadsAtOnceAllComplete) {
  // Ranks of one process training side by side share the pool; a call that finds it busy
  // runs on its own thread.
  KernelSettings restore;
  setCpuKernelThreads(2);
  std::vector<std::thread> callers;
  std::atomic<int64_t> total{0};
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      for (int round = 0; round < 200; ++round)
        cpu::parallelFor(1000, 10, [&](int64_t b, int64_t e) { total += e - b; });
    });
  for (std::thread &t : callers)
    t.join();
  EXPECT_EQ(total.load(), 4 * 200 * 1000);
}

// The bits of every output of `run` at one thread on the baseline loops, then at two threads
// on this CPU's widest loops: they must be equal.
void expectSameBitsOnEveryPath(const std::string &what,
                               const std::function<std::vector<HostTensor>()> &run) {
  KernelSettings restore;
  setCpuKernelThreads(1);
  cpu::capCpuVectorLevel(cpu::VectorLevel::Baseline);
  const std::vector<HostTensor> reference = run();
  setCpuKernelThreads(2);
  cpu::capCpuVectorLevel(cpu::VectorLevel::Avx512);
  SCOPED_TRACE(what + " on " + cpu::cpuVectorPath() + ", 2 threads");
  const std::vector<HostTensor> widest = run();
  ASSERT_EQ(reference.size(), widest.size());
  for (size_t j = 0; j < reference.size(); ++j) {
    const Tensor &a = reference[j].view(), &b = widest[j].view();
    ASSERT_EQ(a.sizeBytes(), b.sizeBytes());
    const auto *pa = static_cast<const unsigned char *>(a.data);
    const auto *pb = static_cast<const unsigned char *>(b.data);
    size_t first = a.sizeBytes();
    for (size_t i = 0; i < a.sizeBytes() && first == a.sizeBytes(); ++i)
      if (pa[i] != pb[i])
        first = i;
    EXPECT_EQ(first, a.sizeBytes()) << "output " << j << " differs from byte " << first;
  }
}

constexpr int64_t kRows = 300, kCols = 1000; // 300k elements: both threads take part

TEST(VectorAndThreadPaths, FusedGeluChainWithBroadcastInputs) {
  const HostTensor x = HostTensor::of<float>({kRows, kCols}, randomFloats(kRows * kCols, -6, 6, 1));
  const HostTensor bias = HostTensor::of<float>({kCols}, randomFloats(kCols, -1, 1, 2));
  const HostTensor column = HostTensor::of<float>({kRows, 1}, randomFloats(kRows, -1, 1, 3));
  const HostTensor half = HostTensor::scalar(0.5f), invSqrt2 = HostTensor::scalar(0.70710678f);
  using runtime::FusedOp;
  // y = (x + bias); g = 0.5 y (1 + erf(y / sqrt 2)); out = tanh(g) * column, exp(-g)
  const std::vector<int64_t> code = {
      int64_t(FusedOp::Add), 0, 1,  // 5: y
      int64_t(FusedOp::Mul), 5, 4,  // 6: y / sqrt 2
      int64_t(FusedOp::Erf), 6, -1, // 7
      int64_t(FusedOp::Mul), 7, 3,  // 8: erf * 0.5
      int64_t(FusedOp::Add), 8, 3,  // 9: + 0.5
      int64_t(FusedOp::Mul), 9, 5,  // 10: g
      int64_t(FusedOp::Tanh), 10, -1, // 11
      int64_t(FusedOp::Mul), 11, 2, // 12
      int64_t(FusedOp::Neg), 10, -1, // 13
      int64_t(FusedOp::Exp), 13, -1, // 14
  };
  const Attrs attrs = encodeFusedProgram(code, {12, 14});
  expectSameBitsOnEveryPath("fused_elementwise", [&] {
    std::vector<HostTensor> out;
    out.emplace_back(F32, std::vector<int64_t>{kRows, kCols});
    out.emplace_back(F32, std::vector<int64_t>{kRows, kCols});
    EXPECT_KERNEL_OK(runKernel("fused_elementwise", {x, bias, column, half, invSqrt2},
                               {out[0], out[1]}, attrs));
    return out;
  });
}

TEST(VectorAndThreadPaths, UnaryGeluAndItsGradient) {
  const HostTensor x = HostTensor::of<float>({kRows, kCols}, randomFloats(kRows * kCols, -8, 8, 4));
  const HostTensor dy = HostTensor::of<float>({kRows, kCols}, randomFloats(kRows * kCols, -1, 1, 5));
  for (const char *form : {"none", "tanh"}) {
    expectSameBitsOnEveryPath(std::string("gelu ") + form, [&] {
      std::vector<HostTensor> out;
      out.emplace_back(F32, std::vector<int64_t>{kRows, kCols});
      out.emplace_back(F32, std::vector<int64_t>{kRows, kCols});
      EXPECT_KERNEL_OK(runKernel("gelu", {x}, {out[0]}, Attrs().s("approximate", form)));
      EXPECT_KERNEL_OK(
          runKernel("gelu_grad", {dy, x}, {out[1]}, Attrs().s("approximate", form)));
      return out;
    });
  }
  for (const char *kernel : {"tanh", "erf", "exp", "sigmoid", "sqrt"}) {
    const HostTensor positive =
        HostTensor::of<float>({kRows, kCols}, randomFloats(kRows * kCols, 0, 8, 6));
    expectSameBitsOnEveryPath(kernel, [&] {
      std::vector<HostTensor> out;
      out.emplace_back(F32, std::vector<int64_t>{kRows, kCols});
      EXPECT_KERNEL_OK(runKernel(kernel, {std::string(kernel) == "sqrt" ? positive : x},
                                 {out[0]}));
      return out;
    });
  }
}

TEST(VectorAndThreadPaths, BroadcastBinaryTransposeAndCopy) {
  const HostTensor a = HostTensor::of<float>({kRows, kCols}, randomFloats(kRows * kCols, -3, 3, 7));
  const HostTensor b = HostTensor::of<float>({kRows, 1}, randomFloats(kRows, -3, 3, 8));
  expectSameBitsOnEveryPath("div, transpose, copy, slice", [&] {
    std::vector<HostTensor> out;
    out.emplace_back(F32, std::vector<int64_t>{kRows, kCols});
    out.emplace_back(F32, std::vector<int64_t>{kCols, kRows});
    out.emplace_back(F32, std::vector<int64_t>{kRows, kCols});
    out.emplace_back(F32, std::vector<int64_t>{kRows, kCols / 2});
    EXPECT_KERNEL_OK(runKernel("div", {a, b}, {out[0]}));
    EXPECT_KERNEL_OK(runKernel("transpose", {out[0]}, {out[1]}, Attrs().ints("perm", {1, 0})));
    EXPECT_KERNEL_OK(runKernel("copy", {out[0]}, {out[2]}));
    EXPECT_KERNEL_OK(runKernel("slice", {a}, {out[3]},
                               Attrs().ints("starts", {0, 1}).ints("steps", {1, 2})));
    return out;
  });
}

TEST(VectorAndThreadPaths, SoftmaxCrossEntropyAndTheirGradients) {
  const int64_t n = 256, c = 1024;
  const HostTensor scores = HostTensor::of<float>({n, c}, randomFloats(n * c, -10, 10, 9));
  const HostTensor dprobs = HostTensor::of<float>({n, c}, randomFloats(n * c, -1, 1, 10));
  const HostTensor labels = HostTensor::of<int64_t>({n}, randomInts<int64_t>(n, 0, c - 1, 11));
  expectSameBitsOnEveryPath("softmax, softmax_cross_entropy_loss and their gradients", [&] {
    std::vector<HostTensor> out;
    out.emplace_back(F32, std::vector<int64_t>{n, c}); // softmax
    out.emplace_back(F32, std::vector<int64_t>{n, c}); // softmax_grad
    out.emplace_back(F32, std::vector<int64_t>{});     // loss
    out.emplace_back(F32, std::vector<int64_t>{n, c}); // log_prob
    out.emplace_back(F32, std::vector<int64_t>{n, c}); // dscores
    EXPECT_KERNEL_OK(runKernel("softmax", {scores}, {out[0]}, Attrs().i("axis", 1)));
    EXPECT_KERNEL_OK(runKernel("softmax_grad", {dprobs, out[0]}, {out[1]}, Attrs().i("axis", 1)));
    const Attrs loss = Attrs().s("reduction", "mean").i("has_ignore_index", 0);
    EXPECT_KERNEL_OK(runKernel("softmax_cross_entropy_loss", {scores, labels}, {out[2], out[3]},
                               loss));
    EXPECT_KERNEL_OK(runKernel("softmax_cross_entropy_loss_grad",
                               {HostTensor::scalar(1.0f), out[3], labels}, {out[4]}, loss));
    return out;
  });
}

// The products split into bands of rows (or columns, for few rows) over the threads, and a
// batch of products one per thread (blas.cpp, matmul.cpp): every element is the sum the whole
// single-threaded call forms, so the bits are those of one thread.
TEST(VectorAndThreadPaths, MatmulAndGemmBandsAndBatches) {
  struct Case {
    std::vector<int64_t> a, b, y;
    int64_t transA, transB;
  };
  const std::vector<Case> cases = {
      {{300, 200}, {200, 170}, {300, 170}, 0, 0}, // bands of rows
      {{200, 300}, {170, 200}, {300, 170}, 1, 1}, // the same, both read transposed
      {{20, 300}, {300, 700}, {20, 700}, 0, 0},   // few rows: bands of columns
      {{300, 20}, {700, 300}, {20, 700}, 1, 1},
      {{2, 150, 96}, {96, 130}, {2, 150, 130}, 0, 0},   // one tall product
      {{6, 64, 48}, {6, 80, 48}, {6, 64, 80}, 0, 1},    // a batch: one product per thread
      {{6, 48, 64}, {1, 48, 80}, {6, 64, 80}, 1, 0},    // broadcast b
  };
  unsigned seed = 90;
  for (const Case &c : cases) {
    const HostTensor a = HostTensor::of<float>(c.a, randomFloats(numelOf(c.a), -1, 1, seed++));
    const HostTensor b = HostTensor::of<float>(c.b, randomFloats(numelOf(c.b), -1, 1, seed++));
    Attrs attrs;
    attrs.i("trans_lhs", c.transA).i("trans_rhs", c.transB);
    expectSameBitsOnEveryPath("matmul " + std::to_string(seed), [&] {
      std::vector<HostTensor> out;
      out.emplace_back(F32, c.y);
      EXPECT_KERNEL_OK(runKernel("matmul", {a, b}, {out[0]}, attrs));
      return out;
    });
    if (c.a.size() != 2)
      continue;
    const int64_t n = c.y[1];
    const HostTensor bias = HostTensor::of<float>({n}, randomFloats(n, -1, 1, seed++));
    Attrs gemmAttrs;
    gemmAttrs.f("alpha", 0.5f).f("beta", 2.0f).i("trans_a", c.transA).i("trans_b", c.transB);
    expectSameBitsOnEveryPath("gemm " + std::to_string(seed), [&] {
      std::vector<HostTensor> out;
      out.emplace_back(F32, c.y);
      EXPECT_KERNEL_OK(runKernel("gemm", {a, b, bias}, {out[0]}, gemmAttrs));
      return out;
    });
  }
}

TEST(VectorAndThreadPaths, AdamwAndSgdUpdatesInPlace) {
  const int64_t n = kRows * kCols;
  const std::vector<float> p = randomFloats(n, -1, 1, 12), g = randomFloats(n, -1, 1, 13);
  const std::vector<float> m = randomFloats(n, -0.1f, 0.1f, 14), v = randomFloats(n, 0, 0.1f, 15);
  expectSameBitsOnEveryPath("adamw_update and sgd_update, outputs over their inputs", [&] {
    std::vector<HostTensor> out;
    out.push_back(HostTensor::of<float>({n}, p));
    out.push_back(HostTensor::of<float>({n}, m));
    out.push_back(HostTensor::of<float>({n}, v));
    out.push_back(HostTensor::of<float>({n}, p));
    out.push_back(HostTensor::of<float>({n}, m));
    const HostTensor grad = HostTensor::of<float>({n}, g);
    EXPECT_KERNEL_OK(runKernel("adamw_update",
                               {out[0], grad, out[1], out[2], HostTensor::scalar<int64_t>(3),
                                HostTensor::scalar(1e-3f)},
                               {out[0], out[1], out[2]},
                               Attrs().f("beta1", 0.9f).f("beta2", 0.999f).f("eps", 1e-8f)
                                   .f("weight_decay", 0.01f)));
    EXPECT_KERNEL_OK(runKernel("sgd_update",
                               {out[3], grad, out[4], HostTensor::scalar<int64_t>(3),
                                HostTensor::scalar(0.1f)},
                               {out[3], out[4]},
                               Attrs().f("momentum", 0.9f).f("dampening", 0.0f)
                                   .f("weight_decay", 0.01f).i("nesterov", 1)));
    return out;
  });
}

} // namespace
} // namespace shardc::runtime::testing
