// The pieces of asynchronous collectives: the communication thread (order, waits, failures),
// the program validator's checks of Op.completes_before, and the Chrome trace of timelines.
#include "runtime/common/planned_memory.h"
#include "runtime/executor/chrome_trace.h"
#include "runtime/executor/comm_thread.h"
#include "runtime/loader/program_validation.h"
#include "runtime/support/aligned_buffer.h"
#include "tests/unit/runtime/data_parallel_program.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace shardc::runtime {
namespace {

using ::testing::HasSubstr;

TEST(CommThread, RunsIssuedOpsInOrderWhileTheIssuerGoesOn) {
  std::mutex mutex;
  std::vector<int> ran;
  std::atomic<bool> release{false};
  CommThread thread(3, [&](int op) {
    while (op == 10 && !release) // the first op blocks until the issuer has moved on
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::lock_guard<std::mutex> lock(mutex);
    ran.push_back(op);
    return Status::ok();
  });
  const uint64_t first = thread.issue(10);
  const uint64_t second = thread.issue(11);
  const uint64_t third = thread.issue(12);
  {
    std::lock_guard<std::mutex> lock(mutex);
    EXPECT_TRUE(ran.empty()); // issuing returned while the first op still runs
  }
  release = true;
  int failed = -1;
  EXPECT_TRUE(thread.waitFor(second, &failed).isOk());
  {
    std::lock_guard<std::mutex> lock(mutex);
    ASSERT_GE(ran.size(), 2u);
    EXPECT_EQ(ran[0], 10);
    EXPECT_EQ(ran[1], 11);
  }
  EXPECT_TRUE(thread.waitFor(third, &failed).isOk());
  EXPECT_EQ(failed, -1);
  EXPECT_TRUE(thread.waitFor(first, &failed).isOk()); // long done
  EXPECT_EQ(ran, (std::vector<int>{10, 11, 12}));
  // The capacity bounds what is outstanding, not what is issued over the thread's life.
  for (int op = 0; op < 10; ++op)
    thread.issue(op);
  EXPECT_TRUE(thread.drain(&failed).isOk());
  EXPECT_EQ(ran.size(), 13u);
}

TEST(CommThread, AFailureSkipsTheLaterOpsAndIsReportedByEveryWait) {
  std::vector<int> ran;
  CommThread thread(4, [&](int op) {
    ran.push_back(op);
    return op == 2 ? Status::error("timed out after 30 s waiting for rank 1") : Status::ok();
  });
  const uint64_t a = thread.issue(1);
  const uint64_t b = thread.issue(2);
  const uint64_t c = thread.issue(3);
  int failed = -1;
  EXPECT_TRUE(thread.waitFor(a, &failed).isOk() || failed == 2);
  Status status = thread.waitFor(c, &failed);
  EXPECT_FALSE(status.isOk());
  EXPECT_EQ(status.message(), "timed out after 30 s waiting for rank 1");
  EXPECT_EQ(failed, 2);
  EXPECT_FALSE(thread.waitFor(b, &failed).isOk());
  EXPECT_EQ(ran, (std::vector<int>{1, 2})); // op 3 was never run
  thread.clearFailure();
  const uint64_t d = thread.issue(4);
  EXPECT_TRUE(thread.waitFor(d, &failed).isOk());
  EXPECT_EQ(ran.back(), 4);
}

TEST(CommThread, DestroyingItFinishesTheIssuedOps) {
  std::atomic<int> ran{0};
  {
    CommThread thread(2, [&](int) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      ++ran;
      return Status::ok();
    });
    thread.issue(0);
    thread.issue(1);
  }
  EXPECT_EQ(ran, 2);
}

// Rank 0 of the two-rank linear program, with its reduce_scatter asynchronous up to the
// optimizer update that reads it.
struct AsyncProgram {
  program::Program program = testing::linearSgdBundle(2).programs(0);
  int scatter = -1, sgd = -1;
  AsyncProgram() {
    for (int i = 0; i < program.ops_size(); ++i) {
      if (program.ops(i).kernel() == "reduce_scatter")
        scatter = i;
      if (program.ops(i).kernel() == "sgd_update")
        sgd = i;
    }
    program.mutable_ops(scatter)->set_completes_before(sgd);
    program.set_comm_workspace_bytes(program.workspace_bytes());
  }
};

