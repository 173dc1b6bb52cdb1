// Checks a CUDA kernel against the CPU kernel of the same name: both run on the same random
// inputs, and every output must agree (integers and bools exactly, floats within a relative
// tolerance of the output's magnitude). Without a visible GPU a comparison skips, saying why.
#pragma once

#include "runtime/kernels/kernel.h"
#include "tests/unit/kernels/test_support.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace shardc::runtime::testing {

// How an input's values are drawn.
struct Fill {
  enum Kind { Uniform, Integers, Bools, Fixed } kind = Uniform;
  double lo = -2, hi = 2;     // Uniform: floats in [lo, hi); Integers: integers in [lo, hi]
  std::vector<double> values; // Fixed: these values, in order
  static Fill uniform(double lo, double hi) { return {Uniform, lo, hi, {}}; }
  static Fill integers(int64_t lo, int64_t hi) { return {Integers, double(lo), double(hi), {}}; }
  static Fill bools() { return {Bools, 0, 1, {}}; }
  static Fill fixed(std::vector<double> values) { return {Fixed, 0, 0, std::move(values)}; }
};

struct Operand {
  DType dtype = program::F32;
  std::vector<int64_t> shape;
  Fill fill;
  bool absent = false; // an absent optional operand
};

inline Operand f32(std::vector<int64_t> shape, Fill fill = Fill::uniform(-2, 2)) {
  return {program::F32, std::move(shape), std::move(fill)};
}
inline Operand typed(DType dtype, std::vector<int64_t> shape, Fill fill = Fill::uniform(-2, 2)) {
  return {dtype, std::move(shape), std::move(fill)};
}
inline Operand absentOperand() { return {program::F32, {}, {}, true}; }

struct KernelCase {
  std::string kernel;
  std::vector<Operand> inputs;
  std::vector<Operand> outputs; // fill ignored, except for outputs that alias an input
  Attrs attrs;
  double tolerance = 1e-5; // floats: |cuda - cpu| <= tolerance * max(|cpu|, rms of the output)
  uint32_t seed = 1;
  // Outputs written over inputs (the optimizer updates): {input index, output index}.
  std::vector<std::pair<int, int>> inPlace;
};

// Calls `kernel` on the CPU and on CUDA with the same operands (type-only tensors: the checks
// read no data, so no GPU is needed). Both must fail with the same message, which is returned.
std::string expectSameErrorOnBothDevices(const std::string &kernel,
                                         const std::vector<Tensor> &inputs,
                                         const std::vector<Tensor> &outputs, const Attrs &attrs);

// Whether a CUDA device is visible; `why` says why not.
bool cudaVisible(std::string *why);

// Runs both kernels on `c` and compares; adds gtest failures naming the kernel, the output and
// the worst element. Returns the worst relative difference found over the float outputs.
double compareWithCpu(const KernelCase &c);

} // namespace shardc::runtime::testing

// Skips the current test when no GPU is visible (in a test body).
#define SHARDC_REQUIRE_CUDA()                                                                      \
  do {                                                                                             \
    std::string why_;                                                                              \
    if (!::shardc::runtime::testing::cudaVisible(&why_))                                           \
      GTEST_SKIP() << why_;                                                                        \
  } while (0)
