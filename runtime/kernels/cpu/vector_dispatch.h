// Runtime dispatch of the vectorised loops. The kernels are built for baseline x86-64 (the
// binary runs on any x86-64 CPU), where the compiler vectorises 4 floats wide. vectorLoop runs a
// loop body compiled three times, for AVX-512, AVX2 and the baseline, picking the widest the CPU
// has (checked once). The kernels are compiled with -ffp-contract=off, so no version fuses a
// multiply and an add that the others round twice: every version computes the same bits.
#pragma once

#include <cstdint>

namespace shardc::runtime::cpu {

// Avx2 stands for AVX2 with FMA (std::fma is an instruction there, a libm call below).
enum class VectorLevel { Baseline, Avx2, Avx512 };

// The level the loops run at: this CPU's widest (detected once), unless capped lower; and its
// name: "avx512f", "avx2" or "baseline".
VectorLevel cpuVectorLevel();
const char *cpuVectorPath();
// Runs every later loop at most at `level` (the tests compare each level's bits).
void capCpuVectorLevel(VectorLevel level);

// The body is inlined into each loop even where the inliner's cost model would keep it a call
// (a polynomial exp or erf is large): a call per element compiled for the baseline ISA would
// be the scalar loop the dispatch exists to avoid. clang takes the attribute on the call.
#if defined(__clang__)
#define SHARDC_INLINE_BODY [[clang::always_inline]]
#else
#define SHARDC_INLINE_BODY
#endif

#if defined(__x86_64__) && (defined(__clang__) || defined(__GNUC__))
#define SHARDC_VECTOR_DISPATCH 1
// The loops themselves: `body(i)` inlined into a loop compiled for each target, vectorised
// without the compiler's proof that the iterations are independent (`omp simd`, which needs
// -fopenmp-simd and no OpenMP runtime): vectorLoop's contract gives it.
template <typename Body>
__attribute__((target("avx512f"))) void loopAvx512(int64_t begin, int64_t end, Body &body) {
#pragma omp simd
  for (int64_t i = begin; i < end; ++i)
    SHARDC_INLINE_BODY body(i);
}
template <typename Body>
__attribute__((target("avx2,fma"))) void loopAvx2(int64_t begin, int64_t end, Body &body) {
#pragma omp simd
  for (int64_t i = begin; i < end; ++i)
    SHARDC_INLINE_BODY body(i);
}
#endif

// for (i = begin; i < end; ++i) body(i), vectorised at this CPU's widest level. The iterations
// must be independent: body(i) reads and writes element i of its arrays only (an output may be
// one of the inputs itself, as in the optimizer updates), so any order of them, or several at
// once, computes the same.
template <typename Body> void vectorLoop(int64_t begin, int64_t end, Body &&body) {
#ifdef SHARDC_VECTOR_DISPATCH
  switch (cpuVectorLevel()) {
  case VectorLevel::Avx512:
    return loopAvx512(begin, end, body);
  case VectorLevel::Avx2:
    return loopAvx2(begin, end, body);
  case VectorLevel::Baseline:
    break;
  }
#endif
#pragma omp simd
  for (int64_t i = begin; i < end; ++i)
    SHARDC_INLINE_BODY body(i);
}

} // namespace shardc::runtime::cpu
