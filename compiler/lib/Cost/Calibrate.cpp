//===- Calibrate.cpp --------------------------------------------------------------------===//
#include "shardc/Cost/Calibrate.h"

#include "runtime/comm/local/local_comm.h"
#include "runtime/kernels/kernel.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <thread>
#include <unistd.h>
#include <vector>

namespace shardc::cost {

namespace {

using Clock = std::chrono::steady_clock;
using runtime::KernelArgs;
using runtime::Status;
using runtime::Tensor;

// The median of `runs` timings of `work`, each repeated until it takes at least 20 ms.
template <typename Work> double secondsPerCall(Work work, int runs = 5) {
  std::vector<double> samples;
  int repeats = 1;
  for (;;) {
    const auto start = Clock::now();
    for (int i = 0; i < repeats; ++i)
      work();
    const double t = std::chrono::duration<double>(Clock::now() - start).count();
    if (t >= 0.02 || repeats > (1 << 20))
      break;
    repeats *= 2;
  }
  for (int r = 0; r < runs; ++r) {
    const auto start = Clock::now();
    for (int i = 0; i < repeats; ++i)
      work();
    samples.push_back(std::chrono::duration<double>(Clock::now() - start).count() / repeats);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

struct Buffers {
  std::vector<std::vector<unsigned char>> store;
  Tensor make(runtime::DType dtype, std::vector<int64_t> shape) {
    Tensor t;
    t.dtype = dtype;
    t.shape = std::move(shape);
    store.emplace_back(t.sizeBytes() + 64, 0);
    t.data = store.back().data();
    return t;
  }
};

// Seconds of one kernel call on `inputs` -> `outputs`, or -1 with `error`.
double timeKernel(const char *name, std::vector<Tensor> inputs, std::vector<Tensor> outputs,
                  std::string &error) {
  runtime::KernelFn kernel = runtime::findCpuKernel(name);
  if (!kernel) {
    error = std::string("calibrate: no CPU kernel '") + name + "'";
    return -1;
  }
  static const runtime::AttrMap noAttrs;
  KernelArgs args;
  args.inputs = std::move(inputs);
  args.outputs = std::move(outputs);
  args.attrs = &noAttrs;
  uint64_t workspace = 0;
  Status st = runtime::cpuKernelWorkspaceBytes(name, args, &workspace);
  if (!st.isOk()) {
    error = std::string("calibrate: ") + name + ": " + st.message();
    return -1;
  }
  std::vector<unsigned char> scratch(workspace + 64);
  args.workspace = reinterpret_cast<void *>(
      (reinterpret_cast<uintptr_t>(scratch.data()) + 63) & ~uintptr_t(63));
  args.workspaceBytes = workspace;
  st = kernel(args);
  if (!st.isOk()) {
    error = std::string("calibrate: ") + name + ": " + st.message();
    return -1;
  }
  return secondsPerCall([&] { (void)kernel(args); });
}

double matmulSeconds(int64_t n, runtime::DType operands, std::string &error) {
  Buffers b;
  Tensor a = b.make(operands, {n, n}), w = b.make(operands, {n, n});
  Tensor y = b.make(program::F32, {n, n});
  return timeKernel("matmul", {a, w}, {y}, error);
}

// The ring all-reduce between 2 local ranks (threads) of `count` floats.
double allReduceSeconds(size_t count, std::string &error) {
  std::vector<std::unique_ptr<runtime::Communicator>> comms;
  Status st = runtime::createLocalWorld(2, runtime::CommOptions(), &comms);
  if (!st.isOk()) {
    error = "calibrate: " + st.message();
    return -1;
  }
  std::vector<std::vector<float>> data(2, std::vector<float>(count, 1.0f));
  auto once = [&] {
    std::thread other([&] { (void)comms[1]->allReduceSum(data[1].data(), count); });
    (void)comms[0]->allReduceSum(data[0].data(), count);
    other.join();
  };
  return secondsPerCall(once);
}

} // namespace

bool calibrateCpu(Cluster &out, std::vector<std::string> &log, std::string &error) {
  runtime::setCpuKernelThreads(1);
  char line[200];
  // Matrix products: the rate at each size, then the efficiency curve's fit.
  const std::vector<int64_t> sizes = {32, 64, 128, 256, 512, 1024};
  std::vector<double> rates;
  for (int64_t n : sizes) {
    const double t = matmulSeconds(n, program::F32, error);
    if (t < 0)
      return false;
    rates.push_back(2.0 * n * n * n / t);
    std::snprintf(line, sizeof line, "matmul f32 %lldx%lldx%lld: %.3f ms, %.2f GFLOP/s",
                  static_cast<long long>(n), static_cast<long long>(n), static_cast<long long>(n),
                  t * 1e3, rates.back() / 1e9);
    log.push_back(line);
  }
  // rate(n) = peak (n / (n + h))^3: the h (and peak) with the least squared log error.
  double bestH = 0, bestPeak = rates.back(), bestError = INFINITY;
  for (double h = 0; h <= 512; h += 1) {
    double sum = 0;
    for (size_t i = 0; i < sizes.size(); ++i)
      sum += std::log(rates[i]) - 3 * std::log(sizes[i] / (sizes[i] + h));
    const double logPeak = sum / static_cast<double>(sizes.size());
    double err = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      const double d = std::log(rates[i]) - logPeak - 3 * std::log(sizes[i] / (sizes[i] + h));
      err += d * d;
    }
    if (err < bestError) {
      bestError = err;
      bestH = h;
      bestPeak = std::exp(logPeak);
    }
  }
  const double bf16 = matmulSeconds(512, program::BF16, error);
  if (bf16 < 0)
    return false;
  const double f32At512 = 2.0 * 512 * 512 * 512 / rates[4];
  std::snprintf(line, sizeof line,
                "matmul bf16 operands 512^3: %.3f ms (%.2fx f32's); fit: peak %.2f GFLOP/s, "
                "half_dim %.0f (rms log error %.3f)",
                bf16 * 1e3, bf16 / f32At512, bestPeak / 1e9, bestH,
                std::sqrt(bestError / static_cast<double>(sizes.size())));
  log.push_back(line);

  // Memory bandwidth: y = a + b on arrays far larger than the caches.
  const int64_t elements = int64_t(1) << 25; // 128 MiB per array
  Buffers b;
  Tensor x1 = b.make(program::F32, {elements}), x2 = b.make(program::F32, {elements});
  Tensor y = b.make(program::F32, {elements});
  const double add = timeKernel("add", {x1, x2}, {y}, error);
  if (add < 0)
    return false;
  const double bandwidth = 3.0 * 4 * static_cast<double>(elements) / add;
  Tensor s1 = b.make(program::F32, {16}), s2 = b.make(program::F32, {16});
  Tensor sy = b.make(program::F32, {16});
  const double tiny = timeKernel("add", {s1, s2}, {sy}, error);
  if (tiny < 0)
    return false;
  std::snprintf(line, sizeof line, "add of 3 x 128 MiB: %.2f ms, %.2f GB/s; add of 16 floats: %.2f us",
                add * 1e3, bandwidth / 1e9, tiny * 1e6);
  log.push_back(line);

  // Element-wise work that computes (one FLOP per element as CostOpInterface counts it): exp
  // and erf on 4M floats, the mean of their rates.
  const int64_t many = int64_t(1) << 22;
  Tensor ex = b.make(program::F32, {many}), ey = b.make(program::F32, {many});
  double elementwise = 0;
  for (const char *kernel : {"exp", "erf"}) {
    const double t = timeKernel(kernel, {ex}, {ey}, error);
    if (t < 0)
      return false;
    elementwise += static_cast<double>(many) / t / 2;
  }
  // The bandwidth each core gets when every core streams at once.
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  double loaded = bandwidth;
  if (cores > 1) {
    std::vector<Buffers> perCore(cores);
    std::vector<std::vector<Tensor>> arrays(cores);
    for (unsigned k = 0; k < cores; ++k)
      for (int i = 0; i < 3; ++i)
        arrays[k].push_back(perCore[k].make(program::F32, {elements / 2}));
    std::vector<double> seconds(cores, 0);
    std::vector<std::string> errors(cores);
    std::vector<std::thread> threads;
    for (unsigned k = 0; k < cores; ++k)
      threads.emplace_back([&, k] {
        seconds[k] = timeKernel("add", {arrays[k][0], arrays[k][1]}, {arrays[k][2]}, errors[k]);
      });
    for (std::thread &t : threads)
      t.join();
    double slowest = 0;
    for (unsigned k = 0; k < cores; ++k) {
      if (seconds[k] < 0) {
        error = errors[k];
        return false;
      }
      slowest = std::max(slowest, seconds[k]);
    }
    loaded = 3.0 * 4 * static_cast<double>(elements / 2) / slowest;
  }
  std::snprintf(line, sizeof line,
                "exp and erf on 4M floats: %.2f G elements/s; add on every one of %u cores at "
                "once: %.2f GB/s per core",
                elementwise / 1e9, cores, loaded / 1e9);
  log.push_back(line);

  // The local ranks' link: a ring all-reduce between 2 threads.
  const size_t big = size_t(1) << 22; // 16 MiB of floats
  const double reduceBig = allReduceSeconds(big, error);
  const double reduceTiny = reduceBig < 0 ? -1 : allReduceSeconds(1, error);
  if (reduceTiny < 0)
    return false;
  // 2 ranks: the ring sends half the buffer twice in 2 steps.
  const double latency = reduceTiny / 2;
  const double linkBandwidth = 4.0 * static_cast<double>(big) / std::max(reduceBig - 2 * latency, 1e-9);
  std::snprintf(line, sizeof line,
                "all-reduce between 2 local ranks: 16 MiB in %.2f ms (%.2f GB/s), 4 bytes in "
                "%.2f us",
                reduceBig * 1e3, linkBandwidth / 1e9, reduceTiny * 1e6);
  log.push_back(line);

  Cluster c;
  c.name = "cpu";
  c.source = "measured by shardc calibrate (one thread per rank)";
  c.devicesPerNode = 64; // local ranks: all on this machine
  c.nodes = 1;
  c.coresPerNode = static_cast<int>(cores);
  c.device.name = "cpu-rank (1 thread)";
  c.device.memoryBytes = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) *
                         static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  c.device.peakFlopsF32 = bestPeak;
  c.device.peakFlopsBf16 = bestPeak * f32At512 / bf16;
  c.device.memoryBandwidth = bandwidth;
  c.device.memoryEfficiency = 1.0;
  c.device.kernelSeconds = tiny;
  c.device.elementwiseFlops = elementwise;
  c.device.loadedMemoryBandwidth = loaded;
  c.device.gemm = {1.0, bestH};
  c.intraNode = {linkBandwidth, latency};
  c.interNode = c.intraNode;
  out = c;
  return true;
}

} // namespace shardc::cost
