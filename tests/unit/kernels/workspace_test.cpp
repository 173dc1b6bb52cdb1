// The kernels' workspace: the Workspace carver, the registry's size functions, and for every
// kernel that takes scratch memory, that its size function gives exactly what the kernel uses
// (it runs in that many bytes and reports a too-small workspace, without overflowing it, in one
// byte less).
#include "runtime/kernels/cpu/workspace.h"
#include "tests/unit/kernels/test_support.h"

#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#ifndef SHARDC_KERNELS_DOC
#error "SHARDC_KERNELS_DOC must name docs/kernels.md"
#endif

namespace shardc::runtime::testing {
namespace {

using cpu::Workspace;

TEST(Workspace, SizingAlignsEveryPieceTo64Bytes) {
  Workspace sizing = Workspace::sizing();
  float *f = reinterpret_cast<float *>(1);
  double *d = reinterpret_cast<double *>(1);
  ASSERT_KERNEL_OK(sizing.take("k", 3, &f));
  EXPECT_EQ(f, nullptr);
  EXPECT_EQ(sizing.bytesUsed(), 12u);
  ASSERT_KERNEL_OK(sizing.take("k", 2, &d));
  EXPECT_EQ(d, nullptr);
  EXPECT_EQ(sizing.bytesUsed(), 64u + 16u);
  ASSERT_KERNEL_OK(sizing.take("k", 0, &d));
  EXPECT_EQ(sizing.bytesUsed(), 128u);
  EXPECT_KERNEL_ERROR(sizing.take("k", -1, &d), "k: cannot take -1 elements");
}

TEST(Workspace, CarvesTheGivenMemoryAndRefusesToOverflowIt) {
  WorkspaceStorage storage(80);
  KernelArgs args;
  storage.give(&args);
  Workspace workspace(args);
  float *f = nullptr;
  double *d = nullptr;
  ASSERT_KERNEL_OK(workspace.take("k", 3, &f));
  EXPECT_EQ(static_cast<void *>(f), args.workspace);
  ASSERT_KERNEL_OK(workspace.take("k", 2, &d));
  EXPECT_EQ(reinterpret_cast<uint8_t *>(d), static_cast<uint8_t *>(args.workspace) + 64);
  EXPECT_KERNEL_ERROR(workspace.take("k", 1, &d),
                      "k: needs at least 136 bytes of workspace, but the program gives it 80");
  // No workspace at all (a kernel called without one).
  KernelArgs none;
  Workspace empty(none);
  EXPECT_KERNEL_ERROR(empty.take("k", 1, &f), "needs at least 4 bytes of workspace");
  EXPECT_KERNEL_OK(empty.take("k", 0, &f));
}

TEST(Workspace, KernelsWithoutScratchNeedNoneAndUnknownKernelsAreErrors) {
  KernelArgs args;
  uint64_t bytes = 7;
  // Kernels without scratch need none, whatever their operands.
  ASSERT_KERNEL_OK(cpuKernelWorkspaceBytes("add", args, &bytes));
  EXPECT_EQ(bytes, 0u);
  EXPECT_KERNEL_ERROR(cpuKernelWorkspaceBytes("no_such_kernel", args, &bytes), "unknown kernel 'no_such_kernel'");
  // A size function rejects what its kernel would reject, without reading any data.
  EXPECT_KERNEL_ERROR(cpuKernelWorkspaceBytes("softmax", args, &bytes), "softmax");
}

// The kernels docs/kernels.md lists under "## Workspace".
std::set<std::string> documentedWorkspaceKernels() {
  std::ifstream in(SHARDC_KERNELS_DOC);
  EXPECT_TRUE(in.good()) << "cannot read " << SHARDC_KERNELS_DOC;
  std::set<std::string> names;
  std::string line;
  bool inSection = false;
  const std::regex name("`([a-z_0-9]+)`");
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0)
      inSection = line == "## Workspace";
    if (!inSection || line.rfind("| `", 0) != 0)
      continue;
    const std::string firstCell = line.substr(1, line.find('|', 1) - 1);
    for (std::sregex_iterator it(firstCell.begin(), firstCell.end(), name), end; it != end; ++it)
      names.insert((*it)[1]);
  }
  return names;
}

TEST(Workspace, TheDocumentedKernelsAreTheOnesWithASizeFunction) {
  // With no operands at all, a kernel without a size function needs 0 bytes, and one with a
  // size function rejects the call (every such kernel checks its operands).
  std::set<std::string> withSizeFunction;
  for (const std::string &name : cpuKernelNames()) {
    KernelArgs args;
    uint64_t bytes = 0;
    if (!cpuKernelWorkspaceBytes(name, args, &bytes).isOk())
      withSizeFunction.insert(name);
  }
  EXPECT_FALSE(withSizeFunction.empty());
  EXPECT_EQ(withSizeFunction, documentedWorkspaceKernels());
}

