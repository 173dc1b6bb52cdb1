// The contracts of attention and attention_grad (docs/kernels.md, "Attention"), written once for
// every device: the CPU and CUDA kernels call the same check, which reads only the operands'
// dtypes, shapes and presence and the attributes, never their data. The plan it returns is plain
// data (fixed arrays, no std::vector) so that the CUDA kernels can take it by value, and the
// index helpers below compile for the device as well as the host.
#pragma once

#include "runtime/kernels/kernel.h"
#include "runtime/support/philox_core.h" // SHARDC_HOST_DEVICE

#include <cstdint>

namespace shardc::runtime::cpu {

// Leading dims (batch, heads, ...) the mask and dropout index maps can hold after merging the
// dims they read contiguously; a call needing more is an error on every device.
constexpr int kMaxAttentionIndexDims = 8;

// Where the f32 mask element of (batch b, query i, key j) is: batch b's offset from its merged
// leading dims (outermost first; stride 0 where the mask broadcasts), plus i * rowStride and
// j * colStride (0 where the mask has size 1 there).
struct AttentionMaskMap {
  int dims = 0;
  int64_t size[kMaxAttentionIndexDims] = {};
  int64_t stride[kMaxAttentionIndexDims] = {};
  int64_t rowStride = 0, colStride = 0;
};

SHARDC_HOST_DEVICE inline int64_t maskBatchOffset(const AttentionMaskMap &map, int64_t b) {
  int64_t offset = 0;
  for (int d = map.dims - 1; d >= 0; --d) {
    offset += (b % map.size[d]) * map.stride[d];
    b /= map.size[d];
  }
  return offset;
}

// Dropout on the probabilities, as the `dropout` kernel draws it over the probability tensor
// P = [..., S, Sk] (or the whole tensor P is a block of, per global_shape and the split/block
// attributes): element (b, i, j) of P is kept when uniformFloat(word w of the Philox stream
// (seed, philoxStreamId(step, stream))) >= ratio, where w is the element's row-major index in
// the whole tensor: rowWholeIndex(b, i) + j.
struct AttentionDropout {
  bool enabled = false;
  float ratio = 0.0f;
  float scale = 1.0f; // 1 / (1 - ratio) in f32, the dropout kernel's
  int64_t stream = 0;
  // The leading dims merged into groups (outermost first): batch coordinate c of group g is at
  // (c + offset[g]) * wholeStride[g] in the whole tensor.
  int groups = 0;
  int64_t size[kMaxAttentionIndexDims] = {};
  int64_t offset[kMaxAttentionIndexDims] = {};
  int64_t wholeStride[kMaxAttentionIndexDims] = {};
  int64_t baseOffset = 0;                 // the whole index of the size-1 leading dims' offsets
  int64_t queryOffset = 0, keyOffset = 0; // P's offsets along S and Sk
  int64_t wholeKeys = 0;                  // the whole tensor's Sk: the stride of a query row
};

// The whole-tensor index of P element (b, i, 0).
SHARDC_HOST_DEVICE inline int64_t rowWholeIndex(const AttentionDropout &drop, int64_t b,
                                                int64_t i) {
  int64_t whole = drop.baseOffset + (i + drop.queryOffset) * drop.wholeKeys + drop.keyOffset;
  for (int g = drop.groups - 1; g >= 0; --g) {
    whole += (b % drop.size[g] + drop.offset[g]) * drop.wholeStride[g];
    b /= drop.size[g];
  }
  return whole;
}

// One attention or attention_grad call: q [batch..., S, D], k [batch..., Sk, D],
// v [batch..., Sk, Dv] with the leading dims flattened into `batch`.
struct AttentionPlan {
  DType dtype = program::F32; // of q, k, v, out (and dout, dq, dk, dv)
  int64_t batch = 0, queries = 0, keys = 0, headDim = 0, valueDim = 0;
  float scale = 0.0f;
  bool causal = false;
  // Key j is visible from query i when j <= i + causalShift (Sk - S: bottom-right aligned).
  int64_t causalShift = 0;
  bool hasMask = false;
  AttentionMaskMap mask;
  AttentionDropout dropout;
};

// Input positions of the optional dropout operands (seed, step): after the mask in attention,
// after dout in attention_grad.
constexpr size_t kAttentionSeedInput = 4;
constexpr size_t kAttentionGradSeedInput = 7;

// attention(q, k, v, mask?[, seed, step]) -> (out, lse): operands, attributes `scale`,
// `causal`, and for dropout `dropout_ratio`, `stream` and the dropout block attributes.
Status checkAttention(const KernelArgs &args, AttentionPlan *plan);
// attention_grad(q, k, v, mask?, out, lse, dout[, seed, step]) -> (dq, dk, dv), the same
// attributes.
Status checkAttentionGrad(const KernelArgs &args, AttentionPlan *plan);

} // namespace shardc::runtime::cpu
