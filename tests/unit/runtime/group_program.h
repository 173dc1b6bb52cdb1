// A hand-made program whose collectives run over groups: 4 ranks on a dp x tp = 2 x 2 mesh
// (rank = dp*2 + tp), group 0 "tp" (the slice along tp: {0, 1} or {2, 3}) and group 1 "dp"
// ({0, 2} or {1, 3}). Rank r's input x f32[4] and every collective of the program:
//   y_tp     = all_reduce over tp of x                  (group 0)
//   y_dp     = all_reduce over dp of x                  (group 1)
//   s_tp     = reduce_scatter over tp of x: f32[2]      (group 0)
//   g_dp     = all_gather over dp of s_tp: f32[4]       (group 1)
//   y_world  = all_reduce over all 4 ranks of x         (no group)
//   slice_tp = shard_slice over tp of x: f32[2]         (group 0: the shard of the tp rank)
#pragma once

#include "runtime/program/program.pb.h"

#include <cstdint>
#include <vector>

namespace shardc::runtime::testing {

constexpr int kMeshRanks = 4;

// Rank r's program, with planned_comm_bytes filled in as the compiler computes it (per op, over
// its num_ranks).
program::Program groupProgram(int rank);
// Rank r's x: {r + 1, 10 (r + 1), 100 (r + 1), 1000 (r + 1)}.
std::vector<float> groupProgramInput(int rank);
// The bytes one rank sends per run over each group (tp, dp) and over the world.
constexpr uint64_t kGroupProgramTpBytes = 16 + 8, kGroupProgramDpBytes = 16 + 8,
                   kGroupProgramWorldBytes = 24;

} // namespace shardc::runtime::testing
