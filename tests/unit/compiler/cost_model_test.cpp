// The cost model's step prediction (compiler/lib/Cost/CostModel.cpp) on a synthetic profile
// of uniform units, against the schedules' bubble theory, the data-parallel reduction's
// overlap and the ZeRO memory formulas, worked out by hand.
#include "shardc/Cost/CostModel.h"
#include "shardc/Cost/PredictedTrace.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <string>

namespace shardc::cost {
namespace {

// A synthetic profile: 8 units, each a forward "other" op of 1 ms and a backward one of 2 ms
// at the profiled 4 rows (bytes chosen for the device below), and 1 MB of parameters.
StepProfile uniformProfile() {
  StepProfile p;
  p.rows = 4;
  p.globalRows = 8;
  p.tokensPerRow = 16;
  for (int u = 0; u < 8; ++u) {
    p.units.push_back("/h." + std::to_string(u));
    ProfiledOp f;
    f.kind = ProfiledOp::Kind::Other;
    f.phase = ProfiledOp::Phase::Forward;
    f.unit = u;
    f.bytes = 1e-3 * 1e9; // 1 ms at 1 GB/s
    ProfiledOp b = f;
    b.phase = ProfiledOp::Phase::Backward;
    b.bytes = 2e-3 * 1e9;
    p.ops.push_back(f);
    p.ops.push_back(b);
    p.unitParamBytes.push_back(1e6);
    p.unitStashBytes.push_back(1e5);
    p.unitInputBytes.push_back(0);
  }
  p.modelFlops = 1e9;
  return p;
}

Cluster slowCluster() {
  Cluster c;
  c.name = "test";
  c.devicesPerNode = 8;
  c.device.memoryBandwidth = 1e9;
  c.device.memoryEfficiency = 1.0;
  c.device.peakFlopsF32 = c.device.peakFlopsBf16 = 1e12;
  c.intraNode = c.interNode = {1e9, 0};
  return c;
}

// One replica, 2 microbatches of 4 rows: 8 units x 3 ms each; on 4 stages of 2 units
// (F = 2 ms, B = 4 ms per microbatch) 1F1B takes (m + p - 1)(F + B) = (2 + 3) x 6 = 30 ms,
// its bubble 3 x 6 = 18 ms; interleaved with 2 chunks idles half of that; ZB-H1 (p-1) F.
TEST(CostModel, SchedulesFollowTheBubbleTheoryOnUniformStages) {
  const StepProfile profile = uniformProfile();
  const Cluster c = slowCluster();
  Candidate one;
  one.microBatches = 1;
  Prediction p;
  std::string why;
  ASSERT_TRUE(predictStep(profile, c, one, p, why)) << why;
  // 8 rows in one microbatch: twice the profiled rows, 48 ms.
  EXPECT_NEAR(p.stepSeconds, 0.048, 1e-12);
  Candidate pipe;
  pipe.pp = 4;
  pipe.microBatches = 2;
  pipe.schedule = "1f1b";
  ASSERT_TRUE(predictStep(profile, c, pipe, p, why)) << why;
  EXPECT_NEAR(p.stepSeconds, 0.030, 1e-12);
  EXPECT_NEAR(p.bubbleSeconds, 0.018, 1e-12);
  EXPECT_NEAR(p.bubbleFraction, 0.6, 1e-12);
  pipe.schedule = "interleaved";
  pipe.virtualStages = 2;
  ASSERT_TRUE(predictStep(profile, c, pipe, p, why)) << why;
  EXPECT_NEAR(p.bubbleSeconds, 0.009, 1e-12);
  pipe.schedule = "zb-h1";
  pipe.virtualStages = 1;
  ASSERT_TRUE(predictStep(profile, c, pipe, p, why)) << why;
  EXPECT_NEAR(p.bubbleSeconds, 3 * 0.002, 1e-12);
  // More chunks than units, rows that do not divide: refused with why.
  pipe.schedule = "interleaved";
  pipe.virtualStages = 4;
  EXPECT_FALSE(predictStep(profile, c, pipe, p, why));
  EXPECT_EQ(why, "16 pipeline chunks need as many repeated layers; the model has 8");
  Candidate uneven;
  uneven.dp = 3;
  EXPECT_FALSE(predictStep(profile, c, uneven, p, why));
  EXPECT_EQ(why, "the global batch's 8 rows do not split into 3 replicas of 1 microbatches");
}

// Two replicas: 8 MB of gradients all-reduced at 1 GB/s takes 8 ms, hidden behind the 4 rows'
// 16 ms backward pass; ZeRO divides the optimizer state and (stage 3) the parameters by dp.
TEST(CostModel, DataParallelReductionHidesBehindTheBackwardPassAndZeroDividesMemory) {
  const StepProfile profile = uniformProfile();
  Cluster c = slowCluster();
  Candidate dp;
  dp.dp = 2;
  Prediction p0, p3;
  std::string why;
  ASSERT_TRUE(predictStep(profile, c, dp, p0, why)) << why;
  EXPECT_NEAR(p0.stepSeconds, 0.024, 1e-12);
  EXPECT_EQ(p0.dpCommSeconds, 0.0);
  // 16 bytes per parameter byte... 8 MB of fp32 parameters: weights + gradients + 2x state
  // = 32 MB, and 8 units x 1e5 bytes kept for one microbatch.
  EXPECT_EQ(p0.peakBytes, static_cast<uint64_t>(8e6 * 4 + 8e5));
  // ZeRO-3 halves the parameters and the state on 2 replicas; the gradients stay whole until
  // the reduce-scatter after the backward pass: 8 MB x (1/2 + 1 + 2/2), and one unit's 1 MB
  // gathered whole.
  dp.zero = 3;
  ASSERT_TRUE(predictStep(profile, c, dp, p3, why)) << why;
  EXPECT_EQ(p3.peakBytes, static_cast<uint64_t>(8e6 * 2.5 + 8e5 + 1e6));
  // A slow link: the reduction (2 x 1/2 x 8 MB at 0.1 GB/s = 80 ms) shows past the 16 ms.
  c.intraNode.bandwidth = 1e8;
  ASSERT_TRUE(predictStep(profile, c, Candidate{2, 1, 1}, p0, why)) << why;
  EXPECT_NEAR(p0.dpCommSeconds, 0.080 - 0.016, 1e-12);
}

// The predicted timeline runs the schedule's steps with the prediction's per-chunk times: on
// the uniform stages 1F1B ends where its closed form says (30 ms), each stage's steps in the
// schedule's order (stage 3: F0 B0 F1 B1), the first stage's first backward waiting for the
// others' (4 forwards of 2 ms, then the backward passes of stages 3, 2 and 1, 4 ms each:
// starts at 8 + 3 x 4 = 20 ms); with the reduction hidden, dp adds a collective slice and nothing to the end.
TEST(CostModel, PredictedTraceRunsTheScheduleWithThePredictedStepTimes) {
  const StepProfile profile = uniformProfile();
  const Cluster c = slowCluster();
  Candidate pipe;
  pipe.pp = 4;
  pipe.microBatches = 2;
  pipe.schedule = "1f1b";
  Prediction p;
  std::string why, json;
  ASSERT_TRUE(predictStep(profile, c, pipe, p, why)) << why;
  double end = 0;
  ASSERT_TRUE(predictedTrace(pipe, p, c.name, json, end, why)) << why;
  EXPECT_NEAR(end, 0.030, 1e-12);
  const nlohmann::json trace = nlohmann::json::parse(json);
  std::vector<std::string> last;
  double firstBackwardStart = -1;
  for (const auto &e : trace["traceEvents"]) {
    if (e["ph"] != "X" || e["tid"] != 0)
      continue;
    if (e["pid"] == 3)
      last.push_back(e["name"]);
    if (e["pid"] == 0 && e["name"] == "B0")
      firstBackwardStart = e["ts"];
  }
  EXPECT_EQ(last, (std::vector<std::string>{"F0", "B0", "F1", "B1"}));
  EXPECT_NEAR(firstBackwardStart, 20000.0, 1e-6); // microseconds
  EXPECT_NEAR(trace["otherData"]["predicted_step_seconds"].get<double>(), 0.030, 1e-12);

  Candidate dp;
  dp.dp = 2;
  ASSERT_TRUE(predictStep(profile, c, dp, p, why)) << why;
  ASSERT_TRUE(predictedTrace(dp, p, c.name, json, end, why)) << why;
  EXPECT_NEAR(end, p.stepSeconds, 1e-12);
  EXPECT_NE(json.find("gradient all-reduce"), std::string::npos);
}

} // namespace
} // namespace shardc::cost
