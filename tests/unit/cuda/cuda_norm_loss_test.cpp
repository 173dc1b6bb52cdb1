// The softmax, layer_norm and loss CUDA kernels against the CPU kernels: odd row lengths and
// row counts (not multiples of a warp or block), every axis, broadcast and absent optional
// operands, ignored targets and every reduction; and the shared checks' messages on both devices.
#include "tests/unit/cuda/cuda_compare.h"

namespace shardc::runtime::testing {
namespace {

using program::I32;
using program::I64;

const std::vector<int64_t> kRowLengths = {1, 7, 33, 1000, 4097};
const std::vector<int64_t> kRowCounts = {1, 3, 37};

TEST(CudaNormLoss, SoftmaxesAlongTheLastAxisMatchTheCpu) {
  SHARDC_REQUIRE_CUDA();
  for (const char *kernel : {"softmax", "log_softmax"})
    for (int64_t len : kRowLengths)
      for (int64_t rows : kRowCounts) {
        KernelCase c{kernel, {f32({rows, len}, Fill::uniform(-8, 8))}, {f32({rows, len})}};
        c.attrs.i("axis", 1);
        c.seed = static_cast<uint32_t>(len + rows);
        compareWithCpu(c);
      }
}

TEST(CudaNormLoss, SoftmaxesAlongEveryAxisMatchTheCpu) {
  SHARDC_REQUIRE_CUDA();
  for (const char *kernel : {"softmax", "log_softmax"}) {
    for (int64_t axis : {0, 1, 2}) {
      KernelCase c{kernel, {f32({5, 33, 7}, Fill::uniform(-5, 5))}, {f32({5, 33, 7})}};
      c.attrs.i("axis", axis);
      compareWithCpu(c);
    }
    KernelCase c{kernel, {f32({7}, Fill::uniform(-5, 5))}, {f32({7})}};
    c.attrs.i("axis", 0);
    compareWithCpu(c);
  }
}

TEST(CudaNormLoss, SoftmaxGradsMatchTheCpu) {
  SHARDC_REQUIRE_CUDA();
  for (const char *kernel : {"softmax_grad", "log_softmax_grad"}) {
    for (int64_t len : kRowLengths)
      for (int64_t rows : {1, 37}) {
        // y as a forward would give it: in (0, 1) for softmax, <= 0 for log_softmax.
        const Fill y = std::string(kernel) == "softmax_grad" ? Fill::uniform(0, 1)
                                                             : Fill::uniform(-6, 0);
        KernelCase c{kernel, {f32({rows, len}), f32({rows, len}, y)}, {f32({rows, len})}};
        c.attrs.i("axis", 1);
        c.seed = static_cast<uint32_t>(len * 3 + rows);
        compareWithCpu(c);
      }
    for (int64_t axis : {0, 1, 2}) {
      KernelCase c{kernel, {f32({4, 9, 5}), f32({4, 9, 5}, Fill::uniform(-1, 0))}, {f32({4, 9, 5})}};
      c.attrs.i("axis", axis);
      compareWithCpu(c);
    }
  }
}

TEST(CudaNormLoss, LayerNormMatchesTheCpu) {
  SHARDC_REQUIRE_CUDA();
  for (int64_t len : kRowLengths)
    for (int64_t rows : kRowCounts)
      for (int variant = 0; variant < 3; ++variant) {
        // variant 0: scale, bias, both statistics; 1: no bias, y only; 2: absent bias, y, mean.
        KernelCase c{"layer_norm",
                     {f32({rows, len}, Fill::uniform(-3, 5)), f32({len}, Fill::uniform(0.5, 2))},
                     {f32({rows, len})}};
        if (variant == 0) {
          c.inputs.push_back(f32({len}));
          c.outputs.push_back(f32({rows, 1}));
          c.outputs.push_back(f32({rows, 1}));
        } else if (variant == 2) {
          c.inputs.push_back(absentOperand());
          c.outputs.push_back(f32({rows, 1}));
        }
        c.attrs.i("axis", 1).f("epsilon", 1e-5f);
        c.seed = static_cast<uint32_t>(len + rows * 5 + variant);
        compareWithCpu(c);
      }
}

TEST(CudaNormLoss, LayerNormOverSeveralDimsWithBroadcastParamsMatchesTheCpu) {
  SHARDC_REQUIRE_CUDA();
  // Normalised over dims [axis, 3) of [3, 5, 7]; scale and bias broadcast differently.
  for (int64_t axis : {0, 1, 2}) {
    const std::vector<int64_t> shape = {3, 5, 7};
    const std::vector<int64_t> norm(shape.begin() + axis, shape.end());
    std::vector<int64_t> stats = shape;
    for (size_t d = static_cast<size_t>(axis); d < 3; ++d)
      stats[d] = 1;
    KernelCase c{"layer_norm",
                 {f32({3, 5, 7}), f32({1}, Fill::uniform(0.5, 2)), f32({norm.back()})},
                 {f32({3, 5, 7}), f32(stats), f32(stats)}};
    c.attrs.i("axis", axis).f("epsilon", 1e-3f);
    compareWithCpu(c);
  }
}

TEST(CudaNormLoss, LayerNormGradMatchesTheCpu) {
  SHARDC_REQUIRE_CUDA();
  for (int64_t len : kRowLengths)
    for (int64_t rows : kRowCounts)
      for (size_t outputs = 1; outputs <= 3; ++outputs) {
        KernelCase c{"layer_norm_grad",
                     {f32({rows, len}), f32({rows, len}, Fill::uniform(-3, 3)),
                      f32({len}, Fill::uniform(0.5, 2)), f32({rows, 1}, Fill::uniform(-1, 1)),
                      f32({rows, 1}, Fill::uniform(0.5, 2))},
                     {f32({rows, len}), f32({len}), f32({len})}};
        c.outputs.resize(outputs);
        c.attrs.i("axis", 1);
        c.seed = static_cast<uint32_t>(len * 7 + rows + outputs);
        compareWithCpu(c);
      }
  // Many rows: several row chunks in the parameter sums.
  KernelCase c{"layer_norm_grad",
               {f32({1000, 33}), f32({1000, 33}), f32({33}, Fill::uniform(0.5, 2)),
                f32({1000, 1}, Fill::uniform(-1, 1)), f32({1000, 1}, Fill::uniform(0.5, 2))},
               {f32({1000, 33}), f32({33}), f32({33})}};
  c.attrs.i("axis", 1);
  compareWithCpu(c);
}

TEST(CudaNormLoss, LayerNormGradWithBroadcastParamsMatchesTheCpu) {
  SHARDC_REQUIRE_CUDA();
  // Normalised over [5, 7]: scale [5, 1] (so dscale [5, 1]), dbias [7].
  KernelCase c{"layer_norm_grad",
               {f32({3, 5, 7}), f32({3, 5, 7}), f32({5, 1}, Fill::uniform(0.5, 2)),
                f32({3, 1, 1}, Fill::uniform(-1, 1)), f32({3, 1, 1}, Fill::uniform(0.5, 2))},
               {f32({3, 5, 7}), f32({5, 1}), f32({7})}};
  c.attrs.i("axis", 1);
  compareWithCpu(c);
}

// Targets for `classes` classes with ignore_index -1 among them (every fifth one).
Fill targetsWithIgnored(int64_t classes, int64_t count) {
  std::vector<double> values;
  for (int64_t i = 0; i < count; ++i)
    values.push_back(i % 5 == 2 ? -1.0 : static_cast<double>((i * 7 + 3) % classes));
  return Fill::fixed(values);
}

Attrs lossAttrs(const char *reduction, bool ignore) {
  Attrs a;
  a.s("reduction", reduction).i("has_ignore_index", ignore ? 1 : 0);
  if (ignore)
    a.i("ignore_index", -1);
  return a;
}

TEST(CudaNormLoss, SoftmaxCrossEntropyLossMatchesTheCpu) {
  SHARDC_REQUIRE_CUDA();
  for (int64_t classes : kRowLengths)
    for (const char *reduction : {"mean", "sum", "none"})
      for (int variant = 0; variant < 3; ++variant) {
        // 0: ignored targets, log_prob output; 1: class weights, no log_prob; 2: [N, C, d] i32.
        const int64_t n = 37;
        const bool spatial = variant == 2;
        const std::vector<int64_t> scores = spatial ? std::vector<int64_t>{n, classes, 3}
                                                    : std::vector<int64_t>{n, classes};
        const std::vector<int64_t> targets = spatial ? std::vector<int64_t>{n, 3}
                                                     : std::vector<int64_t>{n};
        const int64_t count = spatial ? n * 3 : n;
        KernelCase c{"softmax_cross_entropy_loss",
                     {f32(scores, Fill::uniform(-6, 6)),
                      typed(spatial ? I32 : I64, targets,
                            variant == 1 ? Fill::integers(0, classes - 1)
                                         : targetsWithIgnored(classes, count))},
                     {f32(std::string(reduction) == "none" ? targets : std::vector<int64_t>{})}};
        if (variant == 1)
          c.inputs.push_back(f32({classes}, Fill::uniform(0.1, 2)));
        if (variant != 1)
          c.outputs.push_back(f32(scores));
        c.attrs = lossAttrs(reduction, variant != 1);
        c.seed = static_cast<uint32_t>(classes + variant);
        compareWithCpu(c);
      }
}

TEST(CudaNormLoss, SoftmaxCrossEntropyLossGradMatchesTheCpu) {
  SHARDC_REQUIRE_CUDA();
  for (int64_t classes : kRowLengths)
    for (const char *reduction : {"mean", "sum", "none"})
      for (bool weights : {false, true}) {
        const int64_t n = 37;
        const bool none = std::string(reduction) == "none";
        KernelCase c{"softmax_cross_entropy_loss_grad",
                     {f32(none ? std::vector<int64_t>{n} : std::vector<int64_t>{}),
                      f32({n, classes}, Fill::uniform(-8, 0)),
                      typed(I64, {n}, targetsWithIgnored(classes, n))},
                     {f32({n, classes})}};
        if (weights)
          c.inputs.push_back(f32({classes}, Fill::uniform(0.1, 2)));
        c.attrs = lossAttrs(reduction, true);
        c.seed = static_cast<uint32_t>(classes * 3 + weights);
        compareWithCpu(c);
      }
}

TEST(CudaNormLoss, NllLossAndGradMatchTheCpu) {
  SHARDC_REQUIRE_CUDA();
  for (int64_t classes : {1, 7, 1000})
    for (const char *reduction : {"mean", "sum", "none"})
      for (bool weights : {false, true}) {
        const int64_t n = 5, d = 3;
        const bool none = std::string(reduction) == "none";
        const std::vector<int64_t> lossShape =
            none ? std::vector<int64_t>{n, d} : std::vector<int64_t>{};
        KernelCase f{"nll_loss",
                     {f32({n, classes, d}, Fill::uniform(-8, 0)),
                      typed(I64, {n, d}, targetsWithIgnored(classes, n * d))},
                     {f32(lossShape)}};
        KernelCase g{"nll_loss_grad",
                     {f32(lossShape), typed(I64, {n, d}, targetsWithIgnored(classes, n * d))},
                     {f32({n, classes, d})}};
        if (weights) {
          f.inputs.push_back(f32({classes}, Fill::uniform(0.1, 2)));
          g.inputs.push_back(f32({classes}, Fill::uniform(0.1, 2)));
        }
        f.attrs = lossAttrs(reduction, true);
        g.attrs = lossAttrs(reduction, true);
        compareWithCpu(f);
        compareWithCpu(g);
      }
  // Every target ignored: `mean` is 0 / 0 = NaN on both, its gradient zeros.
  KernelCase f{"nll_loss", {f32({4, 3}), typed(I64, {4}, Fill::fixed({-1}))}, {f32({})}};
  f.attrs = lossAttrs("mean", true);
  compareWithCpu(f);
  KernelCase g{"nll_loss_grad", {f32({}), typed(I64, {4}, Fill::fixed({-1}))}, {f32({4, 3})}};
  g.attrs = lossAttrs("mean", true);
  compareWithCpu(g);
}

// The checks are shared, so a rejected call gives one message on both devices; it fails before
// any data is read, so this needs no GPU.
TEST(CudaNormLoss, RejectedCallsGiveTheCpuMessages) {
  const std::vector<std::pair<std::string, KernelArgs>> calls = [] {
    std::vector<std::pair<std::string, KernelArgs>> out;
    KernelArgs softmax;
    softmax.inputs = {typeOnlyTensor(program::F32, {2, 3})};
    softmax.outputs = {typeOnlyTensor(program::F32, {2, 3})};
    out.emplace_back("softmax", softmax);
    KernelArgs norm;
    norm.inputs = {typeOnlyTensor(program::F32, {2, 3}), typeOnlyTensor(program::F32, {4})};
    norm.outputs = {typeOnlyTensor(program::F32, {2, 3})};
    out.emplace_back("layer_norm", norm);
    KernelArgs loss;
    loss.inputs = {typeOnlyTensor(program::F32, {2, 3}), typeOnlyTensor(program::F32, {2})};
    loss.outputs = {typeOnlyTensor(program::F32, {})};
    out.emplace_back("softmax_cross_entropy_loss", loss);
    return out;
  }();
  Attrs softmaxAttrs, normAttrs;
  softmaxAttrs.i("axis", 2);
  normAttrs.i("axis", 1).f("epsilon", 1e-5f);
  Attrs lossAttrsMean = lossAttrs("mean", false);
  const AttrMap *attrs[] = {&softmaxAttrs.map(), &normAttrs.map(), &lossAttrsMean.map()};
  for (size_t i = 0; i < calls.size(); ++i) {
    KernelArgs cpuArgs = calls[i].second, cudaArgs = calls[i].second;
    cpuArgs.attrs = cudaArgs.attrs = attrs[i];
    KernelFn cpu = findKernel(DeviceKind::Cpu, calls[i].first);
    KernelFn cuda = findKernel(DeviceKind::Cuda, calls[i].first);
    ASSERT_NE(cpu, nullptr);
    ASSERT_NE(cuda, nullptr);
    const Status a = cpu(cpuArgs), b = cuda(cudaArgs);
    EXPECT_FALSE(a.isOk()) << calls[i].first;
    EXPECT_FALSE(b.isOk()) << calls[i].first;
    EXPECT_EQ(a.message(), b.message());
    uint64_t bytes = 0;
    const Status w = kernelWorkspaceBytes(DeviceKind::Cuda, calls[i].first, cudaArgs, &bytes);
    if (calls[i].first != "softmax") // softmax needs no workspace on CUDA
      EXPECT_EQ(w.message(), a.message());
  }
}

} // namespace
} // namespace shardc::runtime::testing
