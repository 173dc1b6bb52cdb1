#include "runtime/kernels/cpu/checks.h"

#include <limits>

namespace shardc::runtime::cpu {

namespace {

std::string prefix(const char *kernel) { return std::string(kernel) + ": "; }

Status checkTensor(const char *kernel, const char *kind, size_t index, const Tensor &t) {
  if (dtypeSize(t.dtype) == 0)
    return Status::error(prefix(kernel) + kind + " " + std::to_string(index) +
                         " has an unknown dtype (" + std::to_string(static_cast<int>(t.dtype)) +
                         ")");
  int64_t n = 1;
  for (int64_t d : t.shape) {
    if (d < 0)
      return Status::error(prefix(kernel) + kind + " " + std::to_string(index) +
                           " has a negative dimension: " + shapeString(t.shape));
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / 8 / d)
      return Status::error(prefix(kernel) + kind + " " + std::to_string(index) +
                           " is too large: " + shapeString(t.shape));
    n *= d;
  }
  return Status::ok();
}

Status checkList(const char *kernel, const char *kind, const std::vector<Tensor> &tensors,
                 Arity arity) {
  const size_t n = tensors.size();
  if (arity.variadic) {
    if (n < arity.required)
      return Status::error(prefix(kernel) + "expected at least " + std::to_string(arity.required) +
                           " " + kind + "s, got " + std::to_string(n));
  } else if (n < arity.required || n > arity.required + arity.optional) {
    std::string expected = std::to_string(arity.required);
    if (arity.optional)
      expected += " to " + std::to_string(arity.required + arity.optional);
    return Status::error(prefix(kernel) + "expected " + expected + " " + kind + "s, got " +
                         std::to_string(n));
  }
  const size_t mustBePresent = arity.variadic ? n : arity.required;
  for (size_t i = 0; i < n; ++i) {
    if (!tensors[i].present()) {
      if (i < mustBePresent)
        return Status::error(prefix(kernel) + kind + " " + std::to_string(i) +
                             " is required but absent");
      continue;
    }
    SHARDC_RETURN_IF_ERROR(checkTensor(kernel, kind, i, tensors[i]));
  }
  return Status::ok();
}

} // namespace

Status checkOperands(const char *kernel, const KernelArgs &args, Arity inputs, Arity outputs) {
  SHARDC_RETURN_IF_ERROR(checkList(kernel, "input", args.inputs, inputs));
  return checkList(kernel, "output", args.outputs, outputs);
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += 'x';
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::string intsString(const std::vector<int64_t> &values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(values[i]);
  }
  return s + "]";
}

bool isNumeric(DType dtype) {
  return dtype == program::F32 || dtype == program::I64 || dtype == program::I32;
}

Status expectDtype(const char *kernel, const char *role, const Tensor &t, DType dtype) {
  if (t.dtype == dtype)
    return Status::ok();
  return Status::error(prefix(kernel) + role + " is " + dtypeName(t.dtype) + ", expected " +
                       dtypeName(dtype));
}

Status expectNumeric(const char *kernel, const char *role, const Tensor &t) {
  if (isNumeric(t.dtype))
    return Status::ok();
  return Status::error(prefix(kernel) + role + " is " + dtypeName(t.dtype) +
                       ", expected f32, i64 or i32");
}

Status expectSameDtype(const char *kernel, const char *roleA, const Tensor &a, const char *roleB,
                       const Tensor &b) {
  if (a.dtype == b.dtype)
    return Status::ok();
  return Status::error(prefix(kernel) + roleA + " is " + dtypeName(a.dtype) + " but " + roleB +
                       " is " + dtypeName(b.dtype) + ", expected the same dtype");
}

Status expectShape(const char *kernel, const char *role, const Tensor &t,
                   const std::vector<int64_t> &shape) {
  if (t.shape == shape)
    return Status::ok();
  return Status::error(prefix(kernel) + role + " has shape " + shapeString(t.shape) +
                       ", expected " + shapeString(shape));
}

Status expectSingleElement(const char *kernel, const char *role, const Tensor &t) {
  if (t.numel() == 1)
    return Status::ok();
  return Status::error(prefix(kernel) + role + " must be a scalar, got shape " +
                       shapeString(t.shape));
}

Status expectAxis(const char *kernel, const char *attrName, int64_t axis, int64_t rank) {
  if (axis >= 0 && axis < rank)
    return Status::ok();
  return Status::error(prefix(kernel) + "attribute '" + attrName + "' = " + std::to_string(axis) +
                       " is out of range for rank " + std::to_string(rank));
}

int64_t dimsProduct(const std::vector<int64_t> &shape, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end && i < shape.size(); ++i)
    n *= shape[i];
  return n;
}

std::vector<int64_t> contiguousStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;)
    strides[i - 1] = strides[i] * shape[i];
  return strides;
}

} // namespace shardc::runtime::cpu
