// The interface between the executor and every kernel, on every device (CPU and CUDA).
//
// A kernel is a plain function that reads its input tensors and attributes and writes every
// element of its outputs. Tensors are views into memory the executor owns; kernels never
// allocate long-lived memory, and take data-sized temporaries from the workspace the executor
// passes them (only O(rank) shape and stride vectors are allocated on the heap). The meaning of
// each kernel is specified in docs/kernels.md.
#pragma once

#include "runtime/device/device.h"
#include "runtime/program/program.pb.h"
#include "runtime/support/status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace shardc::runtime {

class Communicator;
using program::DType;

// Size in bytes of one element (bool is one byte).
size_t dtypeSize(DType dtype);
// "f32", "i64", "i32", "bool", "bf16", "f16".
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

// A tensor of `dtype` and `shape` whose data pointer only marks it present and must not be
// read: the operands of a workspace-size function called while planning memory.
Tensor typeOnlyTensor(DType dtype, std::vector<int64_t> shape);

using AttrMap = google::protobuf::Map<std::string, program::Attribute>;

struct KernelArgs {
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
  const AttrMap *attrs = nullptr;
  // Scratch memory for the kernel's temporaries (64-byte aligned): the rank's one workspace,
  // which the compiler sized as the largest workspace need of the program's ops. A kernel
  // carves its temporaries out of it (runtime/kernels/cpu/workspace.h) and returns an error
  // when it is too small, never writing past it; its contents are garbage on entry.
  void *workspace = nullptr;
  uint64_t workspaceBytes = 0;
  // The communicator of the collective kernels (all_reduce, reduce_scatter, all_gather,
  // all_to_all, shard_slice): the one of the group the op's "group" attribute names, else the
  // rank's world's; null in a single-rank run, where those kernels are an error.
  Communicator *comm = nullptr;
  // The device stream a kernel queues its work on: a cudaStream_t for the CUDA kernels (which
  // return once the work is queued), null for the CPU kernels (which return when it is done).
  // Tensors, the workspace included, live in the memory of the kernel's device.
  void *stream = nullptr;
};

// Whether `kernel` is one of the collective kernels: those that take a communicator, and the
// "group" and "dtype" attributes (docs/kernels.md, "Collectives").
bool isCollectiveKernel(const std::string &kernel);
// Whether `kernel` sends data between ranks (all_reduce, reduce_scatter, all_gather, all_to_all):
// the collectives that may run asynchronously (Op.completes_before). shard_slice, also a
// collective kernel, only cuts this rank's shard.
bool kernelMovesDataBetweenRanks(const std::string &kernel);

using KernelFn = Status (*)(KernelArgs &args);

// The workspace a kernel needs for a call with these operands and attributes. It reads the
// operands' dtypes, shapes and presence, never their data, so callers that plan memory may pass
// views whose `data` is only a non-null marker. Fails when the operands or attributes are ones
// the kernel itself would reject.
using WorkspaceFn = Status (*)(const KernelArgs &args, uint64_t *bytes);

// The kernel table of `device`: the kernel called `name`, or nullptr if that device has none.
// Every kernel has one contract (docs/kernels.md) whatever device implements it.
KernelFn findKernel(DeviceKind device, const std::string &name);
// Bytes of workspace `device`'s kernel `name` needs for `args` (0 for kernels that need none;
// a kernel the device lacks is an error).
Status kernelWorkspaceBytes(DeviceKind device, const std::string &name, const KernelArgs &args,
                            uint64_t *bytes);
// All kernel names of `device`'s table, sorted (empty for a device this build lacks).
std::vector<std::string> kernelNames(DeviceKind device);

// Looks a kernel up by its name in the CPU kernel table; nullptr if there is none.
KernelFn findCpuKernel(const std::string &name);
// Bytes of workspace the CPU kernel `name` needs for `args` (0 for kernels that need none;
// an unknown kernel is an error).
Status cpuKernelWorkspaceBytes(const std::string &name, const KernelArgs &args, uint64_t *bytes);
// All CPU kernel names, sorted (for diagnostics and docs checks).
std::vector<std::string> cpuKernelNames();

// Whether kernel `name` may write its output `output` over its input `input` (one buffer for
// both, exactly). True only for the pairs a kernel declares: kernels that read element i of
// each such input before writing element i of the outputs, and no element of it after that
// (the optimizer updates). The compiler aliases only these pairs; the program validator accepts
// no other overlap of an op's inputs and outputs.
bool kernelUpdatesInPlace(const std::string &name, int input, int output);

// Number of threads a CPU kernel call may use: the GEMMs (OpenBLAS) and the elementwise,
// reduction and data-movement kernels over large tensors (kernel_threads.h).
void setCpuKernelThreads(int threads);
// How the CPU kernels multiply two bf16 operands (matmul, gemm). Exact (the default): widened
// into f32 and multiplied by sgemm, the bits of casting the operands and the result, on every
// CPU. Native: oneDNN's bf16 kernels read them as stored and sum the same products in their
// own order (cpu/onednn_matmul.h), faster, equal up to f32 rounding of the sums; refused, with
// the reason, on a CPU without AVX512-BF16 or AMX, where oneDNN would only emulate them.
enum class Bf16Products { Exact, Native };
Status setCpuBf16Products(Bf16Products products);
// Whether this CPU runs bf16 products natively (AVX512-BF16 or AMX, as oneDNN detects it).
bool cpuHasNativeBf16Products();
// Which paths the CPU kernels take on this machine, for run summaries: the vector level of the
// elementwise loops, the kernel threads, and how the GEMMs compute (e.g. "avx512f loops, 2
// threads, GEMMs in f32 on OpenBLAS (16-bit operands widened exactly)").
std::string cpuKernelPaths();

// Whether the call has attribute `name` (for optional attributes).
bool hasAttr(const KernelArgs &args, const char *name);
// Attribute accessors: a missing or mistyped attribute is an error naming the attribute.
Status getIntAttr(const KernelArgs &args, const char *name, int64_t *out);
Status getFloatAttr(const KernelArgs &args, const char *name, float *out);
// A double attribute; a float one is accepted too (widened exactly).
Status getDoubleAttr(const KernelArgs &args, const char *name, double *out);
Status getStringAttr(const KernelArgs &args, const char *name, std::string *out);
Status getIntsAttr(const KernelArgs &args, const char *name, std::vector<int64_t> *out);

} // namespace shardc::runtime
