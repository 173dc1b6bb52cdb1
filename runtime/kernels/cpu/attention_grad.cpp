// attention_grad: the gradient of attention's output with respect to q, k and v, by the
// FlashAttention-2 backward. The probabilities are recomputed tile by tile from q, k and the
// forward's lse (p = exp(s - lse)), so no S x Sk matrix exists; with
// delta_i = dout_i . out_i (= sum_j p_ij dp_ij):
//   dp = dout vᵀ,  ds = p * (dp - delta),  dv += pᵀ dout,  dq += scale ds k,  dk += scale dsᵀ q.
// Each batch walks its 64-query tiles; dq of a tile accumulates over the key tiles, dk and dv
// over the query tiles. All sums are f32 (OpenBLAS sgemm). The workspace holds two tiles of
// scores, the tile's dq, and for bf16 widened q, dout, k, v tiles plus f32 dk and dv
// accumulators of one batch ([Sk, D] and [Sk, Dv]: linear in Sk); f32 dk and dv accumulate in
// the outputs themselves.
#include "runtime/kernels/cpu/attention_checks.h"
#include "runtime/kernels/cpu/attention_tiles.h"
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cpu/fast_exp.h"
#include "runtime/kernels/cpu/workspace.h"

#include <algorithm>
#include <cmath>

namespace shardc::runtime::cpu {

namespace {

constexpr const char *kKernel = "attention_grad";

struct BackwardScratch {
  float *q = nullptr, *dout = nullptr, *k = nullptr, *v = nullptr; // widened bf16 tiles
  float *dk = nullptr, *dv = nullptr; // bf16: one batch's f32 accumulators
  float *probs = nullptr;             // [rows, cols]: p
  float *dprobs = nullptr;            // [rows, cols]: dp, then ds
  float *dq = nullptr;                // [rows, D]
  float *delta = nullptr;             // [rows]
  float *factors = nullptr;           // dropout: [rows, cols] factors
  float *dropped = nullptr;           // dropout: [rows, cols] p * factor
  uint32_t *words = nullptr;          // dropout: [cols] Philox words
};

Status takeBackwardScratch(Workspace &workspace, const AttentionPlan &plan, BackwardScratch *s) {
  const int64_t rows = queryTileRows(plan), cols = keyTileCols(plan);
  const int64_t D = plan.headDim, Dv = plan.valueDim;
  if (plan.dtype != program::F32) {
    SHARDC_RETURN_IF_ERROR(workspace.take(kKernel, rows * D, &s->q));
    SHARDC_RETURN_IF_ERROR(workspace.take(kKernel, rows * Dv, &s->dout));
    SHARDC_RETURN_IF_ERROR(workspace.take(kKernel, cols * D, &s->k));
    SHARDC_RETURN_IF_ERROR(workspace.take(kKernel, cols * Dv, &s->v));
    SHARDC_RETURN_IF_ERROR(workspace.take(kKernel, plan.keys * D, &s->dk));
    SHARDC_RETURN_IF_ERROR(workspace.take(kKernel, plan.keys * Dv, &s->dv));
  }
  SHARDC_RETURN_IF_ERROR(workspace.take(kKernel, rows * cols, &s->probs));
  SHARDC_RETURN_IF_ERROR(workspace.take(kKernel, rows * cols, &s->dprobs));
  SHARDC_RETURN_IF_ERROR(workspace.take(kKernel, rows * D, &s->dq));
  SHARDC_RETURN_IF_ERROR(workspace.take(kKernel, rows, &s->delta));
  if (plan.dropout.enabled) {
    SHARDC_RETURN_IF_ERROR(workspace.take(kKernel, rows * cols, &s->factors));
    SHARDC_RETURN_IF_ERROR(workspace.take(kKernel, rows * cols, &s->dropped));
    SHARDC_RETURN_IF_ERROR(workspace.take(kKernel, cols, &s->words));
  }
  return Status::ok();
}

// delta_i = dout_i . out_i for the tile's rows, summed in double.
void rowDeltas(const Tensor &out, const Tensor &dout, int64_t first, int64_t rows, int64_t Dv,
               float *delta) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t at = (first + r) * Dv;
    double sum = 0.0;
    if (out.dtype == program::F32) {
      const float *o = out.as<float>() + at, *g = dout.as<float>() + at;
      for (int64_t c = 0; c < Dv; ++c)
        sum += static_cast<double>(o[c]) * g[c];
    } else {
      const BFloat16 *o = out.as<BFloat16>() + at, *g = dout.as<BFloat16>() + at;
      for (int64_t c = 0; c < Dv; ++c)
        sum += static_cast<double>(toFloat(o[c])) * toFloat(g[c]);
    }
    delta[r] = static_cast<float>(sum);
  }
}

