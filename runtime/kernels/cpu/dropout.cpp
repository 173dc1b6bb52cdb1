// dropout: the training-mode keep-mask from the counter-based Philox generator, and the scaled
// output. Element i of the tensor (row-major) is kept when the uniform float of word i of the
// Philox stream (seed, philoxStreamId(step, stream)) is >= ratio, so the mask depends only on
// (seed, step, stream, i): any split of the tensor across ranks or threads draws the same mask.
// When x is a rank's block of a larger tensor (attribute global_shape), i is the element's index
// in the whole tensor: the block starts at split_offset along split_dim (the batch's rows) and,
// when it is also split on another mesh axis (tensor or sequence parallelism), at block_offset
// along block_dim.
#include "runtime/kernels/cpu/cpu_kernels.h"
#include "runtime/kernels/cpu/dropout_checks.h"
#include "runtime/support/philox.h"

#include <algorithm>
#include <vector>

namespace shardc::runtime::cpu {

Status dropoutKernel(KernelArgs &args) {
  DropoutAttrs attrs;
  SHARDC_RETURN_IF_ERROR(checkDropout(args, &attrs));
  const Tensor &x = args.inputs[0], &seed = args.inputs[1], &step = args.inputs[2];
  const Tensor &y = args.outputs[0], &mask = args.outputs[1];
  const float ratio = attrs.ratio;
  const int64_t stream = attrs.stream;
  const int64_t stepValue = step.as<int64_t>()[0];
  SHARDC_RETURN_IF_ERROR(checkDropoutStep(stepValue));
  DropoutBlock block;
  SHARDC_RETURN_IF_ERROR(dropoutBlockOf(args, &block));
  const std::vector<int64_t> &global = block.global, &offset = block.offset;
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
  const float scale = attrs.scale;
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
