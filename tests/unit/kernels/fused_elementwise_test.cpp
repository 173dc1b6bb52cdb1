// fused_elementwise against the unfused kernels: every chain is also run step by step through
// the kernels it replaces (cast, add, erf, ..., expand for a broadcast output), and the fused
// outputs must equal theirs bit for bit. Sizes around the kernel's block, broadcasts of every
// kind, 16-bit inputs and outputs, NaN and infinities, and every malformed program.
#include "tests/unit/kernels/test_support.h"
#include "tests/unit/kernels/fused_program.h"

#include "runtime/kernels/fused_elementwise_code.h"
#include "runtime/support/half_float.h"

#include <iterator>
#include <limits>

namespace shardc::runtime::testing {
namespace {

using program::BF16;
using program::F16;
using program::F32;

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

// A tensor of `dtype` (f32, bf16 or f16) holding `values`, rounded to the dtype as cast does.
HostTensor floats(DType dtype, std::vector<int64_t> shape, const std::vector<float> &values) {
  HostTensor t(dtype, std::move(shape));
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.view().numel()) << "test data size";
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == BF16)
      t.view().as<BFloat16>()[i] = toBFloat16(values[i]);
    else if (dtype == F16)
      t.view().as<Float16>()[i] = toFloat16(values[i]);
    else
      t.view().as<float>()[i] = values[i];
  }
  return t;
}

// The raw bits of each element (16 or 32 of them).
std::vector<uint32_t> bitsOf(const Tensor &t) {
  std::vector<uint32_t> bits(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < bits.size(); ++i)
    bits[i] = t.dtype == F32 ? floatBits(t.as<float>()[i]) : t.as<uint16_t>()[i];
  return bits;
}

std::vector<int64_t> broadcastOf(const std::vector<int64_t> &a, const std::vector<int64_t> &b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    out[i] = da == 1 ? db : da;
  }
  return out;
}


struct Step {
  FusedOp op;
  int64_t a, b = -1;
};

struct Chain {
  std::vector<Step> steps;
  std::vector<int64_t> results;
  std::vector<DType> outputDtypes;
  std::vector<int64_t> shape; // the outputs'

  Attrs attrs() const {
    std::vector<int64_t> code;
    for (const Step &s : steps)
      code.insert(code.end(), {static_cast<int64_t>(s.op), s.a, s.b});
    return encodeFusedProgram(code, results);
  }
};

HostTensor castTo(DType to, const Tensor &x) {
  HostTensor y(to, x.shape);
  Attrs attrs;
  attrs.i("to", static_cast<int64_t>(to));
  EXPECT_KERNEL_OK(runKernel("cast", {x}, {y}, attrs));
  return y;
}

// The chain through the unfused kernels, one kernel call per step.
std::vector<HostTensor> runUnfused(const std::vector<const HostTensor *> &inputs, const Chain &c) {
  std::vector<HostTensor> slots;
  for (const HostTensor *x : inputs)
    slots.push_back(castTo(F32, x->view())); // f32 to f32 is a copy
  for (const Step &s : c.steps) {
    const Tensor a = slots[s.a].view();
    if (s.op == FusedOp::RoundBf16 || s.op == FusedOp::RoundF16) {
      HostTensor narrow = castTo(s.op == FusedOp::RoundBf16 ? BF16 : F16, a);
      slots.push_back(castTo(F32, narrow.view()));
      continue;
    }
    const bool binary = fusedOpArity(s.op) == 2;
    HostTensor y(F32, binary ? broadcastOf(a.shape, slots[s.b].view().shape) : a.shape);
    std::vector<Tensor> operands = {a};
    if (binary)
      operands.push_back(slots[s.b].view());
    EXPECT_KERNEL_OK(runKernel(fusedOpName(s.op), operands, {y}));
    slots.push_back(std::move(y));
  }
  std::vector<HostTensor> outputs;
  for (size_t j = 0; j < c.results.size(); ++j) {
    const Tensor r = slots[c.results[j]].view();
    HostTensor whole(F32, c.shape);
    EXPECT_KERNEL_OK(runKernel("expand", {r}, {whole}));
    outputs.push_back(castTo(c.outputDtypes[j], whole.view()));
  }
  return outputs;
}

