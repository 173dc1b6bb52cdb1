#include "tools/shardrun/run_report.h"

#include <cstdio>

namespace shardrun {

using namespace shardc::runtime;

namespace {

constexpr char kBug[] = " (a bug: please report it)";

// "memory: planned peak ..." without its "memory: ", to put a rank in between.
std::string withoutMemoryPrefix(const std::string &text) {
  const std::string prefix = "memory: ";
  return text.compare(0, prefix.size(), prefix) == 0 ? text.substr(prefix.size()) : text;
}

// Every kind data parallelism uses, and all_to_all (resharding) and send_recv (pipeline
// stages) where the run called them.
std::string commBreakdown(const CommCounters &counters) {
  std::string text;
  for (int k = 0; k < kCollectiveKinds; ++k)
    if ((k != static_cast<int>(CollectiveKind::AllToAll) &&
         k != static_cast<int>(CollectiveKind::SendRecv)) ||
        counters.calls[k] != 0)
      text += std::string(k ? ", " : "") + collectiveName(static_cast<CollectiveKind>(k)) + " " +
              std::to_string(counters.bytesSent[k]);
  return text;
}

// " sent N bytes per step (planned P): all_reduce .., reduce_scatter .., all_gather .."
// (", all_to_all .." and ", send_recv .." where the run sent some), then
// for a program with groups "; by group: tp .., dp .., world ..".
std::string commText(const RankReport &report) {
  std::string text = " sent " + std::to_string(report.commPerStep.totalBytesSent()) +
                     " bytes per step (planned " + std::to_string(report.commPlanned) +
                     "): " + commBreakdown(report.commPerStep);
  for (size_t i = 0; i < report.commPerGroup.size(); ++i)
    text += std::string(i ? ", " : "; by group: ") + report.commPerGroup[i].name + " " +
            std::to_string(report.commPerGroup[i].sent.totalBytesSent());
  return text;
}

std::optional<Failure> commFailure(const RankReport &report, bool named) {
  const std::string who = named ? "rank " + std::to_string(report.rank) + ": " : "";
  const uint64_t sent = report.commPerStep.totalBytesSent();
  if (report.commOtherStep != 0)
    return error(who + "comm: step " + std::to_string(report.commFirstStep) + " sent " +
                 std::to_string(sent) + " bytes, step " + std::to_string(report.commOtherStep) +
                 " sent " + std::to_string(report.commOtherBytes) + " (planned " +
                 std::to_string(report.commPlanned) + " per step)" + kBug);
  if (sent != report.commPlanned)
    return error(who + "comm: sent " + std::to_string(sent) + " bytes per step, planned " +
                 std::to_string(report.commPlanned) + " (" + commBreakdown(report.commPerStep) +
                 ")" + kBug);
  return std::nullopt;
}

bool allSame(const std::vector<std::string> &texts) {
  for (const std::string &text : texts)
    if (text != texts.front())
      return false;
  return true;
}

} // namespace

std::optional<Failure> printRankReports(const std::vector<RankReport> &ranks, int worldSize) {
  const bool named = worldSize > 1; // lines and errors name the rank
  for (const RankReport &report : ranks)
    if (report.memory.planned && !report.memory.agrees)
      return error((named ? "rank " + std::to_string(report.rank) + ": " : "") +
                   report.memory.text + kBug);

  std::vector<std::string> memoryTexts;
  for (const RankReport &report : ranks)
    memoryTexts.push_back(withoutMemoryPrefix(report.memory.text) + report.memoryDetails);
  if (!named)
    std::fprintf(stderr, "shardrun: memory: %s\n", memoryTexts.front().c_str());
  else if (ranks.size() > 1 && allSame(memoryTexts))
    std::fprintf(stderr, "shardrun: memory: each of the %zu ranks: %s\n", ranks.size(),
                 memoryTexts.front().c_str());
  else
    for (size_t i = 0; i < ranks.size(); ++i)
      std::fprintf(stderr, "shardrun: memory: rank %d: %s\n", ranks[i].rank,
                   memoryTexts[i].c_str());

  std::vector<std::string> commTexts;
  for (const RankReport &report : ranks) {
    if (!report.commMeasured)
      continue;
    if (auto failure = commFailure(report, named))
      return failure;
    commTexts.push_back(commText(report));
  }
  if (commTexts.empty())
    return std::nullopt;
  if (commTexts.size() > 1 && allSame(commTexts))
    std::fprintf(stderr, "shardrun: comm: each of the %zu ranks%s\n", commTexts.size(),
                 commTexts.front().c_str());
  else
    for (size_t i = 0, j = 0; i < ranks.size(); ++i)
      if (ranks[i].commMeasured)
        std::fprintf(stderr, "shardrun: comm: rank %d%s\n", ranks[i].rank, commTexts[j++].c_str());
  return std::nullopt;
}

} // namespace shardrun
