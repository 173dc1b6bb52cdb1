// conv, conv_grad_input, conv_grad_weight, max_pool, max_pool_grad, avg_pool and avg_pool_grad
// against naive direct loops in double (not the kernels' im2col/sgemm or window code), on 1-, 2-
// and 3-D shapes with strides, asymmetric pads, dilation, groups and ceil-mode output sizes; the
// gradients also as adjoints of their forwards; and malformed calls, which must fail with a
// message.
#include "tests/unit/kernels/test_support.h"

#include <limits>
#include <tuple>

namespace shardc::runtime::testing {
namespace {

constexpr double kTolerance = 1e-5;        // vs the double reference, relative to max(1, |y|)
constexpr double kAdjointTolerance = 1e-4; // <A x, g> vs <x, A^T g>, relative

// Output positions of one spatial dim, floor or ceil mode (what the compiler computes).
int64_t outputSize(int64_t in, int64_t kernel, int64_t stride, int64_t padBegin, int64_t padEnd,
                   int64_t dilation, bool ceil) {
  const int64_t extent = in + padBegin + padEnd - dilation * (kernel - 1) - 1;
  return (ceil ? (extent + stride - 1) / stride : extent / stride) + 1;
}

std::vector<int64_t> tail(const std::vector<int64_t> &shape, size_t from) {
  return std::vector<int64_t>(shape.begin() + static_cast<std::ptrdiff_t>(from), shape.end());
}

double dot(const std::vector<float> &a, const std::vector<float> &b) {
  EXPECT_EQ(a.size(), b.size());
  double sum = 0.0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    sum += static_cast<double>(a[i]) * b[i];
  return sum;
}

void expectAdjoint(double forward, double backward, const std::string &what) {
  const double scale = std::max({1.0, std::fabs(forward), std::fabs(backward)});
  EXPECT_NEAR(forward, backward, kAdjointTolerance * scale) << what;
}

std::vector<float> toFloats(const std::vector<double> &v) {
  return std::vector<float>(v.begin(), v.end());
}

// ---- convolution --------------------------------------------------------------------------

struct ConvCase {
  std::string name;
  std::vector<int64_t> x; // [N, C, S...]
  std::vector<int64_t> w; // [M, C/group, K...]
  std::vector<int64_t> strides, pads, dilations;
  int64_t group = 1;
  bool ceil = false; // output sized in ceil mode (Conv has none, but the kernels accept it)