// Runs the chain fused and unfused and compares every output bit for bit.
void expectFusedMatchesUnfused(const std::vector<const HostTensor *> &inputs, const Chain &c) {
  std::vector<HostTensor> fused;
  std::vector<Tensor> inViews, outViews;
  for (const HostTensor *x : inputs)
    inViews.push_back(x->view());
  for (DType dtype : c.outputDtypes) {
    fused.emplace_back(dtype, c.shape);
    outViews.push_back(fused.back().view());
  }
  ASSERT_KERNEL_OK(runKernel("fused_elementwise", inViews, outViews, c.attrs()));
  const std::vector<HostTensor> expected = runUnfused(inputs, c);
  for (size_t j = 0; j < fused.size(); ++j) {
    const std::vector<uint32_t> got = bitsOf(fused[j].view()), want = bitsOf(expected[j].view());
    ASSERT_EQ(got.size(), want.size());
    size_t mismatches = 0;
    for (size_t i = 0; i < got.size(); ++i)
      if (got[i] != want[i] && mismatches++ < 5)
        ADD_FAILURE() << "output " << j << " element " << i << ": fused bits 0x" << std::hex
                      << got[i] << ", unfused 0x" << want[i] << std::dec;
    EXPECT_EQ(mismatches, 0u) << "output " << j << " of " << fused[j].view().describe();
  }
}

const std::vector<std::vector<int64_t>> kSizes = {{1}, {7}, {1000}, {4097}, {3, 5}, {2, 3, 171}};

TEST(FusedElementwise, OpcodesAndNamesAreTheProgramFormat) {
  EXPECT_EQ(static_cast<int>(FusedOp::Neg), 0);
  EXPECT_EQ(static_cast<int>(FusedOp::RoundBf16), 13);
  EXPECT_EQ(static_cast<int>(FusedOp::Add), 15);
  EXPECT_EQ(static_cast<int>(FusedOp::Min), 21);
  EXPECT_EQ(kMaxFusedInstructions, 64);
  for (int i = 0; i < kNumFusedOps; ++i) {
    const FusedOp op = static_cast<FusedOp>(i);
    FusedOp back;
    ASSERT_TRUE(fusedOpFromName(fusedOpName(op), &back)) << i;
    EXPECT_EQ(back, op);
    EXPECT_EQ(fusedOpArity(op), op >= FusedOp::Add ? 2 : 1) << fusedOpName(op);
    // Every step but the roundings is the kernel of its name.
    if (op != FusedOp::RoundBf16 && op != FusedOp::RoundF16)
      EXPECT_NE(findCpuKernel(fusedOpName(op)), nullptr) << fusedOpName(op);
  }
  EXPECT_STREQ(fusedOpName(FusedOp::RoundF16), "round_f16");
  FusedOp op;
  EXPECT_FALSE(fusedOpFromName("gelu", &op));
}

// x * 0.5 * (1 + erf(x / sqrt 2)), the constants as scalar inputs ([] and [1]).
TEST(FusedElementwise, GeluErfChainWithScalarConstants) {
  unsigned seed = 1;
  for (const auto &shape : kSizes) {
    SCOPED_TRACE(numelOf(shape));
    HostTensor x = floats(F32, shape, randomFloats(numelOf(shape), -5, 5, seed++));
    HostTensor sqrt2 = floats(F32, {}, {1.41421356f}), half = floats(F32, {1}, {0.5f}),
               one = floats(F32, {}, {1.0f});
    Chain c;
    c.steps = {{FusedOp::Div, 0, 1}, {FusedOp::Erf, 4}, {FusedOp::Add, 5, 3},
               {FusedOp::Mul, 0, 2}, {FusedOp::Mul, 7, 6}};
    c.results = {8};
    c.outputDtypes = {F32};
    c.shape = shape;
    expectFusedMatchesUnfused({&x, &sqrt2, &half, &one}, c);
  }
}

