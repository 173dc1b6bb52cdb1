// The kernel interface itself: dtype helpers, Tensor, attribute accessors, the kernel table
// (checked against docs/kernels.md), and that malformed calls fail cleanly for every kernel.
#include "tests/unit/kernels/test_support.h"
#include "runtime/kernels/kernel_traits.h"

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#ifndef SHARDC_KERNELS_DOC
#error "SHARDC_KERNELS_DOC must name docs/kernels.md"
#endif

namespace shardc::runtime::testing {
namespace {

TEST(KernelApi, DtypeHelpers) {
  EXPECT_EQ(dtypeSize(program::F32), 4u);
  EXPECT_EQ(dtypeSize(program::I64), 8u);
  EXPECT_EQ(dtypeSize(program::I32), 4u);
  EXPECT_EQ(dtypeSize(program::BOOL), 1u);
  EXPECT_EQ(dtypeSize(program::DTYPE_UNSPECIFIED), 0u);
  EXPECT_STREQ(dtypeName(program::F32), "f32");
  EXPECT_STREQ(dtypeName(program::I64), "i64");
  EXPECT_STREQ(dtypeName(program::I32), "i32");
  EXPECT_STREQ(dtypeName(program::BOOL), "bool");
}

TEST(KernelApi, TensorHelpers) {
  Tensor t;
  t.dtype = program::F32;
  t.shape = {2, 3};
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.sizeBytes(), 24u);
  EXPECT_EQ(t.rank(), 2);
  EXPECT_EQ(t.describe(), "f32[2x3]");
  EXPECT_FALSE(t.present());
  t.shape = {};
  EXPECT_EQ(t.numel(), 1);
  EXPECT_EQ(t.describe(), "f32[]");
  t.dtype = program::BOOL;
  t.shape = {4, 0};
  EXPECT_EQ(t.numel(), 0);
  EXPECT_EQ(t.describe(), "bool[4x0]");
}

TEST(KernelApi, AttributeAccessors) {
  Attrs attrs;
  attrs.i("axis", -2).f("epsilon", 0.25f).s("mode", "tanh").ints("perm", {2, 0, 1});
  KernelArgs args;
  args.attrs = &attrs.map();
  int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<int64_t> v;
  EXPECT_KERNEL_OK(getIntAttr(args, "axis", &i));
  EXPECT_EQ(i, -2);
  EXPECT_KERNEL_OK(getFloatAttr(args, "epsilon", &f));
  EXPECT_EQ(f, 0.25f);
  EXPECT_KERNEL_OK(getStringAttr(args, "mode", &s));
  EXPECT_EQ(s, "tanh");
  EXPECT_KERNEL_OK(getIntsAttr(args, "perm", &v));
  EXPECT_EQ(v, (std::vector<int64_t>{2, 0, 1}));

  EXPECT_KERNEL_ERROR(getIntAttr(args, "k", &i), "missing attribute 'k'");
  EXPECT_KERNEL_ERROR(getIntAttr(args, "epsilon", &i), "attribute 'epsilon' is not an int");
  EXPECT_KERNEL_ERROR(getFloatAttr(args, "axis", &f), "attribute 'axis' is not a float");
  EXPECT_KERNEL_ERROR(getStringAttr(args, "perm", &s), "attribute 'perm' is not a string");
  EXPECT_KERNEL_ERROR(getIntsAttr(args, "mode", &v), "attribute 'mode' is not a list of ints");
  KernelArgs noAttrs;
  EXPECT_KERNEL_ERROR(getIntAttr(noAttrs, "axis", &i), "missing attribute 'axis'");
}

// Kernel names in the first column of the tables in docs/kernels.md.
std::set<std::string> documentedKernels() {
  std::ifstream in(SHARDC_KERNELS_DOC);
  EXPECT_TRUE(in.good()) << "cannot read " << SHARDC_KERNELS_DOC;
  std::set<std::string> names;
  std::string line;
  const std::regex name("`([a-z_0-9]+)`");
  while (std::getline(in, line)) {
    if (line.rfind("| `", 0) != 0)
      continue;
    const std::string firstCell = line.substr(1, line.find('|', 1) - 1);
    for (std::sregex_iterator it(firstCell.begin(), firstCell.end(), name), end; it != end; ++it)
      names.insert((*it)[1]);
  }
  return names;
}

TEST(KernelRegistry, MatchesDocumentedKernels) {
  const std::vector<std::string> names = cpuKernelNames();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  const std::set<std::string> documented = documentedKernels();
  EXPECT_FALSE(documented.empty()) << "no kernel table parsed from " << SHARDC_KERNELS_DOC;
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()), documented);
  for (const std::string &name : names)
    EXPECT_NE(findCpuKernel(name), nullptr) << name;
  EXPECT_EQ(findCpuKernel("no_such_kernel"), nullptr);
  EXPECT_EQ(findCpuKernel(""), nullptr);
  EXPECT_EQ(findCpuKernel("Add"), nullptr);
}

