// attention and attention_grad on CUDA: the CPU kernels' contract (cpu/attention_checks.h, the
// same checks and messages), flash style: no S x Sk matrix, no workspace, no atomics.
//
// * attention: one block per (batch, 8-query tile), one warp per query row. The block walks the
//   keys in tiles of 32 (one key per lane) held in shared memory with the q rows, keeping a
//   running maximum and sum per row (online softmax) and the row's output accumulator in shared
//   memory (each lane owns the columns lane, lane + 32, ...).
// * attention_grad, in two kernels, each writing its outputs once in a fixed order (so results
//   are deterministic run to run):
//   - keys: one block per (batch, 8-key tile), one warp per key; it walks every query (16-row
//     tiles of q, dout, lse and delta = dout . out in shared memory) and accumulates the key's
//     dk and dv in shared memory;
//   - queries: one block per (batch, 8-query tile), one warp per query; it walks the keys in
//     32-key tiles (one per lane), as the forward, and accumulates dq.
//   Both recompute p = exp(s - lse). Every key tile is visited, even causally hidden ones
//   (there p = 0), so a fully masked row's NaN p reaches every gradient as on the CPU.
// Sums are f32 in an order other than the CPU's, and exp is CUDA's expf: results agree with the
// CPU within f32 rounding. Dropout draws the CPU's (and the dropout kernel's) mask: the same
// Philox words (support/philox_core.h) and the same f32 comparison and scale; seed and step are
// read on the device, and a step outside [0, 2^32), an error on the CPU, makes the dropped
// probabilities, so the results, NaN.
#include "runtime/kernels/cpu/attention_checks.h"
#include "runtime/kernels/cuda/cuda_common.cuh"
#include "runtime/kernels/cuda/cuda_kernels.h"
#include "runtime/support/philox_core.h"

#include <cmath>
#include <string>