TEST(FusedElementwise, BiasAddBroadcastThenRelu) {
  const std::vector<std::pair<int64_t, int64_t>> sizes = {{1, 1}, {5, 7}, {3, 513}, {1000, 4},
                                                           {2, 4097}};
  unsigned seed = 10;
  for (auto [m, n] : sizes) {
    SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n));
    HostTensor x = floats(F32, {m, n}, randomFloats(m * n, -3, 3, seed++));
    HostTensor bias = floats(F32, {n}, randomFloats(n, -1, 1, seed++));
    Chain c{{{FusedOp::Add, 0, 1}, {FusedOp::Relu, 2}}, {3}, {F32}, {m, n}};
    expectFusedMatchesUnfused({&x, &bias}, c);
    // The bias first, and as a column [m, 1].
    HostTensor column = floats(F32, {m, 1}, randomFloats(m, -1, 1, seed++));
    Chain d{{{FusedOp::Sub, 1, 0}, {FusedOp::Relu, 2}}, {3}, {F32}, {m, n}};
    expectFusedMatchesUnfused({&x, &column}, d);
  }
}

// bf16 in, the chain in f32 with a rounding to bf16 inside it (a cast pair the fusion keeps),
// bf16 out.
TEST(FusedElementwise, Bf16InputsRoundingStepAndOutput) {
  unsigned seed = 20;
  for (const auto &shape : kSizes) {
    SCOPED_TRACE(numelOf(shape));
    const int64_t n = numelOf(shape);
    HostTensor x = floats(BF16, shape, randomFloats(n, -4, 4, seed++));
    HostTensor w = floats(BF16, {shape.back()}, randomFloats(shape.back(), -2, 2, seed++));
    // y = round_bf16(x * w); out = sigmoid(y) + x
    Chain c{{{FusedOp::Mul, 0, 1}, {FusedOp::RoundBf16, 2}, {FusedOp::Sigmoid, 3},
             {FusedOp::Add, 4, 0}},
            {5},
            {BF16},
            shape};
    expectFusedMatchesUnfused({&x, &w}, c);
    // round_bf16 alone, into f32, on values with ties and beyond bf16's precision.
    HostTensor f = floats(F32, shape, randomFloats(n, -1000, 1000, seed++));
    Chain r{{{FusedOp::RoundBf16, 0}}, {1}, {F32}, shape};
    expectFusedMatchesUnfused({&f}, r);
  }
}

TEST(FusedElementwise, F16InputsRoundingStepAndOutput) {
  unsigned seed = 30;
  for (const auto &shape : kSizes) {
    SCOPED_TRACE(numelOf(shape));
    const int64_t n = numelOf(shape);
    HostTensor x = floats(F16, shape, randomFloats(n, -8, 8, seed++));
    HostTensor s = floats(F16, {}, {0.125f});
    Chain c{{{FusedOp::Mul, 0, 1}, {FusedOp::Tanh, 2}, {FusedOp::RoundF16, 3},
             {FusedOp::Exp, 4}, {FusedOp::Sub, 5, 0}},
            {6},
            {F16},
            shape};
    expectFusedMatchesUnfused({&x, &s}, c);
    // Large values: f16 overflows to infinity, tiny ones become subnormal.
    HostTensor f = floats(F32, shape, randomFloats(n, -70000, 70000, seed++));
    HostTensor tiny = floats(F32, {}, {1e-9f});
    Chain r{{{FusedOp::RoundF16, 0}, {FusedOp::Mul, 0, 1}, {FusedOp::RoundF16, 3}},
            {2, 4},
            {F32, F16},
            shape};
    expectFusedMatchesUnfused({&f, &tiny}, r);
  }
}

// An intermediate read elsewhere is an output too, in its own dtype; an output may also store
// an input itself (a cast the fusion absorbed), and two outputs one slot.
TEST(FusedElementwise, SeveralOutputs) {
  for (const auto &shape : kSizes) {
    SCOPED_TRACE(numelOf(shape));
    const int64_t n = numelOf(shape);
    HostTensor x = floats(F32, shape, randomFloats(n, -3, 3, 40));
    HostTensor y = floats(BF16, shape, randomFloats(n, -3, 3, 41));
    Chain c{{{FusedOp::Mul, 0, 1}, {FusedOp::Exp, 2}, {FusedOp::Add, 3, 0}},
            {2, 4, 1, 4},
            {F32, BF16, F32, F16},
            shape};
    expectFusedMatchesUnfused({&x, &y}, c);
  }
}

