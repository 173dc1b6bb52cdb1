// Learning-rate schedules of the training loop: the lr fed to training step k (1-based; step k
// is the k-th optimizer update) of a run of K steps.
//
//   constant:  lr(k) = warmup(k) while k < W, else lr
//   cosine:    lr(k) = warmup(k) while k < W, else
//                      min_lr + 0.5 * (1 + cos(pi * r)) * (lr - min_lr),  r = (k - W) / (K - W)
//              (r is taken as 0 when K <= W, i.e. lr throughout once warmup ends)
//   warmup(k) = lr * k / W
//
// with W = warmup steps, K = total steps. This is nanoGPT's get_lr(it) evaluated at it = k with
// warmup_iters = W and lr_decay_iters = K: warmup rises linearly from 0 (at step 0, i.e. never
// fed) to lr at step W, and cosine decay reaches exactly min_lr at the last step K. Computed in
// double; the loop rounds it to f32 because lr is an f32 input of the training step. A resumed
// run with the same K gets the same lr at every step, since lr depends only on (k, K, W).
#pragma once

#include "runtime/support/status.h"

#include <cstdint>
#include <string>

namespace shardc::runtime {

enum class LrScheduleKind { Constant, Cosine };

struct LrSchedule {
  LrScheduleKind kind = LrScheduleKind::Constant;
  double lr = 1e-3;
  double minLr = 0.0;      // cosine only
  int64_t warmupSteps = 0; // W
  int64_t totalSteps = 0;  // K

  // lr(k) as above; `step` >= 1.
  double at(int64_t step) const;
};

// Parses "constant" / "cosine".
Status parseLrScheduleKind(const std::string &text, LrScheduleKind *out);

} // namespace shardc::runtime