// The traits come from the kernel list: the collectives, the optimizer updates and their
// in-place pairs, and nothing for a name that is no kernel.
TEST(KernelRegistry, TraitsOfTheKernelList) {
  for (const char *name :
       {"all_reduce", "reduce_scatter", "all_gather", "all_to_all", "send_recv"}) {
    EXPECT_TRUE(isCollectiveKernel(name)) << name;
    EXPECT_TRUE(kernelMovesDataBetweenRanks(name)) << name;
  }
  EXPECT_TRUE(isCollectiveKernel("shard_slice"));
  EXPECT_FALSE(kernelMovesDataBetweenRanks("shard_slice"));
  for (const char *name : {"adamw_update", "sgd_update"})
    EXPECT_TRUE(kernelHasTrait(name, kOptimizerUpdateKernel)) << name;
  for (const char *name : {"matmul", "gemm"})
    EXPECT_TRUE(kernelHasTrait(name, kMatrixProductKernel)) << name;
  EXPECT_TRUE(kernelHasTrait("scale_by_clip", kGradientClipKernel));
  for (const char *name : {"copy", "transpose"})
    EXPECT_TRUE(kernelHasTrait(name, kRearrangesValuesKernel)) << name;
  EXPECT_FALSE(kernelHasTrait("add", kRearrangesValuesKernel));
  EXPECT_TRUE(kernelHasTrait("cast", kConvertsDtypeKernel));
  EXPECT_TRUE(kernelHasTrait("dropout", kKeyedOnGlobalIndexKernel));
  EXPECT_TRUE(kernelUpdatesInPlace("adamw_update", 3, 2));
  EXPECT_TRUE(kernelUpdatesInPlace("sgd_update", 2, 1));
  EXPECT_FALSE(kernelUpdatesInPlace("sgd_update", 1, 0));
  int withTraits = 0;
  for (const std::string &name : cpuKernelNames())
    withTraits += kernelTraits(name) != 0;
  EXPECT_EQ(withTraits, 15);
  EXPECT_EQ(kernelTraits("no_such_kernel"), 0u);
  EXPECT_FALSE(isCollectiveKernel("add"));
}

// Every kernel, called with operand lists no valid program produces, returns an error and
// touches nothing it should not (an ASan/UBSan build of these tests catches stray accesses).
TEST(KernelRegistry, MalformedCallsFailCleanly) {
  HostTensor f23(program::F32, {2, 3}), f5(program::F32, {5});
  Tensor negative;
  negative.dtype = program::F32;
  negative.shape = {2, -3};
  negative.data = f23.view().data;
  Tensor unknownDtype = f23.view();
  unknownDtype.dtype = static_cast<DType>(99);
  const std::vector<std::pair<std::vector<Tensor>, std::vector<Tensor>>> calls = {
      {{}, {}},
      {{absent(), absent(), absent()}, {absent()}},
      {{f23, f23, f23}, {f5, f5}},
      {{negative}, {negative}},
      {{unknownDtype, unknownDtype}, {unknownDtype}},
  };
  for (const std::string &name : cpuKernelNames()) {
    for (size_t i = 0; i < calls.size(); ++i) {
      Status s = runKernel(name, calls[i].first, calls[i].second);
      EXPECT_FALSE(s.isOk()) << name << " accepted malformed call " << i;
      EXPECT_FALSE(s.message().empty()) << name;
    }
  }
  EXPECT_KERNEL_ERROR(runKernel("relu", {negative}, {negative}), "negative dimension");
  EXPECT_KERNEL_ERROR(runKernel("relu", {unknownDtype}, {unknownDtype}), "unknown dtype");
}

} // namespace
} // namespace shardc::runtime::testing
