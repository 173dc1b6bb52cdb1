// The lr schedules at their boundaries: warmup start and end, the cosine midpoint, the last
// step (exactly min_lr), and the degenerate runs whose warmup covers every step.
#include "runtime/training/lr_schedule.h"

#include <cmath>
#include <gtest/gtest.h>

namespace shardc::runtime {
namespace {

LrSchedule cosine(double lr, double minLr, int64_t warmup, int64_t total) {
  LrSchedule s;
  s.kind = LrScheduleKind::Cosine;
  s.lr = lr;
  s.minLr = minLr;
  s.warmupSteps = warmup;
  s.totalSteps = total;
  return s;
}

TEST(LrSchedule, ConstantIsLrAtEveryStep) {
  LrSchedule s;
  s.lr = 3e-4;
  s.totalSteps = 10;
  for (int64_t k : {1, 5, 10, 11})
    EXPECT_EQ(s.at(k), 3e-4) << "step " << k;
}

TEST(LrSchedule, ConstantWithWarmupRisesLinearlyThenStays) {
  LrSchedule s;
  s.lr = 1.0;
  s.warmupSteps = 4;
  s.totalSteps = 10;
  EXPECT_DOUBLE_EQ(s.at(1), 0.25);
  EXPECT_DOUBLE_EQ(s.at(3), 0.75);
  EXPECT_DOUBLE_EQ(s.at(4), 1.0);
  EXPECT_DOUBLE_EQ(s.at(10), 1.0);
}

TEST(LrSchedule, CosineWarmupThenDecayToMinLr) {
  LrSchedule s = cosine(1e-3, 1e-4, 10, 110);
  EXPECT_DOUBLE_EQ(s.at(1), 1e-4);          // 1e-3 * 1/10
  EXPECT_DOUBLE_EQ(s.at(9), 9e-4);
  EXPECT_DOUBLE_EQ(s.at(10), 1e-3);         // end of warmup: the peak
  EXPECT_NEAR(s.at(60), 5.5e-4, 1e-15);     // halfway through the decay: (lr + min_lr) / 2
  EXPECT_NEAR(s.at(110), 1e-4, 1e-18);      // last step: min_lr
  EXPECT_DOUBLE_EQ(s.at(111), 1e-4);        // beyond the run
  // The formula in the header, at an arbitrary step.
  double r = (35.0 - 10.0) / 100.0;
  EXPECT_DOUBLE_EQ(s.at(35), 1e-4 + 0.5 * (1 + std::cos(std::acos(-1.0) * r)) * 9e-4);
}

TEST(LrSchedule, CosineWithoutWarmupStartsNearLr) {
  LrSchedule s = cosine(2.0, 0.0, 0, 4);
  EXPECT_NEAR(s.at(1), 2.0 * 0.5 * (1 + std::cos(std::acos(-1.0) / 4)), 1e-15);
  EXPECT_NEAR(s.at(2), 1.0, 1e-15);
  EXPECT_NEAR(s.at(4), 0.0, 1e-15);
}

TEST(LrSchedule, CosineWhoseWarmupCoversTheRunNeverDecays) {
  LrSchedule s = cosine(1.0, 0.0, 5, 5);
  EXPECT_DOUBLE_EQ(s.at(4), 0.8);
  EXPECT_DOUBLE_EQ(s.at(5), 1.0);
  LrSchedule longer = cosine(1.0, 0.0, 8, 5);
  EXPECT_DOUBLE_EQ(longer.at(5), 5.0 / 8.0);
}

TEST(LrSchedule, ParsesKinds) {
  LrScheduleKind kind = LrScheduleKind::Constant;
  EXPECT_TRUE(parseLrScheduleKind("cosine", &kind).isOk());
  EXPECT_EQ(kind, LrScheduleKind::Cosine);
  EXPECT_TRUE(parseLrScheduleKind("constant", &kind).isOk());
  EXPECT_EQ(kind, LrScheduleKind::Constant);
  Status bad = parseLrScheduleKind("linear", &kind);
  EXPECT_FALSE(bad.isOk());
  EXPECT_NE(bad.message().find("'linear'"), std::string::npos);
}

} // namespace
} // namespace shardc::runtime
