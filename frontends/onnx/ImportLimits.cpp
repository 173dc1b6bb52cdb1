//===- ImportLimits.cpp -----------------------------------------------------------------===//
#include "frontends/onnx/ImportLimits.h"

namespace shardc::onnx_import {

std::optional<int64_t> checkedElementCount(llvm::ArrayRef<int64_t> dims, std::string &why) {
  if (static_cast<int64_t>(dims.size()) > kMaxRank) {
    why = "rank " + std::to_string(dims.size()) + " exceeds shardc's limit of " +
          std::to_string(kMaxRank);
    return std::nullopt;
  }
  int64_t count = 1;
  bool tooLarge = false;
  for (int64_t d : dims) {
    if (d < 0) {
      why = "dimension " + std::to_string(d) + " is negative";
      return std::nullopt;
    }
    // Keep multiplying to find a zero dimension, but never past the limit.
    if (d != 0 && count > kMaxElements / d)
      tooLarge = true;
    else
      count *= d;
  }
  if (count == 0)
    return 0;
  if (tooLarge || count > kMaxElements) {
    why = "more than 2^56 elements";
    return std::nullopt;
  }
  return count;
}

} // namespace shardc::onnx_import