  size_t spatial() const { return x.size() - 2; }
  std::vector<int64_t> y() const {
    std::vector<int64_t> shape = {x[0], w[0]};
    for (size_t d = 0; d < spatial(); ++d)
      shape.push_back(outputSize(x[2 + d], w[2 + d], strides[d], pads[d], pads[d + spatial()],
                                 dilations[d], ceil));
    return shape;
  }
  Attrs attrs() const {
    return Attrs()
        .ints("strides", strides)
        .ints("pads", pads)
        .ints("dilations", dilations)
        .i("group", group);
  }
};

const std::vector<ConvCase> &convCases() {
  static const std::vector<ConvCase> cases = {
      {"1-D, stride 2, asymmetric pads", {2, 3, 11}, {4, 3, 3}, {2}, {1, 2}, {1}},
      {"1-D, stride 3, dilation 2", {1, 4, 17}, {2, 4, 3}, {3}, {0, 1}, {2}},
      {"1-D, ceil-mode size (last window past the input)",
       {1, 2, 7},
       {3, 2, 2},
       {3},
       {0, 0},
       {1},
       1,
       true},
      {"1-D, kernel longer than the input", {2, 1, 2}, {2, 1, 4}, {1}, {1, 1}, {1}},
      {"2-D, group 2, asymmetric pads, dilation 2",
       {2, 4, 7, 6},
       {6, 2, 3, 2},
       {2, 1},
       {1, 0, 0, 1},
       {1, 2},
       2},
      {"2-D depthwise", {1, 5, 8, 8}, {5, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 5},
      {"2-D depthwise with 2 filters per channel, stride 3",
       {2, 3, 6, 7},
       {6, 1, 2, 3},
       {3, 2},
       {2, 0, 1, 1},
       {1, 1},
       3},
      {"2-D, 1x1 kernel with stride 2", {1, 3, 5, 5}, {2, 3, 1, 1}, {2, 2}, {0, 0, 0, 0}, {1, 1}},
      {"2-D pointwise", {2, 6, 4, 5}, {3, 6, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}},
      {"2-D pointwise, group 2", {1, 4, 3, 3}, {4, 2, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 2},
      {"2-D, larger (many output positions)",
       {2, 8, 13, 12},
       {16, 8, 3, 3},
       {1, 1},
       {1, 1, 1, 1},
       {1, 1}},
      {"3-D, strides 2/1/2, asymmetric pads",
       {1, 2, 5, 6, 4},
       {3, 2, 2, 3, 2},
       {2, 1, 2},
       {0, 1, 1, 1, 0, 1},
       {1, 1, 2}},
      {"3-D, group 2, dilation 2, stride 3",
       {2, 4, 6, 5, 7},
       {4, 2, 2, 2, 2},
       {1, 2, 3},
       {1, 0, 2, 0, 1, 1},
       {2, 1, 2},
       2},
      {"empty batch", {0, 3, 5, 5}, {2, 3, 3, 3}, {1, 1}, {0, 0, 0, 0}, {1, 1}},
  };
  return cases;
}

// Calls fn(yFlat, wFlat, xFlat) for every product w·x that makes up conv's output y: the
// convolution written out as its definition, one tap at a time.
template <typename Fn> void forEachConvTerm(const ConvCase &c, Fn fn) {
  const std::vector<int64_t> yShape = c.y(), kShape = tail(c.w, 2);
  const size_t spatial = c.spatial();
  const int64_t cg = c.x[1] / c.group, mg = c.w[0] / c.group;
  for (int64_t yi = 0; yi < numelOf(yShape); ++yi) {
    const std::vector<int64_t> yIndex = unravel(yi, yShape);
    const int64_t n = yIndex[0], m = yIndex[1], g = m / mg;
    for (int64_t ch = 0; ch < cg; ++ch) {
      for (int64_t ki = 0; ki < numelOf(kShape); ++ki) {
        const std::vector<int64_t> k = unravel(ki, kShape);
        std::vector<int64_t> xIndex = {n, g * cg + ch}, wIndex = {m, ch};
        bool inside = true;
        for (size_t d = 0; d < spatial; ++d) {
          const int64_t pos = yIndex[2 + d] * c.strides[d] - c.pads[d] + k[d] * c.dilations[d];
          inside = inside && pos >= 0 && pos < c.x[2 + d];
          xIndex.push_back(pos);
          wIndex.push_back(k[d]);
        }
        if (inside)
          fn(yi, ravel(wIndex, c.w), ravel(xIndex, c.x));
      }
    }
  }
}

std::vector<float> referenceConv(const ConvCase &c, const std::vector<float> &x,
                                 const std::vector<float> &w) {
  std::vector<double> y(static_cast<size_t>(numelOf(c.y())), 0.0);
  forEachConvTerm(c, [&](int64_t yi, int64_t wi, int64_t xi) { y[yi] += double(w[wi]) * x[xi]; });
  return toFloats(y);
}

std::vector<float> referenceConvGradInput(const ConvCase &c, const std::vector<float> &dy,
                                          const std::vector<float> &w) {
  std::vector<double> dx(static_cast<size_t>(numelOf(c.x)), 0.0);
  forEachConvTerm(c, [&](int64_t yi, int64_t wi, int64_t xi) { dx[xi] += double(dy[yi]) * w[wi]; });
  return toFloats(dx);
}

std::vector<float> referenceConvGradWeight(const ConvCase &c, const std::vector<float> &x,
                                           const std::vector<float> &dy) {
  std::vector<double> dw(static_cast<size_t>(numelOf(c.w)), 0.0);
  forEachConvTerm(c, [&](int64_t yi, int64_t wi, int64_t xi) { dw[wi] += double(dy[yi]) * x[xi]; });
  return toFloats(dw);
}

// The three kernels' results on random operands of one case.
struct ConvResults {
  std::vector<float> x, w, dy;  // operands
  std::vector<float> y, dx, dw; // kernel outputs
};

ConvResults runConvCase(const ConvCase &c, unsigned seed) {
  ConvResults r;
  r.x = randomFloats(numelOf(c.x), -1, 1, seed);
  r.w = randomFloats(numelOf(c.w), -1, 1, seed + 1);
  r.dy = randomFloats(numelOf(c.y()), -1, 1, seed + 2);
  HostTensor x = HostTensor::of<float>(c.x, r.x), w = HostTensor::of<float>(c.w, r.w);
  HostTensor dy = HostTensor::of<float>(c.y(), r.dy);
  HostTensor y(program::F32, c.y()), dx(program::F32, c.x), dw(program::F32, c.w);
  EXPECT_KERNEL_OK(runKernel("conv", {x, w}, {y}, c.attrs()));
  EXPECT_KERNEL_OK(runKernel("conv_grad_input", {dy, w}, {dx}, c.attrs()));
  EXPECT_KERNEL_OK(runKernel("conv_grad_weight", {x, dy}, {dw}, c.attrs()));
  r.y = y.values<float>();
  r.dx = dx.values<float>();
  r.dw = dw.values<float>();
  return r;
}

TEST(ConvKernels, MatchTheDirectLoopReference) {
  unsigned seed = 100;
  for (const ConvCase &c : convCases()) {
    SCOPED_TRACE(c.name);
    const ConvResults r = runConvCase(c, seed += 3);
    expectValuesNear(r.y, referenceConv(c, r.x, r.w), kTolerance);
    expectValuesNear(r.dx, referenceConvGradInput(c, r.dy, r.w), kTolerance);
    expectValuesNear(r.dw, referenceConvGradWeight(c, r.x, r.dy), kTolerance);
  }
}

// <conv(x, w), dy> = <x, conv_grad_input(dy, w)> = <w, conv_grad_weight(x, dy)>: the gradients
// are the adjoints of the forward in each operand.
TEST(ConvKernels, GradientsAreTheAdjointsOfTheForward) {
  unsigned seed = 300;
  for (const ConvCase &c : convCases()) {
    SCOPED_TRACE(c.name);
    const ConvResults r = runConvCase(c, seed += 3);
    const double forward = dot(r.y, r.dy);
    expectAdjoint(forward, dot(r.x, r.dx), "conv_grad_input");
    expectAdjoint(forward, dot(r.w, r.dw), "conv_grad_weight");
  }
}

TEST(ConvKernels, WorkspaceIsOneColumnMatrixAndNoneForPointwise) {
  struct Expect {
    ConvCase c;
    uint64_t bytes;
  };
  // 2-D, C/group 2, K 3x2, O: (7+1-3)/2+1 = 3 by (6+1-3)/1+1 = 5: 2*6 rows x 15 columns.
  const ConvCase grouped = convCases()[4];
  ASSERT_EQ(grouped.y(), (std::vector<int64_t>{2, 6, 3, 5}));
  const ConvCase pointwise = convCases()[8];
  for (const char *kernel : {"conv", "conv_grad_input", "conv_grad_weight"}) {
    SCOPED_TRACE(kernel);
    for (const Expect &e : {Expect{grouped, 2 * 6 * 15 * 4}, Expect{pointwise, 0}}) {
      HostTensor x(program::F32, e.c.x), w(program::F32, e.c.w), y(program::F32, e.c.y());
      const Attrs attrs = e.c.attrs();
      KernelArgs args;
      const std::string name = kernel;
      if (name == "conv")
        args.inputs = {x, w}, args.outputs = {y};
      else if (name == "conv_grad_input")
        args.inputs = {y, w}, args.outputs = {x};
      else
        args.inputs = {x, y}, args.outputs = {w};
      args.attrs = &attrs.map();
      uint64_t bytes = 1;
      ASSERT_KERNEL_OK(cpuKernelWorkspaceBytes(kernel, args, &bytes));
      EXPECT_EQ(bytes, e.bytes) << e.c.name;
    }
  }
}

TEST(ConvKernels, TooSmallWorkspaceIsAnError) {
  const ConvCase c = convCases()[0];
  HostTensor x = HostTensor::of<float>(c.x, randomFloats(numelOf(c.x), -1, 1, 1));
  HostTensor w = HostTensor::of<float>(c.w, randomFloats(numelOf(c.w), -1, 1, 2));
  HostTensor y(program::F32, c.y());
  const Attrs attrs = c.attrs();
  using Call = std::tuple<const char *, std::vector<Tensor>, std::vector<Tensor>>;
  const std::vector<Call> calls = {
      {"conv", {x, w}, {y}}, {"conv_grad_input", {y, w}, {x}}, {"conv_grad_weight", {x, y}, {w}}};
  for (const auto &[name, inputs, outputs] : calls) {
    SCOPED_TRACE(name);
    KernelArgs args;
    args.inputs = inputs;
    args.outputs = outputs;
    args.attrs = &attrs.map();
    uint64_t need = 0;
    ASSERT_KERNEL_OK(cpuKernelWorkspaceBytes(name, args, &need));
    ASSERT_GT(need, 0u);
    // None at all, and half of what it needs.
    EXPECT_KERNEL_ERROR(findCpuKernel(name)(args), "bytes of workspace");
    WorkspaceStorage half(need / 2);
    half.give(&args);
    EXPECT_KERNEL_ERROR(findCpuKernel(name)(args), "bytes of workspace");
  }
}

TEST(ConvKernels, MalformedCallsAreErrors) {
  // A valid 2-D call: x [1,4,5,5], w [6,2,3,3] (group 2), y [1,6,3,3] (stride 2, pads 1).
  HostTensor x(program::F32, {1, 4, 5, 5}), w(program::F32, {6, 2, 3, 3});
  HostTensor y(program::F32, {1, 6, 3, 3});
  const auto attrs = [](std::vector<int64_t> strides, std::vector<int64_t> pads,
                        std::vector<int64_t> dilations, int64_t group) {
    return Attrs()
        .ints("strides", strides)
        .ints("pads", pads)
        .ints("dilations", dilations)
        .i("group", group);
  };
  const Attrs good = attrs({2, 2}, {1, 1, 1, 1}, {1, 1}, 2);
  EXPECT_KERNEL_OK(runKernel("conv", {x, w}, {y}, good));
  EXPECT_KERNEL_OK(runKernel("conv_grad_input", {y, w}, {x}, good));
  EXPECT_KERNEL_OK(runKernel("conv_grad_weight", {x, y}, {w}, good));

  // Wrong dtype, named by operand, in each kernel's roles.
  HostTensor xi(program::I32, {1, 4, 5, 5}), wi(program::I64, {6, 2, 3, 3});
  EXPECT_KERNEL_ERROR(runKernel("conv", {xi, w}, {y}, good), "conv: x is i32, expected f32");
  EXPECT_KERNEL_ERROR(runKernel("conv", {x, wi}, {y}, good), "conv: w is i64, expected f32");
  EXPECT_KERNEL_ERROR(runKernel("conv_grad_input", {y, w}, {xi}, good),
                      "conv_grad_input: dx is i32");
  EXPECT_KERNEL_ERROR(runKernel("conv_grad_weight", {x, y}, {wi}, good),
                      "conv_grad_weight: dw is i64");
  // Operand counts, missing and mistyped attributes.
  EXPECT_KERNEL_ERROR(runKernel("conv", {x}, {y}, good), "conv: expected 2 inputs, got 1");
  EXPECT_KERNEL_ERROR(runKernel("conv", {x, w, w}, {y}, good), "expected 2 inputs");
  EXPECT_KERNEL_ERROR(
      runKernel("conv", {x, w}, {y}, Attrs().ints("strides", {2, 2}).ints("pads", {1, 1, 1, 1})),
      "missing attribute 'dilations'");
  EXPECT_KERNEL_ERROR(
      runKernel(
          "conv", {x, w}, {y},
          Attrs().ints("strides", {2, 2}).ints("pads", {1, 1, 1, 1}).ints("dilations", {1, 1})),
      "missing attribute 'group'");
  // Attribute counts: one per spatial dim, 2 per dim for pads.
  EXPECT_KERNEL_ERROR(runKernel("conv", {x, w}, {y}, attrs({2, 2, 2}, {1, 1, 1, 1}, {1, 1}, 2)),
                      "conv: attribute 'strides' needs one entry per spatial dim of x "
                      "f32[1x4x5x5], got 3");
  EXPECT_KERNEL_ERROR(runKernel("conv", {x, w}, {y}, attrs({2, 2}, {1, 1}, {1, 1}, 2)),
                      "attribute 'pads' needs 2 entries per spatial dim");
  EXPECT_KERNEL_ERROR(
      runKernel("conv_grad_weight", {x, y}, {w}, attrs({2, 2}, {1, 1, 1, 1}, {1}, 2)),
      "conv_grad_weight: attribute 'dilations' needs one entry");
  // Attribute values.
  EXPECT_KERNEL_ERROR(runKernel("conv", {x, w}, {y}, attrs({2, 0}, {1, 1, 1, 1}, {1, 1}, 2)),
                      "attribute 'strides' [2, 0] has a value outside [1, 2^40]");
  EXPECT_KERNEL_ERROR(runKernel("conv", {x, w}, {y}, attrs({2, 2}, {1, -1, 1, 1}, {1, 1}, 2)),
                      "attribute 'pads' [1, -1, 1, 1] has a value outside [0, 2^40]");
  EXPECT_KERNEL_ERROR(runKernel("conv", {x, w}, {y}, attrs({2, 2}, {1, 1, 1, 1}, {-1, 1}, 2)),
                      "attribute 'dilations'");
  EXPECT_KERNEL_ERROR(
      runKernel("conv", {x, w}, {y}, attrs({int64_t(1) << 50, 2}, {1, 1, 1, 1}, {1, 1}, 2)),
      "has a value outside");
  // group: positive, dividing C and M; w's channels are C / group.
  EXPECT_KERNEL_ERROR(runKernel("conv", {x, w}, {y}, attrs({2, 2}, {1, 1, 1, 1}, {1, 1}, 3)),
                      "conv: attribute 'group' = 3 must be positive and divide the channels of x "
                      "f32[1x4x5x5] and the filters of w f32[6x2x3x3]");
  EXPECT_KERNEL_ERROR(runKernel("conv", {x, w}, {y}, attrs({2, 2}, {1, 1, 1, 1}, {1, 1}, 0)),
                      "attribute 'group' = 0");
  EXPECT_KERNEL_ERROR(runKernel("conv", {x, w}, {y}, attrs({2, 2}, {1, 1, 1, 1}, {1, 1}, 1)),
                      "conv: w f32[6x2x3x3] must have 4 channels per filter");
  HostTensor w4(program::F32, {4, 2, 3, 3});
  EXPECT_KERNEL_ERROR(runKernel("conv", {x, w4}, {y}, good),
                      "conv: y f32[1x6x3x3] must have the batch of x f32[1x4x5x5] and the "
                      "filters of w f32[4x2x3x3]");
  HostTensor y2(program::F32, {2, 6, 3, 3});
  EXPECT_KERNEL_ERROR(runKernel("conv_grad_input", {y2, w}, {x}, good),
                      "conv_grad_input: dy f32[2x6x3x3] must have the batch of dx");
  HostTensor w0(program::F32, {6, 2, 0, 3});
  EXPECT_KERNEL_ERROR(runKernel("conv", {x, w0}, {y}, good), "positive kernel size");
  // Ranks: 1 to 3 spatial dims, the same for all three.
  HostTensor x2(program::F32, {4, 5}), x6(program::F32, {1, 4, 5, 5, 5, 5});
  EXPECT_KERNEL_ERROR(runKernel("conv", {x2, w}, {y}, good), "must have one rank, 3 to 5");
  EXPECT_KERNEL_ERROR(runKernel("conv", {x6, x6}, {x6}, good), "must have one rank, 3 to 5");
  HostTensor w3(program::F32, {6, 2, 3});
  EXPECT_KERNEL_ERROR(runKernel("conv", {x, w3}, {y}, good), "must have one rank");
  // Output sizes: floor (3) or ceil (3) of (5+2-3)/2 + 1; 4 is neither.
  HostTensor y4(program::F32, {1, 6, 3, 4});
  EXPECT_KERNEL_ERROR(runKernel("conv", {x, w}, {y4}, good),
                      "conv: spatial dim 1 of y f32[1x6x3x4] does not fit x f32[1x4x5x5]: "
                      "kernel 3, stride 2, pads 1 and 1, dilation 1 give 3 positions, not 4");
  EXPECT_KERNEL_ERROR(runKernel("conv_grad_input", {y4, w}, {x}, good),
                      "conv_grad_input: spatial dim 1 of dy f32[1x6x3x4] does not fit dx");
  EXPECT_KERNEL_ERROR(runKernel("conv", {x, w}, {y}, attrs({2, 2}, {1, 1, 1, 1}, {4, 1}, 2)),
                      "conv: spatial dim 0 of y f32[1x6x3x3] does not fit x f32[1x4x5x5]: the "
                      "window (kernel 3, dilation 4) is longer than the padded input (7)");
  // The workspace-size function rejects what the kernel rejects.
  KernelArgs args;
  args.inputs = {x, w};
  args.outputs = {y4};
  args.attrs = &good.map();
  uint64_t bytes = 0;
  EXPECT_KERNEL_ERROR(cpuKernelWorkspaceBytes("conv", args, &bytes), "does not fit");

  // Sizes past int64 (an empty batch lets the other dims be anything) and past BLAS's 32-bit
  // dims are errors, checked on operands that only mark presence.
  const int64_t huge = int64_t(1) << 30;
  const Attrs unit3 = attrs({1, 1, 1}, {0, 0, 0, 0, 0, 0}, {1, 1, 1}, 1);
  args.inputs = {typeOnlyTensor(program::F32, {0, 1, huge, huge, huge}),
                 typeOnlyTensor(program::F32, {1, 1, 1, 1, 1})};
  args.outputs = {typeOnlyTensor(program::F32, {0, 1, huge, huge, huge})};
  args.attrs = &unit3.map();
  EXPECT_KERNEL_ERROR(cpuKernelWorkspaceBytes("conv", args, &bytes), "is too large");
  const Attrs unit1 = attrs({1}, {0, 0}, {1}, 1);
  args.inputs = {typeOnlyTensor(program::F32, {1, 1, 4 * huge}),
                 typeOnlyTensor(program::F32, {1, 1, 1})};
  args.outputs = {typeOnlyTensor(program::F32, {1, 1, 4 * huge})};
  args.attrs = &unit1.map();
  EXPECT_KERNEL_ERROR(cpuKernelWorkspaceBytes("conv", args, &bytes),
                      "conv: matrix dimension 4294967296 exceeds the BLAS limit");
}

// ---- pooling ------------------------------------------------------------------------------

struct PoolCase {
  std::string name;
  std::vector<int64_t> x; // [N, C, S...]
  std::vector<int64_t> kernel, strides, pads, dilations;
  bool ceil = false;

  size_t spatial() const { return x.size() - 2; }
  std::vector<int64_t> y() const {
    std::vector<int64_t> shape = {x[0], x[1]};
    for (size_t d = 0; d < spatial(); ++d)
      shape.push_back(outputSize(x[2 + d], kernel[d], strides[d], pads[d], pads[d + spatial()],
                                 dilations[d], ceil));
    return shape;
  }
  bool undilated() const {
    return std::all_of(dilations.begin(), dilations.end(), [](int64_t v) { return v == 1; });
  }
  Attrs maxAttrs() const {
    return Attrs()
        .ints("kernel_shape", kernel)
        .ints("strides", strides)
        .ints("pads", pads)
        .ints("dilations", dilations);
  }
  Attrs avgAttrs(int64_t countIncludePad) const {
    return Attrs()
        .ints("kernel_shape", kernel)
        .ints("strides", strides)
        .ints("pads", pads)
        .i("count_include_pad", countIncludePad);
  }
};

const std::vector<PoolCase> &poolCases() {
  static const std::vector<PoolCase> cases = {
      {"1-D overlapping, stride 2", {2, 3, 10}, {3}, {2}, {1, 1}, {1}},
      // E = 9: 6 windows in ceil mode, the last (taps 9, 10, 11) hanging past S + pad_end = 11.
      {"1-D ceil mode, last window past the padded input", {2, 2, 10}, {3}, {2}, {1, 1}, {1}, true},
      {"1-D stride 3 (gaps), kernel 2", {1, 2, 11}, {2}, {3}, {0, 0}, {1}},
      {"1-D dilation 2, stride 3", {1, 2, 13}, {3}, {3}, {2, 1}, {2}},
      {"2-D overlapping, asymmetric pads", {2, 3, 7, 8}, {3, 2}, {2, 1}, {1, 0, 1, 1}, {1, 1}},
      {"2-D ceil mode, strides 3", {1, 2, 9, 9}, {3, 2}, {3, 3}, {1, 1, 0, 0}, {1, 1}, true},
      {"2-D dilation 2", {1, 2, 9, 7}, {3, 2}, {2, 2}, {2, 1, 1, 0}, {2, 2}},
      {"2-D global", {2, 3, 4, 4}, {4, 4}, {1, 1}, {0, 0, 0, 0}, {1, 1}},
      {"3-D ceil mode, asymmetric pads",
       {1, 2, 5, 7, 7},
       {2, 3, 2},
       {2, 2, 3},
       {0, 1, 1, 1, 0, 0},
       {1, 1, 1},
       true},
      {"3-D dilation, overlapping",
       {2, 1, 6, 5, 7},
       {2, 2, 3},
       {1, 2, 2},
       {1, 0, 1, 0, 1, 1},
       {2, 1, 2}},
  };
  return cases;
}

// One output position's window: the flat positions (in x's plane) of its in-range taps, in
// row-major window order, and how many of its taps lie inside the padded extent.
struct RefWindow {
  std::vector<int64_t> inRange;
  int64_t padded = 0;
};

// Every output position's window, by enumerating all its taps.
std::vector<RefWindow> referenceWindows(const PoolCase &c) {
  const std::vector<int64_t> outShape = tail(c.y(), 2), inShape = tail(c.x, 2);
  const size_t spatial = c.spatial();
  std::vector<RefWindow> windows;
  for (int64_t oi = 0; oi < numelOf(outShape); ++oi) {
    const std::vector<int64_t> o = unravel(oi, outShape);
    RefWindow w;
    for (int64_t ki = 0; ki < numelOf(c.kernel); ++ki) {
      const std::vector<int64_t> k = unravel(ki, c.kernel);
      std::vector<int64_t> pos(spatial);
      bool inside = true, inPadded = true;
      for (size_t d = 0; d < spatial; ++d) {
        pos[d] = o[d] * c.strides[d] - c.pads[d] + k[d] * c.dilations[d];
        inside = inside && pos[d] >= 0 && pos[d] < inShape[d];
        inPadded = inPadded && pos[d] >= -c.pads[d] && pos[d] < inShape[d] + c.pads[d + spatial];
      }
      if (inside)
        w.inRange.push_back(ravel(pos, inShape));
      w.padded += inPadded ? 1 : 0;
    }
    windows.push_back(std::move(w));
  }
  return windows;
}

// The maximum of a window and where dy goes: NaN if any tap is NaN (then the last NaN, as
// PyTorch's scan replaces the maximum by every NaN), else the first maximal tap.
struct RefMax {
  float value = -std::numeric_limits<float>::infinity();
  int64_t at = -1;
};

RefMax referenceMax(const RefWindow &w, const float *plane) {
  RefMax best;
  for (int64_t i : w.inRange)
    if (std::isnan(plane[i]))
      best = {plane[i], i};
  if (best.at >= 0)
    return best;
  for (int64_t i : w.inRange)
    if (best.at < 0 || plane[i] > best.value)
      best = {plane[i], i};
  return best;
}

// max_pool and max_pool_grad by the reference windows.
void referenceMaxPool(const PoolCase &c, const std::vector<float> &x, const std::vector<float> &dy,
                      std::vector<float> *y, std::vector<float> *dx) {
  const std::vector<RefWindow> windows = referenceWindows(c);
  const int64_t planes = c.x[0] * c.x[1], inSize = numelOf(tail(c.x, 2));
  const int64_t outSize = static_cast<int64_t>(windows.size());
  y->assign(static_cast<size_t>(planes * outSize), 0.0f);
  std::vector<double> grad(x.size(), 0.0);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t o = 0; o < outSize; ++o) {
      const RefMax m = referenceMax(windows[o], x.data() + p * inSize);
      (*y)[p * outSize + o] = m.value;
      if (m.at >= 0)
        grad[p * inSize + m.at] += dy[p * outSize + o];
    }
  *dx = toFloats(grad);
}

// avg_pool and avg_pool_grad by the reference windows.
void referenceAvgPool(const PoolCase &c, bool countIncludePad, const std::vector<float> &x,
                      const std::vector<float> &dy, std::vector<float> *y, std::vector<float> *dx) {
  const std::vector<RefWindow> windows = referenceWindows(c);
  const int64_t planes = c.x[0] * c.x[1], inSize = numelOf(tail(c.x, 2));
  const int64_t outSize = static_cast<int64_t>(windows.size());
  y->assign(static_cast<size_t>(planes * outSize), 0.0f);
  std::vector<double> grad(x.size(), 0.0);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t o = 0; o < outSize; ++o) {
      const RefWindow &w = windows[o];
      const double divisor =
          static_cast<double>(countIncludePad ? w.padded : static_cast<int64_t>(w.inRange.size()));
      if (divisor == 0) {
        (*y)[p * outSize + o] = 0.0f;
        continue;
      }
      double sum = 0;
      for (int64_t i : w.inRange) {
        sum += x[p * inSize + i];
        grad[p * inSize + i] += dy[p * outSize + o] / divisor;
      }
      (*y)[p * outSize + o] = static_cast<float>(sum / divisor);
    }
  *dx = toFloats(grad);
}

TEST(MaxPoolKernels, MatchTheDirectLoopReferenceAndAreAdjoint) {
  unsigned seed = 500;
  for (const PoolCase &c : poolCases()) {
    // Continuous values (no ties), then values from {0, 1, 2} (ties everywhere, first wins).
    for (bool ties : {false, true}) {
      SCOPED_TRACE(c.name + (ties ? ", tied values" : ""));
      const std::vector<float> vx = ties ? randomValues<float>(numelOf(c.x), 0, 2, seed)
                                         : randomFloats(numelOf(c.x), -1, 1, seed);
      std::vector<float> vxRounded = vx;
      if (ties)
        for (float &v : vxRounded)
          v = std::round(v);
      const std::vector<float> vdy = randomFloats(numelOf(c.y()), -1, 1, seed + 1);
      seed += 2;
      HostTensor x = HostTensor::of<float>(c.x, vxRounded), dy = HostTensor::of<float>(c.y(), vdy);
      HostTensor y(program::F32, c.y()), dx(program::F32, c.x);
      ASSERT_KERNEL_OK(runKernel("max_pool", {x}, {y}, c.maxAttrs()));
      ASSERT_KERNEL_OK(runKernel("max_pool_grad", {dy, x}, {dx}, c.maxAttrs()));
      std::vector<float> refY, refDx;
      referenceMaxPool(c, vxRounded, vdy, &refY, &refDx);
      EXPECT_EQ(y.values<float>(), refY); // a maximum is exact
      expectValuesNear(dx.values<float>(), refDx, kTolerance);
      // y = x at the argmaxes, so <max_pool(x), dy> = <x, max_pool_grad(dy, x)>.
      expectAdjoint(dot(y.values<float>(), vdy), dot(vxRounded, dx.values<float>()),
                    "max_pool_grad");
    }
  }
}

TEST(MaxPoolKernels, TiesGoToTheFirstMaximumAndNaNPropagates) {
  // Windows of 3, stride 1 over [1, 5, 5, 2, 5]: maxima at 1, 1, 2 (the first of each tie).
  const Attrs attrs = Attrs()
                          .ints("kernel_shape", {3})
                          .ints("strides", {1})
                          .ints("pads", {0, 0})
                          .ints("dilations", {1});
  HostTensor x = HostTensor::of<float>({1, 1, 5}, {1, 5, 5, 2, 5});
  HostTensor dy = HostTensor::of<float>({1, 1, 3}, {1, 10, 100});
  HostTensor y(program::F32, {1, 1, 3}), dx(program::F32, {1, 1, 5});
  ASSERT_KERNEL_OK(runKernel("max_pool", {x}, {y}, attrs));
  ASSERT_KERNEL_OK(runKernel("max_pool_grad", {dy, x}, {dx}, attrs));
  EXPECT_EQ(y.values<float>(), (std::vector<float>{5, 5, 5}));
  EXPECT_EQ(dx.values<float>(), (std::vector<float>{0, 11, 100, 0, 0}));

  // NaN: every window holding one is NaN, and its dy goes to its last NaN (PyTorch's scan).
  const float nan = std::numeric_limits<float>::quiet_NaN();
  HostTensor xn = HostTensor::of<float>({1, 1, 5}, {1, nan, 3, nan, 0});
  ASSERT_KERNEL_OK(runKernel("max_pool", {xn}, {y}, attrs));
  ASSERT_KERNEL_OK(runKernel("max_pool_grad", {dy, xn}, {dx}, attrs));
  for (float v : y.values<float>())
    EXPECT_TRUE(std::isnan(v));
  EXPECT_EQ(dx.values<float>(), (std::vector<float>{0, 1, 0, 110, 0}));

  // All -inf: the first in-range tap holds the maximum. 2x2 windows padded by 1 over a 2x2
  // plane: each window's first in-range tap gets its dy.
  const float inf = std::numeric_limits<float>::infinity();
  const Attrs padded = Attrs()
                           .ints("kernel_shape", {2, 2})
                           .ints("strides", {1, 1})
                           .ints("pads", {1, 1, 1, 1})
                           .ints("dilations", {1, 1});
  HostTensor xi = HostTensor::of<float>({1, 1, 2, 2}, {-inf, -inf, -inf, -inf});
  HostTensor dy9 = HostTensor::of<float>({1, 1, 3, 3}, {1, 2, 4, 8, 16, 32, 64, 128, 256});
  HostTensor y9(program::F32, {1, 1, 3, 3}), dxi(program::F32, {1, 1, 2, 2});
  ASSERT_KERNEL_OK(runKernel("max_pool", {xi}, {y9}, padded));
  ASSERT_KERNEL_OK(runKernel("max_pool_grad", {dy9, xi}, {dxi}, padded));
  EXPECT_EQ(y9.values<float>(), std::vector<float>(9, -inf));
  // Window (i, j) starts at (i-1, j-1): its first in-range tap is (max(i-1,0), max(j-1,0)).
  EXPECT_EQ(dxi.values<float>(), (std::vector<float>{1 + 2 + 8 + 16, 4 + 32, 64 + 128, 256}));
}

TEST(AvgPoolKernels, MatchTheDirectLoopReferenceAndAreAdjoint) {
  unsigned seed = 700;
  for (const PoolCase &c : poolCases()) {
    if (!c.undilated())
      continue; // avg_pool has no dilations
    for (int64_t countIncludePad : {0, 1}) {
      SCOPED_TRACE(c.name + ", count_include_pad " + std::to_string(countIncludePad));
      const std::vector<float> vx = randomFloats(numelOf(c.x), -1, 1, seed);
      const std::vector<float> vdy = randomFloats(numelOf(c.y()), -1, 1, seed + 1);
      seed += 2;
      HostTensor x = HostTensor::of<float>(c.x, vx), dy = HostTensor::of<float>(c.y(), vdy);
      HostTensor y(program::F32, c.y()), dx(program::F32, c.x);
      ASSERT_KERNEL_OK(runKernel("avg_pool", {x}, {y}, c.avgAttrs(countIncludePad)));
      ASSERT_KERNEL_OK(runKernel("avg_pool_grad", {dy}, {dx}, c.avgAttrs(countIncludePad)));
      std::vector<float> refY, refDx;
      referenceAvgPool(c, countIncludePad == 1, vx, vdy, &refY, &refDx);
      expectValuesNear(y.values<float>(), refY, kTolerance);
      expectValuesNear(dx.values<float>(), refDx, kTolerance);
      expectAdjoint(dot(y.values<float>(), vdy), dot(vx, dx.values<float>()), "avg_pool_grad");
    }
  }
}

TEST(AvgPoolKernels, DivisorsOfPaddedAndHangingWindows) {
  // S = 4, kernel 3, stride 2, pads 1 and 1, ceil mode: E = 3, windows start at -1, 1, 3. The
  // last covers 3, 4, 5: one in-range tap (3), two inside [-1, 5) (3, 4).
  HostTensor x = HostTensor::of<float>({1, 1, 4}, {1, 2, 4, 8});
  HostTensor y(program::F32, {1, 1, 3});
  const auto attrs = [](int64_t countIncludePad) {
    return Attrs()
        .ints("kernel_shape", {3})
        .ints("strides", {2})
        .ints("pads", {1, 1})
        .i("count_include_pad", countIncludePad);
  };
  ASSERT_KERNEL_OK(runKernel("avg_pool", {x}, {y}, attrs(1)));
  EXPECT_EQ(y.values<float>(), (std::vector<float>{3.0f / 3, 14.0f / 3, 8.0f / 2}));
  ASSERT_KERNEL_OK(runKernel("avg_pool", {x}, {y}, attrs(0)));
  EXPECT_EQ(y.values<float>(), (std::vector<float>{3.0f / 2, 14.0f / 3, 8.0f / 1}));
  HostTensor dy = HostTensor::of<float>({1, 1, 3}, {6, 3, 12});
  HostTensor dx(program::F32, {1, 1, 4});
  ASSERT_KERNEL_OK(runKernel("avg_pool_grad", {dy}, {dx}, attrs(1)));
  EXPECT_EQ(dx.values<float>(), (std::vector<float>{2, 2 + 1, 1, 1 + 6}));

  // Pads as long as the kernel: a window can lie entirely in the padding. Its divisor with
  // count_include_pad 0 is 0, and it gives 0 (and takes no gradient), not NaN.
  const Attrs wide = Attrs()
                         .ints("kernel_shape", {2})
                         .ints("strides", {1})
                         .ints("pads", {2, 0})
                         .i("count_include_pad", 0);
  HostTensor x2 = HostTensor::of<float>({1, 1, 2}, {5, 7});
  HostTensor y3(program::F32, {1, 1, 3}), dx2(program::F32, {1, 1, 2});
  ASSERT_KERNEL_OK(runKernel("avg_pool", {x2}, {y3}, wide));
  EXPECT_EQ(y3.values<float>(), (std::vector<float>{0, 5, 6}));
  HostTensor dy3 = HostTensor::of<float>({1, 1, 3}, {100, 1, 2});
  ASSERT_KERNEL_OK(runKernel("avg_pool_grad", {dy3}, {dx2}, wide));
  EXPECT_EQ(dx2.values<float>(), (std::vector<float>{1 + 1, 1}));
}

TEST(PoolKernels, MalformedCallsAreErrors) {
  // A valid 2-D call: x [2,3,6,6], kernel 3x3, stride 2, pads 1: y [2,3,3,3].
  HostTensor x(program::F32, {2, 3, 6, 6}), y(program::F32, {2, 3, 3, 3});
  HostTensor dx(program::F32, {2, 3, 6, 6});
  const Attrs maxAttrs = Attrs()
                             .ints("kernel_shape", {3, 3})
                             .ints("strides", {2, 2})
                             .ints("pads", {1, 1, 1, 1})
                             .ints("dilations", {1, 1});
  const Attrs avgAttrs = Attrs()
                             .ints("kernel_shape", {3, 3})
                             .ints("strides", {2, 2})
                             .ints("pads", {1, 1, 1, 1})
                             .i("count_include_pad", 1);
  EXPECT_KERNEL_OK(runKernel("max_pool", {x}, {y}, maxAttrs));
  EXPECT_KERNEL_OK(runKernel("max_pool_grad", {y, x}, {dx}, maxAttrs));
  EXPECT_KERNEL_OK(runKernel("avg_pool", {x}, {y}, avgAttrs));
  EXPECT_KERNEL_OK(runKernel("avg_pool_grad", {y}, {dx}, avgAttrs));

  // Wrong dtype, named by operand.
  HostTensor xi(program::I64, {2, 3, 6, 6}), yb(program::BOOL, {2, 3, 3, 3});
  EXPECT_KERNEL_ERROR(runKernel("max_pool", {xi}, {y}, maxAttrs),
                      "max_pool: x is i64, expected f32");
  EXPECT_KERNEL_ERROR(runKernel("avg_pool", {x}, {yb}, avgAttrs), "avg_pool: y is bool");
  EXPECT_KERNEL_ERROR(runKernel("max_pool_grad", {y, x}, {xi}, maxAttrs),
                      "max_pool_grad: dx is i64");
  EXPECT_KERNEL_ERROR(runKernel("avg_pool_grad", {yb}, {dx}, avgAttrs),
                      "avg_pool_grad: dy is bool");
  // Operand counts and shapes.
  EXPECT_KERNEL_ERROR(runKernel("max_pool_grad", {y}, {dx}, maxAttrs), "expected 2 inputs");
  HostTensor dxWrong(program::F32, {2, 3, 6, 5});
  EXPECT_KERNEL_ERROR(runKernel("max_pool_grad", {y, x}, {dxWrong}, maxAttrs),
                      "max_pool_grad: dx has shape [2x3x6x5], expected [2x3x6x6]");
  HostTensor yc(program::F32, {2, 4, 3, 3});
  EXPECT_KERNEL_ERROR(runKernel("max_pool", {x}, {yc}, maxAttrs),
                      "max_pool: y f32[2x4x3x3] must have the batch and channels of x "
                      "f32[2x3x6x6]");
  HostTensor x2(program::F32, {6, 6}), y2(program::F32, {3, 3});
  EXPECT_KERNEL_ERROR(runKernel("avg_pool", {x2}, {y2}, avgAttrs), "must have one rank, 3 to 5");
  HostTensor y1(program::F32, {2, 3, 3});
  EXPECT_KERNEL_ERROR(runKernel("avg_pool_grad", {y1}, {dx}, avgAttrs), "must have one rank");
  // Attributes: missing, counts, values.
  EXPECT_KERNEL_ERROR(runKernel("max_pool", {x}, {y}, avgAttrs), "missing attribute 'dilations'");
  EXPECT_KERNEL_ERROR(runKernel("avg_pool", {x}, {y}, maxAttrs),
                      "missing attribute 'count_include_pad'");
  const auto maxWith = [](std::vector<int64_t> kernel, std::vector<int64_t> strides,
                          std::vector<int64_t> pads, std::vector<int64_t> dilations) {
    return Attrs()
        .ints("kernel_shape", kernel)
        .ints("strides", strides)
        .ints("pads", pads)
        .ints("dilations", dilations);
  };
  EXPECT_KERNEL_ERROR(runKernel("max_pool", {x}, {y}, maxWith({3}, {2, 2}, {1, 1, 1, 1}, {1, 1})),
                      "max_pool: attribute 'kernel_shape' needs one entry per spatial dim of x "
                      "f32[2x3x6x6], got 1");
  EXPECT_KERNEL_ERROR(runKernel("max_pool", {x}, {y}, maxWith({3, 3}, {2, 2}, {1, 1, 1}, {1, 1})),
                      "attribute 'pads' needs 2 entries per spatial dim");
  EXPECT_KERNEL_ERROR(
      runKernel("max_pool", {x}, {y}, maxWith({3, 0}, {2, 2}, {1, 1, 1, 1}, {1, 1})),
      "attribute 'kernel_shape' [3, 0] has a value outside [1, 2^40]");
  EXPECT_KERNEL_ERROR(
      runKernel("max_pool", {x}, {y}, maxWith({3, 3}, {2, 2}, {1, 1, -1, 1}, {1, 1})),
      "attribute 'pads' [1, 1, -1, 1] has a value outside [0, 2^40]");
  EXPECT_KERNEL_ERROR(
      runKernel("max_pool", {x}, {y}, maxWith({3, 3}, {0, 2}, {1, 1, 1, 1}, {1, 1})),
      "attribute 'strides'");
  EXPECT_KERNEL_ERROR(runKernel("avg_pool", {x}, {y},
                                Attrs()
                                    .ints("kernel_shape", {3, 3})
                                    .ints("strides", {2, 2})
                                    .ints("pads", {1, 1, 1, 1})
                                    .i("count_include_pad", 2)),
                      "avg_pool: attribute 'count_include_pad' = 2 must be 0 or 1");
  // Output sizes: (6+2-3)/2 + 1 = 3, ceil 4; 5 is neither; a window longer than the input.
  HostTensor y4(program::F32, {2, 3, 4, 3}), y5(program::F32, {2, 3, 3, 5});
  EXPECT_KERNEL_OK(runKernel("max_pool", {x}, {y4}, maxAttrs)); // ceil mode
  EXPECT_KERNEL_ERROR(runKernel("max_pool", {x}, {y5}, maxAttrs),
                      "max_pool: spatial dim 1 of y f32[2x3x3x5] does not fit x f32[2x3x6x6]: "
                      "kernel 3, stride 2, pads 1 and 1, dilation 1 give 3 positions (4 in ceil "
                      "mode), not 5");
  EXPECT_KERNEL_ERROR(runKernel("avg_pool_grad", {y5}, {dx}, avgAttrs),
                      "avg_pool_grad: spatial dim 1 of dy f32[2x3x3x5] does not fit dx "
                      "f32[2x3x6x6]");
  EXPECT_KERNEL_ERROR(runKernel("max_pool_grad", {y5, x}, {dx}, maxAttrs),
                      "max_pool_grad: spatial dim 1 of dy f32[2x3x3x5] does not fit x");
  EXPECT_KERNEL_ERROR(
      runKernel("max_pool", {x}, {y}, maxWith({3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 4})),
      "the window (kernel 3, dilation 4) is longer than the padded input (8)");
  // An empty batch with spatial dims whose product overflows int64.
  const int64_t huge = int64_t(1) << 30;
  HostTensor xHuge(program::F32, {0, 1, huge, huge, huge});
  EXPECT_KERNEL_ERROR(runKernel("max_pool", {xHuge}, {xHuge},
                                maxWith({1, 1, 1}, {1, 1, 1}, {0, 0, 0, 0, 0, 0}, {1, 1, 1})),
                      "is too large");
  // Huge kernel times huge dilation must be caught, not overflow.
  EXPECT_KERNEL_ERROR(
      runKernel("max_pool", {x}, {y},
                maxWith({3, int64_t(1) << 40}, {2, 2}, {1, 1, 1, 1}, {1, int64_t(1) << 40})),
      "is longer than the padded input");
}

} // namespace
} // namespace shardc::runtime::testing