// Inputs broadcast in a middle dim, along leading dims, with fewer dims, and several at once.
TEST(FusedElementwise, BroadcastInMiddleAndLeadingDims) {
  struct Case {
    std::vector<std::vector<int64_t>> inputs;
    std::vector<int64_t> shape;
  };
  const std::vector<Case> cases = {
      {{{4, 1, 8}, {4, 3, 8}}, {4, 3, 8}},
      {{{4, 3, 8}, {4, 1, 8}}, {4, 3, 8}},
      {{{1, 3, 1}, {2, 3, 5}}, {2, 3, 5}},
      {{{3, 1, 600}, {5, 600}}, {3, 5, 600}},
      {{{2, 1, 3, 1}, {7, 1, 5}}, {2, 7, 3, 5}},
      {{{1}, {1, 1, 9}}, {2, 1, 9}},
      {{{37, 1}, {1, 111}}, {37, 111}},
  };
  unsigned seed = 50;
  for (const Case &k : cases) {
    SCOPED_TRACE(::testing::PrintToString(k.shape));
    HostTensor a = floats(F32, k.inputs[0], randomFloats(numelOf(k.inputs[0]), -2, 2, seed++));
    HostTensor b = floats(BF16, k.inputs[1], randomFloats(numelOf(k.inputs[1]), -2, 2, seed++));
    Chain c{{{FusedOp::Add, 0, 1}, {FusedOp::Tanh, 2}, {FusedOp::Mul, 3, 1}}, {4}, {F32}, k.shape};
    expectFusedMatchesUnfused({&a, &b}, c);
    // Unary steps on the broadcast input, before any step has the full shape.
    Chain d{{{FusedOp::Neg, 0}, {FusedOp::Abs, 1}, {FusedOp::Max, 2, 3}}, {4, 2}, {F16, F32},
            k.shape};
    expectFusedMatchesUnfused({&a, &b}, d);
  }
}

TEST(FusedElementwise, EveryUnaryStepMatchesItsKernel) {
  struct Unary {
    FusedOp op;
    float lo, hi;
  };
  const std::vector<Unary> ops = {
      {FusedOp::Neg, -5, 5},        {FusedOp::Abs, -5, 5},     {FusedOp::Relu, -5, 5},
      {FusedOp::Sqrt, 0, 100},      {FusedOp::Reciprocal, -4, 4}, {FusedOp::Exp, -90, 90},
      {FusedOp::Log, 0, 1000},      {FusedOp::Tanh, -10, 10},  {FusedOp::Erf, -4, 4},
      {FusedOp::Sin, -20, 20},      {FusedOp::Cos, -20, 20},   {FusedOp::Sigmoid, -100, 100},
      {FusedOp::Softplus, -100, 100}, {FusedOp::RoundBf16, -1e5, 1e5},
      {FusedOp::RoundF16, -1e5, 1e5},
  };
  unsigned seed = 60;
  for (const Unary &u : ops)
    for (const auto &shape : {std::vector<int64_t>{7}, std::vector<int64_t>{4097}}) {
      SCOPED_TRACE(std::string(fusedOpName(u.op)) + " " + std::to_string(numelOf(shape)));
      std::vector<float> values = randomFloats(numelOf(shape), u.lo, u.hi, seed++);
      const float specials[] = {0.0f, -0.0f, kInf, -kInf, kNaN, -1.0f};
      for (size_t i = 0; i < std::size(specials) && i < values.size(); ++i)
        values[i] = specials[i];
      HostTensor x = floats(F32, shape, values);
      expectFusedMatchesUnfused({&x}, Chain{{{u.op, 0}}, {1}, {F32}, shape});
    }
}

