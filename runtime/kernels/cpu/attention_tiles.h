// The tile arithmetic the CPU attention and attention_grad kernels share: f32 views of q/k/v
// tiles (bf16 ones widened into the workspace), and one tile of scores
// s_ij = scale * q_i . k_j + mask_ij, with -inf where the causal rule hides key j.
#pragma once

#include "runtime/kernels/cpu/attention_checks.h"
#include "runtime/kernels/cpu/blas.h"
#include "runtime/kernels/cpu/dropout_checks.h"
#include "runtime/support/half_float.h"
#include "runtime/support/philox.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

namespace shardc::runtime::cpu {

// Tile sizes: 64 query rows by 64 keys, FlashAttention's CPU-friendly choice. Every scratch
// buffer is at most one tile (or one row of tiles), so the workspace never depends on B * H and
// never on S * Sk.
constexpr int64_t kAttentionQueryTile = 64;
constexpr int64_t kAttentionKeyTile = 64;

inline int64_t queryTileRows(const AttentionPlan &plan) {
  return std::min(kAttentionQueryTile, plan.queries);
}
inline int64_t keyTileCols(const AttentionPlan &plan) {
  return std::min(kAttentionKeyTile, plan.keys);
}

// `count` elements of tensor `t` from element `offset` as f32: a pointer into t itself when it
// is f32, else the elements widened (exactly) into `scratch`.
inline const float *f32Elements(const Tensor &t, int64_t offset, int64_t count, float *scratch) {
  if (t.dtype == program::F32)
    return t.as<float>() + offset;
  const BFloat16 *src = t.as<BFloat16>() + offset;
  for (int64_t i = 0; i < count; ++i)
    scratch[i] = toFloat(src[i]);
  return scratch;
}

// Writes `count` f32 values to tensor `t` from element `offset`, rounded to nearest even for
// bf16.
inline void storeElements(const Tensor &t, int64_t offset, int64_t count, const float *values) {
  if (t.dtype == program::F32) {
    std::copy(values, values + count, t.as<float>() + offset);
    return;
  }
  BFloat16 *dst = t.as<BFloat16>() + offset;
  for (int64_t i = 0; i < count; ++i)
    dst[i] = toBFloat16(values[i]);
}

// The last key visible to any of the query rows [i0, i0 + rows) (keys beyond it are masked for
// all of them): Sk - 1 without the causal rule.
inline int64_t lastVisibleKey(const AttentionPlan &plan, int64_t i0, int64_t rows) {
  if (!plan.causal)
    return plan.keys - 1;
  return std::min(plan.keys - 1, i0 + rows - 1 + plan.causalShift);
}

// scores[r * cols + c] = s(i0 + r, j0 + c) of batch b, from the f32 tiles qTile [rows, D] and
// kTile [cols, D]. `mask` is the mask tensor's data (null without one).
inline void scoreTile(const AttentionPlan &plan, const float *mask, int64_t b, int64_t i0,
                      int64_t rows, int64_t j0, int64_t cols, const float *qTile,
                      const float *kTile, float *scores) {
  sgemm(false, true, rows, cols, plan.headDim, plan.scale, qTile, kTile, 0.0f, scores);
  if (mask != nullptr) {
    const AttentionMaskMap &map = plan.mask;
    const float *batchMask = mask + maskBatchOffset(map, b);
    for (int64_t r = 0; r < rows; ++r) {
      const float *m = batchMask + (i0 + r) * map.rowStride + j0 * map.colStride;
      float *s = scores + r * cols;
      if (map.colStride == 1) {
        for (int64_t c = 0; c < cols; ++c)
          s[c] += m[c];
      } else {
        for (int64_t c = 0; c < cols; ++c)
          s[c] += m[c * map.colStride];
      }
    }
  }
  if (plan.causal) {
    constexpr float kMinusInf = -std::numeric_limits<float>::infinity();
    for (int64_t r = 0; r < rows; ++r) {
      // Keys after i + shift are hidden from query i.
      const int64_t firstHidden = std::max<int64_t>(0, i0 + r + plan.causalShift + 1 - j0);
      float *s = scores + r * cols;
      for (int64_t c = firstHidden; c < cols; ++c)
        s[c] = kMinusInf;
    }
  }
}

// The dropout factor of each probability of a tile: scale where the dropout kernel's mask keeps
// it, 0 where it drops it (factors[r * cols + c] for (i0 + r, j0 + c) of batch b). `words` holds
// `cols` Philox words.
inline void dropoutFactors(const AttentionPlan &plan, const PhiloxStream &philox, int64_t b,
                           int64_t i0, int64_t rows, int64_t j0, int64_t cols, uint32_t *words,
                           float *factors) {
  const AttentionDropout &drop = plan.dropout;
  for (int64_t r = 0; r < rows; ++r) {
    philox.fill(static_cast<uint64_t>(rowWholeIndex(drop, b, i0 + r) + j0),
                static_cast<size_t>(cols), words);
    for (int64_t c = 0; c < cols; ++c)
      factors[r * cols + c] = uniformFloat(words[c]) >= drop.ratio ? drop.scale : 0.0f;
  }
}

// The Philox stream of a call with dropout, after checking the step's value (which only the
// kernel can read).
inline Status attentionPhilox(const char *kernel, const KernelArgs &args, size_t seedInput,
                              const AttentionPlan &plan, PhiloxStream *philox) {
  const int64_t seed = args.inputs[seedInput].as<int64_t>()[0];
  const int64_t step = args.inputs[seedInput + 1].as<int64_t>()[0];
  const Status stepOk = checkDropoutStep(step);
  if (!stepOk.isOk())
    return Status::error(std::string(kernel) + ": " + stepOk.message());
  *philox = PhiloxStream(static_cast<uint64_t>(seed),
                         philoxStreamId(static_cast<uint32_t>(step),
                                        static_cast<uint32_t>(plan.dropout.stream)));
  return Status::ok();
}

} // namespace shardc::runtime::cpu
