// Native bf16 matrix products on oneDNN (onednn_matmul.cpp), for CPUs whose instructions
// multiply bf16 pairs and accumulate in f32 (AVX512-BF16's vdpbf16ps, AMX tiles).
//
// The exact path (blas.h) widens bf16 operands into f32 and runs sgemm: its bits are those of
// casting the operands and the result, on every CPU. The native path reads the bf16 operands
// as they are stored and lets oneDNN's bf16 kernels sum the same exact products in their own
// order (and with denormal inputs and results flushed to zero, as those instructions do), so
// its sums differ from sgemm's by f32 rounding: a bf16 result may then round to the
// neighbouring bf16 value. It is used only where the CPU runs it natively: oneDNN emulates
// bf16 on other AVX-512 CPUs, slower than the exact path.
#pragma once

#include "runtime/support/half_float.h"
#include "runtime/support/status.h"

#include <cstdint>
#include <string>

namespace shardc::runtime::cpu {

// oneDNN's name for the instruction set it runs on this CPU ("avx512_core_bf16", ...).
std::string onednnCpuIsa();
// Whether products of two bf16 operands take the native path now (setCpuBf16Products in
// kernel.h; cpuHasNativeBf16Products there says whether this CPU can).
bool nativeBf16ProductsEnabled();
// Turns the native path on or off whatever the CPU (oneDNN emulates the bf16 instructions
// where they are missing, computing the same sums, slowly): for tests of the path's layouts
// on every machine.
void forceNativeBf16ProductsForTesting(bool on);

// y[M,N] = alpha * op(a) * op(b) + beta * y (row-major; op transposes when asked) with bf16
// a and b read in place, f32 accumulation and an f32 y. Split into bands over the kernel pool
// as sgemm is, each band one single-threaded oneDNN call; bands of a product give the bits
// the whole product gives (the per-element sum's order is set by K), so the thread count does
// not change a result (vector_threads_test checks it).
Status nativeBf16Gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha,
                      const BFloat16 *a, const BFloat16 *b, float beta, float *y);
// y[M,N] = op(a) * op(b) rounded to bf16 (nearest-even, as the exact path rounds its f32
// product): the f32 sums are those of the f32 overload, without an f32 copy of y.
Status nativeBf16Gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
                      const BFloat16 *a, const BFloat16 *b, BFloat16 *y);

} // namespace shardc::runtime::cpu