// One call of a kernel that takes workspace, with the bytes its size function must report.
struct Case {
  std::string name;
  std::string kernel;
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
  Attrs attrs;
  uint64_t expectedBytes;
};

// Runs the case with the reported workspace (it must succeed) and one byte less (it must
// report a workspace that is too small).
void checkCase(const Case &c) {
  SCOPED_TRACE(c.name);
  KernelArgs args;
  args.inputs = c.inputs;
  args.outputs = c.outputs;
  args.attrs = &c.attrs.map();
  uint64_t bytes = 0;
  ASSERT_KERNEL_OK(cpuKernelWorkspaceBytes(c.kernel, args, &bytes));
  EXPECT_EQ(bytes, c.expectedBytes);
  // The size function reads no data: operands that only mark presence give the same answer.
  KernelArgs typeOnly = args;
  for (Tensor &t : typeOnly.inputs)
    if (t.present())
      t = typeOnlyTensor(t.dtype, t.shape);
  for (Tensor &t : typeOnly.outputs)
    t = typeOnlyTensor(t.dtype, t.shape);
  uint64_t typeOnlyBytes = 0;
  ASSERT_KERNEL_OK(cpuKernelWorkspaceBytes(c.kernel, typeOnly, &typeOnlyBytes));
  EXPECT_EQ(typeOnlyBytes, bytes);

  KernelFn fn = findCpuKernel(c.kernel);
  ASSERT_NE(fn, nullptr);
  {
    WorkspaceStorage exact(bytes);
    KernelArgs run = args;
    exact.give(&run);
    EXPECT_KERNEL_OK(fn(run));
  }
  if (bytes > 0) {
    WorkspaceStorage smaller(bytes - 1);
    KernelArgs run = args;
    smaller.give(&run);
    EXPECT_KERNEL_ERROR(fn(run), c.kernel + ": needs at least " + std::to_string(bytes) +
                                     " bytes of workspace");
  }
}

