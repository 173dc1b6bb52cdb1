// Native bf16 products on oneDNN's matmul primitive (onednn_matmul.h).
//
// oneDNN (Debian's libdnnl, built on OpenMP) would start a thread team per call; here every
// call runs on the thread that makes it, with an OpenMP team of one, and the product is split
// into bands over the kernel pool as sgemm is (blas.cpp), so no second set of threads spins
// beside the pool's. A primitive is created once per shape and thread (creating one costs far
// more than a small product) and kept in that thread's cache.
#include "runtime/kernels/cpu/onednn_matmul.h"

#include "runtime/kernels/cpu/blas.h"
#include "runtime/kernels/kernel.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <tuple>
#include <type_traits>

// libgomp's, the OpenMP runtime oneDNN runs on (omp.h is the compiler's, and clang's is
// another runtime's).
extern "C" void omp_set_num_threads(int threads);

namespace shardc::runtime::cpu {

namespace {

std::atomic<bool> nativeProducts{false};

using dnnl::memory;

// One band's shape: [m, k] x [k, n] with its transpositions and the leading dimensions of
// the whole operands it reads, and whether the call has alpha and beta.
struct BandKey {
  bool transA, transB;
  int64_t m, n, k, lda, ldb, ldy;
  float alpha, beta;
  bool bf16Result;
  bool operator<(const BandKey &o) const {
    return std::tie(transA, transB, m, n, k, lda, ldb, ldy, alpha, beta, bf16Result) <
           std::tie(o.transA, o.transB, o.m, o.n, o.k, o.lda, o.ldb, o.ldy, o.alpha, o.beta,
                    o.bf16Result);
  }
};

struct Band {
  memory::desc a, b, y;
  dnnl::matmul primitive;
};

// The engine, stream and primitives of the calling thread.
struct ThreadContext {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::map<BandKey, Band> bands;

  ThreadContext() { omp_set_num_threads(1); }

  const Band &band(const BandKey &key) {
    auto found = bands.find(key);
    if (found != bands.end())
      return found->second;
    // op(a)[m,k]: row-major with leading dimension lda, or its transpose (element (i, p) at
    // p * lda + i); likewise op(b)[k,n] and y[m,n].
    const memory::dims aStrides = key.transA ? memory::dims{1, key.lda} : memory::dims{key.lda, 1};
    const memory::dims bStrides = key.transB ? memory::dims{1, key.ldb} : memory::dims{key.ldb, 1};
    Band band;
    band.a = memory::desc({key.m, key.k}, memory::data_type::bf16, aStrides);
    band.b = memory::desc({key.k, key.n}, memory::data_type::bf16, bStrides);
    band.y = memory::desc({key.m, key.n},
                          key.bf16Result ? memory::data_type::bf16 : memory::data_type::f32,
                          memory::dims{key.ldy, 1});
    dnnl::primitive_attr attr;
    if (key.alpha != 1.0f)
      attr.set_output_scales(0, {key.alpha});
    if (key.beta != 0.0f) {
      dnnl::post_ops ops;
      ops.append_sum(key.beta);
      attr.set_post_ops(ops);
    }
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(band.a, band.b, band.y), attr, engine);
    band.primitive = dnnl::matmul(pd);
    return bands.emplace(key, std::move(band)).first->second;
  }
};

ThreadContext &threadContext() {
  thread_local ThreadContext context;
  return context;
}

Status runBand(const BandKey &key, const BFloat16 *a, const BFloat16 *b, void *y) {
  try {
    ThreadContext &context = threadContext();
    const Band &band = context.band(key);
    memory am(band.a, context.engine, const_cast<BFloat16 *>(a));
    memory bm(band.b, context.engine, const_cast<BFloat16 *>(b));
    memory ym(band.y, context.engine, y);
    band.primitive.execute(context.stream,
                           {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, ym}});
    context.stream.wait();
  } catch (const dnnl::error &e) {
    return Status::error("matmul: oneDNN bf16 product [" + std::to_string(key.m) + "x" +
                         std::to_string(key.k) + "]x[" + std::to_string(key.k) + "x" +
                         std::to_string(key.n) + "] failed: " + e.what());
  }
  return Status::ok();
}

