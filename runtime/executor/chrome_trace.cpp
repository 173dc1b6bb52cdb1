#include "runtime/executor/chrome_trace.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <limits>

namespace shardc::runtime {

namespace {

using Json = nlohmann::ordered_json;

// Thread ids within a rank's process.
constexpr int kRankThread = 0;
constexpr int kCommThread = 1;
constexpr int kScheduleThread = 2; // pipeline stages: the schedule's steps (Op.pipeline_step)

Json metadata(const char *what, int pid, int tid, const std::string &name) {
  Json event = Json::object();
  event["name"] = what;
  event["ph"] = "M";
  event["pid"] = pid;
  event["tid"] = tid;
  event["args"] = Json{{"name", name}};
  return event;
}

std::string opLabel(const program::Op &op, int index) {
  return op.name().empty() ? op.kernel() + " #" + std::to_string(index) : op.name();
}

} // namespace

std::string chromeTraceJson(const std::vector<RankTimeline> &ranks) {
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const RankTimeline &rank : ranks)
    for (const OpSpan &span : rank.spans)
      origin = std::min(origin, span.startNs);
  Json events = Json::array();
  for (const RankTimeline &rank : ranks) {
    events.push_back(metadata("process_name", rank.rank, 0, "rank " + std::to_string(rank.rank)));
    events.push_back(metadata("process_sort_index", rank.rank, 0, std::to_string(rank.rank)));
    events.push_back(metadata("thread_name", rank.rank, kRankThread, "rank thread"));
    events.push_back(metadata("thread_name", rank.rank, kCommThread, "communication thread"));
    // A pipeline stage's steps: from the first to the last op of each run of the rank
    // thread's ops in one step of the schedule.
    struct StepSpan {
      std::string step;
      int64_t startNs = 0, endNs = 0;
      int32_t run = 0;
    };
    std::vector<StepSpan> steps;
    for (const OpSpan &span : rank.spans) {
      if (span.lane != TimelineLane::Compute || rank.program == nullptr || span.op < 0 ||
          span.op >= rank.program->ops_size())
        continue;
      const std::string &step = rank.program->ops(span.op).pipeline_step();
      if (step.empty())
        continue;
      if (!steps.empty() && steps.back().step == step && steps.back().run == span.run) {
        steps.back().endNs = std::max(steps.back().endNs, span.endNs);
        continue;
      }
      steps.push_back({step, span.startNs, span.endNs, span.run});
    }
    if (!steps.empty())
      events.push_back(metadata("thread_name", rank.rank, kScheduleThread, "pipeline steps"));
    for (const StepSpan &step : steps) {
      Json event = Json::object();
      event["name"] = step.step;
      event["cat"] = "pipeline step";
      event["ph"] = "X";
      event["pid"] = rank.rank;
      event["tid"] = kScheduleThread;
      event["ts"] = static_cast<double>(step.startNs - origin) / 1000.0;
      event["dur"] = static_cast<double>(std::max<int64_t>(step.endNs - step.startNs, 0)) / 1000.0;
      event["args"] = Json{{"run", step.run}};
      events.push_back(std::move(event));
    }
    for (const OpSpan &span : rank.spans) {
      const bool known = rank.program != nullptr && span.op >= 0 &&
                         span.op < rank.program->ops_size();
      const program::Op *op = known ? &rank.program->ops(span.op) : nullptr;
      const std::string label = op != nullptr ? opLabel(*op, span.op) : "op #" +
                                                                            std::to_string(span.op);
      const bool collective = op != nullptr && isCollectiveKernel(op->kernel());
      Json event = Json::object();
      event["name"] = span.lane == TimelineLane::Wait ? "wait for " + label : label;
      event["cat"] = span.lane == TimelineLane::Wait ? "wait"
                     : collective                    ? "collective"
                                                     : "compute";
      event["ph"] = "X";
      event["pid"] = rank.rank;
      event["tid"] = span.lane == TimelineLane::Comm ? kCommThread : kRankThread;
      // Microseconds, with the nanoseconds kept as the fraction.
      event["ts"] = static_cast<double>(span.startNs - origin) / 1000.0;
      event["dur"] = static_cast<double>(std::max<int64_t>(span.endNs - span.startNs, 0)) / 1000.0;
      Json args = Json::object();
      args["op"] = span.op;
      if (op != nullptr)
        args["kernel"] = op->kernel();
      args["run"] = span.run;
      if (op != nullptr && !op->pipeline_step().empty())
        args["step"] = op->pipeline_step();
      event["args"] = std::move(args);
      events.push_back(std::move(event));
    }
  }
  Json trace = Json::object();
  trace["displayTimeUnit"] = "ms";
  trace["traceEvents"] = std::move(events);
  return trace.dump();
}

Status gatherTimelines(Communicator *comm, const std::vector<OpSpan> &mine,
                       std::vector<std::vector<OpSpan>> *all) {
  all->clear();
  if (comm == nullptr) {
    all->push_back(mine);
    return Status::ok();
  }
  const int ranks = comm->size();
  // Every rank's count first, then every rank's spans padded to the largest count (one
  // all_gather moves equal chunks).
  const uint64_t count = mine.size();
  std::vector<uint64_t> counts(static_cast<size_t>(ranks), 0);
  SHARDC_RETURN_IF_ERROR(comm->allGather(&count, counts.data(), sizeof count, CommDType::Bytes));
  const uint64_t most = *std::max_element(counts.begin(), counts.end());
  std::vector<OpSpan> padded(static_cast<size_t>(most));
  std::copy(mine.begin(), mine.end(), padded.begin());
  std::vector<OpSpan> gathered(static_cast<size_t>(most) * static_cast<size_t>(ranks));
  if (most > 0)
    SHARDC_RETURN_IF_ERROR(comm->allGather(padded.data(), gathered.data(),
                                           static_cast<size_t>(most) * sizeof(OpSpan),
                                           CommDType::Bytes));
  all->resize(static_cast<size_t>(ranks));
  if (comm->rank() != 0)
    return Status::ok(); // only rank 0 writes the trace
  for (int r = 0; r < ranks; ++r) {
    auto first = gathered.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(r) * most);
    (*all)[static_cast<size_t>(r)].assign(first,
                                          first + static_cast<std::ptrdiff_t>(counts[r]));
  }
  return Status::ok();
}

} // namespace shardc::runtime