TEST(AsyncCollectiveValidation, AValidProgramPasses) {
  AsyncProgram async;
  ASSERT_GT(async.sgd, async.scatter + 1);
  Status status = validateProgram(async.program);
  EXPECT_TRUE(status.isOk()) << status.message();
  // The plan holds the communication workspace, and the scattered gradient's operand stays
  // live until the update.
  PlannedMemory plan = planPeakMemory(async.program);
  EXPECT_EQ(plan.commWorkspace, AlignedBuffer::allocationSize(async.program.workspace_bytes()));
  EXPECT_EQ(plan.total, planPeakMemory(testing::linearSgdBundle(2).programs(0)).total +
                            plan.commWorkspace);
}

TEST(AsyncCollectiveValidation, MisplacedCompletionPointsAreErrors) {
  struct Case {
    const char *what;
    std::function<void(AsyncProgram &)> edit;
    std::string message;
  };
  const Case cases[] = {
      {"not a collective",
       [](AsyncProgram &a) { a.program.mutable_ops(a.sgd)->set_completes_before(1); },
       "completes_before is set, but kernel sgd_update is not an all_reduce, reduce_scatter, "
       "all_gather or all_to_all"},
      {"the very next op",
       [](AsyncProgram &a) {
         a.program.mutable_ops(a.scatter)->set_completes_before(a.scatter + 1);
       },
       "not after the next op"},
      {"past the end",
       [](AsyncProgram &a) {
         a.program.mutable_ops(a.scatter)->set_completes_before(a.program.ops_size() + 1);
       },
       "not after the next op and at most the number of ops"},
      {"after its first reader",
       [](AsyncProgram &a) {
         a.program.mutable_ops(a.scatter)->set_completes_before(a.program.ops_size());
       },
       "reads its results before it completes"},
      {"an op in between writes over its operand",
       [](AsyncProgram &a) {
         // The step count's add writes where the scattered gradient's operand lies.
         const int operand = a.program.ops(a.scatter).inputs(0);
         const int out = a.program.ops(a.scatter + 1).outputs(0);
         a.program.mutable_buffers(out)->set_offset(a.program.buffers(operand).offset());
       },
       "writes over its operands or results before it completes"},
      {"its scratch exceeds the communication workspace",
       [](AsyncProgram &a) { a.program.set_comm_workspace_bytes(0); },
       "bytes of workspace, but comm_workspace_bytes is 0"},
  };
  for (const Case &c : cases) {
    AsyncProgram async;
    c.edit(async);
    Status status = validateProgram(async.program);
    EXPECT_FALSE(status.isOk()) << c.what;
    EXPECT_THAT(status.message(), HasSubstr(c.message)) << c.what;
  }
}

