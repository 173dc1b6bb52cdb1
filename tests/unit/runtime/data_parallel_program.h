// A hand-made data-parallel training step for the multi-rank tests, small enough to check by
// hand, in the shape the compiler gives ZeRO-3 programs.
//
// The model is a linear score trained with SGD (momentum 0): w f32[5], batch x f32[B x 5],
//   loss = sum over the batch of x[b] . w        d loss / d w = sum over the batch of x[b]
// so that w after a step is w - lr * (column sums of the batch). With integer data and an lr of
// 0.5 every value is exact, and N ranks must give bit for bit what one rank gives.
//
// One rank (world 1): mul, reduce_sum (loss), reduce_sum (gradient), add (step), sgd_update.
// N ranks: rank r holds shard r of w and of its momentum buffer (ceil(5/N) elements, zero
// padded) and rows [r*B/N, (r+1)*B/N) of each batch:
//   all_gather(w shard) -> w; mul; reduce_sum -> the rank's loss; all_reduce -> loss;
//   reduce_sum(x) -> the rank's gradient; reduce_scatter -> gradient shard; add; sgd_update.
#pragma once

#include "runtime/executor/host_tensor.h"
#include "runtime/program/program.pb.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shardc::runtime::testing {

constexpr int kLinearFeatures = 5;
constexpr int kLinearBatch = 6;      // divisible by 1, 2 and 3 ranks
constexpr int kLinearMeshBatch = 12; // the global batch of linearSgdMeshBundle()

// The initial w: {1, 2, 3, 4, 5}.
std::vector<float> linearInitialWeights();

// A train bundle of `world` ranks (programs[r] for rank r) with planned peak memory and planned
// comm bytes filled in. The weights file, as shardc lays it out: the WEIGHTS region (64 bytes:
// the i64 constant 1 at offset 0), then the initial values (the whole of w at 64). Rank r's
// state_init points at its part of w: elements [r*k, (r+1)*k) cut at the end of w, so the last
// ranks' start unaligned and stop short of their shard.
// `batch`: the global batch, a multiple of `world`.
program::Bundle linearSgdBundle(int world, int batch = kLinearBatch);
// Its weights file (84 bytes, the same for every number of ranks).
std::string linearSgdWeights();

// linearSgdBundle(4, kLinearMeshBatch) with its 4 ranks laid out on a dp x tp = 2 x 2 mesh and two
// groups, "tp" (group 0) and "dp" (group 1): the loss's all_reduce over the world becomes one over
// the rank's tp group followed by one over its dp group (the same sum: the data are small
// integers), so that a run sends over both groups and the world (the parameters' collectives).
// planned_comm_bytes is the sum, as shardc computes it. It trains exactly like one rank.
program::Bundle linearSgdMeshBundle();
// The bytes one rank sends per step over the tp group, the dp group and the world.
constexpr uint64_t kMeshTpBytes = 8, kMeshDpBytes = 8;
uint64_t linearSgdMeshWorldBytes();

// The data set: `rows` rows of 5 small integers, as x.npy holds it.
HostTensor linearData(int rows);

} // namespace shardc::runtime::testing
