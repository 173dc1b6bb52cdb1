// The checks shardrun prints at the end of a run, per rank: the planned peak memory next to the
// measured one (Program.planned_peak_bytes), and the bytes the rank's communicator sent in one
// run of the program next to what the compiler predicted (Program.planned_comm_bytes; for a
// program with groups, the sum over the world's and the groups' communicators, each of which
// the line then lists). A measurement that differs from its plan is a bug, reported as an
// error (exit 1).
#pragma once

#include "runtime/comm/communicator.h"
#include "runtime/memory/memory_report.h"
#include "tools/shardrun/options.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardrun {

// What the collectives of one group (or of the world) sent in a step.
struct GroupCommReport {
  std::string name; // Program.groups' name; "world" for the ops without a group
  shardc::runtime::CommCounters sent;
};

struct RankReport {
  int rank = 0;
  shardc::runtime::PeakMemoryReport memory;
  std::string memoryDetails; // appended to the memory line ("; 0 allocations after ...")
  // Communication, measured when at least one step ran with a communicator.
  bool commMeasured = false;
  shardc::runtime::CommCounters commPerStep; // what the first step of the run sent
  int64_t commFirstStep = 0;                 // that step
  int64_t commOtherStep = 0;   // a later step that sent a different amount (0: none did)
  uint64_t commOtherBytes = 0; // what it sent
  uint64_t commPlanned = 0;    // Program.planned_comm_bytes
  // Programs with groups: the first step's bytes per group, Program.groups' order, then the
  // world's (ops without a group); they add up to commPerStep. Empty without groups.
  std::vector<GroupCommReport> commPerGroup;
};

// Prints the memory lines and, when measured, the comm lines of `ranks`: every rank of a run of
// `worldSize` ranks, or (under MPI) the one rank of this process. A single-rank run prints
// "shardrun: memory: planned peak ..."; several ranks print "memory: rank R: ..." per rank, or
// one "memory: each of the N ranks: ..." line when they all measured the same. Returns the
// error of the first rank whose measurement differs from its plan, after printing what agreed.
std::optional<Failure> printRankReports(const std::vector<RankReport> &ranks, int worldSize);

} // namespace shardrun
