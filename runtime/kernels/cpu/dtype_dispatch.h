// Turns a runtime DType into a C++ element type for templated kernel bodies. Each visitor calls
// `fn(T{})`; the body recovers the type with `using T = decltype(tag);`. Bool elements are
// uint8_t (one byte, 0 or 1).
#pragma once

#include "runtime/kernels/kernel.h"

#include <cstdint>
#include <string>

namespace shardc::runtime::cpu {

// f32 -> float, i64 -> int64_t, i32 -> int32_t. Callers validate the dtype first; anything else
// is reported rather than assumed.
template <typename Fn> Status visitNumeric(DType dtype, Fn &&fn) {
  switch (dtype) {
  case program::F32:
    return fn(float{});
  case program::I64:
    return fn(int64_t{});
  case program::I32:
    return fn(int32_t{});
  default:
    return Status::error(std::string("unsupported dtype ") + dtypeName(dtype) +
                         ", expected f32, i64 or i32");
  }
}

// The numeric types plus bool -> uint8_t.
template <typename Fn> Status visitAnyDtype(DType dtype, Fn &&fn) {
  if (dtype == program::BOOL)
    return fn(uint8_t{});
  return visitNumeric(dtype, fn);
}

// i64 -> int64_t, i32 -> int32_t (index operands).
template <typename Fn> Status visitIndex(DType dtype, Fn &&fn) {
  switch (dtype) {
  case program::I64:
    return fn(int64_t{});
  case program::I32:
    return fn(int32_t{});
  default:
    return Status::error(std::string("unsupported index dtype ") + dtypeName(dtype) +
                         ", expected i64 or i32");
  }
}

// Kernels that only move elements care about their size, not their meaning: one instantiation
// per element size instead of one per dtype.
template <typename Fn> Status visitElementSize(DType dtype, Fn &&fn) {
  switch (dtypeSize(dtype)) {
  case 1:
    return fn(uint8_t{});
  case 2:
    return fn(uint16_t{});
  case 4:
    return fn(uint32_t{});
  case 8:
    return fn(uint64_t{});
  default:
    return Status::error(std::string("unsupported dtype ") + dtypeName(dtype));
  }
}

} // namespace shardc::runtime::cpu
