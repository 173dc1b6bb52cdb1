// attention: softmax(scale * q kᵀ + mask) v without materialising the S x Sk scores. Each
// (batch, 64-query tile) walks the keys in 64-key tiles with FlashAttention's online softmax:
// a running maximum m and sum l per query row, the output accumulator rescaled by
// exp(m_old - m_new) whenever the maximum grows. The tile products run on OpenBLAS sgemm; the
// workspace holds one tile of scores, the tile's accumulators and, for bf16, widened copies of
// the q, k and v tiles (with dropout, a tile of factors): its size depends on D, Dv and at most
// one tile of S and Sk, never on B * H.
#include "runtime/kernels/cpu/attention_checks.h"
#include "runtime/kernels/cpu/attention_tiles.h"
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cpu/fast_exp.h"
#include "runtime/kernels/cpu/workspace.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace shardc::runtime::cpu {

namespace {

constexpr const char *kKernel = "attention";

// A running maximum that lets a NaN win, as the softmax kernel's, so that a NaN score poisons
// its row as it does there.
inline float nanMax(float m, float v) { return (v > m || v != v) ? v : m; }

struct ForwardScratch {
  float *q = nullptr, *k = nullptr, *v = nullptr; // widened bf16 tiles (f32: unused)
  float *scores = nullptr;                        // [rows, cols]: scores, then probabilities
  float *acc = nullptr;                           // [rows, Dv]: unnormalised output
  float *rowMax = nullptr;                        // [rows]: m
  double *rowSum = nullptr;                       // [rows]: l
  float *factors = nullptr;                       // dropout: [rows, cols] factors
  uint32_t *words = nullptr;                      // dropout: [cols] Philox words
};

// The kernel's takes, shared with its workspace-size function.
Status takeForwardScratch(Workspace &workspace, const AttentionPlan &plan, ForwardScratch *s) {
  const int64_t rows = queryTileRows(plan), cols = keyTileCols(plan);
  if (plan.dtype != program::F32) {
    SHARDC_RETURN_IF_ERROR(workspace.take(kKernel, rows * plan.headDim, &s->q));
    SHARDC_RETURN_IF_ERROR(workspace.take(kKernel, cols * plan.headDim, &s->k));
    SHARDC_RETURN_IF_ERROR(workspace.take(kKernel, cols * plan.valueDim, &s->v));
  }
  SHARDC_RETURN_IF_ERROR(workspace.take(kKernel, rows * cols, &s->scores));
  SHARDC_RETURN_IF_ERROR(workspace.take(kKernel, rows * plan.valueDim, &s->acc));
  SHARDC_RETURN_IF_ERROR(workspace.take(kKernel, rows, &s->rowMax));
  SHARDC_RETURN_IF_ERROR(workspace.take(kKernel, rows, &s->rowSum));
  if (plan.dropout.enabled) {
    SHARDC_RETURN_IF_ERROR(workspace.take(kKernel, rows * cols, &s->factors));
    SHARDC_RETURN_IF_ERROR(workspace.take(kKernel, cols, &s->words));
  }
  return Status::ok();
}

// Folds one tile of scores into the running state of its rows: the scores become the
// probabilities exp(s - m_new) (in place), and l and the accumulator are rescaled to m_new.
void onlineSoftmaxStep(int64_t rows, int64_t cols, int64_t valueDim, float *scores,
                       const ForwardScratch &s) {
  for (int64_t r = 0; r < rows; ++r) {
    float *row = scores + r * cols;
    float tileMax = -std::numeric_limits<float>::infinity();
    for (int64_t c = 0; c < cols; ++c)
      tileMax = nanMax(tileMax, row[c]);
    const float newMax = nanMax(s.rowMax[r], tileMax);
    // While every score so far is -inf the base is 0, so that exp(-inf - base) is 0 rather
    // than the NaN of -inf - -inf; the row stays all zero until a finite score arrives.
    const float base = newMax == -std::numeric_limits<float>::infinity() ? 0.0f : newMax;
    const float rescale = fastExp(s.rowMax[r] - base);
    double tileSum = 0.0;
    for (int64_t c = 0; c < cols; ++c) {
      row[c] = fastExp(row[c] - base);
      tileSum += row[c];
    }
    s.rowSum[r] = s.rowSum[r] * rescale + tileSum;
    if (rescale != 1.0f) {
      float *acc = s.acc + r * valueDim;
      for (int64_t c = 0; c < valueDim; ++c)
        acc[c] *= rescale;
    }
    s.rowMax[r] = newMax;
  }
}

void attentionForward(const KernelArgs &args, const AttentionPlan &plan,
                      const PhiloxStream &philox, const ForwardScratch &s) {
  const Tensor &q = args.inputs[0], &k = args.inputs[1], &v = args.inputs[2];
  const float *mask = plan.hasMask ? args.inputs[3].as<float>() : nullptr;
  const Tensor &out = args.outputs[0];
  float *lse = args.outputs[1].as<float>();
  const int64_t S = plan.queries, Sk = plan.keys, D = plan.headDim, Dv = plan.valueDim;
  const int64_t tileRows = queryTileRows(plan), tileCols = keyTileCols(plan);
  for (int64_t b = 0; b < plan.batch; ++b) {
    for (int64_t i0 = 0; i0 < S; i0 += tileRows) {
      const int64_t rows = std::min(tileRows, S - i0);
      const float *qTile = f32Elements(q, (b * S + i0) * D, rows * D, s.q);
      std::fill(s.rowMax, s.rowMax + rows, -std::numeric_limits<float>::infinity());
      std::fill(s.rowSum, s.rowSum + rows, 0.0);
      std::fill(s.acc, s.acc + rows * Dv, 0.0f);
      // Key tiles entirely hidden by the causal rule contribute exp(-inf) = 0: skipped.
      const int64_t lastKey = lastVisibleKey(plan, i0, rows);
      for (int64_t j0 = 0; j0 <= lastKey; j0 += tileCols) {
        const int64_t cols = std::min(tileCols, Sk - j0);
        const float *kTile = f32Elements(k, (b * Sk + j0) * D, cols * D, s.k);
        const float *vTile = f32Elements(v, (b * Sk + j0) * Dv, cols * Dv, s.v);
        scoreTile(plan, mask, b, i0, rows, j0, cols, qTile, kTile, s.scores);
        onlineSoftmaxStep(rows, cols, Dv, s.scores, s);
        if (plan.dropout.enabled) {
          // The sums above are of the undropped probabilities (softmax's); only the output
          // sums the dropped ones, as dropout after softmax would.
          dropoutFactors(plan, philox, b, i0, rows, j0, cols, s.words, s.factors);
          for (int64_t e = 0; e < rows * cols; ++e)
            s.scores[e] *= s.factors[e];
        }
        sgemm(false, false, rows, Dv, cols, 1.0f, s.scores, vTile, 1.0f, s.acc);
      }
      for (int64_t r = 0; r < rows; ++r) {
        // l is 0 only when every score of the row is -inf: then, as the softmax kernel's
        // exp(-inf - -inf), the probabilities and so the output are NaN (0 / 0 here) and
        // lse = -inf. Without keys (Sk = 0) the output is the empty sum, 0.
        const double l = s.rowSum[r];
        lse[b * S + i0 + r] = static_cast<float>(s.rowMax[r] + std::log(l));
        const float inverse = Sk == 0   ? 0.0f
                              : l == 0.0 ? std::numeric_limits<float>::quiet_NaN()
                                         : static_cast<float>(1.0 / l);
        float *acc = s.acc + r * Dv;
        for (int64_t c = 0; c < Dv; ++c)
          acc[c] *= inverse;
      }
      storeElements(out, (b * S + i0) * Dv, rows * Dv, s.acc);
    }
  }
}

} // namespace

Status attentionKernel(KernelArgs &args) {
  AttentionPlan plan;
  SHARDC_RETURN_IF_ERROR(checkAttention(args, &plan));
  SHARDC_RETURN_IF_ERROR(checkBlasDims(kKernel, {plan.queries, plan.keys, plan.headDim,
                                                 plan.valueDim}));
  Workspace workspace(args);
  ForwardScratch scratch;
  SHARDC_RETURN_IF_ERROR(takeForwardScratch(workspace, plan, &scratch));
  PhiloxStream philox(0, 0);
  if (plan.dropout.enabled)
    SHARDC_RETURN_IF_ERROR(attentionPhilox(kKernel, args, kAttentionSeedInput, plan, &philox));
  attentionForward(args, plan, philox, scratch);
  return Status::ok();
}

Status attentionWorkspace(const KernelArgs &args, uint64_t *bytes) {
  AttentionPlan plan;
  SHARDC_RETURN_IF_ERROR(checkAttention(args, &plan));
  ForwardScratch scratch;
  return measureWorkspace(
      bytes, [&](Workspace &workspace) { return takeForwardScratch(workspace, plan, &scratch); });
}

} // namespace shardc::runtime::cpu
