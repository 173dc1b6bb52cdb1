// Ranks' timelines (runtime/executor/op_timeline.h) as one Chrome trace: the JSON object format
// that Perfetto (ui.perfetto.dev) and chrome://tracing open. Each rank is a process ("rank 3"),
// with two threads: the rank's own, with its kernels and its waits for asynchronous
// collectives, and its communication thread, with the collectives running there. Where a
// collective's span on the communication thread lies beside kernel spans on the rank's thread,
// the two overlapped. A pipeline stage's rank has a third thread, "pipeline steps": one span
// per step of its schedule ("F3", "B2", "W0"), from its first op to its last (Op.pipeline_step).
#pragma once

#include "runtime/comm/communicator.h"
#include "runtime/executor/op_timeline.h"
#include "runtime/kernels/kernel.h"
#include "runtime/program/program.pb.h"
#include "runtime/support/status.h"

#include <string>
#include <vector>

namespace shardc::runtime {

struct RankTimeline {
  int rank = 0;
  const program::Program *program = nullptr; // the rank's program: its ops' names and kernels
  std::vector<OpSpan> spans;
};

// The trace of `ranks`: times in microseconds from the earliest span of any rank.
std::string chromeTraceJson(const std::vector<RankTimeline> &ranks);

// Every rank's spans, on rank 0 (the others get an empty list): a collective of `comm`'s
// ranks, which all call it (a single rank without a communicator gets its own). [r]: rank r's.
Status gatherTimelines(Communicator *comm, const std::vector<OpSpan> &mine,
                       std::vector<std::vector<OpSpan>> *all);

} // namespace shardc::runtime
