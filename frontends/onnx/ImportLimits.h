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

// Loops are unrolled at import (ops/ControlFlowOps.cpp). The exporter's loops run over a
// sequence length or a head count; these bounds are far above those and keep a malformed or
// nested loop from building an unbounded function.
inline constexpr int64_t kMaxLoopIterations = 1 << 16;
inline constexpr int64_t kMaxUnrolledNodes = 1 << 20;
// A sequence's elements are values of the function; SplitToSequence makes at most this many.
inline constexpr int64_t kMaxSequenceLength = 1 << 16;

// Element count of a static shape, or nullopt (with `why`) when a dimension is negative, the
// rank exceeds kMaxRank or the count exceeds kMaxElements.
std::optional<int64_t> checkedElementCount(llvm::ArrayRef<int64_t> dims, std::string &why);

} // namespace shardc::onnx_import

#endif
