// The GEMM engines the CPU runtime could use, side by side on the product shapes of
// train_throughput.py's two rows: OpenBLAS sgemm (what the f32 kernels run), oneDNN's f32 matmul,
// and oneDNN's bf16 matmul (what `shardrun --bf16-products native` runs; on a CPU without
// AVX512-BF16 or AMX oneDNN emulates it, which the output says). Each linear layer of a step
// runs three products: the forward one (x [M, in] times w [in, out]), the input gradient
// (dy times w transposed) and the weight gradient (x transposed times dy); each is timed in
// that layout, one thread, engines interleaved, median of --repeats.
//
//   gemm_engines [--row small|gpt2] [--repeats N]
//
// Not a test: timings on a shared machine are noisy.
#include <oneapi/dnnl/dnnl.hpp>

#include <CLI/CLI.hpp>
#include <cblas.h>
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

extern "C" void omp_set_num_threads(int threads);

namespace {

struct Product {
  int64_t m, n, k;
  bool transA, transB;
  const char *what;
};

// The three products of each linear layer [in -> out] over `rows` rows.
std::vector<Product> productsOf(const std::string &row) {
  const bool small = row == "small";
  const int64_t rows = small ? 2048 : 512, d = small ? 192 : 768, vocab = small ? 4096 : 50257;
  const std::vector<std::pair<int64_t, int64_t>> layers = {
      {d, 3 * d}, {d, d}, {d, 4 * d}, {4 * d, d}, {d, vocab}};
  std::vector<Product> products;
  for (auto [in, out] : layers) {
    products.push_back({rows, out, in, false, false, "forward"});
    products.push_back({rows, in, out, false, true, "input grad"});
    products.push_back({in, out, rows, true, false, "weight grad"});
  }
  return products;
}

uint16_t toBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

double elapsedMs(const std::function<void()> &run) {
  const auto start = std::chrono::steady_clock::now();
  run();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app("GEMM engines side by side on train_throughput.py's product shapes");
  std::string row = "small";
  int repeats = 5;
  app.add_option("--row", row, "small or gpt2")->check(CLI::IsMember({"small", "gpt2"}));
  app.add_option("--repeats", repeats, "timed runs of each product")->check(CLI::Range(1, 100));
  CLI11_PARSE(app, argc, argv);

  omp_set_num_threads(1);
  openblas_set_num_threads(1);
  using dnnl::memory;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const unsigned bf16Bits = dnnl_cpu_isa_avx512_core_bf16;
  const bool nativeBf16 =
      (static_cast<unsigned>(dnnl::get_effective_cpu_isa()) & bf16Bits) == bf16Bits;
  fmt::print("row {}; one thread; OpenBLAS {} kernels; oneDNN {}.{}.{}, bf16 {}\n", row,
             openblas_get_corename(), dnnl_version()->major, dnnl_version()->minor,
             dnnl_version()->patch, nativeBf16 ? "native" : "emulated (no AVX512-BF16 or AMX)");
  fmt::print("{:>6} {:>6} {:>6} {:<12} {:>10} {:>10} {:>10} {:>8} {:>8}\n", "M", "N", "K", "product",
             "openblas", "onednn f32", "onednn bf16", "f32 x", "bf16 x");
  double total[3] = {0, 0, 0};
  std::mt19937 random(1);
  std::normal_distribution<float> normal;
  for (const Product &p : productsOf(row)) {
    std::vector<float> a(p.m * p.k), b(p.k * p.n), y(p.m * p.n);
    for (float &v : a)
      v = normal(random);
    for (float &v : b)
      v = normal(random);
    std::vector<uint16_t> a16(a.size()), b16(b.size());
    std::transform(a.begin(), a.end(), a16.begin(), toBf16);
    std::transform(b.begin(), b.end(), b16.begin(), toBf16);
    const int64_t lda = p.transA ? p.m : p.k, ldb = p.transB ? p.k : p.n;
    auto desc = [&](memory::data_type type) {
      memory::desc ad({p.m, p.k}, type, p.transA ? memory::dims{1, lda} : memory::dims{lda, 1});
      memory::desc bd({p.k, p.n}, type, p.transB ? memory::dims{1, ldb} : memory::dims{ldb, 1});
      memory::desc yd({p.m, p.n}, memory::data_type::f32, memory::dims{p.n, 1});
      return dnnl::matmul::primitive_desc(dnnl::matmul::desc(ad, bd, yd), engine);
    };
    auto f32Pd = desc(memory::data_type::f32), bf16Pd = desc(memory::data_type::bf16);
    dnnl::matmul f32(f32Pd), bf16(bf16Pd);
    auto runOnednn = [&](dnnl::matmul &primitive, const dnnl::matmul::primitive_desc &pd,
                         void *pa, void *pb) {
      memory am(pd.src_desc(), engine, pa), bm(pd.weights_desc(), engine, pb),
          ym(pd.dst_desc(), engine, y.data());
      primitive.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, ym}});
      stream.wait();
    };
    const std::function<void()> engines[3] = {
        [&] {
          cblas_sgemm(CblasRowMajor, p.transA ? CblasTrans : CblasNoTrans,
                      p.transB ? CblasTrans : CblasNoTrans, p.m, p.n, p.k, 1.0f, a.data(), lda,
                      b.data(), ldb, 0.0f, y.data(), p.n);
        },
        [&] { runOnednn(f32, f32Pd, a.data(), b.data()); },
        [&] { runOnednn(bf16, bf16Pd, a16.data(), b16.data()); }};
    for (const auto &engineRun : engines)
      engineRun(); // warm-up: packing buffers, JIT code
    std::vector<double> times[3];
    for (int r = 0; r < repeats; ++r)
      for (int e = 0; e < 3; ++e)
        times[e].push_back(elapsedMs(engines[e]));
    double ms[3];
    for (int e = 0; e < 3; ++e)
      total[e] += ms[e] = median(times[e]);
    fmt::print("{:>6} {:>6} {:>6} {:<12} {:>10.2f} {:>10.2f} {:>10.2f} {:>8.2f} {:>8.2f}\n", p.m,
               p.n, p.k, p.what, ms[0], ms[1], ms[2], ms[0] / ms[1], ms[0] / ms[2]);
  }
  fmt::print("total ms: openblas {:.1f}, onednn f32 {:.1f} ({:.2f}x), onednn bf16 {:.1f} "
             "({:.2f}x)\n",
             total[0], total[1], total[0] / total[1], total[2], total[0] / total[2]);
  return 0;
}
