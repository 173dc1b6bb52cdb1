// Which vectorised version of the loops this CPU runs (vector_dispatch.h).
#include "runtime/kernels/cpu/vector_dispatch.h"

#include "runtime/kernels/cpu/kernel_threads.h"
#include "runtime/kernels/cpu/onednn_matmul.h"
#include "runtime/kernels/kernel.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <string>

namespace shardc::runtime::cpu {

namespace {

VectorLevel detectedLevel() {
  static const VectorLevel level = [] {
#ifdef SHARDC_VECTOR_DISPATCH
    if (__builtin_cpu_supports("avx512f"))
      return VectorLevel::Avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
      return VectorLevel::Avx2;
#endif
    return VectorLevel::Baseline;
  }();
  return level;
}

std::atomic<int> levelCap{static_cast<int>(VectorLevel::Avx512)};

} // namespace

VectorLevel cpuVectorLevel() {
  const auto cap = static_cast<VectorLevel>(levelCap.load(std::memory_order_relaxed));
  return std::min(detectedLevel(), cap);
}

void capCpuVectorLevel(VectorLevel level) {
  levelCap.store(static_cast<int>(level), std::memory_order_relaxed);
}

const char *cpuVectorPath() {
  switch (cpuVectorLevel()) {
  case VectorLevel::Avx512:
    return "avx512f";
  case VectorLevel::Avx2:
    return "avx2";
  case VectorLevel::Baseline:
    break;
  }
  return "baseline";
}

} // namespace shardc::runtime::cpu

namespace shardc::runtime {

std::string cpuKernelPaths() {
  const int threads = cpu::cpuKernelThreads();
  // The kernels OpenBLAS runs are its choice for this CPU, or what OPENBLAS_CORETYPE names.
  // Products of two bf16 operands run natively on oneDNN when the run chose that (matmul.cpp);
  // every other 16-bit operand is widened into f32.
  const char *core = openblas_get_corename();
  const std::string bf16 =
      cpu::nativeBf16ProductsEnabled()
          ? "; bf16 x bf16 products native on oneDNN (" + cpu::onednnCpuIsa() + ")"
          : std::string("; no native bf16 products (") +
                (cpuHasNativeBf16Products() ? "not chosen" : "oneDNN: " + cpu::onednnCpuIsa()) +
                ")";
  return std::string(cpu::cpuVectorPath()) + " loops, " + std::to_string(threads) + " thread" +
         (threads == 1 ? "" : "s") + ", GEMMs in f32 on OpenBLAS (" +
         (core != nullptr ? core : "unknown") + " kernels; 16-bit operands widened exactly)" +
         bf16;
}

} // namespace shardc::runtime
