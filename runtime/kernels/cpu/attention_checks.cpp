#include "runtime/kernels/cpu/attention_checks.h"

#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/dropout_checks.h"

#include <string>
#include <vector>

namespace shardc::runtime::cpu {

namespace {

std::string prefixed(const char *kernel, const std::string &message) {
  return std::string(kernel) + ": " + message;
}

// An attribute accessor's error (which names the attribute) prefixed with the kernel.
Status withKernel(const char *kernel, Status status) {
  return status.isOk() ? status : Status::error(prefixed(kernel, status.message()));
}

// q, k, v: same dtype (f32 or bf16), rank >= 2, the same leading dims, k and q the same head
// dim, k and v the same number of keys.
Status checkQkv(const char *kernel, const Tensor &q, const Tensor &k, const Tensor &v,
                AttentionPlan *plan) {
  if (q.dtype != program::F32 && q.dtype != program::BF16)
    return Status::error(prefixed(kernel, std::string("q is ") + dtypeName(q.dtype) +
                                              ", expected f32 or bf16"));
  SHARDC_RETURN_IF_ERROR(expectSameDtype(kernel, "k", k, "q", q));
  SHARDC_RETURN_IF_ERROR(expectSameDtype(kernel, "v", v, "q", q));
  for (const auto &[role, t] : {std::pair<const char *, const Tensor *>{"q", &q}, {"k", &k},
                                {"v", &v}})
    if (t->rank() < 2)
      return Status::error(prefixed(kernel, std::string(role) + " has shape " +
                                                shapeString(t->shape) +
                                                ", expected rank >= 2 ([..., S, D])"));
  const size_t lead = q.shape.size() - 2;
  const std::vector<int64_t> leading(q.shape.begin(), q.shape.begin() + lead);
  plan->dtype = q.dtype;
  plan->batch = dimsProduct(q.shape, 0, lead);
  plan->queries = q.shape[lead];
  plan->headDim = q.shape[lead + 1];
  plan->keys = k.shape[k.shape.size() - 2];
  plan->valueDim = v.shape.back();
  std::vector<int64_t> kShape = leading, vShape = leading;
  kShape.insert(kShape.end(), {plan->keys, plan->headDim});
  vShape.insert(vShape.end(), {plan->keys, plan->valueDim});
  SHARDC_RETURN_IF_ERROR(expectShape(kernel, "k", k, kShape));
  return expectShape(kernel, "v", v, vShape);
}

// The shape of the scores and probabilities: q's leading dims, then [S, Sk].
std::vector<int64_t> scoresShape(const Tensor &q, const AttentionPlan &plan) {
  std::vector<int64_t> shape(q.shape.begin(), q.shape.end() - 2);
  shape.insert(shape.end(), {plan.queries, plan.keys});
  return shape;
}

// The mask: f32, broadcastable (NumPy rules, towards the scores) to the scores' shape.
Status planMask(const char *kernel, const Tensor &mask, const std::vector<int64_t> &scores,
                AttentionPlan *plan) {
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "mask", mask, program::F32));
  const size_t rank = scores.size(), maskRank = mask.shape.size();
  bool fits = maskRank <= rank;
  for (size_t d = 0; fits && d < maskRank; ++d) {
    const int64_t m = mask.shape[d], s = scores[rank - maskRank + d];
    fits = m == s || m == 1;
  }
  if (!fits)
    return Status::error(prefixed(kernel, "mask has shape " + shapeString(mask.shape) +
                                              ", which does not broadcast to the scores' shape " +
                                              shapeString(scores)));
  // The mask's element stride along each dim of the scores (0 where it broadcasts).
  std::vector<int64_t> stride(rank, 0);
  int64_t next = 1;
  for (size_t d = maskRank; d-- > 0;) {
    const size_t at = rank - maskRank + d;
    stride[at] = mask.shape[d] == 1 ? 0 : next;
    next *= mask.shape[d];
  }
  AttentionMaskMap &map = plan->mask;
  map.rowStride = stride[rank - 2];
  map.colStride = stride[rank - 1];
  // Leading dims, innermost first: a dim joins the group inside it when the mask walks both as
  // one dim (both broadcast, or stride == inner size * inner stride); size-1 dims are dropped.
  std::vector<int64_t> size, groupStride;
  for (size_t d = rank - 2; d-- > 0;) {
    if (scores[d] == 1)
      continue;
    if (!size.empty() && stride[d] == size.back() * groupStride.back()) {
      size.back() *= scores[d];
    } else {
      size.push_back(scores[d]);
      groupStride.push_back(stride[d]);
    }
  }
  if (size.size() > static_cast<size_t>(kMaxAttentionIndexDims))
    return Status::error(prefixed(kernel, "mask of shape " + shapeString(mask.shape) +
                                              " needs more than " +
                                              std::to_string(kMaxAttentionIndexDims) +
                                              " separate leading dims"));
  map.dims = static_cast<int>(size.size());
  for (int g = 0; g < map.dims; ++g) { // outermost first
    map.size[g] = size[size.size() - 1 - g];
    map.stride[g] = groupStride[size.size() - 1 - g];
  }
  plan->hasMask = true;
  return Status::ok();
}

