// The compiler's list of fused steps (FusedSteps.h: what shardc-fuse-elementwise emits and
// graph.fused_elementwise verifies) and the kernel's (fused_elementwise_code.h: what it runs)
// name the same steps with the same operand counts, so every program the compiler writes runs.
#include "shardc/Dialect/Graph/FusedSteps.h"

#include "runtime/kernels/fused_elementwise_code.h"

#include <gtest/gtest.h>

#include <string>

namespace shardc::graph {
namespace {

TEST(FusedSteps, CompilerAndKernelNameTheSameSteps) {
  ASSERT_EQ(fusedStepNames().size(), static_cast<size_t>(runtime::kNumFusedOps));
  for (llvm::StringRef name : fusedStepNames()) {
    runtime::FusedOp op;
    ASSERT_TRUE(runtime::fusedOpFromName(std::string(name), &op)) << name.str();
    EXPECT_EQ(fusedStepArity(name), runtime::fusedOpArity(op)) << name.str();
  }
  EXPECT_EQ(fusedStepArity("gelu"), 0);
  EXPECT_EQ(kMaxFusedSteps, runtime::kMaxFusedInstructions);
}

} // namespace
} // namespace shardc::graph
