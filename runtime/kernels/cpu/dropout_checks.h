// The contract of dropout (docs/kernels.md), written once for every device: operand dtypes and
// shapes, the ratio and stream attributes, and the block of the whole tensor x is (global_shape
// and the split offsets). None of it reads tensor data: the seed and step values are read by each
// device's kernel (the CUDA one on the device), and the CPU kernel checks the step's range itself
// (checkDropoutStep), which the device cannot report.
#pragma once

#include "runtime/kernels/kernel.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shardc::runtime::cpu {

struct DropoutAttrs {
  float ratio = 0.0f;
  int64_t stream = 0;
  // 1 / (1 - ratio) in f32: computed here once so that every device scales by the same float.
  float scale = 1.0f;
};
// dropout(x, seed, step) -> (y, mask): the operands and the ratio/stream attributes.
Status checkDropout(const KernelArgs &args, DropoutAttrs *attrs);

// The step's value must fit the 32 bits of the Philox stream id it goes into.
Status checkDropoutStep(int64_t step);

// The ratio (attribute `ratioName`) in [0, 1) and the stream below the data-sampling stream; the
// part of checkDropout that the kernels fusing a dropout (attention) share.
Status checkDropoutRatioAndStream(const char *kernel, const char *ratioName, float ratio,
                                  int64_t stream, DropoutAttrs *attrs);

// Where x lies in the whole tensor its mask is drawn over: the whole tensor's shape and x's
// offset along each dimension (x itself, offsets 0, without the global_shape attribute).
struct DropoutBlock {
  std::vector<int64_t> global;
  std::vector<int64_t> offset;
};
// Reads global_shape, split_dim/split_offset and block_dim/block_offset, failing when x is not a
// block of the whole tensor at those offsets. Call after checkDropout.
Status dropoutBlockOf(const KernelArgs &args, DropoutBlock *block);
// The same for a mask drawn over a tensor of `shape` that is not an operand (attention's
// probabilities), described as `what` in messages.
Status dropoutBlockOfShape(const char *kernel, const KernelArgs &args,
                           const std::vector<int64_t> &shape, const std::string &what,
                           DropoutBlock *block);

} // namespace shardc::runtime::cpu
