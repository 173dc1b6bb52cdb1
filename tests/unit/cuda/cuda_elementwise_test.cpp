// The elementwise CUDA kernels against the CPU kernels: odd sizes (not multiples of a block),
// broadcasts of every kind, integer and bool dtypes, every cast pair.
#include "tests/unit/cuda/cuda_compare.h"

namespace shardc::runtime::testing {
namespace {

using program::BF16;
using program::BOOL;
using program::F16;
using program::F32;
using program::I32;
using program::I64;

TEST(CudaElementwise, UnaryFloatKernelsMatchTheCpu) {
  SHARDC_REQUIRE_CUDA();
  struct Unary {
    const char *kernel;
    Fill fill;
  };
  const std::vector<Unary> kernels = {
      {"neg", Fill::uniform(-3, 3)},       {"abs", Fill::uniform(-3, 3)},
      {"relu", Fill::uniform(-3, 3)},      {"sqrt", Fill::uniform(0, 9)},
      {"reciprocal", Fill::uniform(0.5, 4)}, {"exp", Fill::uniform(-10, 10)},
      {"log", Fill::uniform(0.01, 50)},    {"tanh", Fill::uniform(-5, 5)},
      {"erf", Fill::uniform(-3, 3)},       {"sin", Fill::uniform(-6, 6)},
      {"cos", Fill::uniform(-6, 6)},       {"sigmoid", Fill::uniform(-20, 20)},
      {"softplus", Fill::uniform(-30, 100)},
  };
  for (const Unary &u : kernels)
    for (std::vector<int64_t> shape : {std::vector<int64_t>{1}, {3, 5, 7}, {1025}, {2, 0, 3}}) {
      KernelCase c{u.kernel, {f32(shape, u.fill)}, {f32(shape)}};
      c.seed = static_cast<uint32_t>(shape.size() * 7 + 1);
      compareWithCpu(c);
    }
}

TEST(CudaElementwise, GeluBothFormsMatchTheCpu) {
  SHARDC_REQUIRE_CUDA();
  for (const char *form : {"none", "tanh"}) {
    KernelCase c{"gelu", {f32({17, 33}, Fill::uniform(-8, 8))}, {f32({17, 33})}};
    c.attrs.s("approximate", form);
    compareWithCpu(c);
  }
}

TEST(CudaElementwise, IntegerUnaryKernelsAreExact) {
  SHARDC_REQUIRE_CUDA();
  for (const char *kernel : {"neg", "abs", "relu"})
    for (DType dtype : {I64, I32}) {
      KernelCase c{kernel, {typed(dtype, {37}, Fill::integers(-1000, 1000))}, {typed(dtype, {37})}};
      compareWithCpu(c);
    }
  compareWithCpu({"not", {typed(BOOL, {9, 3}, Fill::bools())}, {typed(BOOL, {9, 3})}});
}

TEST(CudaElementwise, ModMatchesTheCpu) {
  SHARDC_REQUIRE_CUDA();
  // fmod of both signs, broadcast.
  KernelCase c{"mod", {f32({6, 33}, Fill::uniform(-20, 20)), f32({33}, Fill::uniform(0.5, 3))},
               {f32({6, 33})}};
  c.attrs.i("fmod", 1);
  compareWithCpu(c);
}

TEST(CudaElementwise, ModErrorsAreTheCpuErrors) {
  // Checked before any device access: no GPU needed.
  Attrs python;
  python.i("fmod", 0);
  expectSameErrorOnBothDevices("mod", {typeOnlyTensor(F32, {3}), typeOnlyTensor(F32, {3})},
                               {typeOnlyTensor(F32, {3})}, python);
}

TEST(CudaElementwise, BinaryKernelsMatchTheCpuUnderEveryBroadcast) {
  SHARDC_REQUIRE_CUDA();
  // {a, b, y}: equal shapes, a scalar either side, a row, a column, both sides broadcast, rank 5.
  const std::vector<std::vector<std::vector<int64_t>>> shapes = {
      {{4, 33}, {4, 33}, {4, 33}},       {{}, {5, 7}, {5, 7}},
      {{5, 7}, {1}, {5, 7}},             {{3, 1, 9}, {9}, {3, 1, 9}},
      {{6, 1}, {1, 5}, {6, 5}},          {{2, 3, 1, 5, 1}, {3, 4, 1, 6}, {2, 3, 4, 5, 6}},
      {{1000, 3}, {1000, 1}, {1000, 3}},
  };
  for (const char *kernel : {"add", "sub", "mul", "div", "max", "min", "pow"})
    for (const auto &s : shapes) {
      Fill a = Fill::uniform(-3, 3), b = Fill::uniform(-3, 3);
      if (std::string(kernel) == "div")
        b = Fill::uniform(0.5, 3);
      if (std::string(kernel) == "pow") {
        a = Fill::uniform(0.1, 3);
        b = Fill::uniform(-2, 2);
      }
      compareWithCpu({kernel, {f32(s[0], a), f32(s[1], b)}, {f32(s[2])}});
    }
  for (const char *kernel : {"add", "sub", "mul", "max", "min"})
    for (DType dtype : {I64, I32})
      compareWithCpu({kernel,
                      {typed(dtype, {6, 1}, Fill::integers(-50, 50)),
                       typed(dtype, {1, 5}, Fill::integers(-50, 50))},
                      {typed(dtype, {6, 5})}});
  // pow with an integer exponent, and the exact square.
  compareWithCpu({"pow", {f32({7, 3}), typed(I64, {}, Fill::fixed({2}))}, {f32({7, 3})}});
  compareWithCpu({"pow", {f32({7, 3}), f32({}, Fill::fixed({2}))}, {f32({7, 3})}});
}

// Shapes whose walk is at most two dims with contiguous rows (a bias row, a scalar, a mask
// broadcast along leading dims), which take the linear-index paths 4 elements at a time: row
// lengths that are multiples of 4, and a tail of 1-3 elements in a one-row walk.
TEST(CudaElementwise, RowBroadcastsAndScalarsTakeTheFourWidePaths) {
  SHARDC_REQUIRE_CUDA();
  const std::vector<std::vector<std::vector<int64_t>>> shapes = {
      {{64, 768}, {768}, {64, 768}},          {{4, 2, 64, 64}, {}, {4, 2, 64, 64}},
      {{1027}, {1027}, {1027}},               {{1, 1, 64, 64}, {4, 2, 64, 64}, {4, 2, 64, 64}},
      {{96, 40}, {96, 1}, {96, 40}},
  };
  for (const char *kernel : {"add", "mul", "sub", "div"})
    for (const auto &s : shapes)
      compareWithCpu({kernel,
                      {f32(s[0]), f32(s[1], std::string(kernel) == "div" ? Fill::uniform(0.5, 3)
                                                                          : Fill::uniform(-3, 3))},
                      {f32(s[2])}});
  compareWithCpu({"where",
                  {typed(BOOL, {1, 1, 64, 64}, Fill::bools()), f32({}, Fill::fixed({-1e9})),
                   f32({4, 2, 64, 64})},
                  {f32({4, 2, 64, 64})}});
  for (std::vector<int64_t> shape : {std::vector<int64_t>{4096}, {4099}}) {
    KernelCase cast{"cast", {f32(shape)}, {typed(BF16, shape)}};
    cast.attrs.i("to", static_cast<int64_t>(BF16));
    cast.tolerance = 0; // a cast is exact: both round to nearest even
    compareWithCpu(cast);
    compareWithCpu({"relu", {f32(shape)}, {f32(shape)}});
  }
}

TEST(CudaElementwise, ComparisonsAndLogicAreExact) {
  SHARDC_REQUIRE_CUDA();
  for (const char *kernel : {"equal", "less", "greater"})
    for (DType dtype : {F32, I64, I32})
      compareWithCpu({kernel,
                      {typed(dtype, {8, 1}, Fill::integers(-3, 3)),
                       typed(dtype, {1, 11}, Fill::integers(-3, 3))},
                      {typed(BOOL, {8, 11})}});
  compareWithCpu({"equal", {typed(BOOL, {5}, Fill::bools()), typed(BOOL, {5}, Fill::bools())},
                  {typed(BOOL, {5})}});
  for (const char *kernel : {"and", "or"})
    compareWithCpu({kernel, {typed(BOOL, {4, 1, 3}, Fill::bools()), typed(BOOL, {5, 1}, Fill::bools())},
                    {typed(BOOL, {4, 5, 3})}});
}

TEST(CudaElementwise, WhereMovesEveryElementSize) {
  SHARDC_REQUIRE_CUDA();
  for (DType dtype : {F32, I64, BOOL, BF16})
    compareWithCpu({"where",
                    {typed(BOOL, {1, 1, 7}, Fill::bools()), typed(dtype, {3, 1, 7}, Fill::integers(-9, 9)),
                     typed(dtype, {5, 1}, Fill::integers(-9, 9))},
                    {typed(dtype, {3, 5, 7})}});
}

TEST(CudaElementwise, CastBetweenEveryPairOfDtypes) {
  SHARDC_REQUIRE_CUDA();
  const std::vector<DType> dtypes = {F32, I64, I32, BOOL, BF16, F16};
  for (DType from : dtypes)
    for (DType to : dtypes) {
      // Floats with fractions (rounding to 16 bits, truncation to integers), and for f32 also
      // values out of the integers' range and far out of f16's.
      Fill fill = from == BOOL ? Fill::bools()
                  : from == F32 ? Fill::fixed({0.0, -0.0, 1.5, -2.5, 3.0e9, -7.0e20, 1.0e-3,
                                               70000.0, 0.1, -1.0, 2.75, 255.5})
                  : from == F16 ? Fill::fixed({0.5, -1.5, 2.0, 1024.0, -3.0, 0.0})
                                : Fill::integers(-300, 300);
      KernelCase c{"cast", {typed(from, {12}, fill)}, {typed(to, {12})}};
      c.attrs.i("to", static_cast<int64_t>(to));
      c.tolerance = 0; // a cast is exact: both round to nearest even
      compareWithCpu(c);
    }
}

} // namespace
} // namespace shardc::runtime::testing