// scale (required), causal (optional, 0 or 1).
Status readAttributes(const char *kernel, const KernelArgs &args, AttentionPlan *plan) {
  SHARDC_RETURN_IF_ERROR(withKernel(kernel, getFloatAttr(args, "scale", &plan->scale)));
  int64_t causal = 0;
  if (hasAttr(args, "causal"))
    SHARDC_RETURN_IF_ERROR(withKernel(kernel, getIntAttr(args, "causal", &causal)));
  if (causal != 0 && causal != 1)
    return Status::error(prefixed(kernel, "attribute 'causal' must be 0 or 1, got " +
                                              std::to_string(causal)));
  plan->causal = causal == 1;
  plan->causalShift = plan->keys - plan->queries;
  return Status::ok();
}

// Dropout on the probabilities: the seed and step inputs (both or neither), `dropout_ratio` and
// `stream` as the dropout kernel's `ratio` and `stream`, and where the probabilities [..., S, Sk]
// lie in the whole tensor the mask is drawn over (the dropout kernel's block attributes).
Status planDropout(const char *kernel, const KernelArgs &args, size_t seedInput,
                   const std::vector<int64_t> &scores, AttentionPlan *plan) {
  const bool hasSeed = args.inputs.size() > seedInput && args.inputs[seedInput].present();
  const bool hasStep = args.inputs.size() > seedInput + 1 && args.inputs[seedInput + 1].present();
  if (!hasSeed && !hasStep) {
    if (hasAttr(args, "dropout_ratio"))
      return Status::error(prefixed(kernel, "attribute 'dropout_ratio' needs the seed and step "
                                            "inputs"));
    return Status::ok();
  }
  if (!hasSeed || !hasStep)
    return Status::error(prefixed(kernel, std::string(hasSeed ? "step" : "seed") + " (input " +
                                              std::to_string(hasSeed ? seedInput + 1 : seedInput) +
                                              ") is required with " +
                                              (hasSeed ? "seed" : "step")));
  const Tensor &seed = args.inputs[seedInput], &step = args.inputs[seedInput + 1];
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "seed", seed, program::I64));
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, "step", step, program::I64));
  SHARDC_RETURN_IF_ERROR(expectSingleElement(kernel, "seed", seed));
  SHARDC_RETURN_IF_ERROR(expectSingleElement(kernel, "step", step));
  float ratio = 0.0f;
  int64_t stream = 0;
  SHARDC_RETURN_IF_ERROR(withKernel(kernel, getFloatAttr(args, "dropout_ratio", &ratio)));
  SHARDC_RETURN_IF_ERROR(withKernel(kernel, getIntAttr(args, "stream", &stream)));
  DropoutAttrs attrs;
  SHARDC_RETURN_IF_ERROR(checkDropoutRatioAndStream(kernel, "dropout_ratio", ratio, stream,
                                                    &attrs));
  DropoutBlock block;
  SHARDC_RETURN_IF_ERROR(dropoutBlockOfShape(kernel, args, scores,
                                             "the probability tensor " + shapeString(scores),
                                             &block));
  AttentionDropout &drop = plan->dropout;
  drop.enabled = true;
  drop.ratio = attrs.ratio;
  drop.scale = attrs.scale;
  drop.stream = attrs.stream;
  const size_t rank = scores.size();
  std::vector<int64_t> wholeStride(rank, 1);
  for (size_t d = rank; d-- > 1;)
    wholeStride[d - 1] = wholeStride[d] * block.global[d];
  drop.queryOffset = block.offset[rank - 2];
  drop.keyOffset = block.offset[rank - 1];
  drop.wholeKeys = block.global[rank - 1];
  // The leading dims, innermost first; a dim joins the group inside it when that group spans
  // whole strides of it (then both are one coordinate of the merged group), as the CUDA dropout
  // kernel merges them. Size-1 dims contribute only their offset.
  std::vector<int64_t> size, offset, stride;
  int64_t fixedOffset = 0;
  for (size_t d = rank - 2; d-- > 0;) {
    if (scores[d] == 1) {
      fixedOffset += block.offset[d] * wholeStride[d];
      continue;
    }
    if (!size.empty() && wholeStride[d] == size.back() * stride.back()) {
      offset.back() += block.offset[d] * size.back();
      size.back() *= scores[d];
    } else {
      size.push_back(scores[d]);
      offset.push_back(block.offset[d]);
      stride.push_back(wholeStride[d]);
    }
  }
  if (size.size() > static_cast<size_t>(kMaxAttentionIndexDims))
    return Status::error(prefixed(kernel, "the probabilities " + shapeString(scores) +
                                              " are a block cut along more than " +
                                              std::to_string(kMaxAttentionIndexDims) +
                                              " leading index groups"));
  drop.baseOffset = fixedOffset;
  drop.groups = static_cast<int>(size.size());
  for (int g = 0; g < drop.groups; ++g) {
    const size_t from = size.size() - 1 - static_cast<size_t>(g);
    drop.size[g] = size[from];
    drop.offset[g] = offset[from];
    drop.wholeStride[g] = stride[from];
  }
  return Status::ok();
}

