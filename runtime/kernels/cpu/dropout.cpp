// dropout: the training-mode keep-mask from the counter-based Philox generator, and the scaled
// output. Element i of the tensor (row-major) is kept when the uniform float of word i of the
// Philox stream (seed, philoxStreamId(step, stream)) is >= ratio, so the mask depends only on
// (seed, step, stream, i): any split of the tensor across ranks or threads draws the same mask.
#include "runtime/kernels/cpu/checks.h"
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/support/philox.h"

#include <limits>

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

  const PhiloxStream philox(static_cast<uint64_t>(seed.as<int64_t>()[0]),
                            philoxStreamId(static_cast<uint32_t>(stepValue),
                                           static_cast<uint32_t>(stream)));
  // y = x * noise with noise = keep ? 1/(1-ratio) : 0, the product PyTorch's dropout computes
  // (so a dropped element is x * 0, and keeps the sign of zero and NaN of x * 0).
  const float scale = 1.0f / (1.0f - ratio);
  const float *in = x.as<float>();
  float *out = y.as<float>();
  uint8_t *keep = mask.as<uint8_t>();
  const int64_t n = x.numel();
  constexpr int64_t kChunk = 256;
  uint32_t words[kChunk];
  for (int64_t first = 0; first < n; first += kChunk) {
    const int64_t count = std::min(kChunk, n - first);
    philox.fill(static_cast<uint64_t>(first), static_cast<size_t>(count), words);
    for (int64_t i = 0; i < count; ++i) {
      const bool kept = uniformFloat(words[i]) >= ratio;
      keep[first + i] = kept ? 1 : 0;
      out[first + i] = in[first + i] * (kept ? scale : 0.0f);
    }
  }
  return Status::ok();
}

} // namespace shardc::runtime::cpu
