// fused_elementwise on CUDA against the CPU kernel: the chains the fusion makes (the erf GELU,
// a bias and relu, 16-bit inputs and outputs with roundings inside), every step, broadcasts
// of every kind, sizes around a block, more outputs than one launch stores, and the shared
// errors.
#include "tests/unit/cuda/cuda_compare.h"
#include "tests/unit/kernels/fused_program.h"

#include "runtime/kernels/fused_elementwise_code.h"

namespace shardc::runtime::testing {
namespace {

using program::BF16;
using program::F16;
using program::F32;

struct Step {
  FusedOp op;
  int64_t a, b = -1;
};


Attrs programOf(const std::vector<Step> &steps, const std::vector<int64_t> &results) {
  std::vector<int64_t> code;
  for (const Step &s : steps)
    code.insert(code.end(), {static_cast<int64_t>(s.op), s.a, s.b});
  return encodeFusedProgram(code, results);
}

KernelCase fusedCase(std::vector<Operand> inputs, std::vector<Operand> outputs,
                     const std::vector<Step> &steps, const std::vector<int64_t> &results,
                     double tolerance = 1e-5) {
  KernelCase c{"fused_elementwise", std::move(inputs), std::move(outputs),
               programOf(steps, results)};
  c.tolerance = tolerance;
  return c;
}

TEST(CudaFusedElementwise, GeluErfChainMatchesTheCpu) {
  SHARDC_REQUIRE_CUDA();
  for (std::vector<int64_t> shape : {std::vector<int64_t>{1}, {7}, {1000}, {4097}, {3, 5, 7}}) {
    KernelCase c = fusedCase(
        {f32(shape, Fill::uniform(-5, 5)), f32({}, Fill::fixed({1.41421356})),
         f32({1}, Fill::fixed({0.5})), f32({}, Fill::fixed({1.0}))},
        {f32(shape)},
        {{FusedOp::Div, 0, 1}, {FusedOp::Erf, 4}, {FusedOp::Add, 5, 3}, {FusedOp::Mul, 0, 2},
         {FusedOp::Mul, 7, 6}},
        {8});
    compareWithCpu(c);
  }
}

TEST(CudaFusedElementwise, BiasReluAndMiddleBroadcastsMatchTheCpu) {
  SHARDC_REQUIRE_CUDA();
  const std::vector<std::vector<std::vector<int64_t>>> shapes = {
      {{64, 768}, {768}, {64, 768}},    {{4, 1, 8}, {4, 3, 8}, {4, 3, 8}},
      {{4, 3, 8}, {4, 1, 8}, {4, 3, 8}}, {{2, 1, 3, 1}, {7, 1, 5}, {2, 7, 3, 5}},
      {{1}, {1, 1, 9}, {2, 1, 9}},      {{37, 1}, {1, 111}, {37, 111}},
  };
  for (const auto &s : shapes)
    compareWithCpu(fusedCase({f32(s[0]), f32(s[1])}, {f32(s[2])},
                             {{FusedOp::Add, 0, 1}, {FusedOp::Relu, 2}}, {3}));
}

TEST(CudaFusedElementwise, SixteenBitInputsRoundingsAndOutputs) {
  SHARDC_REQUIRE_CUDA();
  for (std::vector<int64_t> shape : {std::vector<int64_t>{7}, {4097}, {5, 33}}) {
    // bf16: round_bf16(x * w), sigmoid, + x. A last-ulp difference in f32 can round to the
    // neighbouring bf16, so the tolerance is bf16's.
    compareWithCpu(fusedCase({typed(BF16, shape, Fill::uniform(-4, 4)),
                              typed(BF16, {shape.back()}, Fill::uniform(-2, 2))},
                             {typed(BF16, shape), f32(shape)},
                             {{FusedOp::Mul, 0, 1}, {FusedOp::RoundBf16, 2},
                              {FusedOp::Sigmoid, 3}, {FusedOp::Add, 4, 0}},
                             {5, 3}, 1e-2));
    // f16 (values exact in f16): * 0.125, tanh, round_f16, exp, - x.
    compareWithCpu(fusedCase({typed(F16, shape, Fill::integers(-8, 8)),
                              typed(F16, {}, Fill::fixed({0.125}))},
                             {typed(F16, shape)},
                             {{FusedOp::Mul, 0, 1}, {FusedOp::Tanh, 2}, {FusedOp::RoundF16, 3},
                              {FusedOp::Exp, 4}, {FusedOp::Sub, 5, 0}},
                             {6}, 2e-3));
  }
}

TEST(CudaFusedElementwise, EveryStepMatchesTheCpu) {
  SHARDC_REQUIRE_CUDA();
  struct Unary {
    FusedOp op;
    Fill fill;
  };
  const std::vector<Unary> unary = {
      {FusedOp::Neg, Fill::uniform(-3, 3)},       {FusedOp::Abs, Fill::uniform(-3, 3)},
      {FusedOp::Relu, Fill::uniform(-3, 3)},      {FusedOp::Sqrt, Fill::uniform(0, 9)},
      {FusedOp::Reciprocal, Fill::uniform(0.5, 4)}, {FusedOp::Exp, Fill::uniform(-10, 10)},
      {FusedOp::Log, Fill::uniform(0.01, 50)},    {FusedOp::Tanh, Fill::uniform(-5, 5)},
      {FusedOp::Erf, Fill::uniform(-3, 3)},       {FusedOp::Sin, Fill::uniform(-6, 6)},
      {FusedOp::Cos, Fill::uniform(-6, 6)},       {FusedOp::Sigmoid, Fill::uniform(-20, 20)},
      {FusedOp::Softplus, Fill::uniform(-30, 100)}, {FusedOp::RoundBf16, Fill::uniform(-100, 100)},
      {FusedOp::RoundF16, Fill::uniform(-100, 100)},
  };
  for (const Unary &u : unary)
    compareWithCpu(fusedCase({f32({1025}, u.fill)}, {f32({1025})}, {{u.op, 0}}, {1},
                             u.op == FusedOp::RoundBf16 || u.op == FusedOp::RoundF16 ? 0 : 1e-5));
  for (FusedOp op : {FusedOp::Add, FusedOp::Sub, FusedOp::Mul, FusedOp::Div, FusedOp::Pow,
                     FusedOp::Max, FusedOp::Min}) {
    const bool pow = op == FusedOp::Pow;
    compareWithCpu(fusedCase({f32({6, 33}, pow ? Fill::uniform(0.1, 3) : Fill::uniform(-3, 3)),
                              f32({33}, pow ? Fill::uniform(-2, 2) : Fill::uniform(0.5, 3))},
                             {f32({6, 33})}, {{op, 0, 1}}, {2}));
  }
  // max and min with NaN and infinities on either side.
  const std::vector<double> specials = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1.0, -1.0};
  const auto [a, b] = everyPair(specials);
  const int64_t n = static_cast<int64_t>(a.size());
  for (FusedOp op : {FusedOp::Max, FusedOp::Min})
    compareWithCpu(fusedCase({f32({n}, Fill::fixed(a)), f32({n}, Fill::fixed(b))}, {f32({n})},
                             {{op, 0, 1}}, {2}, 0));
}

// 20 outputs: two launches, each computing the chain and storing its share.
TEST(CudaFusedElementwise, MoreOutputsThanOneLaunchStores) {
  SHARDC_REQUIRE_CUDA();
  std::vector<Step> steps;
  std::vector<int64_t> results;
  std::vector<Operand> outputs;
  for (int64_t i = 0; i < 20; ++i) {
    steps.push_back({i % 2 ? FusedOp::Mul : FusedOp::Add, i == 0 ? 0 : 1 + i, 1});
    results.push_back(2 + i);
    outputs.push_back(i % 3 == 0 ? typed(BF16, {3, 77}) : f32({3, 77}));
  }
  compareWithCpu(fusedCase({f32({3, 77}, Fill::uniform(-1, 1)), f32({77}, Fill::uniform(0.5, 1))},
                           outputs, steps, results, 1e-2));
}

TEST(CudaFusedElementwise, ErrorsAreTheCpuErrors) {
  // Checked before any device access: no GPU needed.
  const int64_t add = static_cast<int64_t>(FusedOp::Add), neg = static_cast<int64_t>(FusedOp::Neg);
  const std::vector<Tensor> xb = {typeOnlyTensor(F32, {2, 4}), typeOnlyTensor(BF16, {4})};
  const std::vector<Tensor> y = {typeOnlyTensor(F32, {2, 4})};
  auto attrs = [](std::vector<int64_t> code, std::vector<int64_t> results) {
    return encodeFusedProgram(code, results);
  };
  expectSameErrorOnBothDevices("fused_elementwise", {typeOnlyTensor(F32, {2, 4}),
                                                     typeOnlyTensor(program::I64, {4})},
                               y, attrs({add, 0, 1}, {2}));
  expectSameErrorOnBothDevices("fused_elementwise",
                               {typeOnlyTensor(F32, {2, 4}), typeOnlyTensor(F32, {3})}, y,
                               attrs({add, 0, 1}, {2}));
  expectSameErrorOnBothDevices("fused_elementwise", xb,
                               {typeOnlyTensor(F32, {2, 4}), typeOnlyTensor(F16, {4, 2})},
                               attrs({add, 0, 1}, {2, 2}));
  Attrs unpaired; // 3 args for 2 steps
  unpaired.s("steps", "add neg").ints("args", {0, 1, 2}).ints("results", {3});
  expectSameErrorOnBothDevices("fused_elementwise", xb, y, unpaired);
  expectSameErrorOnBothDevices("fused_elementwise", xb, y, attrs({99, 0, 1}, {2}));
  expectSameErrorOnBothDevices("fused_elementwise", xb, y, attrs({neg, 0, 1}, {2}));
  expectSameErrorOnBothDevices("fused_elementwise", xb, y, attrs({add, 0, 2}, {2}));
  expectSameErrorOnBothDevices("fused_elementwise", xb, y, attrs({add, 0, 1}, {2, 2}));
  expectSameErrorOnBothDevices("fused_elementwise", xb, y, attrs({add, 0, 1}, {3}));
  std::vector<int64_t> longCode;
  for (int64_t i = 0; i <= kMaxFusedInstructions; ++i)
    longCode.insert(longCode.end(), {neg, 1 + i, -1});
  expectSameErrorOnBothDevices("fused_elementwise", xb, y, attrs(longCode, {2}));
}

TEST(CudaFusedElementwise, MoreInputsThanTheCudaKernelTakesAreAnError) {
  // The CPU kernel takes them; the CUDA one says how many it takes, before any device access.
  std::vector<Tensor> inputs(33, typeOnlyTensor(F32, {4}));
  std::vector<int64_t> code;
  for (int64_t i = 0; i < 32; ++i)
    code.insert(code.end(), {static_cast<int64_t>(FusedOp::Add), i == 0 ? 0 : 32 + i, i + 1});
  const Attrs attrs = encodeFusedProgram(code, {64});
  KernelArgs args;
  args.inputs = inputs;
  args.outputs = {typeOnlyTensor(F32, {4})};
  args.attrs = &attrs.map();
  KernelFn fn = findKernel(DeviceKind::Cuda, "fused_elementwise");
  ASSERT_NE(fn, nullptr);
  const Status status = fn(args);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("fused_elementwise: 33 inputs, the cuda kernel takes at most 32"),
            std::string::npos)
      << status.message();
}

} // namespace
} // namespace shardc::runtime::testing