// The operands every call has (q, k, v, mask) and the attributes.
Status checkCommon(const char *kernel, const KernelArgs &args, size_t seedInput,
                   AttentionPlan *plan) {
  *plan = AttentionPlan();
  const Tensor &q = args.inputs[0], &k = args.inputs[1], &v = args.inputs[2];
  SHARDC_RETURN_IF_ERROR(checkQkv(kernel, q, k, v, plan));
  const std::vector<int64_t> scores = scoresShape(q, *plan);
  if (args.inputs.size() > 3 && args.inputs[3].present())
    SHARDC_RETURN_IF_ERROR(planMask(kernel, args.inputs[3], scores, plan));
  SHARDC_RETURN_IF_ERROR(readAttributes(kernel, args, plan));
  return planDropout(kernel, args, seedInput, scores, plan);
}

// An output of `dtype` and `shape`.
Status expectOutput(const char *kernel, const char *role, const Tensor &t, DType dtype,
                    const std::vector<int64_t> &shape) {
  SHARDC_RETURN_IF_ERROR(expectDtype(kernel, role, t, dtype));
  return expectShape(kernel, role, t, shape);
}

} // namespace

Status checkAttention(const KernelArgs &args, AttentionPlan *plan) {
  const char *kernel = "attention";
  SHARDC_RETURN_IF_ERROR(
      checkOperands(kernel, args, Arity::withOptional(3, 3), Arity::exactly(2)));
  SHARDC_RETURN_IF_ERROR(checkCommon(kernel, args, kAttentionSeedInput, plan));
  const Tensor &q = args.inputs[0];
  std::vector<int64_t> outShape(q.shape.begin(), q.shape.end() - 1);
  const std::vector<int64_t> lseShape = outShape;
  outShape.push_back(plan->valueDim);
  SHARDC_RETURN_IF_ERROR(expectOutput(kernel, "out", args.outputs[0], q.dtype, outShape));
  return expectOutput(kernel, "lse", args.outputs[1], program::F32, lseShape);
}

Status checkAttentionGrad(const KernelArgs &args, AttentionPlan *plan) {
  const char *kernel = "attention_grad";
  SHARDC_RETURN_IF_ERROR(
      checkOperands(kernel, args, Arity::withOptional(3, 6), Arity::exactly(3)));
  // out, lse and dout are required although they follow the optional mask.
  const char *roles[] = {"out", "lse", "dout"};
  for (size_t i = 4; i < 7; ++i)
    if (args.inputs.size() <= i || !args.inputs[i].present())
      return Status::error(prefixed(kernel, std::string(roles[i - 4]) + " (input " +
                                                std::to_string(i) + ") is required but absent"));
  SHARDC_RETURN_IF_ERROR(checkCommon(kernel, args, kAttentionGradSeedInput, plan));
  const Tensor &q = args.inputs[0], &k = args.inputs[1], &v = args.inputs[2];
  std::vector<int64_t> outShape(q.shape.begin(), q.shape.end() - 1);
  const std::vector<int64_t> lseShape = outShape;
  outShape.push_back(plan->valueDim);
  SHARDC_RETURN_IF_ERROR(expectOutput(kernel, "out", args.inputs[4], q.dtype, outShape));
  SHARDC_RETURN_IF_ERROR(expectOutput(kernel, "lse", args.inputs[5], program::F32, lseShape));
  SHARDC_RETURN_IF_ERROR(expectOutput(kernel, "dout", args.inputs[6], q.dtype, outShape));
  SHARDC_RETURN_IF_ERROR(expectOutput(kernel, "dq", args.outputs[0], q.dtype, q.shape));
  SHARDC_RETURN_IF_ERROR(expectOutput(kernel, "dk", args.outputs[1], k.dtype, k.shape));
  return expectOutput(kernel, "dv", args.outputs[2], v.dtype, v.shape);
}

} // namespace shardc::runtime::cpu
