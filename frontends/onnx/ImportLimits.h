//===- ImportLimits.h - what the importer accepts ----------------------------------------===//
#ifndef SHARDC_FRONTENDS_ONNX_IMPORTLIMITS_H
#define SHARDC_FRONTENDS_ONNX_IMPORTLIMITS_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace shardc::onnx_import {

// Default-domain opsets whose operator semantics the importer implements.
inline constexpr int64_t kMinOpset = 13;
inline constexpr int64_t kMaxOpset = 20;

// Limits on the tensors a model may describe. They are far above any real model (a global
// activation of 2^56 elements is 256 PiB of f32) and keep every element count and byte size
// the compiler computes inside int64_t, whatever a malformed model claims.
inline constexpr int64_t kMaxRank = 64;
inline constexpr int64_t kMaxElements = int64_t(1) << 56;

// Element count of a static shape, or nullopt (with `why`) when a dimension is negative, the
// rank exceeds kMaxRank or the count exceeds kMaxElements.
std::optional<int64_t> checkedElementCount(llvm::ArrayRef<int64_t> dims, std::string &why);

} // namespace shardc::onnx_import

#endif