// The bands of one product (see nativeBf16Gemm); Y is float or BFloat16.
template <typename Y>
Status runProduct(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha,
                  const BFloat16 *a, const BFloat16 *b, float beta, Y *y) {
  const bool bf16Result = std::is_same_v<Y, BFloat16>;
  const int64_t lda = transA ? m : k, ldb = transB ? k : n;
  std::mutex failureLock;
  Status failure = Status::ok();
  forEachGemmBand(m, n, k, [&](bool byRows, int64_t begin, int64_t end) {
    Status status = Status::ok();
    if (byRows) {
      // Row r of op(a) starts at a + r * lda, or at column r (a + r) when a is transposed.
      const BFloat16 *aBand = transA ? a + begin : a + begin * lda;
      status = runBand({transA, transB, end - begin, n, k, lda, ldb, n, alpha, beta, bf16Result},
                       aBand, b, y + begin * n);
    } else {
      // Column c of op(b) starts at b + c, or at row c (b + c * ldb) when b is transposed.
      const BFloat16 *bBand = transB ? b + begin * ldb : b + begin;
      status = runBand({transA, transB, m, end - begin, k, lda, ldb, n, alpha, beta, bf16Result},
                       a, bBand, y + begin);
    }
    if (!status.isOk()) {
      std::lock_guard<std::mutex> hold(failureLock);
      failure = status;
    }
  });
  return failure;
}

} // namespace

bool nativeBf16ProductsEnabled() { return nativeProducts.load(std::memory_order_relaxed); }

void forceNativeBf16ProductsForTesting(bool on) {
  nativeProducts.store(on, std::memory_order_relaxed);
}

std::string onednnCpuIsa() {
  switch (dnnl::get_effective_cpu_isa()) {
  case dnnl::cpu_isa::avx512_core_amx:
    return "avx512_core_amx";
  case dnnl::cpu_isa::avx512_core_bf16:
    return "avx512_core_bf16";
  case dnnl::cpu_isa::avx512_core_vnni:
    return "avx512_core_vnni";
  case dnnl::cpu_isa::avx512_core:
    return "avx512_core";
  case dnnl::cpu_isa::avx2_vnni:
    return "avx2_vnni";
  case dnnl::cpu_isa::avx2:
    return "avx2";
  default:
    return "older than avx2";
  }
}

Status nativeBf16Gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha,
                      const BFloat16 *a, const BFloat16 *b, float beta, float *y) {
  if (m == 0 || n == 0)
    return Status::ok();
  if (k == 0 || alpha == 0.0f) {
    for (int64_t i = 0; i < m * n; ++i)
      y[i] = beta == 0.0f ? 0.0f : beta * y[i];
    return Status::ok();
  }
  return runProduct(transA, transB, m, n, k, alpha, a, b, beta, y);
}

Status nativeBf16Gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                      const BFloat16 *a, const BFloat16 *b, BFloat16 *y) {
  if (m == 0 || n == 0)
    return Status::ok();
  if (k == 0) {
    std::fill(y, y + m * n, BFloat16{});
    return Status::ok();
  }
  return runProduct(transA, transB, m, n, k, 1.0f, a, b, 0.0f, y);
}

} // namespace shardc::runtime::cpu

namespace shardc::runtime {

bool cpuHasNativeBf16Products() {
  // oneDNN's ISA values are sets of feature bits; AMX's include AVX512-BF16's.
  const unsigned bf16 = dnnl_cpu_isa_avx512_core_bf16;
  return (static_cast<unsigned>(dnnl::get_effective_cpu_isa()) & bf16) == bf16;
}

Status setCpuBf16Products(Bf16Products products) {
  if (products == Bf16Products::Native && !cpuHasNativeBf16Products())
    return Status::error("native bf16 products need a CPU with AVX512-BF16 or AMX; oneDNN "
                         "runs this one as " +
                         cpu::onednnCpuIsa());
  cpu::nativeProducts.store(products == Bf16Products::Native, std::memory_order_relaxed);
  return Status::ok();
}

} // namespace shardc::runtime
