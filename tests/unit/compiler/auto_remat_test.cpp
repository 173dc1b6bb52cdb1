// --remat auto's bisection (shardc/Parallel/AutoRemat.h) over a fake plan compiler: which
// plans it compiles, which it keeps and what it says it chose.
#include "shardc/Parallel/AutoRemat.h"

#include <gtest/gtest.h>

#include <functional>
#include <vector>

namespace shardc {
namespace {

// Peaks by position in the list of plans (0: none, 1..N: selective for c units, N+1..2N: full
// for c - N units): 1000 - 100 c bytes, so every step down the list saves 100 bytes.
class FakePlans : public RematPlanCompiler {
public:
  explicit FakePlans(int64_t units) : units_(units) {}

  int compile(const RematPlan &plan, uint64_t &peak, int64_t &units) override {
    compiled.push_back(name(plan));
    if (failAt == static_cast<int>(compiled.size()))
      return 1;
    int64_t c = plan.mode == "none"        ? 0
                : plan.mode == "selective" ? (plan.units < 0 ? units_ : plan.units)
                                           : units_ + (plan.units < 0 ? units_ : plan.units);
    peak = 1000 - 100 * c;
    units = units_;
    return 0;
  }
  void keepLast() override { kept = compiled.back(); }

  static std::string name(const RematPlan &plan) {
    return plan.mode + (plan.units < 0 ? "" : " " + std::to_string(plan.units));
  }

  std::vector<std::string> compiled;
  std::string kept;
  int failAt = 0; // the compile (1-based) that fails; 0: none
private:
  int64_t units_;
};

CompileOptions withMemory(uint64_t bytes) {
  CompileOptions opts;
  opts.model = "m.onnx";
  opts.gpuMemoryBytes = bytes;
  return opts;
}

TEST(AutoRemat, NoneFits) {
  FakePlans plans(4);
  std::string choice;
  ASSERT_EQ(chooseRemat(withMemory(1000), plans, choice), 0);
  EXPECT_EQ(plans.compiled, std::vector<std::string>{"none"});
  EXPECT_EQ(plans.kept, "none");
  EXPECT_EQ(choice, "auto (--gpu-memory 1000 bytes) chose none, the least recomputation that "
                    "fits; planned peak per rank of the plans tried: none 1000 bytes");
}

TEST(AutoRemat, BisectsToTheLeastThatFits) {
  FakePlans plans(4);
  std::string choice;
  // 450 bytes: plan 6 (full for 2 units, 400 bytes) is the first that fits.
  ASSERT_EQ(chooseRemat(withMemory(450), plans, choice), 0);
  EXPECT_EQ(plans.compiled,
            (std::vector<std::string>{"none", "full", "selective 4", "full 2", "full 1"}));
  EXPECT_EQ(plans.kept, "full 2");
  EXPECT_EQ(choice, "auto (--gpu-memory 450 bytes) chose full for the first 2 of 4 units, "
                    "selective for the rest, the least recomputation that fits; planned peak "
                    "per rank of the plans tried: none 1000 bytes, full 200 bytes, selective "
                    "for 4 units 600 bytes, full for 2 units 400 bytes, full for 1 units 500 "
                    "bytes");
}

TEST(AutoRemat, SelectiveForSomeUnits) {
  FakePlans plans(4);
  std::string choice;
  // 750 bytes: plan 3 (selective for 3 units, 700 bytes).
  ASSERT_EQ(chooseRemat(withMemory(750), plans, choice), 0);
  EXPECT_EQ(plans.kept, "selective 3");
  EXPECT_NE(choice.find("chose selective for the first 3 of 4 units, none for the rest, "),
            std::string::npos)
      << choice;
}

TEST(AutoRemat, OnlyFullFits) {
  FakePlans plans(4);
  std::string choice;
  // 250 bytes: only the last plan (full, 200 bytes) fits; the bisection keeps it.
  ASSERT_EQ(chooseRemat(withMemory(250), plans, choice), 0);
  EXPECT_EQ(plans.kept, "full");
  EXPECT_NE(choice.find("chose full, the least recomputation"), std::string::npos) << choice;
}

TEST(AutoRemat, NothingFits) {
  FakePlans plans(4);
  std::string choice;
  testing::internal::CaptureStderr();
  EXPECT_EQ(chooseRemat(withMemory(100), plans, choice), 1);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "shardc: error: m.onnx: --remat auto: no recomputation fits --gpu-memory 100 bytes: "
            "the smallest plan, full, needs 200 bytes per rank (planned peak per rank: none "
            "1000 bytes, full 200 bytes)\n");
  EXPECT_EQ(plans.compiled, (std::vector<std::string>{"none", "full"}));
}

TEST(AutoRemat, CompileFailureEndsTheSearch) {
  FakePlans plans(4);
  plans.failAt = 3;
  std::string choice;
  EXPECT_EQ(chooseRemat(withMemory(450), plans, choice), 1);
  EXPECT_EQ(plans.compiled.size(), 3u);
  EXPECT_EQ(plans.kept, "full");
}

} // namespace
} // namespace shardc
