// The pipeline schedules (passes/pipeline/PipelineSchedule.h) against their theory: on uniform
// stages (F = B = W = one unit; 1F1B and GPipe run B and W as one step of two), the simulated
// idle share of the step is (p-1)/(m+p-1) for GPipe and 1F1B, (p-1)/(v·m+p-1) for the
// interleaved schedule with v chunks per rank (each chunk-step a unit) and (p-1)/(3m+p-1) for
// ZB-H1, a third of 1F1B's idle time; each microbatch's steps appear once, in dependency order; 1F1B
// and ZB-H1 hold at most p microbatches' activations on the first stage, GPipe m.
#include "passes/pipeline/PipelineSchedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace shardc::pipeline {
namespace {

// Each rank's list as the pass builds it (passes/pipeline/SplitStages.cpp): a transfer before
// a step that receives (F from the virtual stage before, B from the one after) and after a
// step that sends, merged into one between two steps; rank s's chunk c is virtual stage
// c·p + s of p·v.
std::vector<std::vector<TimelineEntry>> timeline(const std::vector<std::vector<Step>> &steps,
                                                 bool splitW, int64_t v = 1) {
  const int64_t p = static_cast<int64_t>(steps.size()), last = p * v - 1;
  std::vector<std::vector<TimelineEntry>> lists(steps.size());
  for (int64_t s = 0; s < p; ++s) {
    const auto &list = steps[static_cast<size_t>(s)];
    for (size_t j = 0; j <= list.size(); ++j) {
      TimelineEntry t;
      t.isTransfer = true;
      if (j > 0) {
        const Step &before = list[j - 1];
        const int64_t q = before.chunk * p + s;
        if (before.kind == StepKind::Forward && q < last)
          t.sendTo = (q + 1) % p;
        if (before.kind == StepKind::Backward && q > 0)
          t.sendTo = (q - 1) % p;
      }
      if (j < list.size()) {
        const Step &after = list[j];
        const int64_t q = after.chunk * p + s;
        if (after.kind == StepKind::Forward && q > 0)
          t.recvFrom = (q - 1) % p;
        if (after.kind == StepKind::Backward && q < last)
          t.recvFrom = (q + 1) % p;
      }
      if (t.sendTo >= 0 || t.recvFrom >= 0)
        lists[static_cast<size_t>(s)].push_back(t);
      if (j < list.size()) {
        TimelineEntry e;
        e.seconds = list[j].kind == StepKind::Backward && !splitW ? 2.0 : 1.0;
        e.stepIndex = static_cast<int64_t>(j);
        lists[static_cast<size_t>(s)].push_back(e);
      }
    }
  }
  return lists;
}

int64_t mostHeld(const std::vector<Step> &steps, bool splitW) {
  int64_t live = 0, most = 0;
  for (const Step &st : steps) {
    if (st.kind == StepKind::Forward)
      ++live;
    else if ((st.kind == StepKind::Weight) == splitW)
      --live;
    most = std::max(most, live);
  }
  return most;
}

struct Case {
  int64_t p, m;
};

class Schedules : public ::testing::TestWithParam<Case> {};

TEST_P(Schedules, UniformStagesMatchTheory) {
  const auto [p, m] = GetParam();
  for (const std::string schedule : {"gpipe", "1f1b", "zb-h1"}) {
    SCOPED_TRACE(schedule);
    std::vector<std::vector<Step>> steps;
    ASSERT_FALSE(scheduleSteps(schedule, p, m, steps).has_value());
    const bool splitW = splitsWeightGradients(schedule);
    // Every microbatch's F, B (and W) once per stage, F before B before W.
    for (const auto &list : steps) {
      for (int64_t mb = 0; mb < m; ++mb) {
        auto at = [&](StepKind k) {
          return std::count(list.begin(), list.end(), Step{k, mb}) == 1
                     ? std::find(list.begin(), list.end(), Step{k, mb}) - list.begin()
                     : -1;
        };
        const auto f = at(StepKind::Forward), b = at(StepKind::Backward);
        ASSERT_GE(f, 0);
        ASSERT_GT(b, f);
        if (splitW)
          ASSERT_GT(at(StepKind::Weight), b);
      }
      ASSERT_EQ(list.size(), static_cast<size_t>((splitW ? 3 : 2) * m));
    }
    const double P = static_cast<double>(p), M = static_cast<double>(m);
    const double theory = splitW ? (P - 1) / (3 * M + P - 1) : (P - 1) / (M + P - 1);
    for (bool asyncSends : {false, true}) {
      SCOPED_TRACE(asyncSends ? "sends on the communication thread" : "rendezvous");
      auto lists = timeline(steps, splitW);
      std::vector<std::vector<SimulatedEntry>> times;
      std::string stuck;
      ASSERT_TRUE(simulate(lists, times, stuck, asyncSends)) << stuck;
      // ZB-H1's W fill the bubble only when the sends do not wait for their receivers.
      if (!splitW || asyncSends)
        EXPECT_NEAR(idleShare(lists, times), theory, 1e-12);
    }
    const int64_t first = mostHeld(steps.front(), splitW);
    EXPECT_EQ(first, schedule == "gpipe" ? m : std::min(p, m));
  }
}

TEST_P(Schedules, InterleavedMatchesTheory) {
  const auto [p, m] = GetParam();
  for (int64_t v : {2, 3, 4}) {
    SCOPED_TRACE("v = " + std::to_string(v));
    std::vector<std::vector<Step>> steps;
    ASSERT_FALSE(scheduleSteps("interleaved", p, m, steps, v).has_value());
    for (const auto &list : steps) {
      ASSERT_EQ(list.size(), static_cast<size_t>(2 * m * v));
      for (int64_t mb = 0; mb < m; ++mb)
        for (int64_t c = 0; c < v; ++c) {
          auto f = std::find(list.begin(), list.end(), Step{StepKind::Forward, mb, c});
          auto b = std::find(list.begin(), list.end(), Step{StepKind::Backward, mb, c});
          ASSERT_TRUE(f != list.end() && b != list.end() && f < b);
        }
    }
    const double P = static_cast<double>(p), M = static_cast<double>(m),
                 Vd = static_cast<double>(v);
    auto lists = timeline(steps, false, v);
    std::vector<std::vector<SimulatedEntry>> times;
    std::string stuck;
    // With posted sends, the theory.
    ASSERT_TRUE(simulatePostedSends(lists, times, stuck)) << stuck;
    EXPECT_NEAR(idleShare(lists, times), (P - 1) / (Vd * M + P - 1), 1e-12);
    // Rendezvous transfers (a rank's sends in order, each waiting for its receiver) run it
    // only without a steady state (m = p: every rank's forwards, then its backwards); with
    // more microbatches the ranks wait on each other's sends around the ring, and shardc
    // posts the program's transfers.
    for (bool asyncSends : {false, true})
      EXPECT_EQ(simulate(lists, times, stuck, asyncSends), m == p);
  }
}

TEST_P(Schedules, PostedSendsChangeNothingForTheOthers) {
  // The schedules the runtime runs finish the same with posted sends (a send that waits for
  // its receiver only ever delays the sender).
  const auto [p, m] = GetParam();
  for (const std::string schedule : {"gpipe", "1f1b", "zb-h1"}) {
    std::vector<std::vector<Step>> steps;
    ASSERT_FALSE(scheduleSteps(schedule, p, m, steps).has_value());
    const bool splitW = splitsWeightGradients(schedule);
    auto lists = timeline(steps, splitW);
    std::vector<std::vector<SimulatedEntry>> posted, thread;
    std::string stuck;
    ASSERT_TRUE(simulatePostedSends(lists, posted, stuck)) << stuck;
    ASSERT_TRUE(simulate(lists, thread, stuck, true)) << stuck;
    EXPECT_NEAR(idleShare(lists, posted), idleShare(lists, thread), 1e-12) << schedule;
  }
}

TEST(PipelineSchedule, InterleavedNeedsChunksAndGroupsOfP) {
  std::vector<std::vector<Step>> steps;
  auto error = scheduleSteps("interleaved", 4, 8, steps, 1);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(*error, "--schedule interleaved needs --virtual-stages 2 or more (model chunks per "
                    "rank); got 1");
  error = scheduleSteps("interleaved", 4, 6, steps, 2);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(*error, "--schedule interleaved runs microbatches in groups of pp = 4; got "
                    "--micro-batches 6 (use a multiple of 4)");
  error = scheduleSteps("1f1b", 4, 8, steps, 2);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(*error, "--virtual-stages 2 applies to --schedule interleaved, not 1f1b");
}

INSTANTIATE_TEST_SUITE_P(PipelineSchedule, Schedules,
                         ::testing::Values(Case{2, 4}, Case{4, 4}, Case{4, 8}, Case{4, 16},
                                           Case{8, 16}, Case{8, 32}));

TEST(PipelineSchedule, NaiveIsOneMicrobatchAndItsIdleIsPMinusOneOverP) {
  std::vector<std::vector<Step>> steps;
  auto error = scheduleSteps("naive", 4, 2, steps);
  ASSERT_TRUE(error.has_value());
  EXPECT_NE(error->find("--schedule naive runs one microbatch"), std::string::npos);
  ASSERT_FALSE(scheduleSteps("naive", 4, 1, steps).has_value());
  auto lists = timeline(steps, false);
  std::vector<std::vector<SimulatedEntry>> times;
  std::string stuck;
  ASSERT_TRUE(simulate(lists, times, stuck, true)) << stuck;
  EXPECT_NEAR(idleShare(lists, times), 3.0 / 4.0, 1e-12);
}

TEST(PipelineSchedule, AnUnknownScheduleIsOneLine) {
  std::vector<std::vector<Step>> steps;
  auto error = scheduleSteps("pipedream", 4, 8, steps);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(*error, "--schedule 'pipedream': expected naive, gpipe, 1f1b, interleaved or zb-h1");
}

TEST(PipelineSchedule, CrossedTransfersDeadlock) {
  // Both stages send first and receive second: rendezvous sends wait for each other forever;
  // the simulation names where each stage is stuck.
  std::vector<std::vector<TimelineEntry>> lists(2);
  TimelineEntry to1, from1, to0, from0;
  to1.isTransfer = from1.isTransfer = to0.isTransfer = from0.isTransfer = true;
  to1.sendTo = 1;
  from1.recvFrom = 1;
  to0.sendTo = 0;
  from0.recvFrom = 0;
  lists[0] = {to1, from1};
  lists[1] = {to0, from0};
  std::vector<std::vector<SimulatedEntry>> times;
  std::string stuck;
  EXPECT_FALSE(simulate(lists, times, stuck, false));
  EXPECT_EQ(stuck, "stage 0 at entry 0, stage 1 at entry 0");
  // On the communication threads too: each thread runs its send first, and a stage's receive
  // waits for its own sends (the runtime runs a rank's transfers in order).
  EXPECT_FALSE(simulate(lists, times, stuck, true));
  EXPECT_EQ(stuck, "stage 0 at entry 1, stage 1 at entry 1");
}

} // namespace
} // namespace shardc::pipeline