void attentionBackward(const KernelArgs &args, const AttentionPlan &plan,
                       const PhiloxStream &philox, const BackwardScratch &s) {
  const Tensor &q = args.inputs[0], &k = args.inputs[1], &v = args.inputs[2];
  const float *mask = plan.hasMask ? args.inputs[3].as<float>() : nullptr;
  const Tensor &out = args.inputs[4], &dout = args.inputs[6];
  const float *lse = args.inputs[5].as<float>();
  const Tensor &dq = args.outputs[0], &dk = args.outputs[1], &dv = args.outputs[2];
  const int64_t S = plan.queries, Sk = plan.keys, D = plan.headDim, Dv = plan.valueDim;
  const int64_t tileRows = queryTileRows(plan), tileCols = keyTileCols(plan);
  const float scale = plan.scale;
  const bool f32 = plan.dtype == program::F32;
  for (int64_t b = 0; b < plan.batch; ++b) {
    float *dkAcc = f32 ? dk.as<float>() + b * Sk * D : s.dk;
    float *dvAcc = f32 ? dv.as<float>() + b * Sk * Dv : s.dv;
    std::fill(dkAcc, dkAcc + Sk * D, 0.0f);
    std::fill(dvAcc, dvAcc + Sk * Dv, 0.0f);
    for (int64_t i0 = 0; i0 < S; i0 += tileRows) {
      const int64_t rows = std::min(tileRows, S - i0);
      const float *qTile = f32Elements(q, (b * S + i0) * D, rows * D, s.q);
      const float *doutTile = f32Elements(dout, (b * S + i0) * Dv, rows * Dv, s.dout);
      const float *rowLse = lse + b * S + i0;
      rowDeltas(out, dout, b * S + i0, rows, Dv, s.delta);
      std::fill(s.dq, s.dq + rows * D, 0.0f);
      // Causally hidden key tiles have p = exp(-inf - lse) = 0 and are skipped, unless a row
      // has a non-finite lse (a fully masked row: -inf, or NaN): its p is NaN everywhere, as
      // the unfused softmax's, and must reach every key's gradient as it would there.
      bool finiteLse = true;
      for (int64_t r = 0; r < rows; ++r)
        finiteLse = finiteLse && std::isfinite(rowLse[r]);
      const int64_t lastKey = finiteLse ? lastVisibleKey(plan, i0, rows) : Sk - 1;
      for (int64_t j0 = 0; j0 <= lastKey; j0 += tileCols) {
        const int64_t cols = std::min(tileCols, Sk - j0);
        const float *kTile = f32Elements(k, (b * Sk + j0) * D, cols * D, s.k);
        const float *vTile = f32Elements(v, (b * Sk + j0) * Dv, cols * Dv, s.v);
        scoreTile(plan, mask, b, i0, rows, j0, cols, qTile, kTile, s.probs);
        for (int64_t r = 0; r < rows; ++r) {
          float *p = s.probs + r * cols;
          for (int64_t c = 0; c < cols; ++c)
            p[c] = fastExp(p[c] - rowLse[r]);
        }
        // dp = dout vᵀ; dv += pᵀ dout. With dropout the output summed the dropped
        // probabilities p * factor: dv takes those, and dp flows back through the factor
        // (the dropout's backward) before the softmax's; delta = dout . out is still
        // sum_j p_ij (dp_ij * factor_ij).
        sgemm(false, true, rows, cols, Dv, 1.0f, doutTile, vTile, 0.0f, s.dprobs);
        const float *summed = s.probs;
        if (plan.dropout.enabled) {
          dropoutFactors(plan, philox, b, i0, rows, j0, cols, s.words, s.factors);
          for (int64_t e = 0; e < rows * cols; ++e) {
            s.dropped[e] = s.probs[e] * s.factors[e];
            s.dprobs[e] *= s.factors[e];
          }
          summed = s.dropped;
        }
        sgemm(true, false, cols, Dv, rows, 1.0f, summed, doutTile, 1.0f, dvAcc + j0 * Dv);
        // ds = p (dp - delta), in place of dp.
        for (int64_t r = 0; r < rows; ++r) {
          const float *p = s.probs + r * cols;
          float *ds = s.dprobs + r * cols;
          for (int64_t c = 0; c < cols; ++c)
            ds[c] = p[c] * (ds[c] - s.delta[r]);
        }
        // dq += scale ds k; dk += scale dsᵀ q.
        sgemm(false, false, rows, D, cols, scale, s.dprobs, kTile, 1.0f, s.dq);
        sgemm(true, false, cols, D, rows, scale, s.dprobs, qTile, 1.0f, dkAcc + j0 * D);
      }
      storeElements(dq, (b * S + i0) * D, rows * D, s.dq);
    }
    if (!f32) {
      storeElements(dk, b * Sk * D, Sk * D, dkAcc);
      storeElements(dv, b * Sk * Dv, Sk * Dv, dvAcc);
    }
  }
}

} // namespace

Status attentionGradKernel(KernelArgs &args) {
  AttentionPlan plan;
  SHARDC_RETURN_IF_ERROR(checkAttentionGrad(args, &plan));
  SHARDC_RETURN_IF_ERROR(checkBlasDims(kKernel, {plan.queries, plan.keys, plan.headDim,
                                                 plan.valueDim}));
  Workspace workspace(args);
  BackwardScratch scratch;
  SHARDC_RETURN_IF_ERROR(takeBackwardScratch(workspace, plan, &scratch));
  PhiloxStream philox(0, 0);
  if (plan.dropout.enabled)
    SHARDC_RETURN_IF_ERROR(
        attentionPhilox(kKernel, args, kAttentionGradSeedInput, plan, &philox));
  attentionBackward(args, plan, philox, scratch);
  return Status::ok();
}

Status attentionGradWorkspace(const KernelArgs &args, uint64_t *bytes) {
  AttentionPlan plan;
  SHARDC_RETURN_IF_ERROR(checkAttentionGrad(args, &plan));
  BackwardScratch scratch;
  return measureWorkspace(bytes, [&](Workspace &workspace) {
    return takeBackwardScratch(workspace, plan, &scratch);
  });
}

} // namespace shardc::runtime::cpu
