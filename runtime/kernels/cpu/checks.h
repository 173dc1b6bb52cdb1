// Validation shared by the CPU kernels. The compiler guarantees consistent programs, but a
// corrupt or hand-edited bundle must produce an error naming the kernel and the cause, never a
// crash, so every kernel checks what it relies on with these helpers before touching memory.
#pragma once

#include "runtime/kernels/kernel.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace shardc::runtime::cpu {

// How many operands (inputs or outputs) a kernel takes.
struct Arity {
  size_t required = 0;   // leading operands that must be present
  size_t optional = 0;   // operands after those that may be absent or left out entirely
  bool variadic = false; // any number >= `required`, all present (concat, split)

  static Arity exactly(size_t n) { return {n, 0, false}; }
  static Arity withOptional(size_t required, size_t optional) {
    return {required, optional, false};
  }
  static Arity atLeast(size_t n) { return {n, 0, true}; }
};

// Checks operand counts, that required operands are present, and that every present tensor is
// well formed (known dtype, non-negative dims, element count that fits in int64).
Status checkOperands(const char *kernel, const KernelArgs &args, Arity inputs, Arity outputs);

// "[2x3]", "[]" for a scalar.
std::string shapeString(const std::vector<int64_t> &shape);

// "[1, 0, 2]" for attribute lists in messages.
std::string intsString(const std::vector<int64_t> &values);

bool isNumeric(DType dtype);

Status expectDtype(const char *kernel, const char *role, const Tensor &t, DType dtype);
// f32, i64 or i32.
Status expectNumeric(const char *kernel, const char *role, const Tensor &t);
Status expectSameDtype(const char *kernel, const char *roleA, const Tensor &a, const char *roleB,
                       const Tensor &b);
Status expectShape(const char *kernel, const char *role, const Tensor &t,
                   const std::vector<int64_t> &shape);
// A scalar operand: exactly one element ([] or all dims 1).
Status expectSingleElement(const char *kernel, const char *role, const Tensor &t);
// `axis` (from attribute `attrName`) must lie in [0, rank).
Status expectAxis(const char *kernel, const char *attrName, int64_t axis, int64_t rank);

// Product of shape[begin, end).
int64_t dimsProduct(const std::vector<int64_t> &shape, size_t begin, size_t end);
// Row-major element strides of a contiguous tensor of `shape`.
std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &shape);

} // namespace shardc::runtime::cpu
