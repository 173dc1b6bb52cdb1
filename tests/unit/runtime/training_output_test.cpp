// The text the training loop writes: metrics lines (valid JSON, f32-exact loss) and the
// progress line.
#include "runtime/training/metrics_log.h"
#include "runtime/training/progress.h"

#include <cmath>
#include <gtest/gtest.h>

namespace shardc::runtime {
namespace {

TEST(MetricsLog, FormatsOneJsonObjectPerStep) {
  EXPECT_EQ(MetricsLog::formatLine(12, 1.5f, 1e-3f, 3.21749),
            "{\"step\": 12, \"loss\": 1.5, \"lr\": 0.00100000005, \"step_time_ms\": 3.217}");
}

TEST(MetricsLog, LossHasNineSignificantDigits) {
  // 9 significant digits round-trip every f32: the string identifies the bits.
  float loss = 1.0f / 3.0f;
  std::string line = MetricsLog::formatLine(1, loss, 0.0f, 0.0);
  EXPECT_NE(line.find("\"loss\": 0.333333343,"), std::string::npos) << line;
}

TEST(MetricsLog, NonFiniteLossIsNull) {
  std::string line = MetricsLog::formatLine(3, NAN, 1.0f, 1.0);
  EXPECT_NE(line.find("\"loss\": null,"), std::string::npos) << line;
}

TEST(MetricsLog, ReportsTheLossScaleAndOverflow) {
  MetricsLog::LossScale scale{1073741824.0f, true};
  EXPECT_EQ(MetricsLog::formatLine(2, 1.5f, 1e-3f, 1.0, nullptr, -1, &scale),
            "{\"step\": 2, \"loss\": 1.5, \"lr\": 0.00100000005, \"step_time_ms\": 1.000, "
            "\"loss_scale\": 1073741824, \"overflow\": true}");
}

TEST(ProgressLine, ReportsStepLossLrThroughputAndEta) {
  ProgressLine progress(stderr, false, 0, 100, 32, "samples");
  // 10 steps of 32 samples in 2 s: 160 samples/s; 90 steps left at 0.2 s each: 18 s.
  EXPECT_EQ(progress.format(10, 4.12346f, 1e-3f, 2.0),
            "step 10/100  loss 4.1235  lr 1.00e-03  160 samples/s  ETA 18s");
}

TEST(ProgressLine, ResumedRunCountsOnlyItsOwnSteps) {
  ProgressLine progress(stderr, false, 50, 100, 1024, "tokens");
  EXPECT_EQ(progress.format(60, 2.0f, 5e-4f, 1.0),
            "step 60/100  loss 2.0000  lr 5.00e-04  10240 tokens/s  ETA 4s");
}

} // namespace
} // namespace shardc::runtime
