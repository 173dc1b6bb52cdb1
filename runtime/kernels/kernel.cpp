// Dtype helpers, tensor helpers and attribute accessors shared by every kernel.
#include "runtime/kernels/kernel.h"

#include <utility>

namespace shardc::runtime {

size_t dtypeSize(DType dtype) {
  switch (dtype) {
  case program::F32:
  case program::I32:
    return 4;
  case program::I64:
    return 8;
  case program::BOOL:
  case program::I8:
  case program::U8:
    return 1;
  case program::BF16:
  case program::F16:
    return 2;
  default:
    return 0;
  }
}

const char *dtypeName(DType dtype) {
  switch (dtype) {
  case program::F32:
    return "f32";
  case program::I64:
    return "i64";
  case program::I32:
    return "i32";
  case program::BOOL:
    return "bool";
  case program::BF16:
    return "bf16";
  case program::F16:
    return "f16";
  case program::I8:
    return "i8";
  case program::U8:
    return "u8";
  default:
    return "unspecified";
  }
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string Tensor::describe() const {
  std::string s = dtypeName(dtype);
  s += '[';
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += 'x';
    s += std::to_string(shape[i]);
  }
  s += ']';
  return s;
}

Tensor typeOnlyTensor(DType dtype, std::vector<int64_t> shape) {
  static uint8_t presentMarker;
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.data = &presentMarker;
  return t;
}

namespace {

// Finds `name` or explains that it is missing.
Status findAttr(const KernelArgs &args, const char *name, const program::Attribute **out) {
  if (args.attrs) {
    auto it = args.attrs->find(name);
    if (it != args.attrs->end()) {
      *out = &it->second;
      return Status::ok();
    }
  }
  return Status::error(std::string("missing attribute '") + name + "'");
}

Status wrongKind(const char *name, const char *kind) {
  return Status::error(std::string("attribute '") + name + "' is not " + kind);
}

} // namespace

bool hasAttr(const KernelArgs &args, const char *name) {
  return args.attrs != nullptr && args.attrs->find(name) != args.attrs->end();
}

Status getIntAttr(const KernelArgs &args, const char *name, int64_t *out) {
  const program::Attribute *attr = nullptr;
  SHARDC_RETURN_IF_ERROR(findAttr(args, name, &attr));
  if (attr->value_case() != program::Attribute::kI)
    return wrongKind(name, "an int");
  *out = attr->i();
  return Status::ok();
}

Status getFloatAttr(const KernelArgs &args, const char *name, float *out) {
  const program::Attribute *attr = nullptr;
  SHARDC_RETURN_IF_ERROR(findAttr(args, name, &attr));
  if (attr->value_case() != program::Attribute::kF)
    return wrongKind(name, "a float");
  *out = attr->f();
  return Status::ok();
}

Status getDoubleAttr(const KernelArgs &args, const char *name, double *out) {
  const program::Attribute *attr = nullptr;
  SHARDC_RETURN_IF_ERROR(findAttr(args, name, &attr));
  if (attr->value_case() == program::Attribute::kD)
    *out = attr->d();
  else if (attr->value_case() == program::Attribute::kF)
    *out = attr->f();
  else
    return wrongKind(name, "a double");
  return Status::ok();
}

Status getStringAttr(const KernelArgs &args, const char *name, std::string *out) {
  const program::Attribute *attr = nullptr;
  SHARDC_RETURN_IF_ERROR(findAttr(args, name, &attr));
  if (attr->value_case() != program::Attribute::kS)
    return wrongKind(name, "a string");
  *out = attr->s();
  return Status::ok();
}

Status getIntsAttr(const KernelArgs &args, const char *name, std::vector<int64_t> *out) {
  const program::Attribute *attr = nullptr;
  SHARDC_RETURN_IF_ERROR(findAttr(args, name, &attr));
  if (attr->value_case() != program::Attribute::kInts)
    return wrongKind(name, "a list of ints");
  out->assign(attr->ints().values().begin(), attr->ints().values().end());
  return Status::ok();
}

} // namespace shardc::runtime
