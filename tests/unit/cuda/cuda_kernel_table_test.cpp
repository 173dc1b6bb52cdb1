// The CUDA kernel table, checked on any machine (no GPU needed): sorted, and every CUDA kernel
// implements a contract the CPU table defines.
#include "runtime/kernels/kernel.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace shardc::runtime {
namespace {

TEST(CudaKernelTable, IsSortedAndEveryKernelHasACpuKernelOfTheSameName) {
  const std::vector<std::string> names = kernelNames(DeviceKind::Cuda);
  ASSERT_FALSE(names.empty());
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
  for (const std::string &name : names) {
    EXPECT_NE(findKernel(DeviceKind::Cpu, name), nullptr) << name;
    EXPECT_NE(findKernel(DeviceKind::Cuda, name), nullptr) << name;
  }
}

TEST(CudaKernelTable, AKernelWithoutCudaImplementationIsNamedInTheError) {
  KernelArgs args;
  uint64_t bytes = 0;
  const Status status = kernelWorkspaceBytes(DeviceKind::Cuda, "no_such_kernel", args, &bytes);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("'no_such_kernel'"), std::string::npos) << status.message();
  EXPECT_EQ(findKernel(DeviceKind::Cuda, "no_such_kernel"), nullptr);
}

} // namespace
} // namespace shardc::runtime