TEST(ChromeTrace, RanksAreProcessesAndTheirThreadsHoldTheSpans) {
  program::Program program = testing::linearSgdBundle(2).programs(0);
  int collective = -1, kernel = -1;
  for (int i = 0; i < program.ops_size(); ++i)
    (isCollectiveKernel(program.ops(i).kernel()) ? collective : kernel) = i;
  ASSERT_GE(collective, 0);
  ASSERT_GE(kernel, 0);
  RankTimeline rank0, rank1;
  rank0.rank = 0;
  rank0.program = &program;
  rank0.spans = {{kernel, 0, TimelineLane::Compute, 5'000, 6'500},
                 {collective, 0, TimelineLane::Comm, 6'000, 9'000},
                 {collective, 0, TimelineLane::Wait, 8'000, 9'000}};
  rank1.rank = 1;
  rank1.program = &program;
  rank1.spans = {{kernel, 2, TimelineLane::Compute, 7'000, 7'250}};
  const auto trace = nlohmann::json::parse(chromeTraceJson({rank0, rank1}));
  const auto &events = trace.at("traceEvents");
  std::vector<nlohmann::json> spans;
  int threadNames = 0;
  for (const auto &event : events) {
    if (event.at("ph") == "X")
      spans.push_back(event);
    else if (event.at("name") == "thread_name")
      ++threadNames;
  }
  EXPECT_EQ(threadNames, 4);
  ASSERT_EQ(spans.size(), 4u);
  // Microseconds from the earliest span (5000 ns).
  EXPECT_EQ(spans[0].at("ts"), 0.0);
  EXPECT_EQ(spans[0].at("dur"), 1.5);
  EXPECT_EQ(spans[0].at("cat"), "compute");
  EXPECT_EQ(spans[0].at("tid"), 0);
  EXPECT_EQ(spans[0].at("name"), program.ops(kernel).name());
  EXPECT_EQ(spans[1].at("cat"), "collective");
  EXPECT_EQ(spans[1].at("tid"), 1);
  EXPECT_EQ(spans[1].at("args").at("kernel"), program.ops(collective).kernel());
  EXPECT_EQ(spans[2].at("cat"), "wait");
  EXPECT_EQ(spans[2].at("tid"), 0);
  EXPECT_EQ(spans[2].at("name"), "wait for " + program.ops(collective).name());
  EXPECT_EQ(spans[3].at("pid"), 1);
  EXPECT_EQ(spans[3].at("ts"), 2.0);
  EXPECT_EQ(spans[3].at("args").at("run"), 2);
}

TEST(ChromeTrace, PipelineStepsAreSpansOfTheirOwnThread) {
  // Ops labelled with their schedule's step (Op.pipeline_step) make one span per run of
  // consecutive ops in a step on a "pipeline steps" thread, from the first op's start to the
  // last's end; an unlabelled op (a transfer) ends a step, a new run starts another.
  program::Program program = testing::linearSgdBundle(2).programs(0);
  ASSERT_GE(program.ops_size(), 3);
  program.mutable_ops(0)->set_pipeline_step("F0");
  program.mutable_ops(1)->set_pipeline_step("F0");
  program.mutable_ops(2)->clear_pipeline_step();
  RankTimeline rank;
  rank.rank = 0;
  rank.program = &program;
  rank.spans = {{0, 0, TimelineLane::Compute, 1'000, 2'000},
                {1, 0, TimelineLane::Compute, 2'000, 4'000},
                {2, 0, TimelineLane::Compute, 4'000, 5'000},
                {0, 1, TimelineLane::Compute, 6'000, 7'000}};
  const auto trace = nlohmann::json::parse(chromeTraceJson({rank}));
  std::vector<nlohmann::json> steps;
  bool named = false;
  for (const auto &event : trace.at("traceEvents")) {
    if (event.at("ph") == "X" && event.at("cat") == "pipeline step")
      steps.push_back(event);
    if (event.at("name") == "thread_name" && event.at("args").at("name") == "pipeline steps")
      named = event.at("tid") == 2;
  }
  EXPECT_TRUE(named);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].at("name"), "F0");
  EXPECT_EQ(steps[0].at("tid"), 2);
  EXPECT_EQ(steps[0].at("ts"), 0.0);
  EXPECT_EQ(steps[0].at("dur"), 3.0);
  EXPECT_EQ(steps[1].at("args").at("run"), 1);
  EXPECT_EQ(steps[1].at("ts"), 5.0);
}

TEST(ChromeTrace, TimelineKeepsItsFirstSpansPerLane) {
  OpTimeline timeline(2);
  for (int i = 0; i < 3; ++i) {
    timeline.add({i, 0, TimelineLane::Compute, 10 * i, 10 * i + 5});
    timeline.add({i, 0, TimelineLane::Comm, 10 * i + 1, 10 * i + 2});
  }
  const std::vector<OpSpan> spans = timeline.spans();
  ASSERT_EQ(spans.size(), 4u);
  EXPECT_EQ(timeline.dropped(), 2u);
  for (size_t i = 1; i < spans.size(); ++i)
    EXPECT_LE(spans[i - 1].startNs, spans[i].startNs);
}

} // namespace
} // namespace shardc::runtime