namespace shardc::runtime::cuda {

namespace {

using cpu::AttentionDropout;
using cpu::AttentionPlan;

constexpr int kWarp = 32;
constexpr int kRowsPerBlock = 8;    // query rows (forward, dq) or keys (dk, dv) per block
constexpr int kKeysPerTile = kWarp; // keys per shared-memory tile: one per lane
constexpr int kGradQueryTile = 16;  // query rows per shared-memory tile of the keys kernel

__device__ inline float widen(float x) { return x; }
__device__ inline float widen(bf16 x) { return __bfloat162float(x); }
template <typename T> __device__ inline T narrow(float x);
template <> __device__ inline float narrow<float>(float x) { return x; }
template <> __device__ inline bf16 narrow<bf16>(float x) { return __float2bfloat16_rn(x); }

__device__ inline float nanMax(float m, float v) { return (v > m || v != v) ? v : m; }

__device__ inline float warpSum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ inline float warpMax(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    v = nanMax(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// The dropout mask's Philox stream, read from the device's seed and step.
struct DropoutStream {
  uint64_t seed = 0, streamId = 0;
  bool stepFits = true;
};

__device__ inline DropoutStream dropoutStream(const AttentionDropout &drop, const int64_t *seed,
                                              const int64_t *step) {
  DropoutStream s;
  if (!drop.enabled)
    return s;
  const int64_t stepValue = *step;
  s.stepFits = stepValue >= 0 && stepValue <= static_cast<int64_t>(0xFFFFFFFFu);
  s.seed = static_cast<uint64_t>(*seed);
  s.streamId = philoxStreamId(static_cast<uint32_t>(stepValue),
                              static_cast<uint32_t>(drop.stream));
  return s;
}

// The factor dropout applies to probability (b, i, j): scale when kept, 0 when dropped (1
// without dropout; NaN for a step out of range).
__device__ inline float dropFactor(const AttentionDropout &drop, const DropoutStream &stream,
                                   int64_t b, int64_t i, int64_t j) {
  if (!drop.enabled)
    return 1.0f;
  if (!stream.stepFits)
    return __int_as_float(0x7fffffff);
  const uint64_t whole = static_cast<uint64_t>(cpu::rowWholeIndex(drop, b, i) + j);
  uint32_t words[4];
  philoxStreamBlock(stream.seed, stream.streamId, whole / 4, words);
  const uint64_t lane = whole % 4;
  const uint32_t word =
      lane == 0 ? words[0] : lane == 1 ? words[1] : lane == 2 ? words[2] : words[3];
  return uniformFloat(word) >= drop.ratio ? drop.scale : 0.0f;
}

// s(b, i, j) from the f32 rows q_i and k_j (in shared memory), the mask and the causal rule.
__device__ inline float score(const AttentionPlan &plan, const float *mask, int64_t b, int64_t i,
                              int64_t j, float dot) {
  float s = plan.scale * dot;
  if (mask != nullptr)
    s += mask[cpu::maskBatchOffset(plan.mask, b) + i * plan.mask.rowStride +
              j * plan.mask.colStride];
  if (plan.causal && j > i + plan.causalShift)
    s = -INFINITY;
  return s;
}

// Copies `rows` rows of `cols` elements of `src` from row `first` (rows past `limit` as 0) into
// the f32 shared array `dst`, with every thread of the block.
template <typename T>
__device__ inline void loadRows(const T *__restrict__ src, int64_t first, int rows, int64_t limit,
                                int64_t cols, float *dst) {
  const int64_t n = static_cast<int64_t>(rows) * cols;
  for (int64_t e = threadIdx.x; e < n; e += blockDim.x) {
    const int64_t row = first + e / (cols > 0 ? cols : 1);
    dst[e] = row < limit ? widen(src[first * cols + e]) : 0.0f;
  }
}

template <typename T>
__global__ void attentionForwardKernel(const T *__restrict__ q, const T *__restrict__ k,
                                       const T *__restrict__ v, const float *__restrict__ mask,
                                       const int64_t *seed, const int64_t *step,
                                       T *__restrict__ out, float *__restrict__ lse,
                                       AttentionPlan plan, int64_t tilesPerBatch) {
  extern __shared__ float shared[];
  const int64_t D = plan.headDim, Dv = plan.valueDim, S = plan.queries, Sk = plan.keys;
  float *qs = shared;                         // [8, D]
  float *ks = qs + kRowsPerBlock * D;         // [32, D]
  float *vs = ks + kKeysPerTile * D;          // [32, Dv]
  float *acc = vs + kKeysPerTile * Dv;        // [8, Dv]
  float *probs = acc + kRowsPerBlock * Dv;    // [8, 32]
  const int64_t b = blockIdx.x / tilesPerBatch;
  const int64_t i0 = (blockIdx.x % tilesPerBatch) * kRowsPerBlock;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t i = i0 + warp;
  const bool active = i < S;
  const DropoutStream stream = dropoutStream(plan.dropout, seed, step);

  loadRows(q + b * S * D, i0, kRowsPerBlock, S, D, qs);
  for (int64_t e = threadIdx.x; e < kRowsPerBlock * Dv; e += blockDim.x)
    acc[e] = 0.0f;
  __syncthreads(); // q and the zeroed accumulators are seen by every warp, even without keys
  float rowMax = -INFINITY, rowSum = 0.0f;
  const int64_t lastRow = i0 + kRowsPerBlock - 1 < S - 1 ? i0 + kRowsPerBlock - 1 : S - 1;
  int64_t lastKey = Sk - 1;
  if (plan.causal && lastRow + plan.causalShift < lastKey)
    lastKey = lastRow + plan.causalShift; // later key tiles are hidden from every row: p = 0
  for (int64_t j0 = 0; j0 <= lastKey; j0 += kKeysPerTile) {
    const int cols = static_cast<int>(Sk - j0 < kKeysPerTile ? Sk - j0 : kKeysPerTile);
    __syncthreads(); // the previous tile is no longer read
    loadRows(k + b * Sk * D, j0, kKeysPerTile, Sk, D, ks);
    loadRows(v + b * Sk * Dv, j0, kKeysPerTile, Sk, Dv, vs);
    __syncthreads();
    if (active) {
      float s = -INFINITY;
      if (lane < cols) {
        float dot = 0.0f;
        for (int64_t c = 0; c < D; ++c)
          dot += qs[warp * D + c] * ks[lane * D + c];
        s = score(plan, mask, b, i, j0 + lane, dot);
      }
      const float newMax = nanMax(rowMax, warpMax(s));
      // While every score so far is -inf the base is 0 (exp(-inf - 0) = 0, not NaN).
      const float base = newMax == -INFINITY ? 0.0f : newMax;
      const float rescale = expf(rowMax - base);
      const float p = expf(s - base);
      rowSum = rowSum * rescale + warpSum(p);
      rowMax = newMax;
      probs[warp * kKeysPerTile + lane] =
          lane < cols ? p * dropFactor(plan.dropout, stream, b, i, j0 + lane) : 0.0f;
      __syncwarp();
      for (int64_t c = lane; c < Dv; c += kWarp) {
        float sum = 0.0f;
        for (int j = 0; j < cols; ++j)
          sum += probs[warp * kKeysPerTile + j] * vs[j * Dv + c];
        acc[warp * Dv + c] = acc[warp * Dv + c] * rescale + sum;
      }
      __syncwarp();
    }
  }
  if (!active)
    return;
  // As on the CPU: an all -inf row has l = 0, NaN output and lse = -inf; no keys give 0.
  const float inverse = Sk == 0 ? 0.0f : rowSum == 0.0f ? __int_as_float(0x7fffffff)
                                                        : 1.0f / rowSum;
  for (int64_t c = lane; c < Dv; c += kWarp)
    out[(b * S + i) * Dv + c] = narrow<T>(acc[warp * Dv + c] * inverse);
  if (lane == 0)
    lse[b * S + i] = rowMax + logf(rowSum);
}

// dk and dv: one warp per key j of the block's 8, over every query.
template <typename T>
__global__ void attentionGradKeysKernel(const T *__restrict__ q, const T *__restrict__ k,
                                        const T *__restrict__ v, const float *__restrict__ mask,
                                        const T *__restrict__ out, const float *__restrict__ lse,
                                        const T *__restrict__ dout, const int64_t *seed,
                                        const int64_t *step, T *__restrict__ dk,
                                        T *__restrict__ dv, AttentionPlan plan,
                                        int64_t tilesPerBatch) {
  extern __shared__ float shared[];
  const int64_t D = plan.headDim, Dv = plan.valueDim, S = plan.queries, Sk = plan.keys;
  float *ks = shared;                        // [8, D]
  float *vs = ks + kRowsPerBlock * D;        // [8, Dv]
  float *dkAcc = vs + kRowsPerBlock * Dv;    // [8, D]
  float *dvAcc = dkAcc + kRowsPerBlock * D;  // [8, Dv]
  float *qs = dvAcc + kRowsPerBlock * Dv;    // [16, D]
  float *douts = qs + kGradQueryTile * D;    // [16, Dv]
  float *lses = douts + kGradQueryTile * Dv; // [16]
  float *deltas = lses + kGradQueryTile;     // [16]
  const int64_t b = blockIdx.x / tilesPerBatch;
  const int64_t j0 = (blockIdx.x % tilesPerBatch) * kRowsPerBlock;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t j = j0 + warp;
  const bool active = j < Sk;
  const DropoutStream stream = dropoutStream(plan.dropout, seed, step);

  loadRows(k + b * Sk * D, j0, kRowsPerBlock, Sk, D, ks);
  loadRows(v + b * Sk * Dv, j0, kRowsPerBlock, Sk, Dv, vs);
  for (int64_t e = threadIdx.x; e < kRowsPerBlock * D; e += blockDim.x)
    dkAcc[e] = 0.0f;
  for (int64_t e = threadIdx.x; e < kRowsPerBlock * Dv; e += blockDim.x)
    dvAcc[e] = 0.0f;
  __syncthreads(); // k, v and the zeroed accumulators are seen by every warp, even without queries
  for (int64_t i0 = 0; i0 < S; i0 += kGradQueryTile) {
    const int rows = static_cast<int>(S - i0 < kGradQueryTile ? S - i0 : kGradQueryTile);
    __syncthreads(); // the previous query tile is no longer read
    loadRows(q + b * S * D, i0, kGradQueryTile, S, D, qs);
    loadRows(dout + b * S * Dv, i0, kGradQueryTile, S, Dv, douts);
    // delta_i = dout_i . out_i: each warp takes rows warp, warp + 8.
    for (int r = warp; r < rows; r += kRowsPerBlock) {
      const int64_t at = (b * S + i0 + r) * Dv;
      float sum = 0.0f;
      for (int64_t c = lane; c < Dv; c += kWarp)
        sum += widen(dout[at + c]) * widen(out[at + c]);
      sum = warpSum(sum);
      if (lane == 0) {
        deltas[r] = sum;
        lses[r] = lse[b * S + i0 + r];
      }
    }
    __syncthreads();
    if (!active)
      continue;
    for (int r = 0; r < rows; ++r) {
      const int64_t i = i0 + r;
      float dot = 0.0f, dp = 0.0f;
      for (int64_t c = lane; c < D; c += kWarp)
        dot += qs[r * D + c] * ks[warp * D + c];
      for (int64_t c = lane; c < Dv; c += kWarp)
        dp += douts[r * Dv + c] * vs[warp * Dv + c];
      dot = warpSum(dot);
      dp = warpSum(dp);
      const float p = expf(score(plan, mask, b, i, j, dot) - lses[r]);
      const float factor = dropFactor(plan.dropout, stream, b, i, j);
      // With dropout, out sums p * factor * v: dv gets the dropped p, and dp flows back
      // through the factor before the softmax's backward.
      const float dropped = p * factor;
      const float ds = p * (dp * factor - deltas[r]);
      for (int64_t c = lane; c < Dv; c += kWarp)
        dvAcc[warp * Dv + c] += dropped * douts[r * Dv + c];
      for (int64_t c = lane; c < D; c += kWarp)
        dkAcc[warp * D + c] += plan.scale * ds * qs[r * D + c];
    }
  }
  if (!active)
    return;
  for (int64_t c = lane; c < D; c += kWarp)
    dk[(b * Sk + j) * D + c] = narrow<T>(dkAcc[warp * D + c]);
  for (int64_t c = lane; c < Dv; c += kWarp)
    dv[(b * Sk + j) * Dv + c] = narrow<T>(dvAcc[warp * Dv + c]);
}

// dq: one warp per query i of the block's 8, over every key tile.
template <typename T>
__global__ void attentionGradQueriesKernel(const T *__restrict__ q, const T *__restrict__ k,
                                           const T *__restrict__ v,
                                           const float *__restrict__ mask,
                                           const T *__restrict__ out,
                                           const float *__restrict__ lse,
                                           const T *__restrict__ dout, const int64_t *seed,
                                           const int64_t *step, T *__restrict__ dq,
                                           AttentionPlan plan, int64_t tilesPerBatch) {
  extern __shared__ float shared[];
  const int64_t D = plan.headDim, Dv = plan.valueDim, S = plan.queries, Sk = plan.keys;
  float *qs = shared;                       // [8, D]
  float *douts = qs + kRowsPerBlock * D;    // [8, Dv]
  float *dqAcc = douts + kRowsPerBlock * Dv; // [8, D]
  float *ks = dqAcc + kRowsPerBlock * D;    // [32, D]
  float *vs = ks + kKeysPerTile * D;        // [32, Dv]
  float *dss = vs + kKeysPerTile * Dv;      // [8, 32]
  const int64_t b = blockIdx.x / tilesPerBatch;
  const int64_t i0 = (blockIdx.x % tilesPerBatch) * kRowsPerBlock;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t i = i0 + warp;
  const bool active = i < S;
  const DropoutStream stream = dropoutStream(plan.dropout, seed, step);

  loadRows(q + b * S * D, i0, kRowsPerBlock, S, D, qs);
  loadRows(dout + b * S * Dv, i0, kRowsPerBlock, S, Dv, douts);
  for (int64_t e = threadIdx.x; e < kRowsPerBlock * D; e += blockDim.x)
    dqAcc[e] = 0.0f;
  __syncthreads(); // q, dout and the zeroed accumulators are seen by every warp, even without keys
  float delta = 0.0f, rowLse = 0.0f;
  if (active) {
    for (int64_t c = lane; c < Dv; c += kWarp)
      delta += widen(dout[(b * S + i) * Dv + c]) * widen(out[(b * S + i) * Dv + c]);
    delta = warpSum(delta);
    rowLse = lse[b * S + i];
  }
  for (int64_t j0 = 0; j0 < Sk; j0 += kKeysPerTile) {
    const int cols = static_cast<int>(Sk - j0 < kKeysPerTile ? Sk - j0 : kKeysPerTile);
    __syncthreads();
    loadRows(k + b * Sk * D, j0, kKeysPerTile, Sk, D, ks);
    loadRows(v + b * Sk * Dv, j0, kKeysPerTile, Sk, Dv, vs);
    __syncthreads();
    if (!active)
      continue;
    float ds = 0.0f;
    if (lane < cols) {
      float dot = 0.0f, dp = 0.0f;
      for (int64_t c = 0; c < D; ++c)
        dot += qs[warp * D + c] * ks[lane * D + c];
      for (int64_t c = 0; c < Dv; ++c)
        dp += douts[warp * Dv + c] * vs[lane * Dv + c];
      const float p = expf(score(plan, mask, b, i, j0 + lane, dot) - rowLse);
      ds = p * (dp * dropFactor(plan.dropout, stream, b, i, j0 + lane) - delta);
    }
    dss[warp * kKeysPerTile + lane] = ds;
    __syncwarp();
    for (int64_t c = lane; c < D; c += kWarp) {
      float sum = 0.0f;
      for (int jj = 0; jj < cols; ++jj)
        sum += dss[warp * kKeysPerTile + jj] * ks[jj * D + c];
      dqAcc[warp * D + c] += plan.scale * sum;
    }
    __syncwarp();
  }
  if (!active)
    return;
  for (int64_t c = lane; c < D; c += kWarp)
    dq[(b * S + i) * D + c] = narrow<T>(dqAcc[warp * D + c]);
}

// Lets `kernel` use `bytes` of dynamic shared memory (above the default 48 KiB it must opt in);
// an error naming the head dims when the GPU has less.
template <typename Kernel>
Status allowSharedMemory(const char *name, Kernel kernel, size_t bytes,
                         const AttentionPlan &plan) {
  if (bytes <= 48 * 1024)
    return Status::ok();
  const cudaError_t error =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(bytes));
  if (error == cudaSuccess)
    return Status::ok();
  cudaGetLastError(); // clear it
  return Status::error(std::string(name) + ": head dims D = " + std::to_string(plan.headDim) +
                       ", Dv = " + std::to_string(plan.valueDim) + " need " +
                       std::to_string(bytes) + " bytes of shared memory, more than this GPU " +
                       "allows (" + cudaGetErrorString(error) + ")");
}

size_t floats(int64_t n) { return static_cast<size_t>(n) * sizeof(float); }

const int64_t *seedOf(const KernelArgs &args, size_t at, const AttentionPlan &plan) {
  return plan.dropout.enabled ? args.inputs[at].as<int64_t>() : nullptr;
}
const int64_t *stepOf(const KernelArgs &args, size_t at, const AttentionPlan &plan) {
  return plan.dropout.enabled ? args.inputs[at + 1].as<int64_t>() : nullptr;
}

template <typename T> Status launchForward(KernelArgs &args, const AttentionPlan &plan) {
  const int64_t tiles = (plan.queries + kRowsPerBlock - 1) / kRowsPerBlock;
  const int64_t blocks = plan.batch * tiles;
  if (blocks == 0)
    return Status::ok();
  const size_t shared = floats((kRowsPerBlock + kKeysPerTile) * plan.headDim +
                               (kKeysPerTile + kRowsPerBlock) * plan.valueDim +
                               kRowsPerBlock * kKeysPerTile);
  SHARDC_RETURN_IF_ERROR(
      allowSharedMemory("attention", attentionForwardKernel<T>, shared, plan));
  const float *mask = plan.hasMask ? args.inputs[3].as<float>() : nullptr;
  attentionForwardKernel<T><<<static_cast<unsigned>(blocks), kRowsPerBlock * kWarp, shared,
                              streamOf(args)>>>(
      args.inputs[0].as<T>(), args.inputs[1].as<T>(), args.inputs[2].as<T>(), mask,
      seedOf(args, cpu::kAttentionSeedInput, plan), stepOf(args, cpu::kAttentionSeedInput, plan),
      args.outputs[0].as<T>(), args.outputs[1].as<float>(), plan, tiles);
  return launchStatus("attention");
}

template <typename T> Status launchBackward(KernelArgs &args, const AttentionPlan &plan) {
  const char *name = "attention_grad";
  const float *mask = plan.hasMask ? args.inputs[3].as<float>() : nullptr;
  const T *q = args.inputs[0].as<T>(), *k = args.inputs[1].as<T>(), *v = args.inputs[2].as<T>();
  const T *out = args.inputs[4].as<T>(), *dout = args.inputs[6].as<T>();
  const float *lse = args.inputs[5].as<float>();
  const int64_t *seed = seedOf(args, cpu::kAttentionGradSeedInput, plan);
  const int64_t *step = stepOf(args, cpu::kAttentionGradSeedInput, plan);
  const int64_t D = plan.headDim, Dv = plan.valueDim;

  const int64_t keyTiles = (plan.keys + kRowsPerBlock - 1) / kRowsPerBlock;
  if (plan.batch * keyTiles > 0) {
    const size_t shared = floats(2 * kRowsPerBlock * (D + Dv) + kGradQueryTile * (D + Dv) +
                                 2 * kGradQueryTile);
    SHARDC_RETURN_IF_ERROR(
        allowSharedMemory(name, attentionGradKeysKernel<T>, shared, plan));
    attentionGradKeysKernel<T><<<static_cast<unsigned>(plan.batch * keyTiles),
                                 kRowsPerBlock * kWarp, shared, streamOf(args)>>>(
        q, k, v, mask, out, lse, dout, seed, step, args.outputs[1].as<T>(),
        args.outputs[2].as<T>(), plan, keyTiles);
    SHARDC_RETURN_IF_ERROR(launchStatus(name));
  }
  const int64_t queryTiles = (plan.queries + kRowsPerBlock - 1) / kRowsPerBlock;
  if (plan.batch * queryTiles > 0) {
    const size_t shared = floats(kRowsPerBlock * (2 * D + Dv) + kKeysPerTile * (D + Dv) +
                                 kRowsPerBlock * kKeysPerTile);
    SHARDC_RETURN_IF_ERROR(
        allowSharedMemory(name, attentionGradQueriesKernel<T>, shared, plan));
    attentionGradQueriesKernel<T><<<static_cast<unsigned>(plan.batch * queryTiles),
                                    kRowsPerBlock * kWarp, shared, streamOf(args)>>>(
        q, k, v, mask, out, lse, dout, seed, step, args.outputs[0].as<T>(), plan, queryTiles);
    SHARDC_RETURN_IF_ERROR(launchStatus(name));
  }
  return Status::ok();
}

// Grids are 1-D: blockIdx.x covers batch * tiles, which must fit its 2^31 - 1 blocks.
Status checkGrid(const char *name, const AttentionPlan &plan) {
  const int64_t longest = plan.queries > plan.keys ? plan.queries : plan.keys;
  const int64_t tiles = (longest + kRowsPerBlock - 1) / kRowsPerBlock;
  if (plan.batch > 0 && tiles > 0x7fffffffLL / plan.batch)
    return Status::error(std::string(name) + ": " + std::to_string(plan.batch) +
                         " batches of " + std::to_string(tiles) +
                         " tiles exceed the cuda grid's 2^31 - 1 blocks");
  return Status::ok();
}

} // namespace

Status attentionKernel(KernelArgs &args) {
  AttentionPlan plan;
  SHARDC_RETURN_IF_ERROR(cpu::checkAttention(args, &plan));
  SHARDC_RETURN_IF_ERROR(checkGrid("attention", plan));
  return plan.dtype == program::F32 ? launchForward<float>(args, plan)
                                    : launchForward<bf16>(args, plan);
}

Status attentionGradKernel(KernelArgs &args) {
  AttentionPlan plan;
  SHARDC_RETURN_IF_ERROR(cpu::checkAttentionGrad(args, &plan));
  SHARDC_RETURN_IF_ERROR(checkGrid("attention_grad", plan));
  return plan.dtype == program::F32 ? launchBackward<float>(args, plan)
                                    : launchBackward<bf16>(args, plan);
}

} // namespace shardc::runtime::cuda