TEST(FusedElementwise, EveryBinaryStepMatchesItsKernel) {
  unsigned seed = 70;
  for (FusedOp op : {FusedOp::Add, FusedOp::Sub, FusedOp::Mul, FusedOp::Div, FusedOp::Pow,
                     FusedOp::Max, FusedOp::Min})
    for (const auto &shape : {std::vector<int64_t>{7}, std::vector<int64_t>{3, 1001}}) {
      SCOPED_TRACE(std::string(fusedOpName(op)) + " " + std::to_string(numelOf(shape)));
      const int64_t n = numelOf(shape);
      const bool pow = op == FusedOp::Pow;
      HostTensor a = floats(F32, shape, randomFloats(n, pow ? 0.01f : -10, 10, seed++));
      HostTensor b = floats(F32, shape, randomFloats(n, pow ? -3 : -10, pow ? 3 : 10, seed++));
      HostTensor row = floats(F32, {shape.back()}, randomFloats(shape.back(), 0.5f, 2, seed++));
      expectFusedMatchesUnfused({&a, &b}, Chain{{{op, 0, 1}}, {2}, {F32}, shape});
      expectFusedMatchesUnfused({&a, &row}, Chain{{{op, 1, 0}}, {2}, {F32}, shape});
    }
  // pow by a constant exponent: 2 (the square the pow kernel takes a shortcut for), 2 in bf16,
  // 3, 0.5, and 2 computed by a step (no shortcut): all of them pow's value.
  HostTensor x = floats(F32, {1000}, randomFloats(1000, -30, 30, seed++));
  for (float e : {2.0f, 3.0f, 0.5f, -2.0f}) {
    SCOPED_TRACE(e);
    HostTensor exponent = floats(F32, {}, {e});
    expectFusedMatchesUnfused({&x, &exponent}, Chain{{{FusedOp::Pow, 0, 1}}, {2}, {F32}, {1000}});
  }
  HostTensor two16 = floats(BF16, {1}, {2.0f}), one = floats(F32, {}, {1.0f});
  expectFusedMatchesUnfused({&x, &two16}, Chain{{{FusedOp::Pow, 0, 1}}, {2}, {F32}, {1000}});
  expectFusedMatchesUnfused(
      {&x, &one},
      Chain{{{FusedOp::Add, 1, 1}, {FusedOp::Pow, 0, 2}}, {3}, {F32}, {1000}});
}

// NaN propagates through max and min from either side, infinities compare as they should.
TEST(FusedElementwise, NanAndInfinityThroughMaxAndMin) {
  const std::vector<float> specials = {kNaN, kInf, -kInf, 0.0f, -0.0f, 1.0f, -1.0f, 3e38f};
  const auto [a, b] = everyPair(specials);
  const int64_t n = static_cast<int64_t>(a.size());
  HostTensor ta = floats(F32, {n}, a), tb = floats(F32, {n}, b);
  for (FusedOp op : {FusedOp::Max, FusedOp::Min}) {
    SCOPED_TRACE(fusedOpName(op));
    expectFusedMatchesUnfused({&ta, &tb}, Chain{{{op, 0, 1}}, {2}, {F32}, {n}});
    // Chained: relu(max(a, b) * 2) - min(a, b) + inf, into bf16 too.
    HostTensor two = floats(F32, {}, {2.0f}), inf = floats(F32, {}, {kInf});
    Chain c{{{op, 0, 1}, {FusedOp::Mul, 4, 2}, {FusedOp::Relu, 5},
             {op == FusedOp::Max ? FusedOp::Min : FusedOp::Max, 1, 0}, {FusedOp::Sub, 6, 7},
             {FusedOp::Add, 8, 3}},
            {8, 9},
            {BF16, F32},
            {n}};
    expectFusedMatchesUnfused({&ta, &tb, &two, &inf}, c);
  }
  // The max/min results themselves, element by element.
  HostTensor y(F32, {n});
  const Attrs attrs = encodeFusedProgram({static_cast<int64_t>(FusedOp::Max), 0, 1}, {2});
  ASSERT_KERNEL_OK(runKernel("fused_elementwise", {ta, tb}, {y}, attrs));
  const std::vector<float> got = y.values<float>();
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i]))
      EXPECT_TRUE(std::isnan(got[i])) << a[i] << " max " << b[i];
    else
      EXPECT_EQ(got[i], std::max(a[i], b[i])) << a[i] << " max " << b[i];
  }
}

TEST(FusedElementwise, LongChainOfTheMaximumLength) {
  // 64 steps alternating through the slots: each step reads the last two results.
  HostTensor x = floats(F32, {3, 77}, randomFloats(231, -1, 1, 80));
  HostTensor c = floats(F32, {77}, randomFloats(77, 0.5f, 1.5f, 81));
  Chain chain;
  chain.shape = {3, 77};
  const FusedOp cycle[] = {FusedOp::Mul, FusedOp::Tanh, FusedOp::Add, FusedOp::Sin,
                           FusedOp::Sub, FusedOp::Cos,  FusedOp::Max, FusedOp::Sigmoid};
  for (int64_t i = 0; i < kMaxFusedInstructions; ++i) {
    const FusedOp op = cycle[i % 8];
    const int64_t last = 2 + i - 1, before = i >= 2 ? 2 + i - 2 : 1;
    chain.steps.push_back(fusedOpArity(op) == 2 ? Step{op, i == 0 ? 0 : last, before}
                                                : Step{op, last});
  }
  chain.results = {2 + kMaxFusedInstructions - 1, 2 + 10};
  chain.outputDtypes = {F32, BF16};
  expectFusedMatchesUnfused({&x, &c}, chain);
}

