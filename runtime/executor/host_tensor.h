// A tensor that owns its bytes on the host: what callers hand to the executor as graph inputs,
// what they get back as outputs, and what .npy files are read into and written from.
#pragma once

#include "runtime/kernels/kernel.h"
#include "runtime/memory/tracked_allocator.h"

#include <cstdint>
#include <string>
#include <vector>

namespace shardc::runtime {

// A host tensor's storage: counted by the memory tracker of the scope it is allocated in, which
// is how the runtime measures the step's input and output tensors (runtime/memory).
using HostBytes = std::vector<uint8_t, TrackedAllocator<uint8_t>>;

struct HostTensor {
  DType dtype = program::DTYPE_UNSPECIFIED;
  std::vector<int64_t> shape; // empty for a scalar
  HostBytes bytes;            // row-major, numel() * dtypeSize(dtype) bytes

  int64_t numel() const;
  // "f32[2x3]" for messages.
  std::string describe() const;
  // A kernel-facing view of the bytes (valid while this tensor is alive and not resized).
  Tensor view();

  template <typename T> T *as() { return reinterpret_cast<T *>(bytes.data()); }
  template <typename T> const T *as() const { return reinterpret_cast<const T *>(bytes.data()); }
};

// A zero-filled tensor. The shape must be valid (dims >= 0, byte size representable).
HostTensor makeHostTensor(DType dtype, std::vector<int64_t> shape);

// A tensor holding a copy of `view`'s elements, of its dtype and shape (zeros for an absent
// view): a value read out of the arena.
HostTensor copyToHostTensor(const Tensor &view);

// Makes `tensor` a tensor of `dtype` and `shape` reusing its storage: no allocation when it
// already has the capacity (a batch refilled every step). The contents are unspecified.
void reshapeHostTensor(DType dtype, const std::vector<int64_t> &shape, HostTensor *tensor);

// "f32[2x3]" for a dtype and shape that are not (yet) a tensor.
template <typename Dims> std::string describeTensorType(DType dtype, const Dims &dims) {
  Tensor t;
  t.dtype = dtype;
  t.shape.assign(dims.begin(), dims.end());
  return t.describe();
}

} // namespace shardc::runtime
