#include "runtime/kernels/cpu/spatial.h"

#include "runtime/kernels/cpu/checks.h"

#include <string>

namespace shardc::runtime::cpu {

namespace {
constexpr int64_t kAttrLimit = int64_t(1) << 40;
} // namespace

bool spatialProduct(const SpatialDims &dims, int64_t *out) {
  *out = 1;
  for (int64_t d : dims)
    if (__builtin_mul_overflow(*out, d, out))
      return false;
  return true;
}

Status spatialAttr(const char *kernel, const KernelArgs &args, const char *name, int64_t perDim,
                   int64_t min, const NamedTensor &x, int64_t spatial,
                   std::vector<int64_t> *values) {
  SHARDC_RETURN_IF_ERROR(getIntsAttr(args, name, values));
  if (static_cast<int64_t>(values->size()) != perDim * spatial)
    return Status::error(std::string(kernel) + ": attribute '" + name + "' needs " +
                         (perDim == 1 ? "one entry" : "2 entries") + " per spatial dim of " +
                         x.role + " " + x.tensor->describe() + ", got " +
                         std::to_string(values->size()));
  for (int64_t v : *values)
    if (v < min || v > kAttrLimit)
      return Status::error(std::string(kernel) + ": attribute '" + name + "' " +
                           intsString(*values) + " has a value outside [" + std::to_string(min) +
                           ", 2^40]");
  return Status::ok();
}

Status checkOutputExtent(const char *kernel, const NamedTensor &x, const NamedTensor &y,
                         int64_t dim, int64_t in, int64_t window, int64_t stride,
                         int64_t padBegin, int64_t padEnd, int64_t dilation, int64_t out) {
  // In 128 bits: the attributes are bounded, but a window taken from w's shape is not.
  const __int128 padded = static_cast<__int128>(in) + padBegin + padEnd;
  const __int128 extent = padded - static_cast<__int128>(dilation) * (window - 1) - 1;
  const std::string where = std::string(kernel) + ": spatial dim " + std::to_string(dim) +
                            " of " + y.role + " " + y.tensor->describe() + " does not fit " +
                            x.role + " " + x.tensor->describe() + ": ";
  if (extent < 0)
    return Status::error(where + "the window (kernel " + std::to_string(window) +
                         ", dilation " + std::to_string(dilation) +
                         ") is longer than the padded input (" +
                         std::to_string(static_cast<int64_t>(padded)) + ")");
  const int64_t e = static_cast<int64_t>(extent); // <= in + pads: fits
  const int64_t floorOut = e / stride + 1, ceilOut = (e + stride - 1) / stride + 1;
  if (out != floorOut && out != ceilOut)
    return Status::error(
        where + "kernel " + std::to_string(window) + ", stride " + std::to_string(stride) +
        ", pads " + std::to_string(padBegin) + " and " + std::to_string(padEnd) + ", dilation " +
        std::to_string(dilation) + " give " + std::to_string(floorOut) + " positions" +
        (ceilOut != floorOut ? " (" + std::to_string(ceilOut) + " in ceil mode)" : std::string()) +
        ", not " + std::to_string(out));
  return Status::ok();
}

} // namespace shardc::runtime::cpu
