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

#include <string>
#include <vector>

namespace shardc::runtime::testing {

constexpr int kLinearFeatures = 5;
constexpr int kLinearBatch = 6; // divisible by 1, 2 and 3 ranks

// The initial w: {1, 2, 3, 4, 5}.
std::vector<float> linearInitialWeights();

// A train bundle of `world` ranks (programs[r] for rank r) with planned peak memory and planned
// comm bytes filled in. The weights file, as shardc lays it out: the WEIGHTS region (64 bytes:
// the i64 constant 1 at offset 0), then the initial values (the whole of w at 64). Rank r's
// state_init points at its part of w: elements [r*k, (r+1)*k) cut at the end of w, so the last
// ranks' start unaligned and stop short of their shard.
program::Bundle linearSgdBundle(int world);
// Its weights file (84 bytes, the same for every number of ranks).
std::string linearSgdWeights();

// The data set: `rows` rows of 5 small integers, as x.npy holds it.
HostTensor linearData(int rows);

} // namespace shardc::runtime::testing
