// dropout: the training-mode keep-mask from the counter-based Philox generator, and the scaled
// output. Element i of the tensor (row-major) is kept when the uniform float of word i of the
// Philox stream (seed, philoxStreamId(step, stream)) is >= ratio, so the mask depends only on
// (seed, step, stream, i): any split of the tensor across ranks or threads draws the same mask.
// When x is a rank's block of a larger tensor (attribute global_shape), i is the element's index
// in the whole tensor: the block starts at split_offset along split_dim (the batch's rows) and,
// when it is also split on another mesh axis (tensor or sequence parallelism), at block_offset
// along block_dim.
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

  // The block's place in the whole tensor (the whole tensor itself when not split): its
  // offset along each dimension.
  std::vector<int64_t> global = x.shape;
  std::vector<int64_t> offset(x.shape.size(), 0);
  if (hasAttr(args, "global_shape")) {
    SHARDC_RETURN_IF_ERROR(getIntsAttr(args, "global_shape", &global));
    bool fits = global.size() == x.shape.size();
    std::vector<bool> split(offset.size(), false); // a dimension the block cuts
    for (const char *dimKey : {"split_dim", "block_dim"}) {
      if (!hasAttr(args, dimKey))
        continue;
      int64_t dim = 0, at = 0;
      SHARDC_RETURN_IF_ERROR(getIntAttr(args, dimKey, &dim));
      SHARDC_RETURN_IF_ERROR(getIntAttr(
          args, std::string(dimKey) == "split_dim" ? "split_offset" : "block_offset", &at));
      fits = fits && dim >= 0 && dim < static_cast<int64_t>(offset.size()) && at >= 0 &&
             !split[dim];
      if (fits) {
        offset[dim] = at;
        split[dim] = true;
      }
    }
    for (size_t d = 0; fits && d < global.size(); ++d)
      fits = split[d] ? offset[d] <= global[d] - x.shape[d] : x.shape[d] == global[d];
    if (!fits) {
      std::string at;
      for (int64_t o : offset)
        at += (at.empty() ? "" : ", ") + std::to_string(o);
      return Status::error("dropout: " + x.describe() + " is not a block at offsets [" + at +
                           "] of the whole tensor " + shapeString(global));
    }
  }
  // Runs along the last dimension are contiguous in both the block and the whole tensor; each
  // starts at the whole tensor's index of its first element.
  const size_t rank = global.size();
  const int64_t run = rank ? x.shape[rank - 1] : 1;
  std::vector<int64_t> wholeStride(rank, 1);
  for (size_t d = rank; d-- > 1;)
    wholeStride[d - 1] = wholeStride[d] * global[d];
  const int64_t runs = run ? x.numel() / run : 0;

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
  std::vector<int64_t> index(rank, 0); // the run's local coordinates (the last one 0)
  for (int64_t k = 0; k < runs; ++k) {
    int64_t whole = rank ? offset[rank - 1] : 0;
    for (size_t d = 0; d + 1 < rank; ++d)
      whole += (index[d] + offset[d]) * wholeStride[d];
    const int64_t local = k * run;
    for (int64_t first = 0; first < run; first += kChunk) {
      const int64_t count = std::min(kChunk, run - first);
      philox.fill(static_cast<uint64_t>(whole + first), static_cast<size_t>(count), words);
      for (int64_t i = 0; i < count; ++i) {
        const int64_t e = local + first + i;
        const bool kept = uniformFloat(words[i]) >= ratio;
        keep[e] = kept ? 1 : 0;
        out[e] = in[e] * (kept ? scale : 0.0f);
      }
    }
    for (size_t d = rank ? rank - 1 : 0; d-- > 0;) { // the next run: odometer over [0, rank - 1)
      if (++index[d] < x.shape[d])
        break;
      index[d] = 0;
    }
  }
  return Status::ok();
}

} // namespace shardc::runtime::cpu
