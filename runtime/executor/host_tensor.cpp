#include "runtime/executor/host_tensor.h"

#include <cstring>
#include <utility>

namespace shardc::runtime {

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string HostTensor::describe() const { return describeTensorType(dtype, shape); }

Tensor HostTensor::view() {
  Tensor t;
  t.dtype = dtype;
  t.shape = shape;
  // A zero-size tensor still needs a non-null pointer: nullptr means "absent operand".
  static uint8_t emptyTensor[8];
  t.data = bytes.empty() ? static_cast<void *>(emptyTensor) : bytes.data();
  return t;
}

HostTensor makeHostTensor(DType dtype, std::vector<int64_t> shape) {
  HostTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.bytes.assign(static_cast<size_t>(t.numel()) * dtypeSize(dtype), 0);
  return t;
}

HostTensor copyToHostTensor(const Tensor &view) {
  HostTensor t = makeHostTensor(view.dtype, view.shape);
  if (view.present() && !t.bytes.empty())
    std::memcpy(t.bytes.data(), view.data, t.bytes.size());
  return t;
}

void reshapeHostTensor(DType dtype, const std::vector<int64_t> &shape, HostTensor *tensor) {
  tensor->dtype = dtype;
  tensor->shape.assign(shape.begin(), shape.end());
  tensor->bytes.resize(static_cast<size_t>(tensor->numel()) * dtypeSize(dtype));
}

} // namespace shardc::runtime
