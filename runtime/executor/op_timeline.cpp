#include "runtime/executor/op_timeline.h"

#include <algorithm>
#include <chrono>

namespace shardc::runtime {

int64_t wallClockNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

OpTimeline::OpTimeline(size_t maxSpansPerLane) : max_(maxSpansPerLane) {
  // Reserved up front (bounded by a sensible cap), so that recording a step rarely allocates.
  const size_t reserve = std::min<size_t>(max_, 1 << 16);
  rank_.reserve(reserve);
  comm_.reserve(reserve);
}

void OpTimeline::add(const OpSpan &span) {
  const bool comm = span.lane == TimelineLane::Comm;
  std::vector<OpSpan> &lane = comm ? comm_ : rank_;
  if (lane.size() < max_)
    lane.push_back(span);
  else
    ++(comm ? droppedComm_ : droppedRank_);
}

std::vector<OpSpan> OpTimeline::spans() const {
  std::vector<OpSpan> all(rank_);
  all.insert(all.end(), comm_.begin(), comm_.end());
  std::stable_sort(all.begin(), all.end(),
                   [](const OpSpan &a, const OpSpan &b) { return a.startNs < b.startNs; });
  return all;
}

} // namespace shardc::runtime
