#include "runtime/kernels/cpu/dropout_checks.h"

#include "runtime/kernels/cpu/checks.h"
#include "runtime/support/philox.h"

#include <limits>
#include <string>

namespace shardc::runtime::cpu {

Status checkDropout(const KernelArgs &args, DropoutAttrs *attrs) {
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
  return checkDropoutRatioAndStream("dropout", "ratio", ratio, stream, attrs);
}

Status checkDropoutRatioAndStream(const char *kernel, const char *ratioName, float ratio,
                                  int64_t stream, DropoutAttrs *attrs) {
  if (!(ratio >= 0.0f && ratio < 1.0f))
    return Status::error(std::string(kernel) + ": " + ratioName + " must be in [0, 1), got " +
                         std::to_string(ratio));
  // The last stream id belongs to data sampling (philox.h).
  if (stream < 0 || stream >= static_cast<int64_t>(kDataSamplingStreamTensorId))
    return Status::error(std::string(kernel) + ": stream must be in [0, 2^32 - 1), got " +
                         std::to_string(stream));
  attrs->ratio = ratio;
  attrs->stream = stream;
  attrs->scale = 1.0f / (1.0f - ratio);
  return Status::ok();
}

Status checkDropoutStep(int64_t step) {
  if (step < 0 || step > std::numeric_limits<uint32_t>::max())
    return Status::error("dropout: step " + std::to_string(step) + " is outside [0, 2^32 - 1]");
  return Status::ok();
}

Status dropoutBlockOf(const KernelArgs &args, DropoutBlock *block) {
  const Tensor &x = args.inputs[0];
  return dropoutBlockOfShape("dropout", args, x.shape, x.describe(), block);
}

Status dropoutBlockOfShape(const char *kernel, const KernelArgs &args,
                           const std::vector<int64_t> &shape, const std::string &what,
                           DropoutBlock *block) {
  // The block's place in the whole tensor (the whole tensor itself when not split): its
  // offset along each dimension.
  std::vector<int64_t> &global = block->global, &offset = block->offset;
  global = shape;
  offset.assign(shape.size(), 0);
  if (!hasAttr(args, "global_shape"))
    return Status::ok();
  SHARDC_RETURN_IF_ERROR(getIntsAttr(args, "global_shape", &global));
  bool fits = global.size() == shape.size();
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
    fits = split[d] ? offset[d] <= global[d] - shape[d] : shape[d] == global[d];
  if (!fits) {
    std::string at;
    for (int64_t o : offset)
      at += (at.empty() ? "" : ", ") + std::to_string(o);
    return Status::error(std::string(kernel) + ": " + what + " is not a block at offsets [" + at +
                         "] of the whole tensor " + shapeString(global));
  }
  return Status::ok();
}

} // namespace shardc::runtime::cpu
