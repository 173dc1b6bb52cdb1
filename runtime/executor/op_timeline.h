// When each op of a rank's runs started and ended, on which of the rank's threads: what
// `shardrun --trace` writes as a Chrome/Perfetto trace. The rank's own thread records its
// kernels and its waits for asynchronous collectives, the communication thread the
// collectives it runs; each thread appends to its own lane, so recording takes no lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace shardc::runtime {

enum class TimelineLane : uint8_t {
  Compute = 0, // a kernel on the rank's thread (collectives run inline included)
  Comm = 1,    // an asynchronous collective on the communication thread
  Wait = 2,    // the rank's thread waiting for an asynchronous collective to complete
};

struct OpSpan {
  int32_t op = 0;  // index in the program
  int32_t run = 0; // the executor's run (0: its first)
  TimelineLane lane = TimelineLane::Compute;
  int64_t startNs = 0; // wall clock (system_clock, ns since the epoch): comparable across ranks
  int64_t endNs = 0;   // (processes) on one machine, and roughly across synchronised machines
};

// Nanoseconds since the epoch on the wall clock.
int64_t wallClockNs();

class OpTimeline {
public:
  // Keeps at most `maxSpansPerLane` spans per lane (the first ones; dropped() counts the rest).
  explicit OpTimeline(size_t maxSpansPerLane);

  // Appends a span to its lane. One thread per lane: Compute and Wait are the rank's, Comm the
  // communication thread's.
  void add(const OpSpan &span);
  // Every recorded span, ordered by start. Only while no run is in progress.
  std::vector<OpSpan> spans() const;
  uint64_t dropped() const { return droppedRank_ + droppedComm_; }

private:
  size_t max_;
  std::vector<OpSpan> rank_; // Compute and Wait
  std::vector<OpSpan> comm_;
  uint64_t droppedRank_ = 0, droppedComm_ = 0;
};

} // namespace shardc::runtime