TEST(Workspace, EveryKernelUsesExactlyWhatItsSizeFunctionSays) {
  const HostTensor x234 = HostTensor::of<float>({2, 3, 4}, randomFloats(24, -2, 2, 1));
  const HostTensor y234(program::F32, {2, 3, 4});
  const HostTensor x48 = HostTensor::of<float>({4, 8}, randomFloats(32, -2, 2, 2));
  const HostTensor out48(program::F32, {4, 8});
  const HostTensor scale8 = HostTensor::of<float>({8}, randomFloats(8, 0.5f, 1.5f, 3));
  const HostTensor scale1 = HostTensor::of<float>({1}, {1.5f});
  const HostTensor stats41 = HostTensor::of<float>({4, 1}, {0.1f, -0.2f, 0.3f, 0.0f});
  const HostTensor invStd41 = HostTensor::of<float>({4, 1}, {1.0f, 2.0f, 0.5f, 1.5f});
  const HostTensor dscale8(program::F32, {8}), dbias1(program::F32, {1});
  const HostTensor labels24 = HostTensor::of<int64_t>({2, 4}, {0, 1, 2, 0, 1, 2, 0, 1});
  const HostTensor lossScalar(program::F32, {});
  const HostTensor dlossScalar = HostTensor::scalar<float>(1.0f);
  const HostTensor logProb234 = HostTensor::of<float>({2, 3, 4}, randomFloats(24, -3, -0.1f, 4));
  const HostTensor x34i = HostTensor::of<int32_t>({3, 4}, randomInts<int32_t>(12, -9, 9, 5));
  const HostTensor y3i(program::I32, {3});
  const HostTensor x34 = HostTensor::of<float>({3, 4}, randomFloats(12, -2, 2, 6));
  const HostTensor y3(program::F32, {3});
  const HostTensor yMax3 = HostTensor::of<float>({3}, {2.0f, 2.0f, 2.0f});
  const HostTensor dy3 = HostTensor::of<float>({3}, {1.0f, 2.0f, 3.0f});
  const HostTensor dx34(program::F32, {3, 4});
  const HostTensor table = HostTensor::of<float>({6, 2}, randomFloats(12, -1, 1, 7));
  const HostTensor ids5 = HostTensor::of<int64_t>({5}, {0, 5, 2, 2, -1});
  const HostTensor gathered(program::F32, {5, 2});
  const HostTensor gatheredDy = HostTensor::of<float>({5, 2}, randomFloats(10, -1, 1, 8));
  const HostTensor tableGrad(program::F32, {6, 2});
  const HostTensor norm(program::F32, {});

  std::vector<Case> cases = {
      {"layer_norm, dense scale and bias", "layer_norm", {x48, scale8, scale8}, {out48},
       Attrs().i("axis", 1).f("epsilon", 1e-5f), 0},
      // A broadcast scale and bias are expanded into 8 floats each, 64-byte aligned.
      {"layer_norm, broadcast scale and bias", "layer_norm", {x48, scale1, scale1}, {out48},
       Attrs().i("axis", 1).f("epsilon", 1e-5f), 64 + 32},
      // dscale and dbias sums (8 doubles each), xhat (8 doubles), the accumulator (8 doubles).
      {"layer_norm_grad, every output", "layer_norm_grad", {out48, x48, scale8, stats41, invStd41},
       {out48, dscale8, dbias1}, Attrs().i("axis", 1), 3 * 64 + 64},
      // Only xhat (dx alone needs no sums), plus the broadcast scale before it.
      {"layer_norm_grad, dx with a broadcast scale", "layer_norm_grad",
       {out48, x48, scale1, stats41, invStd41}, {out48}, Attrs().i("axis", 1), 64 + 64},
      // The axis is not the innermost: a max (4 floats) and a sum (4 doubles) per position.
      {"softmax, middle axis", "softmax", {x234}, {y234}, Attrs().i("axis", 1), 64 + 32},
      {"softmax, last axis", "softmax", {x234}, {y234}, Attrs().i("axis", 2), 0},
      {"log_softmax, first axis", "log_softmax", {x234}, {y234}, Attrs().i("axis", 0),
       12 * 4 + 16 + 12 * 8},
      {"softmax_grad, middle axis", "softmax_grad", {y234, x234}, {y234}, Attrs().i("axis", 1), 32},
      {"log_softmax_grad, last axis", "log_softmax_grad", {y234, logProb234}, {y234},
       Attrs().i("axis", 2), 8},
      // log_prob in the workspace (24 floats), then the softmax's scratch for d = 4.
      {"softmax_cross_entropy_loss, no log_prob output", "softmax_cross_entropy_loss",
       {x234, labels24}, {lossScalar},
       Attrs().s("reduction", "mean").i("has_ignore_index", 0), 128 + 64 + 32},
      {"softmax_cross_entropy_loss, log_prob output", "softmax_cross_entropy_loss",
       {x234, labels24}, {lossScalar, y234},
       Attrs().s("reduction", "sum").i("has_ignore_index", 0), 64 + 32},
      // The class of each of the 2 x 4 target positions.
      {"softmax_cross_entropy_loss_grad", "softmax_cross_entropy_loss_grad",
       {dlossScalar, logProb234, labels24}, {y234},
       Attrs().s("reduction", "mean").i("has_ignore_index", 1).i("ignore_index", 2), 64},
      {"nll_loss_grad", "nll_loss_grad", {dlossScalar, labels24}, {y234},
       Attrs().s("reduction", "sum").i("has_ignore_index", 0), 64},
      // One accumulator per output element: double for float sums, the element type for max,
      // int64 for integer sums.
      {"reduce_sum f32", "reduce_sum", {x34}, {y3}, Attrs().ints("axes", {1}).i("keepdims", 0),
       24},
      {"reduce_mean i32", "reduce_mean", {x34i}, {y3i},
       Attrs().ints("axes", {1}).i("keepdims", 0), 24},
      {"reduce_max f32", "reduce_max", {x34}, {y3}, Attrs().ints("axes", {1}).i("keepdims", 0),
       12},
      {"reduce_max i32", "reduce_max", {x34i}, {y3i}, Attrs().ints("axes", {1}).i("keepdims", 0),
       12},
      // The tie count of each maximum.
      {"reduce_max_grad", "reduce_max_grad", {dy3, x34, yMax3}, {dx34},
       Attrs().ints("axes", {1}).i("keepdims", 0), 24},
      // One row number per index.
      {"gather", "gather", {table, ids5}, {gathered}, Attrs().i("axis", 0), 40},
      {"gather_grad", "gather_grad", {gatheredDy, ids5}, {tableGrad}, Attrs().i("axis", 0), 40},
      // One norm per input.
      {"global_norm", "global_norm", {x34, x48, scale8}, {norm}, Attrs(), 12},
  };
  for (const Case &c : cases)
    checkCase(c);
}

} // namespace
} // namespace shardc::runtime::testing