TEST(FusedElementwise, EmptyOutputsWriteNothing) {
  HostTensor x(F32, {0, 3}), bias = floats(F32, {3}, {1, 2, 3}), y(BF16, {0, 3});
  const Attrs attrs = encodeFusedProgram({static_cast<int64_t>(FusedOp::Add), 0, 1}, {2});
  EXPECT_KERNEL_OK(runKernel("fused_elementwise", {x, bias}, {y}, attrs));
}

Attrs program(const std::vector<int64_t> &code, const std::vector<int64_t> &results) {
  return encodeFusedProgram(code, results);
}

// Steps and args as the program spells them.
Attrs named(const std::string &steps, const std::vector<int64_t> &args,
            const std::vector<int64_t> &results) {
  Attrs a;
  a.s("steps", steps).ints("args", args).ints("results", results);
  return a;
}

TEST(FusedElementwise, MalformedProgramsAreErrors) {
  const int64_t add = static_cast<int64_t>(FusedOp::Add), neg = static_cast<int64_t>(FusedOp::Neg);
  HostTensor x(F32, {2, 4}), b(F32, {4}), y(F32, {2, 4}), y16(BF16, {2, 4});
  const Attrs ok = program({add, 0, 1}, {2});
  EXPECT_KERNEL_OK(runKernel("fused_elementwise", {x, b}, {y}, ok));

  // Operands.
  EXPECT_KERNEL_ERROR(runKernel("fused_elementwise", {}, {y}, ok), "at least 1 input");
  EXPECT_KERNEL_ERROR(runKernel("fused_elementwise", {x, b}, {}, ok), "at least 1 output");
  HostTensor i64(program::I64, {4}), boolOut(program::BOOL, {2, 4});
  EXPECT_KERNEL_ERROR(runKernel("fused_elementwise", {x, i64}, {y}, ok),
                      "fused_elementwise: input 1 has dtype i64, expected f32, bf16 or f16");
  EXPECT_KERNEL_ERROR(runKernel("fused_elementwise", {x, b}, {boolOut}, ok),
                      "fused_elementwise: output 0 has dtype bool");
  HostTensor b3(F32, {3}), big(F32, {1, 2, 4}), y24(F32, {4, 2});
  EXPECT_KERNEL_ERROR(runKernel("fused_elementwise", {x, b3}, {y}, ok),
                      "fused_elementwise: input 1 of shape [3] does not broadcast to the output "
                      "shape [2x4]");
  EXPECT_KERNEL_ERROR(runKernel("fused_elementwise", {big, b}, {y}, ok),
                      "input 0 of shape [1x2x4] does not broadcast");
  // The output may not broadcast to an input either (no multidirectional broadcasting).
  HostTensor y14(F32, {1, 4});
  EXPECT_KERNEL_ERROR(runKernel("fused_elementwise", {x, b}, {y14}, ok),
                      "input 0 of shape [2x4] does not broadcast to the output shape [1x4]");
  EXPECT_KERNEL_ERROR(
      runKernel("fused_elementwise", {x, b}, {y, y24}, program({add, 0, 1}, {2, 2})),
      "fused_elementwise: output 1 has shape [4x2], but output 0 has [2x4]");

  // Attributes.
  Attrs noSteps;
  noSteps.ints("args", {0, 1}).ints("results", {2});
  EXPECT_KERNEL_ERROR(runKernel("fused_elementwise", {x, b}, {y}, noSteps),
                      "fused_elementwise: missing attribute 'steps'");
  Attrs noArgs;
  noArgs.s("steps", "add").ints("results", {2});
  EXPECT_KERNEL_ERROR(runKernel("fused_elementwise", {x, b}, {y}, noArgs),
                      "fused_elementwise: missing attribute 'args'");
  Attrs noResults;
  noResults.s("steps", "add").ints("args", {0, 1});
  EXPECT_KERNEL_ERROR(runKernel("fused_elementwise", {x, b}, {y}, noResults),
                      "missing attribute 'results'");
  EXPECT_KERNEL_ERROR(runKernel("fused_elementwise", {x, b}, {y}, named("add neg", {0, 1, 2}, {3})),
                      "fused_elementwise: attribute 'args' has 3 slots for 2 steps, not 2 per step");
  EXPECT_KERNEL_ERROR(runKernel("fused_elementwise", {x, b}, {y}, named("gelu", {0, -1}, {2})),
                      "fused_elementwise: step 0 is 'gelu', not a step");
  EXPECT_KERNEL_ERROR(runKernel("fused_elementwise", {x, b}, {y}, named("", {0, -1}, {2})),
                      "step 0 is '', not a step");
  EXPECT_KERNEL_ERROR(runKernel("fused_elementwise", {x, b}, {y}, named("add  neg", {0, 1, 2, -1, 3, -1}, {4})),
                      "step 1 is '', not a step");
  // Arity: a unary step with a second operand, a binary one without.
  EXPECT_KERNEL_ERROR(runKernel("fused_elementwise", {x, b}, {y}, program({neg, 0, 1}, {2})),
                      "fused_elementwise: step 0 (neg) takes one operand, so its b must be -1");
  EXPECT_KERNEL_ERROR(runKernel("fused_elementwise", {x, b}, {y}, program({add, 0, -1}, {2})),
                      "fused_elementwise: step 0 (add) reads slot -1");
  // Slots: out of range, the step's own, a later step's.
  EXPECT_KERNEL_ERROR(runKernel("fused_elementwise", {x, b}, {y}, program({add, 0, 7}, {2})),
                      "step 0 (add) reads slot 7, not an input or an earlier step (slots 0 to 1)");
  EXPECT_KERNEL_ERROR(runKernel("fused_elementwise", {x, b}, {y}, program({neg, 2, -1}, {2})),
                      "step 0 (neg) reads slot 2");
  EXPECT_KERNEL_ERROR(runKernel("fused_elementwise", {x, b}, {y},
                                program({neg, 0, -1, add, 4, 1, neg, 3, -1}, {4})),
                      "step 1 (add) reads slot 4, not an input or an earlier step (slots 0 to 2)");
  EXPECT_KERNEL_ERROR(runKernel("fused_elementwise", {x}, {y}, program({neg, -2, -1}, {1})),
                      "step 0 (neg) reads slot -2, not an input or an earlier step (slot 0)");
  // Results.
  EXPECT_KERNEL_ERROR(runKernel("fused_elementwise", {x, b}, {y}, program({add, 0, 1}, {2, 2})),
                      "fused_elementwise: attribute 'results' has 2 slots for 1 outputs");
  EXPECT_KERNEL_ERROR(runKernel("fused_elementwise", {x, b}, {y, y16}, program({add, 0, 1}, {2})),
                      "attribute 'results' has 1 slots for 2 outputs");
  EXPECT_KERNEL_ERROR(runKernel("fused_elementwise", {x, b}, {y}, program({add, 0, 1}, {3})),
                      "fused_elementwise: output 0 stores slot 3, which does not exist (slots 0 "
                      "to 2)");
  EXPECT_KERNEL_ERROR(runKernel("fused_elementwise", {x, b}, {y}, program({add, 0, 1}, {-1})),
                      "output 0 stores slot -1");
  // At most kMaxFusedInstructions steps.
  std::vector<int64_t> longCode;
  for (int64_t i = 0; i <= kMaxFusedInstructions; ++i)
    longCode.insert(longCode.end(), {neg, 1 + i, -1});
  EXPECT_KERNEL_ERROR(runKernel("fused_elementwise", {x, b}, {y}, program(longCode, {2})),
                      "fused_elementwise: attribute 'steps' has 65 steps, at most 64");
  longCode.resize(3 * kMaxFusedInstructions);
  EXPECT_KERNEL_OK(runKernel("fused_elementwise", {x, b}, {y}, program(longCode, {65})));
}

} // namespace
} // namespace shardc::runtime::testing
