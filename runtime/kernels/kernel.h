// The interface between the executor and every kernel (CPU today, CUDA later).
//
// A kernel is a plain function that reads its input tensors and attributes and writes every
// element of its outputs. Tensors are views into memory the executor owns; kernels never
// allocate long-lived memory. The meaning of each kernel is specified in docs/kernels.md.
#pragma once

#include "runtime/program/program.pb.h"
#include "runtime/support/status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace shardc::runtime {

using program::DType;

// Size in bytes of one element (bool is one byte).
size_t dtypeSize(DType dtype);
// "f32", "i64", "i32", "bool".
const char *dtypeName(DType dtype);

// A dense, row-major view of a tensor. `data == nullptr` marks an absent optional operand.
struct Tensor {
  DType dtype = program::DTYPE_UNSPECIFIED;
  std::vector<int64_t> shape;
  void *data = nullptr;

  bool present() const { return data != nullptr; }
  int64_t numel() const;
  size_t sizeBytes() const { return static_cast<size_t>(numel()) * dtypeSize(dtype); }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  template <typename T> T *as() const { return static_cast<T *>(data); }
  // "f32[2x3]" for messages.
  std::string describe() const;
};

using AttrMap = google::protobuf::Map<std::string, program::Attribute>;

struct KernelArgs {
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
  const AttrMap *attrs = nullptr;
};

using KernelFn = Status (*)(KernelArgs &args);

// Looks a kernel up by its name in the CPU kernel table; nullptr if there is none.
KernelFn findCpuKernel(const std::string &name);
// All CPU kernel names, sorted (for diagnostics and docs checks).
std::vector<std::string> cpuKernelNames();

// Number of threads the CPU kernels may use (today: OpenBLAS's GEMM threads).
void setCpuKernelThreads(int threads);

// Attribute accessors: a missing or mistyped attribute is an error naming the attribute.
Status getIntAttr(const KernelArgs &args, const char *name, int64_t *out);
Status getFloatAttr(const KernelArgs &args, const char *name, float *out);
// A double attribute; a float one is accepted too (widened exactly).
Status getDoubleAttr(const KernelArgs &args, const char *name, double *out);
Status getStringAttr(const KernelArgs &args, const char *name, std::string *out);
Status getIntsAttr(const KernelArgs &args, const char *name, std::vector<int64_t> *out);

} // namespace shardc::runtime
