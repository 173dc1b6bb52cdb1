// dropout: the training-mode keep-mask from the counter-based Philox generator, and the scaled
// output. Element i of the tensor (row-major) is kept when the uniform float of word i of the
// Philox stream (seed, philoxStreamId(step, stream)) is >= ratio, so the mask depends only on
// (seed, step, stream, i): any split of the tensor across ranks or threads draws the same mask.
// When x is a rank's block of a tensor split along one dimension (attributes global_shape,
// split_dim and split_offset: where the block starts along it), i is the element's index in
// the whole tensor.
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/support/philox.h"

#include <limits>
#include <vector>

namespace shardc::runtime::cpu {

Status dropoutKernel(KernelArgs &args) {
  SHARDC_RETURN_IF_ERROR(checkOperands("dropout", args, Arity::exactly(3), Arity::exactly(2)));
  const Tensor &x = args.inputs[0], &seed = args.inputs[1], &step = args.inputs[2];
  const Tensor &y = args.outputs[0], &mask = args.outputs[1];
  SHARDC_RETURN_IF_ERROR(expectDtype("dropout", "x", x, program::F32));
  SHARDC_RETURN_IF_ERROR(expectDtype("dropout", "seed", seed, program::I64));
  SHARDC_RETURN_IF_ERROR(expectDtype("dropout", "step", step, program::I64));
  SHARDC_RETURN_IF_ERROR(expectSingleElement("dropout", "seed", seed));
  SHARDC_RETURN_IF_ERROR(expectSingleElement("dropout", "step", step));
  SHARDC_RETURN_IF_ERROR(expectDtype("dropout", "y", y, program::F32));
  SHARDC_RETURN_IF_ERROR(expectShape("dropout", "y", y, x.shape));
  SHARDC_RETURN_IF_ERROR(expectDtype("dropout", "mask", mask, program::BOOL));
  SHARDC_RETURN_IF_ERROR(expectShape("dropout", "mask", mask, x.shape));
  float ratio = 0.0f;
  int64_t stream = 0;
  SHARDC_RETURN_IF_ERROR(getFloatAttr(args, "ratio", &ratio));
  SHARDC_RETURN_IF_ERROR(getIntAttr(args, "stream", &stream));
  if (!(ratio >= 0.0f && ratio < 1.0f))
    return Status::error("dropout: ratio must be in [0, 1), got " + std::to_string(ratio));
  // The last stream id belongs to data sampling (philox.h).
  if (stream < 0 || stream >= static_cast<int64_t>(kDataSamplingStreamTensorId))
    return Status::error("dropout: stream must be in [0, 2^32 - 1), got " +
                         std::to_string(stream));
  const int64_t stepValue = step.as<int64_t>()[0];
  if (stepValue < 0 || stepValue > std::numeric_limits<uint32_t>::max())
    return Status::error("dropout: step " + std::to_string(stepValue) +
                         " is outside [0, 2^32 - 1]");

  // The block's place in the whole tensor (the whole tensor itself when not split).
  std::vector<int64_t> global = x.shape;
  int64_t splitDim = 0, splitOffset = 0;
  if (args.attrs && args.attrs->count("global_shape")) {
    SHARDC_RETURN_IF_ERROR(getIntsAttr(args, "global_shape", &global));
    SHARDC_RETURN_IF_ERROR(getIntAttr(args, "split_dim", &splitDim));
    SHARDC_RETURN_IF_ERROR(getIntAttr(args, "split_offset", &splitOffset));
    bool fits = global.size() == x.shape.size() && splitDim >= 0 &&
                splitDim < static_cast<int64_t>(global.size()) && splitOffset >= 0;
    for (size_t d = 0; fits && d < global.size(); ++d)
      fits = static_cast<int64_t>(d) == splitDim ? x.shape[d] + splitOffset <= global[d]
                                                 : x.shape[d] == global[d];
    if (!fits)
      return Status::error("dropout: " + x.describe() + " is not a block at offset " +
                           std::to_string(splitOffset) + " of dim " + std::to_string(splitDim) +
                           " of the whole tensor");
  }
  // Runs of elements contiguous in both the block and the whole tensor: everything after the
  // split dimension.
  int64_t inner = 1, outer = 1;
  for (size_t d = 0; d < global.size(); ++d) {
    if (static_cast<int64_t>(d) > splitDim)
      inner *= global[d];
    else if (static_cast<int64_t>(d) < splitDim)
      outer *= global[d];
  }
  const int64_t localRows = global.empty() ? 1 : x.shape[splitDim];
  const int64_t globalRows = global.empty() ? 1 : global[splitDim];

  const PhiloxStream philox(static_cast<uint64_t>(seed.as<int64_t>()[0]),
                            philoxStreamId(static_cast<uint32_t>(stepValue),
                                           static_cast<uint32_t>(stream)));
  // y = x * noise with noise = keep ? 1/(1-ratio) : 0, the product PyTorch's dropout computes
  // (so a dropped element is x * 0, and keeps the sign of zero and NaN of x * 0).
  const float scale = 1.0f / (1.0f - ratio);
  const float *in = x.as<float>();
  float *out = y.as<float>();
  uint8_t *keep = mask.as<uint8_t>();
  constexpr int64_t kChunk = 256;
  uint32_t words[kChunk];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t r = 0; r < localRows; ++r) {
      const int64_t local = (o * localRows + r) * inner;
      const int64_t whole = (o * globalRows + r + splitOffset) * inner;
      for (int64_t first = 0; first < inner; first += kChunk) {
        const int64_t count = std::min(kChunk, inner - first);
        philox.fill(static_cast<uint64_t>(whole + first), static_cast<size_t>(count), words);
        for (int64_t i = 0; i < count; ++i) {
          const int64_t e = local + first + i;
          const bool kept = uniformFloat(words[i]) >= ratio;
          keep[e] = kept ? 1 : 0;
          out[e] = in[e] * (kept ? scale : 0.0f);
        }
      }
    }
  return Status::ok();
}

} // namespace shardc::runtime::cpu
